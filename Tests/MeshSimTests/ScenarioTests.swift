import MeshAir
import MeshCompanion
import MeshSession
import Testing
@testable import MeshNode
@testable import MeshSim

/// An app attached directly to a simulated companion: frames in, frames out, no session.
final class FrameApp {
    let node: CompanionNode
    var frames: [[UInt8]] = []
    init(_ node: CompanionNode) {
        self.node = node
        node.connected = true
        node.onFrame = { [weak self] f in self?.frames.append(f.bytes) }
    }
    func send(_ f: EncodedFrame) { node.receive(frame: f.bytes) }
    func send(_ b: [UInt8]) { node.receive(frame: b) }
    /// Removes and returns the first frame with `code`.
    func take(_ code: UInt8) -> [UInt8]? {
        guard let i = frames.firstIndex(where: { $0.first == code }) else { return nil }
        return frames.remove(at: i)
    }
    func count(_ code: UInt8) -> Int { frames.filter { $0.first == code }.count }
    /// Sends a command and returns its (first non-push) response.
    func call(_ f: EncodedFrame) -> [UInt8]? {
        frames.removeAll { $0.first! < 0x80 }
        send(f)
        return frames.first { $0.first! < 0x80 }
    }
    func contact(_ key: PublicKey) -> Contact? { node.contact(key: key) }
}

func line(_ companions: Int = 2, repeaters: Int, seed: UInt64 = 1, configure: ((inout SimWorld.Options) -> Void)? = nil) throws -> SimWorld {
    var o = SimWorld.Options()
    o.seed = seed
    configure?(&o)
    return try SimWorld(topology: .builtIn(.line, companions: companions, repeaters: repeaters, rooms: 0), options: o)
}

