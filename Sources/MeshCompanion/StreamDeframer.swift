
/// Companion frames on a byte stream (serial, TCP, the API tunnel): a marker byte ('>' radio to
/// app, '<' app to radio), a u16 LE length, then the payload. A thin value wrapper over
/// MeshCompanion's ring-buffer `FrameDecoder`, so the daemon and the CLI share one framing
/// implementation: bytes outside frames are skipped and counted; on the '>' side a length over
/// 176 is treated as noise (its header bytes are skipped and the decoder resynchronises).
public struct StreamDeframer {
    public static let maxFrame = CompanionLimits.maxFrameSize
    let marker: UInt8
    private let decoder: FrameDecoder
    /// Bytes skipped outside frames (including the headers of frames rejected as too long).
    public var skippedBytes: Int { Int(decoder.garbageBytes) }
    /// Headers seen with a length over the companion maximum.
    public var oversizedFrames: Int { Int(decoder.oversizedFrames) }

    /// Bytes held that do not make a whole frame yet (a frame still arriving).
    public var bufferedCount: Int { decoder.bufferedCount }

    public init(marker: UInt8) {
        self.marker = marker
        decoder = FrameDecoder(side: marker == UInt8(ascii: ">") ? .client : .device)
    }

    public mutating func reset() {
        decoder.reset()
    }

    /// Feeds bytes; calls `frame` with each complete payload (valid only during the call).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ frame: (UnsafeRawBufferPointer) -> Void) {
        decoder.receive(bytes, frame)
    }

    /// Feeds bytes received at `now` (ms): a header left waiting for its body longer than a second
    /// is skipped as stray (see `FrameDecoder`).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, now: UInt64, _ frame: (UnsafeRawBufferPointer) -> Void) {
        decoder.receive(bytes, now: now, frame)
    }

    /// Zero-copy: `read` writes straight into the decoder's ring and returns its count (0: nothing
    /// more); each complete payload then goes to `frame` (valid only during the call).
    @discardableResult
    public mutating func feed(now: UInt64, reading read: (UnsafeMutableRawBufferPointer) -> Int,
                              _ frame: (UnsafeRawBufferPointer) -> Void) -> Int {
        decoder.receive(now: now, reading: read, frame)
    }

    /// A framed copy of `payload` with `marker`.
    public static func frame(_ payload: [UInt8], marker: UInt8) -> [UInt8] {
        var out: [UInt8] = [marker, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)]
        out.append(contentsOf: payload)
        return out
    }
}
