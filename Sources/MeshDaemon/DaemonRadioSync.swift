import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshOps

// The session's events: handshake, contacts and channels sync, replies, pushes.

extension Daemon {
    // MARK: - session events

    func processEvents(now: UInt64) {
        guard let s = session else { return }
        while let e = s.nextEvent() {
            // An operation's reply, delivery or request outcome goes to it (and every event to
            // the operations that listen, e.g. for discovery answers or heard repeats).
            if let port = ops.port, port.handle(e) {
                // A command a live radio leaves unanswered: see `handleReply`.
                if case .reply(_, .timeout) = e, radio.pendingLinkLoss == nil {
                    linkLostLater("the radio did not answer a command in time (it may have rebooted)")
                }
                continue
            }
            switch e {
            case .ready(let di, let si):
                radio.lastDeviceInfo = di
                radio.lastSelfInfo = si
                radioReady(now: now)
                if !mqtt.observers.isEmpty, let rs = RadioSelf(frame: si) {
                    for o in mqtt.observers { o.radioReady(self: rs, device: RadioDevice(frame: di), now: now) }
                }
            case .handshakeFailed(let r):
                log("link: handshake with \(config.link) failed (\(r)); is it a MeshCore companion radio?")
                radio.pendingLinkLoss = "handshake failed"
            case .clock(let c):
                switch c {
                case .set: log("radio: clock set")
                case .radioAhead: log("radio: clock is ahead of this host's; left as is")
                case .failed(let r): log("radio: clock sync failed (\(r))")
                }
            case .message(let m):
                received(message: m, now: now)
            case .malformedMessage(let f):
                log("radio: a queued message frame could not be parsed (code 0x\(String(f.first ?? 0, radix: 16)), \(f.count) bytes); skipped")
            case .drainFailed(let r):
                if case .timeout = r {
                    // The radio went quiet mid-drain: it may have rebooted (queue, clock and
                    // handshake lost) behind a link that stayed open. Handshake again.
                    radio.pendingLinkLoss = "the radio did not answer SYNC_NEXT_MESSAGE (it may have rebooted)"
                } else {
                    log("radio: draining stopped (\(r))")
                }
            case .push(let p):
                handlePush(p, now: now)
            case .reply(let t, let r):
                handleReply(t, r, now: now)
            case .delivery:
                // Direct messages are sent by operations (the outbox's rounds too): the port took them.
                break
            case .request, .unexpected:
                break
            }
        }
        if let reason = radio.pendingLinkLoss {
            radio.pendingLinkLoss = nil
            linkLost(reason)
        }
    }

    func radioReady(now: UInt64) {
        guard let key = radioKeyHex else { return }
        let name = radioSelf?.name ?? ""
        log("radio: handshake done: \(name.isEmpty ? "(unnamed)" : name) \(key.prefix(12)), firmware v\(radioDevice?.firmwareVersionCode ?? 0)")
        do {
            try openStore(publicKey: radioSelf?.publicKey.bytes ?? [])
        } catch {
            log("store: \(error)")
            if case StoreError.locked = error {
                log("daemon: another daemon owns radio \(key.prefix(12)); stopping")
                stopping = true
                return
            }
            if Self.refusesStateFolder(error) {
                log("daemon: the radio's state folder is not safe to use (above); stopping")
                life.exitCode = 2
                stopping = true
                return
            }
        }
        // Messages are taken off the radio only while they have a place on disk.
        if let s = session {
            if storeTakesMessages { s.resumeMessages(now: now) } else { s.pauseMessages() }
        }
        try? DaemonRegistry.write(.init(pid: getpid(), link: DaemonRegistry.canonicalLink(hotplug.registryLink(config.link)), socket: api.path,
                                        radio: key, name: config.name ?? (name.isEmpty ? nil : name)), group: config.apiGroup?.group.gid)
        phase = .syncing
        radio.radioProblem = nil
        radio.backoffMS = 0
        sync.nextDrainAt = now + config.drainIntervalMS
        // With a hub, the first sync lists the whole table: hub clients' GET_CONTACTS is answered from it.
        if hubPart.server != nil { sync.contactsFullSyncWanted = true }
        syncContacts(now: now)
        syncChannels(now: now)
        reapplyFloodScope(now: now)
        sync.batteryCheckAt = now
        publish(.obj(("event", "link"), ("state", "up"), ("radio", .string(key))))
    }

