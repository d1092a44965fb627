import MeshCompanion

// Pushes (codes from 0x80): routed by code to the request they answer, else handed out.

extension Session {
    // MARK: pushes

    /// A push, routed on MeshCompanion's zero-copy view: what answers a request of this session
    /// goes to it (owned only then), an ACK for one of its sends completes it, LOG_RX_DATA nobody
    /// asked for is dropped (none of these allocates), and the rest is handed out as an owned `.push`.
    func handlePush(_ code: UInt8, _ b: UnsafeRawBufferPointer, now: UInt64) {
        let view = try? CompanionFrame.decode(b)
        switch view {
        case .sendConfirmed(let c)?:
            if confirm(ack: c.ack, roundTrip: c.roundTripMs, now: now) { return }
        case .messageWaiting?:
            // A repeater's CLI reply is a queued contact message: fetch it even when the shell
            // does not drain on its own (one-shot commands).
            if config.drainOnWaiting || commandRequest != nil, state == .ready || state == .handshaking { drain(now: now) }
        case .loginSuccess(let l)?:
            if matchSlot(prefix: l.prefix, b, where: { if case .login = $0 { return true }; return false }) { return }
        case .loginFail(let p)?:
            if matchSlot(prefix: p, b, where: { if case .login = $0 { return true }; return false }) { return }
        case .statusResponse(let r)?:
            if matchSlot(prefix: r.prefix, b, where: { if case .status = $0 { return true }; return false }) { return }
        case .telemetryResponse(let t)?:
            if matchSlot(prefix: t.prefix, b, where: { if case .telemetry = $0 { return true }; return false }) { return }
            // Self telemetry (SEND_TELEMETRY_REQ with len 4) answers with this push code.
            if let c = inFlight, case .codes(let set) = c.expect, set.contains(code) {
                finishInFlight(.frame(Array(b)), frame: b, now: now)
                return
            }
        case .pathDiscoveryResponse(let p)?:
            if matchSlot(prefix: p.prefix, b, where: { if case .pathDiscovery = $0 { return true }; return false }) { return }
        case .binaryResponse(let r)?:
            if let s = slotRequest, case .awaiting = s.state, s.tag == r.tag {
                switch s.request {
                case .binary, .anon:
                    slotRequest = nil
                    emit(.request(s.ticket, .reply(Array(b))))
                    return
                default: break
                }
            }
        case .traceData(let t)?:
            if let i = traces.firstIndex(where: { $0.tag == t.tag }) {
                let r = traces.remove(at: i)
                emit(.request(r.ticket, .reply(Array(b))))
                return
            }
        case .logRxData?:
            if !forwardsLogRx { return }
        default:
            break
        }
        emit(.push(Push(b)))
    }

    /// The radio's one pending request, if it is of `kind` and for a key starting with `prefix`,
    /// takes the push `b` as its answer.
    func matchSlot(prefix: KeyPrefix, _ b: UnsafeRawBufferPointer, where kind: (RemoteRequest) -> Bool) -> Bool {
        guard let r = slotRequest, kind(r.request), r.request.publicKey.starts(with: prefix.bytes) else { return false }
        slotRequest = nil
        emit(.request(r.ticket, .reply(Array(b))))
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
