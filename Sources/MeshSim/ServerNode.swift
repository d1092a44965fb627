import MeshAir
import MeshCompanion

/// A client in a server's access control list.
public struct ServerClient {
    public var key: AirKey
    /// 3 admin, 2 read/write (room member), 1 guest (read-only).
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
    public var isAdmin: Bool { permissions == 3 }
}

/// What repeaters and room servers share (`simple_repeater`, `simple_room_server`): ACL login over
/// ANON_REQ, requests (status, telemetry, ACL, neighbours, owner), the admin CLI, periodic adverts.
open class ServerNode: MeshNode {
    public var adminPassword: String
    public var guestPassword: String
    public var ownerInfo = ""
    public internal(set) var clients: [ServerClient] = []
    public static let maxClients = 32
    /// Zero-hop advert interval in ms (0 = off); flood advert interval in ms.
    public var advertInterval: UInt64 = 120_000
    public var floodAdvertInterval: UInt64 = 47 * 3_600_000
    var lastUniqueTime: UInt32 = 0
    var advertGeneration: UInt64 = 0
    public internal(set) var latitudeE6: Int32 = 0
    public internal(set) var longitudeE6: Int32 = 0

    /// Called with each admin CLI command and the reply sent (for transcripts and tests).
    public var onCommand: ((String, String) -> Void)?

    init(mesh: SimMesh, name: String, role: NodeRole, identity: LocalIdentity, adminPassword: String, guestPassword: String) {
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
        let p = advertPayload(appdata: appData())
        if flood { sendFlood(.advert, payload: p, delay: delay) } else { sendZeroHop(.advert, payload: p, delay: delay) }
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
                guard advertGeneration == gen, powered else { return }
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
        for i in clients.indices { clients[i].pushing = nil }
        scheduleAdverts(first: true)
    }

    // MARK: ACL

    func clientIndex(_ key: AirKey) -> Int? { clients.firstIndex { $0.key == key } }

    override open func candidatePeers(srcHash: UInt8) -> [AirKey] {
        clients.filter { $0.key.hashByte == srcHash }.map(\.key)
    }

    func putClient(_ c: ServerClient) -> Int {
        if let i = clientIndex(c.key) { clients[i] = c; return i }
        if clients.count >= Self.maxClients, let oldest = clients.indices.min(by: { clients[$0].lastActivity < clients[$1].lastActivity }) {
            clients.remove(at: oldest)
        }
        clients.append(c)
        return clients.count - 1
    }

    override open func onAnonRequest(from: AirKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        guard pt.count >= 4 else { return }
        let ts = get32(pt, 0)
        var i = 4
        var syncSince: UInt32 = 0
        if role == .room {
            guard pt.count >= 8 else { return }
            syncSince = get32(pt, 4); i = 8
        }
        let pw = String(decoding: pt[i...].prefix { $0 != 0 }.prefix(15), as: UTF8.self)
        let existing = clientIndex(from)
        var perms: UInt8
        if pw == adminPassword { perms = 3 }
        else if !guestPassword.isEmpty && pw == guestPassword { perms = role == .room ? 2 : 1 }
        else if pw.isEmpty, let e = existing { perms = clients[e].permissions }
        else { return } // bad password: no reply at all
        if let e = existing, ts <= clients[e].lastTimestamp { return } // replay
        var c = existing.map { clients[$0] } ?? ServerClient(key: from, permissions: perms)
        c.permissions = perms
        c.lastTimestamp = ts
        c.lastActivity = now
        c.loggedIn = true
        if role == .room { c.syncSince = syncSince; c.pushing = nil }
        _ = putClient(c)
        var body: [UInt8] = []
        put32(epochNow, &body)
        let adminFlag: UInt8 = perms == 3 ? 1 : 0
        body += [0x00, 0x00, adminFlag, perms] + rng.bytes(4) + [2]
        respond(to: from, secret: secret, arrival: arrival, body: body)
        if role == .room { schedulePush(after: 1500) }
    }

