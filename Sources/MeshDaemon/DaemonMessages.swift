import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshBridge
import MeshOps

// Received messages into the store (each stored before the next is asked for), the store, the outbox.

extension Daemon {
    // MARK: - messages

    func received(message m: ReceivedMessage, now: UInt64) {
        // A tunnel client's repeater CLI reply goes to that client: nothing to store, drain on.
        if routedToTunnel(m) { session?.resumeMessages(now: now); return }
        recordSignal(m)
        let rec = MessageJSON.stored(m, receivedAt: UInt32(truncatingIfNeeded: time(nil)))
        // The session paused itself after this message: the radio is asked for the next one only
        // once this one is on disk and the next one has a place there too (`storeTakesMessages`).
        if save(rec), storeTakesMessages { session?.resumeMessages(now: now) }
    }


    /// Appends one received message durably. When the log cannot take it, it goes to the store's
    /// inbox (room written in advance, on disk), and the radio keeps the rest of its queue until
    /// the log works again (`retryStore`). Only when even the inbox fails is it held in memory.
    @discardableResult
    func save(_ rec: StoredMessage) -> Bool {
        guard let store else { storage.holdInMemory(rec, "the store is not open"); return false }
        do {
            // In order: after messages that still wait for the log (one in flight during a stop).
            if !store.heldMessages.isEmpty || !storage.unsaved.isEmpty {
                throw StoreError.invalidArgument("earlier messages still wait for the log")
            }
            stored(try store.append(rec), store)
            return true
        } catch {
            do {
                try store.hold(rec)
                log("store: cannot store a received message: \(error); it waits in the store's inbox (on disk), and the "
                    + "radio keeps the rest of its queue until the log takes messages again (tried every 5 s)")
            } catch let inboxError {
                storage.holdInMemory(rec, "\(error), nor keep it in the store's inbox: \(inboxError)")
            }
            if storage.retryAt == 0 { storage.retryAt = monotonicMilliseconds() + 5_000 }
            return false
        }
    }

    /// What follows a stored message: events, tunnels and hub clients, bridges, hooks.
    func stored(_ result: AppendResult, _ store: RadioStore) {
        switch result {
        case .stored(let id):
            storage.storedCount += 1
            notifyTunnels()
            if let m = try? store.message(id: id) {
                publish(.obj(("event", "message"), ("message", MessageJSON.message(m, store: store))))
            }
            for b in mqtt.bridges { b.messageStored(id, now: monotonicMilliseconds()) }
            _ = hooks?.tick(now: monotonicMilliseconds())
        case .duplicate:
            storage.duplicateCount += 1
        }
    }

    /// A message was stored: tells every tunnel client with MSG_WAITING, as the radio would.
    func notifyTunnels() {
        for c in api.tunnelClients { api.sendFrame(PushFrame.messageWaiting().bytes, to: c) }
        hubMessageWaiting()
    }

    /// Tries again what waits for the store (held messages, the inbox itself); once the next
    /// message has a place on disk again, draining resumes.
    func retryStore(now: UInt64) {
        storage.retryAt = now + 5_000
        guard let store else { return }
        let held = store.heldMessages.count + storage.unsaved.count
        do {
            for r in try store.storeHeld() { stored(r, store) }
            while let rec = storage.unsaved.first {
                stored(try store.append(rec), store)
                storage.unsaved.removeFirst()
            }
        } catch {
            return
        }
        store.prepareInbox()
        guard store.canTakeMessage else {
            if let p = store.inboxProblem, !storage.inboxProblemLogged {
                storage.inboxProblemLogged = true
                log("store: cannot prepare the inbox: \(p); the radio keeps its messages until it can (tried every 5 s)")
            }
            return
        }
        storage.retryAt = 0
        storage.inboxProblemLogged = false
        if held > 0 { log("store: writing works again; \(held) held message(s) stored; draining the radio") }
        if let s = session {
            s.resumeMessages(now: now)
            if phase == .ready { s.drain(now: now) }
            pump(now: now)
        }
    }

    // MARK: - store

    /// Opens the store of the radio this link had last time, so the API works before the radio answers.
    func openKnownStore() throws {
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        if let hex = StoreLinks.radio(stateRoot: root, link: config.link), let key = HexCodec.decode(hex), key.count == 32 {
            do { try openStore(publicKey: key) } catch where Self.refusesStateFolder(error) {
                throw DaemonError(.usage, "\(error).")
            }
        }
    }

