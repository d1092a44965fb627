import MeshSession
import MeshOps
import MeshDaemonClient
import MeshLink

/// Which radio and how to reach it: shared by every command that talks to a radio and the daemon.
struct RadioLinkOptions: ParsableArguments {
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var serial: String? { args.string("serial") }

    var baud: Int { args.whole("baud") ?? 0 }

    var tcp: String? { args.string("tcp") }

    var ble: String? { args.string("ble") }

    var bleMinMtu: Int { args.whole("ble-min-mtu") ?? 0 }
}

/// Link options accepted by every command that talks to a radio.
struct LinkOptions: ParsableArguments {
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var radio: RadioLinkOptions { RadioLinkOptions(args) }

    var serial: String? { radio.serial }
    var baud: Int { radio.baud }
    var tcp: String? { radio.tcp }
    var ble: String? { radio.ble }
    var bleMinMtu: Int { radio.bleMinMtu }

    var timeout: Double { args.number("timeout") ?? 0 }

    var json: Bool { args.flag("json") }

    func validate() throws {
        let given = [serial != nil, tcp != nil, ble != nil].filter { $0 }.count
        if given > 1 { throw ValidationError("give only one of --serial, --tcp and --ble.") }
    }

    var timeoutMilliseconds: UInt64 { UInt64(timeout * 1000) }

    func target() throws(ClientError) -> LinkTarget {
        if let serial { return .serial(path: serial, baud: baud) }
        if let tcp {
            var host = tcp
            var port: UInt16 = 5000
            if tcp.hasPrefix("[") {  // [::1]:5000
                guard let close = tcp.firstIndex(of: "]") else { throw .usage("invalid --tcp \(tcp): use HOST[:PORT].") }
                host = String(tcp[tcp.index(after: tcp.startIndex)..<close])
                let rest = tcp[tcp.index(after: close)...]
                if rest.hasPrefix(":") {
                    guard let p = UInt16(rest.dropFirst()), p > 0 else { throw .usage("invalid port in --tcp \(tcp): use HOST[:PORT].") }
                    port = p
                }
            } else if let colon = tcp.lastIndex(of: ":"), tcp.firstIndex(of: ":") == colon {
                host = String(tcp[..<colon])
                guard let p = UInt16(tcp[tcp.index(after: colon)...]), p > 0 else {
                    throw .usage("invalid port in --tcp \(tcp): use HOST[:PORT] with a port from 1 to 65535.")
                }
                port = p
            }
            if host.isEmpty { throw .usage("invalid --tcp \(tcp): use HOST[:PORT].") }
            return .tcp(host: host, port: port)
        }
        if let ble { return .ble(address: ble, minimumMTU: bleMinMtu) }
        throw .usage("no radio given: use --serial PATH, --tcp HOST[:PORT] or --ble ADDRESS.")
    }

    /// Opens the link and runs the handshake (with the command's session settings, e.g. `send --ack-timeout`).
    func connect(drain: Bool = false) throws(ClientError) -> Radio {
        let t = try target()
        let link = try t.openDirectOrThroughDaemon(timeoutMilliseconds: Int(timeoutMilliseconds))
        var config = SessionConfig()
        config.commandTimeout = timeoutMilliseconds
        config.drainOnStart = drain
        config.drainOnWaiting = drain
        // A fixed per-attempt ACK wait for this command (`send --ack-timeout`), instead of the
        // radio's estimate × 1.2.
        config.ackTimeout = args.number("ack-timeout").map { UInt64($0 * 1000) }
        let radio = Radio(link: link, config: config)
        try radio.connect(timeoutMilliseconds: timeoutMilliseconds)
        return radio
    }
}

/// A command that runs its row's `Request` against the radio and prints the result. It declares
/// no arguments: it reads them by name from its values (`LinkOptions(args)` for the link).
protocol RadioCommand: ParsableCommand, Stateless {
    func request(_ args: OperationValues) throws(ClientError) -> Request
    /// Text output (JSON output is the value itself).
    func text(_ value: Value, _ args: OperationValues) -> String
}

extension RadioCommand {
    func text(_ value: Value, _ args: OperationValues) -> String { value.text() }

    /// The request, from the values parsed for the command's arguments: the same function the
    /// local API's fields go through (`Request(_ values:)`), the row's handler.
    func request(_ args: OperationValues) throws(ClientError) -> Request {
        try Request(args)
    }

    func run(_ args: OperationValues) throws { try runRadioCommand(args) }

    /// Runs `request()` and prints its result (`--json`: the value itself).
    func runRadioCommand(_ args: OperationValues) throws {
        try runRequest(try request(args), link: LinkOptions(args), render: { self.text($0, args) }, row: args.operation)
    }
}

/// The body of every `RadioCommand`, once: not specialised per command (which cost 2 KB of binary
/// for each of the sixty commands).
@inline(never)
func runRequest(_ req: Request, link: LinkOptions, render: (Value) -> String, row: Operation?,
                keep: ((Executor, [ReceivedMessage]) -> Void)? = nil) throws {
    try req.validate()
    let radio = try link.connect(drain: false)
    // Through a daemon that lets this user use fewer than every class (its --api-group): a
    // command of another class is refused here, in one sentence, before anything is sent.
    let opClass = row?.operationClass(of: req) ?? .admin
    if let tunnel = radio.link as? DaemonTunnelLink, let allowed = tunnel.allowed, !allowed.allows(opClass) {
        throw ClientError(.denied, "this is a \(opClass.rawValue) operation; the daemon at \(tunnel.socketPath) lets your user use \(allowed) only (its --api-group).")
    }
    let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
    let progress = Progress(radio: radio, json: link.json)
    var taken: [ReceivedMessage] = []
    radio.onEvent = { e in
        if case .message(let m) = e {
            executor.collect(m)
            if keep != nil { taken.append(m) }
            progress?.message()
        }
    }
    radio.onProgress = progress.map { p in { p.update() } }
    let outcome: Outcome
    do { outcome = try executor.execute(req) } catch { progress?.finish(); keep?(executor, taken); throw error }
    progress?.finish()
    keep?(executor, taken)
    if link.json {
        emitLine(outcome.value.json)
    } else {
        // Every string on one line: names, paths and replies come from the mesh.
        let out = render(outcome.value.oneLine)
        if !out.isEmpty { emitHuman(out) }
    }
    if let e = outcome.error { throw e }
}

/// Joins remaining words into one text.
func joined(_ words: [String]) -> String { words.joined(separator: " ") }
