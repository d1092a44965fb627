import MeshOps
import MeshLink
import Glibc
import MeshAir
import MeshCompanion
import MeshSession
import MeshNode
import MeshSim

/// `pocketmesh demo`: a small simulated mesh driven by the same session code as the CLI, in virtual
/// time, with a transcript of what happened.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var seed: UInt64 { args.whole("seed") ?? 0 }
    var packets: Bool { args.flag("packets") }

    func run(_ args: OperationValues) throws {
        let demo = try DemoRig(seed: seed, showPackets: packets)
        try demo.play()
    }
}

/// One app attached to one simulated companion: a `Session` exchanging frames with the node through
/// the scheduler (1 ms each way, like a local serial link).
final class DemoApp {
    let name: String
    let node: CompanionNode
    let session: Session
    unowned let rig: DemoRig
    /// Events with the virtual time they came out of the session.
    var events: [(at: UInt64, event: SessionEvent)] = []
    var tickToken = 0

    init(_ node: CompanionNode, rig: DemoRig) {
        self.node = node
        self.name = node.name
        self.rig = rig
        var cfg = SessionConfig()
        cfg.appName = "pocketmesh-demo"
        cfg.clockEpoch = rig.world.mesh.epochNow
        session = Session(config: cfg)
        node.connected = true
        node.onFrame = { [unowned self] f in
            let bytes = f.bytes
            self.rig.mesh.scheduler.after(1) { [unowned self] in
                self.session.receive(frame: bytes, now: self.rig.mesh.now)
                self.pump()
            }
        }
    }

    var now: UInt64 { rig.mesh.now }

    /// Moves frames the session wants written to the radio, collects events, arms the next tick.
    func pump() {
        while let f = session.nextFrame() {
            rig.mesh.scheduler.after(1) { [unowned self] in self.node.receive(frame: f) }
        }
        while let e = session.nextEvent() { events.append((rig.mesh.now, e)) }
        if let d = session.nextDeadline {
            tickToken += 1
            let token = tickToken
            rig.mesh.scheduler.schedule(at: max(d, now)) { [unowned self] in
                guard self.tickToken == token else { return }
                self.session.tick(now: self.now)
                self.pump()
            }
        }
    }

    /// Removes and returns the first event matching `pick`.
    func take<T>(_ pick: (SessionEvent) -> T?) -> T? { takeTimed(pick)?.1 }

    /// Removes the first event matching `pick`; returns when it happened and the picked value.
    func takeTimed<T>(_ pick: (SessionEvent) -> T?) -> (UInt64, T)? {
        for (i, e) in events.enumerated() { if let v = pick(e.event) { events.remove(at: i); return (e.at, v) } }
        return nil
    }
}

final class DemoRig {
    let world: SimWorld
    var mesh: SimMesh { world.mesh }
    var alice: DemoApp!
    var bob: DemoApp!
    let showPackets: Bool
    var names: [[UInt8]: String] = [:]

    init(seed: UInt64, showPackets: Bool) throws {
        self.showPackets = showPackets
        // alice - rpt0 - rpt1 - rpt3 - bob, with a second branch rpt0 - rpt2 - rpt3; room "lounge" on rpt1.
        let nodes = [NodeSpec(name: "alice", role: .companion), NodeSpec(name: "bob", role: .companion),
                     NodeSpec(name: "rpt0", role: .repeater), NodeSpec(name: "rpt1", role: .repeater),
                     NodeSpec(name: "rpt2", role: .repeater), NodeSpec(name: "rpt3", role: .repeater),
                     NodeSpec(name: "lounge", role: .room)]
        let links = [LinkSpec(a: "alice", b: "rpt0", snr: 9.5), LinkSpec(a: "rpt0", b: "rpt1", snr: 6),
                     LinkSpec(a: "rpt0", b: "rpt2", snr: 4.25), LinkSpec(a: "rpt1", b: "rpt3", snr: 7),
                     LinkSpec(a: "rpt2", b: "rpt3", snr: 5.5), LinkSpec(a: "rpt3", b: "bob", snr: 10),
                     LinkSpec(a: "lounge", b: "rpt1", snr: 8)]
        var options = SimWorld.Options()
        options.seed = seed
        world = try SimWorld(topology: Topology(nodes: nodes, links: links), options: options)
        for n in world.mesh.nodes { if let m = n as? MeshNode { names[Array(m.publicKey.bytes.prefix(1))] = n.name } }
        alice = DemoApp(world.companions[0], rig: self)
        bob = DemoApp(world.companions[1], rig: self)
        if showPackets {
            world.mesh.onTransmit = { [unowned self] node, bytes in
                self.say("   ~ \(node.name) transmits \(bytes.count) bytes: \(self.describe(bytes))")
            }
        }
    }