/// Both companions flood an advert and the mesh settles.
func exchangeAdverts(_ w: SimWorld, _ apps: [FrameApp]) {
    for a in apps { #expect(a.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00]) }
    w.mesh.run(for: 30_000)
}

@Suite struct ScenarioTests {
    @Test func pathLearningOverThreeHops() throws {
        let w = try line(repeaters: 3)
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        let bKey = w.companions[1].publicKey, aKey = w.companions[0].publicKey
        #expect(a.contact(bKey) != nil && b.contact(aKey) != nil)
        #expect(a.contact(bKey)!.outPathLength.isUnknown)

        // First DM floods.
        let sent = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "hello", timestamp: w.companions[0].epochNow))!
        #expect(sent.first == 0x06 && sent[1] == 1)
        let tag = Array(sent[2 ..< 6])
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 60_000))
        // PATH_UPDATED comes before SEND_CONFIRMED, which carries the SENT tag.
        let pu = a.frames.firstIndex { $0.first == 0x81 }!, sc = a.frames.firstIndex { $0.first == 0x82 }!
        #expect(pu < sc)
        #expect(Array(a.frames[sc][1 ..< 5]) == tag)
        let rpts = w.repeaters.map { $0.publicKey.hashByte }
        #expect(a.contact(bKey)!.outPath == rpts)
        w.mesh.run(for: 10_000) // reciprocal path
        #expect(b.contact(aKey)!.outPath == rpts.reversed())
        // The message reached bob's queue, formatted at receive time (app_target_ver 0: legacy layout).
        #expect(b.count(0x83) >= 1)
        let msg = b.call(CommandFrame.syncNextMessage())!
        #expect(msg.first == 0x07 && msg[7] == 3 && Array(msg[13...]) == Array("hello".utf8))

        // Second DM goes direct and is confirmed.
        a.frames.removeAll()
        let sent2 = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "direct", timestamp: w.companions[0].epochNow + 1))!
        #expect(sent2.first == 0x06 && sent2[1] == 0)
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 60_000))
        #expect(a.count(0x81) == 0)
    }

    @Test func retryThenFloodFallbackOnLossyLink() throws {
        // s0 - r0 - {r1 | r2} - r3 - s1: two branches.
        let nodes = [NodeSpec(name: "s0", role: .companion), NodeSpec(name: "s1", role: .companion)]
            + (0..<4).map { NodeSpec(name: "r\($0)", role: .repeater) }
        let links = [LinkSpec(a: "s0", b: "r0"), LinkSpec(a: "r0", b: "r1"), LinkSpec(a: "r0", b: "r2"),
                     LinkSpec(a: "r1", b: "r3"), LinkSpec(a: "r2", b: "r3"), LinkSpec(a: "r3", b: "s1")]
        let w = try SimWorld(topology: Topology(nodes: nodes, links: links))
        let app0 = FrameApp(w.companions[0]), app1 = FrameApp(w.companions[1])
        exchangeAdverts(w, [app0, app1])
        app0.node.onFrame = nil; app1.node.onFrame = nil

        // Drive s0 with the session the CLI uses.
        let s = Session()
        let node = w.companions[0]
        func pump() {
            while let f = s.nextFrame() { node.receive(frame: f) }
            if let d = s.nextDeadline { w.mesh.scheduler.schedule(at: d) { s.tick(now: w.mesh.now); pump() } }
        }
        node.onFrame = { f in s.receive(frame: f.bytes, now: w.mesh.now); pump() }
        s.start(now: w.mesh.now); pump()
        w.mesh.run(for: 2_000)
        var events: [SessionEvent] = []
        func collect() { while let e = s.nextEvent() { events.append(e) } }
        let dest = w.companions[1].publicKey.bytes
        let t1 = try s.sendText(to: dest, text: "first", timestamp: node.epochNow, now: w.mesh.now); pump()
        w.mesh.run(until: { collect(); return events.contains(.delivery(t1, .acked(attempt: 0, roundTrip: 0))) || events.contains { if case .delivery(t1, .acked) = $0 { return true }; return false } }, limit: 60_000)
        let path = node.contact(key: w.companions[1].publicKey)!.outPath
        #expect(path.count == 3)
        // Break the middle hop of the learned path.
        let mid = w.repeaters.first { $0.publicKey.hashByte == path[1] }!
        w.mesh.setLoss(w.repeaters[0], mid, 1.0)
        events.removeAll()
        let t2 = try s.sendText(to: dest, text: "second", timestamp: node.epochNow, now: w.mesh.now); pump()
        let done = w.mesh.run(until: { collect(); return events.contains { if case .delivery(t2, .acked) = $0 { return true }; if case .delivery(t2, .failed) = $0 { return true }; return false } }, limit: 300_000)
        #expect(done)
        let deliveries = events.compactMap { e -> Delivery? in if case let .delivery(t, d) = e, t == t2 { return d }; return nil }
        #expect(deliveries.contains { if case .sent(0, false, _, _) = $0 { return true }; return false })
        #expect(deliveries.contains { if case .retrying(_, true) = $0 { return true }; return false })
        #expect(deliveries.contains { if case .acked = $0 { return true }; return false })
        // The flood found the other branch, and the path was relearned around the broken hop.
        let newPath = node.contact(key: w.companions[1].publicKey)!.outPath
        #expect(newPath.count == 3 && newPath[1] != path[1])
    }

    @Test func offlineQueueOverflowPolicy() throws {
        let w = try line(repeaters: 0) { $0.companion.offlineQueueSize = 3 }
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        let bKey = w.companions[1].publicKey
        // One channel message, then four DMs: the channel item is evicted first, then the newest DM dropped.
        _ = a.call(try CommandFrame.sendChannelTextMessage(channel: 0, text: "chan", timestamp: 100))
        w.mesh.run(for: 5_000)
        for i in 0..<4 {
            _ = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "dm\(i)", timestamp: UInt32(200 + i)))
            w.mesh.run(for: 8_000)
        }
        #expect(b.count(0x83) == 5) // MSG_WAITING for every message, including the dropped one
        #expect(w.companions[1].queue.evicted == 1 && w.companions[1].queue.dropped == 1)
        var texts: [String] = []
        while let m = b.call(CommandFrame.syncNextMessage()), m.first != 0x0A { texts.append(String(decoding: m[13...], as: UTF8.self)) }
        #expect(texts == ["dm0", "dm1", "dm2"])
    }

    @Test func rebootLosesQueueAndAppVersion() throws {
        let w = try line(repeaters: 1)
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        _ = b.call(CommandFrame.deviceQuery(appTargetVersion: 3))
        exchangeAdverts(w, [a, b])
        _ = a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "lost", timestamp: 500))
        w.mesh.run(for: 20_000)
        #expect(w.companions[1].queue.count == 1)
        b.send(CommandFrame.reboot())
        w.mesh.run(for: 5_000)
        #expect(b.call(CommandFrame.syncNextMessage()) == [0x0A])
        #expect(w.companions[1].appTargetVersion == 0)
        // Contacts survive (flash); the clock cannot go backwards.
        #expect(b.contact(w.companions[0].publicKey) != nil)
        #expect(b.call(CommandFrame.setDeviceTime(1000)) == [0x01, 0x06])
    }

    @Test func oneByteHashCollisionsDuplicateDirectForwarding() throws {
        // Find two repeater seeds whose public keys share the first byte.
        var seen: [UInt8: UInt64] = [:]
        var pair: (UInt64, UInt64)? = nil
        for s in UInt64(1)... {
            var r = SimRandom(seed: s)
            let k = LocalIdentity.generate(using: &r).publicKey.hashByte
            if let o = seen[k] { pair = (o, s); break }
            seen[k] = s
        }
        let (sa, sb) = pair!
        let nodes = [NodeSpec(name: "s0", role: .companion), NodeSpec(name: "s1", role: .companion),
                     NodeSpec(name: "ra", role: .repeater, seed: sa), NodeSpec(name: "rb", role: .repeater, seed: sb)]
        // Both repeaters hear s0; only ra reaches s1.
        let links = [LinkSpec(a: "s0", b: "ra"), LinkSpec(a: "s0", b: "rb"), LinkSpec(a: "ra", b: "s1")]
        let w = try SimWorld(topology: Topology(nodes: nodes, links: links))
        #expect(w.repeaters[0].publicKey.hashByte == w.repeaters[1].publicKey.hashByte)
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        _ = a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "one", timestamp: 10))
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 60_000))
        w.mesh.run(for: 5_000)
        let beforeA = w.repeaters[0].radio.sentDirect, beforeB = w.repeaters[1].radio.sentDirect
        let sent = a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "two", timestamp: 11))!
        #expect(sent[1] == 0) // direct, path = [hash]
        #expect(w.mesh.run(until: { a.count(0x82) > 1 }, limit: 60_000))
        // Both repeaters believed they were the next hop and relayed the direct packet.
        #expect(w.repeaters[0].radio.sentDirect > beforeA)
        #expect(w.repeaters[1].radio.sentDirect > beforeB)
    }

    @Test func sameSeedSameCapture() throws {
        func capture(_ seed: UInt64) throws -> [String] {
            var lines: [String] = []
            let w = try SimWorld(topology: .builtIn(.grid, companions: 3, repeaters: 4, rooms: 1, loss: 0.2), options: { var o = SimWorld.Options(); o.seed = seed; o.collisions = true; return o }())
            w.mesh.onTransmit = { _, b in lines.append(hexLine(b)) }
            let apps = w.companions.map(FrameApp.init)
            exchangeAdverts(w, apps)
            _ = apps[0].call(try CommandFrame.sendTextMessage(to: w.companions[2].publicKey, text: "x", timestamp: 1))
            _ = apps[1].call(try CommandFrame.sendChannelTextMessage(channel: 0, text: "y", timestamp: 2))
            w.mesh.run(for: 600_000)
            return lines
        }
        let a = try capture(5), b = try capture(5), c = try capture(6)
        #expect(a.count > 10)
        #expect(a == b)
        #expect(a != c)
    }
}

