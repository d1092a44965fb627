import MeshAir
import MeshCompanion

/// A channel slot.
public struct ChannelSlot: Equatable {
    public var name: String
    public var secret: [UInt8] // 16 bytes
    public static let empty = ChannelSlot(name: "", secret: [UInt8](repeating: 0, count: 16))
    var channel: ChannelSecret { (try? ChannelSecret(secret)) ?? ChannelSecret.publicChannel }
}

/// A simulated companion radio: the device side of the companion protocol, answering frames the way
/// `examples/companion_radio` does, on top of a simulated mesh node.
///
/// Frames come in through `receive(frame:)`; everything the radio writes to the app goes to
/// `onFrame` (responses and pushes, unframed).
public final class CompanionNode: MeshNode {
    public struct Config {
        public var maxContacts = 100
        public var offlineQueueSize = 16
        public var maxChannels = 40
        /// The companion protocol version it speaks (DEVICE_INFO): 13 as firmware v1.17.1, or 14 as
        /// the firmware's dev line (RUN_CLI_COMMAND, text type 3, contact flag 0x10, SEND_RAW_DATA
        /// with an encoded path length).
        public var protocolVersion: UInt8 = CompanionLimits.protocolVersion
        public init() {}
    }

    public let config: Config
    /// Everything the radio writes to the app.
    public var onFrame: ((EncodedFrame) -> Void)?
    /// Commands waiting for a shared secret from a remote identity, in order.
    var heldFrames: [[UInt8]] = []
    static let maxHeldFrames = 8
    /// A command's replies while it runs, with a remote identity (dropped if it is held).
    var collected: [EncodedFrame]? = nil
    /// An app is attached (pushes and LOG_RX_DATA are written only then).
    public var connected = false
    /// The model DEVICE_INFO and `board` name.
    public var board = CompanionNode.model

    /// Preferences (persisted on a real radio).
    public var preferences = CompanionPreferences()
    /// The simulated battery and sensors telemetry and status report.
    public var sensors = Sensors()
    /// Where a real host's measurements come from, read when a status or telemetry is answered
    /// (`pocketmesh node`); when set, `sensors` is not used.
    public var sensorSource: (() -> Sensors)?
    /// What status and telemetry report now.
    var readings: Sensors { sensorSource?() ?? sensors }
    /// Channel access settings of the protocol 14 CLI (`cad`, `radio.rxgain`, `rssi.lbt`, ...).
    var radioPrefs = RadioCLIPrefs()
    /// Whether to listen (CAD) before each transmission (`set cad on`); a real radio's driver asks.
    public var channelActivityDetection: Bool { radioPrefs.cad }
    /// The SX126x boosted receive gain (`set radio.rxgain`).
    public var rxBoostedGain: Bool { radioPrefs.rxBoostedGain }
    /// Radio settings the CLI's `set radio` saved for the next boot.
    public var savedRadio: RadioParams?
    /// Whether it speaks companion protocol 14 (the firmware's dev line).
    public var speaksCLIProtocol: Bool { config.protocolVersion >= CompanionLimits.protocolVersionCLI }
    var customVars: [(String, String)] = [("gps", "0")]
    var defaultScopeName: String? = nil
    var defaultScopeKey: [UInt8] = []
    var sessionScope: RegionKey?? = nil // nil: default; .some(nil): forced unscoped

    // State.
    public internal(set) var contacts: [Contact] = []
    var transients: [Contact] = []
    public internal(set) var channels: [ChannelSlot]
    public internal(set) var queue: OfflineQueue
    public internal(set) var appTargetVersion: UInt8 = 0
    struct ExpectedAck { var code: UInt32; var sentAt: UInt64; var contact: PublicKey? = nil }
    var expectedAcks: [ExpectedAck] = []
    var nextAckSlot = 0
    enum RequestKind { case login, status, telemetry, binary, anon, pathDiscovery }
    struct Pending { var kind: RequestKind; var key: PublicKey; var tag: UInt32 }
    var pending: Pending?
    var iterating = false
    var iterationToken: UInt64 = 0
    var signBuffer: [UInt8]? = nil
    var lastUniqueTime: UInt32 = 0
    struct AdvertPathEntry { var key: PublicKey; var receivedAt: UInt32; var pathLength: UInt8; var path: [UInt8] }
    var advertPaths: [AdvertPathEntry] = []
    var advertPackets: [PublicKey: [UInt8]] = [:]

