import MeshCompanion

// Payload layouts (version 1) of every payload type, decoded from and encoded to bytes.
// Variable parts are copied into small arrays; the packet itself stays a zero-copy view.

/// A 4-byte ACK code (a `memcpy`d u32 in the firmware; `value` reads it little-endian).
public struct AckCode: Hashable, Sendable, CustomStringConvertible {
    public let value: UInt32
    public init(value: UInt32) { self.value = value }
    public init<C: Collection<UInt8>>(_ bytes: C) throws(AirError) {
        guard bytes.count == 4 else { throw .invalidField }
        value = readLE32(bytes, 0)
    }
    public var bytes: [UInt8] { le32(value) }
    public var hex: String { AirHex.encode(bytes) }
    public var description: String { hex }
}

/// REQ, RESPONSE, TXT_MSG and PATH: `dest_hash, src_hash, MAC[2], ciphertext`.
public struct PeerDatagram: Hashable, Sendable {
    public var destHash: UInt8
    public var srcHash: UInt8
    /// `MAC[2] || ciphertext`.
    public var macAndCiphertext: [UInt8]

    public init(destHash: UInt8, srcHash: UInt8, macAndCiphertext: [UInt8]) {
        self.destHash = destHash
        self.srcHash = srcHash
        self.macAndCiphertext = macAndCiphertext
    }

    /// Needs at least one ciphertext byte after the MAC (like `Mesh::onRecvPacket`).
    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count > 2 + AirLimits.macSize else { throw .truncated }
        destHash = b[0]
        srcHash = b[1]
        macAndCiphertext = Array(b[2...])
    }

    public var encoded: [UInt8] { [destHash, srcHash] + macAndCiphertext }
    /// `dest_hash` equals the first byte of `key` (the receiver then tries its contacts).
    public func isAddressed(to key: PublicKey) -> Bool { destHash == key.hashByte }
    /// `src_hash` equals the first byte of `key` (a candidate sender).
    public func mayBeFrom(_ key: PublicKey) -> Bool { srcHash == key.hashByte }
    public var mac: [UInt8] { Array(macAndCiphertext.prefix(2)) }
    public var ciphertext: [UInt8] { Array(macAndCiphertext.dropFirst(2)) }

    /// Verifies the MAC with `secret` and decrypts (plaintext keeps its zero padding).
    public func decrypt(with secret: SharedSecret) throws(AirError) -> [UInt8] {
        try secret.decrypt(macAndCiphertext)
    }

    /// Tries each candidate secret (the contacts whose key starts with `srcHash`) until the MAC
    /// verifies. Returns the index of the matching secret and the plaintext.
    public func decrypt<S: Sequence<SharedSecret>>(trying secrets: S) -> (index: Int, plaintext: [UInt8])? {
        for (i, s) in secrets.enumerated() {
            if let p = try? s.decrypt(macAndCiphertext) { return (i, p) }
        }
        return nil
    }
}

/// GRP_TXT and GRP_DATA: `channel_hash, MAC[2], ciphertext`.
public struct GroupDatagram: Hashable, Sendable {
    public var channelHash: UInt8
    public var macAndCiphertext: [UInt8]

    public init(channelHash: UInt8, macAndCiphertext: [UInt8]) {
        self.channelHash = channelHash
        self.macAndCiphertext = macAndCiphertext
    }

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count > 1 + AirLimits.macSize else { throw .truncated }
        channelHash = b[0]
        macAndCiphertext = Array(b[1...])
    }

    public var encoded: [UInt8] { [channelHash] + macAndCiphertext }

    public func decrypt(with channel: ChannelSecret) throws(AirError) -> [UInt8] {
        try channel.sharedSecret.decrypt(macAndCiphertext)
    }

    /// Tries every channel whose hash matches `channelHash` until the MAC verifies.
    public func decrypt<S: Sequence<ChannelSecret>>(trying channels: S) -> (index: Int, plaintext: [UInt8])? {
        for (i, c) in channels.enumerated() where c.hash == channelHash {
            if let p = try? c.sharedSecret.decrypt(macAndCiphertext) { return (i, p) }
        }
        return nil
    }
}

/// ANON_REQ: `dest_hash, sender_pubkey[32], MAC[2], ciphertext` (ECDH with the sender's static key).
public struct AnonRequest: Hashable, Sendable {
    public var destHash: UInt8
    public var sender: PublicKey
    public var macAndCiphertext: [UInt8]

