import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshSession
import MeshStore
import MeshOps
import MeshDaemonClient

/// The daemon's answers to local API requests, and the frame tunnel the command line uses for
/// everything else.
extension Daemon {
    func handle(_ req: DaemonRequest, _ client: Caller) -> DaemonResponse? {
        defer { reportReadDamage() }
        do throws(DaemonError) {
            try authorize(req, client)
            if radioPending && needsRadio(req) {
                // The radio is being reached: the request waits for it (DaemonRadioWait.swift).
                waitForRadio(.request(req), client, now: monotonicMilliseconds())
                return nil
            }
            return try answer(req, client)
        } catch {
            return DaemonResponse(id: req.id, error: error)
        }
    }

    /// A request that waited for the radio (authorized when it came), answered now.
    func answerAfterWait(_ req: DaemonRequest, _ client: Caller) -> DaemonResponse? {
        defer { reportReadDamage() }
        do throws(DaemonError) { return try answer(req, client) } catch { return DaemonResponse(id: req.id, error: error) }
    }

    func requireStore() throws(DaemonError) -> RadioStore {
        guard let store else {
            throw DaemonError(.link, "the daemon has not reached the radio on \(config.link) yet" + (radio.radioProblem.map { " (\($0))" } ?? "")
                              + "; it keeps trying.")
        }
        return store
    }

    func requireSession(_ what: String) throws(DaemonError) -> Session {
        guard phase == .ready || phase == .syncing, let s = session else {
            throw DaemonError(.link, "cannot \(what): the link to the radio (\(config.link)) is down" + (radio.radioProblem.map { " (\($0))" } ?? "")
                              + "; the daemon is reconnecting.")
        }
        return s
    }

    func storeError(_ e: Error) -> DaemonError {
        if case StoreError.unknownThread(let q) = e { return DaemonError(.notFound, "no contact or channel matches \"\(q)\".") }
        if case StoreError.ambiguousThread = e { return DaemonError(.usage, "\(e).") }
        return DaemonError(.storage, "\(e)")
    }

