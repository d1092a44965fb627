import MeshCompanion

/// Sizes fixed by the firmware (`src/MeshCore.h`).
public enum AirLimits {
    /// Largest raw on-air packet (`MAX_TRANS_UNIT`).
    public static let maxPacketSize = 255
    /// Largest payload (`MAX_PACKET_PAYLOAD`).
    public static let maxPayloadSize = 184
    /// Largest path in bytes (`MAX_PATH_SIZE`).
    public static let maxPathSize = 64
    /// Largest hop count an encoded path_len can hold.
    public static let maxHopCount = 63
    /// Largest advert appdata (`MAX_ADVERT_DATA_SIZE`).
    public static let maxAdvertDataSize = 32
    /// Truncated HMAC placed before every ciphertext (`CIPHER_MAC_SIZE`).
    public static let macSize = 2
    /// AES block and key size.
    public static let cipherBlockSize = 16
    /// Longest text in a direct or channel message (`MAX_TEXT_LEN`).
    public static let maxTextLength = 160
    /// Public key size.
    public static let publicKeySize = 32
    /// Ed25519 signature size.
    public static let signatureSize = 64
}

/// Header bits 0-1.
public enum RouteType: UInt8, Sendable, CaseIterable {
    case transportFlood = 0
    case flood = 1
    case direct = 2
    case transportDirect = 3

    /// Route types 0 and 3 carry two transport codes after the header.
    public var hasTransportCodes: Bool { self == .transportFlood || self == .transportDirect }
    public var isFlood: Bool { self == .transportFlood || self == .flood }
    public var isDirect: Bool { !isFlood }
}

/// Header bits 2-5.
public enum PayloadType: UInt8, Sendable, CaseIterable {
    case req = 0x00
    case response = 0x01
    case txtMsg = 0x02
    case ack = 0x03
    case advert = 0x04
    case grpTxt = 0x05
    case grpData = 0x06
    case anonReq = 0x07
    case path = 0x08
    case trace = 0x09
    case multipart = 0x0A
    case control = 0x0B
    case reserved0C = 0x0C
    case reserved0D = 0x0D
    case reserved0E = 0x0E
    case rawCustom = 0x0F

    /// REQ, RESPONSE, TXT_MSG and PATH share the `dest, src, MAC, ciphertext` wrapper.
    public var isPeerDatagram: Bool {
        self == .req || self == .response || self == .txtMsg || self == .path
    }
}

/// The header byte `0bVVPPPPRR`.
public struct PacketHeader: Equatable, Sendable {
    public var routeType: RouteType
    public var payloadType: PayloadType
    /// Payload version (bits 6-7). Only 0 is accepted on receive.
    public var version: UInt8

    public init(routeType: RouteType, payloadType: PayloadType, version: UInt8 = 0) {
        self.routeType = routeType
        self.payloadType = payloadType
        self.version = version & 0x03
    }

    public init(byte: UInt8) {
        routeType = RouteType(rawValue: byte & 0x03)!
        payloadType = PayloadType(rawValue: (byte >> 2) & 0x0F)!
        version = byte >> 6
    }

    public var byte: UInt8 { version << 6 | payloadType.rawValue << 2 | routeType.rawValue }
}

/// The path length byte is MeshCompanion's `PathLength` (one type for frames and packets); on
/// air it is validated as the firmware's `Packet::isValidPathLen` does.
extension PathLength {
    /// Decodes a path_len byte. Hash-size bits 0b11 and more than 64 path bytes are rejected.
    public init(encoded: UInt8) throws(AirError) {
        let p = PathLength(rawValue: encoded)
        if p.rawValue >> 6 == 3 { throw .reservedHashSize }
        if p.hopCount * p.hashSize > AirLimits.maxPathSize { throw .invalidPath }
        self = p
    }

    public init(hashSize: Int, hopCount: Int) throws(AirError) {
        guard let p = PathLength(hopCount: hopCount, hashSize: hashSize) else { throw .invalidPath }
        self = p
    }

    /// The wire byte.
    public var encoded: UInt8 { rawValue }
    /// Whether one more hop of this hash size still fits.
    public var canAppendHop: Bool { hopCount < AirLimits.maxHopCount && (hopCount + 1) * hashSize <= AirLimits.maxPathSize }
}

/// Transport codes carried by route types 0 and 3 (`transport_code_2` is 0 today).
public struct TransportCodes: Equatable, Hashable, Sendable {
    public var code1: UInt16
    public var code2: UInt16
    public init(_ code1: UInt16, _ code2: UInt16 = 0) {
        self.code1 = code1
        self.code2 = code2
    }
    /// `{0, 0}`: "send to nowhere".
    public static let none = TransportCodes(0, 0)
}

