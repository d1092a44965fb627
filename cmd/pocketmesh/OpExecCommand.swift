import Glibc
import MeshDaemon
import MeshNet
import MeshSession
import MeshOps

/// Runs one command-line operation for a client of the daemon's API (internal): the request line
/// on stdin, the result as one JSON line on stdout. The daemon starts it for every API op of
/// `Request.apiOps`; it talks to the radio through that daemon's own socket, as any command does,
/// so the result has exactly the fields of the command's `--json`.
struct OpExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "op-exec", shouldDisplay: false)

    @Option var socket: String
    @Option var timeout: Double = 5

    func run() throws {
        var input: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while input.count <= 65_536 {
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            input += chunk[0..<n]
        }
        var outcome = Outcome(.null)
        do throws(ClientError) {
            outcome = try execute(input)
        } catch {
            outcome = Outcome(.null, error: error)
        }
        var fields: [(String, JSON)] = [("ok", .bool(outcome.error == nil)), ("value", JSON(outcome.value))]
        if let e = outcome.error { fields.append(("error", e.json)) }
        emitLine(JSON.object(fields).text)
    }

    func execute(_ line: [UInt8]) throws(ClientError) -> Outcome {
        let json: JSON
        do { json = try line.withUnsafeBytes { try JSONParser.parse($0) } } catch {
            throw .usage("the request is not valid JSON: \(error)")
        }
        guard case .object(let pairs) = json, let op = json["op"]?.string else { throw .usage("the request has no \"op\".") }
        var fields: [String: Value] = [:]
        for (k, v) in pairs { fields[k] = v.value }
        let request = try Request(apiOp: op, fields: fields)
        try request.validate()
        let ms = UInt64(max(0.1, timeout) * 1000)
        let link: DaemonTunnelLink
        do { link = try DaemonTunnelLink(socketPath: socket, timeoutMS: Int(ms)) } catch {
            throw .link("the daemon cannot reach the radio now: \(error.message)")
        }
        var config = SessionConfig()
        config.commandTimeout = ms
        let radio = Radio(link: link, config: config)
        try radio.connect(timeoutMilliseconds: ms)
        let executor = Executor(radio: radio, timeout: ms)
        radio.onEvent = { e in if case .message(let m) = e { executor.collect(m) } }
        return try executor.execute(request)
    }
}
