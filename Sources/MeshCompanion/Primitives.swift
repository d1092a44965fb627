// Small fixed-size values shared by decoders and encoders.

/// A 32-byte Ed25519 public key, stored inline (no heap).
public struct PublicKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let size = 32
    @usableFromInline var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    /// Reads 32 bytes at `offset`; the caller guarantees they exist.
    @inlinable init(unchecked bytes: UnsafeRawBufferPointer, at offset: Int) {
        w0 = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        w1 = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
        w2 = bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)
        w3 = bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)
    }

    /// A key from exactly 32 bytes; nil otherwise.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == PublicKey.size else { return nil }
        // Arrays and slices (every caller in practice): one unaligned load per word. A caller in
        // another module gets this function unspecialised, where the byte loop below costs a
        // witness call per byte (a sixth of the simulator's time, in adverts).
        if let k = bytes.withContiguousStorageIfAvailable({ PublicKey(unchecked: UnsafeRawBufferPointer($0), at: 0) }) {
            self = k
            return
        }
        w0 = 0; w1 = 0; w2 = 0; w3 = 0
        withUnsafeMutableBytes(of: &self) { dst in
            var i = 0
            for b in bytes { dst[i] = b; i += 1 }
        }
    }

    /// A key from 64 hex digits; nil otherwise.
    public init?(hex: some StringProtocol) {
        guard let prefix = HexCodec.decode(hex, maxBytes: 32), prefix.count == 32 else { return nil }
        self.init(prefix)
    }

    /// The bytes, valid inside `body` only.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: self, body)
    }

    /// A copy of the bytes (allocates).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Byte `i` (0..<32).
    public subscript(i: Int) -> UInt8 { withUnsafeBytes { $0[i] } }

    /// Lowercase hex of all 32 bytes.
    public var hex: String { withUnsafeBytes { HexCodec.encode($0) } }

    /// The leading `count` bytes (1...8), e.g. 6 for commands and messages, 4 for login matching.
    public func prefix(_ count: Int = 6) -> KeyPrefix {
        withUnsafeBytes { KeyPrefix(unchecked: $0, at: 0, count: max(1, min(8, count))) }
    }

    public var description: String { hex }

    public static func < (a: PublicKey, b: PublicKey) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.lexicographicallyPrecedes(y) } }
    }
}

/// The leading 1–8 bytes of a public key (6 in messages and commands, 4 for room authors).
public struct KeyPrefix: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Bytes in memory order (byte 0 is the least significant byte); unused high bytes are zero.
    @usableFromInline var raw: UInt64
    /// Number of bytes (1...8).
    public let count: Int

    @inlinable init(unchecked bytes: UnsafeRawBufferPointer, at offset: Int, count: Int) {
        var v: UInt64 = 0
        for i in 0..<count { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        raw = v
        self.count = count
    }

    /// A prefix from 1...8 bytes; nil otherwise.
    public init?(_ bytes: some Collection<UInt8>) {
        guard (1...8).contains(bytes.count) else { return nil }
        var v: UInt64 = 0
        var i: UInt64 = 0
        for b in bytes { v |= UInt64(b) << (8 * i); i += 1 }
        raw = v
        count = bytes.count
    }

    /// The first `count` (1...8) bytes of `bytes` (a prefix or a whole key); shorter input is
    /// zero-padded. The store names senders and threads by 6 bytes this way.
    public init(padding bytes: some Collection<UInt8>, count: Int = 6) {
        let n = max(1, min(8, count))
        var v: UInt64 = 0
        var i: UInt64 = 0
        for b in bytes.prefix(n) { v |= UInt64(b) << (8 * i); i += 1 }
        raw = v
        self.count = n
    }

    /// Ordered as their hex text is (byte by byte, then the shorter first).
    public static func < (a: KeyPrefix, b: KeyPrefix) -> Bool {
        for i in 0..<min(a.count, b.count) where a[i] != b[i] { return a[i] < b[i] }
        return a.count < b.count
    }

    /// A prefix from 2...16 hex digits; nil otherwise.
    public init?(hex: some StringProtocol) {
        guard let b = HexCodec.decode(hex, maxBytes: 8), !b.isEmpty else { return nil }
        self.init(b)
    }

    /// Byte `i` (0..<count).
    public subscript(i: Int) -> UInt8 { UInt8(truncatingIfNeeded: raw >> (8 * UInt64(i))) }

    /// A copy of the bytes (allocates).
    public var bytes: [UInt8] { (0..<count).map { self[$0] } }

    /// Lowercase hex.
    public var hex: String { withUnsafeBytes { HexCodec.encode($0) } }

    /// The bytes, valid inside `body` only.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let le = raw.littleEndian
        return try Swift.withUnsafeBytes(of: le) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }

    /// Whether `key` starts with these bytes.
    public func matches(_ key: PublicKey) -> Bool { key.prefix(count) == self }

    /// Whether the shorter of the two is a prefix of the longer.
    public func overlaps(_ other: KeyPrefix) -> Bool {
        let n = min(count, other.count)
        let mask: UInt64 = n == 8 ? ~0 : (1 << (8 * UInt64(n))) - 1
        return (raw & mask) == (other.raw & mask)
    }

    /// The leading `n` bytes (n ≤ count).
    public func truncated(to n: Int) -> KeyPrefix {
        withUnsafeBytes { KeyPrefix(unchecked: $0, at: 0, count: max(1, min(count, n))) }
    }

    public var description: String { hex }
}

