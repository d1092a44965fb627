import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// A node on a `RadioAir` (what `pocketmesh node` runs on a real radio) bridged to the simulator's
/// external node as the air socket bridges them, in one virtual time: the two companions hear
/// each other only through it.
@Suite struct RadioAirTests {
    func world() throws -> (SimWorld, RepeaterNode, FrameApp, FrameApp) {
        let m = try BridgedMesh(role: "external", snr: (8, 7), seed: 11, airSeed: 3)
        let ext = m.middle as! ExternalNode, air = m.air
        let r = m.repeater(name: "linux", seed: 99, password: "secret")
        air.send = { ext.transmit($0) }
        ext.onHeard = { air.heard($0, snr: $1, rssi: $2) }
        return (m.w, r, m.a, m.b)
    }

    @Test func companionsExchangeAcknowledgedMessagesThroughIt() throws {
        let (w, r, a, b) = try world()
        exchangeAdverts(w, [a, b])
        let aKey = w.companions[0].publicKey, bKey = w.companions[1].publicKey
        #expect(a.contact(bKey) != nil && b.contact(aKey) != nil)
        for (from, to, key, text) in [(a, b, bKey, "hello"), (b, a, aKey, "back"), (a, b, bKey, "now direct")] {
            from.frames.removeAll()
            #expect(from.call(try CommandFrame.sendTextMessage(to: key, text: text, timestamp: w.mesh.epochNow))?.first == 0x06)
            #expect(w.mesh.run(until: { from.count(0x82) > 0 }, limit: 60_000), "\(text) not acknowledged")
            let m = try #require(to.call(CommandFrame.syncNextMessage()))
            #expect(m.first == 0x07 && String(decoding: m[13...], as: UTF8.self) == text)
        }
        #expect(a.contact(bKey)!.outPath == [r.publicKey.hashByte])
        #expect(r.radio.nSent > 0 && r.radio.recvDirect > 0)
    }

    @Test func adminLogsInAndRunsTheCLIOverTheAir() throws {
        let (w, r, a, _) = try world()
        w.mesh.run(for: 10_000)  // the repeater's boot advert
        #expect(a.contact(r.publicKey) != nil)
        #expect(try loginFrame(a, w, r.publicKey, "wrong") == nil)
        #expect(try loginFrame(a, w, r.publicKey, "secret") != nil)
        a.frames.removeAll()
        _ = a.call(try CommandFrame.sendTextMessage(to: r.publicKey, text: "ver", timestamp: w.mesh.epochNow, type: .cliData))
        #expect(w.mesh.run(until: { a.count(0x83) > 0 }, limit: 30_000))
        let m = try #require(a.call(CommandFrame.syncNextMessage()))
        #expect(String(decoding: m[13...], as: UTF8.self).hasPrefix(CompanionNode.firmwareVersion))
    }

    @Test func prefsRoundTripThroughTheCLIsWords() throws {
        let (_, r, _, _) = try world()
        #expect(r.command("set name Mast top", senderTimestamp: 0) == "OK")
        #expect(r.command("set radio 869.525,250,11,5", senderTimestamp: 0) == "OK - reboot to apply")
        #expect(r.command("set flood.advert.interval 12", senderTimestamp: 0) == "OK")
        #expect(r.command("set owner.info Ann|base camp", senderTimestamp: 0) == "OK")
        #expect(r.command("password hunter2", senderTimestamp: 0) == "password now: hunter2")
        let text = r.prefsText()
        #expect(text.hasPrefix("password hunter2\nname Mast top\n"))
        #expect(text.contains("\nowner.info Ann|base camp\n") && text.contains("\nflood.advert.interval 12\n"))
        let air = RadioAir(seed: 1, start: 0, epochNow: 1_800_000_000)
        var rng = SimRandom(seed: 5)
        let copy = RepeaterNode(mesh: air, name: "x", identity: LocalIdentity.generate(using: &rng))
        #expect(copy.loadPrefs(text + "bogus 1\n") == ["bogus 1"])
        #expect(copy.name == "Mast top" && copy.adminPassword == "hunter2" && copy.ownerInfo == "Ann\nbase camp")
        #expect(copy.radio.params.freqKHz == 869_525 && copy.radio.params.bwHz == 250_000 && copy.radio.params.sf == 11)
        #expect(copy.floodAdvertInterval == 12 * 3_600_000)
        // The same file again, but for the radio: `set radio` waits for a reboot, the loaded one is live.
        func lines(_ t: String) -> [Substring] { t.split(separator: "\n").filter { !$0.hasPrefix("radio ") } }
        #expect(lines(copy.prefsText()) == lines(text))
    }
}
