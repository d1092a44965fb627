// A fixed-capacity frame value: what every encoder in this module produces.

/// Which end of the link wrote a framed byte stream: `<` app → radio, `>` radio → app.
public enum FrameMarker: UInt8, Sendable {
    /// App → radio (`'<'`, 0x3C).
    case toRadio = 0x3C
    /// Radio → app (`'>'`, 0x3E).
    case fromRadio = 0x3E
}

/// One companion frame payload (≤ 176 bytes) stored inline, with room in front for the
/// 3-byte serial/TCP header. Copying it copies 192 bytes; it never allocates.
public struct EncodedFrame: Sendable, Equatable, CustomStringConvertible {
    public static let capacity = CompanionLimits.maxFrameSize
    @usableFromInline static let headerSize = CompanionLimits.transportHeaderSize
    @usableFromInline var storage: FixedBytes179
    /// Payload length in bytes.
    public internal(set) var count: Int

    /// An empty frame.
    public init() {
        storage = .init(repeating: 0)
        count = 0
    }

    /// A frame holding a copy of `bytes` (≤ 176).
    public init(copying bytes: UnsafeRawBufferPointer) throws(CompanionEncodeError) {
        self.init()
        try append(raw: bytes)
    }

    /// A frame holding a copy of `bytes` (≤ 176).
    public init(_ bytes: some Collection<UInt8>) throws(CompanionEncodeError) {
        self.init()
        try append(contentsOf: bytes)
    }

    /// Byte 0: the command, response or push code (0 if empty).
    public var code: UInt8 { count > 0 ? storage[EncodedFrame.headerSize] : 0 }

    /// The payload, valid inside `body` only.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: storage) { all in
            try body(UnsafeRawBufferPointer(rebasing: all[EncodedFrame.headerSize ..< EncodedFrame.headerSize + count]))
        }
    }

    /// The payload framed for serial/TCP (`marker, len_lo, len_hi, payload`), valid inside `body` only.
    public func withWireBytes<R>(_ marker: FrameMarker, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var copy = storage
        copy[0] = marker.rawValue
        copy[1] = UInt8(truncatingIfNeeded: count)
        copy[2] = UInt8(truncatingIfNeeded: count >> 8)
        return try Swift.withUnsafeBytes(of: copy) { all in
            try body(UnsafeRawBufferPointer(rebasing: all[0 ..< EncodedFrame.headerSize + count]))
        }
    }

    /// A copy of the payload (allocates; for tests and logs).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// A copy of the framed bytes (allocates; for tests and logs).
    public func wireBytes(_ marker: FrameMarker) -> [UInt8] { withWireBytes(marker) { Array($0) } }

    /// Lowercase hex of the payload.
    public var hex: String { withUnsafeBytes { HexCodec.encode($0) } }

    public var description: String { hex }

    public static func == (a: EncodedFrame, b: EncodedFrame) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }

    // MARK: writing (used by the encoders)

    mutating func reserve(_ n: Int) throws(CompanionEncodeError) {
        if count + n > EncodedFrame.capacity { throw .frameTooLarge(length: count + n) }
    }

    mutating func append(_ b: UInt8) throws(CompanionEncodeError) {
        try reserve(1)
        storage[EncodedFrame.headerSize + count] = b
        count += 1
    }

    mutating func append(_ code: CommandCode) throws(CompanionEncodeError) { try append(code.rawValue) }
    mutating func append(_ code: ResponseCode) throws(CompanionEncodeError) { try append(code.rawValue) }
    mutating func append(_ code: PushCode) throws(CompanionEncodeError) { try append(code.rawValue) }
    mutating func append(i8 v: Int8) throws(CompanionEncodeError) { try append(UInt8(bitPattern: v)) }

    mutating func append(u16 v: UInt16) throws(CompanionEncodeError) {
        try reserve(2)
        try append(UInt8(truncatingIfNeeded: v))
        try append(UInt8(truncatingIfNeeded: v >> 8))
    }

    mutating func append(i16 v: Int16) throws(CompanionEncodeError) { try append(u16: UInt16(bitPattern: v)) }

    mutating func append(u32 v: UInt32) throws(CompanionEncodeError) {
        try reserve(4)
        for s in 0..<4 { try append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(s)))) }
    }

    mutating func append(i32 v: Int32) throws(CompanionEncodeError) { try append(u32: UInt32(bitPattern: v)) }

    mutating func append(contentsOf bytes: some Collection<UInt8>) throws(CompanionEncodeError) {
        try reserve(bytes.count)
        // Contiguous bytes (arrays, slices) are copied without a witness call per byte: callers
        // in other modules get this unspecialised (a companion logs every packet it hears).
        if bytes.withContiguousStorageIfAvailable({ append(copying: $0) }) != nil { return }
        for b in bytes { try append(b) }
    }

    /// Appends bytes the caller has made room for (`reserve`).
    private mutating func append(copying bytes: UnsafeBufferPointer<UInt8>) {
        for i in 0..<bytes.count { storage[EncodedFrame.headerSize + count + i] = bytes[i] }
        count += bytes.count
    }

    mutating func append(raw bytes: UnsafeRawBufferPointer) throws(CompanionEncodeError) {
        try reserve(bytes.count)
        for b in bytes { try append(b) }
    }

    mutating func append(key: PublicKey) throws(CompanionEncodeError) {
        try reserve(32)
        for i in 0..<32 { try append(key[i]) }
    }

    mutating func append(prefix: KeyPrefix) throws(CompanionEncodeError) {
        for i in 0..<prefix.count { try append(prefix[i]) }
    }

    mutating func append(zeros n: Int) throws(CompanionEncodeError) {
        try reserve(n)
        for _ in 0..<n { try append(0) }
    }

    /// Writes `text` in a `width`-byte field, NUL-padded (text must be < width bytes).
    mutating func append(text: String, width: Int) throws(CompanionEncodeError) {
        try reserve(width)
        var n = 0
        for b in text.utf8 where n < width - 1 { try append(b); n += 1 }
        try append(zeros: width - n)
    }

    /// Writes `text` without terminator.
    mutating func append(text: String) throws(CompanionEncodeError) {
        try append(contentsOf: text.utf8)
    }
}