    public static let maxSignLength = 8192

    public init(mesh: Air, name: String, identity: LocalIdentity, config: Config = Config()) {
        self.config = config
        self.channels = [ChannelSlot](repeating: .empty, count: config.maxChannels)
        self.queue = OfflineQueue(capacity: config.offlineQueueSize)
        super.init(mesh: mesh, name: truncatedName(name), role: .companion, poolSize: 16, identity: identity)
        channels[0] = ChannelSlot(name: "Public", secret: ChannelSecret.publicChannel.key)
        floodDelayFactor = 0.5
        directDelayFactor = 0.2
    }

    // MARK: output

    func emit(_ f: EncodedFrame) { if collected != nil { collected!.append(f) } else { onFrame?(f) } }
    func push(_ f: EncodedFrame) { if connected { onFrame?(f) } }

    /// Unique, increasing epoch seconds (`getCurrentTimeUnique`).
    func uniqueTime() -> UInt32 {
        var t = epochNow
        if t <= lastUniqueTime { t = lastUniqueTime + 1 }
        lastUniqueTime = t
        return t
    }

    // MARK: contacts

    public func contact(key: PublicKey) -> Contact? { contacts.first { $0.publicKey == key } }

    func contactIndex(prefix: [UInt8]) -> Int? {
        contacts.firstIndex { c in c.publicKey.withUnsafeBytes { k in prefix.indices.allSatisfy { k[$0] == prefix[$0] } } }
    }

    func anyContact(key: PublicKey) -> Contact? { contact(key: key) ?? transients.first { $0.publicKey == key } }

    override public func candidatePeers(srcHash: UInt8) -> [PublicKey] {
        var out: [PublicKey] = []
        for c in contacts where c.publicKey[0] == srcHash { if let k = Optional(c.publicKey) { out.append(k) } }
        for c in transients where c.publicKey[0] == srcHash { if let k = Optional(c.publicKey) { out.append(k) } }
        return out
    }

    override public func candidateChannels(hash: UInt8) -> [ChannelSecret] {
        var out: [ChannelSecret] = []
        for s in channels where !s.name.isEmpty {
            let ch = s.channel
            if ch.hash == hash && !out.contains(ch) { out.append(ch) }
        }
        return out
    }

    func updateContact(_ key: PublicKey, _ body: (inout Contact) -> Void) {
        if let i = contacts.firstIndex(where: { $0.publicKey == key }) { body(&contacts[i]) }
        else if let i = transients.firstIndex(where: { $0.publicKey == key }) { body(&transients[i]) }
    }

    /// Adds or replaces a contact as `ADD_UPDATE_CONTACT` does. Returns false if the table is full.
    @discardableResult
    public func addOrUpdate(_ c: Contact) -> Bool {
        if let i = contacts.firstIndex(where: { $0.publicKey == c.publicKey }) { contacts[i] = c; return true }
        guard contacts.count < config.maxContacts else { return false }
        transients.removeAll { $0.publicKey == c.publicKey }
        contacts.append(c)
        return true
    }

    // MARK: mesh hooks

    override public func allowForward(_ packet: Packet) -> Bool { clientRepeat }

