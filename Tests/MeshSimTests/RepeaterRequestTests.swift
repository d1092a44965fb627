import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// A companion and a repeater in range of each other, nothing else.
func pair(_ configure: ((inout SimWorld.Options) -> Void)? = nil, repeater: NodeSpec = NodeSpec(name: "rpt", role: .repeater)) throws -> (SimWorld, FrameApp, RepeaterNode) {
    var o = SimWorld.Options()
    configure?(&o)
    let t = Topology(nodes: [NodeSpec(name: "a", role: .companion), repeater], links: [LinkSpec(a: "a", b: repeater.name)])
    let w = try SimWorld(topology: t, options: o)
    return (w, FrameApp(w.companions[0]), w.repeaters[0])
}

/// Sends an anonymous request and returns the BINARY_RESPONSE data (after the echoed tag), or nil.
func anonRequest(_ app: FrameApp, _ w: SimWorld, _ key: PublicKey, _ data: [UInt8], limit: UInt64 = 20_000) throws -> [UInt8]? {
    app.frames.removeAll()
    let sent = app.call(try CommandFrame.sendAnonRequest(key, data: data))
    #expect(sent?.first == 0x06)
    guard w.mesh.run(until: { app.count(0x8C) > 0 }, limit: limit), let f = app.take(0x8C) else { return nil }
    var d = Array(f[6...])
    while d.last == 0 { d.removeLast() } // cipher padding
    return d
}

/// Sets the contact's path to zero-hop direct (what meshcore_py does before an anonymous request).
func setZeroHop(_ app: FrameApp, _ key: PublicKey) throws {
    var c = try #require(app.contact(key))
    try c.setOutPath(PathLength(rawValue: 0), [UInt8]())
    #expect(app.call(try CommandFrame.addUpdateContact(c))?.first == 0x00)
}

/// Logs in (the server must be a contact: its boot advert is waited for).
func loginFrame(_ app: FrameApp, _ w: SimWorld, _ key: PublicKey, _ pw: String) throws -> [UInt8]? {
    if app.contact(key) == nil { w.mesh.run(for: 10_000) }
    app.frames.removeAll()
    #expect(app.call(try CommandFrame.sendLogin(key, password: pw))?.first == 0x06)
    w.mesh.run(until: { app.count(0x85) + app.count(0x86) > 0 }, limit: 30_000)
    return app.take(0x85)
}

@Suite struct RepeaterRequestTests {
    @Test func regionsOwnerAndClockAnsweredOnADirectRoute() throws {
        let (w, a, r) = try pair()
        r.ownerInfo = "Ann\nbase camp"
        _ = r.command("region put north")
        _ = r.command("region put south")
        _ = r.command("region denyf south")
        // Not a contact yet: the companion sends zero-hop direct, asking for a zero-hop reply.
        let regions = try #require(try anonRequest(a, w, r.publicKey, [0x01, 0x00]))
        #expect(get32(regions, 0) == r.epochNow || get32(regions, 0) + 1 == r.epochNow) // the repeater's clock
        #expect(String(decoding: regions[4...], as: UTF8.self) == "*,north")
        let owner = try #require(try anonRequest(a, w, r.publicKey, [0x02, 0x00]))
        #expect(String(decoding: owner[4...], as: UTF8.self) == "rpt\nAnn\nbase camp")
        let clock = try #require(try anonRequest(a, w, r.publicKey, [0x03, 0x00]))
        #expect(clock.count == 4) // features byte 0 (repeating) was padding-trimmed
        _ = r.command("set repeat off")
        let off = try #require(try anonRequest(a, w, r.publicKey, [0x03, 0x00]))
        #expect(off.count == 5 && off[4] == 0x80)
        // The fifth within three minutes is not answered; later ones are again.
        #expect(try anonRequest(a, w, r.publicKey, [0x01, 0x00], limit: 10_000) == nil)
        w.mesh.run(for: 180_000)
        try setZeroHop(a, r.publicKey)
        #expect(try anonRequest(a, w, r.publicKey, [0x01, 0x00]) != nil)
    }

    @Test func floodedAnonymousRequestsAndUnknownTypesAreIgnored() throws {
        let (w, a, r) = try pair()
        w.mesh.run(for: 10_000) // the repeater's boot advert: a contact with no path, so requests flood
        #expect(a.contact(r.publicKey) != nil && a.contact(r.publicKey)!.outPathLength.isUnknown)
        #expect(try anonRequest(a, w, r.publicKey, [0x01, 0x00], limit: 10_000) == nil)
        #expect(try anonRequest(a, w, r.publicKey, [0x07, 0x00], limit: 10_000) == nil)
        // A login floods and is answered, as a flood PATH carrying the response.
        #expect(try loginFrame(a, w, r.publicKey, "password") != nil)
    }

