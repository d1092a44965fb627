import MeshCompanion

// Pushes (codes from 0x80): routed by code to the request they answer, else handed out.

extension Session {
    // MARK: pushes

    /// A push: decoded once; what answers a request of this session goes to it, the rest is
    /// handed out as a `.push`.
    func handlePush(_ code: UInt8, _ b: UnsafeRawBufferPointer, now: UInt64) {
        let push = Push(b)
        switch push.kind {
        case .sendConfirmed(let c):
            if confirm(ack: c.ack, roundTrip: c.roundTripMs, now: now) { return }
        case .messageWaiting:
            // A repeater's CLI reply is a queued contact message: fetch it even when the shell
            // does not drain on its own (one-shot commands).
            if config.drainOnWaiting || commandRequest != nil, state == .ready || state == .handshaking { drain(now: now) }
        case .loginSuccess(let l):
            if matchSlot(prefix: l.prefix, push, where: { if case .login = $0 { return true }; return false }) { return }
        case .loginFail(let p):
            if matchSlot(prefix: p, push, where: { if case .login = $0 { return true }; return false }) { return }
        case .status(let p, _):
            if matchSlot(prefix: p, push, where: { if case .status = $0 { return true }; return false }) { return }
        case .telemetry(let p, _):
            if matchSlot(prefix: p, push, where: { if case .telemetry = $0 { return true }; return false }) { return }
            // Self telemetry (SEND_TELEMETRY_REQ with len 4) answers with this push code.
            if let c = inFlight, case .codes(let set) = c.expect, set.contains(code) {
                finishInFlight(.frame(push.frame), frame: b, now: now)
                return
            }
        case .pathDiscovery(let p, _, _, _, _):
            if matchSlot(prefix: p, push, where: { if case .pathDiscovery = $0 { return true }; return false }) { return }
        case .binary(let tag, _):
            if let r = slotRequest, case .awaiting = r.state, r.tag == tag {
                switch r.request {
                case .binary, .anon:
                    slotRequest = nil
                    emit(.request(r.ticket, .reply(push.frame)))
                    return
                default: break
                }
            }
        case .trace(let tag, _, _, _, _, _):
            if let i = traces.firstIndex(where: { $0.tag == tag }) {
                let r = traces.remove(at: i)
                emit(.request(r.ticket, .reply(push.frame)))
                return
            }
        case .logRxData:
            if !config.forwardLogRx { return }
        default:
            break
        }
        emit(.push(push))
    }

    /// The radio's one pending request, if it is of `kind` and for a key starting with `prefix`,
    /// takes `push` as its answer.
    func matchSlot(prefix: KeyPrefix, _ push: Push, where kind: (RemoteRequest) -> Bool) -> Bool {
        guard let r = slotRequest, kind(r.request), r.request.publicKey.starts(with: prefix.bytes) else { return false }
        slotRequest = nil
        emit(.request(r.ticket, .reply(push.frame)))
        return true
    }

    // MARK: remote requests

    func requestSent(ticket t: Ticket, _ r: RemoteRequest, _ reply: Reply, frame b: UnsafeRawBufferPointer?, now: UInt64) {
        func drop() {
            if slotRequest?.ticket == t { slotRequest = nil }
            if commandRequest?.ticket == t { commandRequest = nil }
            traces.removeAll { $0.ticket == t }
        }
        guard case .frame = reply, let b, case .sent(let sent)? = try? CompanionFrame.decode(b) else {
            drop()
            switch reply {
            case .error(let e): emit(.request(t, .refused(e)))
            case .timeout: emit(.request(t, .timeout))
            case .cancelled: emit(.request(t, .cancelled))
            default: emit(.request(t, .refused(0)))
            }
            return
        }
        let tag = sent.tag, est = sent.estimatedTimeoutMs
        var wait: UInt64
        if config.requestTimeoutFixed || est == 0 {
            wait = config.requestTimeout
        } else {
            wait = UInt64(Double(est) * config.requestTimeoutFactor)
        }
        wait = max(wait, config.minReplyTimeout)
        let deadline = now &+ wait
        if slotRequest?.ticket == t {
            slotRequest!.tag = tag
            slotRequest!.state = .awaiting(deadline: deadline)
        } else if commandRequest?.ticket == t {
            commandRequest!.tag = tag
            commandRequest!.state = .awaiting(deadline: deadline)
        } else if let i = traces.firstIndex(where: { $0.ticket == t }) {
            if case .trace(let ourTag, _, _, _) = r { traces[i].tag = ourTag } else { traces[i].tag = tag }
            traces[i].state = .awaiting(deadline: deadline)
        } else {
            return  // superseded while its command was in flight
        }
        emit(.request(t, .sent(estimatedTimeout: est)))
    }
}
