import MeshAir
import MeshCompanion

/// A client in a server's access control list.
public struct ServerClient {
    public var key: PublicKey
    /// Low two bits: 3 admin, 2 read/write (room member), 1 read-only, 0 guest.
    public var permissions: UInt8
    var lastTimestamp: UInt32 = 0
    var outPath: [UInt8]? = nil
    var outHashSize = 1
    var lastActivity: UInt64 = 0
    // Room sync state.
    public internal(set) var syncSince: UInt32 = 0
    var pushing: (ack: UInt32, post: Int, attempt: UInt8, sentAt: UInt64)? = nil
    /// A post is out to this member, waiting for its ACK.
    public var isAwaitingAck: Bool { pushing != nil }
    var loggedIn = false
    public var isAdmin: Bool { permissions & 3 == 3 }
}

/// What repeaters and room servers share (`simple_repeater`, `simple_room_server`): ACL login over
/// ANON_REQ, requests (status, telemetry, ACL, neighbours, owner), the admin CLI, periodic adverts.
open class ServerNode: MeshNode {
    public var adminPassword: String
    public var guestPassword: String
    public var ownerInfo = ""
    public internal(set) var clients: [ServerClient] = [] { didSet { clientsChanged &+= 1 } }
    /// Counts changes to `clients` (any field): a host that keeps the ACL (`aclText`) looks
    /// again only when it moved.
    public private(set) var clientsChanged: UInt64 = 0
    public static let maxClients = 32
    /// Zero-hop advert interval in ms (0 = off); flood advert interval in ms.
    public var advertInterval: UInt64 = 120_000
    public var floodAdvertInterval: UInt64 = 47 * 3_600_000
    var lastUniqueTime: UInt32 = 0
    var advertGeneration: UInt64 = 0
    public internal(set) var latitudeE6: Int32 = 0
    public internal(set) var longitudeE6: Int32 = 0
    /// `set repeat off`: relays nothing (and repeaters then answer no discovery).
    public var disableForward = false
    /// Hop limits for relayed floods, and loop detection.
    public var floodLimits = FloodLimits()
    /// Regions this server relays scoped floods for (and names to `req_regions`).
    public var regions = RegionMap()
    /// The regions as last saved (`region save`, `region default`), what a boot starts from.
    public var savedRegions = RegionMap()
    /// The simulated battery and sensors telemetry and status report (an MCU temperature by default).
    public var sensors = Sensors(temperature: 21.5)
    /// Where a real host's measurements come from, read when a status or telemetry is answered
    /// (`pocketmesh node`); when set, `sensors` is not used.
    public var sensorSource: (() -> Sensors)?
    /// What status and telemetry report now.
    var readings: Sensors { sensorSource?() ?? sensors }
    /// Room servers: log in users with a wrong password as read-only guests.
    public var allowReadOnly = false
    /// Radio settings saved by `set radio` / `set freq`, applied at the next boot.
    public var savedRadio: RadioParams?
    var prefs = ServerPrefs()
    /// `set cad on`: a radio that can detect channel activity does so before each transmit.
    public var channelActivityDetection: Bool { prefs.radio.cad }
    /// Boosted RX gain on the radio (`set radio.rxgain`, on by default).
    public var rxBoostedGain: Bool { prefs.radio.rxBoostedGain }
    var regionLoad: (map: RegionMap, stack: [UInt16?])? = nil
    var anonLimiter = RateLimiter(maximum: 4, seconds: 180)
    var tempRadioGeneration: UInt64 = 0
    /// A key set by `set prv.key`, taken at the next boot.
    var pendingIdentity: LocalIdentity?

    /// Called with each admin CLI command and the reply sent (for transcripts and tests).
    public var onCommand: ((String, String) -> Void)?
    /// Called when the settings change (`savePrefs` in the firmware): a host keeps them (`prefsText`).
    public var onSavePrefs: (() -> Void)?
    /// What `board` answers.
    public var board = ServerNode.boardName

    init(mesh: Air, name: String, role: NodeRole, identity: LocalIdentity, adminPassword: String, guestPassword: String) {
        self.adminPassword = adminPassword
        self.guestPassword = guestPassword
        super.init(mesh: mesh, name: truncatedName(name), role: role, poolSize: 32, identity: identity)
        floodDelayFactor = 0.5
        directDelayFactor = 0.3
        scheduleAdverts(first: true)
    }

