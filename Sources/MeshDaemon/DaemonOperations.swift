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

/// The operations part's own work: its runs, the port of each session, their deadlines. Of the
/// daemon it is given only where answers go (`reply`) and how long an operation may take.
extension OperationsPart {
    /// Starts a validated request on the current session's port (nil: no session).
    func start(_ request: Request, name: String, id: Int64, from client: Caller, now: UInt64) -> Bool {
        guard let port else { return false }
        next += 1
        let run = next
        let lease = OperationLease(port)
        runs[run] = OperationRun(client: client, id: id, name: name, deadline: now + timeoutMS, lease: lease)
        let executor = Executor(radio: lease, timeout: commandTimeoutMS)
        jobs.start({ () async throws(ClientError) -> Outcome in try await executor.run(request) }) { [unowned self] result in
            self.ended(run, result)
        }
        return true
    }

    /// An operation's end: its answer to whoever asked (unless its time ran out before).
    func ended(_ run: Int, _ result: Result<Outcome, ClientError>) {
        guard let op = runs.removeValue(forKey: run) else { return }
        reply(Self.response(id: op.id, result), op.client)
    }

    static func response(id: Int64, _ result: Result<Outcome, ClientError>) -> DaemonResponse {
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
    func timers(now: UInt64) -> UInt64? {
        var soonest: UInt64? = nil
        for (run, op) in runs {
            if now >= op.deadline {
                runs[run] = nil
                let e = DaemonError(.timeout, "\(op.name) did not finish in \(timeoutMS / 1000) s.")
                op.lease.cancel(e)
                reply(DaemonResponse(id: op.id, error: e), op.client)
            } else {
                soonest = min(soonest ?? op.deadline, op.deadline)
            }
        }
        if let p = port {
            p.tick(now: now)
            if let d = p.nextDeadline { soonest = min(soonest ?? d, d) }
        }
        return soonest
    }

    /// A client went away: its operations are cancelled (nobody is left to answer, and they
    /// leave the radio).
    func clientGone(_ client: Caller) {
        for (run, op) in runs where op.client == client {
            runs[run] = nil
            op.lease.cancel(DaemonError(.link, "\(op.name): the client went away."))
        }
    }

    /// The session's port for operations, made with each new session; `commandFinished`: what an
    /// operation's command changed on the radio (the store follows it).
    func open(_ s: Session, commandFinished: @escaping ([UInt8], Reply) -> Void) {
        let p = SessionPort(session: s, jobs: jobs, clock: monotonicMilliseconds)
        p.onCommandFinished = commandFinished
        port = p
    }

    /// The session ended: operations waiting on it end with `reason` (answered at the next pump).
    func close(_ reason: String) {
        port?.close(DaemonError(.link, "the link to the radio was lost (\(reason)); try again once the daemon has reconnected."))
        port = nil
    }

    /// Ends every operation (shutdown).
    func stop() {
        close("the daemon is stopping")
        jobs.runReady()
        for (_, op) in runs {
            reply(DaemonResponse(id: op.id, error: DaemonError(.link, "\(op.name): the daemon is stopping.")), op.client)
        }
        runs.removeAll()
    }
}

extension Daemon {
    /// Checks an operation's request (the door's share, its arguments, the link) and starts it.
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
        // SIGN_START to SIGN_FINISH is one buffer on the radio: two signings at once would mix
        // their data (the observer's broker token and an API client's `sign`).
        if req.name == "sign", ops.runs.values.contains(where: { $0.name == "sign" }) {
            throw DaemonError(.busy, "sign: the radio is signing other data; try again when that is done.")
        }
        var fields: [String: Value] = [:]
        if case .object(let pairs) = req.args { for (k, v) in pairs { fields[k] = v } }
        let request = try Request(apiOp: req.name, fields: fields)
        try request.validate()
        guard phase == .ready || phase == .syncing, ops.start(request, name: req.name, id: req.id, from: client, now: now) else {
            throw DaemonError(.link, "cannot run \(req.name): the link to the radio (\(config.link)) is down; the daemon is reconnecting.")
        }
        pump(now: now)
    }
}
