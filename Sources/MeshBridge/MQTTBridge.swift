import MeshLink
import Glibc
import MeshCompanion
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
/// - Commands: an API op published to `PREFIX/command/{op}` (every radio bridged with this prefix)
///   or `PREFIX/radio/{12 hex of the radio's key}/command/{op}` (this radio only), as a JSON object
///   of its arguments with an integer `id`, answered on the request's topic + `/result` only, with
///   that `id` and the radio's 12 hex. Commands may use the bridge's operation classes (`read`,
///   `message`, and what `--mqtt-allow` adds; never `secret`). A retained command is never run
///   (it would run again at every start; logged once per topic); one without an integer `id` is
///   answered with an error (`"id": null`) and logged, not run. Results never carry secrets:
///   channel secrets, the BLE PIN, keys and passwords are left out (`withholdingSecrets`), and
///   `channel_uri`, which is the channel's secret, is refused. A command the broker delivers again
///   (DUP) after one was already taken is not run twice.
/// - The connection starts once the radio's key is known (`radioKnown`): the client id is
///   `pocketmesh-bridge-{12 hex}` (`-N` after it with several bridges), unique per radio and role,
///   so two hosts with the same device path or `--name` do not throw each other off a broker.
public final class MQTTBridge {
    /// API client ids for commands from MQTT (the daemon answers them like socket clients).
    public static let firstClientID = 1 << 29
    public static let lastClientID = (1 << 30) - 1

    public struct Settings {
        public var connection: BrokerConnection.Settings
        public var prefix = "meshcore"
        public var user: String? = nil
        public var password: [UInt8]? = nil
        public var clientId: String? = nil
        /// The operation classes commands from this broker may use (never `secret`); none: the
        /// bridge does not subscribe to a command topic at all.
        public var allowed = AllowedClasses.mqttDefault
        /// Commands taken per second on average (`commandBurst` at once); the rest are dropped.
        public var commandRate: UInt64 = 10
        public var commandBurst: UInt64 = 20
        /// Commands waiting for their answer at once; further ones are dropped.
        public var maxPendingCommands = 8
        /// PUBLISHes (results, events) waiting for the broker's window: while this many wait, new
        /// commands and events are dropped (stored messages do not wait here: `pump`).
        public var maxQueued = 64
        public init(connection: BrokerConnection.Settings) { self.connection = connection }
    }

    public let settings: Settings
    public let connection: BrokerConnection
    public var log: (String) -> Void = { _ in } {
        didSet { connection.log = log }
    }
    /// Runs an API request for a command; returns the answer now, or nil if it comes later through `answer`.
    /// The daemon, which runs the commands that come from the broker.
    public weak var host: BridgeHost? = nil
    func execute(_ r: DaemonRequest, _ client: Int) -> DaemonResponse? {
        guard let host else { return DaemonResponse(id: r.id, error: DaemonError(.unsupported, "no handler")) }
        return host.bridgeExecute(r, client: .bridge(ObjectIdentifier(self), client))
    }

