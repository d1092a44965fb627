import MeshCompanion
import MeshAir

/// Little-endian helpers for plaintext layouts that are the simulator's own business (stats
/// structs, request bodies); on-air packet layouts come from MeshAir.
@inline(__always) func put32(_ v: UInt32, _ out: inout [UInt8]) {
    out.append(UInt8(truncatingIfNeeded: v)); out.append(UInt8(truncatingIfNeeded: v >> 8))
    out.append(UInt8(truncatingIfNeeded: v >> 16)); out.append(UInt8(truncatingIfNeeded: v >> 24))
}
@inline(__always) func put16(_ v: UInt16, _ out: inout [UInt8]) {
    out.append(UInt8(truncatingIfNeeded: v)); out.append(UInt8(truncatingIfNeeded: v >> 8))
}
@inline(__always) func get32<C: Collection<UInt8>>(_ b: C, _ at: Int) -> UInt32 where C.Index == Int {
    let s = b.startIndex + at
    return UInt32(b[s]) | UInt32(b[s + 1]) << 8 | UInt32(b[s + 2]) << 16 | UInt32(b[s + 3]) << 24
}

/// A received datagram's routing facts, handed to role code.
public struct Arrival {
    /// The packet as received (path = flood relays so far, or remaining direct hops).
    public var packet: Packet
    public var snr: Double
    public var rssi: Int
    public var isFlood: Bool { packet.routeType.isFlood }
}

/// A node identity whose private key is elsewhere (the identity of a radio running MeshCore's KISS
/// modem firmware): signatures and shared secrets are asked for and come back later, on the node's
/// loop, through `done` (nil: the holder refused or went away).
public protocol RemoteIdentity: AnyObject {
    var publicKey: PublicKey { get }
    func sign(_ message: [UInt8], _ done: @escaping ([UInt8]?) -> Void)
    func keyExchange(with peer: PublicKey, _ done: @escaping (SharedSecret?) -> Void)
}

/// The mesh layer of a node (`Mesh` / `Dispatcher` in the firmware): receive processing, dedup,
/// flood and direct forwarding, datagram crypto, path return. Roles override the `on…` hooks.
open class MeshNode: Node {
    /// The node's key, when this host holds it; nil when the key is a modem's (`remote`).
    public internal(set) var identity: LocalIdentity? {
        didSet { if let identity { publicKey = identity.publicKey } }
    }
    /// Where signatures and shared secrets come from when the host holds no key.
    public private(set) var remote: RemoteIdentity?
    public private(set) var publicKey: PublicKey
    var seen = SeenTable()
    private var secrets: [PublicKey: SharedSecret] = [:]
    /// Peers whose shared secret the remote identity has not answered yet.
    private(set) var secretsAsked: Set<PublicKey> = []
    /// Peers the remote identity refused a shared secret with (not asked again).
    private var secretsRefused: Set<PublicKey> = []
    /// Datagrams that wait for a shared secret being asked for (the oldest dropped past `maxHeld`).
    private var held: [(packet: Packet, snr: Double, rssi: Int)] = []
    static let maxHeld = 8
    /// Set when `secret(for:)` found none yet because one is being asked for.
    var secretPending = false

    /// Path hash size (1…3) this node uses for floods it originates.
    public var pathHashSize = 1
    /// Region key for TRANSPORT_FLOOD, if this node scopes its floods.
    public var floodScope: RegionKey?
    /// Flood / direct relay delay factors (`tx_delay_factor`, `direct_tx_delay_factor`).
    public var floodDelayFactor = 0.5
    public var directDelayFactor = 0.3

    init(mesh: Air, name: String, role: NodeRole, poolSize: Int, identity: LocalIdentity) {
        self.identity = identity
        self.publicKey = identity.publicKey
        super.init(mesh: mesh, name: name, role: role, poolSize: poolSize)
    }

    /// Takes `remote` as the node's identity: the host's key is dropped, and every signature and
    /// shared secret is asked of `remote` from now on. Called before the node first advertises.
    public func adopt(_ remote: RemoteIdentity) {
        self.remote = remote
        identity = nil
        publicKey = remote.publicKey
        forgetSecrets()
    }

    // MARK: secrets