    func syncContacts(now: UInt64) {
        guard let s = session, sync.contactsTicket == nil else { return }
        let since = sync.contactsFullSyncWanted ? 0 : (try? store?.contactsWatermark()) ?? 0
        log("radio: syncing contacts" + (since > 0 ? " changed since \(since)" : ""))
        sync.contactsTicket = try? s.listContacts(since: since == 0 ? nil : since, now: now)
        sync.contactsListingFull = since == 0
        if sync.contactsTicket != nil { sync.contactsFullSyncWanted = false }
    }

    func syncChannels(now: UInt64) {
        guard let s = session else { return }
        let count = radioDevice?.maxChannels ?? 8
        sync.channelsFound = []
        for i in 0..<max(1, min(count, 64)) {
            if let t = try? s.submit(frame: CommandFrame.getChannel(UInt8(i)).bytes, expecting: .codes(CodeSet(ResponseCode.channelInfo.rawValue)), now: now) {
                sync.channelTickets[t] = UInt8(i)
            }
        }
    }

    func syncDone(now: UInt64) {
        guard phase == .syncing, sync.contactsTicket == nil, sync.channelTickets.isEmpty else { return }
        phase = .ready
        let status = "connected to \(config.link); radio \(radioKeyHex?.prefix(12) ?? ""); \(store?.contacts.count ?? 0) contacts"
        log("radio: synced; " + status)
        notify.ready(status: status)
        sync.syncedOnce = true
    }

    func handleReply(_ t: Ticket, _ r: Reply, now: UInt64) {
        // Every command is answered at once by a live radio: silence means it went away or
        // rebooted behind a link that stayed open (a USB bridge). Handshake again.
        if case .timeout = r, radio.pendingLinkLoss == nil {
            linkLostLater("the radio did not answer a command in time (it may have rebooted)")
        }
        if t == sync.contactsTicket {
            sync.contactsTicket = nil
            if case .contacts(let listing) = r {
                var cs: [StoredContact] = []
                for rec in listing.records { if let c = try? StoredContact(frame: rec) { cs.append(c) } }
                if listing.refused > 0 {
                    log("radio: the radio listed \(listing.refused) contact(s) past the \(session?.contactsLimit ?? CompanionLimits.contactsCeiling) it can hold "
                        + "(its max-contacts, at most \(CompanionLimits.contactsCeiling)); they were not kept")
                }
                do {
                    if let store {
                        var refused = 0
                        if !cs.isEmpty { refused = try store.saveContacts(cs) }
                        if refused > 0 {
                            log("store: \(refused) new contact(s) not kept: the store holds \(RadioStore.contactsLimit) contacts, live and removed")
                        }
                        try store.setContactsWatermark(listing.lastmod)
                        // The store follows removals: a full listing names every contact the radio
                        // has; after an incremental one, a radio with fewer contacts than the store
                        // lost some (removed by another program, or while the daemon was away).
                        let wall = UInt32(truncatingIfNeeded: time(nil))
                        if sync.contactsListingFull {
                            let removed = try store.markContactsRemoved(except: Set(cs.map(\.publicKey)), now: wall)
                            if removed > 0 { log("store: \(removed) contact(s) no longer on the radio") }
                        } else if store.contacts.filter({ !$0.removed }).count > Int(listing.total) {
                            sync.contactsFullSyncWanted = true
                            if sync.contactsResyncAt == nil { sync.contactsResyncAt = now }
                        }
                    }
                    log("radio: \(cs.count) contact(s) updated (radio has \(listing.total))")
                } catch {
                    log("store: saving contacts failed: \(error)")
                }
            } else {
                log("radio: contacts sync failed (\(r))")
                if case .timeout = r { linkLostLater("contacts sync timed out") }
            }
            syncDone(now: now)
            return
        }
        if let idx = sync.channelTickets.removeValue(forKey: t) {
            if case .frame(let f) = r, let c = try? StoredChannel(frame: f) {
                sync.channelsFound.append(StoredChannel(index: idx, name: c.name, secret: c.secret))
            }
            if sync.channelTickets.isEmpty {
                do { try store?.saveChannels(sync.channelsFound) } catch { log("store: saving channels failed: \(error)") }
                log("radio: \(sync.channelsFound.filter { !$0.name.isEmpty }.count) channel(s)")
                syncDone(now: now)
            }
            return
        }
        if t == sync.batteryTicket {
            sync.batteryTicket = nil
            batteryReply(r)
        }
        if t == sync.keepaliveTicket {
            sync.keepaliveTicket = nil
            if case .timeout = r { linkLostLater("the radio stopped answering") }
            return
        }
        if hubReply(t, r) { return }
        if let w = requests.tunnelTickets.removeValue(forKey: t) {
            tunnelReply(w.client, frame: w.frame, r)
            return
        }
        if let w = requests.replyTickets.removeValue(forKey: t) {
            let after = requests.replyAfterOK.removeValue(forKey: t)
            switch r {
            case .ok, .frame:
                var fields: [(String, JSON)] = after?() ?? []
                if var rec = w.record, let store {
                    rec.status = .sent
                    if let res = try? store.append(rec), let m = try? store.message(id: res.id) {
                        fields.append(("message", MessageJSON.message(m, store: store)))
                    }
                }
                reply(DaemonResponse(id: w.id, ok: fields), to: w.client)
            case .error(let code):
                reply(DaemonResponse(id: w.id, error: DaemonError(code == 2 ? .notFound : .refused, "the radio refused \(w.what) with ERR \(code)")), to: w.client)
            case .timeout:
                reply(DaemonResponse(id: w.id, error: DaemonError(.timeout, "the radio did not answer \(w.what) in time")), to: w.client)
            default:
                reply(DaemonResponse(id: w.id, error: DaemonError(.link, "\(w.what) did not complete (\(r))")), to: w.client)
            }
        }
    }