/// A zero-copy view of a raw packet held by the caller. The buffers it exposes point into the
/// caller's bytes: use the view only while those bytes are alive (typically inside `withUnsafeBytes`).
public struct PacketView {
    /// The whole raw packet.
    public let raw: UnsafeRawBufferPointer
    public let header: PacketHeader
    /// Present for route types 0 and 3.
    public let transportCodes: TransportCodes?
    public let pathLength: PathLength
    /// `pathLength.byteCount` bytes of hop hashes (or SNR bytes for TRACE).
    public let path: UnsafeRawBufferPointer
    /// Everything after the path.
    public let payload: UnsafeRawBufferPointer

    /// Parses a raw packet like `Dispatcher::tryParsePacket` (version 0 only).
    public init(_ raw: UnsafeRawBufferPointer) throws(AirError) {
        guard raw.count >= 2 else { throw .truncated }
        guard raw.count <= AirLimits.maxPacketSize else { throw .packetTooLong }
        let header = PacketHeader(byte: raw[0])
        guard header.version == 0 else { throw .unsupportedVersion(header.version) }
        var i = 1
        if header.routeType.hasTransportCodes {
            guard raw.count >= 6 else { throw .truncated }
            transportCodes = TransportCodes(UInt16(raw[1]) | UInt16(raw[2]) << 8, UInt16(raw[3]) | UInt16(raw[4]) << 8)
            i = 5
        } else {
            transportCodes = nil
        }
        let pathLength = try PathLength(encoded: raw[i])
        i += 1
        guard raw.count - i >= pathLength.byteCount else { throw .truncated }
        let payloadCount = raw.count - i - pathLength.byteCount
        guard payloadCount <= AirLimits.maxPayloadSize else { throw .payloadTooLong }
        self.raw = raw
        self.header = header
        self.pathLength = pathLength
        path = UnsafeRawBufferPointer(rebasing: raw[i ..< i + pathLength.byteCount])
        payload = UnsafeRawBufferPointer(rebasing: raw[(i + pathLength.byteCount)...])
    }

    public var routeType: RouteType { header.routeType }
    public var payloadType: PayloadType { header.payloadType }
    /// The 8-byte dedup hash (`Packet::calculatePacketHash`).
    public var hash: PacketHash { PacketHash.compute(payloadType: payloadType, pathLength: pathLength, payload: payload) }
}

/// An owned packet in fixed inline storage (no heap allocation): build it, mutate its path as relays
/// do, and encode it into a caller buffer.
public struct Packet: Sendable {
    public var header: PacketHeader
    /// Used only when the route type has transport codes; kept otherwise.
    public var transportCodes: TransportCodes
    public private(set) var pathLength: PathLength
    private var pathStorage: FixedBytes64
    private var payloadStorage: FixedBytes184
    public private(set) var payloadCount: Int

    /// Builds a packet. `path` must be a whole number of `hashSize` hashes.
    public init<P: Collection<UInt8>, Q: Collection<UInt8>>(
        routeType: RouteType, payloadType: PayloadType, transportCodes: TransportCodes = .none,
        hashSize: Int = 1, path: P, payload: Q
    ) throws(AirError) {
        guard (1...3).contains(hashSize), path.count % hashSize == 0 else { throw .invalidPath }
        let pathLength = try PathLength(hashSize: hashSize, hopCount: path.count / hashSize)
        try self.init(header: PacketHeader(routeType: routeType, payloadType: payloadType),
                      transportCodes: transportCodes, pathLength: pathLength, path: path, payload: payload)
    }

    /// Builds a packet with no path.
    public init<Q: Collection<UInt8>>(
        routeType: RouteType, payloadType: PayloadType, transportCodes: TransportCodes = .none,
        hashSize: Int = 1, payload: Q
    ) throws(AirError) {
        try self.init(routeType: routeType, payloadType: payloadType, transportCodes: transportCodes,
                      hashSize: hashSize, path: EmptyCollection<UInt8>(), payload: payload)
    }

