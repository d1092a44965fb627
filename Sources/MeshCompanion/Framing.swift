// Serial/TCP framing: `'<'|'>'`, u16 LE length, payload (≤ 176 bytes).

/// Which end of a companion link this process is.
public enum LinkSide: Sendable {
    /// The app: reads `'>'` frames, writes `'<'` frames. Oversized lengths are garbage.
    case client
    /// The radio (or a simulator): reads `'<'` frames, writes `'>'` frames. Oversized lengths are
    /// truncated to 176 bytes and still delivered, as the firmware does.
    case device

    /// Marker of frames this side receives.
    public var inboundMarker: FrameMarker { self == .client ? .fromRadio : .toRadio }
    /// Marker of frames this side sends.
    public var outboundMarker: FrameMarker { self == .client ? .toRadio : .fromRadio }
}

/// Splits a received byte stream into frames, using one fixed-capacity ring buffer.
///
/// Bytes outside frames (line noise, the radio's rescue CLI text) are skipped; zero-length
/// frames are ignored. Nothing is allocated after `init`.
///
/// A stray header (a marker and a length with no body after it, e.g. from a write the radio cut
/// short) must not swallow the frames after it. The decoder resynchronises, skipping the stray
/// marker and looking again from the next byte, when
/// - (client side) the byte after the header is itself the `'>'` marker: no frame from the radio
///   starts with 0x3E (response codes are below 0x40 and end at 0x1C; pushes are 0x80 and above),
///   so that is the next frame starting;
/// - bytes arrive (`receive(_:now:_:)`) while a header has waited longer than `stallTimeoutMS` for
///   its body: the radio writes each frame at once, so a body does not pause for a second.
///
///     decoder.append(bytes)
///     while let frame = decoder.nextFrame() { ... }   // view valid until the next call
public final class FrameDecoder {
    /// Ring buffer capacity in bytes.
    public static let capacity = 4096

    /// The side this decoder serves.
    public let side: LinkSide
    /// Bytes skipped while looking for a frame marker (noise, CLI text, rejected headers).
    @exclusivity(unchecked) public private(set) var garbageBytes: UInt64 = 0
    /// Zero-length frames ignored.
    @exclusivity(unchecked) public private(set) var emptyFrames: UInt64 = 0
    /// Headers with a length over 176 (client: rejected and resynchronised; device: truncated).
    @exclusivity(unchecked) public private(set) var oversizedFrames: UInt64 = 0
    /// Frames delivered.
    @exclusivity(unchecked) public private(set) var frameCount: UInt64 = 0
    /// Stray headers skipped (see above).
    @exclusivity(unchecked) public private(set) var resyncs: UInt64 = 0
    /// How long a header may wait for its body (milliseconds of the `now` given to `receive`).
    public var stallTimeoutMS: UInt64 = 1_000
    /// Since when the header at the head has waited for its body (nil: not waiting).
    @exclusivity(unchecked) private var waitingSince: UInt64? = nil
    @exclusivity(unchecked) private var clock: UInt64 = 0