    func answer(_ req: DaemonRequest, _ client: Caller) throws(DaemonError) -> DaemonResponse? {
        let now = monotonicMilliseconds()
        if req.op == .operation {
            try startOperation(req, client, now: now)
            return nil  // answered when the worker is done
        }
        // The op's fields, by its row of the operation table (unknown, mistyped and missing ones refused).
        let v = try req.values()
        switch req.op {
        case .ping:
            return DaemonResponse(id: req.id, ok: [("pid", .int(Int64(getpid()))), ("version", .string(PocketMeshVersion.string)),
                                                         ("state", .string(phase.rawValue))])

        case .status:
            var f: [(String, JSON)] = [("state", .string(phase.rawValue)), ("link", .string(config.link)),
                                       ("uptime_s", .int(Int64((now - life.startedAt) / 1000))),
                                       ("connections", .int(Int64(radio.connections))),
                                       ("stored", .int(Int64(storage.storedCount))), ("duplicates", .int(Int64(storage.duplicateCount))),
                                       ("held", .int(Int64((store?.heldMessages.count ?? 0) + storage.unsaved.count))),
                                       ("held_in_memory", .int(Int64(storage.unsaved.count))),
                                       ("subscribers", .int(Int64(api.subscriberCount + (requests.web?.subscriberCount ?? 0)))),
                                       ("operations", .int(Int64(ops.runs.count)))]
            if let k = radioKeyHex { f.append(("radio", .string(k))) }
            if let store {
                f.append(("store", .string(store.directory)))
                f.append(("messages", .int(Int64(store.messageCount))))
                f.append(("outbox", .int(Int64(store.outbox.count))))
                f.append(("sync_cursor", .int(Int64(requests.tunnelQueue.cursor))))
            }
            if let h = hooks {
                f.append(("hook_cursor", .int(Int64(h.cursor))))
                f.append(("hooks_running", .int(Int64(h.runningCount))))
                f.append(("hooks_failed", .int(Int64(h.failed.count))))
            }
            f.append(("radio_connected", .bool(phase == .ready || phase == .syncing)))
            if let p = radio.radioProblem { f.append(("radio_problem", .string(p))) }
            // The loop's wake-ups since the start (poll returns): an idle daemon's grow only with
            // work that is due (keepalive, watchdog), never every second.
            f.append(("loop_wakeups", .int(Int64(clamping: loop.wakeups))))
            f += mqttStatus
            f += hubStatus
            return DaemonResponse(id: req.id, ok: seesLocalDetails(client) ? f : Self.statusForRemoteDoor(f))

        case .info:
            _ = try requireSession("read the radio's info")
            return DaemonResponse(id: req.id, ok: infoFields())

        case .contacts:
            let store = try requireStore()
            let list = store.contacts.filter { !$0.removed }.map(MessageJSON.contact)
            return DaemonResponse(id: req.id, ok: [("contacts", .array(list))])

        case .contactsPending:
            let store = try requireStore()
            return DaemonResponse(id: req.id, ok: [("result", .array(pendingList(store).map(MessageJSON.pending)))])

        case .contactsFlushPending:
            let store = try requireStore()
            let all = pendingList(store)
            do { for c in all { try store.dropPending(publicKey: c.publicKey) } } catch { throw storeError(error) }
            return DaemonResponse(id: req.id, ok: [("dropped", .int(Int64(all.count)))])

        case .contactsAddPending:
            let store = try requireStore()
            let s = try requireSession("add a contact")
            let want = try v.required("prefix")
            let c = try pendingMatch(want, in: pendingList(store))
            // ADD_UPDATE_CONTACT with the advert's own data: type, name, location, advert time, path.
            guard let contact = CompanionFrame.owned(c.frame(), { if case .contact(let r) = $0 { return r.contact }; return nil }),
                  let frame = try? CommandFrame.addUpdateContact(contact, includeLastModified: false).bytes else {
                throw DaemonError(.internal, "the pending advert of \(c.name) cannot be encoded as a contact.")
            }
            let t: Ticket
            do { t = try s.submit(frame: frame, expecting: .codes(CodeSet(ResponseCode.ok.rawValue)), now: now) } catch {
                throw DaemonError(.busy, "contacts_add_pending: \(error)")
            }
            requests.replyTickets[t] = (client, req.id, "adding \(c.name)", nil)
            requests.replyAfterOK[t] = { [unowned self] in
                try? self.store?.dropPending(publicKey: c.publicKey)
                if self.sync.contactsResyncAt == nil { self.sync.contactsResyncAt = monotonicMilliseconds() }
                return [("status", .string("ok")), ("name", .string(c.name)), ("public_key", .string(c.publicKeyHex))]
            }
            pump(now: now)
            return nil

        case .channels:
            let store = try requireStore()
            let list = store.channels.filter { !$0.name.isEmpty }.map(MessageJSON.channel)
            return DaemonResponse(id: req.id, ok: [("channels", .array(list))])

        case .send:
            let store = try requireStore()
            let to = try v.required("to")
            let text = v.words("text") ?? ""
            let wait = v.flag("wait")
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty else { throw DaemonError(.usage, "send: the text is empty.") }
            guard bytes.count <= 160 else { throw DaemonError(.usage, "send: the text is \(bytes.count) bytes; the radio takes at most 160.") }
            let thread: ThreadKey
            do { thread = try store.resolveThread(to) } catch { throw storeError(error) }
            guard thread.kind != .channel else { throw DaemonError(.usage, "send: \"\(to)\" is a channel; use channel_send.") }
            guard store.contact(prefix: thread.peer) != nil else { throw DaemonError(.notFound, "no contact matches \"\(to)\".") }
            let origin = outboxOrigin(of: client)
            try checkOutboxRoom(store, origin: origin, to: thread.peer, door: frontEnd(of: client).name)
            let wall = UInt32(truncatingIfNeeded: time(nil))
            let rec = StoredMessage(kind: thread.kind ?? .direct, direction: .outgoing, peer: thread.peer,
                                    senderTimestamp: wall, receivedAt: wall, text: bytes)
            let item: OutboxItem
            do { item = try store.enqueue(rec, now: wall, origin: origin) } catch { throw storeError(error) }
            log("outbox: message \(item.messageId) queued for \(thread.peer)")
            sendOutbox(now: now)
            if wait {
                outboxPart.sendWaiters[item.messageId, default: []].append((client, req.id))
                return nil
            }
            let m = (try? store.message(id: item.messageId)).flatMap { $0 }
            return DaemonResponse(id: req.id, ok: m.map { [("message", MessageJSON.message($0, store: store))] } ?? [])

        case .sync:
            let s = try requireSession("drain the radio's queue")
            s.drain(now: now)
            pump(now: now)
            return DaemonResponse(id: req.id, ok: [("draining", true)])

        case .chats:
            let store = try requireStore()
            do {
                let list = try store.conversations().map { c -> JSON in
                    .obj(("thread", .string(c.thread.description)), ("name", .string(c.name)),
                         ("unread", .int(Int64(c.unread))), ("messages", .int(Int64(c.messageCount))),
                         ("last", MessageJSON.message(c.lastMessage, store: store)))
                }
                return DaemonResponse(id: req.id, ok: [("chats", .array(list))])
            } catch { throw storeError(error) }

        case .history:
            let store = try requireStore()
            let q = try v.required("thread")
            let limit = Int(clamping: v["limit"]?.intValue ?? 50)
            let before = v["before"]?.intValue.map { UInt64(max(0, $0)) }
            do {
                let t = try store.resolveThread(q)
                let ms = try store.history(t, limit: max(1, min(limit, 10_000)), before: before)
                return DaemonResponse(id: req.id, ok: [("thread", .string(store.name(of: t))),
                                                       ("messages", .array(ms.map { MessageJSON.message($0, store: store) }))])
            } catch { throw storeError(error) }

        case .outbox:
            let store = try requireStore()
            let list = store.outbox.map { i -> JSON in
                .obj(("id", .int(Int64(i.messageId))), ("to", .string(i.thread.peer.description)),
                     ("text", .string(String(decoding: i.text, as: UTF8.self))), ("attempts", .int(Int64(i.attempts))),
                     ("next_attempt_at", .int(Int64(i.nextAttemptAt))))
            }
            return DaemonResponse(id: req.id, ok: [("outbox", .array(list))])

        case .hooksFailed, .hooksRetry, .hooksDrop:
            return try answerHooks(req, v)

        case .samplesSignal, .samplesBattery:
            return try answerSamples(req, v)

        case .subscribe, .tunnel:
            return DaemonResponse(id: req.id, ok: [])  // handled by the server

        case .operation:
            return nil  // started above
        }
    }

