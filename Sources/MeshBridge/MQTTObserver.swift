import MeshLink
import Glibc
import MeshAir
import MeshCompanion
import MeshNet
import MeshOps

/// `--mqtt-observer URL --mqtt-iata XXX`: the packet uploader of the MeshCore observer networks.
///
/// Publishes what meshcore-packet-capture publishes, the same way: every packet the radio hears
/// (LOG_RX_DATA) goes to `meshcore/{IATA}/{PUBLIC KEY}/packets` at QoS 0, not retained
/// (ObserverFormat.packet); `…/status` at QoS 0, retained: `online` with the radio's model,
/// firmware, radio settings and stats once the stats are in after each connection and every 300 s,
/// `offline` on a clean stop; the last will (QoS 0, retained) is the four-key `offline`. The topic
/// names the radio's key, so the connection starts once the radio's SELF_INFO is known, and starts
/// again if another radio takes its place.
///
/// Authentication: a user and password from the URL and a file, or, for the public brokers, the
/// user `v1_{PUBLIC KEY}` and a JWT (ObserverFormat.tokenInput: `client`, and `owner` and `email`
/// when given) signed with the node's key: by the radio itself (SIGN_START/DATA/FINISH through the
/// daemon's `sign` operation, or the node's `sign`), or here with a 0600 key file. The first
/// connection waits for the token; a new one is signed when half its lifetime has passed, for
/// the connections after that.
public final class MQTTObserver {
    /// API client ids for the observer's own stats requests.
    public static let firstClientID = 1 << 30
    public static let lastClientID = firstClientID + 1023

    public struct Settings {
        public var connection: BrokerConnection.Settings
        public var iata: String
        public var user: String? = nil
        public var password: [UInt8]? = nil
        /// Signs the JWT password (user `v1_{KEY}`) here when set.
        public var identity: LocalIdentity? = nil
        /// The JWT password (user `v1_{KEY}`) signed by the radio (`signer`, or the `sign` operation).
        public var signedByRadio = false
        /// The token's claims; the audience defaults to the broker's host name.
        public var claims = ObserverFormat.Claims()
        /// The status's `model` and `firmware_version` when there is no radio's DEVICE_INFO (a node).
        public var firmware: (model: String, version: String)? = nil
        /// `--mqtt-observer-decode`: the packets' `decoded` object, group texts decrypted with these.
        public var channels: [ObserverFormat.Channel]? = nil
        /// `--mqtt-observer-neighbors HOURS`: the `neighbors` snapshot this often (the daemon's radio).
        public var neighborsIntervalS: UInt64? = nil
        /// How long the discovery listens for answers (packet-capture's 60 s).
        public var neighborsWindowS = 60.0
        public var tokenLifetimeS: Int64 = 86_400
        public var statusIntervalMS: UInt64 = 300_000
        public var maxQueuedPackets = 256
        public init(connection: BrokerConnection.Settings, iata: String) { self.connection = connection; self.iata = iata }
    }