    private let ring: UnsafeMutableRawPointer
    private let scratch: UnsafeMutableRawPointer
    // Single-threaded by contract; skip the runtime exclusivity checks on the hot path.
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) private var discard = 0
    private let marker: UInt8

    public init(side: LinkSide) {
        self.side = side
        marker = side.inboundMarker.rawValue
        ring = UnsafeMutableRawPointer.allocate(byteCount: FrameDecoder.capacity, alignment: 8)
        scratch = UnsafeMutableRawPointer.allocate(byteCount: CompanionLimits.maxFrameSize, alignment: 8)
    }

    deinit {
        ring.deallocate()
        scratch.deallocate()
    }

    /// Bytes waiting in the buffer.
    public var bufferedCount: Int { used }
    /// Room left for `append`.
    public var freeCount: Int { FrameDecoder.capacity - used }

    /// Forgets buffered bytes and any partial frame (e.g. after a reconnect).
    public func reset() {
        head = 0
        used = 0
        discard = 0
        waitingSince = nil
    }

    /// Copies as many of `bytes` as fit; returns how many were taken. Take frames out with
    /// `nextFrame()` and append the rest (or use `receive(_:_:)`, which does both).
    @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = min(bytes.count, freeCount)
        guard n > 0, let src = bytes.baseAddress else { return 0 }
        let tail = (head + used) & (FrameDecoder.capacity - 1)
        let first = min(n, FrameDecoder.capacity - tail)
        (ring + tail).copyMemory(from: src, byteCount: first)
        if n > first { ring.copyMemory(from: src + first, byteCount: n - first) }
        used += n
        return n
    }

    /// Copies as many of `bytes` as fit; returns how many were taken.
    @discardableResult
    public func append(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { append($0) } }

    /// Lets `body` write directly into the free space (e.g. `read(2)` into it) and keeps the
    /// number of bytes it returns. Zero-copy receive.
    @discardableResult
    public func write(_ body: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> Int {
        let tail = (head + used) & (FrameDecoder.capacity - 1)
        let room = min(freeCount, FrameDecoder.capacity - tail)
        let n = try body(UnsafeMutableRawBufferPointer(start: ring + tail, count: room))
        let kept = max(0, min(n, room))
        used += kept
        return kept
    }

    @inline(__always) private func byte(_ i: Int) -> UInt8 {
        ring.load(fromByteOffset: (head + i) & (FrameDecoder.capacity - 1), as: UInt8.self)
    }

    @inline(__always) private func advance(_ n: Int) {
        head = (head + n) & (FrameDecoder.capacity - 1)
        used -= n
        if used == 0 { head = 0 }
    }

    /// `n` bytes at the head as one contiguous view (copied to scratch only if they wrap).
    @inline(__always) private func take(_ n: Int) -> UnsafeRawBufferPointer {
        let view: UnsafeRawBufferPointer
        if head + n <= FrameDecoder.capacity {
            view = UnsafeRawBufferPointer(start: ring + head, count: n)
        } else {
            let first = FrameDecoder.capacity - head
            scratch.copyMemory(from: ring + head, byteCount: first)
            (scratch + first).copyMemory(from: ring, byteCount: n - first)
            view = UnsafeRawBufferPointer(start: scratch, count: n)
        }
        // The bytes stay untouched until the next append/write, which is when the view expires.
        advance(n)
        return view
    }

    /// The next complete frame payload, or nil if more bytes are needed. The view is valid
    /// until the next call to any method of this decoder.
    public func nextFrame() -> UnsafeRawBufferPointer? {
        while true {
            if discard > 0 {
                let d = min(discard, used)
                advance(d)
                discard -= d
                if discard > 0 { return nil }
            }
            // Find the marker.
            while used > 0 && byte(0) != marker {
                advance(1)
                garbageBytes += 1
            }
            if used < 3 { return nil }
            let length = Int(byte(1)) | Int(byte(2)) << 8
            if length == 0 {
                advance(3)
                emptyFrames += 1
                continue
            }
            if length > CompanionLimits.maxFrameSize {
                if side == .client {
                    // Not a frame the radio would write: skip the marker and look again.
                    oversizedFrames += 1
                    advance(1)
                    garbageBytes += 1
                    continue
                }
                // Device side: keep the first 176 bytes, drop the rest, still process it.
                if used < 3 + CompanionLimits.maxFrameSize { return nil }
                oversizedFrames += 1
                advance(3)
                discard = length - CompanionLimits.maxFrameSize
                frameCount += 1
                return take(CompanionLimits.maxFrameSize)
            }
            if side == .client && used > 3 && byte(3) == marker {
                // A header followed at once by the next frame's marker: stray (see the type's notes).
                skipStrayMarker()
                continue
            }
            if used < 3 + length {
                if waitingSince == nil { waitingSince = clock }
                return nil
            }
            waitingSince = nil
            advance(3)
            frameCount += 1
            return take(length)
        }
    }

    /// Appends all of `bytes`, calling `body` with each complete frame (allocation-free only
    /// if `bytes` already exists).
    public func receive(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { try receive($0, body) }
    }

    /// Calls `body` with every complete frame now buffered.
    public func drain(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        while let frame = nextFrame() { try body(frame) }
    }

    private func skipStrayMarker() {
        advance(1)
        garbageBytes += 1
        resyncs += 1
        waitingSince = nil
    }

    /// Like `receive(_:_:)`, with the time (milliseconds, any monotonic clock): a header that has
    /// waited for its body for longer than `stallTimeoutMS` when these bytes arrive is skipped as stray.
    public func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        let stale = waitingSince.map { now >= $0 &+ stallTimeoutMS } ?? false
        clock = now
        if stale, used > 0, byte(0) == marker {
            skipStrayMarker()
            try drain(body)
        }
        try receive(bytes, body)
    }

    /// Zero-copy receive: `read` fills the ring's free space directly (a `read(2)` into it) and
    /// returns how many bytes it wrote (0: nothing more to read); then `body` gets each complete
    /// frame, in place. Returns what `read` returned. Errors of `read` are its caller's to carry
    /// out of the closure (the decoder keeps what was read before).
    @discardableResult
    public func receive(now: UInt64, reading read: (UnsafeMutableRawBufferPointer) -> Int,
                        _ body: (UnsafeRawBufferPointer) -> Void) -> Int {
        let stale = waitingSince.map { now >= $0 &+ stallTimeoutMS } ?? false
        clock = now
        if stale, used > 0, byte(0) == marker {
            skipStrayMarker()
            drain(body)
        }
        if freeCount == 0 { drain(body) }
        let n = write(read)
        if n > 0 { drain(body) }
        return n
    }

    /// Appends all of `bytes`, calling `body` with each complete frame as it becomes available.
    public func receive(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        var rest = bytes
        repeat {
            let n = append(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            try drain(body)
        } while !rest.isEmpty
    }
}

/// Writes the serial/TCP frame header.
public enum FrameEncoder {
    /// Frames `payload` (1...176 bytes) into `out` as `marker, len_lo, len_hi, payload`;
    /// returns the number of bytes written.
    public static func encode(
        _ payload: UnsafeRawBufferPointer, marker: FrameMarker, into out: UnsafeMutableRawBufferPointer
    ) throws(CompanionEncodeError) -> Int {
        if payload.count > CompanionLimits.maxFrameSize { throw .frameTooLarge(length: payload.count) }
        if payload.isEmpty { throw .tooShort(.frame, length: 0, minimum: 1) }
        let total = payload.count + 3
        if out.count < total { throw .tooLong(.frame, length: total, limit: out.count) }
        out[0] = marker.rawValue
        out[1] = UInt8(truncatingIfNeeded: payload.count)
        out[2] = UInt8(truncatingIfNeeded: payload.count >> 8)
        UnsafeMutableRawBufferPointer(rebasing: out[3 ..< total]).copyMemory(from: payload)
        return total
    }

    /// Frames `payload` into a new array (allocates; for tests and tools).
    public static func encode(_ payload: [UInt8], marker: FrameMarker) throws(CompanionEncodeError) -> [UInt8] {
        if payload.count > CompanionLimits.maxFrameSize { throw .frameTooLarge(length: payload.count) }
        if payload.isEmpty { throw .tooShort(.frame, length: 0, minimum: 1) }
        return [marker.rawValue, UInt8(truncatingIfNeeded: payload.count), UInt8(truncatingIfNeeded: payload.count >> 8)]
            + payload
    }
}
