import MeshNode
/// A node of another implementation on the simulated air: what its links carry to it is handed
/// to `onHeard` (with SNR and RSSI), and what it transmits (`transmit`) goes on the air from here,
/// with this node's links, time on air, duty cycle and listen-before-talk. The real-time host
/// connects it to a program over the air socket (`AirFrame`).
public final class ExternalNode: SimNode {
    public var onHeard: (([UInt8], Double, Int) -> Void)?
    public private(set) var heardCount = 0
    public private(set) var sentCount = 0

    init(mesh: SimMesh, name: String) {
        super.init(mesh: mesh, name: name, role: .external, poolSize: 16)
    }

    override public func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        heardCount += 1
        onHeard?(bytes, snr, rssi)
    }

    /// Queues a packet the other implementation sent (it goes out as soon as the air lets it).
    @discardableResult
    public func transmit(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        sentCount += 1
        return enqueue(bytes, priority: 0)
    }
}

/// The air socket's frames, both ways: `u16 LE length` then `kind` and its body.
///   0x01 hello (client → sim): the external node's name (UTF-8)
///   0x02 packet (client → sim): one raw on-air packet
///   0x03 packet (sim → client): SNR × 4 (i8), RSSI (i8), the raw packet
///   0x04 error (sim → client): a sentence, then the sim closes the connection
public enum AirFrame: Equatable, Sendable {
    case hello(String)
    case send([UInt8])
    case heard(snrQuarterDb: Int8, rssi: Int8, packet: [UInt8])
    case error(String)

    public var encoded: [UInt8] {
        var body: [UInt8]
        switch self {
        case .hello(let name): body = [0x01] + Array(name.utf8)
        case .send(let p): body = [0x02] + p
        case .heard(let snr, let rssi, let p): body = [0x03, UInt8(bitPattern: snr), UInt8(bitPattern: rssi)] + p
        case .error(let text): body = [0x04] + Array(text.utf8)
        }
        return [UInt8(body.count & 0xFF), UInt8(body.count >> 8)] + body
    }

    /// Takes the complete frames off the front of `buffer`; nil when a frame is malformed (the
    /// connection is then closed).
    public static func take(_ buffer: inout [UInt8]) -> [AirFrame]? {
        var out: [AirFrame] = []
        var i = 0
        while buffer.count - i >= 2 {
            let n = Int(buffer[i]) | Int(buffer[i + 1]) << 8
            guard n >= 1, n <= 512 else { return nil }
            guard buffer.count - i - 2 >= n else { break }
            let body = Array(buffer[(i + 2)..<(i + 2 + n)])
            i += 2 + n
            switch body[0] {
            case 0x01:
                guard body.count > 1, body.count <= 32 else { return nil }
                out.append(.hello(String(decoding: body.dropFirst(), as: UTF8.self)))
            case 0x02:
                guard body.count > 2, body.count <= 256 else { return nil }
                out.append(.send(Array(body.dropFirst())))
            case 0x03:
                guard body.count > 3 else { return nil }
                out.append(.heard(snrQuarterDb: Int8(bitPattern: body[1]), rssi: Int8(bitPattern: body[2]), packet: Array(body.dropFirst(3))))
            case 0x04:
                out.append(.error(String(decoding: body.dropFirst(), as: UTF8.self)))
            default:
                return nil
            }
        }
        buffer.removeFirst(i)
        return out
    }
}