    public let settings: Settings
    /// Appended to the client id: "" with one observer, "-N" with several.
    public let clientIdSuffix: String
    public let clientIndex: Int
    public private(set) var connection: BrokerConnection? = nil
    public var log: (String) -> Void = { _ in }
    /// Runs an API request (the radio's stats); the answer comes back through `answer`, or now.
    /// The daemon, which runs the commands that come from the broker.
    public weak var host: BridgeHost? = nil
    func execute(_ r: DaemonRequest, _ client: Int) -> DaemonResponse? {
        guard let host else { return DaemonResponse(id: r.id, error: DaemonError(.unsupported, "no handler")) }
        return host.bridgeExecute(r, client: .observer(ObjectIdentifier(self)))
    }
    /// The wall clock in microseconds since 1970 (a test sets its own).
    public var wallClock: () -> Int64 = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec / 1000)
    }

    /// Signs for the token (the node's key, or its modem's); nil: the daemon's `sign` operation.
    public var signer: (([UInt8], @escaping ([UInt8]?) -> Void) -> Void)? = nil

    /// Who the observer is: the radio's (or node's) name, key and radio settings.
    private var radioSelf: (name: String, publicKey: PublicKey, radio: RadioParams?)? = nil
    private var device: RadioDevice? = nil
    private var token: (text: String, renewAt: Int64)? = nil
    private var tokenPending = false
    private var tokenRetryAt: UInt64 = 0
    private var stats: JSON? = nil
    private var statsPending = false
    private var nextStatusAt: UInt64 = 0
    public private(set) var published = 0

    public init(settings: Settings, clientIdSuffix: String, index: Int) {
        self.settings = settings
        self.clientIdSuffix = clientIdSuffix
        clientIndex = Self.firstClientID + index
    }

    public var root: String? { radioSelf.map { ObserverFormat.topicRoot(iata: settings.iata, publicKey: $0.publicKey) } }
    /// `pocketmesh-observer-{12 hex of the radio's key}`: unique per radio and role.
    public var clientId: String? { radioSelf.map { "pocketmesh-observer-\($0.publicKey.hex.prefix(12))\(clientIdSuffix)" } }

    /// The radio's identity and device info are known (at each link start).
    public func radioReady(self s: RadioSelf, device d: RadioDevice?, now: UInt64) {
        ready(name: s.name, publicKey: s.publicKey, radio: s.radio, device: d, now: now)
    }

    /// The radio (or node) is known: its name, key and radio settings.
    public func ready(name: String, publicKey: PublicKey, radio: RadioParams?, device d: RadioDevice? = nil, now: UInt64) {
        let keyChanged = radioSelf?.publicKey != publicKey
        radioSelf = (name, publicKey, radio)
        device = d
        guard keyChanged else { return }
        if let old = connection {
            log("mqtt-observer: another radio (\(publicKey.hex.prefix(12))): starting again under its key")
            old.close(now: now)
            connection = nil
        }
        token = nil
        if settings.signedByRadio { requestToken(now: now) } else { start(now: now) }
    }

    // MARK: the token

    /// Makes the token: its signing input here, the signature by the key file, the node or the radio.
    private func requestToken(now: UInt64) {
        guard let s = radioSelf, !tokenPending else { return }
        let issuedAt = wallClock() / 1_000_000
        var claims = settings.claims
        if claims.audience == nil { claims.audience = settings.connection.url.host }
        let input = ObserverFormat.tokenInput(publicKey: settings.identity?.publicKey ?? s.publicKey, issuedAt: issuedAt,
                                              lifetimeS: settings.tokenLifetimeS, claims: claims)
        let renewAt = issuedAt + settings.tokenLifetimeS / 2
        let key = s.publicKey
        tokenPending = true
        let done: ([UInt8]?) -> Void = { [weak self] sig in self?.signed(input, sig, renewAt: renewAt, key: key) }
        if let identity = settings.identity { return done(identity.sign(Array(input.utf8))) }
        if let signer { return signer(Array(input.utf8), done) }
        pendingSign = (input, renewAt, key)
        let line = Array(#"{"op":"sign","id":2,"data":"\#(HexCodec.encode(Array(input.utf8)))"}"#.utf8)
        guard case .success(let req) = line.withUnsafeBytes({ DaemonRequest.parse(line: $0) }) else { return done(nil) }
        if let r = execute(req, clientIndex) { answer(r, now: now) }
    }

    private var pendingSign: (input: String, renewAt: Int64, key: PublicKey)? = nil

    // MARK: the neighbours snapshot

    /// A cycle as packet-capture runs it through the radio: a zero-hop discovery of repeaters
    /// (the `discover` operation), one `regions` request to each (most useful first, at most 32,
    /// 2 s apart), the radio's default flood scope, then the snapshot, not retained.
    private var nbNextAt: UInt64 = 0
    private var nbRunning = false
    private var nbWaiting = false
    private var nbEntries: [ObserverFormat.Neighbour] = []
    private var nbTotal = 0
    private var nbIndex = 0
    private var nbQueryAt: UInt64 = 0

    private func neighboursOp(_ id: Int64, _ args: String, now: UInt64) {
        let line = Array(#"{"id":\#(id),\#(args)}"#.utf8)
        guard case .success(let req) = line.withUnsafeBytes({ DaemonRequest.parse(line: $0) }) else { return }
        nbWaiting = true
        if let r = execute(req, clientIndex) { answer(r, now: now) }
    }

    private func neighboursStep(now: UInt64) {
        guard settings.neighborsIntervalS != nil, host != nil, connection?.isUp == true, !nbWaiting else { return }
        if !nbRunning {
            guard now >= nbNextAt else { return }
            nbRunning = true
            log("mqtt-observer: neighbours: discovering repeaters for \(Int(settings.neighborsWindowS)) s")
            return neighboursOp(3, #""op":"discover","type":"repeater","for":\#(settings.neighborsWindowS)"#, now: now)
        }
        guard now >= nbQueryAt else { return }
        if nbIndex < nbEntries.count { return neighboursOp(4, #""op":"regions","name":"\#(nbEntries[nbIndex].publicKey)""#, now: now) }
        if nbIndex == nbEntries.count { return neighboursOp(5, #""op":"get","setting":"flood-scope""#, now: now) }
    }

    private func neighboursAnswer(_ r: DaemonResponse, now: UInt64) {
        nbWaiting = false
        let fields: [(String, JSON)]
        switch r.result {
        case .success(let f): fields = f
        case .failure(let e): fields = []
            if r.id == 3 && e.kind != .notFound {  // no radio now, or busy: again in 5 minutes
                log("mqtt-observer: neighbours: the discovery failed (\(e.message)); again in 300 s")
                nbRunning = false
                nbNextAt = now + 300_000
                return
            }
            if r.id == 4 { nbEntries[nbIndex].status = e.kind == .timeout ? "timeout" : "send_failed" }
        }
        switch r.id {
        case 3:
            let at = wallClock(), me = radioSelf?.publicKey.hex
            var found: [ObserverFormat.Neighbour] = []
            for n in fields.first(where: { $0.0 == "nodes" })?.1.array ?? [] {
                guard let k = n["public_key"]?.string, k.utf8.count == 64, k.lowercased() != me, n["type"]?.string == "repeater",
                      !found.contains(where: { $0.publicKey == k.uppercased() }) else { continue }
                let snr: Double
                switch n["snr"] { case .double(let d)?: snr = d; case .integer(let i)?: snr = Double(i); default: snr = 0 }
                found.append(ObserverFormat.Neighbour(publicKey: k.uppercased(), snr: snr, heardAt: at))
            }
            nbTotal = found.count
            nbEntries = Array(ObserverFormat.sorted(found, now: at).prefix(32))
            nbIndex = 0
            nbQueryAt = now
        case 4:
            if let names = fields.first(where: { $0.0 == "regions" })?.1.array {
                nbEntries[nbIndex].scopes = names.compactMap(\.string).joined(separator: ",")
                nbEntries[nbIndex].status = "responded"
            }
            nbIndex += 1
            nbQueryAt = now + 2_000
        default:
            var scopes = ""
            for (_, v) in fields { if let t = v.string { scopes = t } }
            nbRunning = false
            nbNextAt = now + (settings.neighborsIntervalS ?? 86_400) * 1000
            guard let s = radioSelf, let connection, let root else { return }
            let out = ObserverFormat.dumps(ObserverFormat.neighbors(origin: s.name, originId: s.publicKey, selfScopes: scopes,
                                                                    entries: nbEntries, total: nbTotal, epochMicros: wallClock()))
            connection.client.publish(topic: root + "/neighbors", payload: out, qos: .atMostOnce, now: now)
            connection.flush(now: now)
            log("mqtt-observer: neighbours: published \(nbEntries.count) of \(nbTotal) (\(nbEntries.filter { $0.status == "responded" }.count) with scopes)")
        }
    }

    private func signed(_ input: String, _ signature: [UInt8]?, renewAt: Int64, key: PublicKey) {
        tokenPending = false
        guard key == radioSelf?.publicKey else { return }  // another radio came meanwhile
        let now = monotonicMilliseconds()
        if let signature, signature.count == 64 {
            token = (ObserverFormat.token(input: input, signature: signature), renewAt)
        } else {
            // An older radio without signing: connecting without a token still suits a broker that
            // wants none; the token is asked for again each minute.
            log("mqtt-observer: the radio did not sign the broker token; connecting without one, asking again in 60 s")
            tokenRetryAt = now + 60_000
        }
        if connection == nil { start(now: now) }
    }

    private func start(now: UInt64) {
        guard let s = radioSelf, let root, let clientId else { return }
        let user: String?
        if settings.identity != nil || settings.signedByRadio { user = "v1_" + s.publicKey.hex.uppercased() } else { user = settings.user ?? settings.connection.url.user }
        let connect = MQTTConnect(clientId: clientId, username: user, password: user == nil ? nil : settings.password,
                                  keepAliveS: 60, cleanSession: true, will: nil)
        var options = MQTTClient.Options(connect: connect)
        options.maxQueued = settings.maxQueuedPackets
        let c = BrokerConnection(name: "mqtt-observer", settings: settings.connection, options: options)
        c.log = log
        c.onEvent = { [unowned self] e, now in self.event(e, now: now) }
        c.prepareConnect = { [unowned self] connect in
            // The will and the token are made at each CONNECT: the will carries the time, the token expires.
            let will = ObserverFormat.dumps(ObserverFormat.will(origin: s.name, originId: s.publicKey, epochMicros: self.wallClock()))
            connect.will = MQTTWill(topic: root + "/status", payload: will, qos: .atMostOnce, retain: true)
            if let identity = self.settings.identity {
                var claims = self.settings.claims
                if claims.audience == nil { claims.audience = self.settings.connection.url.host }
                let token = ObserverFormat.token(identity: identity, issuedAt: self.wallClock() / 1_000_000,
                                                 lifetimeS: self.settings.tokenLifetimeS, claims: claims)
                connect.password = Array(token.utf8)
            } else if let token = self.token {
                connect.password = Array(token.text.utf8)
            }
        }
        connection = c
        c.begin(now: now)
        log("mqtt-observer: \(settings.connection.url) as \(root), client id \(clientId)")
    }

    /// A packet the radio heard.
    public func packet(raw: [UInt8], snrQuarterDb: Int8, rssi: Int8, now: UInt64) {
        guard let s = radioSelf, let connection, let root else { return }
        let json = ObserverFormat.packet(raw: raw, snrQuarterDb: snrQuarterDb, rssi: rssi, origin: s.name, originId: s.publicKey,
                                         radio: s.radio, epochMicros: wallClock(), channels: settings.channels)
        let out = ObserverFormat.dumps(json)
        connection.client.publish(topic: root + "/packets", payload: out, qos: .atMostOnce, now: now)
        published += 1
        connection.flush(now: now)
    }

    private func event(_ e: MQTTClient.Event, now: UInt64) {
        // As the uploader: the first status waits for the radio's stats (or for their failure).
        if case .connected = e { requestStats(now: now) }
    }

    private func publishStatus(now: UInt64) {
        guard let s = radioSelf, let connection, connection.isUp, let root else { return }
        let out = ObserverFormat.dumps(ObserverFormat.status("online", origin: s.name, originId: s.publicKey, device: device,
                                                             radio: s.radio, stats: stats, epochMicros: wallClock(), firmware: settings.firmware))
        connection.client.publish(topic: root + "/status", payload: out, qos: .atMostOnce, retain: true, now: now)
        connection.flush(now: now)
    }

    /// Asks the radio for its stats; the status follows with them (or with the last ones, or none,
    /// if the radio cannot say).
    private func requestStats(now: UInt64) {
        nextStatusAt = now + settings.statusIntervalMS
        guard !statsPending else { return }
        statsPending = true
        let line = Array(#"{"op":"stats","id":1}"#.utf8)
        guard case .success(let req) = line.withUnsafeBytes({ DaemonRequest.parse(line: $0) }) else { statsPending = false; return }
        if let r = execute(req, clientIndex) { answer(r, now: now) }
    }

    public func answer(_ r: DaemonResponse, now: UInt64) {
        if (3...5).contains(r.id) { return neighboursAnswer(r, now: now) }
        if r.id == 2, let p = pendingSign {
            pendingSign = nil
            var sig: String? = nil
            if case .success(let fields) = r.result {
                sig = fields.first(where: { $0.0 == "signature" })?.1.string
                    ?? fields.first(where: { $0.0 == "result" })?.1["signature"]?.string
            } else if case .failure(let e) = r.result {
                // Another signing, or no radio for now: asked again soon, without connecting meanwhile.
                if e.kind == .busy || e.kind == .link {
                    tokenPending = false
                    tokenRetryAt = now + (e.kind == .busy ? 1_000 : 5_000)
                    return
                }
                log("mqtt-observer: signing the broker token on the radio: \(e.message)")
            }
            return signed(p.input, sig.flatMap { HexCodec.decode($0) }, renewAt: p.renewAt, key: p.key)
        }
        statsPending = false
        if case .success(let fields) = r.result, let flat = ObserverFormat.flatStats(fields) { stats = flat }
        publishStatus(now: now)
    }

    /// The next time this observer wants to run, after its connection's own timers.
    public func tick(now: UInt64) -> UInt64? {
        if settings.signedByRadio, radioSelf != nil, !tokenPending, now >= tokenRetryAt {
            if token == nil || wallClock() / 1_000_000 >= token!.renewAt { requestToken(now: now) }
        }
        let retry: UInt64? = settings.signedByRadio && token == nil && !tokenPending && radioSelf != nil ? tokenRetryAt : nil
        guard let connection else { return retry }
        let next = connection.tick(now: now)
        guard connection.isUp else { return [next, retry].compactMap { $0 }.min() }
        if now >= nextStatusAt { requestStats(now: now) }
        neighboursStep(now: now)
        let nb: UInt64? = settings.neighborsIntervalS == nil || nbWaiting ? nil : nbRunning ? nbQueryAt : nbNextAt
        return [next, nextStatusAt, retry, nb].compactMap { $0 }.min()
    }

    public var statusFields: JSON {
        .obj(("broker", .string(settings.connection.url.description)), ("topic", root.map { .string($0) } ?? .null),
             ("connected", .bool(connection?.isUp ?? false)), ("published", .int(Int64(published))),
             ("queued", .int(Int64(connection?.client.queuedCount ?? 0))), ("dropped", .int(Int64(connection?.client.dropped ?? 0))))
    }

    /// A clean stop: `offline` (retained), then DISCONNECT.
    public func stop(now: UInt64) {
        guard let connection else { return }
        if connection.isUp, let s = radioSelf, let root {
            let out = ObserverFormat.dumps(ObserverFormat.status("offline", origin: s.name, originId: s.publicKey, device: device,
                                                                 radio: s.radio, stats: nil, epochMicros: wallClock(), firmware: settings.firmware))
            connection.client.publish(topic: root + "/status", payload: out, qos: .atMostOnce, retain: true, now: now)
        }
        connection.close(now: now)
    }
}

/// A packet uploader is a part of the daemon's poll loop: its broker connection, once the radio is
/// known (`tick` is its own: it also starts and paces the connection).
extension MQTTObserver: PollPart {
    public func pollDescriptors(into fds: inout [pollfd]) { connection?.pollDescriptors(into: &fds) }
    public func handle(_ p: pollfd, now: UInt64) -> Bool { connection?.handle(p, now: now) ?? false }
}