    /// Builds a packet with an explicit encoded path length (TRACE keeps SNR bytes in the path).
    public init<P: Collection<UInt8>, Q: Collection<UInt8>>(
        header: PacketHeader, transportCodes: TransportCodes = .none, pathLength: PathLength, path: P, payload: Q
    ) throws(AirError) {
        guard path.count == pathLength.byteCount else { throw .invalidPath }
        guard payload.count <= AirLimits.maxPayloadSize else { throw .payloadTooLong }
        self.header = header
        self.transportCodes = transportCodes
        self.pathLength = pathLength
        var pathBytes = FixedBytes64(repeating: 0)
        var payloadBytes = FixedBytes184(repeating: 0)
        payloadCount = payload.count
        // Arrays and slices are copied from their storage: callers in other modules get this
        // initialiser unspecialised, where iterating costs a witness call per byte.
        var i = 0
        let pathCopied: Void? = path.withContiguousStorageIfAvailable { for b in $0 { pathBytes[i] = b; i += 1 } }
        if pathCopied == nil {
            for b in path { pathBytes[i] = b; i += 1 }
        }
        i = 0
        let payloadCopied: Void? = payload.withContiguousStorageIfAvailable { for b in $0 { payloadBytes[i] = b; i += 1 } }
        if payloadCopied == nil {
            for b in payload { payloadBytes[i] = b; i += 1 }
        }
        pathStorage = pathBytes
        payloadStorage = payloadBytes
        guard encodedCount <= AirLimits.maxPacketSize else { throw .packetTooLong }
    }

    /// Copies a parsed view.
    public init(_ view: PacketView) {
        header = view.header
        transportCodes = view.transportCodes ?? .none
        pathLength = view.pathLength
        pathStorage = .init(repeating: 0)
        payloadStorage = .init(repeating: 0)
        payloadCount = view.payload.count
        // Copied as blocks (the parse checked that both fit): every packet a node hears is parsed.
        withUnsafeMutableBytes(of: &pathStorage) { $0.copyMemory(from: view.path) }
        withUnsafeMutableBytes(of: &payloadStorage) { $0.copyMemory(from: view.payload) }
    }

    /// Parses raw bytes (same rules as `PacketView`) into an owned packet.
    public init(parsing raw: UnsafeRawBufferPointer) throws(AirError) {
        self.init(try PacketView(raw))
    }