    /// `hooks_failed`, `hooks_retry ID`, `hooks_drop ID`: messages whose hook was given up.
    func answerHooks(_ req: DaemonRequest, _ v: OperationValues) throws(DaemonError) -> DaemonResponse {
        guard let h = hooks else { throw DaemonError(.usage, "this daemon runs no hook (start it with --on-message CMD).") }
        if req.op == .hooksFailed {
            let list = h.failed.sorted { $0.key < $1.key }.map { id, f -> JSON in
                let m = store.flatMap { s in (try? s.message(id: id)).flatMap { $0 }.map { MessageJSON.message($0, store: s) } }
                return .obj(("id", .int(Int64(clamping: id))), ("attempts", .int(Int64(f.attempts))), ("reason", .string(f.reason)),
                            ("retrying", .bool(f.retrying)), ("message", m))
            }
            return DaemonResponse(id: req.id, ok: [("failed", .array(list))])
        }
        // The message is `message` (the row's <id>): `id` is the request's own (echoed in the answer).
        guard let id: UInt64 = v.integer("id") else {
            throw v.usage("id", "is missing.")
        }
        let raw = Int64(id)
        let ok = req.op == .hooksRetry ? h.retry(id) : h.drop(id)
        guard ok else {
            throw DaemonError(.notFound, h.failed[id] != nil ? "message \(id)'s hook is running now; try again when it ends."
                                                            : "message \(id) is not among the messages whose hook was given up (see `pocketmesh hooks failed`).")
        }
        if req.op == .hooksRetry { _ = h.tick(now: monotonicMilliseconds()) }
        return DaemonResponse(id: req.id, ok: [("message", .int(raw)), (req.op == .hooksRetry ? "retrying" : "dropped", .bool(true))])
    }