    var advertType: AdvertType { role == .room ? .room : .repeater }

    func uniqueTime() -> UInt32 {
        var t = epochNow
        if t <= lastUniqueTime { t = lastUniqueTime + 1 }
        lastUniqueTime = t
        return t
    }

    // MARK: adverts

    func appData() -> [UInt8] {
        var d = AdvertData(type: advertType, name: name)
        if latitudeE6 != 0 || longitudeE6 != 0 { d.latitudeE6 = latitudeE6; d.longitudeE6 = longitudeE6 }
        return d.encoded
    }

    public func advertise(flood: Bool, delay: UInt64 = 0) {
        let scope = defaultScope
        withAdvertPayload(appdata: appData()) { [unowned self] p in
            if flood { self.sendFlood(.advert, payload: p, delay: delay, scope: .some(scope)) } else { self.sendZeroHop(.advert, payload: p, delay: delay) }
        }
    }

    func scheduleAdverts(first: Bool) {
        advertGeneration &+= 1
        let gen = advertGeneration
        if first {
            // A flood advert shortly after boot, so the mesh learns the server.
            let d = rng.between(1_000, 8_000)
            mesh.scheduler.after(d) { [unowned self] in
                guard self.advertGeneration == gen, self.powered else { return }
                self.advertise(flood: true)
            }
        }
        if advertInterval > 0 {
            let start = advertInterval / 2 + rng.below(advertInterval / 2)
            func tick() {
                guard advertGeneration == gen, powered, advertInterval > 0 else { return }
                advertise(flood: false)
                mesh.scheduler.after(advertInterval) { tick() }
            }
            mesh.scheduler.after(start) { tick() }
        }
        if floodAdvertInterval > 0 {
            func floodTick() {
                guard advertGeneration == gen, powered else { return }
                advertise(flood: true)
                mesh.scheduler.after(floodAdvertInterval) { floodTick() }
            }
            mesh.scheduler.after(floodAdvertInterval) { floodTick() }
        }
    }

    override open func boot() {
        super.boot()
        // The ACL on flash keeps clients with permissions (not guests), without their last timestamps.
        clients.removeAll { $0.permissions == 0 }
        for i in clients.indices { clients[i].pushing = nil; clients[i].lastTimestamp = 0 }
        anonLimiter = RateLimiter(maximum: 4, seconds: 180)
        if let r = savedRadio { radio.params = r; savedRadio = nil }
        if let id = pendingIdentity { identity = id; pendingIdentity = nil; forgetSecrets() }
        regionLoad = nil
        regions = savedRegions
        tempRadioGeneration &+= 1
        scheduleAdverts(first: true)
    }

    // MARK: regions

    /// The region of the packet being processed (`recv_pkt_region`): for a TRANSPORT_FLOOD the region
    /// its code matches among those allowing floods, for a FLOOD the wildcard while it allows floods;
    /// nil otherwise (such floods are not relayed).
    public internal(set) var receivedRegion: RegionMap.Entry?

    override open func onReceive(_ packet: Packet) {
        switch packet.routeType {
        case .transportFlood: receivedRegion = regions.match(packet, mask: RegionMap.denyFlood)
        case .flood: receivedRegion = regions.wildcard.allowsFlood ? regions.wildcard : nil
        default: receivedRegion = nil
        }
    }

    /// The default region's key (`region default`), used to scope the flood adverts.
    var defaultScope: RegionKey? { regions.defaultRegion?.key }

    /// `sendFloodReply`: the request's scope when its region is known, none when it came unscoped,
    /// else the default scope.
    override open var replyScope: RegionKey? {
        if let r = receivedRegion, r.id != 0, let k = r.key { return k }
        if receivedRegion?.id == 0 { return nil }
        return defaultScope
    }