    override public func onRawReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        guard connected, bytes.count + 3 <= CompanionLimits.maxFrameSize else { return }
        if let f = try? PushFrame.logRxData(snrQuarterDb: snrQ(snr), rssi: Int8(clamping: rssi), packet: bytes) { push(f) }
    }

    func snrQ(_ snr: Double) -> Int8 { Int8(clamping: Int((snr * 4).rounded())) }

    override public func onAdvert(_ advert: Advert, data: AdvertData, arrival: Arrival) {
        guard !data.nameBytes.isEmpty else { return } // BaseChatMesh drops adverts with no name
        let key = advert.publicKey
        let now = epochNow
        let type = ContactType(rawValue: data.type.rawValue)
        let name = String(decoding: utf8Cut(data.nameBytes, max: 31), as: UTF8.self)
        // Advert path cache (16 entries).
        let pl = arrival.packet.pathLength
        advertPaths.removeAll { $0.key == key }
        advertPaths.append(AdvertPathEntry(key: key, receivedAt: now, pathLength: arrival.isFlood ? pl.encoded : 0, path: arrival.isFlood ? arrival.packet.path : []))
        if advertPaths.count > 16 { advertPaths.removeFirst() }
        var rawAdvert = [UInt8]()
        if let p = try? Packet(routeType: .flood, payloadType: .advert, payload: advert.encoded) { rawAdvert = p.bytes }

        if let i = contacts.firstIndex(where: { $0.publicKey == key }) {
            if advert.timestamp <= contacts[i].lastAdvertTimestamp { return } // replay
            contacts[i].name = name
            contacts[i].type = type
            contacts[i].lastAdvertTimestamp = advert.timestamp
            if let la = data.latitudeE6, let lo = data.longitudeE6 { contacts[i].latitude = la; contacts[i].longitude = lo }
            contacts[i].lastModified = now
            advertPackets[key] = rawAdvert
            push(PushFrame.advert(key))
            return
        }
        transients.removeAll { $0.publicKey == key }
        var c = Contact(publicKey: key, type: type, flags: 0, name: name, lastAdvertTimestamp: advert.timestamp,
                        latitude: data.latitudeE6 ?? 0, longitude: data.longitudeE6 ?? 0, lastModified: now)
        c.resetPath()
        var add: Bool
        if manualAddContacts & 1 == 0 { add = true } else {
            switch data.type.rawValue {
            case 1: add = autoAddFlags & 0x02 != 0
            case 2: add = autoAddFlags & 0x04 != 0
            case 3: add = autoAddFlags & 0x08 != 0
            case 4: add = autoAddFlags & 0x10 != 0
            default: add = false
            }
        }
        let hops = arrival.isFlood ? pl.hopCount : 0
        if add && autoAddMaxHops != 0 && hops >= Int(autoAddMaxHops) { add = false }
        if add && contacts.count >= config.maxContacts {
            if autoAddFlags & 0x01 != 0, let oldest = contacts.indices.filter({ contacts[$0].flags & 1 == 0 })
                .min(by: { contacts[$0].lastModified < contacts[$1].lastModified }) {
                let gone = contacts.remove(at: oldest)
                advertPackets[gone.publicKey] = nil
                push(PushFrame.contactDeleted(gone.publicKey))
            } else {
                push(PushFrame.contactsFull())
                add = false
            }
        }
        if add {
            contacts.append(c)
            advertPackets[key] = rawAdvert
            push(PushFrame.advert(key))
        } else if let f = try? PushFrame.newAdvert(c) {
            push(f)
        }
    }

    override public func onPeerData(_ type: PayloadType, from: PublicKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        let key = from
        guard let sender = anyContact(key: key) else { return }
        switch type {
        case .txtMsg:
            guard pt.count >= 5 else { return }
            let ts = get32(pt, 0)
            let flags = pt[4]
            let txtType = flags >> 2
            var attempt = flags & 3
            var body = Array(pt[5...])
            var author: [UInt8]? = nil
            if txtType == TextType.signedPlain.rawValue {
                guard body.count >= 4 else { return }
                author = Array(body[0 ..< 4]); body = Array(body[4...])
            }
            let text = Array(body.prefix { $0 != 0 })
            if body.count > text.count + 1, attempt == 3, body[text.count + 1] > 3 { attempt = body[text.count + 1] }
            if txtType == TextType.plain.rawValue || txtType == TextType.signedPlain.rawValue {
                let ack: [UInt8]
                if txtType == TextType.plain.rawValue {
                    ack = TextAck.code(timestamp: ts, txtType: TextType.plain.rawValue, attempt: flags & 3, text: text, sender: from).bytes
                        + [attempt > 3 ? attempt : 0, UInt8(truncatingIfNeeded: rng.next())]
                } else {
                    ack = TextAck.signedCode(timestamp: ts, attempt: flags & 3, authorPrefix: author ?? [], text: text, receiver: publicKey).bytes
                }
                sendAck(ack, to: from, secret: secret, arrival: arrival, contact: sender)
            } else if txtType == TextType.cliCommand.rawValue && speaksCLIProtocol {
                // Protocol 14: a CLI command from a contact with the remote CLI permission runs
                // here and its reply (if any) goes back as CLI data; from anyone else it is queued
                // for the app. No ACK and no path return either way.
                if sender.flags & ContactFlags.remoteCLI != 0 {
                    let reply = cliCommand(String(decoding: text, as: UTF8.self), senderTimestamp: ts)
                    sendCLIReply(reply, to: sender, secret: secret)
                    return
                }
            } else if txtType != TextType.cliData.rawValue {
                return
            }
            let pathLen = PathLength(rawValue: arrival.isFlood ? arrival.packet.pathLength.encoded : 0xFF)
            let authorPrefix = author.flatMap { KeyPrefix($0) }
            if let f = try? ResponseFrame.contactMessage(v3: appTargetVersion >= 3, snrQuarterDb: snrQ(arrival.snr), senderPrefix: key.prefix(6),
                                                         pathLength: pathLen, textType: TextType(rawValue: txtType),
                                                         senderTimestamp: ts, authorPrefix: authorPrefix, text: text) {
                queueMessage(f)
            }
        case .response:
            handleResponse(from: key, body: pt, arrival: arrival, viaPath: nil)
            if arrival.isFlood { retryReturnPath(to: key, arrival: arrival) }
        case .req:
            handleRequest(from: from, secret: secret, plaintext: pt, arrival: arrival, contact: sender)
        default:
            break
        }
    }

    /// Acknowledges a received text: flood arrivals get a PATH carrying the ACK, direct ones an ACK
    /// along our stored path to the sender (or flood), optionally preceded by multi-ACKs.
    func sendAck(_ ack: [UInt8], to peer: PublicKey, secret: SharedSecret, arrival: Arrival, contact: Contact) {
        if arrival.isFlood {
            reply(to: peer, secret: secret, arrival: arrival, type: .ack, body: ack, outPath: nil, delay: 200)
            return
        }
        let out = contact.outPathLength.isUnknown ? nil : (path: contact.outPath, hashSize: contact.outPathLength.hashSize)
        var delay: UInt64 = 200
        if multiAcks > 0 {
            let mp = [UInt8(1) << 4 | PayloadType.ack.rawValue] + ack.prefix(4)
            if let o = out { sendDirect(.multipart, payload: mp, path: o.path, hashSize: o.hashSize, delay: delay) } else { sendFlood(.multipart, payload: mp, delay: delay) }
            delay += 300
        }
        reply(to: peer, secret: secret, arrival: arrival, type: .ack, body: ack, outPath: out, delay: delay)
    }

    /// A CLI reply: a text message of type 1 (at most 160 bytes), direct along the stored path or
    /// flooded, after the firmware's CLI reply delay; nothing for an empty reply.
    func sendCLIReply(_ reply: String, to contact: Contact, secret: SharedSecret) {
        let text = utf8Cut(Array(reply.utf8), max: CompanionLimits.maxTextLength)
        guard powered, !text.isEmpty else { return }
        var pt: [UInt8] = []
        put32(uniqueTime(), &pt)
        pt.append(TextType.cliData.rawValue << 2)
        pt += text
        let payload = datagram(to: contact.publicKey, secret: secret, plaintext: pt)
        if contact.outPathLength.isUnknown {
            sendFlood(.txtMsg, payload: payload, delay: Self.cliReplyDelay, scope: effectiveScope())
        } else {
            sendDirect(.txtMsg, payload: payload, path: contact.outPath, hashSize: contact.outPathLength.hashSize, delay: Self.cliReplyDelay)
        }
    }

    /// Milliseconds between a CLI command and its reply (`CLI_REPLY_DELAY_MILLIS`).
    static let cliReplyDelay: UInt64 = 600

    func queueMessage(_ f: EncodedFrame) {
        queue.append(f.bytes)
        push(PushFrame.messageWaiting())
    }

    override public func onPeerPath(from: PublicKey, secret: SharedSecret, path: [UInt8], pathLength: PathLength,
                                    extraType: UInt8, extra: [UInt8], arrival: Arrival) -> Bool {
        let key = from
        guard anyContact(key: key) != nil else { return false }
        // A path discovery answer is reported, not stored.
        if extraType == PayloadType.response.rawValue, extra.count >= 4, let p = pending, p.kind == .pathDiscovery,
           p.key == key, get32(extra, 0) == p.tag {
            pending = nil
            if let f = try? PushFrame.pathDiscoveryResponse(key.prefix(6), outPathLength: PathLength(rawValue: pathLength.encoded), outPath: path,
                                                            inPathLength: PathLength(rawValue: arrival.packet.pathLength.encoded), inPath: arrival.packet.path) {
                push(f)
            }
            return false
        }
        updateContact(key) { c in
            try? c.setOutPath(PathLength(rawValue: pathLength.encoded), path)
            c.lastModified = epochNow
        }
        push(PushFrame.pathUpdated(key))
        if extraType == PayloadType.ack.rawValue, extra.count >= 4 {
            _ = confirmAck(get32(extra, 0))
        } else if extraType == PayloadType.response.rawValue {
            handleResponse(from: key, body: extra, arrival: arrival, viaPath: path)
        }
        return true
    }

    override public func onAck(_ ack: [UInt8], arrival: Arrival) -> Bool {
        let code = get32(ack, 0)
        let key = expectedAcks.first { $0.code == code }?.contact
        guard confirmAck(code) else { return false }
        if arrival.isFlood, let k = key { retryReturnPath(to: k, arrival: arrival) }
        return true
    }

    /// `handleReturnPathRetry`: the contact still floods to us although we have a path to it, so it
    /// may have missed our return path; send it again, direct, 3 s later.
    func retryReturnPath(to key: PublicKey, arrival: Arrival) {
        guard let c = contact(key: key), !c.outPathLength.isUnknown, let ak = Optional(key), let s = secret(for: ak) else { return }
        let p = pathReturnPayload(to: ak, secret: s, path: arrival.packet.path, pathLength: arrival.packet.pathLength, extraType: nil, extra: [])
        sendDirect(.path, payload: p, path: c.outPath, hashSize: c.outPathLength.hashSize, delay: 3000)
    }

    func confirmAck(_ code: UInt32) -> Bool {
        guard let i = expectedAcks.firstIndex(where: { $0.code == code }) else { return false }
        let e = expectedAcks.remove(at: i)
        push(PushFrame.sendConfirmed(SendConfirmed(ack: code, roundTripMs: UInt32(truncatingIfNeeded: now &- e.sentAt))))
        return true
    }

    func expectAck(_ code: UInt32, from contact: PublicKey? = nil) {
        if expectedAcks.count >= 8 { expectedAcks.removeFirst() } // 8-entry circular table
        expectedAcks.append(ExpectedAck(code: code, sentAt: now, contact: contact))
    }

    /// Response bodies: `tag u32` echo + data (login replies carry the server clock instead).
    func handleResponse(from key: PublicKey, body: [UInt8], arrival: Arrival, viaPath: [UInt8]?) {
        guard let p = pending, body.count >= 4 else { return }
        let tag = get32(body, 0)
        let prefix = key.prefix(6)
        switch p.kind {
        case .login:
            guard p.key.prefix(4) == key.prefix(4) else { return }
            pending = nil
            if body.count >= 5 && body[4] == 0 {
                let ls = LoginSuccess(permissions: body.count > 6 ? body[6] : 0, prefix: prefix, serverTimestamp: tag,
                                      aclPermissions: body.count > 7 ? body[7] : 0, firmwareLevel: body.count > 12 ? body[12] : 0)
                if let f = try? PushFrame.loginSuccess(ls) { push(f) }
            } else if let f = try? PushFrame.loginFail(prefix) { push(f) }
        case .status:
            guard p.key.prefix(4) == key.prefix(4) else { return }
            pending = nil
            // Decrypted bodies carry zero padding: cut to the stats size of the server type.
            let size = anyContact(key: key)?.type.rawValue == 3 ? 52 : 56
            let stats = Array(body[4...].prefix(size))
            if let f = try? PushFrame.statusResponse(prefix, statsBytes: stats) { push(f) }
        case .telemetry:
            guard tag == p.tag else { return }
            pending = nil
            if let f = try? PushFrame.telemetryResponse(prefix, lpp: trimLPP(Array(body[4...]))) { push(f) }
        case .binary, .anon:
            guard tag == p.tag else { return }
            pending = nil
            if let f = try? PushFrame.binaryResponse(tag: tag, data: body[4...]) { push(f) }
        case .pathDiscovery:
            break
        }
    }

    /// Decrypted data carries zero padding; Cayenne LPP never ends in a 0 channel byte pair, so trailing
    /// zeros are padding.
    func trimLPP(_ b: [UInt8]) -> [UInt8] {
        var n = b.count
        while n > 0 && b[n - 1] == 0 { n -= 1 }
        return Array(b[0 ..< n])
    }

    /// Requests to a companion: only telemetry (and path discovery, which is a telemetry request).
    func handleRequest(from: PublicKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival, contact: Contact) {
        guard pt.count >= 5, pt[4] == 0x03 else { return }
        let tag = get32(pt, 0)
        // Each telemetry mode (base, location, environment: 2 bits each) allows all (2), or the
        // contacts whose flag bit (1, 2, 3) is set (1); the request's first byte masks bits off.
        let flags = contact.flags >> 1
        var permissions: UInt8 = 0
        for bit in 0 ..< 3 {
            let mode = telemetryModes >> (2 * bit) & 3
            if mode == 2 || (mode == 1 && flags & (1 << bit) != 0) { permissions |= 1 << bit }
        }
        let mask: UInt8 = pt.count > 5 ? ~pt[5] : 0xFF
        let allowBase = permissions & 1 != 0
        var body: [UInt8] = []
        put32(tag, &body)
        if allowBase && mask & 1 != 0 { body += readings.lpp(permissions: permissions & mask) }
        if !arrival.isFlood && !allowBase && mask & 1 != 0 { return }
        let out = contact.outPathLength.isUnknown ? nil : (path: contact.outPath, hashSize: contact.outPathLength.hashSize)
        reply(to: from, secret: secret, arrival: arrival, type: .response, body: body, outPath: out, delay: 300)
    }

    override public func onGroup(_ type: PayloadType, channel: ChannelSecret, plaintext pt: [UInt8], arrival: Arrival) {
        guard let idx = channels.firstIndex(where: { !$0.name.isEmpty && $0.secret == Array(channel.key.prefix(16)) }) else { return }
        let pathLen = PathLength(rawValue: arrival.isFlood ? arrival.packet.pathLength.encoded : 0xFF)
        if type == .grpTxt {
            guard pt.count >= 5, pt[4] >> 2 == 0 else { return }
            let text = Array(pt[5...].prefix { $0 != 0 })
            queueMessage(ResponseFrame.channelMessage(v3: appTargetVersion >= 3, snrQuarterDb: snrQ(arrival.snr), channelIndex: UInt8(idx),
                                                      pathLength: pathLen, timestamp: get32(pt, 0), text: text))
        } else {
            guard pt.count >= 3 else { return }
            let dataType = UInt16(pt[0]) | UInt16(pt[1]) << 8
            let n = min(Int(pt[2]), pt.count - 3)
            if let f = try? ResponseFrame.channelData(snrQuarterDb: snrQ(arrival.snr), channelIndex: UInt8(idx), pathLength: pathLen,
                                                      dataType: dataType, data: pt[3 ..< 3 + n]) { queueMessage(f) }
        }
    }

    override public func onTrace(tag: UInt32, auth: UInt32, flags: UInt8, hashes: [UInt8], snrs: [UInt8], finalSNR: Double) {
        let n = hashes.count >> Int(flags & 3)
        if let f = try? PushFrame.traceData(tag: tag, authCode: auth, flags: flags, pathHashes: hashes,
                                            pathSNRs: snrs.prefix(n) + [UInt8](repeating: 0, count: max(0, n - snrs.count)),
                                            finalSNRQuarterDb: snrQ(finalSNR)) { push(f) }
    }

    override public func onControl(_ payload: [UInt8], arrival: Arrival) {
        if let f = try? PushFrame.controlData(snrQuarterDb: snrQ(arrival.snr), rssi: Int8(clamping: arrival.rssi),
                                              pathLength: PathLength(rawValue: arrival.packet.pathLength.encoded), payload: payload) { push(f) }
    }

    override public func onRawCustom(_ payload: [UInt8], arrival: Arrival) {
        if let f = try? PushFrame.rawData(snrQuarterDb: snrQ(arrival.snr), rssi: Int8(clamping: arrival.rssi), payload: payload) { push(f) }
    }

    // MARK: adverts

    func selfAppData() -> [UInt8] {
        let loc = advertLocationPolicy == 1
        var d = AdvertData(type: .chat, name: name)
        if loc { d.latitudeE6 = advertLatitude; d.longitudeE6 = advertLongitude }
        return d.encoded
    }

    /// Sends our advert: zero-hop, or flood.
    @discardableResult
    public func advertise(flood: Bool) -> Bool {
        let scope = effectiveScope()
        return withAdvertPayload(appdata: selfAppData()) { [unowned self] payload in
            if flood { self.sendFlood(.advert, payload: payload, scope: scope) } else { self.sendZeroHop(.advert, payload: payload) }
        }
    }

    /// Replies (ACKs, PATH returns, responses) flood in the send scope too, as the firmware's do.
    override public var replyScope: RegionKey? { effectiveScope() ?? nil }

    func effectiveScope() -> RegionKey?? {
        if let s = sessionScope { return .some(s) }
        if !defaultScopeKey.isEmpty, let k = try? RegionKey(defaultScopeKey) { return .some(k) }
        return .some(nil)
    }

    // MARK: boot

    /// Held commands run again once no shared secret is being asked for.
    override public func secretArrived(_ peer: PublicKey, _ known: Bool) {
        super.secretArrived(peer, known)
        guard secretsAsked.isEmpty, !heldFrames.isEmpty else { return }
        var frames = heldFrames[...]
        heldFrames.removeAll()
        while let f = frames.popFirst(), powered {
            handleOrHold(f)
            if !heldFrames.isEmpty { heldFrames += frames; return }
        }
    }

    override public func boot() {
        super.boot()
        heldFrames.removeAll()
        if let r = savedRadio { radio.params = r; savedRadio = nil }
        queue.removeAll()
        appTargetVersion = 0
        expectedAcks.removeAll()
        pending = nil
        iterating = false
        iterationToken &+= 1
        signBuffer = nil
        transients.removeAll()
        sessionScope = nil
    }

    /// Factory reset: a new identity, no contacts, default channels and settings.
    func factoryReset() {
        // A modem's key stays the modem's.
        if remote == nil { identity = LocalIdentity.generate(using: &rng) }
        forgetSecrets()
        contacts.removeAll(); advertPackets.removeAll(); advertPaths.removeAll()
        channels = [ChannelSlot](repeating: .empty, count: config.maxChannels)
        channels[0] = ChannelSlot(name: "Public", secret: ChannelSecret.publicChannel.key)
        advertLatitude = 0; advertLongitude = 0; manualAddContacts = 0; telemetryModes = 0; advertLocationPolicy = 0
        multiAcks = 0; autoAddFlags = 0; autoAddMaxHops = 0; blePin = 0; clientRepeat = false; tzOffset = 0; savedRadio = nil; radioPrefs = RadioCLIPrefs()
        defaultScopeName = nil; defaultScopeKey = []
        name = String(publicKey.hex.prefix(8)).uppercased()
        radio.params = RadioParams()
        pathHashSize = 1
    }
}