    /// The `info` op: the same fields as `pocketmesh info --json` (`RadioInfo`).
    func infoFields() -> [(String, JSON)] {
        guard let s = radioSelf, case .object(let fields) = RadioInfo.value(s, radioDevice) else { return [] }
        return fields.map { ($0.key, $0.value) }
    }

    func clientGone(_ client: APIServer.ClientID) {
        for (t, w) in requests.tunnelTickets where w.client == client { requests.tunnelTickets[t] = (-1, w.frame) }
        requests.tunnelQueue.disconnected(client)
        callerGone(.api(client))
    }

    /// An API or web client has gone: what it waited for is answered to nobody.
    func callerGone(_ client: Caller) {
        for (k, v) in outboxPart.sendWaiters {
            let rest = v.filter { $0.0 != client }
            outboxPart.sendWaiters[k] = rest.isEmpty ? nil : rest
        }
        for (t, w) in requests.replyTickets where w.client == client {
            // The command still completes on the radio; only the answer has nobody to go to.
            requests.replyTickets[t] = (.gone, w.id, w.what, w.record)
        }
        radioWaitsGone(client)
        // Its operations are cancelled: nobody is left to answer, and they leave the radio.
        ops.clientGone(client)
    }

    /// An event to every subscriber: the API socket's and the web console's.
    func publish(_ event: JSON, logRx: Bool = false) {
        api.publish(event, logRx: logRx)
        requests.web?.publish(event, logRx: logRx)
    }

    // MARK: - tunnel

    /// A companion command from a tunnel client. The daemon owns the radio's message queue and
    /// the handshake, so those are answered here; everything else goes to the radio in turn with
    /// the daemon's own commands, and its response goes back to the client that sent it.
    func tunnelFrame(_ client: APIServer.ClientID, _ frame: UnsafeRawBufferPointer) {
        guard let code = frame.first else { return }
        let now = monotonicMilliseconds()
        // A client with fewer than every class (an `--api-group` member): each frame by its class,
        // as a hub client's; a refused one gets ERR, as the hub answers it.
        if let allowed = api.allowed(client), allowed != .everything {
            let c = OperationClass(frame: frame)
            if !allowed.allows(c) {
                let what = CommandCode(rawValue: code).map { "\($0)" } ?? "command \(code)"
                log("permission: api client \(client)\(api.peer(client).map { " (uid \($0.uid))" } ?? ""): refused \(what) through the tunnel (\(c.rawValue); allowed: \(allowed))")
                api.sendFrame(ResponseFrame.error(.unsupportedCommand).bytes, to: client)
                return
            }
        }
        switch code {
        case CommandCode.deviceQuery.rawValue:
            api.sendFrame(deviceInfo, to: client)
            return
        case CommandCode.appStart.rawValue:
            api.sendFrame(selfInfo, to: client)
            return
        case CommandCode.syncNextMessage.rawValue:  // the daemon drained the radio; the queue is the store's
            syncNext(client)
            return
        case CommandCode.sendTextMessage.rawValue:
            // A remote CLI command (txt_type 1, or 3 to a companion on protocol 14): its reply is
            // this client's answer.
            if case .sendTextMessage(let m)? = try? CompanionCommand.decode(frame), m.textType == .cliData || m.textType == .cliCommand {
                requests.tunnelQueue.expectCLIReply(from: m.recipientPrefix.bytes, to: client)
            }
        default:
            break
        }
        guard let s = session, phase == .ready || phase == .syncing else {
            api.sendFrame(ResponseFrame.error(.badState).bytes, to: client)  // no radio right now
            return
        }
        do {
            let bytes = Array(frame)
            let t = try s.submit(frame: bytes, expecting: .answering(bytes), now: now)
            requests.tunnelTickets[t] = (client, Array(frame))
        } catch {
            api.sendFrame(ResponseFrame.error(.tableFull).bytes, to: client)  // the command queue is full
            return
        }
        pump(now: now)
    }

