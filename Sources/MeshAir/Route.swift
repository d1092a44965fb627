import MeshCompanion

/// How a new packet leaves the node (`Mesh::sendFlood`, `sendDirect`, `sendZeroHop`).
public enum Route: Hashable, Sendable {
    /// FLOOD with an empty path; relays append hashes of `hashSize` bytes (1...3).
    case flood(hashSize: Int)
    /// TRANSPORT_FLOOD scoped to a region: transport code 1 = the region's code for this payload, code 2 = 0.
    case scopedFlood(RegionKey, hashSize: Int)
    /// DIRECT along `path` (relay hashes in travel order, `hashSize` bytes each). An empty path is zero-hop.
    case direct(path: [UInt8], hashSize: Int)

    /// FLOOD with 1-byte hashes.
    public static let flood = Route.flood(hashSize: 1)
    /// DIRECT with an empty path: neighbours process it, nobody forwards it.
    public static let zeroHop = Route.direct(path: [], hashSize: 1)
    /// DIRECT along 1-byte hop hashes.
    public static func direct(_ path: [UInt8]) -> Route { .direct(path: path, hashSize: 1) }
}

extension Packet {
    /// A packet carrying `payload` sent along `route`.
    public init(payloadType: PayloadType, payload: [UInt8], route: Route) throws(AirError) {
        switch route {
        case let .flood(hashSize):
            try self.init(routeType: .flood, payloadType: payloadType, hashSize: hashSize, payload: payload)
        case let .scopedFlood(region, hashSize):
            let code = region.transportCode(payloadType: payloadType, payload: payload)
            try self.init(routeType: .transportFlood, payloadType: payloadType, transportCodes: TransportCodes(code, 0),
                          hashSize: hashSize, payload: payload)
        case let .direct(path, hashSize):
            try self.init(routeType: .direct, payloadType: payloadType, hashSize: hashSize, path: path, payload: payload)
        }
    }

    // MARK: Builders (the firmware's `Mesh::create*` followed by a send)

    /// REQ, RESPONSE or TXT_MSG datagram: `dest_hash, src_hash, MAC, AES(plaintext)` (`createDatagram`).
    /// Fails when `plaintext + 2 + 15 > 184`. Pass a cached `secret`, or nil to compute the ECDH.
    public static func peerDatagram(_ type: PayloadType, plaintext: [UInt8], from sender: LocalIdentity,
                                    to recipient: PublicKey, secret: SharedSecret? = nil, route: Route) throws(AirError) -> Packet {
        guard type == .req || type == .response || type == .txtMsg else { throw .invalidField }
        guard plaintext.count + AirLimits.macSize + AirLimits.cipherBlockSize - 1 <= AirLimits.maxPayloadSize else { throw .tooLong }
        let s = try resolve(secret, sender, recipient)
        let d = PeerDatagram(destHash: recipient.hashByte, srcHash: sender.publicKey.hashByte, macAndCiphertext: s.encrypt(plaintext))
        return try Packet(payloadType: type, payload: d.encoded, route: route)
    }

    /// TXT_MSG for `message`. The expected ACK is `message.ackCode(key: sender.publicKey)`.
    public static func textMessage(_ message: TextMessage, from sender: LocalIdentity, to recipient: PublicKey,
                                   secret: SharedSecret? = nil, route: Route) throws(AirError) -> Packet {
        try peerDatagram(.txtMsg, plaintext: message.encoded(), from: sender, to: recipient, secret: secret, route: route)
    }

    /// PATH return (`createPathReturn`): encrypted `path_len, path, extra_type, extra` to `recipient`.
    public static func pathReturn(_ path: PathPlaintext, from sender: LocalIdentity, to recipient: PublicKey,
                                  secret: SharedSecret? = nil, route: Route) throws(AirError) -> Packet {
        let plain = try path.encoded()
        let s = try resolve(secret, sender, recipient)
        let d = PeerDatagram(destHash: recipient.hashByte, srcHash: sender.publicKey.hashByte, macAndCiphertext: s.encrypt(plain))
        return try Packet(payloadType: .path, payload: d.encoded, route: route)
    }

    /// ANON_REQ (`createAnonDatagram`): `dest_hash, sender pubkey, MAC, AES(plaintext)`.
    public static func anonRequest(plaintext: [UInt8], from sender: LocalIdentity, to recipient: PublicKey,
                                   secret: SharedSecret? = nil, route: Route) throws(AirError) -> Packet {
        guard plaintext.count + 1 + AirLimits.publicKeySize + AirLimits.cipherBlockSize - 1 <= AirLimits.maxPayloadSize else { throw .tooLong }
        let s = try resolve(secret, sender, recipient)
        let a = AnonRequest(destHash: recipient.hashByte, sender: sender.publicKey, macAndCiphertext: s.encrypt(plaintext))
        return try Packet(payloadType: .anonReq, payload: a.encoded, route: route)
    }

    /// GRP_TXT or GRP_DATA (`createGroupDatagram`): `channel_hash, MAC, AES(plaintext)`.
    public static func groupDatagram(_ type: PayloadType, plaintext: [UInt8], channel: ChannelSecret,
                                     route: Route = .flood) throws(AirError) -> Packet {
        guard type == .grpTxt || type == .grpData else { throw .invalidField }
        guard plaintext.count + 1 + AirLimits.cipherBlockSize - 1 <= AirLimits.maxPayloadSize else { throw .tooLong }
        let g = GroupDatagram(channelHash: channel.hash, macAndCiphertext: channel.sharedSecret.encrypt(plaintext))
        return try Packet(payloadType: type, payload: g.encoded, route: route)
    }