    /// Flood hop limits, the region check and loop detection (`allowPacketForward`).
    func floodAllowed(_ packet: Packet) -> Bool {
        let hops = packet.pathLength.hopCount
        if hops >= floodMax { return false }
        if packet.routeType == .flood && hops >= floodMaxUnscoped { return false }
        if packet.payloadType == .advert && hops >= floodMaxAdvert { return false }
        if receivedRegion == nil { return false }
        if loopDetect > 0 {
            let size = packet.pathLength.hashSize
            let limits: [Int] = loopDetect == 1 ? [0, 4, 2, 1] : loopDetect == 2 ? [0, 2, 1, 1] : [0, 1, 1, 1]
            let path = packet.path
            var n = 0
            var i = 0
            while i + size <= path.count {
                if publicKey.matches(hash: path[i ..< i + size]) { n += 1 }
                i += size
            }
            if n >= limits[min(size, 3)] { return false }
        }
        return true
    }

    // MARK: ACL

    func clientIndex(_ key: PublicKey) -> Int? { clients.firstIndex { $0.key == key } }

    override open func candidatePeers(srcHash: UInt8) -> [PublicKey] {
        clients.filter { $0.key.hashByte == srcHash }.map(\.key)
    }

    /// The client's index, adding it (without permissions) when new; a full table loses the client
    /// idle longest.
    func putClient(_ key: PublicKey) -> Int {
        if let i = clientIndex(key) { return i }
        if clients.count >= Self.maxClients, let oldest = clients.indices.min(by: { clients[$0].lastActivity < clients[$1].lastActivity }) {
            clients.remove(at: oldest)
        }
        clients.append(ServerClient(key: key, permissions: 0))
        return clients.count - 1
    }

    /// ANON_REQ: `timestamp u32` then a login (rooms: `sync_since u32`, then the password).
    override open func onAnonRequest(from: PublicKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        let at = role == .room ? 8 : 4
        guard pt.count >= at else { return }
        let password = Array(pt[at...].prefix { $0 != 0 })
        guard let body = login(from: from, timestamp: get32(pt, 0), password: password,
                               syncSince: role == .room ? get32(pt, 4) : 0, isFlood: arrival.isFlood) else { return }
        replyAnon(to: from, secret: secret, arrival: arrival, body: body, suppliedPath: nil)
        if role == .room { schedulePush(after: 1500) }
    }

    /// `handleLoginReq`: a blank password from a known client logs it in as it was; otherwise the
    /// admin password gives admin, the guest password guest (rooms: read/write; with
    /// `allow.read.only` any other password guest), so a blank guest password lets anyone in as a
    /// guest with a blank password. A wrong password or a replayed timestamp gets no reply. Returns
    /// the reply body: `server time u32, 0 (OK), 0, is_admin, permissions, random u32, level`.
    func login(from: PublicKey, timestamp ts: UInt32, password pw: [UInt8], syncSince: UInt32, isFlood: Bool) -> [UInt8]? {
        var index = pw.isEmpty ? clientIndex(from) : nil
        if index == nil {
            let perms: UInt8
            if pw == Array(adminPassword.utf8) { perms = 3 }
            else if pw == Array(guestPassword.utf8) { perms = role == .room ? 2 : 0 }
            else if role == .room && allowReadOnly { perms = 0 }
            else { return nil }
            let i = putClient(from)
            if ts <= clients[i].lastTimestamp { return nil } // replay
            clients[i].lastTimestamp = ts
            clients[i].lastActivity = now
            clients[i].permissions = clients[i].permissions & ~3 | perms
            if role == .room { clients[i].syncSince = syncSince; clients[i].pushing = nil }
            index = i
        }
        let i = index!
        clients[i].loggedIn = true
        if isFlood { clients[i].outPath = nil }
        var body: [UInt8] = []
        put32(uniqueTime(), &body)
        let c = clients[i]
        let adminFlag: UInt8 = c.isAdmin ? 1 : (role == .room && c.permissions == 0 ? 2 : 0)
        body += [0x00, 0x00, adminFlag, c.permissions] + rng.bytes(4) + [role == .room ? 1 : 2]
        return body
    }

    /// A RESPONSE to an anonymous request (`chooseReplyRoute`): a flood request gets a flood PATH
    /// carrying it, then the reply path the request supplied, the client's known path, or a flood.
    func replyAnon(to key: PublicKey, secret: SharedSecret, arrival: Arrival, body: [UInt8], suppliedPath: (path: [UInt8], hashSize: Int)?) {
        if !arrival.isFlood, let p = suppliedPath {
            sendDirect(.response, payload: datagram(to: key, secret: secret, plaintext: body), path: p.path, hashSize: p.hashSize, delay: 300)
            return
        }
        respond(to: key, secret: secret, arrival: arrival, body: body)
    }