    /// Answers SYNC_NEXT_MESSAGE from the store: the next received message past the client's place
    /// as its V3 frame, or NO_MORE_MESSAGES (after persisting the cursor when the round moved it).
    func syncNext(_ client: APIServer.ClientID) {
        guard let store else {
            api.sendFrame(ResponseFrame.noMoreMessages().bytes, to: client)
            return
        }
        while true {
            var found: StoredMessage? = nil
            let step = requests.tunnelQueue.next(for: client) { after in
                // A read error ends the round; the cursor then moves only past what was handed over.
                found = (try? store.messages(after: after, limit: 1, incomingOnly: true))?.first
                reportReadDamage()
                return found?.id
            }
            switch step {
            case .frame(let f):
                api.sendFrame(f, to: client)
                return
            case .message:
                if let m = found, let f = TunnelQueue.frame(for: m) {
                    api.sendFrame(f, to: client)
                    return
                }
                log("tunnel: message \(found?.id ?? 0) cannot be framed; skipped")
            case .noMore(let commit):
                if let c = commit {
                    do { try store.setCursor("sync", c) } catch {
                        log("store: cannot save the sync cursor (\(c)): \(error); those messages may be synced again")
                    }
                }
                api.sendFrame(ResponseFrame.noMoreMessages().bytes, to: client)
                return
            }
        }
    }

    /// A repeater's CLI reply to a command a tunnel client sent goes to that client only: it is the
    /// command's answer, not a message to store, hook or sync later. True when it was handed over.
    func routedToTunnel(_ m: ReceivedMessage) -> Bool {
        guard m.kind == .contact, m.textType == .cliData,
              let f = TunnelQueue.frame(for: MessageJSON.stored(m, receivedAt: 0)),
              let client = requests.tunnelQueue.routeCLIReply(from: m.senderPrefix, frame: f) else { return false }
        api.sendFrame(PushFrame.messageWaiting().bytes, to: client)
        return true
    }

    func tunnelReply(_ client: APIServer.ClientID, frame: [UInt8], _ r: Reply) {
        // The answer first; the store's bookkeeping (an fsync or two) after it.
        if client >= 0 { tunnelReplyFrames(frame, r) { api.sendFrame($0, to: client) } }
        recordTunnelSend(frame, r)
        keepListedContacts(frame, r)
    }

    /// A contacts listing a client asked for is fresh: the store's copy follows (after the answer
    /// went out; only the contacts that changed are written, so a listing costs no fsync).
    func keepListedContacts(_ frame: [UInt8], _ r: Reply) {
        guard frame.first == CommandCode.getContacts.rawValue, case .contacts(let listing) = r, let store else { return }
        let changed = listing.records.compactMap { try? StoredContact(frame: $0) }.filter { store.contact(publicKey: $0.publicKey) != $0 }
        if !changed.isEmpty { _ = try? store.saveContacts(changed) }
    }

    /// The frames that answer a forwarded command, as the radio sent them.
    func tunnelReplyFrames(_ frame: [UInt8], _ r: Reply, _ out: ([UInt8]) -> Void) {
        switch r {
        case .ok: out(ResponseFrame.ok().bytes)
        case .frame(let f): out(f)
        case .error(let e): out(ResponseFrame.error(rawCode: e).bytes)
        case .disabled: out(ResponseFrame.disabled().bytes)
        case .contacts(let listing):
            out(ResponseFrame.contactsStart(count: listing.total).bytes)
            for rec in listing.records { out(rec) }
            out(ResponseFrame.endOfContacts(lastModified: listing.lastmod).bytes)
        case .timeout, .cancelled, .sent:
            break  // the client's own timeout reports it
        }
    }
}

