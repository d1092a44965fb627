import MeshCompanion

// Direct messages: ACK tracking, retries, the flood fallback.

extension Session {
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
        guard case .frame = reply, let b, case .sent(let sent)? = try? CompanionFrame.decode(b) else {
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
        let flood = sent.isFlood, tag = sent.tag, est = sent.estimatedTimeoutMs
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
