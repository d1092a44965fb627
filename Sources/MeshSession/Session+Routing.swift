import MeshCompanion

// How commands go out one at a time and how their answers find them.

extension Session {
    // MARK: - Internals

    func takeTicket() -> Ticket {
        let t = nextTicket
        nextTicket = nextTicket == Ticket.max ? 1 : nextTicket + 1
        return t
    }

    /// APP_START with the configured app name (the default name if that one cannot be encoded).
    func appStartFrame() -> [UInt8] {
        ((try? CommandFrame.appStart(appName: config.appName)) ?? (try? CommandFrame.appStart()))?.bytes ?? [Cmd.appStart]
    }

    func checkUsable() throws(SubmitError) {
        if state == .closed || state == .failed { throw .notUsable }
    }

    func emit(_ e: SessionEvent) {
        if isWithdrawn(e) { return }
        if events.count - eventHead >= config.eventCapacity {
            eventHead += 1
            droppedEvents += 1
        }
        events.append(e)
    }

    /// Queues the next SYNC_NEXT_MESSAGE of a drain, unless the shell paused messages or draining stopped.
    func continueDrain() {
        if drainStopped { draining = false; drainAgain = false; return }
        if messagesPaused { return }
        queue.insert(syncCommand(), at: 0)
    }

    func syncCommand() -> Command {
        syncOutstanding = true
        return Command(frame: [Cmd.syncNextMessage], expect: .codes(CodeSet(Resp.contactMsgRecv, Resp.channelMsgRecv,
            Resp.contactMsgRecvV3, Resp.channelMsgRecvV3, Resp.channelDataRecv, Resp.noMoreMessages)),
            timeout: config.commandTimeout, purpose: .drain)
    }

    /// Puts the next queued command in flight when nothing is.
    func pump(now: UInt64) {
        while inFlight == nil, !queue.isEmpty, state == .handshaking || state == .ready {
            let c = queue.removeFirst()
            outbox.append(c.frame)
            if case .request(let t, let r) = c.purpose { took(request: r, ticket: t) }
            if c.expect == .noReply {
                complete(c, .sent, frame: nil, now: now)
                continue
            }
            inFlight = c
            inFlightDeadline = now &+ c.timeout
            listing = nil
        }
    }

    /// The request's command is going out: the firmware clears its pending slot now.
    func took(request r: RemoteRequest, ticket t: Ticket) {
        let active = ActiveRequest(ticket: t, request: r)
        if r.usesRadioSlot {
            if let old = slotRequest { emit(.request(old.ticket, .superseded)) }
            slotRequest = active
        } else if case .command = r {
            if let old = commandRequest { emit(.request(old.ticket, .superseded)) }
            commandRequest = active
        } else {
            if traces.count >= traceCapacity { emit(.request(traces.removeFirst().ticket, .superseded)) }
            traces.append(active)
        }
    }

    func handleResponse(_ code: UInt8, _ b: UnsafeRawBufferPointer, now: UInt64) {
        guard let c = inFlight else { emit(.unexpected(Array(b))); return }
        switch c.expect {
        case .contacts:
            switch code {
            case Resp.contactsStart where b.count >= 5:
                listing = ContactListing(records: [], total: b.u32(1), lastmod: 0)
                inFlightDeadline = now &+ c.timeout
            case Resp.contact where b.count >= 148:
                if listing == nil { listing = ContactListing(records: [], total: 0, lastmod: 0) }
                // A radio (or whatever answers on its port) listing more than it can hold: the
                // rest is counted, not kept, so a listing never outgrows the memory.
                guard listing!.records.count < contactsLimit else {
                    listing!.refused += 1
                    inFlightDeadline = now &+ c.timeout
                    return
                }
                listing!.records.append(Array(b[0..<148]))
                let lm = b.u32(144)  // ContactRecord.lastModified, read without decoding the rest
                if lm > listing!.lastmod { listing!.lastmod = lm }
                if lm > contactsLastmod { contactsLastmod = lm }
                inFlightDeadline = now &+ c.timeout
            case Resp.endOfContacts:
                let l = listing ?? ContactListing(records: [], total: 0, lastmod: 0)
                finishInFlight(.contacts(l), frame: b, now: now)
            case Resp.err:
                finishInFlight(.error(b.count > 1 ? b[1] : 0), frame: b, now: now)
            default:
                emit(.unexpected(Array(b)))
            }
        case .codes(let set):
            if set.contains(code) {
                finishInFlight(code == Resp.ok ? .ok : .frame(Array(b)), frame: b, now: now)
            } else if code == Resp.err {
                finishInFlight(.error(b.count > 1 ? b[1] : 0), frame: b, now: now)
            } else if code == Resp.disabled {
                finishInFlight(.disabled, frame: b, now: now)
            } else {
                emit(.unexpected(Array(b)))
            }
        case .anyResponse:
            switch code {
            case Resp.ok: finishInFlight(.ok, frame: b, now: now)
            case Resp.err: finishInFlight(.error(b.count > 1 ? b[1] : 0), frame: b, now: now)
            case Resp.disabled: finishInFlight(.disabled, frame: b, now: now)
            default: finishInFlight(.frame(Array(b)), frame: b, now: now)
            }
        case .noReply:
            emit(.unexpected(Array(b)))
        }
    }