    public init(destHash: UInt8, sender: PublicKey, macAndCiphertext: [UInt8]) {
        self.destHash = destHash
        self.sender = sender
        self.macAndCiphertext = macAndCiphertext
    }

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count > 1 + 32 + AirLimits.macSize else { throw .truncated }
        destHash = b[0]
        sender = try PublicKey(air: b[1 ..< 33])
        macAndCiphertext = Array(b[33...])
    }

    public var encoded: [UInt8] { [destHash] + sender.bytes + macAndCiphertext }

    /// Computes the shared secret with the embedded sender key and decrypts.
    public func decrypt(recipient: LocalIdentity) throws(AirError) -> (secret: SharedSecret, plaintext: [UInt8]) {
        let secret = try recipient.sharedSecret(with: sender)
        return (secret, try secret.decrypt(macAndCiphertext))
    }
}

/// ACK: `ack[4]` optionally followed by 2 extra bytes (companions: attempt byte, random byte).
public struct AckPayload: Hashable, Sendable {
    public var code: AckCode
    /// 0 or 2 bytes.
    public var extra: [UInt8]

    public init(code: AckCode, extra: [UInt8] = []) {
        self.code = code
        self.extra = extra
    }

    /// Receivers look only at the first 4 bytes; longer payloads are accepted.
    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count >= 4 else { throw .truncated }
        code = try AckCode(b[0 ..< 4])
        extra = Array(b[4...])
    }

    public var encoded: [UInt8] { code.bytes + extra }
}

/// MULTIPART: `(remaining << 4 | inner_type), inner payload` (only ACK is used: "multi-ACK").
public struct MultipartPayload: Hashable, Sendable {
    public var remaining: UInt8
    public var innerType: PayloadType
    public var inner: [UInt8]

    public init(remaining: UInt8, innerType: PayloadType, inner: [UInt8]) {
        self.remaining = remaining & 0x0F
        self.innerType = innerType
        self.inner = inner
    }

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count >= 1 else { throw .truncated }
        remaining = b[0] >> 4
        innerType = PayloadType(rawValue: b[0] & 0x0F)!
        inner = Array(b[1...])
    }

    public var encoded: [UInt8] { [remaining << 4 | innerType.rawValue] + inner }
}

/// TRACE: `tag u32, auth_code u32, flags u8, hop hashes`. Hash width is `1 << (flags & 3)` bytes.
/// The packet's path holds one SNR×4 byte per hop traversed so far.
public struct TracePayload: Hashable, Sendable {
    public var tag: UInt32
    public var authCode: UInt32
    public var flags: UInt8
    /// Concatenated hop hashes of `hashSize` bytes each.
    public var hashes: [UInt8]

    public init(tag: UInt32, authCode: UInt32 = 0, flags: UInt8 = 0, hashes: [UInt8]) {
        self.tag = tag
        self.authCode = authCode
        self.flags = flags
        self.hashes = hashes
    }

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count >= 9 else { throw .truncated }
        tag = readLE32(b, 0)
        authCode = readLE32(b, 4)
        flags = b[8]
        hashes = Array(b[9...])
    }

    public var encoded: [UInt8] { le32(tag) + le32(authCode) + [flags] + hashes }
    /// Bytes per hop hash: 1, 2, 4 or 8.
    public var hashSize: Int { 1 << Int(flags & 3) }
    /// The hop hashes (a trailing partial hash is dropped).
    public var hopHashes: [[UInt8]] {
        stride(from: 0, to: hashes.count - hashSize + 1, by: hashSize).map { Array(hashes[$0 ..< $0 + hashSize]) }
    }

    /// The hash the next relay must match after `snrCount` SNR bytes have been collected, or nil when
    /// the trace is complete (`offset >= hashes.count`).
    public func nextHash(afterSNRCount snrCount: Int) -> ArraySlice<UInt8>? {
        let offset = snrCount << Int(flags & 3)
        guard offset < hashes.count else { return nil }
        return hashes[offset ..< min(offset + hashSize, hashes.count)]
    }
}

/// Node type in advert appdata (low nibble of the flags; an enum, not a bitmask).
public struct AdvertType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }
    public static let none = AdvertType(rawValue: 0)
    public static let chat = AdvertType(rawValue: 1)
    public static let repeater = AdvertType(rawValue: 2)
    public static let room = AdvertType(rawValue: 3)
    public static let sensor = AdvertType(rawValue: 4)
    public var description: String {
        switch rawValue {
        case 0: "none"
        case 1: "chat"
        case 2: "repeater"
        case 3: "room"
        case 4: "sensor"
        default: "type\(rawValue)"
        }
    }
}