    /// Sends a RESPONSE: as PATH+RESPONSE flood when the request came flood, else direct/flood.
    func respond(to key: AirKey, secret: SharedSecret, arrival: Arrival, body: [UInt8], delay: UInt64 = 300) {
        let c = clientIndex(key).map { clients[$0] }
        let out = c?.outPath.map { (path: $0, hashSize: c!.outHashSize) }
        reply(to: key, secret: secret, arrival: arrival, type: .response, body: body, outPath: out, delay: delay)
    }

    override open func onPeerPath(from: AirKey, secret: SharedSecret, path: [UInt8], pathLength: AirPathLength,
                                  extraType: UInt8, extra: [UInt8], arrival: Arrival) -> Bool {
        guard let i = clientIndex(from) else { return false }
        clients[i].outPath = path
        clients[i].outHashSize = pathLength.hashSize
        if extraType == PayloadType.ack.rawValue, extra.count >= 4 { _ = onAck(Array(extra.prefix(4)), arrival: arrival) }
        return true
    }

    override open func onPeerData(_ type: PayloadType, from: AirKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        guard let i = clientIndex(from) else { return }
        clients[i].lastActivity = now
        switch type {
        case .req:
            guard pt.count >= 5 else { return }
            let tag = get32(pt, 0)
            if tag <= clients[i].lastTimestamp && role == .repeater { /* firmware tolerates; keep going */ }
            guard let reply = handleRequest(type: pt[4], data: Array(pt[5...]), client: clients[i]) else { return }
            var body: [UInt8] = []
            put32(tag, &body)
            respond(to: from, secret: secret, arrival: arrival, body: body + reply)
        case .txtMsg:
            guard pt.count >= 5 else { return }
            let ts = get32(pt, 0)
            let flags = pt[4]
            let txtType = flags >> 2
            let text = Array(pt[5...].prefix { $0 != 0 })
            if txtType == 0 {
                let ack = TextAck.code(timestamp: ts, txtType: 0, attempt: flags & 3, text: text, sender: from).bytes
                let c = clients[i]
                reply(to: from, secret: secret, arrival: arrival, type: .ack, body: ack,
                      outPath: c.outPath.map { (path: $0, hashSize: c.outHashSize) }, delay: 200)
            }
            onText(from: i, timestamp: ts, txtType: txtType, text: text, secret: secret, arrival: arrival)
        default:
            break
        }
    }

    /// A text from an ACL client (CLI command on a repeater, post on a room).
    open func onText(from client: Int, timestamp: UInt32, txtType: UInt8, text: [UInt8], secret: SharedSecret, arrival: Arrival) {
        guard clients[client].isAdmin else { return }
        let cmd = String(decoding: text, as: UTF8.self)
        let answer = command(cmd)
        onCommand?(cmd, answer)
        guard !answer.isEmpty else { return }
        var pt: [UInt8] = []
        put32(uniqueTime(), &pt)
        pt.append(1 << 2) // CLI_DATA
        pt += utf8Cut(Array(answer.utf8), max: 160)
        let key = clients[client].key
        let payload = datagram(to: key, secret: secret, plaintext: pt)
        if let p = clients[client].outPath { sendDirect(.txtMsg, payload: payload, path: p, hashSize: clients[client].outHashSize, delay: 600) }
        else { sendFlood(.txtMsg, payload: payload, delay: 600) }
    }

    // MARK: requests

    var stats: ServerStats {
        ServerStats(batteryMillivolts: 4150, txQueueLength: UInt16(clamping: radio.queueLength), noiseFloor: -120,
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
        case 0x03: // telemetry: LPP ch1 voltage (0.01 V, big-endian), ch1 temperature (0.1 °C)
            var lpp: [UInt8] = [1, 116]
            put16(UInt16(415).byteSwapped, &lpp)
            lpp += [1, 103]; put16(UInt16(215).byteSwapped, &lpp)
            return lpp
        case 0x05: // ACL (admin only)
            guard client.isAdmin else { return nil }
            var out: [UInt8] = []
            for c in clients.prefix(20) { out += c.key.bytes.prefix(6); out.append(c.permissions) }
            return out
        case 0x06:
            return neighboursReply(data)
        case 0x07: // owner info
            return Array("\(CompanionNode.firmwareVersion)\n\(name)\n\(ownerInfo)".utf8)
        default:
            return nil
        }
    }

