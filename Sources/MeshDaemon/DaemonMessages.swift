import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshSession
import MeshStore

// Received messages into the store (each stored before the next is asked for), the store, the outbox.

extension Daemon {
    // MARK: - messages

    func received(message m: ReceivedMessage, now: UInt64) {
        // A tunnel client's repeater CLI reply goes to that client: nothing to store, drain on.
        if routedToTunnel(m) { session?.resumeMessages(now: now); return }
        let rec = MessageJSON.stored(m, receivedAt: UInt32(truncatingIfNeeded: time(nil)))
        // While the store fails, the session asks the radio for nothing more (it paused itself
        // after this message): the rest of the queue stays on the radio, where a restart finds it.
        if !unsaved.isEmpty || store == nil {
            hold(rec)
            return
        }
        if save(rec) { session?.resumeMessages(now: now) }
    }

    /// Appends one received message durably; on failure keeps it in memory and retries.
    @discardableResult
    func save(_ rec: StoredMessage) -> Bool {
        guard let store else { hold(rec); return false }
        do {
            let result = try store.append(rec)
            switch result {
            case .stored(let id):
                storedCount += 1
                notifyTunnels()
                if let m = try? store.message(id: id) {
                    api.publish(.obj(("event", "message"), ("message", MessageJSON.message(m, store: store))))
                }
                for b in bridges { b.messageStored(id, now: monotonicNow()) }
                _ = hooks?.tick(now: monotonicNow())
            case .duplicate:
                duplicateCount += 1
            }
            return true
        } catch {
            log("store: cannot store a received message: \(error); keeping it in memory, leaving the rest on the radio, retrying")
            hold(rec)
            return false
        }
    }

    /// A message was stored: tells every tunnel client with MSG_WAITING, as the radio would.
    func notifyTunnels() {
        for c in api.tunnelClients { api.sendFrame(PushFrame.messageWaiting().bytes, to: c) }
        hubMessageWaiting()
    }

    func hold(_ rec: StoredMessage) {
        if unsaved.count >= unsavedCapacity {
            log("store: \(unsavedCapacity) messages waiting in memory; dropping the oldest held message")
            unsaved.removeFirst()
        }
        unsaved.append(rec)
        if unsavedRetryAt == 0 || unsavedRetryAt < monotonicNow() { unsavedRetryAt = monotonicNow() + 1_000 }
    }

    func retryUnsaved(now: UInt64) {
        guard store != nil else { unsavedRetryAt = now + 1_000; return }
        let pending = unsaved
        unsaved.removeAll()
        for (i, rec) in pending.enumerated() {
            if !save(rec) {
                unsaved = Array(pending[(i + 1)...]) + unsaved
                break
            }
        }
        if unsaved.isEmpty {
            log("store: writing works again; \(pending.count) held message(s) stored; draining the radio")
            unsavedRetryAt = 0
            if let s = session {
                s.resumeMessages(now: now)
                if phase == .ready { s.drain(now: now) }
                pump(now: now)
            }
        } else {
            unsavedRetryAt = now + 5_000
        }
    }

    // MARK: - store

    /// Opens the store of the radio this link had last time, so the API works before the radio answers.
    func openKnownStore() throws {
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        if let hex = StateFile.readString(root + "/links/" + DaemonRegistry.slug(forLink: config.link)),
           let key = bytesFromHex(hex.filter { !$0.isWhitespace }), key.count == 32 {
            try openStore(publicKey: key)
        }
    }