    func finishInFlight(_ reply: Reply, frame: UnsafeRawBufferPointer?, now: UInt64) {
        guard let c = inFlight else { return }
        inFlight = nil
        listing = nil
        complete(c, reply, frame: frame, now: now)
    }

    func cancel(_ c: Command) {
        switch c.purpose {
        case .user(let t): emit(.reply(t, .cancelled))
        case .request(let t, _): emit(.request(t, .cancelled))
        case .dmSend, .dmResetPath: break  // reported through `messages`
        case .refresh(let then): if let (t, _) = then { emit(.reply(t, .cancelled)) }
        case .deviceQuery, .appStart, .clock, .drain: break
        }
    }

    /// Routes a finished command to whoever asked for it.
    func complete(_ c: Command, _ reply: Reply, frame b: UnsafeRawBufferPointer?, now: UInt64) {
        switch c.purpose {
        case .user(let t):
            if case .ok = reply, queueRefresh(after: c.frame, ticket: t, reply) { return }
            emit(.reply(t, reply))
        case .refresh(let then):
            if case .frame(let f) = reply, let code = f.first {
                if code == Resp.deviceInfo { deviceInfo = f } else if code == Resp.selfInfo { selfInfo = f }
            }
            if let (t, r) = then { emit(.reply(t, r)) }
        case .deviceQuery:
            if case .frame(let f) = reply { deviceInfo = f } else { handshakeFailed(reply) }
        case .appStart:
            if case .frame(let f) = reply {
                selfInfo = f
                if state == .handshaking {
                    state = .ready
                    emit(.ready(deviceInfo: deviceInfo ?? [], selfInfo: f))
                }
            } else { handshakeFailed(reply) }
        case .clock:
            switch reply {
            case .ok: emit(.clock(.set))
            case .error(6): emit(.clock(.radioAhead))
            default: emit(.clock(.failed(reply)))
            }
        case .drain:
            drained(reply, now: now)
        case .dmSend(let t):
            sendFinished(ticket: t, reply, frame: b, now: now)
        case .dmResetPath:
            break  // the resend is already queued behind it; a refused reset still floods or fails on its own
        case .request(let t, let r):
            requestSent(ticket: t, r, reply, frame: b, now: now)
        }
    }

    /// A command that changed a setting succeeded: read DEVICE_INFO and SELF_INFO again before
    /// its OK is reported, so whoever asks next (this shell, a tunnel client, a new handshake
    /// answered from `selfInfo`) sees the new values. Returns false when nothing needs reading.
    func queueRefresh(after frame: [UInt8], ticket t: Ticket, _ reply: Reply) -> Bool {
        guard let first = frame.first, let code = CommandCode(rawValue: first),
              code.changesSelfInfo || code.changesDeviceInfo else { return false }
        var head: [Command] = []
        let selfToo = code.changesSelfInfo
        if code.changesDeviceInfo {
            head.append(Command(frame: CommandFrame.deviceQuery(appTargetVersion: config.appVersion).bytes,
                                expect: .codes(CodeSet(Resp.deviceInfo)), timeout: config.commandTimeout,
                                purpose: .refresh(then: selfToo ? nil : (t, reply))))
        }
        if selfToo {
            head.append(Command(frame: appStartFrame(), expect: .codes(CodeSet(Resp.selfInfo)), timeout: config.commandTimeout,
                                purpose: .refresh(then: (t, reply))))
        }
        queue.insert(contentsOf: head, at: 0)
        return true
    }

    func handshakeFailed(_ reply: Reply) {
        guard state == .handshaking else { return }
        state = .failed
        emit(.handshakeFailed(reply))
        let q = queue
        queue.removeAll()
        for c in q { cancel(c) }
        for m in messages { emit(.delivery(m.ticket, .cancelled)) }
        messages.removeAll()
        draining = false; syncOutstanding = false
    }
}