@Suite struct CompanionCommandTests {
    func pair() throws -> (SimWorld, FrameApp, FrameApp) {
        let w = try line(repeaters: 0)
        return (w, FrameApp(w.companions[0]), FrameApp(w.companions[1]))
    }

    @Test func handshakeFrames() throws {
        let (w, a, _) = try pair()
        let di = a.call(CommandFrame.deviceQuery(appTargetVersion: 3))!
        #expect(di.count == 82 && di[0] == 0x0D && di[1] == 13 && di[3] == 40)
        let si = a.call(try CommandFrame.appStart())!
        #expect(si[0] == 0x05 && Array(si[4 ..< 36]) == w.companions[0].publicKey.bytes)
        #expect(String(decoding: si[58...], as: UTF8.self) == "sim0")
        a.send([0x77]); #expect(a.frames.last == [0x01, 0x01])
    }

    @Test func clockCannotGoBackwards() throws {
        let (w, a, _) = try pair()
        let now = w.companions[0].epochNow
        #expect(a.call(CommandFrame.setDeviceTime(now + 100)) == [0x00])
        #expect(a.call(CommandFrame.setDeviceTime(now)) == [0x01, 0x06])
        let t = a.call(CommandFrame.getDeviceTime())!
        #expect(t[0] == 0x09 && get32(t, 1) == now + 100)
    }

