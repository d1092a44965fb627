import MeshOps
import MeshSession
import Glibc
import MeshNet
import MeshDaemonClient
import MeshLink
import MeshOps

/// `pocketmesh hooks failed|retry ID|drop ID`: messages whose `--on-message` hook was given up.
struct HooksCommand: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "hooks", subcommands: [HooksFailed.self, HooksRetry.self, HooksDrop.self])
}

/// Which running daemon to ask.
struct DaemonSelection: ParsableArguments {
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var serial: String? { args.string("serial") }
    var tcp: String? { args.string("tcp") }
    var ble: String? { args.string("ble") }
    var radio: String? { args.string("radio") }
    var socket: String? { args.string("socket") }
    var json: Bool { args.flag("json") }

    func client() throws(DaemonError) -> DaemonClient {
        var env: [String: String] = [:]
        if let x = getenv("XDG_RUNTIME_DIR") { env["XDG_RUNTIME_DIR"] = String(cString: x) }
        if let socket { return try DaemonClient(socketPath: socket) }
        let link = serial.map { "serial:" + $0 } ?? tcp.map { "tcp:" + $0 } ?? ble.map { "ble:" + $0 }
        let entry: DaemonRegistry.Entry?
        if let link {
            entry = DaemonRegistry.find(link: link, environment: env)
        } else if let radio {
            entry = DaemonRegistry.find(radio: radio, environment: env)
        } else {
            let all = DaemonRegistry.live(environment: env)
            if all.count > 1 {
                throw DaemonError(.usage, "\(all.count) daemons are running: choose one with --serial, --tcp, --ble, --radio or --socket.")
            }
            entry = all.first
        }
        guard let entry else {
            throw DaemonError(.link, "no running pocketmesh daemon was found\(link.map { " for \($0)" } ?? ""); start one with `pocketmesh daemon ... --on-message CMD`.")
        }
        return try DaemonClient(socketPath: entry.socket)
    }

    /// Runs `body`, printing a daemon error as one sentence and exiting with its code.
    func run(_ body: () throws(DaemonError) -> Void) throws {
        do throws(DaemonError) { try body() } catch {
            writeStderr("pocketmesh: \(error.message)")
            throw ExitCode(error.exitCode)
        }
    }
}

struct HooksFailed: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "failed")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var daemon: DaemonSelection { DaemonSelection(args) }

    func run(_ args: OperationValues) throws {
        try daemon.run { () throws(DaemonError) in
            let r = try daemon.client().call(.hooksFailed)
            guard case .success(let fields) = r.result, case .array(let list)? = fields.first(where: { $0.0 == "failed" })?.1 else { return }
            if daemon.json { print(JSON.obj(("failed", .array(list))).text); return }
            if list.isEmpty { print("No message's hook has been given up."); return }
            for f in list {
                let m = f["message"]
                let from = m?["from"]?.string ?? m?["channel"]?.string ?? ""
                // The sender's name and the text come from the mesh: one line each.
                emitHuman("#\(f["id"]?.int ?? 0) \(f["retrying"]?.bool == true ? "retrying" : "given up") after \(f["attempts"]?.int ?? 0) attempt(s) "
                          + "(\(f["reason"]?.string ?? "")): \(from.isEmpty ? "" : terminalSafeLine(from) + ": ")"
                          + terminalSafeLine(m?["text"]?.string ?? "(message not in the store)"))
            }
        }
    }
}

struct HooksRetry: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "retry")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var id: UInt64 { args.whole("id") ?? 0 }
    var daemon: DaemonSelection { DaemonSelection(args) }

    func run(_ args: OperationValues) throws {
        try daemon.run { () throws(DaemonError) in
            try daemon.client().call(.hooksRetry, [("message", .int(Int64(clamping: id)))])
            print(daemon.json ? JSON.obj(("message", .int(Int64(clamping: id))), ("retrying", .bool(true))).text : "Message \(id): its hook runs again.")
        }
    }
}

struct HooksDrop: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drop")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var id: UInt64 { args.whole("id") ?? 0 }
    var daemon: DaemonSelection { DaemonSelection(args) }

    func run(_ args: OperationValues) throws {
        try daemon.run { () throws(DaemonError) in
            try daemon.client().call(.hooksDrop, [("message", .int(Int64(clamping: id)))])
            print(daemon.json ? JSON.obj(("message", .int(Int64(clamping: id))), ("dropped", .bool(true))).text : "Message \(id): dropped.")
        }
    }
}