    // MARK: transcript

    func stamp(_ at: UInt64? = nil) -> String {
        let t = at ?? mesh.now
        let s = "\(t / 1000).\(String(t % 1000 / 100))s"
        return String(repeating: " ", count: max(0, 7 - s.count)) + s
    }

    func say(_ text: String, at: UInt64? = nil) { print("[\(stamp(at))] \(text)") }
    func heading(_ text: String) { print(""); print("== \(text)") }

    func hopNames(_ path: [UInt8]) -> String {
        path.isEmpty ? "(direct neighbour)" : path.map { names[[$0]] ?? AirHex.encode([$0]) }.joined(separator: " > ")
    }

    func describe(_ raw: [UInt8]) -> String {
        guard let p = try? Packet(bytes: raw) else { return "unparsable" }
        let route = p.routeType.isFlood ? "flood" : "direct"
        if p.path.isEmpty { return "\(p.payloadType) \(route), \(p.routeType.isFlood ? "no relays yet" : "zero-hop")" }
        return "\(p.payloadType) \(route), path [\(hopNames(p.path))]"
    }

    // MARK: running

    /// Runs virtual time until `done` holds (checked after every event) or `limit` ms pass.
    @discardableResult
    func run(until done: () -> Bool, limit: UInt64 = 120_000) -> Bool {
        mesh.run(until: done, limit: limit)
    }

    func wait<T>(_ app: DemoApp, limit: UInt64 = 120_000, _ pick: @escaping (SessionEvent) -> T?) -> T? {
        var got: T? = nil
        run(until: { got = app.take(pick); return got != nil }, limit: limit)
        return got
    }

    func reply(_ app: DemoApp, _ ticket: Ticket, limit: UInt64 = 30_000) -> Reply? {
        wait(app, limit: limit) { if case let .reply(t, r) = $0, t == ticket { return r }; return nil }
    }

    func contacts(of app: DemoApp) -> [Contact] {
        guard let t = try? app.session.listContacts(now: mesh.now) else { return [] }
        app.pump()
        guard case let .contacts(listing)? = reply(app, t) else { return [] }
        return listing.records.compactMap { rec in rec.withUnsafeBytes { try? CompanionFrame.decode($0) }.flatMap { f -> Contact? in
            if case let .contact(r) = f { return r.contact }; return nil } }
    }

    func contact(_ app: DemoApp, named n: String) -> Contact? { contacts(of: app).first { $0.name == n } }

    func pathText(_ c: Contact) -> String {
        c.outPathLength.isUnknown ? "unknown (will flood)" : hopNames(c.outPath)
    }

    /// Sends a DM and narrates its delivery until it is acked or fails.
    func sendDM(_ from: DemoApp, to: DemoApp, _ text: String) -> Bool {
        sendDM(from, key: to.node.publicKey.bytes, name: to.name, reader: to, text)
    }

    func sendDM(_ from: DemoApp, key: [UInt8], name toName: String, reader: DemoApp?, _ text: String) -> Bool {
        guard let t = try? from.session.sendText(to: key, text: text, timestamp: from.node.epochNow, now: mesh.now) else {
            say("\(from.name): could not queue the message"); return false
        }
        from.events.removeAll { if case .push = $0.event { return true }; return false }
        from.pump()
        say("\(from.name) → \(toName): \"\(text)\"")
        var result = false
        var read = 0
        run(until: {
            if let r = reader { read += self.printMessages(r) }
            while let (at, d) = from.takeTimed({ e -> Delivery? in if case let .delivery(tt, d) = e, tt == t { return d }; return nil }) {
                switch d {
                case let .sent(attempt, flood, est, _):
                    say("   attempt \(attempt + 1) sent \(flood ? "FLOOD" : "DIRECT"), radio expects an ACK within \(est) ms", at: at)
                case let .retrying(attempt, flood):
                    say("   no ACK in time; retrying (attempt \(attempt + 1))\(flood ? " after RESET_PATH, as a flood" : "")", at: at)
                case let .acked(attempt, rtt):
                    say("   ACK for attempt \(attempt + 1) after \(rtt) ms (SEND_CONFIRMED)", at: at); result = true; return true
                case let .failed(n):
                    say("   failed after \(n) attempts", at: at); return true
                case let .refused(code):
                    say("   radio refused the send (error \(code))"); return true
                case .timeout, .cancelled:
                    say("   radio did not answer"); return true
                }
            }
            while let (at, key) = from.takeTimed({ e -> MeshCompanion.PublicKey? in
                if case let .push(p) = e, case let .pathUpdated(key) = p.kind { return key }
                return nil
            }) {
                say("   PATH_UPDATED: \(from.name) learned a route to \(names[[key.bytes[0]]] ?? "?")", at: at)
            }
            return false
        }, limit: 180_000)
        // The recipient's app drains its queue on MSG_WAITING.
        if let to = reader, read == 0 {
            run(until: { self.messages(to) > 0 }, limit: 20_000)
            printMessages(to)
        }
        return result
    }