    @Test func privateKeyExportImportAndSigning() throws {
        let (w, a, _) = try pair()
        let exp = a.call(CommandFrame.exportPrivateKey())!
        #expect(exp.count == 65 && Array(exp[1...]) == w.companions[0].identity!.privateKey)
        var r = SimRandom(seed: 99)
        let other = LocalIdentity.generate(using: &r)
        #expect(a.call(try CommandFrame.importPrivateKey(other.privateKey)) == [0x00])
        #expect(w.companions[0].publicKey == other.publicKey)
        #expect(a.call(try CommandFrame.signData([1, 2, 3])) == [0x01, 0x04])
        #expect(a.call(CommandFrame.signStart())?.first == 0x13)
        #expect(a.call(try CommandFrame.signData([1, 2, 3])) == [0x00])
        let sig = a.call(CommandFrame.signFinish())!
        #expect(sig.first == 0x14 && other.publicKey.isValidSignature(sig[1...], for: [1, 2, 3]))
    }

    @Test func contactsListingAndSince() throws {
        let (w, a, b) = try pair()
        exchangeAdverts(w, [a, b])
        a.frames.removeAll()
        a.send(CommandFrame.getContacts())
        a.send(CommandFrame.getContacts())
        #expect(a.frames.contains([0x01, 0x04])) // already iterating
        w.mesh.run(for: 100)
        #expect(a.count(0x02) == 1 && a.count(0x03) == 1)
        let end = a.take(0x04)!
        let lastmod = get32(end, 1)
        #expect(lastmod > 0)
        a.frames.removeAll()
        a.send(CommandFrame.getContacts(since: lastmod))
        w.mesh.run(for: 100)
        #expect(a.count(0x03) == 0 && a.take(0x04) == [0x04, 0, 0, 0, 0])
    }

    @Test func contactTableFullAndOverwrite() throws {
        let w = try SimWorld(topology: .builtIn(.star, companions: 4, repeaters: 0, rooms: 0), options: { var o = SimWorld.Options(); o.companion.maxContacts = 2; return o }())
        let apps = w.companions.map(FrameApp.init)
        exchangeAdverts(w, Array(apps[1...]))
        #expect(w.companions[0].contacts.count == 2)
        #expect(apps[0].count(0x90) == 1 && apps[0].count(0x8A) == 1) // CONTACTS_FULL, then NEW_ADVERT
        // Overwrite the oldest non-favourite.
        _ = apps[0].call(try CommandFrame.setAutoAddConfig(flags: 0x01))
        w.mesh.run(for: 1_000)
        exchangeAdverts(w, [apps[3]])
        #expect(apps[0].count(0x8F) == 1)
        #expect(w.companions[0].contact(key: w.companions[3].publicKey) != nil)
    }

    @Test func manualModeSendsNewAdvert() throws {
        let (w, a, b) = try pair()
        _ = a.call(CommandFrame.setOtherParams(manualAddContacts: 1, telemetryModes: TelemetryModes(), advertLocationPolicy: 0, multiAcks: 0))
        exchangeAdverts(w, [b])
        #expect(w.companions[0].contacts.isEmpty)
        #expect(a.count(0x8A) == 1)
    }

    @Test func channelsAndPublicSlot() throws {
        let (_, a, _) = try pair()
        let ch0 = a.call(CommandFrame.getChannel(0))!
        #expect(ch0[0] == 0x12 && String(decoding: ch0[2 ..< 8], as: UTF8.self) == "Public")
        #expect(Array(ch0[34 ..< 50]) == ChannelSecret.publicChannel.key)
        #expect(a.call(CommandFrame.getChannel(40)) == [0x01, 0x02])
        #expect(a.call(try CommandFrame.setChannel(3, name: "#test", secret: ChannelSecret(hashtag: "#test").key)) == [0x00])
        #expect(a.call(CommandFrame.getChannel(3))?[2] == UInt8(ascii: "#"))
    }
}

