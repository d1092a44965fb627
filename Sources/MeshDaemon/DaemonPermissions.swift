import MeshCompanion
import MeshLink
import MeshOps
import MeshDaemonClient
import MeshBridge
import MeshHub
import MeshNet
import MeshStore

/// The permission model applied at every door: each request's operation class (MeshOps'
/// `OperationClass`) against the classes its front end allows. Refusals get the front end's error
/// and one log line; every `config`, `admin` and `secret` operation that runs is logged with its
/// front end and client (never with its arguments, which may hold secrets).
extension DaemonOp {
    /// The class of a daemon-answered op, its row's (`OperationTable.daemonRow(api:)`); nil for
    /// `.operation`, whose class is its request's. (The tunnel is the API socket's own, mode 0600,
    /// every class; each frame it carries would be classed like a hub client's,
    /// `OperationClass(frame:)`: its row says read.)
    var operationClass: OperationClass? {
        self == .operation ? nil : OperationTable.daemonRow(api: rawValue)?.opClass
    }
}

extension DaemonRequest {
    /// The request's class; a command-line operation is parsed to find it (a bad request is the
    /// usage error it would be anyway).
    public func operationClass() throws(DaemonError) -> OperationClass {
        if let c = op.operationClass { return c }
        return try requestClass()
    }

    /// The class by the op's name alone, before its arguments are read (nil for an unknown name).
    var nameClass: OperationClass? { op.operationClass ?? Request.operationClass(apiOp: name) }

    func requestClass() throws(DaemonError) -> OperationClass {
        try Request.operationClass(apiOp: name, fields: fields)
    }
}

/// A door into the daemon, as the permission checks and the log name it.
struct FrontEnd {
    var name: String
    var allowed: AllowedClasses
    /// How to widen it, for the refusal's message.
    var widen: String
}

extension Daemon {
    /// The front end an API client id belongs to.
    func frontEnd(of client: Caller) -> FrontEnd {
        switch client {
        case .observer:
            // The observer's own status queries: internal, never a remote client's.
            return FrontEnd(name: "mqtt-observer", allowed: .everything, widen: "")
        case .bridge(let bridge, _):
            guard let b = mqtt.bridges.first(where: { ObjectIdentifier($0) == bridge }) else {
                return FrontEnd(name: "mqtt (gone)", allowed: AllowedClasses([]), widen: "")
            }
            return FrontEnd(name: "mqtt \(b.settings.connection.url) (\(b.prefix)/command)", allowed: b.settings.allowed,
                            widen: "--mqtt-allow")
        case .api(let id):
            // An API socket client: every class for root and the daemon's user, its group's for an
            // `--api-group` member (`APIServer.admit`).
            return FrontEnd(name: "api client \(id)" + (api.peer(id).map { " (uid \($0.uid))" } ?? ""),
                            allowed: api.allowed(id) ?? .everything, widen: "")
        case .web(let id):
            // A browser on a `--web` listener: its listener's `allow=`.
            return FrontEnd(name: requests.web?.name(id) ?? "web client \(id)", allowed: requests.web?.allowed(id) ?? AllowedClasses([]), widen: "")
        case .gone:
            return FrontEnd(name: "a client that has gone", allowed: AllowedClasses([]), widen: "")
        }
    }

    /// Checks a request against its front end: throws the refusal (and logs it once), logs what
    /// runs of class config, admin or secret.
    func authorize(_ req: DaemonRequest, _ client: Caller) throws(DaemonError) {
        let fe = frontEnd(of: client)
        let c: OperationClass
        do { c = try req.operationClass() } catch {
            // Arguments that do not parse: a door still refuses an op it does not allow by its
            // name alone, before saying what is wrong with the arguments.
            if let least = req.nameClass, !fe.allowed.allows(least) { try refuse(req, least, fe) }
            throw error
        }
        guard fe.allowed.allows(c) else { try refuse(req, c, fe) }
        if c >= .config { log("permission: \(fe.name): \(req.name) (\(c.rawValue))") }
    }

