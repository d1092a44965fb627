import MeshAir
import MeshCompanion
import MeshSession
import Testing
@testable import MeshNode
@testable import MeshSim

/// A `Session` attached to a simulated companion in virtual time (frames take 1 ms each way), set
/// up the way the one-shot command line sets it up unless told otherwise.
final class SessionApp {
    let node: CompanionNode
    let mesh: SimMesh
    let session: Session
    var events: [SessionEvent] = []
    var tickToken = 0

    init(_ node: CompanionNode, mesh: SimMesh, config: SessionConfig = SessionApp.oneShot) {
        self.node = node
        self.mesh = mesh
        session = Session(config: config)
        node.connected = true
        node.onFrame = { [unowned self] f in
            let bytes = f.bytes
            self.mesh.scheduler.after(1) { [unowned self] in
                self.session.receive(frame: bytes, now: self.mesh.now)
                self.pump()
            }
        }
    }

    /// As `pocketmesh cmd`, `status`, … run it: no drain at the start, none on MSG_WAITING.
    static var oneShot: SessionConfig {
        var c = SessionConfig()
        c.drainOnStart = false
        c.drainOnWaiting = false
        return c
    }

    func pump() {
        while let f = session.nextFrame() {
            mesh.scheduler.after(1) { [unowned self] in self.node.receive(frame: f) }
        }
        while let e = session.nextEvent() { events.append(e) }
        if let d = session.nextDeadline {
            tickToken += 1
            let token = tickToken
            mesh.scheduler.schedule(at: max(d, mesh.now)) { [unowned self] in
                guard self.tickToken == token else { return }
                self.session.tick(now: self.mesh.now)
                self.pump()
            }
        }
    }

    func start() -> Bool {
        session.start(now: mesh.now)
        pump()
        return mesh.run(until: { self.events.contains { if case .ready = $0 { return true }; return false } }, limit: 10_000)
    }

    func outcome(_ t: Ticket) -> RequestOutcome? {
        for case .request(let tt, let o) in events where tt == t {
            if case .sent = o { continue }
            return o
        }
        return nil
    }

    /// Sends a remote request and runs until its outcome.
    func request(_ r: RemoteRequest, limit: UInt64 = 60_000) throws -> RequestOutcome? {
        let t = try session.request(r, now: mesh.now)
        pump()
        _ = mesh.run(until: { self.outcome(t) != nil }, limit: limit)
        return outcome(t)
    }

    var messages: [ReceivedMessage] { events.compactMap { if case .message(let m) = $0 { return m }; return nil } }
}

@Suite struct CLISessionTests {
    /// s0 - r0 - r1 - s1; the companions have heard each other and the repeaters.
    func world() throws -> SimWorld {
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 2, rooms: 0))
        exchangeAdverts(w, [FrameApp(w.companions[0]), FrameApp(w.companions[1])])
        return w
    }

    @Test func oneShotRepeaterCommandGetsItsReplyAndItIsNotQueuedAgain() throws {
        let w = try world()
        let app = SessionApp(w.companions[0], mesh: w.mesh)
        #expect(app.start())
        let r = w.repeaters[1]
        let key = r.publicKey.bytes
        guard case .reply(let login)? = try app.request(.login(publicKey: key, password: "password")) else {
            Issue.record("no login reply"); return
        }
        #expect(login.first == 0x85)
        let o = try app.request(.command(publicKey: key, text: "ver", timestamp: w.mesh.epochNow))
        guard case .reply(let f)? = o else { Issue.record("no reply to the CLI command: \(String(describing: o))"); return }
        let m = try ReceivedMessage(frame: f)
        #expect(m.textType == .cliData)
        #expect(!m.text.isEmpty)
        _ = w.mesh.run(until: { !app.session.isBusy }, limit: 30_000)
        #expect(app.messages.isEmpty, "the reply also came out as a message")
        // The radio's queue holds nothing more: a later `sync` does not print the reply again.
        app.session.drain(now: w.mesh.now)
        app.pump()
        _ = w.mesh.run(until: { !app.session.isBusy }, limit: 30_000)
        #expect(app.messages.isEmpty, "the reply was left in the radio's queue")
    }
}
