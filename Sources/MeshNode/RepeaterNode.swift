import MeshAir
import MeshCompanion

/// The firmware's `RateLimiter`: at most `maximum` events in a window of `seconds` (RTC seconds),
/// the window starting at the first event after the previous one ran out.
struct RateLimiter {
    let maximum: Int
    let seconds: UInt32
    var start: UInt32 = 0
    var count = 0
    var started = false

    init(maximum: Int, seconds: UInt32) { self.maximum = maximum; self.seconds = seconds }

    mutating func allow(_ now: UInt32) -> Bool {
        if started && now < start &+ seconds {
            count += 1
            return count <= maximum
        }
        started = true
        start = now
        count = 1
        return true
    }
}

/// A repeater (`simple_repeater`): relays floods and direct packets, answers its ACL clients and
/// anonymous requests for its regions, owner and clock.
public final class RepeaterNode: ServerNode {
    /// A repeater heard by its zero-hop advert (or a discovery response): RTC time heard, SNR×4.
    struct Neighbour { var key: PublicKey; var heardAt: UInt32; var snr: Int8 }
    var neighbours: [Neighbour] = []
    static let maxNeighbours = 50
    var discoverLimiter = RateLimiter(maximum: 4, seconds: 120)
    var pendingDiscover: (tag: UInt32, until: UInt64)? = nil

    /// Anonymous request types a repeater answers (on a direct route only).
    enum AnonRequest: UInt8 { case regions = 1, owner = 2, basic = 3 }

    public init(mesh: Air, name: String, identity: LocalIdentity, adminPassword: String = "password", guestPassword: String = "") {
        super.init(mesh: mesh, name: name, role: .repeater, identity: identity, adminPassword: adminPassword, guestPassword: guestPassword)
    }

    override public func boot() {
        super.boot()
        neighbours.removeAll()
        discoverLimiter = RateLimiter(maximum: 4, seconds: 120)
        pendingDiscover = nil
    }

    override public func allowForward(_ packet: Packet) -> Bool {
        guard !disableForward, powered else { return false }
        return !packet.routeType.isFlood || floodAllowed(packet)
    }

    // MARK: anonymous requests

    /// `timestamp u32`, then a password (a login: its first byte is 0 or printable), or a request
    /// type 1–3 with `reply path_len, path` — answered only when it came direct, at most 4 in 3
    /// minutes, with `timestamp u32` (echoed as a tag), the clock u32, then the region names that
    /// allow floods / `name\nowner info` / a feature byte (0x80: not repeating).
    override public func onAnonRequest(from: PublicKey, secret: SharedSecret, plaintext pt: [UInt8], arrival: Arrival) {
        guard pt.count >= 5 else { return }
        let kind = pt[4]
        if kind == 0 || kind >= 0x20 { return super.onAnonRequest(from: from, secret: secret, plaintext: pt, arrival: arrival) }
        guard let request = AnonRequest(rawValue: kind), !arrival.isFlood else { return }
        guard anonLimiter.allow(epochNow) else { return }
        guard pt.count >= 6, let pl = try? PathLength(encoded: pt[5]), pt.count >= 6 + pl.byteCount else { return }
        let replyPath = (path: Array(pt[6 ..< 6 + pl.byteCount]), hashSize: pl.hashSize)
        var body = Array(pt[0 ..< 4])
        put32(epochNow, &body)
        switch request {
        case .regions: body += Array(regions.exportNames(max: 172, mask: RegionMap.denyFlood).utf8)
        case .owner: body += Array("\(name)\n\(ownerInfo)".utf8)
        case .basic: body.append(disableForward ? 0x80 : 0)
        }
        replyAnon(to: from, secret: secret, arrival: arrival, body: body, suppliedPath: replyPath)
    }

    // MARK: requests

    override public func handleRequest(type: UInt8, data: [UInt8], client: ServerClient) -> [UInt8]? {
        switch type {
        case 0x06: return data.first == 0 ? neighboursReply(data) : nil
        case 0x07: return Array("\(CompanionNode.firmwareVersion)\n\(name)\n\(ownerInfo)".utf8)
        default: return super.handleRequest(type: type, data: data, client: client)
        }
    }

    func sortedNeighbours(order: UInt8 = 0) -> [Neighbour] {
        switch order {
        case 1: return neighbours.sorted { $0.heardAt < $1.heardAt }
        case 2: return neighbours.sorted { $0.snr > $1.snr }
        case 3: return neighbours.sorted { $0.snr < $1.snr }
        default: return neighbours.sorted { $0.heardAt > $1.heardAt }
        }
    }

