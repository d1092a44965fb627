import MeshLink
import Glibc
import MeshNet
import MeshCompanion
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshHub
import MeshOps

extension Daemon: HubHost {
    /// How many more frames a hub client may queue now (the hub does not read it at 0).
    public func hubRoom(_ client: Int) -> Int {
        hubPart.queue.clients[client] == nil ? HubQueue.capacity : hubPart.queue.room(client)
    }

    /// A frame from a hub client: checked against its listener's classes (a refusal is logged now
    /// and answered in its turn), then queued behind the client's earlier requests.
    public func hubFrame(_ client: Int, _ frame: UnsafeRawBufferPointer) {
        guard let code = frame.first else { return }
        let s = hubSession(client)
        s.requests += 1
        let now = monotonicMilliseconds()
        let kind: HubQueue.Kind
        if !authorizeHub(client, frame) {
            kind = .refused
        } else {
            switch code {
            case CommandCode.deviceQuery.rawValue, CommandCode.appStart.rawValue, CommandCode.syncNextMessage.rawValue:
                kind = .local
            case CommandCode.getContacts.rawValue:
                kind = .contacts
            default:
                kind = .radio
            }
        }
        hubPart.queue.push(client, HubQueue.Request(frame: Array(frame), kind: kind), now: now)
    }

    func hubSession(_ client: Int) -> HubSession {
        if let s = hubPart.sessions[client] { return s }
        let s = HubSession()
        s.app = hub?.listener(of: client)?.app ?? ""
        hubPart.sessions[client] = s
        hubPart.queue.add(client, now: monotonicMilliseconds())
        return s
    }

    /// Answers what the daemon answers itself and gives the radio's turn to the next client, as
    /// far as each can go now; true if a request went to the radio (its frames are for `pump`).
    @discardableResult
    func hubDispatch(now: UInt64) -> Bool {
        guard let hub else { return false }
        var submitted = false
        var progress = true
        // The radio being reached for the first time: nothing to answer DEVICE_QUERY or APP_START
        // with yet, and the radio's requests wait in their queues for it (RadioWait).
        let holdLocal = radioPending && selfInfo.isEmpty
        while progress {
            progress = false
            for id in hubPart.sessions.keys where !holdLocal {
                while let r = hubPart.queue.takeLocal(id, contacts: hubPart.contacts.current, now: now) {
                    hubAnswerLocal(id, r)
                    progress = true
                }
            }
            if let s = session, phase == .ready || phase == .syncing {
                // The daemon's own commands (sync, keepalive, outbox, API clients) go first: a hub
                // request gets the radio only when none of those waits.
                if s.commandsPending == 0, let (id, r) = hubPart.queue.nextRadio(now: now) {
                    do {
                        let t = try s.submit(frame: r.frame, expecting: .answering(r.frame), now: now)
                        hubPart.tickets[t] = (id, r.frame)
                        submitted = true
                    } catch {
                        hub.send(ResponseFrame.error(.tableFull).bytes, to: id)
                        hubPart.queue.answered(id)
                    }
                    progress = true
                }
            } else if !radioPending {
                // No radio right now: each request for it gets ERR (bad state) in its turn.
                for id in hubPart.sessions.keys {
                    while hubPart.queue.takeRadioHead(id) != nil {
                        hub.send(ResponseFrame.error(.badState).bytes, to: id)
                        progress = true
                    }
                }
            }
            if hub.resume() { progress = true }
        }
        return submitted
    }

    /// When the hub next needs `hubDispatch` for a client waiting on its request rate.
    func hubTimers(now: UInt64) -> UInt64? {
        // Requests waiting for the radio being reached: its handshake wakes the loop, not a timer.
        guard phase == .ready || phase == .syncing, let d = hubPart.queue.nextDeadline(now: now) else { return nil }
        if d <= now {
            pump(now: now)
            return hubPart.queue.nextDeadline(now: now).map { max($0, now + 1) }
        }
        return d
    }