extension Daemon {
    /// Messages sent through a tunnel go into the store's history like the daemon's own.
    func recordTunnelSend(_ frame: [UInt8], _ r: Reply) {
        guard let store else { return }
        let wall = UInt32(truncatingIfNeeded: time(nil))
        frame.withUnsafeBytes { b in
            guard let command = try? CompanionCommand.decode(b) else { return }
            switch command {
            case .sendTextMessage(let m) where m.textType == .plain:
                guard case .frame(let reply) = r, let sent = Self.sentInfo(reply) else { return }
                if m.attempt == 0 {
                    let rec = StoredMessage(kind: .direct, direction: .outgoing, peer: KeyPrefix(sixOf: m.recipientPrefix.bytes),
                                            senderTimestamp: m.timestamp, receivedAt: wall, status: .sent, attempts: 1,
                                            ackTag: sent.tag, text: Array(m.textBytes))
                    if let res = try? store.append(rec) {
                        outboxPart.tunnelAckTags.append((sent.tag, res.id))
                        if outboxPart.tunnelAckTags.count > 64 { outboxPart.tunnelAckTags.removeFirst() }
                    }
                } else if let i = outboxPart.tunnelAckTags.lastIndex(where: { ts in (try? store.message(id: ts.id))??.senderTimestamp == m.timestamp }) {
                    outboxPart.tunnelAckTags.append((sent.tag, outboxPart.tunnelAckTags[i].id))
                }
            case .setFloodScopeKey:
                guard case .ok = r else { return }
                radio.floodScopeFrame = frame
            case .removeContact(let k):
                // The store follows the radio: a removed contact is no longer live (its history
                // keeps the name), so its next advert is pending again in manual-add mode.
                guard case .ok = r else { return }
                do { try store.markContactRemoved(publicKey: k.bytes, now: wall) } catch { log("store: marking a removed contact failed: \(error)") }
            case .sendChannelTextMessage(let m) where m.textType == .plain:
                guard case .ok = r else { return }
                let rec = StoredMessage(kind: .channel, direction: .outgoing, channelIndex: m.channelIndex, senderTimestamp: m.timestamp,
                                        receivedAt: wall, status: .sent, text: Array(m.textBytes))
                _ = try? store.append(rec)
            default:
                break
            }
        }
    }

    /// The SENT reply's fields, or nil for another frame.
    static func sentInfo(_ frame: [UInt8]) -> SentInfo? {
        frame.withUnsafeBytes { b in
            if case .sent(let info)? = try? CompanionFrame.decode(b) { return info }
            return nil
        }
    }

    func tunnelAcked(_ tag: UInt32) {
        guard let i = outboxPart.tunnelAckTags.firstIndex(where: { $0.tag == tag }), let store else { return }
        let id = outboxPart.tunnelAckTags[i].id
        outboxPart.tunnelAckTags.removeAll { $0.id == id }
        try? store.setDelivery(id: id, DeliveryUpdate(status: .acked, ackTag: tag), at: UInt32(truncatingIfNeeded: time(nil)))
    }
}

extension Daemon {
    /// Pending adverts of nodes that are still not contacts.
    func pendingList(_ store: RadioStore) -> [StoredContact] {
        store.pending.filter { p in store.contact(publicKey: p.publicKey).map { $0.removed } ?? true }
    }

    /// The one pending advert whose key starts with `want` (hex) or whose name is `want`.
    func pendingMatch(_ want: String, in list: [StoredContact]) throws(DaemonError) -> StoredContact {
        let hex = want.lowercased()
        let isHex = !hex.isEmpty && hex.count <= 64 && hex.allSatisfy { $0.isHexDigit }
        var found = list.filter { isHex && $0.publicKeyHex.hasPrefix(hex) }
        if found.isEmpty { found = list.filter { $0.name == want } }
        if found.isEmpty { found = list.filter { $0.name.lowercased() == want.lowercased() } }
        guard !found.isEmpty else {
            throw DaemonError(.notFound, "no pending advert matches \"\(want)\": `pocketmesh contacts pending` lists them.")
        }
        guard found.count == 1 else {
            throw DaemonError(.usage, "\(found.count) pending adverts match \"\(want)\": give more of the key.")
        }
        return found[0]
    }
}
