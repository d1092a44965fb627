import MeshCompanion

// `txt_type` in the flags byte of a TXT_MSG plaintext (`TxtDataHelpers.h`) is MeshCompanion's
// `TextType`, the same value the companion frames carry.

/// TXT_MSG plaintext: `ts u32, (txt_type<<2 | attempt&3), [author_pfx4 if signed], text, [00, attempt if attempt > 3]`.
public struct TextMessage: Hashable, Sendable {
    public var timestamp: UInt32
    /// Raw txt_type (upper 6 bits of the flags byte); see `TextType`.
    public var txtType: UInt8
    /// Send attempt (0...255; only the low 2 bits travel in the flags byte, larger values ride after the text).
    public var attempt: UInt8
    /// 4-byte author prefix, present for signed (room) text.
    public var authorPrefix: [UInt8]?
    /// UTF-8 text without NUL.
    public var text: [UInt8]

    public init(timestamp: UInt32, type: TextType = .plain, attempt: UInt8 = 0, authorPrefix: [UInt8]? = nil, text: String) {
        self.init(timestamp: timestamp, txtType: type.rawValue, attempt: attempt, authorPrefix: authorPrefix, text: Array(text.utf8))
    }

    public init(timestamp: UInt32, txtType: UInt8, attempt: UInt8 = 0, authorPrefix: [UInt8]? = nil, text: [UInt8]) {
        self.timestamp = timestamp
        self.txtType = txtType
        self.attempt = attempt
        self.authorPrefix = authorPrefix.map { Array($0.prefix(4)) }
        self.text = text
    }

    /// Parses a decrypted plaintext (with its zero padding). The text ends at the first NUL; a byte
    /// after that NUL greater than 3 is the extended attempt number.
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count > 5 else { throw .truncated }
        timestamp = readLE32(b, 0)
        txtType = b[4] >> 2
        attempt = b[4] & 3
        var i = 5
        if txtType == TextType.signedPlain.rawValue {
            guard b.count >= 9 else { throw .truncated }
            authorPrefix = Array(b[5 ..< 9])
            i = 9
        } else {
            authorPrefix = nil
        }
        let rest = b[i...]
        let end = rest.firstIndex(of: 0) ?? b.count
        text = Array(b[i ..< end])
        if end + 1 < b.count, b[end + 1] > 3 { attempt = b[end + 1] }
    }

    public var type: TextType { TextType(rawValue: txtType) }
    public var flagsByte: UInt8 { txtType << 2 | attempt & 3 }
    /// The text as a string (invalid UTF-8 repaired).
    public var string: String { String(decoding: text, as: UTF8.self) }

    /// The plaintext bytes (before encryption). Throws when the text is over 160 bytes (158 with an
    /// extended attempt), like `composeMsgPacket`.
    public func encoded() throws(AirError) -> [UInt8] {
        guard text.count <= AirLimits.maxTextLength, attempt <= 3 || text.count <= AirLimits.maxTextLength - 2 else {
            throw .tooLong
        }
        var out = le32(timestamp) + [flagsByte]
        if let a = authorPrefix { out += a }
        out += text
        if attempt > 3 { out += [0, attempt] }
        return out
    }

    /// The ACK code the receiver will send: for plain/CLI text over the SENDER's key, for signed text
    /// over the RECEIVER's key (pass the receiver as `key` then).
    public func ackCode(key: PublicKey) -> AckCode {
        if let a = authorPrefix, txtType == TextType.signedPlain.rawValue {
            return TextAck.signedCode(timestamp: timestamp, attempt: attempt, authorPrefix: a, text: text, receiver: key)
        }
        return TextAck.code(timestamp: timestamp, txtType: txtType, attempt: attempt, text: text, sender: key)
    }
}

/// REQ plaintext: `tag u32 (sender timestamp), body` where body usually starts with the request type.
public struct RequestPlaintext: Hashable, Sendable {
    public var tag: UInt32
    public var body: [UInt8]

    public init(tag: UInt32, body: [UInt8]) {
        self.tag = tag
        self.body = body
    }

    /// The 13-byte form of `sendRequest(req_type)`: `tag, req_type, 4 zero bytes, 4 random bytes`.
    public init(tag: UInt32, requestType: UInt8, random: [UInt8]) {
        self.tag = tag
        body = [requestType, 0, 0, 0, 0] + Array(random.prefix(4)) + [UInt8](repeating: 0, count: max(0, 4 - random.count))
    }