    func refuse(_ req: DaemonRequest, _ c: OperationClass, _ fe: FrontEnd) throws(DaemonError) -> Never {
        logRefusal(fe.name, what: req.name, "permission: \(fe.name): refused \(req.name) (\(c.rawValue); allowed: \(fe.allowed))")
            throw DaemonError(.denied, "\(req.name) is a \(c.rawValue) operation, which \(fe.name) does not allow (it allows \(fe.allowed))"
                                + (fe.widen.isEmpty || c == .secret && fe.widen == "--mqtt-allow" ? "." : "; \(fe.widen) \(c.rawValue) opens it."))
    }

    /// Checks a hub client's command frame; logs refusals and what runs of class config or above.
    func authorizeHub(_ client: Int, _ frame: UnsafeRawBufferPointer) -> Bool {
        guard let hub, let listener = hub.listener(of: client) else { return false }
        let c = OperationClass(frame: frame)
        let what = frame.first.map { CommandCode(rawValue: $0).map { "\($0)" } ?? "command \($0)" } ?? "an empty frame"
        let who = hubClientName(client)
        if let why = listener.refusal(frame) {
            hubPart.sessions[client]?.refused += 1
            logRefusal("hub client \(HubServer.number(client))", what: what, "permission: \(who): refused \(what): \(why)")
            return false
        }
        if c >= .config { log("permission: \(who): \(what) (\(c.rawValue))") }
        return true
    }

    /// Logs a refusal: the first `RefusalLog.perDoor` of a door one by one, and the first of each
    /// op or command, then at most one line a minute with how many more there were (a client
    /// sending refused requests as fast as it can must not fill the log).
    func logRefusal(_ door: String, what: String, _ line: String) {
        let now = monotonicMilliseconds()
        switch requests.refusalLog.note(door, what: what, now: now) {
        case .log: log(line)
        case .summary(let n): log("permission: \(door): \(n) more refusal(s) in the last minute, not logged one by one; the last: " + line)
        case .quiet: break
        }
    }

    func hubClientName(_ client: Int) -> String {
        let app = hubPart.sessions[client]?.app ?? ""
        return "hub client \(HubServer.number(client))" + (app.isEmpty ? "" : " (\(app))")
    }
}

/// What each door may queue in the outbox: a door is the local API (origin 0) or one MQTT bridge
/// (origin 1, 2, ...), as the outbox item records it. A `send` past a bound is refused with a
/// sentence that says which bound; what is queued stays (it survives restarts).
enum OutboxBounds {
    /// Items in the outbox at all.
    static let total = 256
    /// Items one MQTT bridge may have queued: anyone who can publish to its broker sends as the radio.
    static let perBridge = 16
    /// Items queued for one recipient by one door.
    static let perRecipient = 32
}

extension Daemon {
    /// Whether a client is one of a remote door's (an MQTT bridge's commands): what it is answered
    /// leaves out this host's file paths and other clients' addresses.
    func isRemoteDoor(_ client: Caller) -> Bool {
        if case .bridge = client { return true }
        return false
    }

    /// Whether `status` leaves out this host's paths and other clients' addresses for a client:
    /// an MQTT bridge's, and a browser's.
    func seesLocalDetails(_ client: Caller) -> Bool {
        if case .web = client { return false }
        return !isRemoteDoor(client)
    }

    /// The door number an outbox item records for a client: 0 for the API socket, 1... for the
    /// MQTT bridges in the order they were given.
    func outboxOrigin(of client: Caller) -> UInt8 {
        guard case .bridge(let bridge, _) = client, let i = mqtt.bridges.firstIndex(where: { ObjectIdentifier($0) == bridge }) else { return 0 }
        return UInt8(clamping: i + 1)
    }

    /// Refuses a `send` that would take the outbox past its bounds for this door (`OutboxBounds`).
    func checkOutboxRoom(_ store: RadioStore, origin: UInt8, to peer: KeyPrefix, door: String) throws(DaemonError) {
        let items = store.outbox
        guard items.count < OutboxBounds.total else {
            throw DaemonError(.busy, "send: the outbox holds \(items.count) messages, its limit; try again once some are delivered or given up (`pocketmesh outbox` lists them).")
        }
        let mine = items.filter { $0.origin == origin }
        if origin != 0, mine.count >= OutboxBounds.perBridge {
            throw DaemonError(.busy, "send: the outbox holds \(mine.count) messages sent through \(door), the most one MQTT bridge may queue; try again once some are delivered or given up.")
        }
        let toPeer = mine.filter { $0.thread.peer == peer }.count
        guard toPeer < OutboxBounds.perRecipient else {
            throw DaemonError(.busy, "send: the outbox holds \(toPeer) messages for \(peer) from \(door), the most one door may queue for one recipient; try again once some are delivered or given up.")
        }
    }