    /// Parses raw bytes (same rules as `PacketView`) into an owned packet.
    public init<C: Collection<UInt8>>(bytes: C) throws(AirError) {
        let result: Result<Packet, AirError> = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(AirError) -> Packet in try Packet(parsing: UnsafeRawBufferPointer(buffer)) }
        } ?? Array(bytes).withUnsafeBytes { raw in
            Result { () throws(AirError) -> Packet in try Packet(parsing: raw) }
        }
        self = try result.get()
    }

    public var routeType: RouteType {
        get { header.routeType }
        set { header.routeType = newValue }
    }
    public var payloadType: PayloadType { header.payloadType }

    /// Raw length on air.
    public var encodedCount: Int {
        1 + (header.routeType.hasTransportCodes ? 4 : 0) + 1 + pathLength.byteCount + payloadCount
    }

    /// Calls `body` with the path bytes.
    public func withPath<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let n = pathLength.byteCount
        return try withUnsafeBytes(of: pathStorage) { try body(UnsafeRawBufferPointer(rebasing: $0[0 ..< n])) }
    }

    /// Calls `body` with the payload bytes.
    public func withPayload<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let n = payloadCount
        return try withUnsafeBytes(of: payloadStorage) { try body(UnsafeRawBufferPointer(rebasing: $0[0 ..< n])) }
    }

    /// The path bytes (allocates).
    public var path: [UInt8] { withPath { Array($0) } }
    /// The payload bytes (allocates).
    public var payload: [UInt8] { withPayload { Array($0) } }

    /// The hop hashes of the path, one array per hop (allocates).
    public var hops: [[UInt8]] {
        let size = pathLength.hashSize
        let bytes = path
        return (0 ..< pathLength.hopCount).map { Array(bytes[$0 * size ..< ($0 + 1) * size]) }
    }

    /// Flood relay: appends `hash` (its first `pathLength.hashSize` bytes, usually the relay's public key)
    /// and increments the hop count. Fails when the path or the packet would be too long.
    public mutating func appendHop<C: Collection<UInt8>>(_ hash: C) throws(AirError) {
        let size = pathLength.hashSize
        guard hash.count >= size else { throw .invalidField }
        guard pathLength.canAppendHop, encodedCount + size <= AirLimits.maxPacketSize else { throw .invalidPath }
        var i = pathLength.byteCount
        let copied: Void? = hash.withContiguousStorageIfAvailable { for j in 0 ..< size { pathStorage[i] = $0[j]; i += 1 } }
        if copied == nil {
            for b in hash.prefix(size) { pathStorage[i] = b; i += 1 }
        }
        pathLength = try PathLength(hashSize: size, hopCount: pathLength.hopCount + 1)
    }

    /// `appendHop` with a relay's public key (its first `pathLength.hashSize` bytes). Not generic,
    /// so a relay in another module pays no generic call per packet.
    public mutating func appendHop(key: PublicKey) throws(AirError) {
        let size = pathLength.hashSize
        guard pathLength.canAppendHop, encodedCount + size <= AirLimits.maxPacketSize else { throw .invalidPath }
        let at = pathLength.byteCount
        for j in 0 ..< size { pathStorage[at + j] = key[j] }
        pathLength = try PathLength(hashSize: size, hopCount: pathLength.hopCount + 1)
    }

    /// `firstHopMatches` with a relay's public key (not generic, as `appendHop(key:)`).
    public func firstHopMatches(key: PublicKey) -> Bool {
        guard pathLength.hopCount > 0 else { return false }
        for j in 0 ..< pathLength.hashSize where pathStorage[j] != key[j] { return false }
        return true
    }

    /// Direct relay: removes the first hop hash from the path. Fails on an empty path.
    public mutating func removeFirstHop() throws(AirError) {
        guard pathLength.hopCount > 0 else { throw .invalidPath }
        let size = pathLength.hashSize
        let n = pathLength.byteCount
        for i in 0 ..< n - size { pathStorage[i] = pathStorage[i + size] }
        for i in n - size ..< n { pathStorage[i] = 0 }
        pathLength = try PathLength(hashSize: size, hopCount: pathLength.hopCount - 1)
    }

    /// Whether the first hop hash equals the first `pathLength.hashSize` bytes of `key` (next relay test).
    public func firstHopMatches<C: Collection<UInt8>>(_ key: C) -> Bool {
        guard pathLength.hopCount > 0, key.count >= pathLength.hashSize else { return false }
        let size = pathLength.hashSize
        if let same = key.withContiguousStorageIfAvailable({ k in (0 ..< size).allSatisfy { pathStorage[$0] == k[$0] } }) {
            return same
        }
        var i = 0
        for b in key.prefix(pathLength.hashSize) {
            if pathStorage[i] != b { return false }
            i += 1
        }
        return true
    }

    /// Encodes into `buffer`, returning the number of bytes written.
    public func encode(into buffer: UnsafeMutableRawBufferPointer) throws(AirError) -> Int {
        let n = encodedCount
        guard n <= AirLimits.maxPacketSize else { throw .packetTooLong }
        guard buffer.count >= n else { throw .truncated }
        var i = 0
        buffer[i] = header.byte; i += 1
        if header.routeType.hasTransportCodes {
            buffer[1] = UInt8(truncatingIfNeeded: transportCodes.code1)
            buffer[2] = UInt8(truncatingIfNeeded: transportCodes.code1 >> 8)
            buffer[3] = UInt8(truncatingIfNeeded: transportCodes.code2)
            buffer[4] = UInt8(truncatingIfNeeded: transportCodes.code2 >> 8)
            i = 5
        }
        buffer[i] = pathLength.encoded; i += 1
        withPath { UnsafeMutableRawBufferPointer(rebasing: buffer[i ..< i + $0.count]).copyMemory(from: $0) }
        i += pathLength.byteCount
        withPayload { UnsafeMutableRawBufferPointer(rebasing: buffer[i ..< i + $0.count]).copyMemory(from: $0) }
        i += payloadCount
        return i
    }

    /// The raw bytes (allocates).
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: encodedCount)
        _ = out.withUnsafeMutableBytes { try? encode(into: $0) }
        return out
    }

    /// The 8-byte dedup hash (`Packet::calculatePacketHash`).
    public var hash: PacketHash {
        withPayload { PacketHash.compute(payloadType: payloadType, pathLength: pathLength, payload: $0) }
    }
}

extension Packet: Equatable {
    /// Same bytes on air.
    public static func == (lhs: Packet, rhs: Packet) -> Bool {
        guard lhs.header == rhs.header, lhs.pathLength == rhs.pathLength, lhs.payloadCount == rhs.payloadCount else { return false }
        if lhs.header.routeType.hasTransportCodes && lhs.transportCodes != rhs.transportCodes { return false }
        return lhs.withPath { a in rhs.withPath { b in a.elementsEqual(b) } }
            && lhs.withPayload { a in rhs.withPayload { b in a.elementsEqual(b) } }
    }
}

extension Packet: CustomStringConvertible {
    public var description: String { "Packet(\(routeType) \(payloadType) path=\(AirHex.encode(path)) payload=\(payloadCount)B)" }
}
