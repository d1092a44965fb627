import Glibc
import MeshSession
import MeshNet
import MeshStore
import MeshDaemonClient

/// Which radio's store a store command reads.
struct StoreSelection: ParsableArguments {
    @Option var stateDir: String?

    @Option var radio: String?

    @Option var serial: String?

    @Option var tcp: String?

    @Flag var json = false

    /// Opens the store read-only (works while a daemon owns it).
    func open() throws -> RadioStore {
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
        do {
            return try RadioStore(directory: root + "/" + key!, options: MeshStore.StoreOptions(readOnly: true))
        } catch {
            throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the store: \(error)")
        }
    }

    func usage(_ m: String) -> ExitFailure { ExitFailure(code: 2, message: m) }
    func notFound(_ m: String) -> ExitFailure { ExitFailure(code: 6, message: m) }
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

/// `pocketmesh chats`: conversations ordered by last activity.
struct ChatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chats")

    @OptionGroup var store: StoreSelection

    func run() throws {
        try runReporting {
            let s = try store.open()
            let list: [Conversation]
            do { list = try s.conversations() } catch { throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the store: \(error)") }
            defer { warnDamage(s) }
            if store.json {
                let items = list.map { c -> JSON in
                    .obj(("thread", .string(c.thread.description)), ("name", .string(c.name)), ("unread", .int(Int64(c.unread))),
                         ("messages", .int(Int64(c.messageCount))), ("last", MessageJSON.message(c.lastMessage, store: s)))
                }
                print(JSON.array(items).text)
                return
            }
            for c in list {
                let m = MessageJSON.message(c.lastMessage, store: s)
                let unread = c.unread > 0 ? " (\(c.unread) unread)" : ""
                emitHuman("\(terminalSafeLine(c.name))\(unread): \(m["from"]?.string.map { $0.isEmpty ? "" : terminalSafeLine($0) + ": " } ?? "")\(terminalSafeLine(body(m)))")
            }
        }
    }
}

/// `pocketmesh history NAME|CHANNEL [--limit N] [--before ID]`.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history")

    @Argument var thread: String

    @Option var limit: Int = 50
    @Option var before: UInt64?

    @OptionGroup var store: StoreSelection

    func validate() throws {
        if limit < 1 || limit > 100_000 { throw ValidationError("--limit must be 1 to 100000.") }
    }

    func run() throws {
        try runReporting {
            let s = try store.open()
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
            if store.json {
                print(JSON.obj(("thread", .string(s.name(of: key))), ("messages", .array(ms.map { MessageJSON.message($0, store: s) })),
                               ("before", ms.first.map { .int(Int64($0.id)) })).text)
                return
            }
            for m in ms {
                let j = MessageJSON.message(m, store: s)
                let who = m.direction == .outgoing ? "me" : (j["from"]?.string ?? "")
                let status = m.direction == .outgoing ? " [\(m.status.name)]" : ""
                emitHuman("#\(m.id) \(formatTime(m.senderTimestamp)) \(terminalSafeLine(who)): \(terminalSafeLine(body(j)))\(status)")
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
