import MeshLink
import Glibc
import MeshNet
import MeshSession
import MeshOps
import MeshDaemonClient

/// Command-line operations for API clients, the hub's policy and MQTT commands
/// (`Request.apiOps`): each runs in this process, on the daemon's own session, through
/// `SessionPort`: the same implementation as the command line's (`Executor.run`), interleaved with
/// the daemon's sync and everything else on the one poll loop. The answer has exactly the fields
/// of the command's `--json`.
struct OperationRun {
    var client: Caller
    var id: Int64
    var name: String
    var deadline: UInt64
    /// Its share of the session's port: cancelled at the deadline (`OperationLease.cancel`).
    var lease: OperationLease
}

extension Daemon {
    func startOperation(_ req: DaemonRequest, _ client: Caller, now: UInt64) throws(DaemonError) {
        guard ops.runs.count < config.operationConcurrency else {
            throw DaemonError(.busy, "\(req.name): \(ops.runs.count) operations are running; try again when one is done.")
        }
        // The MQTT bridges together take at most half: commands from a broker never lock the
        // local API out of the radio.
        if isRemoteDoor(client) {
            let remote = ops.runs.values.filter { isRemoteDoor($0.client) }.count
            guard remote < max(1, config.operationConcurrency / 2) else {
                throw DaemonError(.busy, "\(req.name): \(remote) operations from MQTT are running, the most MQTT may run at once; try again when one is done.")
            }
        }
        var fields: [String: Value] = [:]
        if case .object(let pairs) = req.args { for (k, v) in pairs { fields[k] = v } }
        let request = try Request(apiOp: req.name, fields: fields)
        try request.validate()
        guard phase == .ready || phase == .syncing, let port = ops.port else {
            throw DaemonError(.link, "cannot run \(req.name): the link to the radio (\(config.link)) is down; the daemon is reconnecting.")
        }
        ops.next += 1
        let run = ops.next
        let lease = OperationLease(port)
        ops.runs[run] = OperationRun(client: client, id: req.id, name: req.name, deadline: now + config.operationTimeoutMS, lease: lease)
        let executor = Executor(radio: lease, timeout: config.commandTimeoutMS)
        ops.jobs.start({ () async throws(ClientError) -> Outcome in try await executor.run(request) }) { [unowned self] result in
            self.operationEnded(run, result)
        }
        pump(now: now)
    }

    /// An operation's end: its answer to whoever asked (unless its time ran out before).
    func operationEnded(_ run: Int, _ result: Result<Outcome, ClientError>) {
        guard let op = ops.runs.removeValue(forKey: run) else { return }
        reply(Self.operationResponse(id: op.id, result), to: op.client)
    }

    static func operationResponse(id: Int64, _ result: Result<Outcome, ClientError>) -> DaemonResponse {
        let outcome: Outcome
        switch result {
        case .success(let o): outcome = o
        case .failure(let e): return DaemonResponse(id: id, error: e)
        }
        if let e = outcome.error { return DaemonResponse(id: id, error: e) }
        // The command's --json value: an object's fields, or anything else as "result".
        switch outcome.value {
        case .object(let fields): return DaemonResponse(id: id, ok: fields.filter { $0.0 != "id" && $0.0 != "ok" })
        case .null: return DaemonResponse(id: id, ok: [])
        case let v: return DaemonResponse(id: id, ok: [("result", v)])
        }
    }

    /// Cancels and answers operations past their time: what they have queued at the radio is
    /// withdrawn, the late answers to what they have in flight are dropped, and their waits end
    /// (`OperationLease.cancel`); returns the next deadline.
    func operationTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (run, op) in ops.runs {
            if now >= op.deadline {
                ops.runs[run] = nil
                let e = DaemonError(.timeout, "\(op.name) did not finish in \(config.operationTimeoutMS / 1000) s.")
                op.lease.cancel(e)
                reply(DaemonResponse(id: op.id, error: e), to: op.client)
            } else {
                next = min(next ?? op.deadline, op.deadline)
            }
        }
        if let p = ops.port {
            p.tick(now: now)
            if let d = p.nextDeadline { next = min(next ?? d, d) }
        }
        return next
    }

    /// The session's port for operations, made with each new session.
    func openOperationPort(_ s: Session) {
        let port = SessionPort(session: s, jobs: ops.jobs, clock: monotonicMilliseconds)
        // What an operation's command changed on the radio, the store follows (as for tunnel clients).
        port.onCommandFinished = { [unowned self] frame, r in
            self.recordTunnelSend(frame, r)
            self.keepListedContacts(frame, r)
        }
        ops.port = port
    }

    /// The session ended: operations waiting on it end with `reason` (answered at the next pump).
    func closeOperationPort(_ reason: String) {
        ops.port?.close(DaemonError(.link, "the link to the radio was lost (\(reason)); try again once the daemon has reconnected."))
        ops.port = nil
    }

    /// Ends every operation (shutdown).
    func stopOperations() {
        closeOperationPort("the daemon is stopping")
        ops.jobs.runReady()
        for (_, op) in ops.runs {
            reply(DaemonResponse(id: op.id, error: DaemonError(.link, "\(op.name): the daemon is stopping.")), to: op.client)
        }
        ops.runs.removeAll()
    }
}
