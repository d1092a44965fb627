import MeshAir
import MeshCompanion
import MeshSession
import MeshNode
import MeshOps
import MeshSim
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink

/// One life of the daemon's outbox in virtual time: a session on alice's simulated radio, the store
/// and the outbox sender, wired the way `Daemon` wires them (the sender runs every second; its
/// rounds are operations on `OperationJobs` over a `SessionPort`, whose steps run after the
/// session's events are handled and before its frames are written; SEND_CONFIRMED the session did
/// not match goes to the sender). `kill()` ends the life as SIGKILL would: no goodbye to the radio.
final class OutboxLife {
    let world: SimWorld
    let node: CompanionNode
    let session = Session()
    let jobs = OperationJobs()
    let port: SessionPort
    let store: RadioStore
    let sender: OutboxSender
    var events: [OutboxSender.Event] = []
    /// Wall-clock seconds at which each SEND_TXT_MSG was written to the radio.
    var sends: [UInt32] = []
    var alive = true
    /// While true, the rounds' steps wait (as they do between a read burst and the daemon's pump).
    var holdSteps = false
    /// Sets `holdSteps` as the next SEND_TXT_MSG is written (before the radio answers it).
    var holdStepsAfterNextSend = false

    init(_ world: SimWorld, stateDir: String, policy: OutboxSender.Policy = OutboxSender.Policy()) throws {
        self.world = world
        node = world.companions[0]
        store = try RadioStore(publicKey: node.publicKey.bytes, stateDir: stateDir)
        port = SessionPort(session: session, jobs: jobs, clock: { [unowned world] in world.mesh.now })
        sender = OutboxSender(policy: policy, sessionConfig: session.config, wallClock: { [unowned world] in world.mesh.epochNow })
        sender.emit = { [unowned self] in self.events += $0 }
        node.connected = true
        node.onFrame = { [weak self] f in self?.received(f.bytes) }
        session.start(now: world.mesh.now)
        pump()
        tick()
    }

    var wall: UInt32 { world.mesh.epochNow }

    func received(_ frame: [UInt8]) {
        guard alive else { return }
        session.receive(frame: frame, now: world.mesh.now)
        pump()
    }

    func processEvents() {
        while let e = session.nextEvent() {
            if port.handle(e) { continue }
            if case .push(let p) = e, case .sendConfirmed(let c) = p.kind {
                events += sender.confirmed(ack: c.ack, roundTripMs: c.roundTripMs, store: store, wall: wall) ?? []
            }
        }
    }

    func pump() {
        guard alive else { return }
        processEvents()
        while !holdSteps, jobs.runReady() { processEvents() }
        while let f = session.nextFrame() {
            if f.first == 0x02 {
                sends.append(wall)
                if holdStepsAfterNextSend { holdSteps = true; holdStepsAfterNextSend = false }
            }
            node.receive(frame: f)
        }
        if let d = session.nextDeadline {
            world.mesh.scheduler.schedule(at: max(d, world.mesh.now)) { [weak self] in
                guard let self, self.alive else { return }
                self.session.tick(now: self.world.mesh.now)
                self.pump()
            }
        }
    }

    /// The daemon's once-a-second outbox pass.
    func tick() {
        guard alive else { return }
        if session.state == .ready {
            sender.send(port: port, jobs: jobs, store: store)
            pump()
        }
        world.mesh.scheduler.after(1_000) { [weak self] in self?.tick() }
    }

    /// SIGKILL: the radio keeps whatever it was doing; its pushes go nowhere until the next life.
    func kill() {
        alive = false
        // The process is gone: its waiting rounds end without touching anything.
        port.close(DaemonError(.link, "killed"))
        jobs.runReady()
        node.onFrame = nil
        node.connected = false
        store.close()
    }

    func enqueue(_ text: String, to peer: CompanionNode) throws -> UInt64 {
        let key = peer.publicKey.bytes
        if store.contact(publicKey: key) == nil { try store.saveContacts([StoredContact(publicKey: key, name: peer.name)]) }
        let m = StoredMessage(kind: .direct, direction: .outgoing, peer: KeyPrefix(sixOf: key[0..<6]),
                              senderTimestamp: wall, receivedAt: wall, text: Array(text.utf8))
        return try store.enqueue(m, now: wall).messageId
    }
}

/// Alice and bob on a line of repeaters, with each other as contacts.
func outboxWorld(repeaters: Int = 2) throws -> SimWorld {
    let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: repeaters, rooms: 0))
    for c in w.companions {
        c.connected = true
        c.receive(frame: CommandFrame.sendSelfAdvert(flood: true).bytes)
        c.connected = false
    }
    w.mesh.run(for: 30_000)
    #expect(w.companions[0].contacts.contains { $0.name == w.companions[1].name })
    #expect(w.companions[1].contacts.contains { $0.name == w.companions[0].name })
    return w
}

/// Text messages in bob's queue (what his app would be handed).
func received(_ bob: CompanionNode, _ text: String) -> Int {
    bob.queue.frames.filter { f in f.first == 0x07 || f.first == 0x10 }.filter { f in
        f.count >= text.utf8.count && Array(f.suffix(text.utf8.count)) == Array(text.utf8)
    }.count
}