    open func neighboursReply(_ data: [UInt8]) -> [UInt8] { [0, 0, 0, 0] }

    /// Rooms push posts to members; other servers have nothing to push.
    func schedulePush(after delay: UInt64) {}

    // MARK: CLI

    /// Runs one admin CLI command and returns the reply text.
    open func command(_ line: String) -> String {
        let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
        guard let verb = parts.first else { return "" }
        switch verb {
        case "ver":
            return "\(CompanionNode.firmwareVersion) (Build: \(CompanionNode.buildDate))"
        case "clock":
            if parts.count > 1 && parts[1] == "sync" { return "OK - clock set" }
            return clockText()
        case "time":
            guard parts.count > 1, let t = UInt32(parts[1]) else { return "Error: bad time" }
            if t < epochNow { return "ERR: clock cannot go backwards" }
            setClock(t); return "OK - clock set"
        case "advert":
            advertise(flood: true, delay: 1500); return "OK - Advert sent"
        case "reboot":
            reboot(); return ""
        case "password":
            guard parts.count > 1 else { return "Error: no password" }
            adminPassword = parts.dropFirst().joined(separator: " ")
            return "password now: \(adminPassword)"
        case "get":
            guard parts.count > 1 else { return "??: get" }
            switch parts[1] {
            case "name": return "> \(name)"
            case "radio": return "> \(Double(radio.params.freqKHz) / 1000),\(Double(radio.params.bwHz) / 1000),\(radio.params.sf),\(radio.params.cr)"
            case "tx": return "> \(radio.params.txPowerDbm)"
            case "guest.password": return "> \(guestPassword)"
            case "advert.interval": return "> \(advertInterval / 60_000)"
            case "owner.info": return "> \(ownerInfo)"
            case "af": return "> \(radio.airtimeFactor)"
            case "public.key": return "> \(publicKey.hex)"
            case "role": return "> \(role.rawValue)"
            default: return "??: \(parts[1])"
            }
        case "set":
            guard parts.count > 2 else { return "Error: set needs a value" }
            let v = parts[2]
            switch parts[1] {
            case "name": name = truncatedName(v); return "OK"
            case "guest.password": guestPassword = v; return "OK"
            case "owner.info": ownerInfo = v; return "OK"
            case "tx":
                guard let p = Int8(v) else { return "Error: bad value" }
                radio.params.txPowerDbm = p; return "OK"
            case "advert.interval":
                guard let m = UInt64(v) else { return "Error: bad value" }
                advertInterval = m * 60_000; scheduleAdverts(first: false); return "OK"
            case "af":
                guard let f = Double(v) else { return "Error: bad value" }
                radio.airtimeFactor = f; return "OK"
            default: return "unknown config: \(parts[1])"
            }
        default:
            return extraCommand(verb: verb, parts: parts) ?? "Unknown command"
        }
    }

    open func extraCommand(verb: String, parts: [String]) -> String? { nil }

    func clockText() -> String {
        let t = Int(epochNow)
        let days = t / 86400, secs = t % 86400
        // civil-from-days (Howard Hinnant), UTC
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(two(secs / 3600)):\(two(secs / 60 % 60)) - \(d)/\(m)/\(y) UTC"
    }
}

/// A repeater (`simple_repeater`): relays floods and direct packets, answers its ACL clients.
public final class RepeaterNode: ServerNode {
    public var floodMax = 64
    public var advertFloodMax = 8
    public var forwarding = true
    /// Region keys this repeater accepts for TRANSPORT_FLOOD; empty accepts all.
    public var regions: [RegionKey] = []
    struct Neighbour { var key: AirKey; var heardAt: UInt64; var snr: Double }
    var neighbours: [Neighbour] = []
    var discoverReplies: [UInt64] = []

