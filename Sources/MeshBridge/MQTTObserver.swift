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
/// user `v1_{PUBLIC KEY}` and a JWT signed with the node's key from a 0600 key file, made anew
/// for each connection.
public final class MQTTObserver {
    /// API client ids for the observer's own stats requests.
    public static let firstClientID = 1 << 30
    public static let lastClientID = firstClientID + 1023

    public struct Settings {
        public var connection: BrokerConnection.Settings
        public var iata: String
        public var user: String? = nil
        public var password: [UInt8]? = nil
        /// Signs the JWT password (user `v1_{KEY}`) when set.
        public var identity: LocalIdentity? = nil
        public var audience: String? = nil
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

    private var radioSelf: RadioSelf? = nil
    private var device: RadioDevice? = nil
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
        let keyChanged = radioSelf?.publicKey != s.publicKey
        radioSelf = s
        device = d
        guard keyChanged else { return }
        if let old = connection {
            log("mqtt-observer: another radio (\(s.publicKey.hex.prefix(12))): starting again under its key")
            old.close(now: now)
        }
        start(now: now)
    }

    private func start(now: UInt64) {
        guard let s = radioSelf, let root, let clientId else { return }
        let user: String?
        if settings.identity != nil { user = "v1_" + s.publicKey.hex.uppercased() } else { user = settings.user ?? settings.connection.url.user }
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
                let token = ObserverFormat.token(identity: identity, issuedAt: self.wallClock() / 1_000_000,
                                                 lifetimeS: self.settings.tokenLifetimeS, audience: self.settings.audience ?? self.settings.connection.url.host)
                connect.password = Array(token.utf8)
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
                                         radio: s.radio, epochMicros: wallClock())
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
                                                             radio: s.radio, stats: stats, epochMicros: wallClock()))
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
        statsPending = false
        if case .success(let fields) = r.result, let flat = ObserverFormat.flatStats(fields) { stats = flat }
        publishStatus(now: now)
    }

    /// The next time this observer wants to run, after its connection's own timers.
    public func tick(now: UInt64) -> UInt64? {
        guard let connection else { return nil }
        let next = connection.tick(now: now)
        guard connection.isUp else { return next }
        if now >= nextStatusAt { requestStats(now: now) }
        return min(next ?? nextStatusAt, nextStatusAt)
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
                                                                 radio: s.radio, stats: nil, epochMicros: wallClock()))
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