    func messages(_ app: DemoApp) -> Int {
        app.events.filter { if case .message = $0.event { return true }; return false }.count
    }

    @discardableResult
    func printMessages(_ app: DemoApp) -> Int {
        var n = 0
        while let (at, m) = app.takeTimed({ e -> ReceivedMessage? in if case let .message(m) = e { return m }; return nil }) {
            n += 1
            let via = m.hops.map { "\($0) hop\($0 == 1 ? "" : "s") by flood" } ?? "direct"
            switch m.kind {
            case .channel:
                say("   \(app.name) reads on channel \(m.channelIndex) (\(via)): \"\(m.textString)\"", at: at)
            default:
                let from = names[Array(m.senderPrefix.prefix(1))] ?? "?"
                if m.textType == .signedPlain {
                    let author = names[Array(m.authorPrefix.prefix(1))] ?? "?"
                    say("   \(app.name) reads from \(from), posted by \(author) (\(via)): \"\(m.textString)\"", at: at)
                } else {
                    say("   \(app.name) reads from \(from) (\(via)): \"\(m.textString)\"", at: at)
                }
            }
        }
        return n
    }

    func request(_ app: DemoApp, _ r: RemoteRequest, what: String) -> [UInt8]? {
        guard let t = try? app.session.request(r, now: mesh.now) else { return nil }
        app.pump()
        var out: [UInt8]? = nil
        run(until: {
            while let o = app.take({ e -> RequestOutcome? in if case let .request(tt, o) = e, tt == t { return o }; return nil }) {
                switch o {
                case let .sent(est): say("   \(what) sent, reply expected within \(est) ms")
                case let .reply(f): out = f; return true
                case .superseded: say("   superseded"); return true
                case let .refused(c): say("   refused (error \(c))"); return true
                case .timeout: say("   no reply in time"); return true
                case .cancelled: return true
                }
            }
            return false
        }, limit: 120_000)
        return out
    }

    // MARK: the script

