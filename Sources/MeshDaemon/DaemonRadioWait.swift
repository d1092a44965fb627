import Glibc
import MeshLink
import MeshNet
import MeshDaemonClient
import MeshOps

/// A request that needs the radio, come while the daemon is reaching it (connecting or in the
/// handshake, `radioPending`): it waits, as long as that attempt goes on and at most its own
/// timeout, instead of failing at once with "the link is down" (so `pocketmesh daemon &
/// pocketmesh send ...` works). When the radio is there it runs as if it had just come; when the
/// attempt fails it gets the error a request gets while the link is down; when its time is up,
/// a timeout. Hub clients' requests wait the same way in their queues (DaemonHub.swift).
struct RadioWait {
    enum What {
        /// An API (or MQTT) request, answered with `reply`.
        case request(DaemonRequest)
        /// A tunnel request, answered with `APIServer.completeTunnel`.
        case tunnel(DaemonRequest)
    }

    var client: Caller
    var what: What
    var deadline: UInt64
}

extension Daemon {
    /// An attempt to reach the radio is under way (the link being made, or the handshake on it).
    var radioPending: Bool { phase == .connecting || phase == .handshaking }

    /// Whether `req` cannot be answered before the radio is there: it needs the session, or the
    /// radio's store, which is not open yet.
    func needsRadio(_ req: DaemonRequest) -> Bool {
        switch req.op {
        case .operation, .info, .contactsAddPending, .sync:
            return true
        case .contacts, .contactsPending, .contactsFlushPending, .channels, .send, .chats, .history, .outbox,
             .samplesSignal, .samplesBattery:
            return store == nil
        case .ping, .status, .hooksFailed, .hooksRetry, .hooksDrop, .subscribe, .tunnel:
            return false
        }
    }

    func waitForRadio(_ what: RadioWait.What, _ client: Caller, now: UInt64) {
        radio.radioWaits.append(RadioWait(client: client, what: what, deadline: now + config.operationTimeoutMS))
    }

    /// The answer to a tunnel request now.
    func tunnelOpenResult(_ client: APIServer.ClientID) -> Result<[(String, JSON)], DaemonError> {
        guard phase == .ready || phase == .syncing, !selfInfo.isEmpty else {
            return .failure(DaemonError(.link, "the daemon's radio link (\(config.link)) is down" + (radio.radioProblem.map { " (\($0))" } ?? "")
                                        + "; it is reconnecting."))
        }
        var fields: [(String, JSON)] = [("radio", .string(radioKeyHex ?? ""))]
        // A client with fewer than every class learns which it has (the command line checks a
        // command's class before it runs it; each frame is checked here too).
        if let allowed = api.allowed(client), allowed != .everything { fields.append(("allows", .string(allowed.description))) }
        return .success(fields)
    }

    /// The waits' turn (in the radio owner's): once no attempt is under way any more, each waiting
    /// request runs (the radio is there) or fails (the attempt failed); one past its time gets a
    /// timeout. Returns the next deadline.
    func radioWaitTimers(now: UInt64) -> UInt64? {
        guard !radio.radioWaits.isEmpty else { return nil }
        if !radioPending {
            let waits = radio.radioWaits
            radio.radioWaits.removeAll()
            for w in waits { resume(w, now: now) }
            return radio.radioWaits.map(\.deadline).min()
        }
        var next: UInt64? = nil
        var kept: [RadioWait] = []
        for w in radio.radioWaits {
            if now >= w.deadline {
                let e = DaemonError(.timeout, "the daemon did not reach the radio (\(config.link)) within \(config.operationTimeoutMS / 1000) s; it keeps trying.")
                switch w.what {
                case .request(let req): reply(DaemonResponse(id: req.id, error: e), to: w.client)
                case .tunnel(let req): if case .api(let c) = w.client { api.completeTunnel(c, requestID: req.id, .failure(e)) }
                }
            } else {
                kept.append(w)
                next = min(next ?? w.deadline, w.deadline)
            }
        }
        radio.radioWaits = kept
        return next
    }

    private func resume(_ w: RadioWait, now: UInt64) {
        switch w.what {
        case .request(let req):
            if let r = answerAfterWait(req, w.client) { reply(r, to: w.client) }
        case .tunnel(let req):
            if case .api(let c) = w.client { api.completeTunnel(c, requestID: req.id, tunnelOpenResult(c)) }
        }
    }

    /// A client went away: its waits go too.
    func radioWaitsGone(_ client: Caller) {
        radio.radioWaits.removeAll { $0.client == client }
    }
}
