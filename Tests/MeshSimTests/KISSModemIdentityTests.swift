import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// `pocketmesh node --identity modem` in one virtual time: a node on the simulator's KISS modem
/// whose key is the modem's. The modem's answers reach the host 3 ms after its request, as over
/// a serial port, so every signature and shared secret is pending for a while.
@Suite struct KISSModemIdentityTests {
    struct World {
        let w: SimWorld
        let modem: KISSModemNode
        let host: KISSHost
        let air: RadioAir
        let a: FrameApp, b: FrameApp
    }

    func world() throws -> World {
        let m = try BridgedMesh(role: "kiss", snr: (8, 5), seed: 31, airSeed: 6)
        let w = m.w, modem = w.modems[0]
        let host = KISSHost(air: m.air)
        host.write = { modem.receive($0) }
        modem.onWrite = { bytes in w.mesh.scheduler.after(3) { host.receive(bytes) } }
        m.air.send = { host.send($0) }
        return World(w: w, modem: modem, host: host, air: m.air, a: m.a, b: m.b)
    }

    /// GetIdentity, answered after the link's delay.
    func modemIdentity(_ x: World) throws -> KISSModemIdentity {
        var key: PublicKey?? = nil
        x.host.identity { key = .some($0) }
        #expect(key == nil)
        x.w.mesh.run(for: 10)
        let answered: PublicKey? = key ?? nil
        return KISSModemIdentity(publicKey: try #require(answered), host: x.host)
    }

    @Test func aRepeaterWithTheModemsKeyAdvertisesItAndAnAdminLogsIn() throws {
        let x = try world()
        let r = RepeaterNode(mesh: x.air, name: "linux", identity: LocalIdentity.generate(), adminPassword: "secret")
        defer { withExtendedLifetime((x.w, r)) {} }
        r.adopt(try modemIdentity(x))
        x.host.start(params: r.radio.params)
        let key = x.modem.identity.publicKey
        #expect(r.identity == nil && r.publicKey == key)
        #expect(r.command("get prv.key", senderTimestamp: 0) == "Error: the key is the modem's")
        // The boot advert, signed by the modem: both companions verified it and know the modem's key.
        x.w.mesh.run(for: 12_000)
        #expect(x.a.contact(key)?.name == "linux" && x.b.contact(key)?.name == "linux")
        // Login: the first ANON_REQ waits for the modem's key exchange, then is answered.
        #expect(try loginFrame(x.a, x.w, key, "secret") != nil)
        #expect(try loginFrame(x.a, x.w, key, "wrong") == nil)
        // Messages between the companions still go through it.
        exchangeAdverts(x.w, [x.a, x.b])
        let bKey = x.w.companions[1].publicKey
        #expect(x.a.call(try CommandFrame.sendTextMessage(to: bKey, text: "via modem key", timestamp: x.w.mesh.epochNow))?.first == 0x06)
        #expect(x.w.mesh.run(until: { x.a.count(0x82) > 0 }, limit: 60_000))
    }

    @Test func aCompanionWithTheModemsKeySendsAndReceivesAcknowledgedMessages() throws {
        let x = try world()
        let c = CompanionNode(mesh: x.air, name: "linuxc", identity: LocalIdentity.generate())
        defer { withExtendedLifetime((x.w, c)) {} }
        c.adopt(try modemIdentity(x))
        x.host.start(params: c.radio.params)
        let app = FrameApp(c)
        let key = x.modem.identity.publicKey, aKey = x.w.companions[0].publicKey, bKey = x.w.companions[1].publicKey
        // The advert is sent once the modem has signed it.
        #expect(app.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00])
        exchangeAdverts(x.w, [x.a, x.b])
        #expect(x.a.contact(key)?.name == "linuxc" && x.b.contact(key)?.name == "linuxc")
        #expect(app.contact(aKey) != nil && app.contact(bKey) != nil)
        // No key here: export is refused, signing is the modem's.
        #expect(app.call(CommandFrame.exportPrivateKey()) == [0x0F])
        // A message out: held until the modem gives the shared secret, then sent and acknowledged.
        app.frames.removeAll()
        app.send(try CommandFrame.sendTextMessage(to: aKey, text: "from the modem's key", timestamp: x.w.mesh.epochNow))
        #expect(app.count(0x06) == 0)
        #expect(x.w.mesh.run(until: { app.count(0x06) > 0 }, limit: 100))
        #expect(x.w.mesh.run(until: { app.count(0x82) > 0 }, limit: 60_000), "not acknowledged")
        let m = try #require(x.a.call(CommandFrame.syncNextMessage()))
        #expect(String(decoding: m[13...], as: UTF8.self) == "from the modem's key")
        // A message in from another contact: held until its secret comes, then opened and acknowledged.
        x.b.frames.removeAll()
        #expect(x.b.call(try CommandFrame.sendTextMessage(to: key, text: "to the modem's key", timestamp: x.w.mesh.epochNow))?.first == 0x06)
        #expect(x.w.mesh.run(until: { x.b.count(0x82) > 0 }, limit: 60_000), "not acknowledged")
        let n = try #require(app.call(CommandFrame.syncNextMessage()))
        #expect(String(decoding: n[13...], as: UTF8.self) == "to the modem's key")
        // A signature over the companion protocol comes from the modem's key.
        #expect(app.call(CommandFrame.signStart())?.first == 0x13)
        #expect(app.call(try CommandFrame.signData([1, 2, 3])) == [0x00])
        app.send(CommandFrame.signFinish())
        #expect(x.w.mesh.run(until: { app.count(0x14) > 0 }, limit: 100))
        let sig = try #require(app.take(0x14))
        #expect(key.isValidSignature(sig[1...], for: [1, 2, 3]))
    }

    @Test func modemRepliesGoToTheirRequestsInOrder() throws {
        let x = try world()
        var got: [(UInt8, [UInt8])] = []
        x.host.request(.ping) { got.append(($0, $1)) }
        x.host.request(.setRadio, [1, 2]) { got.append(($0, $1)) }
        x.host.request(.signData, [0x61]) { got.append(($0, $1)) }
        x.host.request(.keyExchange, Array(x.w.companions[0].publicKey.bytes)) { got.append(($0, $1)) }
        x.w.mesh.run(for: 10)
        #expect(got.map(\.0) == [0x97, 0xF1, 0x84, 0x87])
        #expect(got[1].1 == [KISSModem.ErrorCode.invalidLength.rawValue])
        #expect(got[2].1 == x.modem.identity.sign([0x61]))
        let secret = try x.modem.identity.sharedSecret(with: x.w.companions[0].publicKey)
        #expect(got[3].1 == secret.bytes)
    }
}