    /// A request the daemon answers itself, in its client's turn.
    func hubAnswerLocal(_ client: Int, _ r: HubQueue.Request) {
        guard let hub, let s = hubPart.sessions[client] else { return }
        if r.kind == .refused {
            hub.send(ResponseFrame.error(.unsupportedCommand).bytes, to: client)
            return
        }
        if (r.frame.first == CommandCode.deviceQuery.rawValue && deviceInfo.isEmpty)
            || (r.frame.first == CommandCode.appStart.rawValue && selfInfo.isEmpty) {
            // The radio has never answered this daemon: nothing to answer with.
            hub.send(ResponseFrame.error(.badState).bytes, to: client)
            return
        }
        switch r.frame.first {
        case CommandCode.deviceQuery.rawValue:
            s.v3 = r.frame.count >= 2 && r.frame[1] >= 3
            hub.send(hubReplyFrame(deviceInfo, to: client), to: client)
        case CommandCode.appStart.rawValue:
            let named = r.frame.withUnsafeBytes { b -> String? in
                if case .appStart(let name)? = try? CompanionCommand.decode(b) { return String(decoding: name, as: UTF8.self) }
                return nil
            }
            let listenerApp = hub.listener(of: client)?.app
            let app = listenerApp ?? named ?? s.app
            if app != s.app || !s.seeded {
                if s.seeded { hubSaveCursor(s) }
                s.app = app
                hubSeed(s)
            }
            hub.send(selfInfo, to: client)
        case CommandCode.getContacts.rawValue:
            // The daemon's copy of the radio's table is current (HubContacts): answered as the radio would.
            // CONTACTS_START goes at once, the records and END_OF_CONTACTS in one write after it.
            if !hubPart.contacts.answer(r.frame, { hub.send(hubReplyFrame($0, to: client), to: client, flush: $0.first == ResponseCode.contactsStart.rawValue) }) {
                hub.send(ResponseFrame.error(.badState).bytes, to: client, flush: false)
            }
            hub.flush(client)
        case CommandCode.syncNextMessage.rawValue:
            if !s.seeded { hubSeed(s) }
            let f = hubNextMessage(s)
            if f.first != ResponseCode.noMoreMessages.rawValue { s.delivered += 1 }
            hub.send(f, to: client)
        default:
            hub.send(ResponseFrame.error(.unsupportedCommand).bytes, to: client)
        }
    }

    /// Seeds a connection's cursor from its app's persisted one, or the recent backlog, and marks
    /// the app seen (its cursor file is written; a new app may make room by removing old ones).
    func hubSeed(_ s: HubSession) {
        s.seeded = true
        guard let store else { return }
        let newest = store.nextMessageId > 0 ? store.nextMessageId - 1 : 0
        let start = newest > HubCursors.backlog ? newest - HubCursors.backlog : 0
        guard !s.app.isEmpty else { s.cursor = start; s.cursorName = nil; return }
        let name = HubCursors.name(forApp: s.app)
        s.cursorName = name
        let stored = (try? store.storedCursor(name)) ?? nil
        s.cursor = stored ?? start
        let wall = Int(time(nil))
        if stored == nil || wall - (hubPart.cursorTouched[name] ?? 0) >= HubCursors.touchEveryS {
            do {
                try store.setCursor(name, s.cursor)
                hubPart.cursorTouched[name] = wall
            } catch { log("store: cannot save the cursor \(name): \(error)") }
            if stored == nil { hubCursorHousekeeping() }
        }
    }

    /// Removes the cursors of apps unseen for 30 days, and the least recently seen beyond 64.
    func hubCursorHousekeeping() {
        guard let store, !store.readOnly else { return }
        let inUse = Set(hubPart.sessions.values.compactMap(\.cursorName))
        let gone = HubCursors.expired(store.cursors(prefix: "hub-"), now: Int(time(nil)), inUse: inUse)
        guard !gone.isEmpty else { return }
        var removed = 0
        for name in gone {
            do {
                try store.removeCursor(name)
                hubPart.cursorTouched[name] = nil
                removed += 1
            } catch { log("store: cannot remove the cursor \(name): \(error)") }
        }
        log("hub: removed \(removed) app cursor(s) unseen for \(HubCursors.maxAgeS / 86_400) days or beyond the \(HubCursors.maxApps) kept")
    }