    /// `status` as a remote door (MQTT) gets it: without the store's path, the link's device or
    /// address, and the hub clients' addresses.
    static func statusForRemoteDoor(_ fields: [(String, JSON)]) -> [(String, JSON)] {
        fields.filter { $0.0 != "store" && $0.0 != "link" }.map { k, v in
            guard k == "hub_clients", case .array(let list) = v else { return (k, v) }
            return (k, .array(list.map { c in
                guard case .object(let f) = c else { return c }
                return .object(f.filter { $0.0 != "address" })
            }))
        }
    }
}

/// How many refusals each door has had logged (`Daemon.logRefusal`): the first `perDoor` one by
/// one, and the first of each op (or command code, at most `maxNames` of them), then one summary
/// line a minute. Bounded: at most `maxDoors` doors are remembered (hub clients come and go), the
/// oldest forgotten first.
struct RefusalLog {
    static let perDoor = 10
    static let maxDoors = 64
    static let maxNames = 128
    enum Verdict: Equatable { case log, summary(Int), quiet }
    private var doors: [String: (logged: Int, names: Set<String>, quiet: Int, summaryAt: UInt64)] = [:]
    private var order: [String] = []

    mutating func note(_ door: String, what: String = "", now: UInt64) -> Verdict {
        if doors[door] == nil {
            if order.count >= Self.maxDoors { doors[order.removeFirst()] = nil }
            order.append(door)
            doors[door] = (0, [], 0, 0)
        }
        var d = doors[door]!
        defer { doors[door] = d }
        let newName = d.names.count < Self.maxNames && d.names.insert(what).inserted
        if d.logged < Self.perDoor || newName {
            d.logged += 1
            if d.logged == Self.perDoor { d.summaryAt = now + 60_000 }
            return .log
        }
        d.quiet += 1
        guard now >= d.summaryAt else { return .quiet }
        let n = d.quiet
        d.quiet = 0
        d.summaryAt = now + 60_000
        return .summary(n)
    }
}

extension Daemon {
    /// Says at start what is open beyond this host, one warning each: a hub listener not on
    /// loopback (the companion protocol has no authentication: whoever reaches the port is a
    /// client), and any class above `message` it allows; an MQTT bridge that takes commands above
    /// `message` (whoever may publish to its command topics runs them), and one whose broker is
    /// reached without TLS beyond this host.
    func warnOpenDoors() {
        for l in config.companionListeners where !l.isLoopback {
            let above = l.allowed.classes.filter { $0 > .message }.sorted()
            log("warning: hub: \(l.address) can be reached beyond this host and has no authentication: anyone who connects may "
                + "\(l.allowed.classes.sorted().map(\.rawValue).joined(separator: ", ")); bind it to 127.0.0.1 (or ::1) and reach it through an SSH or VPN tunnel")
            if !above.isEmpty {
                log("warning: hub: \(l.address) allows \(above.map(\.rawValue).joined(separator: ", ")) to anyone who connects: "
                    + (above.contains(.secret) ? "the radio's private key and channel secrets, " : "")
                    + (above.contains(.admin) ? "rebooting or erasing the radio, " : "")
                    + "changing its settings, contacts and channels")
            }
        }
        for b in mqtt.bridges {
            let above = b.settings.allowed.classes.filter { $0 > .message }.sorted()
            if !above.isEmpty {
                log("warning: mqtt: \(b.settings.connection.url): commands of class \(above.map(\.rawValue).joined(separator: ", ")) are allowed: "
                    + "anyone who may publish to \(b.prefix)/command/ on that broker runs them as this radio")
            }
            let host = HubListener.isLoopbackHost(b.settings.connection.url.host)
            if !host && !b.settings.connection.url.usesTLS && !b.commandsOff {
                log("warning: mqtt: \(b.settings.connection.url): the broker is reached without TLS beyond this host: commands and their results (and the password) travel in the clear")
            }
        }
    }
}
