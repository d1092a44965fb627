import MeshCompanion

/// How a session routes what the radio pushes, and tracks remote requests and direct messages.
extension Session {
    // MARK: pushes

    func handlePush(_ code: UInt8, _ b: UnsafeRawBufferPointer, now: UInt64) {
        switch code {
        case Push.sendConfirmed where b.count >= 9:
            if confirm(ack: readU32(b, 1), roundTrip: readU32(b, 5), now: now) { return }
        case Push.msgWaiting:
            // A repeater's CLI reply is a queued contact message: fetch it even when the shell
            // does not drain on its own (one-shot commands).
            if config.drainOnWaiting || commandRequest != nil, state == .ready || state == .handshaking { drain(now: now) }
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

    // MARK: direct messages

    var outstandingAcks: Int {
        messages.reduce(0) { n, m in if case .waiting = m.state { return n } else { return n + 1 } }
    }

    func startWaitingMessages(now: UInt64) {
        var active = outstandingAcks
        for i in messages.indices where active < config.maxOutstandingAcks {
            if case .waiting = messages[i].state {
                messages[i].state = .sending
                queue.append(sendCommand(messages[i]))
                active += 1
            }
        }
    }

    func sendCommand(_ m: OutgoingMessage) -> Command {
        // Checked when the message was submitted, so encoding cannot fail here.
        let f = (try? CommandFrame.sendTextMessage(to: PublicKey(m.publicKey)!, text: m.text, timestamp: m.timestamp,
                                                   attempt: UInt8(truncatingIfNeeded: m.attempt)).bytes) ?? []
        return Command(frame: f, expect: .codes(CodeSet(Resp.sent)), timeout: config.commandTimeout, purpose: .dmSend(m.ticket))
    }

    func sendFinished(ticket t: Ticket, _ reply: Reply, frame b: UnsafeRawBufferPointer?, now: UInt64) {
        guard let i = messages.firstIndex(where: { $0.ticket == t }) else { return }
        guard case .frame = reply, let b, b.count >= 10 else {
            let m = messages.remove(at: i)
            switch reply {
            case .error(let e): emit(.delivery(m.ticket, .refused(e)))
            case .timeout: emit(.delivery(m.ticket, .timeout))
            case .cancelled: emit(.delivery(m.ticket, .cancelled))
            default: emit(.delivery(m.ticket, .refused(0)))
            }
            startWaitingMessages(now: now)
            return
        }
        let flood = b[1] != 0
        let tag = readU32(b, 2)
        let est = readU32(b, 6)
        let wait = config.ackWait(estimatedTimeout: est)
        messages[i].flood = flood
        while messages[i].tags.count < messages[i].attempt { messages[i].tags.append(0) }
        messages[i].tags.append(tag)
        messages[i].state = .awaitingAck(deadline: now &+ wait)
        emit(.delivery(t, .sent(attempt: messages[i].attempt, flood: flood, estimatedTimeout: est, ackTag: tag)))
    }

    func confirm(ack: UInt32, roundTrip: UInt32, now: UInt64) -> Bool {
        guard let i = messages.firstIndex(where: { $0.tags.contains(ack) }) else { return false }
        let m = messages.remove(at: i)
        let attempt = m.tags.firstIndex(of: ack) ?? m.attempt
        emit(.delivery(m.ticket, .acked(attempt: attempt, roundTrip: roundTrip)))
        startWaitingMessages(now: now)
        return true
    }

    func ackTimedOut(index i: Int, now: UInt64) {
        let next = messages[i].attempt + 1
        if next >= config.sendAttempts {
            let m = messages.remove(at: i)
            emit(.delivery(m.ticket, .failed(attempts: next)))
            startWaitingMessages(now: now)
            return
        }
        let goFlood = next >= config.directAttempts
        messages[i].attempt = next
        messages[i].state = .sending
        if goFlood && !messages[i].flood {
            queue.append(Command(frame: CommandFrame.resetPath(PublicKey(messages[i].publicKey)!).bytes, expect: .codes(CodeSet(Resp.ok)),
                                 timeout: config.commandTimeout, purpose: .dmResetPath(messages[i].ticket)))
        }
        queue.append(sendCommand(messages[i]))
        emit(.delivery(messages[i].ticket, .retrying(attempt: next, flood: goFlood || messages[i].flood)))
    }
}