/// Advert appdata: `flags, [lat i32, lon i32], [feat1 u16], [feat2 u16], [name]` (≤ 32 bytes).
public struct AdvertData: Hashable, Sendable {
    public static let hasLocation: UInt8 = 0x10
    public static let hasFeat1: UInt8 = 0x20
    public static let hasFeat2: UInt8 = 0x40
    public static let hasName: UInt8 = 0x80

    public var type: AdvertType
    /// Latitude and longitude × 1e6.
    public var latitudeE6: Int32?
    public var longitudeE6: Int32?
    public var feat1: UInt16?
    public var feat2: UInt16?
    /// Name bytes (UTF-8, no NUL). Encoding cuts it at a UTF-8 boundary so appdata stays ≤ 32 bytes.
    public var nameBytes: [UInt8]

    public init(type: AdvertType, name: String? = nil, latitude: Double? = nil, longitude: Double? = nil,
                feat1: UInt16? = nil, feat2: UInt16? = nil) {
        self.type = type
        if let lat = latitude, let lon = longitude {
            latitudeE6 = Int32(clamping: Int64(lat * 1e6))
            longitudeE6 = Int32(clamping: Int64(lon * 1e6))
        }
        self.feat1 = feat1
        self.feat2 = feat2
        nameBytes = Array((name ?? "").utf8)
    }

    /// Parses appdata like `AdvertDataParser` (truncated optional fields are an error).
    public init<C: Collection<UInt8>>(bytes: C) throws(AirError) {
        let b = Array(bytes)
        guard let flags = b.first else { throw .truncated }
        type = AdvertType(rawValue: flags)
        var i = 1
        if flags & Self.hasLocation != 0 {
            guard b.count >= i + 8 else { throw .truncated }
            latitudeE6 = Int32(bitPattern: readLE32(b, i))
            longitudeE6 = Int32(bitPattern: readLE32(b, i + 4))
            i += 8
        }
        if flags & Self.hasFeat1 != 0 {
            guard b.count >= i + 2 else { throw .truncated }
            feat1 = readLE16(b, i); i += 2
        }
        if flags & Self.hasFeat2 != 0 {
            guard b.count >= i + 2 else { throw .truncated }
            feat2 = readLE16(b, i); i += 2
        }
        if flags & Self.hasName != 0 {
            let rest = b[i...]
            nameBytes = Array(rest.prefix { $0 != 0 })
        } else {
            nameBytes = []
        }
    }

    public var latitude: Double? { latitudeE6.map { Double($0) / 1e6 } }
    public var longitude: Double? { longitudeE6.map { Double($0) / 1e6 } }
    /// The name as text (invalid UTF-8 repaired), nil when absent.
    public var name: String? { nameBytes.isEmpty ? nil : String(decoding: nameBytes, as: UTF8.self) }

    /// Encodes like `AdvertDataBuilder::encodeTo`: zero feature values are omitted, the name is cut at
    /// a UTF-8 boundary so the result is ≤ 32 bytes.
    public var encoded: [UInt8] {
        var flags = type.rawValue
        var out: [UInt8] = [0]
        if let lat = latitudeE6, let lon = longitudeE6 {
            flags |= Self.hasLocation
            out += le32(UInt32(bitPattern: lat)) + le32(UInt32(bitPattern: lon))
        }
        if let f = feat1, f != 0 { flags |= Self.hasFeat1; out += le16(f) }
        if let f = feat2, f != 0 { flags |= Self.hasFeat2; out += le16(f) }
        let name = utf8Prefix(nameBytes.prefix { $0 != 0 }, maxBytes: AirLimits.maxAdvertDataSize - out.count)
        if !name.isEmpty { flags |= Self.hasName; out += name }
        out[0] = flags
        return out
    }
}

/// The longest prefix of `bytes` of at most `maxBytes` that ends on a UTF-8 sequence boundary.
func utf8Prefix<C: Collection<UInt8>>(_ bytes: C, maxBytes: Int) -> [UInt8] {
    let b = Array(bytes)
    if b.count <= maxBytes { return b }
    var n = max(maxBytes, 0)
    while n > 0 && (b[n] & 0xC0) == 0x80 { n -= 1 }
    return Array(b[0 ..< n])
}