    private weak var store: RadioStore? = nil
    private var stateDir: String? = nil
    public private(set) var cursor: UInt64 = 0
    private var savedCursor: UInt64 = 0
    /// The highest store id handed to the MQTT session.
    private var handedUpTo: UInt64 = 0
    /// Store ids handed and not yet known acknowledged, ascending, with their packet ids.
    private var handed: [(id: UInt64, packet: UInt16, acked: Bool)] = []
    private var handedHead = 0
    public private(set) var published = 0
    /// Commands waiting for their answer: virtual client id -> (request topic, request id, op).
    private var pendingCommands: [Int: (topic: String, id: Int64, op: String)] = [:]
    /// Commands run (handed to the daemon or answered here), and dropped for the bounds; events
    /// (adverts, deliveries) dropped because the broker's window and queue were full.
    public private(set) var commandsRun = 0
    public private(set) var commandsDropped = 0
    public private(set) var eventsDropped = 0
    /// The command rate's credit, in milliseconds (a command costs `1000 / commandRate`).
    private var commandCredit: UInt64 = 0
    private var commandCreditAt: UInt64 = 0
    /// When dropped commands were last logged, and how many since.
    private var dropLoggedAt: UInt64? = nil
    private var droppedSinceLog = 0
    /// Commands are off (`--mqtt-allow none`): no subscription.
    public var commandsOff: Bool { settings.allowed.classes.isEmpty }
    /// The radio's key, 12 hex digits, once known: its command topic and the client id name it.
    public private(set) var radioKey: String? = nil
    /// Appended to the default client id: "" with one bridge, "-N" with several.
    public let clientIdSuffix: String
    /// Topics of retained commands already logged (at most `maxRetainedLogged`).
    private var retainedLogged: Set<String> = []
    private static let maxRetainedLogged = 32
    public private(set) var retainedIgnored = 0
    private var nextClient = MQTTBridge.firstClientID
    /// Recently taken commands (topic + payload), to recognise a redelivery.
    private var recentCommands: [UInt64] = []
    /// When a message was stored (monotonic ms) for `stored_to_published_ms`.
    private var storedAt: [UInt64: UInt64] = [:]
    /// The last (up to 1,024) delays from "stored" to the broker's PUBACK, in ms; `status` shows their median.
    public private(set) var storedToPublished: [UInt32] = []

    /// `index`: the bridge's number when the daemon has several (1...), nil with one.
    public init(settings: Settings, index: Int? = nil) {
        self.settings = settings
        clientIdSuffix = index.map { "-\($0)" } ?? ""
        var connect = MQTTConnect(clientId: settings.clientId ?? "pocketmesh-bridge", username: settings.user ?? settings.connection.url.user,
                                  password: settings.password, keepAliveS: 60, cleanSession: true,
                                  will: MQTTWill(topic: settings.prefix + "/status", payload: Array("offline".utf8), qos: .atLeastOnce, retain: true))
        if connect.username == nil { connect.password = nil }  // MQTT 3.1.1: no password without a user name
        var options = MQTTClient.Options(connect: connect)
        options.maxInflight = 32
        // Half the window is the stored messages' own: results and events never take it all.
        options.reservedInflight = 16
        connection = BrokerConnection(name: "mqtt", settings: settings.connection, options: options)
        connection.onEvent = { [unowned self] e, now in self.event(e, now: now) }
        commandCredit = commandCost * settings.commandBurst
    }

    public var prefix: String { settings.prefix }
    public var clientId: String { connection.client.options.connect.clientId }
    /// This radio's own command topics: `PREFIX/radio/{12 hex}/command/`.
    public var radioCommandBase: String? { radioKey.map { "\(prefix)/radio/\($0)/command/" } }

    /// The radio's public key is known (remembered from an earlier run, or from the handshake): the
    /// client id and the radio's command topic follow from it. Connects the first time; connects
    /// again under the new id if another radio took this one's place.
    public func radioKnown(publicKey: [UInt8], now: UInt64) {
        let short = String(HexCodec.encode(Array(publicKey)).prefix(12))
        guard short != radioKey else { return }
        let before = radioKey
        radioKey = short
        let id = settings.clientId.map { $0 + clientIdSuffix } ?? "pocketmesh-bridge-\(short)\(clientIdSuffix)"
        connection.client.options.connect.clientId = id
        // No class allowed: no command topic is subscribed to at all (nothing arrives to refuse).
        connection.client.replaceSubscriptions(commandsOff ? [] : [(prefix + "/command/+", .atLeastOnce), (radioCommandBase! + "+", .atLeastOnce)])
        if connection.isStarted {
            log("mqtt: \(settings.connection.url): the radio is now \(short) (was \(before ?? "unknown")): connecting again as \(id)")
            connection.close(now: now)
        } else if commandsOff {
            log("mqtt: \(settings.connection.url): client id \(id); commands are off (--mqtt-allow none): no command topic is subscribed to")
        } else {
            log("mqtt: \(settings.connection.url): client id \(id); commands on \(prefix)/command/+ and \(radioCommandBase!)+")
        }
        connection.begin(now: now)
    }