    @Test func loginPermissionsReplayAndBlankPassword() throws {
        let (w, a, r) = try pair()
        r.guestPassword = "guest"
        // Guest: permissions 0, not admin; a blank password from a known client logs it in as it was.
        let g = try #require(try loginFrame(a, w, r.publicKey, "guest"))
        #expect(g[1] == 0)
        #expect(r.clients.count == 1 && r.clients[0].permissions == 0)
        let again = try #require(try loginFrame(a, w, r.publicKey, ""))
        #expect(again[1] == 0)
        let admin = try #require(try loginFrame(a, w, r.publicKey, "password"))
        #expect(admin[1] == 1)
        // An unknown client with a blank password gets nothing while the guest password is set...
        let (w2, b, r2) = try pair()
        r2.guestPassword = "hello"
        #expect(try loginFrame(b, w2, r2.publicKey, "") == nil)
        // ...and gets in as a guest when it is blank, as in the firmware.
        r2.guestPassword = ""
        let blank = try #require(try loginFrame(b, w2, r2.publicKey, ""))
        #expect(blank[1] == 0)
    }

    @Test func theWorldsGuestPasswordReachesRepeaters() throws {
        let (w, a, r) = try pair { $0.guestPassword = "visitor" }
        #expect(r.guestPassword == "visitor")
        #expect(r.command("get guest.password") == "> visitor")
        let g = try #require(try loginFrame(a, w, r.publicKey, "visitor"))
        #expect(g[1] == 0 && r.clients.count == 1 && !r.clients[0].isAdmin)
        // A node's own guest password wins; a blank one (the firmware's default) admits a blank password.
        let (w2, b, r2) = try pair({ $0.guestPassword = "visitor" }, repeater: NodeSpec(name: "rpt", role: .repeater, guestPassword: ""))
        #expect(r2.guestPassword == "")
        #expect(try loginFrame(b, w2, r2.publicKey, "") != nil)
        let (w3, c, r3) = try pair { $0.guestPassword = "" }
        #expect(try loginFrame(c, w3, r3.publicKey, "") != nil)
        #expect(try loginFrame(c, w3, r3.publicKey, "visitor") == nil)
    }

    @Test func aRebootForgetsGuestsNeighboursAndTheRateLimit() throws {
        let (w, a, r) = try pair()
        #expect(try loginFrame(a, w, r.publicKey, "hello") != nil)
        #expect(r.clients.count == 1)
        let other = try LocalIdentity(seed: [UInt8](repeating: 7, count: 32)).publicKey
        #expect(r.command("setperm \(AirHex.encode(other.bytes)) 3") == "OK")
        r.putNeighbour(other, snr: 5)
        for _ in 0 ..< 4 { _ = r.anonLimiter.allow(r.epochNow) }
        let fifth = r.anonLimiter.allow(r.epochNow)
        #expect(!fifth)
        _ = r.command("reboot")
        w.mesh.run(for: 2_000)
        let allowed = r.anonLimiter.allow(r.epochNow)
        #expect(r.clients.map(\.key) == [other] && r.neighbours.isEmpty && allowed)
    }

    @Test func requestsAnsweredOnlyWithANewerTag() throws {
        let (w, a, r) = try pair()
        #expect(try loginFrame(a, w, r.publicKey, "password") != nil)
        let i = r.clients.firstIndex { $0.key == w.companions[0].publicKey }!
        r.clients[i].lastTimestamp = .max - 1 // as if a later request had been seen
        a.frames.removeAll()
        _ = a.call(CommandFrame.sendStatusRequest(r.publicKey))
        #expect(!w.mesh.run(until: { a.count(0x87) > 0 }, limit: 15_000))
    }

    @Test func roomsDoNotAnswerNeighboursOrOwnerRequests() throws {
        let w = try SimWorld(topology: Topology(nodes: [NodeSpec(name: "a", role: .companion), NodeSpec(name: "room", role: .room)],
                                                links: [LinkSpec(a: "a", b: "room")]))
        let a = FrameApp(w.companions[0]), room = w.rooms[0]
        #expect(try loginFrame(a, w, room.publicKey, "password") != nil)
        for req: [UInt8] in [[0x06, 0, 10, 0, 0, 0, 4], [0x07]] {
            a.frames.removeAll()
            _ = a.call(try CommandFrame.sendBinaryRequest(room.publicKey, data: req))
            #expect(!w.mesh.run(until: { a.count(0x8C) > 0 }, limit: 15_000))
        }
        #expect(room.command("neighbors") == "not supported")
    }

    @Test func roomsRelayOnlyWhenToldTo() throws {
        // a - room - b: the room server is the only way between them.
        let t = Topology(nodes: [NodeSpec(name: "a", role: .companion), NodeSpec(name: "b", role: .companion), NodeSpec(name: "room", role: .room)],
                         links: [LinkSpec(a: "a", b: "room"), LinkSpec(a: "room", b: "b")])
        let w = try SimWorld(topology: t)
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        #expect(w.rooms[0].command("get repeat") == "> off")
        #expect(try !channelReaches(w, a, b, scope: .clear, text: "not relayed"))
        #expect(w.rooms[0].command("set repeat on") == "OK - repeat is now ON")
        #expect(try channelReaches(w, a, b, scope: .clear, text: "relayed"))
    }
}