    func openStore(publicKey: [UInt8]) throws {
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        let dir = StoreLocation.radioDirectory(stateRoot: root, publicKey: publicKey)
        if let s = store {
            if s.directory == dir { return }
            log("store: the radio on \(config.link) is now \(hexString(publicKey).prefix(12)); switching stores")
            s.close()
            store = nil
            hooks = nil
        }
        defer { if let s = store { for b in bridges { b.attach(store: s) } } }
        let s = try RadioStore(publicKey: publicKey, stateDir: config.stateDir, options: config.storeOptions)
        store = s
        readDamageLogged = 0
        openTunnelQueue(s)
        let r = s.recovery
        log("store: \(dir): \(s.messageCount) messages" + (r.truncatedBytes > 0 ? ", torn tail of \(r.truncatedBytes) bytes cut" : "")
            + (r.damage.isEmpty ? "" : ", \(r.damage.count) damaged record(s) skipped"))
        for d in r.damage.prefix(5) { log("store: \(d)") }
        if r.idsRaised > 0 { log("store: the message log holds fewer ids than were issued (lost or cut short); new messages continue from id \(s.nextMessageId)") }
        let wall = UInt32(truncatingIfNeeded: time(nil))
        let awaiting = s.outbox.filter { $0.ackTag != 0 && $0.nextAttemptAt > wall }
        if !s.outbox.isEmpty {
            log("outbox: \(s.outbox.count) message(s) waiting" + (awaiting.isEmpty ? "" :
                "; \(awaiting.count) sent before, awaiting its ACK for up to \(awaiting.map { $0.nextAttemptAt - wall }.max()!) s before another attempt"))
        }
        try? UnixSocket.makeDirectory(root + "/links")
        try? StateFile.write(root + "/links/" + DaemonRegistry.slug(forLink: config.link), hexString(publicKey) + "\n")
        if let argv = config.hook {
            var hc = HookRunner.Config(argv: argv, dir: dir + "/hooks", wrapper: config.hookWrapper)
            hc.concurrency = config.hookConcurrency
            hc.timeoutMS = config.hookTimeoutMS
            hc.maxAttempts = config.hookMaxAttempts
            let h = try HookRunner(config: hc)
            h.log = { [unowned self] in self.log($0) }
            h.fetch = { [unowned self] after, limit in
                guard let store = self.store, let ms = try? store.messages(after: after, limit: limit, incomingOnly: true) else { return [] }
                self.reportReadDamage()
                return ms.map { HookMessage(id: $0.id, json: MessageJSON.message($0, store: store)) }
            }
            hooks = h
            if h.highestKnownId >= s.nextMessageId {
                s.ensureNextId(atLeast: h.highestKnownId + 1)
                log("store: the hook has seen ids up to \(h.highestKnownId), past the message log; new messages continue from id \(s.nextMessageId)")
            }
            log("hook: \(argv[0]) for each received message (delivered up to id \(h.cursor))")
        }
    }

    /// Logs each damaged record found while reading messages (hooks, API), once: it is skipped.
    func reportReadDamage() {
        guard let store else { return }
        let found = store.readDamage
        while readDamageLogged < found.count {
            log("store: \(found[readDamageLogged]) (a damaged record: its message cannot be shown or handed to a hook)")
            readDamageLogged += 1
        }
    }

    /// The tunnel's delivery cursor ("sync"). The first time a store is used, it starts at the
    /// newest stored message: tunnel clients get what arrives from then on, not the whole history.
    func openTunnelQueue(_ s: RadioStore) {
        do {
            if let c = try s.storedCursor("sync") {
                tunnelQueue = TunnelQueue(cursor: c)
            } else {
                let c = s.nextMessageId > 0 ? s.nextMessageId - 1 : 0
                try s.setCursor("sync", c)
                tunnelQueue = TunnelQueue(cursor: c)
                log("store: sync cursor starts after message \(c)")
            }
        } catch {
            // Deliver again rather than skip.
            log("store: cannot read the sync cursor: \(error); starting from the oldest message")
            tunnelQueue = TunnelQueue(cursor: 0)
        }
    }

    // MARK: - outbox

    func sendOutbox(now: UInt64) {
        guard phase == .ready, let s = session, let store else { return }
        outboxEvents(outbox.send(session: s, store: store, now: now, wall: UInt32(truncatingIfNeeded: time(nil))))
        pump(now: now)
    }

    func handleDelivery(_ t: Ticket, _ d: Delivery, now: UInt64) {
        guard let store, let events = outbox.delivery(t, d, store: store, wall: UInt32(truncatingIfNeeded: time(nil))) else { return }
        outboxEvents(events)
    }

    /// Logs, publishes and answers waiting `send --wait` clients.
    func outboxEvents(_ events: [OutboxSender.Event]) {
        for e in events {
            switch e {
            case .sent(let id, _, _, _):
                publishDelivery(id, "sent")
            case .acked(let id, let rtt):
                log("outbox: message \(id) acknowledged (round trip \(rtt) ms)")
                publishDelivery(id, "acked")
                for w in sendWaiters.removeValue(forKey: id) ?? [] {
                    let m = store.flatMap { try? $0.message(id: id) }
                    reply(DaemonResponse(id: w.1, ok: m.map { [("message", MessageJSON.message($0, store: store!))] } ?? []), to: w.0)
                }
            case .retrying(let id, let attempts, let delay):
                log("outbox: message \(id): no ACK after \(attempts) attempt(s); next try in \(delay) s")
                publishDelivery(id, "retrying")
            case .failed(let id, let error):
                log("outbox: message \(id) failed: \(error.message)")
                publishDelivery(id, "failed")
                for w in sendWaiters.removeValue(forKey: id) ?? [] {
                    reply(DaemonResponse(id: w.1, error: error), to: w.0)
                }
            case .storeFailed(let id, let error):
                log("store: outbox message \(id): \(error)")
            }
        }
    }

    func publishDelivery(_ id: UInt64, _ status: String) {
        let e = JSON.obj(("event", "delivery"), ("id", .int(Int64(id))), ("status", .string(status)))
        api.publish(e)
        for b in bridges { b.apiEvent(e, now: monotonicNow()) }
    }
}