    /// The answer to a hub client's SYNC_NEXT_MESSAGE: the next received message past its cursor,
    /// or NO_MORE_MESSAGES (persisting the app's cursor).
    func hubNextMessage(_ s: HubSession) -> [UInt8] {
        guard let store else { return ResponseFrame.noMoreMessages().bytes }
        while let m = (try? store.messages(after: s.cursor, limit: 1, incomingOnly: true))?.first {
            s.cursor = m.id
            if let f = Self.hubFrame(for: m, v3: s.v3) { return f }
        }
        hubSaveCursor(s)
        return ResponseFrame.noMoreMessages().bytes
    }

    func hubSaveCursor(_ s: HubSession) {
        guard let store, let name = s.cursorName else { return }
        // Two connections of one app: the app's cursor is the furthest either reached.
        let old = ((try? store.storedCursor(name)) ?? nil) ?? 0
        guard s.cursor > old else { return }
        do {
            try store.setCursor(name, s.cursor)
            hubPart.cursorTouched[name] = Int(time(nil))
        } catch { log("store: cannot save the cursor \(name): \(error)") }
    }

    /// A stored message as the frame version the client negotiated.
    static func hubFrame(for m: StoredMessage, v3: Bool) -> [UInt8]? {
        guard var f = TunnelQueue.frame(for: m) else { return nil }
        guard !v3, let code = f.first else { return f }
        // Legacy layout: the V3 frame without SNR and the two reserved bytes after it.
        switch code {
        case ResponseCode.contactMessage.rawValue, ResponseCode.channelMessage.rawValue:
            guard f.count >= 4 else { return f }
            f.removeSubrange(1..<4)
            f[0] = code == ResponseCode.contactMessage.rawValue ? ResponseCode.contactMessageLegacy.rawValue : ResponseCode.channelMessageLegacy.rawValue
            return f
        default:
            return f
        }
    }

    /// The radio answered (or did not) a hub client's request: the answer to that client, in one
    /// write; the radio's turn is free again. False if the ticket is not the hub's.
    func hubReply(_ t: Ticket, _ r: Reply) -> Bool {
        guard let w = hubPart.tickets.removeValue(forKey: t) else { return false }
        hubPart.queue.answered(w.client)
        // The answer goes out first, in one write; the store's bookkeeping after it.
        if let hub, hubPart.sessions[w.client] != nil {
            // A contacts listing went to the client frame by frame as it came (`hubRadioFrame`).
            if case .contacts = r {} else {
                tunnelReplyFrames(w.frame, r) { hub.send(hubReplyFrame($0, to: w.client), to: w.client, flush: false) }
            }
            switch r {
            case .timeout, .cancelled: hub.send(ResponseFrame.error(.badState).bytes, to: w.client, flush: false)
            case .frame(let f):
                if let sent = Self.sentInfo(f) {
                    hubPart.ackOwners.append((sent.tag, w.client))
                    if hubPart.ackOwners.count > 256 { hubPart.ackOwners.removeFirst() }
                }
            default: break
            }
            hub.flush(w.client)
        }
        recordTunnelSend(w.frame, r)
        keepListedContacts(w.frame, r)
        // Contacts and channels a client changed: the daemon's copies follow.
        switch CommandCode(rawValue: w.frame.first ?? 0) {
        case .addUpdateContact, .removeContact, .importContact, .resetPath, .setAdvertName, .setAdvertLatLon, .setOtherParams:
            if sync.contactsResyncAt == nil { sync.contactsResyncAt = monotonicMilliseconds() }
        case .setChannel:
            if case .ok = r, sync.channelTickets.isEmpty { syncChannels(now: monotonicMilliseconds()) }
        default:
            break
        }
        return true
    }

    /// A reply frame as a hub client gets it: with its secret bytes zeroed (`Secrets`: the BLE PIN
    /// in DEVICE_INFO, a channel's secret in CHANNEL_INFO, ...) unless its listener allows `secret`.
    /// GET_CHANNEL itself is `read`: an app sees the channel's name and index, not its key.
    func hubReplyFrame(_ f: [UInt8], to client: Int) -> [UInt8] {
        guard hub?.listener(of: client)?.allowed.allows(.secret) != true else { return f }
        return Secrets.redacted(reply: f)
    }

