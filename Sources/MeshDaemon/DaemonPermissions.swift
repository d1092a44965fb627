import MeshCompanion
import MeshOps
import MeshDaemonClient
import MeshBridge
import MeshHub

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
        try Request(apiOp: name, fields: fields).operationClass
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
    func frontEnd(of client: Int) -> FrontEnd {
        if client >= MQTTObserver.firstClientID && client <= MQTTObserver.lastClientID {
            // The observer's own status queries: internal, never a remote client's.
            return FrontEnd(name: "mqtt-observer", allowed: .everything, widen: "")
        }
        if client >= MQTTBridge.firstClientID && client <= MQTTBridge.lastClientID,
           let b = bridges.first(where: { $0.owns(client: client) }) {
            return FrontEnd(name: "mqtt \(b.settings.connection.url) (\(b.prefix)/command)", allowed: b.settings.allowed,
                            widen: "--mqtt-allow")
        }
        // An API socket client: every class for root and the daemon's user, its group's for an
        // `--api-group` member (`APIServer.admit`).
        return FrontEnd(name: "api client \(client)" + (api.peer(client).map { " (uid \($0.uid))" } ?? ""),
                        allowed: api.allowed(client) ?? .everything, widen: "")
    }

    /// Checks a request against its front end: throws the refusal (and logs it once), logs what
    /// runs of class config, admin or secret.
    func authorize(_ req: DaemonRequest, _ client: Int) throws(DaemonError) {
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
        log("permission: \(fe.name): refused \(req.name) (\(c.rawValue); allowed: \(fe.allowed))")
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
            log("permission: \(who): refused \(what): \(why)")
            return false
        }
        if c >= .config { log("permission: \(who): \(what) (\(c.rawValue))") }
        return true
    }

    func hubClientName(_ client: Int) -> String {
        let app = hubSessions[client]?.app ?? ""
        return "hub client \(client - HubServer.firstID + 1)" + (app.isEmpty ? "" : " (\(app))")
    }
}