    /// Request `0, count, offset u16, order, prefix length, random`: `total u16, results u16`, then
    /// `{prefix, heard_secs_ago u32, snr×4 i8}` while they fit in 130 bytes.
    func neighboursReply(_ data: [UInt8]) -> [UInt8] {
        let count = data.count > 1 ? Int(data[1]) : 0
        let offset = data.count > 3 ? Int(data[2]) | Int(data[3]) << 8 : 0
        let order = data.count > 4 ? data[4] : 0
        let prefixLen = data.count > 5 ? min(32, Int(data[5])) : 0
        let sorted = sortedNeighbours(order: order)
        var results: [UInt8] = []
        var n = 0
        var i = 0
        while i < count && i + offset < sorted.count {
            if results.count + prefixLen + 5 > 130 { break }
            let nb = sorted[i + offset]
            results += nb.key.bytes.prefix(prefixLen)
            put32(epochNow &- nb.heardAt, &results)
            results.append(UInt8(bitPattern: nb.snr))
            n += 1; i += 1
        }
        var out: [UInt8] = []
        put16(UInt16(sorted.count), &out); put16(UInt16(n), &out)
        return out + results
    }

    // MARK: neighbours

    func putNeighbour(_ key: PublicKey, snr: Double) {
        let entry = Neighbour(key: key, heardAt: epochNow, snr: Int8(clamping: Int(snr * 4)))
        if let i = neighbours.firstIndex(where: { $0.key == key }) { neighbours[i] = entry; return }
        if neighbours.count >= Self.maxNeighbours, let oldest = neighbours.indices.min(by: { neighbours[$0].heardAt < neighbours[$1].heardAt }) {
            neighbours.remove(at: oldest)
        }
        neighbours.append(entry)
    }

    override public func onAdvert(_ advert: Advert, data: AdvertData, arrival: Arrival) {
        // Zero-hop adverts from other repeaters (not shared ones, with codes 0/0) are neighbours.
        let p = arrival.packet
        let shared = p.routeType.hasTransportCodes && p.transportCodes.code1 == 0 && p.transportCodes.code2 == 0
        guard data.type == .repeater, p.pathLength.hopCount == 0, !shared else { return }
        putNeighbour(advert.publicKey, snr: arrival.snr)
    }

    override func formatNeighbours() -> String {
        var lines: [String] = []
        var len = 0
        for n in sortedNeighbours() where len < 134 {
            let line = "\(AirHex.encode(n.key.bytes.prefix(4)).uppercased()):\(epochNow &- n.heardAt):\(n.snr)"
            len += line.utf8.count + (lines.isEmpty ? 0 : 1)
            lines.append(line)
        }
        return lines.isEmpty ? "-none-" : lines.joined(separator: "\n")
    }

    override func removeNeighbours(prefix: [UInt8]) {
        neighbours.removeAll { $0.key.bytes.starts(with: prefix) }
    }

    override func discoverNeighbours() {
        let tag = get32(rng.bytes(4), 0)
        pendingDiscover = (tag, now &+ 60_000)
        let req = ControlPayload.discoverRequest(prefixOnly: false, typeFilter: 1 << AdvertType.repeater.rawValue, tag: tag, since: 0)
        sendZeroHop(.control, payload: req.encoded)
    }

    override public func onControl(_ payload: [UInt8], arrival: Arrival) {
        guard let req = try? ControlPayload(payload: payload) else { return }
        switch req {
        case let .discoverRequest(prefixOnly, typeFilter, tag, since):
            // Answer zero-hop, at most 4 in 2 minutes, unless not repeating.
            guard !disableForward, discoverLimiter.allow(epochNow) else { return }
            guard typeFilter & (1 << AdvertType.repeater.rawValue) != 0, prefs.discoveryModified >= (since ?? 0) else { return }
            let resp = ControlPayload.discoverResponse(nodeType: .repeater, snrQuarterDb: Int8(clamping: Int(arrival.snr * 4)), tag: tag,
                                                       publicKey: Array(publicKey.bytes.prefix(prefixOnly ? 8 : 32)))
            let t = UInt64(Double(radio.airtime(payload.count + 2)) * floodDelayFactor)
            sendZeroHop(.control, payload: resp.encoded, delay: rng.between(0, 5 * t) * 4)
        case let .discoverResponse(nodeType, _, tag, key):
            guard nodeType.rawValue & 0x0F == AdvertType.repeater.rawValue, key.count >= 32 else { return }
            guard let p = pendingDiscover, now < p.until else { pendingDiscover = nil; return }
            guard tag == p.tag, let k = PublicKey(key.prefix(32)), k != publicKey else { return }
            putNeighbour(k, snr: arrival.snr)
        default:
            break
        }
    }
}
