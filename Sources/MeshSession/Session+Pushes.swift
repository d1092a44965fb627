import MeshCompanion

// Pushes (codes from 0x80): routed by code to the request they answer, else handed out.

extension Session {
    // MARK: pushes

    func handlePush(_ code: UInt8, _ b: UnsafeRawBufferPointer, now: UInt64) {
        switch code {
        case Push.sendConfirmed where b.count >= 9:
            if confirm(ack: readU32(b, 1), roundTrip: readU32(b, 5), now: now) { return }
        case Push.msgWaiting:
            if config.drainOnWaiting, state == .ready || state == .handshaking { drain(now: now) }
            emit(.push(Array(b)))
            return
        case Push.loginSuccess, Push.loginFail:
            if matchSlot(b, now: now, where: { if case .login = $0 { return true }; return false }, prefixAt: 2) { return }
        case Push.statusResponse:
            if matchSlot(b, now: now, where: { if case .status = $0 { return true }; return false }, prefixAt: 2) { return }
        case Push.telemetryResponse:
            if matchSlot(b, now: now, where: { if case .telemetry = $0 { return true }; return false }, prefixAt: 2) { return }
            // Self telemetry (SEND_TELEMETRY_REQ with len 4) answers with this push code.
            if let c = inFlight, case .codes(let set) = c.expect, set.contains(code) {
                finishInFlight(.frame(Array(b)), frame: b, now: now)
                return
            }
        case Push.pathDiscoveryResponse:
            if matchSlot(b, now: now, where: { if case .pathDiscovery = $0 { return true }; return false }, prefixAt: 2) { return }
        case Push.binaryResponse where b.count >= 6:
            if let r = slotRequest, case .awaiting = r.state, r.tag == readU32(b, 2) {
                switch r.request {
                case .binary, .anon:
                    slotRequest = nil
                    emit(.request(r.ticket, .reply(Array(b))))
                    return
                default: break
                }
            }
        case Push.traceData where b.count >= 8:
            let tag = readU32(b, 4)
            if let i = traces.firstIndex(where: { $0.tag == tag }) {
                let r = traces.remove(at: i)
                emit(.request(r.ticket, .reply(Array(b))))
                return
            }
        case Push.logRxData:
            if !config.forwardLogRx { return }
        default:
            break
        }
        emit(.push(Array(b)))
    }

    func matchSlot(_ b: UnsafeRawBufferPointer, now: UInt64, where kind: (RemoteRequest) -> Bool, prefixAt o: Int) -> Bool {
        guard let r = slotRequest, kind(r.request), prefixMatches(b, at: o, r.request.publicKey, count: 6) else { return false }
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
        guard case .frame = reply, let b, b.count >= 10 else {
            drop()
            switch reply {
            case .error(let e): emit(.request(t, .refused(e)))
            case .timeout: emit(.request(t, .timeout))
            case .cancelled: emit(.request(t, .cancelled))
            default: emit(.request(t, .refused(0)))
            }
            return
        }
        let tag = readU32(b, 2)
        let est = readU32(b, 6)
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