    /// Sends a RESPONSE: as PATH+RESPONSE flood when the request came flood, else direct/flood.
    func respond(to key: PublicKey, secret: SharedSecret, arrival: Arrival, body: [UInt8], delay: UInt64 = 300) {
        let c = clientIndex(key).map { clients[$0] }
        let out = c?.outPath.map { (path: $0, hashSize: c!.outHashSize) }
        reply(to: key, secret: secret, arrival: arrival, type: .response, body: body, outPath: out, delay: delay)
    }

    override open func onPeerPath(from: PublicKey, secret: SharedSecret, path: [UInt8], pathLength: PathLength,
                                  extraType: UInt8, extra: [UInt8], arrival: Arrival) -> Bool {
        guard let i = clientIndex(from) else { return false }
        clients[i].outPath = path
        clients[i].outHashSize = pathLength.hashSize
        clients[i].lastActivity = now
        if extraType == PayloadType.ack.rawValue, extra.count >= 4 { _ = onAck(Array(extra.prefix(4)), arrival: arrival) }
        return true
    }

    override open func onPeerData(_ type: PayloadType, from: PublicKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        guard let i = clientIndex(from) else { return }
        switch type {
        case .req:
            guard pt.count >= 5 else { return }
            let tag = get32(pt, 0)
            guard tag > clients[i].lastTimestamp else { return } // replay
            guard let reply = handleRequest(type: pt[4], data: Array(pt[5...]), client: clients[i]) else { return }
            clients[i].lastTimestamp = tag
            clients[i].lastActivity = now
            var body: [UInt8] = []
            put32(tag, &body)
            respond(to: from, secret: secret, arrival: arrival, body: body + reply)
        case .txtMsg:
            guard pt.count >= 5 else { return }
            clients[i].lastActivity = now
            let ts = get32(pt, 0)
            let flags = pt[4]
            let txtType = flags >> 2
            let text = Array(pt[5...].prefix { $0 != 0 })
            if role == .repeater || txtType == TextType.cliData.rawValue {
                // A CLI command: admins only, plain or CLI text, not replayed; a retry is ACKed again
                // but not run again.
                guard clients[i].isAdmin, txtType <= 1, ts >= clients[i].lastTimestamp else { return }
                let isRetry = ts == clients[i].lastTimestamp
                clients[i].lastTimestamp = ts
                if txtType == TextType.plain.rawValue { sendTextAck(to: i, timestamp: ts, flags: flags, text: text, secret: secret, arrival: arrival) }
                runCommand(from: i, timestamp: ts, text: isRetry ? nil : text, secret: secret, arrival: arrival)
                return
            }
            if txtType == TextType.plain.rawValue { sendTextAck(to: i, timestamp: ts, flags: flags, text: text, secret: secret, arrival: arrival) }
            onText(from: i, timestamp: ts, txtType: txtType, text: text, secret: secret, arrival: arrival)
        default:
            break
        }
    }

    func sendTextAck(to i: Int, timestamp ts: UInt32, flags: UInt8, text: [UInt8], secret: SharedSecret, arrival: Arrival) {
        let c = clients[i]
        let ack = TextAck.code(timestamp: ts, txtType: TextType.plain.rawValue, attempt: flags & 3, text: text, sender: c.key).bytes
        reply(to: c.key, secret: secret, arrival: arrival, type: .ack, body: ack,
              outPath: c.outPath.map { (path: $0, hashSize: c.outHashSize) }, delay: 200)
    }

    /// A text from an ACL client that is not a CLI command (a post, on a room).
    open func onText(from client: Int, timestamp: UInt32, txtType: UInt8, text: [UInt8], secret: SharedSecret, arrival: Arrival) {}