/// ADVERT: `pubkey[32], timestamp u32, signature[64], appdata[≤32]`; the signature covers
/// `pubkey || timestamp || appdata`.
public struct Advert: Hashable, Sendable {
    public var publicKey: PublicKey
    public var timestamp: UInt32
    public var signature: [UInt8]
    /// Appdata as carried (receivers cap it at 32 bytes before verifying).
    public var appData: [UInt8]

    public init(publicKey: PublicKey, timestamp: UInt32, signature: [UInt8], appData: [UInt8]) {
        self.publicKey = publicKey
        self.timestamp = timestamp
        self.signature = signature
        self.appData = appData
    }

    /// Signs a new advert. Appdata above 32 bytes is rejected (`Mesh::createAdvert`).
    public init(identity: LocalIdentity, timestamp: UInt32, appData: [UInt8]) throws(AirError) {
        guard appData.count <= AirLimits.maxAdvertDataSize else { throw .tooLong }
        publicKey = identity.publicKey
        self.timestamp = timestamp
        self.appData = appData
        signature = identity.sign(Self.signedMessage(publicKey, timestamp, appData))
    }

    /// The bytes before appdata: public key, timestamp and signature.
    public static let fixedSize = AirLimits.publicKeySize + 4 + AirLimits.signatureSize

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard b.count >= Self.fixedSize else { throw .truncated }
        publicKey = try PublicKey(air: b[0 ..< 32])
        timestamp = readLE32(b, 32)
        signature = Array(b[36 ..< 100])
        appData = Array(b[100...])
    }

    public var encoded: [UInt8] { publicKey.bytes + le32(timestamp) + signature + appData }

    /// Appdata as the receiver uses it (capped at 32 bytes).
    public var cappedAppData: [UInt8] { Array(appData.prefix(AirLimits.maxAdvertDataSize)) }

    /// What an advert's signature covers: `pubkey || timestamp || appdata`.
    public static func signedMessage(_ key: PublicKey, _ ts: UInt32, _ appData: [UInt8]) -> [UInt8] {
        key.bytes + le32(ts) + appData
    }

    /// Verifies the signature over `pubkey || ts || appdata[0..32]` (libsodium).
    public var isValid: Bool {
        publicKey.isValidSignature(signature, for: Self.signedMessage(publicKey, timestamp, cappedAppData))
    }

    /// The parsed appdata (capped at 32 bytes).
    public func data() throws(AirError) -> AdvertData { try AdvertData(bytes: cappedAppData) }
}

/// CONTROL sub-types (upper nibble of the first byte).
public enum ControlPayload: Hashable, Sendable {
    /// 0x80: `0x80 | prefix_only, type_filter, tag u32, [since u32]`.
    case discoverRequest(prefixOnly: Bool, typeFilter: UInt8, tag: UInt32, since: UInt32?)
    /// 0x90: `0x90 | node_type, snr×4 i8, tag u32, pubkey[8 or 32]`.
    case discoverResponse(nodeType: AdvertType, snrQuarterDb: Int8, tag: UInt32, publicKey: [UInt8])
    /// Any other sub-type: the first byte and the rest.
    case other(flags: UInt8, data: [UInt8])

    public static let discoverRequestType: UInt8 = 0x80
    public static let discoverResponseType: UInt8 = 0x90

    public init<C: Collection<UInt8>>(payload: C) throws(AirError) {
        let b = Array(payload)
        guard let first = b.first else { throw .truncated }
        switch first & 0xF0 {
        case Self.discoverRequestType:
            guard b.count >= 6 else { throw .truncated }
            self = .discoverRequest(prefixOnly: first & 1 != 0, typeFilter: b[1], tag: readLE32(b, 2),
                                    since: b.count >= 10 ? readLE32(b, 6) : nil)
        case Self.discoverResponseType:
            guard b.count >= 6 else { throw .truncated }
            self = .discoverResponse(nodeType: AdvertType(rawValue: first), snrQuarterDb: Int8(bitPattern: b[1]),
                                     tag: readLE32(b, 2), publicKey: Array(b[6...]))
        default:
            self = .other(flags: first, data: Array(b[1...]))
        }
    }

    public var encoded: [UInt8] {
        switch self {
        case let .discoverRequest(prefixOnly, typeFilter, tag, since):
            return [Self.discoverRequestType | (prefixOnly ? 1 : 0), typeFilter] + le32(tag) + (since.map(le32) ?? [])
        case let .discoverResponse(nodeType, snr, tag, key):
            return [Self.discoverResponseType | nodeType.rawValue, UInt8(bitPattern: snr)] + le32(tag) + key
        case let .other(flags, data):
            return [flags] + data
        }
    }
}