    /// Every frame from the radio, before the session takes it: the hub's copy of the contacts
    /// learns from it, and a hub client's contacts listing goes to that client frame by frame as
    /// the radio sends it (CONTACTS_START, CONTACT..., END_OF_CONTACTS), not held until its end. A
    /// hub request is in flight at the radio whenever it has a ticket (`hubDispatch` hands the
    /// turn out only when the session has nothing else queued).
    func hubRadioFrame(_ f: UnsafeRawBufferPointer) {
        hubPart.contacts.received(f)
        guard let hub, let code = f.first, code >= ResponseCode.contactsStart.rawValue, code <= ResponseCode.endOfContacts.rawValue,
              let w = hubPart.tickets.values.first, w.frame.first == CommandCode.getContacts.rawValue, hubPart.sessions[w.client] != nil else { return }
        hub.send(hubReplyFrame(Array(f), to: w.client), to: w.client)
    }

    /// A push: to every hub client, except SEND_CONFIRMED, which goes to the client whose send it
    /// confirms (nobody's when it is the daemon's own or a tunnel client's).
    func hubPush(_ p: Push) {
        guard let hub else { return }
        if case .sendConfirmed(let c) = p.kind {
            if let i = hubPart.ackOwners.firstIndex(where: { $0.ack == c.ack }) {
                let owner = hubPart.ackOwners.remove(at: i).client
                hub.send(p.frame, to: owner)
            }
            return
        }
        for c in hub.clientIDs { hub.send(p.frame, to: c) }
    }

    /// A message was stored: MSG_WAITING to every hub client.
    func hubMessageWaiting() {
        guard let hub else { return }
        for c in hub.clientIDs { hub.send(PushFrame.messageWaiting().bytes, to: c) }
    }

    /// The radio link went down: a request at the radio was cancelled with the session (and got
    /// ERR); the waiting ones get theirs in their turn (`hubDispatch`).
    func hubLinkLost() {
        hubPart.contacts.forget()
        for (t, _) in hubPart.tickets { _ = hubReply(t, .cancelled) }
        hubDispatch(now: monotonicMilliseconds())
    }

    public func hubGone(_ client: Int) {
        if let s = hubPart.sessions.removeValue(forKey: client) { hubSaveCursor(s) }
        hubPart.queue.remove(client)
        hubPart.ackOwners.removeAll { $0.client == client }
    }

    /// Each hub client as `status` shows it.
    var hubStatus: [(String, JSON)] {
        guard let hub else { return [] }
        let now = monotonicMilliseconds()
        let list: [JSON] = hub.clientIDs.sorted().compactMap { id in
            guard let info = hub.info(id) else { return nil }
            let s = hubPart.sessions[id]
            let listener: String = info.listener.address.description + (info.listener.webSocket ? " (WebSocket)" : "")
            let idle: UInt64 = now >= info.lastHeard ? now - info.lastHeard : 0
            var f: [(String, JSON)] = []
            f.append(("client", .int(Int64(HubServer.number(id)))))
            f.append(("app", .string(s?.app ?? "")))
            f.append(("listener", .string(listener)))
            f.append(("allows", .string(info.listener.allowed.description)))
            f.append(("address", .string(info.peer)))
            f.append(("requests", .int(Int64(s?.requests ?? 0))))
            f.append(("refused", .int(Int64(s?.refused ?? 0))))
            f.append(("messages_delivered", .int(Int64(s?.delivered ?? 0))))
            f.append(("waiting", .int(Int64(hubPart.queue.waitingCount(id)))))
            f.append(("connected_s", .int(Int64((now - info.connectedAt) / 1000))))
            f.append(("idle_s", .int(Int64(idle / 1000))))
            return JSON.object(f)
        }
        // The copy of the radio's contacts that hub clients' GET_CONTACTS is answered from, while current.
        let copy: JSON = .object([("current", .bool(hubPart.contacts.current)), ("contacts", .int(Int64(hubPart.contacts.records.count)))])
        return [("hub_clients", .array(list)), ("hub_contacts", copy)]
    }
}