@Suite struct OutboxRestartTests {
    @Test func anAckForAnAttemptSentBeforeARestartIsTakenAndTheMessageIsNotSentAgain() throws {
        let dir = temporaryDirectory("pm-ackr")
        defer { removeTree(dir) }
        let w = try outboxWorld()
        let bob = w.companions[1]

        let first = try OutboxLife(w, stateDir: dir)
        w.mesh.run(for: 1_000)  // handshake, first outbox pass
        let id = try first.enqueue("only once", to: bob)
        #expect(w.mesh.run(until: { first.events.contains { if case .sent(id, _, _, _) = $0 { return true }; return false } }, limit: 2_000))
        // SENT is on disk with its ACK code and a deadline; the radio is transmitting.
        let saved = try #require(first.store.outboxItem(id: id))
        #expect(saved.ackTag != 0 && saved.attempts == 1)
        #expect(saved.nextAttemptAt > first.wall)
        #expect(first.sends.count == 1)
        first.kill()

        // The daemon is back a moment later, before the ACK has made it back over the repeaters.
        w.mesh.run(for: 200)
        let second = try OutboxLife(w, stateDir: dir)
        #expect(second.store.outboxItem(id: id) == saved)
        #expect(w.mesh.run(until: { second.store.outbox.isEmpty }, limit: 60_000))
        w.mesh.run(for: 600_000)  // ten more minutes of outbox passes

        #expect(second.sends.isEmpty)
        #expect(received(bob, "only once") == 1)
        let acked = second.events.compactMap { e -> UInt32? in if case .acked(id, let rtt) = e { return rtt }; return nil }
        #expect(acked.count == 1)
        let m = try #require(try second.store.message(id: id))
        #expect(m.status == .acked && m.attempts == 1 && m.ackTag == saved.ackTag)
        // The round trip is the radio's, counted from the transmission before the restart.
        #expect(m.roundTripMs == acked.first && m.roundTripMs > 200)
        second.kill()
    }

    @Test func aSentReadJustBeforeTheLinkIsLostIsStillSaved() throws {
        let dir = temporaryDirectory("pm-ackl")
        defer { removeTree(dir) }
        let w = try outboxWorld()
        let bob = w.companions[1]
        let life = try OutboxLife(w, stateDir: dir)
        w.mesh.run(for: 1_000)
        // The radio's SENT arrives in the same read as the hangup: the link is gone (the daemon's
        // linkLost) before the round's step that saves it runs.
        life.holdStepsAfterNextSend = true
        let id = try life.enqueue("saved anyway", to: bob)
        #expect(w.mesh.run(until: { !life.sends.isEmpty }, limit: 2_000))
        w.mesh.run(for: 500)
        #expect(life.store.outboxItem(id: id)?.ackTag == 0)
        life.sender.sessionClosed()
        life.port.close(DaemonError(.link, "the link was lost"))
        life.holdSteps = false
        life.jobs.runReady()
        let item = try #require(life.store.outboxItem(id: id))
        #expect(item.ackTag != 0 && item.attempts == 1 && item.nextAttemptAt > life.wall)
        #expect(life.events.contains { if case .sent(id, 1, item.ackTag, item.nextAttemptAt) = $0 { return true }; return false })
        life.kill()
    }

    @Test func withoutAnAckTheRetryWaitsForTheSavedDeadline() throws {
        let dir = temporaryDirectory("pm-ackd")
        defer { removeTree(dir) }
        let w = try outboxWorld(repeaters: 1)
        let alice = w.companions[0], bob = w.companions[1]
        let relay = w.repeaters[0]

        let first = try OutboxLife(w, stateDir: dir)
        w.mesh.run(for: 1_000)
        // The first transmission is lost on the air.
        w.mesh.setLoss(alice, relay, 1.0)
        let id = try first.enqueue("after the deadline", to: bob)
        #expect(w.mesh.run(until: { first.store.outboxItem(id: id)?.ackTag != 0 }, limit: 2_000))
        let saved = try #require(first.store.outboxItem(id: id))
        first.kill()
        w.mesh.run(for: 300)
        w.mesh.setLoss(alice, relay, 0)

        let second = try OutboxLife(w, stateDir: dir)
        #expect(saved.nextAttemptAt > second.wall)
        #expect(w.mesh.run(until: { !second.sends.isEmpty }, limit: 600_000))
        // Not before the deadline saved with the first attempt, and promptly after it.
        let retry = try #require(second.sends.first)
        #expect(retry >= saved.nextAttemptAt && retry <= saved.nextAttemptAt + 2)
        #expect(w.mesh.run(until: { second.store.outbox.isEmpty }, limit: 60_000))
        let m = try #require(try second.store.message(id: id))
        #expect(m.status == .acked && m.attempts == 2)
        #expect(received(bob, "after the deadline") == 1)
        second.kill()
    }

    @Test func theDeadlineIsTheSessionsAckWaitRoundedUpInWallClockSeconds() {
        var sc = SessionConfig()
        let s = OutboxSender(policy: .init(), sessionConfig: sc, wallClock: { 0 })
        #expect(sc.ackWait(estimatedTimeout: 5_000) == 6_000)  // × 1.2
        #expect(s.ackDeadline(wall: 1_000, estimatedTimeout: 5_000) == 1_007)
        #expect(s.ackDeadline(wall: 1_000, estimatedTimeout: 5_001) == 1_008)
        sc.ackTimeout = 500
        #expect(OutboxSender(policy: .init(), sessionConfig: sc, wallClock: { 0 }).ackDeadline(wall: 1_000, estimatedTimeout: 60_000) == 1_002)
    }
}
