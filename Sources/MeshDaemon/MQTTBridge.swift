import Glibc
import MeshCompanion
import MeshMQTT
import MeshNet
import MeshOps
import MeshStore

/// `--mqtt URL`: the chat bridge to one broker.
///
/// - Received messages go out at QoS 1 from the store, in id order, to
///   `PREFIX/message/direct/{12 hex of the sender's key}`, `PREFIX/message/channel/{index}` and
///   `PREFIX/message/room/{12 hex}`. A cursor in the radio's store directory (`mqtt/<broker>/cursor`)
///   records the highest id below which every message was acknowledged by the broker (PUBACK); it
///   is written durably after each batch of acknowledgements. A broker away for an hour, or a
///   killed daemon, resumes from it: every message arrives at least once, each with its store `id`
///   for deduplication.
/// - Events: `PREFIX/advert` (advert, new_advert), `PREFIX/delivery` (outbox states), as the API's
///   event objects; `PREFIX/status` retained: `online`, and `offline` as the will and on a clean stop.
/// - Commands: any API op published to `PREFIX/command/{op}` (a JSON object of its arguments, or
///   nothing), answered on `PREFIX/command/{op}/result` with the request's `id`. A command the broker
///   delivers again (DUP) after one was already taken is not run twice.
final class MQTTBridge {
    /// API client ids for commands from MQTT (the daemon answers them like socket clients).
    static let firstClientID = 1 << 29
    static let lastClientID = (1 << 30) - 1

    struct Settings {
        var connection: BrokerConnection.Settings
        var prefix = "meshcore"
        var user: String? = nil
        var password: [UInt8]? = nil
        var clientId: String? = nil
        /// The operation classes commands from this broker may use (never `secret`).
        var allowed = AllowedClasses.mqttDefault
    }

    let settings: Settings
    let connection: BrokerConnection
    var log: (String) -> Void = { _ in } {
        didSet { connection.log = log }
    }
    /// Runs an API request for a command; returns the answer now, or nil if it comes later through `answer`.
    var execute: (DaemonRequest, Int) -> DaemonResponse? = { r, _ in DaemonResponse(id: r.id, error: DaemonError(.unsupported, "no handler")) }

    private weak var store: RadioStore? = nil
    private var stateDir: String? = nil
    private(set) var cursor: UInt64 = 0
    private var savedCursor: UInt64 = 0
    /// The highest store id handed to the MQTT session.
    private var handedUpTo: UInt64 = 0
    /// Store ids handed and not yet known acknowledged, ascending, with their packet ids.
    private var handed: [(id: UInt64, packet: UInt16, acked: Bool)] = []
    private var handedHead = 0
    private(set) var published = 0
    /// Commands waiting for their answer: virtual client id -> (op, request id).
    private var pendingCommands: [Int: (op: String, id: Int64)] = [:]
    private var nextClient = MQTTBridge.firstClientID
    /// Recently taken commands (topic + payload), to recognise a redelivery.
    private var recentCommands: [UInt64] = []
    /// When a message was stored (monotonic ms) for `stored_to_published_ms`.
    private var storedAt: [UInt64: UInt64] = [:]
    /// The last (up to 1,024) delays from "stored" to the broker's PUBACK, in ms; `status` shows their median.
    private(set) var storedToPublished: [UInt32] = []

    init(settings: Settings, defaultClientId: String) {
        self.settings = settings
        var connect = MQTTConnect(clientId: settings.clientId ?? defaultClientId, username: settings.user ?? settings.connection.url.user,
                                  password: settings.password, keepAliveS: 60, cleanSession: true,
                                  will: MQTTWill(topic: settings.prefix + "/status", payload: Array("offline".utf8), qos: .atLeastOnce, retain: true))
        if connect.username == nil { connect.password = nil }  // MQTT 3.1.1: no password without a user name
        var options = MQTTClient.Options(connect: connect)
        options.maxInflight = 32
        connection = BrokerConnection(name: "mqtt", settings: settings.connection, options: options)
        connection.onEvent = { [unowned self] e, now in self.event(e, now: now) }
        connection.client.subscribe([(settings.prefix + "/command/+", .atLeastOnce)], now: 0)
    }

    var prefix: String { settings.prefix }

    // MARK: store