    /// The shared secret with `peer`, computed once and kept. With a remote identity, a secret
    /// not known yet is asked for and nil comes back (`secretPending` set); what needed it runs
    /// again when the answer comes (`secretArrived`).
    func secret(for peer: PublicKey) -> SharedSecret? {
        if let s = secrets[peer] { return s }
        if let identity {
            guard let s = try? identity.sharedSecret(with: peer) else { return nil }
            secrets[peer] = s
            return s
        }
        guard let remote, !secretsRefused.contains(peer) else { return nil }
        if secretsAsked.insert(peer).inserted {
            remote.keyExchange(with: peer) { [weak self] s in
                guard let self, self.secretsAsked.remove(peer) != nil else { return }
                if let s { self.secrets[peer] = s } else { self.secretsRefused.insert(peer) }
                self.secretArrived(peer, s != nil)
            }
        }
        if let s = secrets[peer] { return s }  // answered at once
        if secretsAsked.contains(peer) { secretPending = true }
        return nil
    }

    func forgetSecrets() { secrets.removeAll(); secretsAsked.removeAll(); secretsRefused.removeAll(); held.removeAll() }

    /// A shared secret came (or was refused): held datagrams are received again once nothing they
    /// may need is still being asked for.
    open func secretArrived(_ peer: PublicKey, _ known: Bool) {
        guard secretsAsked.isEmpty, !held.isEmpty else { return }
        let again = held
        held.removeAll()
        for h in again where powered { receiveHeld(h.packet, snr: h.snr, rssi: h.rssi) }
    }

    private func hold(_ packet: Packet, snr: Double, rssi: Int) {
        if held.count >= Self.maxHeld { held.removeFirst() }
        held.append((packet, snr, rssi))
    }

    // MARK: hooks for roles

    /// Whether this node relays the packet (`allowPacketForward`). Default: no (a stock companion).
    open func allowForward(_ packet: Packet) -> Bool { false }
    /// Public keys whose first byte is `srcHash` and that may talk to us (contacts, ACL clients).
    open func candidatePeers(srcHash: UInt8) -> [PublicKey] { [] }
    /// A decrypted TXT_MSG, REQ or RESPONSE. Return true if handled (the packet is then not relayed).
    open func onPeerData(_ type: PayloadType, from: PublicKey, secret: SharedSecret, plaintext: [UInt8], arrival: Arrival) {}
    /// A decrypted PATH. Returns false if the sender is unknown to the role.
    open func onPeerPath(from: PublicKey, secret: SharedSecret, path: [UInt8], pathLength: PathLength,
                         extraType: UInt8, extra: [UInt8], arrival: Arrival) -> Bool { true }
    /// A decrypted ANON_REQ.
    open func onAnonRequest(from: PublicKey, secret: SharedSecret, plaintext: [UInt8], arrival: Arrival) {}
    /// An ACK code (first 4 bytes). Return true if it was ours (then it is not relayed).
    open func onAck(_ ack: [UInt8], arrival: Arrival) -> Bool { false }
    /// A verified advert.
    open func onAdvert(_ advert: Advert, data: AdvertData, arrival: Arrival) {}
    /// Channels whose hash byte matches.
    open func candidateChannels(hash: UInt8) -> [ChannelSecret] { [] }
    /// A decrypted GRP_TXT / GRP_DATA.
    open func onGroup(_ type: PayloadType, channel: ChannelSecret, plaintext: [UInt8], arrival: Arrival) {}
    /// A completed TRACE heard by this node.
    open func onTrace(tag: UInt32, auth: UInt32, flags: UInt8, hashes: [UInt8], snrs: [UInt8], finalSNR: Double) {}
    /// A zero-hop CONTROL packet with bit 7 of payload[0] set.
    open func onControl(_ payload: [UInt8], arrival: Arrival) {}
    /// A DIRECT RAW_CUSTOM packet.
    open func onRawCustom(_ payload: [UInt8], arrival: Arrival) {}
    /// Every packet received, before it is parsed (companion LOG_RX_DATA), whatever it holds.
    open func onRawReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {}
    /// Every parsed packet, before processing (`onRecvPacket`).
    open func onReceive(_ packet: Packet) {}
    /// The scope of flooded replies (`sendFloodReply`).
    open var replyScope: RegionKey? { floodScope }

    // MARK: receive

    override open func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        radio.nRecv &+= 1
        radio.lastSNR = snr
        radio.lastRSSI = rssi
        // Logged before parsing, as `Dispatcher::checkRecv` calls `logRxRaw`: a companion's app
        // sees what its radio heard even where the firmware then drops it.
        onRawReceived(bytes, snr: snr, rssi: rssi)
        // Parsed from the array's bytes directly (the generic `Packet(bytes:)` is not specialised
        // across modules).
        // A constant (the direct relay below changes a copy), so it is not copied to be passed on.
        guard let packet = bytes.withUnsafeBytes({ try? Packet(parsing: $0) }) else { return }
        if packet.routeType.isFlood { radio.recvFlood &+= 1 } else { radio.recvDirect &+= 1 }
        onReceive(packet)
        // The hash is the same for every receiver of one transmission: the air computes it once.
        // Made where needed (most receptions of a flood are duplicates and need none).
        func arrival() -> Arrival { Arrival(packet: packet, snr: snr, rssi: rssi) }
        let hash = mesh.deliveryHash { packet.hash.value }
        let type = packet.payloadType
        let isDirect = packet.routeType.isDirect
        let hops = packet.pathLength.hopCount