    /// Tears the link down after the current event walk (not in the middle of it).
    func linkLostLater(_ reason: String) { radio.pendingLinkLoss = reason }

    func handlePush(_ p: Push, now: UInt64) {
        // Pushes the session did not take as a reply go on to tunnel clients, except MSG_WAITING:
        // the daemon drains the radio itself and tells them once each message is stored (`save`).
        if p.kind != .messageWaiting {
            for c in api.tunnelClients { api.sendFrame(p.frame, to: c) }
            hubPush(p)
        }
        recordSignal(p)
        if let e = PushJSON.event(p) {
            if case .logRxData = p.kind { publish(e, logRx: true) } else { publish(e) }
            if !mqtt.bridges.isEmpty { for b in mqtt.bridges { b.apiEvent(e, now: now) } }
        }
        if !mqtt.observers.isEmpty, case .logRxData(let q, let rssi, let packet) = p.kind {
            let raw = Array(packet)
            for o in mqtt.observers { o.packet(raw: raw, snrQuarterDb: q, rssi: rssi, now: now) }
        }
        if case .newAdvert = p.kind, let store, var c = try? StoredContact(frame: p.frame),
           store.contact(publicKey: c.publicKey).map({ $0.removed }) ?? true {
            // A node that is not a contact advertised (the radio's manual-add mode): keep it for
            // `contacts pending` / `contacts add-pending`.
            c.updatedAt = UInt32(truncatingIfNeeded: time(nil))
            do { try store.savePending(c) } catch { log("store: saving a pending advert failed: \(error)") }
        }
        if case .contactDeleted(let k) = p.kind, let store {
            // The radio overwrote its oldest contact (auto-add with a full table).
            do { try store.markContactRemoved(publicKey: k.bytes, now: UInt32(truncatingIfNeeded: time(nil))) }
            catch { log("store: marking a deleted contact failed: \(error)") }
        }
        switch p.kind {
        case .advert, .newAdvert, .contactDeleted:
            // A contact changed on the radio: resync incrementally, debounced.
            if sync.contactsResyncAt == nil { sync.contactsResyncAt = now + 2_000 }
        case .sendConfirmed(let c):
            // SEND_CONFIRMED the session did not match: a tunnel client's send, or an attempt sent
            // before a restart or a lost link.
            guard let store else { return }
            tunnelAcked(c.ack)
            if let events = outbox.confirmed(ack: c.ack, roundTripMs: c.roundTripMs, store: store, wall: UInt32(truncatingIfNeeded: time(nil))) {
                outboxEvents(events)
            }
        default:
            break
        }
    }
}