    /// Runs an admin's CLI command (nil: a retry, not run again) and sends the reply as CLI text.
    func runCommand(from client: Int, timestamp: UInt32, text: [UInt8]?, secret: SharedSecret, arrival: Arrival) {
        let cmd = text.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let answer = text == nil ? "" : command(cmd, senderTimestamp: timestamp)
        onCommand?(cmd, answer)
        guard !answer.isEmpty else { return }
        var pt: [UInt8] = []
        var t = uniqueTime()
        if t == timestamp { t &+= 1 }
        put32(t, &pt)
        pt.append(1 << 2) // CLI_DATA
        pt += utf8Cut(Array(answer.utf8), max: 160)
        let key = clients[client].key
        let payload = datagram(to: key, secret: secret, plaintext: pt)
        if let p = clients[client].outPath { sendDirect(.txtMsg, payload: payload, path: p, hashSize: clients[client].outHashSize, delay: 600) }
        else { sendFlood(.txtMsg, payload: payload, delay: 600, scope: .some(replyScope)) }
    }

    // MARK: requests

    var stats: ServerStats {
        ServerStats(batteryMillivolts: readings.millivolts, txQueueLength: UInt16(clamping: radio.queueLength), noiseFloor: -120,
                    lastRSSI: Int16(clamping: radio.lastRSSI), packetsReceived: radio.nRecv, packetsSent: radio.nSent,
                    airTimeSeconds: UInt32(radio.txAirMs / 1000), uptimeSeconds: uptimeSeconds, sentFlood: radio.sentFlood,
                    sentDirect: radio.sentDirect, receivedFlood: radio.recvFlood, receivedDirect: radio.recvDirect,
                    errorEvents: radio.errEvents, lastSNRQuarterDb: Int16((radio.lastSNR * 4).rounded()),
                    directDuplicates: radio.directDups, floodDuplicates: radio.floodDups,
                    rxAirTimeSeconds: role == .room ? nil : UInt32(radio.rxAirMs / 1000), receiveErrors: role == .room ? nil : UInt32(radio.errEvents),
                    postedCount: role == .room ? UInt16(clamping: postedCount) : nil,
                    postPushCount: role == .room ? UInt16(clamping: pushCount) : nil)
    }

    var postedCount: Int { 0 }
    var pushCount: Int { 0 }

    /// Body after the tag echo, or nil for no reply.
    open func handleRequest(type: UInt8, data: [UInt8], client: ServerClient) -> [UInt8]? {
        switch type {
        case 0x01: // status
            return stats.encoded
        case 0x03: // telemetry: the first byte masks permissions off; guests get the base only
            let mask: UInt8 = client.permissions & 3 == 0 ? 0 : ~(data.first ?? 0)
            return readings.lpp(permissions: Sensors.basePermission | mask)
        case 0x05: // ACL (admin only): `prefix[6], permissions` per client (rooms: admins only)
            guard client.isAdmin, data.count < 2 || (data[0] == 0 && data[1] == 0) else { return nil }
            var out: [UInt8] = []
            for c in clients where c.permissions != 0 && (role != .room || c.isAdmin) && out.count + 7 <= 176 {
                out += c.key.bytes.prefix(6); out.append(c.permissions)
            }
            return out
        default:
            return nil
        }
    }

    /// Rooms push posts to members; other servers have nothing to push.
    func schedulePush(after delay: UInt64) {}

    // MARK: neighbours (repeaters)

    /// The `neighbors` reply.
    func formatNeighbours() -> String { "not supported" }
    func removeNeighbours(prefix: [UInt8]) {}
    func discoverNeighbours() {}
}

/// A server's limits on the floods it relays.
public struct FloodLimits: Sendable, Equatable {
    /// Hop limits for relayed floods: any flood, unscoped (plain FLOOD) ones, adverts.
    public var max = 64
    public var maxUnscoped = 64
    public var maxAdvert = 8
    /// 0 off, 1 minimal, 2 moderate, 3 strict (`loop.detect`).
    public var loopDetect: UInt8 = 0
}

extension ServerNode {
    public var floodMax: Int {
        get { floodLimits.max }
        set { floodLimits.max = newValue }
    }
    public var floodMaxUnscoped: Int {
        get { floodLimits.maxUnscoped }
        set { floodLimits.maxUnscoped = newValue }
    }
    public var floodMaxAdvert: Int {
        get { floodLimits.maxAdvert }
        set { floodLimits.maxAdvert = newValue }
    }
    public var loopDetect: UInt8 {
        get { floodLimits.loopDetect }
        set { floodLimits.loopDetect = newValue }
    }
}