    /// Needs more than 4 bytes (`len > 4` in `onPeerDataRecv`).
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count > 4 else { throw .truncated }
        tag = readLE32(b, 0)
        body = Array(b[4...])
    }

    public var requestType: UInt8? { body.first }
    public var encoded: [UInt8] { le32(tag) + body }
}

/// RESPONSE plaintext: `tag u32 (echo of the request tag, or the server clock for login), body`.
public struct ResponsePlaintext: Hashable, Sendable {
    public var tag: UInt32
    public var body: [UInt8]

    public init(tag: UInt32, body: [UInt8]) {
        self.tag = tag
        self.body = body
    }

    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count >= 4 else { throw .truncated }
        tag = readLE32(b, 0)
        body = Array(b[4...])
    }

    public var encoded: [UInt8] { le32(tag) + body }
}

/// PATH plaintext: `path_len (encoded), path, extra_type (low 4 bits), extra`; with no extra the
/// firmware sends `0xFF` and 4 random bytes.
public struct PathPlaintext: Hashable, Sendable {
    public var pathLength: PathLength
    public var path: [UInt8]
    /// Low 4 bits: the payload type of `extra` (ACK or RESPONSE), 0x0F for none.
    public var extraType: UInt8
    /// The extra payload (decoded: may carry zero padding).
    public var extra: [UInt8]

    public static let noExtra: UInt8 = 0xFF

    /// With an extra payload (e.g. `.ack` with the 6-byte ACK, `.response` with the response plaintext).
    public init(pathLength: PathLength, path: [UInt8], extraType: PayloadType, extra: [UInt8]) {
        self.pathLength = pathLength
        self.path = path
        self.extraType = extraType.rawValue
        self.extra = extra
    }

    /// Without extra: `0xFF` followed by 4 random bytes.
    public init(pathLength: PathLength, path: [UInt8], random: [UInt8]) {
        self.pathLength = pathLength
        self.path = path
        extraType = Self.noExtra
        extra = Array(random.prefix(4))
    }

    /// Parses a decrypted PATH plaintext; a reserved or too long path_len is rejected.
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard let first = b.first else { throw .truncated }
        pathLength = try PathLength(encoded: first)
        let end = 1 + pathLength.byteCount
        guard b.count > end else { throw .truncated }
        path = Array(b[1 ..< end])
        extraType = b[end] & 0x0F
        extra = Array(b[(end + 1)...])
    }

    /// The extra's payload type (nil for 0x0F "none" and reserved values).
    public var extraPayloadType: PayloadType? {
        let t = extraType & 0x0F
        return t == 0x0F ? nil : PayloadType(rawValue: t)
    }

    /// Plaintext bytes. Throws when path + extra would not fit (`createPathReturn`'s limit).
    public func encoded() throws(AirError) -> [UInt8] {
        guard path.count == pathLength.byteCount else { throw .invalidPath }
        let extraLen = extraType == Self.noExtra ? 0 : extra.count
        guard path.count + extraLen + 5 <= AirLimits.maxPayloadSize - 2 - AirLimits.cipherBlockSize else { throw .tooLong }
        return [pathLength.encoded] + path + [extraType] + extra
    }
}

/// GRP_TXT plaintext: `ts u32, flags (0), "name: text"`.
public struct GroupText: Hashable, Sendable {
    public var timestamp: UInt32
    /// Flags byte; receivers drop messages whose `flags >> 2` is not 0.
    public var flags: UInt8
    /// The whole `"name: text"` bytes (no NUL).
    public var text: [UInt8]

    /// Builds `"name: text"`, byte-truncating the text so the whole stays ≤ 160 bytes
    /// (`sendGroupMessage`).
    public init(timestamp: UInt32, senderName: String, message: String) {
        self.timestamp = timestamp
        flags = 0
        let prefix = Array((senderName + ": ").utf8)
        var body = Array(message.utf8)
        if prefix.count + body.count > AirLimits.maxTextLength {
            body = Array(body.prefix(max(0, AirLimits.maxTextLength - prefix.count)))
        }
        text = prefix + body
    }

    public init(timestamp: UInt32, flags: UInt8 = 0, text: [UInt8]) {
        self.timestamp = timestamp
        self.flags = flags
        self.text = text
    }