    public init(mesh: SimMesh, name: String, identity: LocalIdentity, adminPassword: String = "password", guestPassword: String = "") {
        super.init(mesh: mesh, name: name, role: .repeater, identity: identity, adminPassword: adminPassword, guestPassword: guestPassword)
    }

    override public func allowForward(_ packet: Packet) -> Bool {
        guard forwarding, powered else { return false }
        if packet.routeType.isFlood {
            let hops = packet.pathLength.hopCount
            if packet.payloadType == .advert && hops >= advertFloodMax { return false }
            if hops >= floodMax { return false }
            if packet.routeType == .transportFlood && !regions.isEmpty {
                let code = packet.transportCodes.code1
                let payload = packet.payload
                if !regions.contains(where: { $0.transportCode(payloadType: packet.payloadType, payload: payload) == code }) { return false }
            }
        }
        return true
    }

    override public func onAdvert(_ advert: Advert, data: AdvertData, arrival: Arrival) {
        // Zero-hop adverts from other repeaters are neighbours.
        guard data.type == .repeater, arrival.packet.pathLength.hopCount == 0 else { return }
        neighbours.removeAll { $0.key == advert.publicKey }
        neighbours.append(Neighbour(key: advert.publicKey, heardAt: now, snr: arrival.snr))
        if neighbours.count > 50 { neighbours.removeFirst() }
    }

    /// Neighbour table: `total u16, results u16, {prefix, heard_secs_ago u32, snr×4 i8}…`.
    override public func neighboursReply(_ data: [UInt8]) -> [UInt8] {
        let count = data.count > 1 ? Int(data[1]) : 10
        let offset = data.count > 3 ? Int(data[2]) | Int(data[3]) << 8 : 0
        let prefixLen = data.count > 5 ? max(1, min(32, Int(data[5]))) : 4
        let sorted = neighbours.sorted { $0.heardAt > $1.heardAt }
        let page = Array(sorted.dropFirst(offset).prefix(count))
        var out: [UInt8] = []
        put16(UInt16(sorted.count), &out); put16(UInt16(page.count), &out)
        for n in page {
            out += n.key.bytes.prefix(prefixLen)
            put32(UInt32((now - n.heardAt) / 1000), &out)
            out.append(UInt8(bitPattern: Int8(clamping: Int((n.snr * 4).rounded()))))
        }
        return out
    }

    override public func extraCommand(verb: String, parts: [String]) -> String? {
        switch verb {
        case "neighbors", "neighbours":
            if neighbours.isEmpty { return "-none-" }
            return neighbours.map { n in
                "\(AirHex.encode(n.key.bytes.prefix(4))):\((now - n.heardAt) / 1000):\(Int((n.snr * 4).rounded()))"
            }.joined(separator: "\n")
        case "stats":
            return "recv:\(radio.nRecv) sent:\(radio.nSent) flood:\(radio.sentFlood) direct:\(radio.sentDirect) dups:\(radio.floodDups + radio.directDups) up:\(uptimeSeconds)s"
        default:
            return nil
        }
    }

    override public func onControl(_ payload: [UInt8], arrival: Arrival) {
        // DISCOVER_REQ: answer zero-hop, rate-limited to 4 per 2 minutes.
        guard let req = try? ControlPayload(payload: payload), case let .discoverRequest(prefixOnly, typeFilter, tag, _) = req else { return }
        guard typeFilter & (1 << AdvertType.repeater.rawValue) != 0 else { return }
        discoverReplies.removeAll { now - $0 > 120_000 }
        guard discoverReplies.count < 4 else { return }
        discoverReplies.append(now)
        let resp = ControlPayload.discoverResponse(nodeType: .repeater, snrQuarterDb: Int8(clamping: Int((arrival.snr * 4).rounded())), tag: tag,
                                                   publicKey: Array(publicKey.bytes.prefix(prefixOnly ? 8 : 32)))
        let t = UInt64(Double(radio.airtime(payload.count + 2)) * floodDelayFactor)
        sendZeroHop(.control, payload: resp.encoded, delay: rng.between(0, 5 * t) * 4)
    }
}