    // MARK: store

    /// The radio's store is open (or another radio's store replaced it): the cursor is that store's.
    public func attach(store s: RadioStore) {
        if s === store { return }
        store = s
        let dir = s.directory + "/mqtt/" + Self.slug(settings.connection.url, prefix: settings.prefix)
        stateDir = dir
        cursor = 0
        // Checked against the store's ids when the store opened (Daemon.deliveryFloor).
        if let v = Self.readCursor(dir + "/cursor") { cursor = v }
        savedCursor = cursor
        handedUpTo = cursor
        handed.removeAll()
        handedHead = 0
        log("mqtt: \(settings.connection.url): messages published up to id \(cursor); \(s.nextMessageId > cursor + 1 ? "continuing from there" : "nothing new")")
    }

    /// A file-name-safe key for one broker and prefix.
    public static func slug(_ url: BrokerURL, prefix: String) -> String {
        let raw = "\(url.host)-\(url.port)-\(prefix)"
        return String(raw.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
    }

    /// A message was stored: publish it (and anything before it not yet handed) if the session can take it.
    public func messageStored(_ id: UInt64, now: UInt64) {
        if storedAt.count < 4096 { storedAt[id] = now }
        pump(now: now)
    }

    /// Hands messages after `handedUpTo` to the MQTT session while its window has room: ahead of
    /// whatever else waits there (results, events), so that nothing arriving on the command topics
    /// holds the stored messages back.
    public func pump(now: UInt64) {
        guard let store, connection.isUp else { return }
        let client = connection.client
        var handedAny = false
        fill: while true {
            let room = client.options.maxInflight - client.inflightCount
            if room <= 0 { break }
            guard let batch = try? store.messages(after: handedUpTo, limit: room, incomingOnly: true), !batch.isEmpty else { break }
            for m in batch {
                guard let packet = client.publishAhead(topic: topic(for: m), payload: payload(for: m, store: store), now: now) else { break fill }
                handed.append((m.id, packet, false))
                handedUpTo = m.id
                handedAny = true
            }
            if batch.count < room { break }
        }
        if handedAny { connection.flush(now: now) }
    }

    public func topic(for m: StoredMessage) -> String {
        switch m.kind {
        case .channel: return "\(prefix)/message/channel/\(m.channelIndex)"
        case .direct: return "\(prefix)/message/direct/\(m.peer.description)"
        case .room: return "\(prefix)/message/room/\(m.peer.description)"
        }
    }

    public func payload(for m: StoredMessage, store: RadioStore) -> [UInt8] {
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
    public func saveCursor() {
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
    public func apiEvent(_ event: JSON, now: UInt64) {
        guard let kind = event["event"]?.string else { return }
        let topic: String
        switch kind {
        case "advert", "new_advert": topic = prefix + "/advert"
        case "delivery": topic = prefix + "/delivery"
        default: return
        }
        // Events wait for the broker's window behind the results; past the bound they are dropped
        // (and counted): a broker away for an hour, or a flood, does not fill the memory.
        guard connection.client.queuedCount < settings.maxQueued else {
            eventsDropped += 1
            return
        }
        var out: [UInt8] = []
        event.write(into: &out)
        connection.client.publish(topic: topic, payload: out, qos: .atLeastOnce, now: now)
        connection.flush(now: now)
    }

    public func event(_ e: MQTTClient.Event, now: UInt64) {
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
            if granted.contains(0x80) { log("mqtt: \(settings.connection.url): the broker refused a subscription to \(prefix)/command/+ or \(radioCommandBase ?? prefix + "/radio/...")+") }
        case .oversized:
            break  // dropped and counted by the connection
        }
    }

    // MARK: commands

    /// What a command publication asks for, read without the daemon: the op and its request, or
    /// the error its result carries (`id` nil when the payload gave none). Pure, for the fuzz target.
    public enum Parsed {
        case run(op: String, request: DaemonRequest)
        case refuse(id: Int64?, DaemonError, log: String)
    }

    /// Reads one command: `op` from its topic, its payload (a JSON object of the op's arguments
    /// with an integer `id`). Ops for socket clients and ops whose answer is nothing but a secret
    /// are refused here; the operation's class is the daemon's to check (`bridgeExecute`).
    public static func parseCommand(op: String, payload: [UInt8], prefix: String, resultTopic: String = "its topic + /result") -> Parsed {
        var fields: [(String, JSON)] = []
        let text = payload.isEmpty ? "{}" : String(decoding: payload, as: UTF8.self)
        switch Result(catching: { () throws(JSONError) -> JSON in try JSONParser.parse(text) }) {
        case .success(.object(let pairs)):
            fields = pairs.filter { $0.0 != "op" }
        case .success:
            return .refuse(id: nil, DaemonError(.usage, "a command's payload must be a JSON object of its arguments with an integer \"id\", e.g. {\"id\":1}"),
                           log: "the payload is not a JSON object")
        case .failure(let e):
            return .refuse(id: nil, DaemonError(.usage, "the command's payload is not valid JSON: \(e)"), log: "the payload is not valid JSON")
        }
        // The id is what matches a result to its request; without one, nothing is run.
        guard let id = fields.first(where: { $0.0 == "id" })?.1.int else {
            return .refuse(id: nil, DaemonError(.usage, "a command needs an integer \"id\" (e.g. {\"id\":1}) to match its result on \(resultTopic); it was not run"),
                           log: "no integer \"id\"")
        }
        if op == "subscribe" || op == "tunnel" {
            return .refuse(id: id, DaemonError(.unsupported, "\(op) is for socket clients; over MQTT, events arrive on \(prefix)/advert, \(prefix)/delivery and \(prefix)/message/#"),
                           log: "\(op) is for socket clients")
        }
        if Secrets.answersWithSecret(op) {
            // Its answer is a secret (channel_uri: the channel's), which no result over MQTT carries.
            return .refuse(id: id, DaemonError(.denied, "\(op) answers with a secret, which is never sent over MQTT; use the API socket or the command line"),
                           log: "\(op) (its answer is a secret)")
        }
        var line: [UInt8] = []
        JSON.object([("op", .string(op))] + fields).write(into: &line)
        switch line.withUnsafeBytes({ DaemonRequest.parse(line: $0) }) {
        case .failure(let f): return .refuse(id: id, f.error, log: "")
        case .success(let req): return .run(op: op, request: req)
        }
    }

    /// Takes one command if the bounds allow it: the rate (`commandRate`, bursts of
    /// `commandBurst`), the answers awaited (`maxPendingCommands`) and the PUBLISHes waiting for the
    /// broker (`maxQueued`). A command over them is dropped before its payload is even read, gets
    /// no result (publishing one is what a flood must not cost), and is counted; the log says so
    /// once, then once a minute with the count since.
    func admit(now: UInt64) -> Bool {
        if now > commandCreditAt {
            commandCredit = min(commandCost * settings.commandBurst, commandCredit + (now - commandCreditAt))
        }
        commandCreditAt = now
        let why: String?
        if commandCredit < commandCost {
            why = "more than \(settings.commandRate) a second (bursts of \(settings.commandBurst))"
        } else if pendingCommands.count >= settings.maxPendingCommands {
            why = "\(settings.maxPendingCommands) waiting for their answer"
        } else if connection.client.queuedCount >= settings.maxQueued {
            why = "\(settings.maxQueued) results and events waiting for the broker"
        } else {
            why = nil
        }
        guard let why else {
            commandCredit -= commandCost
            return true
        }
        commandsDropped += 1
        droppedSinceLog += 1
        if dropLoggedAt.map({ now >= $0 + 60_000 }) ?? true {
            log("mqtt: \(settings.connection.url): dropped \(droppedSinceLog) command(s): \(why); a dropped command gets no result"
                + " (\(commandsDropped) dropped so far, in status as commands_dropped)")
            dropLoggedAt = now
            droppedSinceLog = 0
        }
        return false
    }

    private var commandCost: UInt64 { 1000 / max(1, min(settings.commandRate, 1000)) }

    public func command(_ m: MQTTPublish, now: UInt64) {
        let shared = prefix + "/command/"
        let base: String
        if m.topic.hasPrefix(shared) {
            base = shared
        } else if let own = radioCommandBase, m.topic.hasPrefix(own) {
            base = own
        } else {
            return
        }
        let op = String(m.topic.dropFirst(base.count))
        guard !op.isEmpty, !op.contains("/"), !commandsOff else { return }
        let url = settings.connection.url
        // A retained command is one the broker keeps and hands to every new subscriber: run, it
        // would run again at every start of the daemon (a channel message sent each time).
        if m.retain {
            retainedIgnored += 1
            if retainedLogged.count < Self.maxRetainedLogged, retainedLogged.insert(m.topic).inserted {
                log("mqtt: \(url): ignored the retained command on \(BrokerConnection.quoted(m.topic)): retained commands are never run"
                    + " (clear it with an empty retained message)" + (retainedLogged.count == Self.maxRetainedLogged ? "; further topics are not logged" : ""))
            }
            return
        }
        // A redelivered command (the broker did not see our PUBACK) is not run twice.
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in m.topic.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        for b in m.payload { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        if m.dup && recentCommands.contains(h) { return }
        guard admit(now: now) else { return }
        recentCommands.append(h)
        if recentCommands.count > 256 { recentCommands.removeFirst(128) }
        commandsRun += 1

        let resultTopic = m.topic + "/result"
        switch Self.parseCommand(op: op, payload: m.payload, prefix: prefix, resultTopic: resultTopic) {
        case .refuse(let id, let e, let why):
            if !why.isEmpty { log("mqtt: \(url): not run: \(BrokerConnection.quoted(m.topic)): \(why)") }
            result(resultTopic, id: id, op: op, .failure(e), now: now)
        case .run(let op, let req):
            let client = nextClient
            nextClient = nextClient >= Self.lastClientID ? Self.firstClientID : nextClient + 1
            pendingCommands[client] = (resultTopic, req.id, op)
            if let r = execute(req, client) { answer(r, client: client, now: now) }
        }
    }

    /// Whether an API client id is one of this bridge's commands.
    public func owns(client: Int) -> Bool { pendingCommands[client] != nil }

    /// The answer to a command (now or later).
    public func answer(_ r: DaemonResponse, client: Int, now: UInt64) {
        guard let p = pendingCommands.removeValue(forKey: client) else { return }
        result(p.topic, id: p.id, op: p.op, r.result, now: now)
    }

    /// Publishes a result on the request's result topic (`resultPayload`).
    private func result(_ topic: String, id: Int64?, op: String, _ r: Result<[(String, JSON)], DaemonError>, now: UInt64) {
        connection.client.publish(topic: topic, payload: Self.resultPayload(id: id, op: op, radio: radioKey, r), qos: .atLeastOnce, now: now)
        connection.flush(now: now)
    }

    /// A result as published: its id (null when it had none), the radio's key, and the answer
    /// without secrets (`withholdingSecrets`).
    public static func resultPayload(id: Int64?, op: String, radio: String?, _ r: Result<[(String, JSON)], DaemonError>) -> [UInt8] {
        var pairs: [(String, JSON)] = [("id", id.map { .int($0) } ?? .null)]
        switch r {
        case .success(let fields):
            pairs.append(("ok", .bool(true)))
            if let radio { pairs.append(("radio", .string(radio))) }
            pairs += fields.filter { $0.0 != "id" && $0.0 != "ok" && $0.0 != "radio" }
        case .failure(let e):
            pairs.append(("ok", .bool(false)))
            if let radio { pairs.append(("radio", .string(radio))) }
            pairs.append(("error", e.json))
        }
        var out: [UInt8] = []
        withholdingSecrets(.object(pairs), op: op).write(into: &out)
        return out
    }

    /// `json` without its secret fields (`Secrets`: channel secrets, the BLE PIN, keys, passwords,
    /// signatures, a channel's link), at any depth, and with the secret bytes of a reply frame
    /// given as hex (`raw`'s reply) zeroed. An object nested deeper than 32 levels is cut off.
    public static func withholdingSecrets(_ json: JSON, op: String? = nil, depth: Int = 0) -> JSON {
        switch json {
        case .object(let pairs):
            guard depth < 32 else { return .null }
            return .object(pairs.filter { !Secrets.isSecretField($0.0, op: op) }.map { k, v in
                if Secrets.isFrameField(k, op: op), case .string(let hex) = v, let frame = HexCodec.decode(hex) {
                    return (k, .string(HexCodec.encode(Secrets.redacted(reply: frame))))
                }
                return (k, withholdingSecrets(v, op: op, depth: depth + 1))
            })
        case .array(let items):
            guard depth < 32 else { return .null }
            return .array(items.map { withholdingSecrets($0, op: op, depth: depth + 1) })
        default:
            return json
        }
    }

    // MARK: status and shutdown

    public var statusFields: JSON {
        .obj(("broker", .string(settings.connection.url.description)), ("connected", .bool(connection.isUp)),
             ("cursor", .int(Int64(cursor))), ("published", .int(Int64(published))),
             ("in_flight", .int(Int64(connection.client.inflightCount))), ("queued", .int(Int64(connection.client.queuedCount))),
             ("dropped", .int(Int64(connection.client.dropped))), ("oversized_dropped", .int(Int64(connection.oversized))),
             ("retained_commands_ignored", .int(Int64(retainedIgnored))), ("client_id", .string(clientId)),
             ("commands", .string(commandsOff ? "off" : settings.allowed.description)),
             ("commands_run", .int(Int64(commandsRun))), ("commands_dropped", .int(Int64(commandsDropped))),
             ("events_dropped", .int(Int64(eventsDropped))),
             ("stored_to_published_ms", storedToPublished.isEmpty ? .null : .int(Int64(storedToPublished.sorted()[storedToPublished.count / 2]))))
    }

    /// A clean stop: `offline` (retained), then DISCONNECT.
    public func stop(now: UInt64) {
        saveCursor()
        if connection.isUp {
            connection.client.publish(topic: prefix + "/status", payload: Array("offline".utf8), qos: .atMostOnce, retain: true, now: now)
        }
        connection.close(now: now)
    }
}

/// A chat bridge is a part of the daemon's poll loop: its broker connection.
extension MQTTBridge: PollPart {
    public func pollDescriptors(into fds: inout [pollfd]) { connection.pollDescriptors(into: &fds) }
    public func handle(_ p: pollfd, now: UInt64) -> Bool { connection.handle(p, now: now) }
    public func tick(now: UInt64) -> UInt64? { connection.tick(now: now) }
}

extension MQTTBridge {
    /// A bridge's publish cursor (`mqtt/<broker>/cursor`: the id up to which the broker has
    /// everything, in decimal), or nil if there is none or it does not parse.
    public static func readCursor(_ path: String) -> UInt64? {
        StateFile.readString(path).flatMap(cursorValue)
    }

    /// The id a cursor file's text holds (decimal, white space around it), or nil.
    public static func cursorValue(_ text: String) -> UInt64? {
        UInt64(text.filter { !$0.isWhitespace })
    }
}