@Suite struct ServerScenarioTests {
    /// s0 - r0 - r1 - s1 with a room next to r1.
    func world() throws -> (SimWorld, FrameApp, FrameApp) {
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 2, rooms: 1))
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        return (w, a, b)
    }

    func login(_ app: FrameApp, _ w: SimWorld, _ key: PublicKey, _ pw: String) throws -> [UInt8]? {
        app.frames.removeAll()
        #expect(app.call(try CommandFrame.sendLogin(key, password: pw))?.first == 0x06)
        w.mesh.run(until: { app.count(0x85) + app.count(0x86) > 0 }, limit: 30_000)
        return app.take(0x85)
    }

    @Test func repeaterLoginStatusAndCLI() throws {
        let (w, a, _) = try world()
        let r = w.repeaters[1]
        #expect(try login(a, w, r.publicKey, "wrong") == nil) // bad password: no reply at all
        let ok = try login(a, w, r.publicKey, "password")
        #expect(ok != nil && ok![1] == 1) // admin
        a.frames.removeAll()
        _ = a.call(CommandFrame.sendStatusRequest(r.publicKey))
        #expect(w.mesh.run(until: { a.count(0x87) > 0 }, limit: 30_000))
        let st = a.take(0x87)!
        #expect(st.count == 8 + 56)
        // Admin CLI over txt_type 1: the reply is a CLI_DATA text.
        _ = a.call(try CommandFrame.sendTextMessage(to: r.publicKey, text: "get name", timestamp: 1, type: .cliData))
        #expect(w.mesh.run(until: { a.count(0x83) > 0 }, limit: 30_000))
        let m = a.call(CommandFrame.syncNextMessage())!
        #expect(m.first == 0x07 && m[8] == 1 && String(decoding: m[13...], as: UTF8.self) == "> rpt1")
        // Neighbours (binary request 0x06): r1 heard r0's zero-hop adverts.
        w.mesh.run(for: 130_000)
        a.frames.removeAll()
        _ = a.call(try CommandFrame.sendBinaryRequest(r.publicKey, data: [0x06, 0, 10, 0, 0, 0, 4]))
        #expect(w.mesh.run(until: { a.count(0x8C) > 0 }, limit: 30_000))
        let nb = a.take(0x8C)!
        #expect(nb[6] == 1 && Array(nb[10 ..< 14]) == Array(w.repeaters[0].publicKey.bytes.prefix(4)))
    }

    @Test func roomPostsReachMembersAfterLogin() throws {
        let (w, a, b) = try world()
        let room = w.rooms[0]
        #expect(try login(b, w, room.publicKey, "hello") != nil)
        #expect(try login(a, w, room.publicKey, "hello") != nil)
        a.frames.removeAll(); b.frames.removeAll()
        _ = a.call(try CommandFrame.sendTextMessage(to: room.publicKey, text: "first post", timestamp: 5))
        #expect(w.mesh.run(until: { b.count(0x83) > 0 }, limit: 60_000))
        let m = b.call(CommandFrame.syncNextMessage())!
        // Signed text (txt_type 2) carrying alice's prefix, from the room.
        #expect(m.first == 0x07 && m[8] == 2)
        #expect(Array(m[13 ..< 17]) == Array(w.companions[0].publicKey.bytes.prefix(4)))
        #expect(String(decoding: m[17...], as: UTF8.self) == "first post")
        #expect(w.mesh.run(until: { room.clients.allSatisfy { !$0.isAwaitingAck } }, limit: 30_000))
        #expect(room.clients.first { $0.key == w.companions[1].publicKey }!.syncSince == room.posts[0].timestamp)
        // A late member logging in with sync_since 0 gets the post too; the author does not.
        #expect(a.count(0x83) == 0)
    }

    @Test func traceOverTwoRepeaters() throws {
        let (w, a, _) = try world()
        let h0 = w.repeaters[0].publicKey.hashByte, h1 = w.repeaters[1].publicKey.hashByte
        a.frames.removeAll()
        let sent = a.call(try CommandFrame.sendTracePath(tag: 0x1234, hashes: [h0, h1, h0]))!
        #expect(sent.first == 0x06 && sent[1] == 0)
        #expect(w.mesh.run(until: { a.count(0x89) > 0 }, limit: 30_000))
        let t = a.take(0x89)!
        #expect(t[2] == 3 && get32(t, 4) == 0x1234 && Array(t[12 ..< 15]) == [h0, h1, h0])
    }

    @Test func pathDiscoveryReportsBothRoutes() throws {
        let (w, a, b) = try world()
        _ = b.call(CommandFrame.setOtherParams(manualAddContacts: 0, telemetryModes: TelemetryModes(base: 2), advertLocationPolicy: 0, multiAcks: 0))
        a.frames.removeAll()
        let sent = a.call(CommandFrame.sendPathDiscoveryRequest(w.companions[1].publicKey))!
        #expect(sent.first == 0x06 && sent[1] == 1)
        #expect(w.mesh.run(until: { a.count(0x8D) > 0 }, limit: 30_000))
        let p = a.take(0x8D)!
        let hs = w.repeaters.map { $0.publicKey.hashByte }
        #expect(p[8] == 2 && Array(p[9 ..< 11]) == hs)
        #expect(p[11] == 2 && Array(p[12 ..< 14]) == hs.reversed())
        // Not stored as the contact's path.
        #expect(a.contact(w.companions[1].publicKey)!.outPathLength.isUnknown)
    }
}