    func play() throws {
        let wall = monotonicMilliseconds()
        print("PocketMesh demo: a simulated MeshCore mesh in virtual time (seed \(world.mesh.seed))")
        print("  alice - rpt0 - rpt1 - rpt3 - bob, second branch rpt0 - rpt2 - rpt3, room server 'lounge' next to rpt1")
        print("  radios: 869.618 MHz, BW 62.5 kHz, SF8, CR 4/5 (firmware defaults); real on-air packets and crypto")

        heading("Connect: the same session code as `pocketmesh` talks the companion protocol to each radio")
        for app in [alice!, bob!] {
            app.session.start(now: mesh.now); app.pump()
            if let (di, si) = wait(app, { e -> ([UInt8], [UInt8])? in if case let .ready(d, s) = e { return (d, s) }; return nil }) {
                var line = "\(app.name): connected"
                if let f = di.withUnsafeBytes({ try? CompanionFrame.decode($0) }), case let .deviceInfo(d) = f {
                    line += ", firmware \(d.version ?? "?") (protocol \(d.firmwareVersionCode))"
                }
                if si.count > 40 { line += ", key \(AirHex.encode(si[4 ..< 8]))…" }
                say(line)
            }
        }

        heading("Adverts and contact sync")
        for app in [alice!, bob!] {
            if let t = try? app.session.submit(frame: CommandFrame.sendSelfAdvert(flood: true).bytes, expecting: ResponseCode.ok.rawValue, now: mesh.now) { app.pump(); _ = reply(app, t) }
            say("\(app.name) floods its advert")
        }
        run(until: { false }, limit: 20_000)
        for app in [alice!, bob!] {
            let cs = contacts(of: app)
            say("\(app.name) has \(cs.count) contacts: " + cs.map { "\($0.name) (\($0.type))" }.joined(separator: ", "))
        }
        if let c = contact(alice, named: "bob") { say("alice's path to bob: \(pathText(c))") }

        heading("First message: no path yet, so it floods; bob's ACK comes back in a PATH packet")
        _ = sendDM(alice, to: bob, "Hi Bob, it's Alice")
        run(until: { false }, limit: 3_000) // the reciprocal path goes out
        if let c = contact(alice, named: "bob") { say("alice's path to bob is now: \(pathText(c))") }
        if let c = contact(bob, named: "alice") { say("bob's path to alice (from alice's reciprocal PATH): \(pathText(c))") }

        heading("Second message: sent DIRECT along the learned path")
        _ = sendDM(alice, to: bob, "Second message, direct this time")

        heading("A lossy hop: the learned path breaks, direct retries fail, the session falls back to flood")
        if let c = contact(alice, named: "bob"), c.outPath.count >= 3,
           let a = world.node(names[[c.outPath[1]]] ?? ""), let b = world.node(names[[c.outPath[2]]] ?? "") {
            world.mesh.setLoss(a, b, 1.0)
            say("the link \(a.name) - \(b.name) now drops every packet")
            _ = sendDM(alice, to: bob, "Are you still there?")
            if let c2 = contact(alice, named: "bob") { say("alice's path to bob is now: \(pathText(c2))") }
            world.mesh.setLoss(a, b, 0)
        }

        heading("A channel message on the Public channel (no ACKs on channels)")
        if let t = try? alice.session.sendChannelText(index: 0, text: "Anyone up for coffee?", timestamp: alice.node.epochNow, now: mesh.now) {
            alice.pump()
            if case .ok? = reply(alice, t) { say("alice posts to Public: \"Anyone up for coffee?\" (radio answers OK)") }
        }
        run(until: { self.messages(self.bob) > 0 }, limit: 30_000)
        printMessages(bob)

        heading("Room server: log in with sync_since, posts arrive as signed text, one ACK at a time")
        let lounge = world.rooms[0]
        let loungeKey = lounge.publicKey.bytes
        for (app, pw) in [(bob!, "hello"), (alice!, "hello")] {
            if let f = request(app, .login(publicKey: loungeKey, password: pw), what: "\(app.name): login to lounge"), case .loginSuccess = Push(frame: f).kind {
                say("   \(app.name) logged in to lounge (LOGIN_SUCCESS)")
            }
        }
        _ = sendDM(alice, key: loungeKey, name: "lounge", reader: nil, "Coffee at 10 in the lounge")
        run(until: { self.messages(self.bob) > 0 }, limit: 60_000)
        printMessages(bob)
        run(until: { lounge.clients.allSatisfy { !$0.isAwaitingAck } }, limit: 30_000)
        say("lounge: \(lounge.posts.count) post stored, members in sync: " +
            lounge.clients.map { "\(names[[$0.key.bytes[0]]] ?? "?") at \($0.syncSince)" }.joined(separator: ", ") + " (bob's ACK moved his sync_since to the post's time)")

        heading("Repeater administration: admin login and a status request to rpt3")
        let rpt3 = world.repeaters[3]
        if let f = request(alice, .login(publicKey: rpt3.publicKey.bytes, password: "password"), what: "alice: login to rpt3"), case .loginSuccess(let l) = Push(frame: f).kind {
            say("   logged in as \(l.isAdmin ? "admin" : "guest")")
        }
        if let f = request(alice, .status(publicKey: rpt3.publicKey.bytes), what: "alice: status of rpt3"),
           case .status(_, let st?) = Push(frame: f).kind {
            say("   rpt3 status (56-byte RepeaterStats): battery \(st.batteryMillivolts) mV, up \(st.uptimeSeconds) s, " +
                "received \(st.packetsReceived) packets (\(st.receivedFlood) flood, \(st.receivedDirect) direct), " +
                "sent \(st.packetsSent) (\(st.sentFlood) flood, \(st.sentDirect) direct), duplicates dropped \(st.floodDuplicates + st.directDuplicates)")
        }

        let el = monotonicMilliseconds() - wall
        print("")
        print("Simulated \(mesh.now / 1000) s of mesh time in \(el) ms: \(mesh.transmissions) packets on air, \(mesh.deliveries) receptions, \(mesh.losses) dropped by the lossy link.")
    }
}