    /// Parses a decrypted plaintext (≥ 5 bytes); the text ends at the first NUL.
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count >= 5 else { throw .truncated }
        timestamp = readLE32(b, 0)
        flags = b[4]
        text = Array(b[5...].prefix { $0 != 0 })
    }

    /// Whether the firmware would show it (`(flags >> 2) == 0`).
    public var isPlainText: Bool { flags >> 2 == 0 }
    public var string: String { String(decoding: text, as: UTF8.self) }
    /// Index of the first ": " in `text`.
    private var separator: Int? {
        guard text.count >= 2 else { return nil }
        for i in 0 ..< text.count - 1 where text[i] == 0x3A && text[i + 1] == 0x20 { return i }
        return nil
    }
    /// The part before the first ": ", if any.
    public var senderName: String? {
        guard let i = separator else { return nil }
        return String(decoding: text[..<i], as: UTF8.self)
    }
    /// The part after the first ": " (the whole text when there is none).
    public var message: String {
        guard let i = separator else { return string }
        return String(decoding: text[(i + 2)...], as: UTF8.self)
    }

    public var encoded: [UInt8] { le32(timestamp) + [flags] + text }
}

/// GRP_DATA plaintext: `data_type u16, data_len u8, data`.
public struct GroupData: Hashable, Sendable {
    /// Largest data on air (`MAX_GROUP_DATA_LENGTH`).
    public static let maxDataLength = 165

    public var dataType: UInt16
    public var data: [UInt8]

    public init(dataType: UInt16, data: [UInt8]) {
        self.dataType = dataType
        self.data = data
    }

    /// Rejects a data_len larger than what is present.
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count >= 3 else { throw .truncated }
        dataType = readLE16(b, 0)
        let n = Int(b[2])
        guard n <= b.count - 3 else { throw .truncated }
        data = Array(b[3 ..< 3 + n])
    }

    public func encoded() throws(AirError) -> [UInt8] {
        guard data.count <= Self.maxDataLength else { throw .tooLong }
        return le16(dataType) + [UInt8(data.count)] + data
    }
}

/// ANON_REQ login plaintext: repeater `ts, password` or room `ts, sync_since, password`
/// (password ≤ 15 bytes, no NUL).
public struct LoginRequest: Hashable, Sendable {
    public var timestamp: UInt32
    /// Present for room servers.
    public var syncSince: UInt32?
    public var password: [UInt8]

    public init(timestamp: UInt32, syncSince: UInt32? = nil, password: String) {
        self.timestamp = timestamp
        self.syncSince = syncSince
        self.password = Array(Array(password.utf8).prefix(15))
    }

    /// Parses a decrypted login; `room` selects the layout with `sync_since`.
    public init<C: Collection<UInt8>>(plaintext: C, room: Bool) throws(AirError) {
        let b = Array(plaintext)
        let start = room ? 8 : 4
        guard b.count >= start else { throw .truncated }
        timestamp = readLE32(b, 0)
        syncSince = room ? readLE32(b, 4) : nil
        password = Array(b[start...].prefix { $0 != 0 })
    }

    public var passwordString: String { String(decoding: password, as: UTF8.self) }
    public var encoded: [UInt8] { le32(timestamp) + (syncSince.map(le32) ?? []) + password.prefix(15) }
}

/// The 13-byte login reply body: `now u32, 0x00 (OK), 0x00 (legacy keep-alive), admin_flag,
/// permissions, rand[4], FIRMWARE_VER_LEVEL`.
public struct LoginResponse: Hashable, Sendable {
    public static let ok: UInt8 = 0
    public var serverTime: UInt32
    public var result: UInt8
    public var keepAlive: UInt8
    /// Repeater: 1 admin, else 0. Room: 1 admin, 2 when permissions is 0, else 0.
    public var adminFlag: UInt8
    public var permissions: UInt8
    public var random: [UInt8]
    public var firmwareLevel: UInt8

    public init(serverTime: UInt32, adminFlag: UInt8, permissions: UInt8, random: [UInt8], firmwareLevel: UInt8 = 2) {
        self.serverTime = serverTime
        result = Self.ok
        keepAlive = 0
        self.adminFlag = adminFlag
        self.permissions = permissions
        self.random = Array(random.prefix(4)) + [UInt8](repeating: 0, count: max(0, 4 - random.count))
        self.firmwareLevel = firmwareLevel
    }

    /// Parses a RESPONSE plaintext (≥ 12 bytes; older servers omit the last byte).
    public init<C: Collection<UInt8>>(plaintext: C) throws(AirError) {
        let b = Array(plaintext)
        guard b.count >= 12 else { throw .truncated }
        serverTime = readLE32(b, 0)
        result = b[4]
        keepAlive = b[5]
        adminFlag = b[6]
        permissions = b[7]
        random = Array(b[8 ..< 12])
        firmwareLevel = b.count > 12 ? b[12] : 0
    }

    public var encoded: [UInt8] {
        le32(serverTime) + [result, keepAlive, adminFlag, permissions] + random + [firmwareLevel]
    }
}
