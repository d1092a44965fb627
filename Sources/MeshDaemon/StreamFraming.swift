/// Companion frames on a byte stream (serial, TCP, the API tunnel): a marker byte ('>' radio to
/// app, '<' app to radio), a u16 LE length, then the payload. Bytes outside frames are skipped;
/// frames over 176 bytes are dropped.
// TODO(companion): use MeshCompanion's FrameDecoder/FrameEncoder once they are on main.
public struct StreamDeframer {
    public static let maxFrame = 176
    let marker: UInt8
    private var buffer: [UInt8] = []
    private var need = 0
    private var state = 0  // 0 seeking marker, 1 len lo, 2 len hi, 3 payload, 4 skipping payload
    private var skip = 0
    /// Bytes skipped outside frames and frames dropped as too long.
    public private(set) var skippedBytes = 0

    public init(marker: UInt8) {
        self.marker = marker
        buffer.reserveCapacity(StreamDeframer.maxFrame)
    }

    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        state = 0
    }

    /// Feeds bytes; calls `frame` with each complete payload (valid only during the call).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ frame: (UnsafeRawBufferPointer) -> Void) {
        for b in bytes {
            switch state {
            case 0:
                if b == marker { state = 1 } else { skippedBytes += 1 }
            case 1:
                need = Int(b)
                state = 2
            case 2:
                need |= Int(b) << 8
                if need == 0 { state = 0 }
                else if need > StreamDeframer.maxFrame { skip = need; skippedBytes += need; state = 4 }
                else { buffer.removeAll(keepingCapacity: true); state = 3 }
            case 3:
                buffer.append(b)
                if buffer.count == need {
                    buffer.withUnsafeBytes { frame($0) }
                    state = 0
                }
            default:
                skip -= 1
                if skip == 0 { state = 0 }
            }
        }
    }

    /// A framed copy of `payload` with `marker`.
    public static func frame(_ payload: [UInt8], marker: UInt8) -> [UInt8] {
        var out: [UInt8] = [marker, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)]
        out.append(contentsOf: payload)
        return out
    }
}

/// Lowercase hex of bytes.
func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    return String(decoding: out, as: UTF8.self)
}

/// Bytes from hex (either case); nil on anything else or an odd count.
func bytesFromHex(_ s: String) -> [UInt8]? {
    var out: [UInt8] = []
    var high: UInt8? = nil
    for u in s.utf8 {
        let v: UInt8
        switch u {
        case 48...57: v = u - 48
        case 97...102: v = u - 87
        case 65...70: v = u - 55
        default: return nil
        }
        if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
    }
    return high == nil ? out : nil
}