    /// GRP_TXT for a channel message.
    public static func groupText(_ text: GroupText, channel: ChannelSecret, route: Route = .flood) throws(AirError) -> Packet {
        try groupDatagram(.grpTxt, plaintext: text.encoded, channel: channel, route: route)
    }

    /// GRP_DATA for a channel datagram.
    public static func groupData(_ data: GroupData, channel: ChannelSecret, route: Route = .flood) throws(AirError) -> Packet {
        try groupDatagram(.grpData, plaintext: data.encoded(), channel: channel, route: route)
    }

    /// ADVERT signed by `identity` (`createAdvert`).
    public static func advert(identity: LocalIdentity, timestamp: UInt32, appData: [UInt8], route: Route) throws(AirError) -> Packet {
        let a = try Advert(identity: identity, timestamp: timestamp, appData: appData)
        return try Packet(payloadType: .advert, payload: a.encoded, route: route)
    }

    /// ACK (`createAck`): the 4-byte code plus optional 2 extra bytes.
    public static func ack(_ code: AckCode, extra: [UInt8] = [], route: Route) throws(AirError) -> Packet {
        guard extra.count <= 2 else { throw .tooLong }
        return try Packet(payloadType: .ack, payload: code.bytes + extra, route: route)
    }

    /// MULTIPART ACK (`createMultiAck`): `(remaining << 4 | ACK), code, extra`.
    public static func multipartAck(_ code: AckCode, extra: [UInt8] = [], remaining: UInt8, route: Route) throws(AirError) -> Packet {
        let m = MultipartPayload(remaining: remaining, innerType: .ack, inner: code.bytes + extra)
        return try Packet(payloadType: .multipart, payload: m.encoded, route: route)
    }

    /// TRACE as the companion sends it: DIRECT with an empty path (SNR bytes accumulate there), the hop
    /// hashes in the payload.
    public static func trace(_ trace: TracePayload) throws(AirError) -> Packet {
        try Packet(payloadType: .trace, payload: trace.encoded, route: .zeroHop)
    }

    /// CONTROL (unencrypted), zero-hop by default.
    public static func control(_ control: ControlPayload, route: Route = .zeroHop) throws(AirError) -> Packet {
        try Packet(payloadType: .control, payload: control.encoded, route: route)
    }

    /// RAW_CUSTOM: opaque bytes, only accepted DIRECT.
    public static func rawCustom(_ data: [UInt8], path: [UInt8] = [], hashSize: Int = 1) throws(AirError) -> Packet {
        try Packet(payloadType: .rawCustom, payload: data, route: .direct(path: path, hashSize: hashSize))
    }

    // MARK: Relay helpers

    /// TRACE relay step: appends this hop's SNR×4 byte to the path (path_len counts SNR bytes).
    public mutating func appendTraceSNR(_ snrQuarterDb: Int8) throws(AirError) {
        guard payloadType == .trace else { throw .invalidField }
        try appendHop([UInt8(bitPattern: snrQuarterDb)])
    }

    /// The SNR values (dB) collected by a TRACE so far.
    public var traceSNRs: [Double] { path.map { Double(Int8(bitPattern: $0)) / 4 } }
}

// MARK: Typed payload access

extension Packet {
    /// The REQ/RESPONSE/TXT_MSG/PATH wrapper.
    public func peerDatagram() throws(AirError) -> PeerDatagram {
        guard payloadType.isPeerDatagram else { throw .invalidField }
        return try PeerDatagram(payload: payload)
    }
    public func groupDatagram() throws(AirError) -> GroupDatagram {
        guard payloadType == .grpTxt || payloadType == .grpData else { throw .invalidField }
        return try GroupDatagram(payload: payload)
    }
    public func anonRequest() throws(AirError) -> AnonRequest {
        guard payloadType == .anonReq else { throw .invalidField }
        return try AnonRequest(payload: payload)
    }
    public func ack() throws(AirError) -> AckPayload {
        guard payloadType == .ack else { throw .invalidField }
        return try AckPayload(payload: payload)
    }
    public func advert() throws(AirError) -> Advert {
        guard payloadType == .advert else { throw .invalidField }
        return try Advert(payload: payload)
    }
    public func trace() throws(AirError) -> TracePayload {
        guard payloadType == .trace else { throw .invalidField }
        return try TracePayload(payload: payload)
    }
    public func multipart() throws(AirError) -> MultipartPayload {
        guard payloadType == .multipart else { throw .invalidField }
        return try MultipartPayload(payload: payload)
    }
    public func control() throws(AirError) -> ControlPayload {
        guard payloadType == .control else { throw .invalidField }
        return try ControlPayload(payload: payload)
    }
    /// Whether the route type is a flood (FLOOD or TRANSPORT_FLOOD).
    public var isFlood: Bool { routeType.isFlood }
    /// Hex of the raw bytes (capture lines).
    public var hex: String { AirHex.encode(bytes) }
}

/// The given secret, or the ECDH between `sender` and `recipient`.
private func resolve(_ secret: SharedSecret?, _ sender: LocalIdentity, _ recipient: PublicKey) throws(AirError) -> SharedSecret {
    if let s = secret { return s }
    return try sender.sharedSecret(with: recipient)
}
