import MeshOps
import Glibc
import MeshSession
import MeshNet
import MeshStore
import MeshDaemonClient
import MeshLink
import MeshOps

/// Which radio's store a store command reads.
struct StoreSelection: ParsableArguments {
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var stateDir: String? { args.string("state-dir") }

    var radio: String? { args.string("radio") }

    var serial: String? { args.string("serial") }

    var tcp: String? { args.string("tcp") }

    var json: Bool { args.flag("json") }

    /// Opens the store read-only (works while a daemon owns it).
    func open() throws -> RadioStore {
        let dir = try directory()
        do {
            return try RadioStore(directory: dir, options: MeshStore.StoreOptions(readOnly: true))
        } catch {
            throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the store: \(error)")
        }
    }

    /// The chosen radio's folder under the state root.
    func directory() throws -> String {
        let root: String
        do { root = try StoreLocation.stateRoot(stateDir: stateDir) } catch { throw usage("\(error)") }
        let radios = StoreLocation.radios(stateRoot: root)
        var key: String? = nil
        if let spec = serial.map({ "serial:" + $0 }) ?? tcp.map({ "tcp:" + $0 }) {
            key = StoreLinks.radio(stateRoot: root, link: spec)
            if key == nil { throw notFound("no stored radio was seen on \(spec) yet: run `pocketmesh daemon`, `pocketmesh sync` or `pocketmesh chat` with it first.") }
        } else if let r = radio?.lowercased() {
            let hits = radios.filter { $0.hasPrefix(r) }
            if hits.count != 1 {
                throw hits.isEmpty ? notFound("no stored radio matches \(r) under \(root).")
                                   : usage("\(r) matches \(hits.count) stored radios: give more of the key.")
            }
            key = hits[0]
        } else if radios.count == 1 {
            key = radios[0]
        } else {
            throw radios.isEmpty ? notFound("no radio has been stored under \(root) yet: run `pocketmesh daemon` first.")
                                 : usage("\(radios.count) radios are stored under \(root): choose one with --radio KEY, --serial or --tcp.")
        }
        return root + "/" + key!
    }

    func usage(_ m: String) -> ExitFailure { ExitFailure(code: 2, message: m) }
    func notFound(_ m: String) -> ExitFailure { ExitFailure(code: 6, message: m) }

    /// The daemon that owns the chosen radio, when one runs and no `--state-dir` names a store to
    /// read: its store is the one to read (the service may run as another user, whose store this
    /// user cannot open). By `--serial`/`--tcp`, `--radio`, or the only daemon running.
    func daemon() throws -> DaemonClient? {
        guard stateDir == nil, getenv("POCKETMESH_NO_DAEMON") == nil else { return nil }
        var env: [String: String] = [:]
        if let x = getenv("XDG_RUNTIME_DIR") { env["XDG_RUNTIME_DIR"] = String(cString: x) }
        let entry: DaemonRegistry.Entry?
        if let spec = serial.map({ "serial:" + $0 }) ?? tcp.map({ "tcp:" + $0 }) {
            switch DaemonRegistry.lookup(link: spec, environment: env) {
            case .found(let e): entry = e
            case .unreachable(let why): throw ExitFailure(code: ErrorKind.link.exitCode, message: why)
            case .none: entry = nil
            }
        } else if let r = radio {
            entry = DaemonRegistry.find(radio: r, environment: env)
        } else {
            let all = DaemonRegistry.live(environment: env)
            entry = all.count == 1 ? all[0] : nil
        }
        guard let entry else { return nil }
        do throws(DaemonError) { return try DaemonClient(socketPath: entry.socket) } catch {
            throw ExitFailure(code: ErrorKind.link.exitCode, message: "cannot reach the daemon that owns the radio (\(entry.link)): \(error.message)")
        }
    }

    /// A request to that daemon; its error as this command's.
    func ask(_ client: DaemonClient, _ op: DaemonOp, _ fields: [(String, JSON)] = []) throws -> DaemonResponse {
        do throws(DaemonError) { return try client.call(op, fields) } catch {
            throw ExitFailure(code: error.exitCode, message: error.code == .link ? "the daemon that owns the radio: \(error.message)" : error.message)
        }
    }

    /// The local store's "nothing stored" error, or, when a daemon of another user's may hold the
    /// radio (its folder unreadable), that.
    func noStore(_ failure: ExitFailure) -> ExitFailure {
        guard failure.code == 6 || failure.code == 2, stateDir == nil else { return failure }
        var env: [String: String] = [:]
        if let x = getenv("XDG_RUNTIME_DIR") { env["XDG_RUNTIME_DIR"] = String(cString: x) }
        guard let dir = DaemonRegistry.unreadableDirectories(environment: env).first, failure.code == 6 else { return failure }
        return ExitFailure(code: ErrorKind.link.exitCode,
                           message: "a pocketmesh daemon runs as another user in \(dir), which you may not read: ask to be added to its group (the service shares its socket with --api-group GROUP) to read its messages.")
    }
}

/// An error that carries its exit code (printed by the command itself).
struct ExitFailure: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { message }
}

func runReporting(_ body: () throws -> Void) throws {
    do { try body() } catch let e as ExitFailure {
        writeStderr("pocketmesh: \(e.message)")
        throw ExitCode(e.code)
    }
}