    func openStore(publicKey: [UInt8]) throws {
        mqttRadioKnown(publicKey: publicKey)
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        let dir = StoreLocation.radioDirectory(stateRoot: root, publicKey: publicKey)
        if let s = store {
            if s.directory == dir { return }
            log("store: the radio on \(config.link) is now \(HexCodec.encode(Array(publicKey)).prefix(12)); switching stores")
            s.close()
            store = nil
            hooks = nil
        }
        defer { if let s = store { for b in mqtt.bridges { b.attach(store: s) } } }
        let s = try RadioStore(publicKey: publicKey, stateDir: config.stateDir, options: config.storeOptions)
        let floor: UInt64
        do { floor = try deliveryFloor(dir, s) } catch { s.close(); throw error }
        store = s
        storage.readDamageLogged = 0
        if floor > s.nextMessageId {
            s.ensureNextId(atLeast: floor)
            log("store: the hook or an MQTT bridge has seen ids up to \(floor - 1), past the message log; new messages continue from id \(s.nextMessageId)")
        }
        openTunnelQueue(s)
        let r = s.recovery
        log("store: \(dir): \(s.messageCount) messages" + (r.truncatedBytes > 0 ? ", torn tail of \(r.truncatedBytes) bytes cut" : "")
            + (r.damage.isEmpty ? "" : ", \(r.damage.count) damaged record(s) skipped"))
        for d in r.damage.prefix(5) { log("store: \(d)") }
        if r.idsRaised > 0 { log("store: the message log holds fewer ids than were issued (lost or cut short); new messages continue from id \(s.nextMessageId)") }
        if !s.heldMessages.isEmpty { log("store: \(s.heldMessages.count) received message(s) wait in the inbox: the log cannot take them yet") }
        let wall = UInt32(truncatingIfNeeded: time(nil))
        let awaiting = s.outbox.filter { $0.ackTag != 0 && $0.nextAttemptAt > wall }
        if !s.outbox.isEmpty {
            log("outbox: \(s.outbox.count) message(s) waiting" + (awaiting.isEmpty ? "" :
                "; \(awaiting.count) sent before, awaiting its ACK for up to \(awaiting.map { $0.nextAttemptAt - wall }.max()!) s before another attempt"))
        }
        StoreLinks.remember(stateRoot: root, link: config.link, publicKey: publicKey)
        if let argv = config.hook {
            var hc = HookRunner.Config(argv: argv, dir: dir + "/hooks", wrapper: config.hookWrapper)
            hc.concurrency = config.hookConcurrency
            hc.timeoutMS = config.hookTimeoutMS
            hc.maxAttempts = config.hookMaxAttempts
            hc.adoptOrphans = config.adoptHookOrphans
            let h = try HookRunner(config: hc)
            h.log = { [unowned self] in self.log($0) }
            h.fetch = { [unowned self] after, limit in
                guard let store = self.store, let ms = try? store.messages(after: after, limit: limit, incomingOnly: true) else { return [] }
                self.reportReadDamage()
                return ms.map { HookMessage(id: $0.id, json: MessageJSON.message($0, store: store)) }
            }
            hooks = h
            if h.cursorState != .saved { try startHook(h, s) }
            log("hook: \(argv[0]) for each received message (delivered up to id \(h.cursor))")
        }
    }

    /// A hook without a delivery cursor (new for this store, or its cursor removed or damaged)
    /// starts after the newest stored message, and says so; `--hooks-from-start` hands it every
    /// stored message instead. Either way the cursor is written at once, so that "no cursor"
    /// always means a hook that never ran here.
    func startHook(_ h: HookRunner, _ s: RadioStore) throws {
        let why = h.cursorState == .damaged ? "its delivery cursor (\(h.config.dir)/cursor) is damaged"
                                            : "it has no delivery cursor in this store yet (a new hook, or its cursor was removed)"
        let newest = s.nextMessageId > 1 ? s.nextMessageId - 1 : 0
        if newest == 0 || config.hooksFromStart {
            try h.startAfter(config.hooksFromStart ? 0 : h.cursor)
            if newest > 0 { log("hook: \(why); every stored message is handed to it (--hooks-from-start)") }
        } else {
            try h.startAfter(newest)
            log("hook: \(why); it starts after message \(newest), the newest: earlier messages are not handed to it "
                + "(start the daemon with --hooks-from-start to hand it every stored message)")
        }
    }

    /// Whether a store error means the state folder or a file in it is not to be used (the
    /// daemon then exits 2 naming the file), rather than a failure to retry.
    static func refusesStateFolder(_ error: Error) -> Bool {
        switch error {
        case StoreError.untrusted, StoreError.outOfRange: return true
        default: return false
        }
    }