/// An encoded path length byte: bits 0–5 hop count, bits 6–7 hash size − 1; 0xFF = none/unknown.
///
/// In contacts 0xFF means "no known path, send flood"; in message frames it means "arrived direct".
public struct PathLength: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0xFF: unknown path (contacts) or arrived direct (messages).
    public static let unknown = PathLength(rawValue: 0xFF)
    /// Zero hops, 1-byte hashes.
    public static let zeroHop = PathLength(rawValue: 0)

    /// A valid encoded length for `hopCount` hashes of `hashSize` (1...3) bytes; nil if invalid.
    public init?(hopCount: Int, hashSize: Int = 1) {
        guard (1...3).contains(hashSize), (0...63).contains(hopCount), hopCount * hashSize <= 64 else { return nil }
        rawValue = UInt8((hashSize - 1) << 6 | hopCount)
    }

    public var isUnknown: Bool { rawValue == 0xFF }
    /// Number of hops (hash count).
    public var hopCount: Int { Int(rawValue & 63) }
    /// Bytes per hop hash (1...4; 4 is reserved and invalid).
    public var hashSize: Int { Int(rawValue >> 6) + 1 }
    /// Path bytes that follow (0 for `unknown`).
    public var byteCount: Int { isUnknown ? 0 : hopCount * hashSize }
    /// Whether the firmware accepts it as a path (`Packet::isValidPathLen`); `unknown` is not.
    public var isValid: Bool { rawValue >> 6 != 3 && hopCount * hashSize <= 64 }

    public var description: String { isUnknown ? "unknown" : "\(hopCount)x\(hashSize)" }
}

/// Node type of a contact or advert.
public struct ContactType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let none = ContactType(rawValue: 0)
    public static let chat = ContactType(rawValue: 1)
    public static let repeater = ContactType(rawValue: 2)
    public static let room = ContactType(rawValue: 3)
    public static let sensor = ContactType(rawValue: 4)
    public var description: String {
        switch rawValue {
        case 0: return "none"
        case 1: return "chat"
        case 2: return "repeater"
        case 3: return "room"
        case 4: return "sensor"
        default: return "type\(rawValue)"
        }
    }
}

/// Text type of a message.
public struct TextType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let plain = TextType(rawValue: 0)
    /// Repeater CLI command or reply.
    public static let cliData = TextType(rawValue: 1)
    /// Room server post, carries a 4-byte author prefix.
    public static let signedPlain = TextType(rawValue: 2)
    /// Protocol 14: a CLI command to a companion node (run there if we have its remote CLI
    /// permission, otherwise handed to its app); the reply comes back as `cliData`.
    public static let cliCommand = TextType(rawValue: 3)
    public var description: String {
        switch rawValue {
        case 0: return "plain"
        case 1: return "cli"
        case 2: return "signed"
        case 3: return "cli_command"
        default: return "type\(rawValue)"
        }
    }
}

/// Radio settings in the firmware's units (kHz, Hz).
public struct RadioParams: Hashable, Sendable {
    public var frequencyKHz: UInt32
    public var bandwidthHz: UInt32
    public var spreadingFactor: UInt8
    /// Coding rate denominator 5...8 (4/5 ... 4/8).
    public var codingRate: UInt8
    public init(frequencyKHz: UInt32, bandwidthHz: UInt32, spreadingFactor: UInt8, codingRate: UInt8) {
        self.frequencyKHz = frequencyKHz
        self.bandwidthHz = bandwidthHz
        self.spreadingFactor = spreadingFactor
        self.codingRate = codingRate
    }
}

/// Telemetry modes packed as `env<<4 | loc<<2 | base`; each 0 deny, 1 per-contact flags, 2 allow all.
public struct TelemetryModes: Hashable, Sendable {
    public var base: UInt8
    public var location: UInt8
    public var environment: UInt8
    public init(base: UInt8 = 0, location: UInt8 = 0, environment: UInt8 = 0) {
        self.base = base & 3
        self.location = location & 3
        self.environment = environment & 3
    }
    public init(packed: UInt8) {
        self.init(base: packed & 3, location: (packed >> 2) & 3, environment: (packed >> 4) & 3)
    }
    public var packed: UInt8 { (environment & 3) << 4 | (location & 3) << 2 | (base & 3) }
}

/// Statistics type for GET_STATS.
public enum StatsType: UInt8, Sendable, CaseIterable {
    case core = 0
    case radio = 1
    case packets = 2
}

/// Hex encoding and decoding without Foundation.
public enum HexCodec {
    static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = digits[Int(b >> 4)]
                out[i + 1] = digits[Int(b & 15)]
                i += 2
            }
            return i
        }
    }

    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let a = Array(bytes)
        return a.withUnsafeBytes { encode($0) }
    }

    /// Bytes from hex digits (spaces, colons and an optional 0x ignored); nil on a bad digit,
    /// odd digit count, or more than `maxBytes` bytes.
    public static func decode(_ text: some StringProtocol, maxBytes: Int = .max) -> [UInt8]? {
        var out: [UInt8] = []
        var high: UInt8? = nil
        var utf8 = Substring(text).utf8[...]
        if utf8.starts(with: "0x".utf8) || utf8.starts(with: "0X".utf8) { utf8 = utf8.dropFirst(2) }
        for c in utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n"), UInt8(ascii: "\t"):
                if high != nil { return nil }
                continue
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
                if out.count > maxBytes { return nil }
            } else {
                high = v
            }
        }
        return high == nil ? out : nil
    }
}