        if isDirect && type == .trace {
            handleTrace(packet, snr: snr); return
        }
        if isDirect && type == .control {
            let p = packet.payload
            if let f = p.first, f & 0x80 != 0 {
                if hops == 0 && !seen.checkAndInsert(hash) { onControl(p, arrival: arrival()) }
                return
            }
        }
        if isDirect && hops > 0 {
            // In transit. Early ACK: anyone on the route may see its own ACK go by.
            if type == .ack { _ = onAck(Array(packet.payload.prefix(4)), arrival: arrival()) }
            if packet.firstHopMatches(key: publicKey) && allowForward(packet) {
                if seen.checkAndInsert(hash) { radio.directDups &+= 1; return }
                var next = packet
                guard (try? next.removeFirstHop()) != nil else { return }
                let t = UInt64(Double(radio.airtime(next.pathLength.byteCount + next.payloadCount + 2)) * directDelayFactor)
                enqueue(next.bytes, priority: 0, delay: rng.between(0, 5 * t), hash: hash)
            }
            return
        }
        if seen.checkAndInsert(hash) {
            if isDirect { radio.directDups &+= 1 } else { radio.floodDups &+= 1 }
            return
        }
        var consumed = false
        let payload = packet.payload
        switch type {
        case .ack:
            if payload.count >= 4 { consumed = onAck(Array(payload.prefix(4)), arrival: arrival()) }
        case .multipart:
            if payload.count >= 5 && payload[0] & 0x0F == PayloadType.ack.rawValue {
                consumed = onAck(Array(payload[1..<5]), arrival: arrival())
            }
        case .txtMsg, .req, .response, .path, .anonReq:
            secretPending = false
            consumed = receiveSecret(type, payload: payload, arrival: arrival())
            if !consumed && secretPending {
                // A secret is on its way from the remote identity: received again when it comes.
                hold(packet, snr: snr, rssi: rssi); return
            }
        case .grpTxt, .grpData:
            if payload.count > 3 {
                for ch in candidateChannels(hash: payload[0]) {
                    if let pt = try? ch.sharedSecret.decrypt(payload[1...]) {
                        onGroup(type, channel: ch, plaintext: pt, arrival: arrival()); break
                    }
                }
            }
        case .advert:
            // Bad signature or unparsable: not processed, never relayed.
            guard let advert = try? Advert(payload: payload), mesh.advertIsValid(advert, hash: hash), let data = try? advert.data() else { return }
            if advert.publicKey != publicKey { onAdvert(advert, data: data, arrival: arrival()) }
        case .rawCustom:
            if isDirect { onRawCustom(payload, arrival: arrival()) }
            return
        case .trace, .control:
            return
        default:
            return // reserved types: dropped, never forwarded
        }
        if consumed || !packet.routeType.isFlood { return }
        relayFlood(packet, hash: hash)
    }

    /// `hash`: the received packet's, if known; a TRACE's (which covers the path length) is not passed on.
    private func relayFlood(_ packet: Packet, hash: UInt64? = nil) {
        var packet = packet
        guard allowForward(packet), (try? packet.appendHop(key: publicKey)) != nil else { return }
        let t = UInt64(Double(radio.airtime(packet.pathLength.byteCount + packet.payloadCount + 2)) * floodDelayFactor)
        // The hash covers neither the route nor the path (except a TRACE's path length), so the
        // relayed packet's is the received one's.
        enqueue(packet.bytes, priority: UInt8(min(255, packet.pathLength.hopCount)), delay: rng.between(0, 5 * t),
                hash: packet.payloadType == .trace ? nil : hash)
    }

    /// A held datagram, now that its secret is known (or refused): the rest of its reception.
    private func receiveHeld(_ packet: Packet, snr: Double, rssi: Int) {
        secretPending = false
        let consumed = receiveSecret(packet.payloadType, payload: packet.payload, arrival: Arrival(packet: packet, snr: snr, rssi: rssi))
        if !consumed && secretPending { hold(packet, snr: snr, rssi: rssi); return }
        if consumed || !packet.routeType.isFlood { return }
        relayFlood(packet)
    }

    /// TXT_MSG, REQ, RESPONSE, PATH and ANON_REQ: whatever needs a shared secret to open.
    private func receiveSecret(_ type: PayloadType, payload: [UInt8], arrival: Arrival) -> Bool {
        guard type == .anonReq else { return receiveDatagram(type, payload: payload, arrival: arrival) }
        // dest_hash, sender pubkey[32], MAC, ciphertext
        guard payload.count > 35 && payload[0] == publicKey.hashByte, let from = PublicKey(payload[1..<33]),
              from != publicKey, let s = secret(for: from), let pt = try? s.decrypt(payload[33...]) else { return false }
        onAnonRequest(from: from, secret: s, plaintext: pt, arrival: arrival)
        return true
    }

    private func receiveDatagram(_ type: PayloadType, payload: [UInt8], arrival: Arrival) -> Bool {
        guard payload.count > 4, payload[0] == publicKey.hashByte else { return false }
        for peer in candidatePeers(srcHash: payload[1]) {
            guard let s = secret(for: peer), let pt = try? s.decrypt(payload[2...]) else { continue }
            if type == .path {
                guard let pl = try? PathLength(encoded: pt[0]), pt.count >= 1 + pl.byteCount + 1 else { return true }
                let path = Array(pt[1 ..< 1 + pl.byteCount])
                let extraType = pt[1 + pl.byteCount] & 0x0F
                let extra = Array(pt[(2 + pl.byteCount)...])
                if onPeerPath(from: peer, secret: s, path: path, pathLength: pl, extraType: extraType, extra: extra, arrival: arrival),
                   arrival.isFlood {
                    // Reciprocal return path, sent DIRECT along the route just learned.
                    let back = pathReturnPayload(to: peer, secret: s, path: arrival.packet.path,
                                                 pathLength: arrival.packet.pathLength, extraType: nil, extra: [])
                    sendDirect(.path, payload: back, path: path, hashSize: pl.hashSize, delay: 500)
                }
            } else {
                onPeerData(type, from: peer, secret: s, plaintext: pt, arrival: arrival)
            }
            return true
        }
        return false
    }

    private func handleTrace(_ packet: Packet, snr: Double) {
        let p = packet.payload
        guard p.count >= 9 else { return }
        let flags = p[8]
        let width = 1 << Int(flags & 3)
        let hashes = Array(p[9...])
        let offset = packet.pathLength.hopCount * width
        if offset >= hashes.count {
            onTrace(tag: get32(p, 0), auth: get32(p, 4), flags: flags, hashes: hashes, snrs: packet.path, finalSNR: snr)
            return
        }
        guard offset + width <= hashes.count, publicKey.matches(hash: hashes[offset ..< offset + width]) else { return }
        guard allowForward(packet), !seen.checkAndInsert(packet.hash.value) else { return }
        var fwd = packet
        let snrByte = UInt8(bitPattern: Int8(clamping: Int((snr * 4).rounded())))
        guard (try? fwd.appendHop([snrByte])) != nil else { return }
        let t = UInt64(Double(radio.airtime(fwd.pathLength.byteCount + fwd.payloadCount + 2)) * directDelayFactor)
        enqueue(fwd.bytes, priority: 5, delay: rng.between(0, 5 * t))
    }

    // MARK: send

    /// Queues a built packet, marking it seen so our own echoes are ignored.
    @discardableResult
    func send(_ packet: Packet, priority: UInt8, delay: UInt64) -> Bool {
        let hash = packet.hash.value
        _ = seen.checkAndInsert(hash)
        return enqueue(packet.bytes, priority: priority, delay: delay, hash: hash)
    }

    /// Floods a payload (`sendFlood`): FLOOD, or TRANSPORT_FLOOD with the scope's code.
    @discardableResult
    public func sendFlood(_ type: PayloadType, payload: [UInt8], delay: UInt64 = 0, scope: RegionKey?? = nil) -> Bool {
        let region = scope ?? floodScope
        let route: RouteType = region == nil ? .flood : .transportFlood
        let codes = region.map { TransportCodes($0.transportCode(payloadType: type, payload: payload)) } ?? .none
        guard let pkt = try? Packet(routeType: route, payloadType: type, transportCodes: codes, hashSize: pathHashSize, payload: payload) else { return false }
        let priority: UInt8 = type == .path ? 2 : type == .advert ? 3 : 1
        return send(pkt, priority: priority, delay: delay)
    }

    /// Sends a payload DIRECT along `path` (relay hashes, first hop first); an empty path is zero-hop.
    @discardableResult
    public func sendDirect(_ type: PayloadType, payload: [UInt8], path: [UInt8], hashSize: Int = 1, delay: UInt64 = 0, priority: UInt8? = nil) -> Bool {
        guard let pkt = try? Packet(routeType: .direct, payloadType: type, hashSize: hashSize, path: path, payload: payload) else { return false }
        return send(pkt, priority: priority ?? (type == .path ? 1 : 0), delay: delay)
    }

    @discardableResult
    public func sendZeroHop(_ type: PayloadType, payload: [UInt8], delay: UInt64 = 0, transportCodes: TransportCodes? = nil) -> Bool {
        let route: RouteType = transportCodes == nil ? .direct : .transportDirect
        guard let pkt = try? Packet(routeType: route, payloadType: type, transportCodes: transportCodes ?? .none, payload: payload) else { return false }
        return send(pkt, priority: 0, delay: delay)
    }

    /// `dest_hash, src_hash, MAC, ciphertext` for TXT_MSG / REQ / RESPONSE / PATH.
    func datagram(to peer: PublicKey, secret: SharedSecret, plaintext: [UInt8]) -> [UInt8] {
        [peer.hashByte, publicKey.hashByte] + secret.encrypt(plaintext)
    }

    /// A PATH payload: `path_len, path, extra_type, extra` (or `0xFF` + 4 random bytes without extra).
    func pathReturnPayload(to peer: PublicKey, secret: SharedSecret, path: [UInt8], pathLength: PathLength,
                           extraType: PayloadType?, extra: [UInt8]) -> [UInt8] {
        var pt: [UInt8] = [pathLength.encoded] + path
        if let t = extraType { pt.append(t.rawValue); pt += extra } else { pt.append(0xFF); pt += rng.bytes(4) }
        return datagram(to: peer, secret: secret, plaintext: pt)
    }

    /// Replies to a datagram that arrived at us: a flood arrival gets a flood PATH carrying the reply
    /// (so the sender learns the route); otherwise the reply goes direct along `outPath`, or floods.
    func reply(to peer: PublicKey, secret: SharedSecret, arrival: Arrival, type: PayloadType, body: [UInt8],
               outPath: (path: [UInt8], hashSize: Int)?, delay: UInt64) {
        if arrival.isFlood {
            let p = pathReturnPayload(to: peer, secret: secret, path: arrival.packet.path, pathLength: arrival.packet.pathLength,
                                      extraType: type, extra: body)
            sendFlood(.path, payload: p, delay: delay, scope: .some(replyScope))
        } else {
            let payload = type == .ack ? body : datagram(to: peer, secret: secret, plaintext: body)
            if let op = outPath { sendDirect(type, payload: payload, path: op.path, hashSize: op.hashSize, delay: delay) } else {
                sendFlood(type, payload: payload, delay: delay, scope: .some(replyScope))
            }
        }
    }

    /// A signed advert payload with the node's appdata, to `send`: at once with the host's key;
    /// with a remote identity when its signature comes (not at all if it is refused). False if
    /// the appdata is too long.
    @discardableResult
    public func withAdvertPayload(appdata: [UInt8], _ send: @escaping ([UInt8]) -> Void) -> Bool {
        guard appdata.count <= AirLimits.maxAdvertDataSize else { return false }
        let ts = epochNow
        if let identity {
            guard let payload = (try? Advert(identity: identity, timestamp: ts, appData: appdata))?.encoded else { return false }
            send(signedAdvert(payload))
            return true
        }
        guard let remote else { return false }
        let key = publicKey
        remote.sign(Advert.signedMessage(key, ts, appdata)) { [weak self] sig in
            guard let self, let sig, sig.count == AirLimits.signatureSize, self.publicKey == key, self.powered else { return }
            send(self.signedAdvert(Advert(publicKey: key, timestamp: ts, signature: sig, appData: appdata).encoded))
        }
        return true
    }

    /// Signed here, so valid: receivers need not check it again (the air's memo knows it).
    private func signedAdvert(_ payload: [UInt8]) -> [UInt8] {
        mesh.markAdvertValid(hash: PacketHash.compute(payloadType: .advert, pathLength: .zeroHop, payload: payload).value)
        return payload
    }

    /// A signature by the node's key, to `done` (nil if the remote identity refused).
    public func sign(_ message: [UInt8], _ done: @escaping ([UInt8]?) -> Void) {
        if let identity { done(identity.sign(message)); return }
        guard let remote else { done(nil); return }
        remote.sign(message, done)
    }

    override open func boot() {
        seen.removeAll()
        held.removeAll()
    }
}