    /// The daemon's own delivery records name message ids: the hook's cursor, markers and list of
    /// given-up messages, and every MQTT bridge's cursor (configured now or not). Each is checked
    /// against the ids the store has issued (an id past them is an error naming the file, never a
    /// wrap), and new ids stay above all of them (the value returned: one past the highest).
    func deliveryFloor(_ dir: String, _ s: RadioStore) throws -> UInt64 {
        var high: UInt64? = nil
        func check(_ v: UInt64, _ path: String) throws {
            try s.checkStoredId(v, file: path)
            high = max(high ?? 0, v)
        }
        let hooksDir = dir + "/hooks"
        if let t = StateFile.readString(hooksDir + "/cursor"), let v = UInt64(t.filter { !$0.isWhitespace }) {
            try check(v, hooksDir + "/cursor")
        }
        for name in Self.entries(of: hooksDir) { if let v = UInt64(name) { try check(v, hooksDir + "/" + name) } }
        for line in (StateFile.readString(hooksDir + "/failed") ?? "").split(separator: "\n") {
            if let f = line.split(separator: " ").first, let v = UInt64(f) { try check(v, hooksDir + "/failed") }
        }
        for broker in Self.entries(of: dir + "/mqtt") {
            let path = dir + "/mqtt/" + broker + "/cursor"
            guard let text = StateFile.readString(path) else { continue }
            // A cursor that holds no id is not "nothing published yet": that would publish every
            // stored message again without a word. It is damage, refused like a forged id.
            guard let v = MQTTBridge.cursorValue(text) else {
                throw StoreError.untrusted(path: path, problem: "does not hold a message id (it is damaged, or was written by something else): "
                                           + "write in it the id of the last message the broker has, or remove it to publish every stored message again")
            }
            try check(v, path)
        }
        return high.map { $0 + 1 } ?? 0
    }

    static func entries(of dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { out.append(name) }
        }
        return out
    }

    /// Logs each damaged record found while reading messages (hooks, API), once: it is skipped.
    func reportReadDamage() { storage.reportReadDamage() }

    /// The tunnel's delivery cursor ("sync"). The first time a store is used, it starts at the
    /// newest stored message: tunnel clients get what arrives from then on, not the whole history.
    func openTunnelQueue(_ s: RadioStore) {
        do {
            if let c = try s.storedCursor("sync") {
                requests.tunnelQueue = TunnelQueue(cursor: c)
            } else {
                let c = s.nextMessageId > 0 ? s.nextMessageId - 1 : 0
                try s.setCursor("sync", c)
                requests.tunnelQueue = TunnelQueue(cursor: c)
                log("store: sync cursor starts after message \(c)")
            }
        } catch {
            // Deliver again rather than skip.
            log("store: cannot read the sync cursor: \(error); starting from the oldest message")
            requests.tunnelQueue = TunnelQueue(cursor: 0)
        }
    }

    // MARK: - outbox

    func sendOutbox(now: UInt64) {
        guard phase == .ready, session != nil, let port = ops.port, let store else { return }
        outbox.send(port: port, jobs: ops.jobs, store: store)
        pump(now: now)
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
                for w in outboxPart.sendWaiters.removeValue(forKey: id) ?? [] {
                    let m = store.flatMap { try? $0.message(id: id) }
                    reply(DaemonResponse(id: w.1, ok: m.map { [("message", MessageJSON.message($0, store: store!))] } ?? []), to: w.0)
                }
            case .retrying(let id, let attempts, let delay):
                log("outbox: message \(id): no ACK after \(attempts) attempt(s); next try in \(delay) s")
                publishDelivery(id, "retrying")
            case .failed(let id, let error):
                log("outbox: message \(id) failed: \(error.message)")
                publishDelivery(id, "failed")
                for w in outboxPart.sendWaiters.removeValue(forKey: id) ?? [] {
                    reply(DaemonResponse(id: w.1, error: error), to: w.0)
                }
            case .storeFailed(let id, let error):
                log("store: outbox message \(id): \(error)")
            }
        }
    }

    func publishDelivery(_ id: UInt64, _ status: String) {
        let e = JSON.obj(("event", "delivery"), ("id", .int(Int64(id))), ("status", .string(status)))
        publish(e)
        for b in mqtt.bridges { b.apiEvent(e, now: monotonicMilliseconds()) }
    }
}