    /// The radio's store is open (or another radio's store replaced it): the cursor is that store's.
    func attach(store s: RadioStore) {
        if s === store { return }
        store = s
        let dir = s.directory + "/mqtt/" + Self.slug(settings.connection.url, prefix: settings.prefix)
        stateDir = dir
        cursor = 0
        if let text = StateFile.readString(dir + "/cursor"), let v = UInt64(text.filter { !$0.isWhitespace }) { cursor = v }
        savedCursor = cursor
        handedUpTo = cursor
        handed.removeAll()
        handedHead = 0
        log("mqtt: \(settings.connection.url): messages published up to id \(cursor); \(s.nextMessageId > cursor + 1 ? "continuing from there" : "nothing new")")
    }

    /// A file-name-safe key for one broker and prefix.
    static func slug(_ url: BrokerURL, prefix: String) -> String {
        let raw = "\(url.host)-\(url.port)-\(prefix)"
        return String(raw.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
    }

    /// A message was stored: publish it (and anything before it not yet handed) if the session can take it.
    func messageStored(_ id: UInt64, now: UInt64) {
        if storedAt.count < 4096 { storedAt[id] = now }
        pump(now: now)
    }

    /// Hands messages after `handedUpTo` to the MQTT session while its window has room.
    func pump(now: UInt64) {
        guard let store, connection.isUp else { return }
        let client = connection.client
        var handedAny = false
        while client.queuedCount == 0 {
            let room = client.options.maxInflight - client.inflightCount
            if room <= 0 { break }
            guard let batch = try? store.messages(after: handedUpTo, limit: room, incomingOnly: true), !batch.isEmpty else { break }
            for m in batch {
                let packet = client.publish(topic: topic(for: m), payload: payload(for: m, store: store), qos: .atLeastOnce, now: now)
                handed.append((m.id, packet, false))
                handedUpTo = m.id
                handedAny = true
            }
            if batch.count < room { break }
        }
        if handedAny { connection.flush(now: now) }
    }

    func topic(for m: StoredMessage) -> String {
        switch m.kind {
        case .channel: return "\(prefix)/message/channel/\(m.channelIndex)"
        case .direct: return "\(prefix)/message/direct/\(m.peer.description)"
        case .room: return "\(prefix)/message/room/\(m.peer.description)"
        }
    }

    func payload(for m: StoredMessage, store: RadioStore) -> [UInt8] {
        var pairs: [(String, JSON)] = [("event", .string("message"))]
        if case .object(let fields) = MessageJSON.message(m, store: store) { pairs += fields }
        var out: [UInt8] = []
        JSON.object(pairs).write(into: &out)
        return out
    }

    private func acknowledged(_ packet: UInt16, now: UInt64) {
        guard let i = handed[handedHead...].firstIndex(where: { $0.packet == packet && !$0.acked }) else { return }
        handed[i].acked = true
        published += 1
        if let t = storedAt.removeValue(forKey: handed[i].id) {
            if storedToPublished.count >= 1024 { storedToPublished.removeFirst(512) }
            storedToPublished.append(UInt32(clamping: now - t))
        }
        while handedHead < handed.count && handed[handedHead].acked {
            cursor = handed[handedHead].id
            handedHead += 1
        }
        if handedHead == handed.count { handed.removeAll(keepingCapacity: true); handedHead = 0 }
    }

    /// Writes the cursor if it moved.
    func saveCursor() {
        guard cursor != savedCursor, let dir = stateDir else { return }
        do throws(SystemError) {
            if let slash = dir.lastIndex(of: "/") { try UnixSocket.makeDirectory(String(dir[..<slash])) }
            try UnixSocket.makeDirectory(dir)
            try StateFile.write(dir + "/cursor", "\(cursor)\n")
            savedCursor = cursor
        } catch {
            log("mqtt: could not save the publish cursor: \(error)")
        }
    }

    // MARK: events

    /// An API event (advert, delivery) to forward.
    func apiEvent(_ event: JSON, now: UInt64) {
        guard let kind = event["event"]?.string else { return }
        let topic: String
        switch kind {
        case "advert", "new_advert": topic = prefix + "/advert"
        case "delivery": topic = prefix + "/delivery"
        default: return
        }
        var out: [UInt8] = []
        event.write(into: &out)
        connection.client.publish(topic: topic, payload: out, qos: .atLeastOnce, now: now)
        connection.flush(now: now)
    }

    private func event(_ e: MQTTClient.Event, now: UInt64) {
        switch e {
        case .connected:
            connection.client.publish(topic: prefix + "/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true, now: now)
            pump(now: now)
        case .acknowledged(let packet):
            acknowledged(packet, now: now)
            saveCursor()
            pump(now: now)
        case .message(let m):
            command(m, now: now)
        case .subscribed(_, let granted):
            if granted.contains(0x80) { log("mqtt: \(settings.connection.url): the broker refused the subscription to \(prefix)/command/+") }
        }
    }

    // MARK: commands

    private func command(_ m: MQTTPublish, now: UInt64) {
        let base = prefix + "/command/"
        guard m.topic.hasPrefix(base) else { return }
        let op = String(m.topic.dropFirst(base.count))
        guard !op.isEmpty, !op.contains("/") else { return }
        // A redelivered command (the broker did not see our PUBACK) is not run twice.
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in m.topic.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        for b in m.payload { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        if m.dup && recentCommands.contains(h) { return }
        recentCommands.append(h)
        if recentCommands.count > 256 { recentCommands.removeFirst(128) }

        var fields: [(String, JSON)] = []
        var id: Int64 = 0
        let text = m.payload.isEmpty ? "{}" : String(decoding: m.payload, as: UTF8.self)
        switch Result(catching: { () throws(JSONError) -> JSON in try JSONParser.parse(text) }) {
        case .success(.object(let pairs)):
            fields = pairs.filter { $0.0 != "op" }
            id = pairs.first { $0.0 == "id" }?.1.int ?? 0
        case .success:
            result(op, DaemonResponse(id: 0, error: DaemonError(.usage, "a command's payload must be a JSON object of its arguments (or empty)")), now: now)
            return
        case .failure(let e):
            result(op, DaemonResponse(id: 0, error: DaemonError(.usage, "the command's payload is not valid JSON: \(e)")), now: now)
            return
        }
        if op == "subscribe" || op == "tunnel" {
            result(op, DaemonResponse(id: id, error: DaemonError(.unsupported, "\(op) is for socket clients; over MQTT, events arrive on \(prefix)/advert, \(prefix)/delivery and \(prefix)/message/#")), now: now)
            return
        }
        var line: [UInt8] = []
        JSON.object([("op", .string(op))] + fields).write(into: &line)
        let parsed = line.withUnsafeBytes { DaemonRequest.parse(line: $0) }
        switch parsed {
        case .failure(let f):
            result(op, DaemonResponse(id: f.id, error: f.error), now: now)
        case .success(let req):
            let client = nextClient
            nextClient = nextClient >= Self.lastClientID ? Self.firstClientID : nextClient + 1
            pendingCommands[client] = (op, req.id)
            if let r = execute(req, client) { answer(r, client: client, now: now) }
        }
    }

    /// Whether an API client id is one of this bridge's commands.
    func owns(client: Int) -> Bool { pendingCommands[client] != nil }

    /// The answer to a command (now or later).
    func answer(_ r: DaemonResponse, client: Int, now: UInt64) {
        guard let p = pendingCommands.removeValue(forKey: client) else { return }
        result(p.op, r, now: now)
    }

    private func result(_ op: String, _ r: DaemonResponse, now: UInt64) {
        var out: [UInt8] = []
        r.json.write(into: &out)
        connection.client.publish(topic: "\(prefix)/command/\(op)/result", payload: out, qos: .atLeastOnce, now: now)
        connection.flush(now: now)
    }

    // MARK: status and shutdown

    var statusFields: JSON {
        .obj(("broker", .string(settings.connection.url.description)), ("connected", .bool(connection.isUp)),
             ("cursor", .int(Int64(cursor))), ("published", .int(Int64(published))),
             ("in_flight", .int(Int64(connection.client.inflightCount))), ("queued", .int(Int64(connection.client.queuedCount))),
             ("dropped", .int(Int64(connection.client.dropped))),
             ("stored_to_published_ms", storedToPublished.isEmpty ? .null : .int(Int64(storedToPublished.sorted()[storedToPublished.count / 2]))))
    }

    /// A clean stop: `offline` (retained), then DISCONNECT.
    func stop(now: UInt64) {
        saveCursor()
        if connection.isUp {
            connection.client.publish(topic: prefix + "/status", payload: Array("offline".utf8), qos: .atMostOnce, retain: true, now: now)
        }
        connection.close(now: now)
    }
}
