import Glibc
import MeshNet
import MeshSession
import MeshOps

/// Command-line operations for API clients (`Request.apiOps`): each runs in a short-lived worker
/// (`pocketmesh daemon op-exec`) that takes the request line on stdin, talks to the radio through
/// this daemon's own socket like any command, and writes one result line on stdout. The poll loop
/// reads it and answers the client; so an op has exactly the fields of the command's `--json`,
/// and the radio is still shared one command at a time with everything else.
struct OperationRun {
    var pid: pid_t
    var client: APIServer.ClientID
    var id: Int64
    var name: String
    var output: [UInt8] = []
    var deadline: UInt64
}

extension Daemon {
    func startOperation(_ req: DaemonRequest, _ client: APIServer.ClientID, now: UInt64) throws(DaemonError) {
        guard let worker = config.operationWorker else {
            throw DaemonError(.unsupported, "\(req.name): this daemon runs no operation worker.")
        }
        guard operations.count < config.operationConcurrency else {
            throw DaemonError(.busy, "\(req.name): \(operations.count) operations are running; try again when one is done.")
        }
        guard phase == .ready || phase == .syncing else {
            throw DaemonError(.link, "cannot run \(req.name): the link to the radio (\(config.link)) is down; the daemon is reconnecting.")
        }
        guard let i = UnixSocket.makePipe(nonBlocking: false) else { throw DaemonError(.internal, "\(req.name): \(SystemError("pipe"))") }
        guard let o = UnixSocket.makePipe(nonBlocking: false) else {
            close(i.read); close(i.write)
            throw DaemonError(.internal, "\(req.name): \(SystemError("pipe"))")
        }
        UnixSocket.setNonBlocking(o.read)  // the worker writes blocking; the poll loop reads without waiting
        let input = [i.read, i.write], output = [o.read, o.write]
        // The request is one line (at most the API's line limit): it fits the pipe's buffer.
        let line = Array((req.line + "\n").utf8)
        let written = line.withUnsafeBytes { write(input[1], $0.baseAddress, $0.count) }
        close(input[1])
        let argv = worker + ["--api-socket", api.path, "--response-timeout", String(Double(config.commandTimeoutMS) / 1000)]
        var env = ["PATH=/usr/local/bin:/usr/bin:/bin", "POCKETMESH_NO_DAEMON=1"]
        if let tz = getenv("TZ") { env.append("TZ=" + String(cString: tz)) }
        let pid: pid_t
        do throws(SystemError) {
            guard written == line.count else { throw SystemError("write", "the operation's request") }
            pid = try Spawn.start(argv: argv, environment: env, stdinFD: input[0], stdoutFD: output[1])
        } catch {
            close(input[0]); close(output[0]); close(output[1])
            throw DaemonError(.internal, "\(req.name): cannot start the worker: \(error)")
        }
        close(input[0])
        close(output[1])
        operations[output[0]] = OperationRun(pid: pid, client: client, id: req.id, name: req.name,
                                             deadline: now + config.operationTimeoutMS)
    }

    func operationDescriptors(into fds: inout [pollfd]) {
        for fd in operations.keys { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
    }

    /// Reads a worker's output; at its end, answers the client.
    func operationReady(_ fd: Int32) {
        guard var run = operations[fd] else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                if run.output.count < 1 << 20 { run.output += chunk[0..<n] }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN { operations[fd] = run; return }
            break  // end of output (or a read error): the worker is done
        }
        operations[fd] = nil
        close(fd)
        reapOperation(run.pid)
        reply(operationResponse(run), to: run.client)
    }

    func operationResponse(_ run: OperationRun) -> DaemonResponse {
        let text = run.output.split(separator: 0x0A).last.map(Array.init) ?? []
        guard let json = try? text.withUnsafeBytes({ try JSONParser.parse($0) }), let ok = json["ok"]?.bool else {
            return DaemonResponse(id: run.id, error: DaemonError(.internal, "\(run.name): the worker ended without a result."))
        }
        if !ok, let e = json["error"].flatMap(DaemonError.init(json:)) {
            return DaemonResponse(id: run.id, error: e)
        }
        // The command's --json value: an object's fields, or anything else as "result".
        switch json["value"] {
        case .object(let fields)?: return DaemonResponse(id: run.id, ok: fields.filter { $0.0 != "id" && $0.0 != "ok" })
        case nil, .null?: return DaemonResponse(id: run.id, ok: [])
        case let v?: return DaemonResponse(id: run.id, ok: [("result", v)])
        }
    }

    /// Kills workers past their deadline; returns the next deadline.
    func operationTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (fd, run) in operations {
            if now >= run.deadline {
                kill(-run.pid, SIGKILL)
                operations[fd] = nil
                close(fd)
                reapOperation(run.pid)
                reply(DaemonResponse(id: run.id, error: DaemonError(.timeout, "\(run.name) did not finish in \(config.operationTimeoutMS / 1000) s.")),
                          to: run.client)
            } else {
                next = min(next ?? run.deadline, run.deadline)
            }
        }
        return next
    }

    func reapOperation(_ pid: pid_t) {
        var status: Int32 = 0
        // The worker closed its output: it is exiting. Wait for it (a bounded moment), else kill it.
        for _ in 0..<200 {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { return }
            usleep(1_000)
        }
        kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }

    /// Ends every worker (shutdown).
    func stopOperations() {
        for (fd, run) in operations {
            kill(-run.pid, SIGKILL)
            close(fd)
            var status: Int32 = 0
            _ = waitpid(run.pid, &status, 0)
        }
        operations.removeAll()
    }
}