/// `pocketmesh chats`: conversations ordered by last activity (from the daemon that owns the
/// radio when one runs, else from the store).
struct ChatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chats")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var store: StoreSelection { StoreSelection(args) }

    func run(_ args: OperationValues) throws {
        try runReporting {
            let items: [JSON]
            if let d = try store.daemon() {
                guard case .array(let list)? = try store.ask(d, .chats)["chats"] else {
                    throw ExitFailure(code: ErrorKind.internal.exitCode, message: "the daemon's answer to chats has no list.")
                }
                items = list
            } else {
                let s: RadioStore
                do { s = try store.open() } catch let e as ExitFailure { throw store.noStore(e) }
                let list: [Conversation]
                do { list = try s.conversations() } catch { throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the store: \(error)") }
                defer { warnDamage(s) }
                items = list.map { c -> JSON in
                    .obj(("thread", .string(c.thread.description)), ("name", .string(c.name)), ("unread", .int(Int64(c.unread))),
                         ("messages", .int(Int64(c.messageCount))), ("last", MessageJSON.message(c.lastMessage, store: s)))
                }
            }
            if store.json {
                print(JSON.array(items).text)
                return
            }
            for c in items {
                let m = c["last"] ?? .null
                let unreadCount = c["unread"]?.int ?? 0
                let unread = unreadCount > 0 ? " (\(unreadCount) unread)" : ""
                emitHuman("\(terminalSafeLine(c["name"]?.string ?? ""))\(unread): \(m["from"]?.string.map { $0.isEmpty ? "" : terminalSafeLine($0) + ": " } ?? "")\(terminalSafeLine(body(m)))")
            }
        }
    }
}

/// `pocketmesh history NAME|CHANNEL [--limit N] [--before ID]` (from the daemon that owns the
/// radio when one runs, else from the store).
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var thread: String { args.string("thread") ?? "" }

    var limit: Int { args.whole("limit") ?? 0 }
    var before: UInt64? { args.whole("before") }

    var store: StoreSelection { StoreSelection(args) }

    func run(_ args: OperationValues) throws {
        try runReporting {
            let name: String
            let messages: [JSON]
            if let d = try store.daemon() {
                var fields: [(String, JSON)] = [("thread", .string(thread)), ("limit", .int(Int64(limit)))]
                if let before { fields.append(("before", .int(Int64(clamping: before)))) }
                let r = try store.ask(d, .history, fields)
                guard case .array(let list)? = r["messages"] else {
                    throw ExitFailure(code: ErrorKind.internal.exitCode, message: "the daemon's answer to history has no messages.")
                }
                name = r["thread"]?.string ?? thread
                messages = list
            } else {
                let s: RadioStore
                do { s = try store.open() } catch let e as ExitFailure { throw store.noStore(e) }
                let key: ThreadKey
                do { key = try s.resolveThread(thread) } catch StoreError.ambiguousThread(_, let n) {
                    throw ExitFailure(code: 2, message: "\"\(thread)\" matches \(n) contacts: give the whole name or more hex digits of the key.")
                } catch {
                    throw ExitFailure(code: 6, message: "no contact or channel matches \"\(thread)\" in the store.")
                }
                let ms: [StoredMessage]
                do { ms = try s.history(key, limit: limit, before: before) } catch {
                    throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the store: \(error)")
                }
                defer { warnDamage(s) }
                name = s.name(of: key)
                messages = ms.map { MessageJSON.message($0, store: s) }
            }
            if store.json {
                print(JSON.obj(("thread", .string(name)), ("messages", .array(messages)),
                               ("before", messages.first?["id"].flatMap { $0.int.map { .int($0) } })).text)
                return
            }
            for j in messages {
                let outgoing = j["direction"]?.string == "out"
                let who = outgoing ? "me" : (j["from"]?.string ?? "")
                let status = outgoing ? " [\(j["status"]?.string ?? "")]" : ""
                // A channel datagram has no sender's timestamp: when this host received it.
                let ts = UInt32(clamping: j["timestamp"]?.int ?? j["received"]?.int ?? 0)
                emitHuman("#\(j["id"]?.int ?? 0) \(formatTime(ts)) \(terminalSafeLine(who)): \(terminalSafeLine(body(j)))\(status)")
            }
        }
    }
}

/// Reports the damaged records a read skipped (one warning each on stderr; the output goes on).
func warnDamage(_ s: RadioStore) {
    for d in s.readDamage { writeStderr("pocketmesh: warning: \(d) (a damaged record in the message log; its message is not shown)") }
}

/// A stored message's text, or for a channel datagram its data type and payload (as `sync` shows it).
func body(_ m: JSON) -> String {
    if let data = m["data"]?.string { return "data \(m["data_type"]?.int ?? 0): \(data)" }
    return m["text"]?.string ?? ""
}

/// "YYYY-MM-DD HH:MM:SS" in UTC, without Foundation.
func formatTime(_ epoch: UInt32) -> String {
    var t = time_t(epoch)
    var tmv = tm()
    gmtime_r(&t, &tmv)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return "\(tmv.tm_year + 1900)-\(two(tmv.tm_mon + 1))-\(two(tmv.tm_mday)) \(two(tmv.tm_hour)):\(two(tmv.tm_min)):\(two(tmv.tm_sec))"
}
