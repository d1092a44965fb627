import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// MeshNode's SX1262 driver on the simulator's SX1262 model (SPI commands, BUSY and DIO1), a
/// repeater on it, in virtual time: what `pocketmesh node --radio sx1262:SPIDEV` runs on a HAT.
@Suite struct SX1262Tests {
    func world(tcxo: Double? = nil) throws -> (SimWorld, SX1262Model, SX1262, RepeaterNode, FrameApp, FrameApp) {
        let m = try BridgedMesh(role: nil, snr: (9, -2.25), seed: 31, airSeed: 6) { SX1262Model(mesh: $0, name: "hat") }
        let hat = m.middle as! SX1262Model, air = m.air
        let r = m.repeater(name: "pi", seed: 8, password: "x")
        let chip = SX1262(board: hat, params: r.radio.params, tcxoVolts: tcxo, dio2RfSwitch: tcxo != nil)
        hat.onDIO1 = { try? chip.irq() }
        chip.onReceive = { air.heard($0, snr: $1, rssi: $2) }
        air.send = { try? chip.send($0) }
        try chip.begin()
        return (m.w, hat, chip, r, m.a, m.b)
    }

    @Test func bringUpCommandsAndTheirArguments() throws {
        let (w, hat, _, r, _, _) = try world(tcxo: 1.8)
        defer { withExtendedLifetime((w, r)) {} }
        #expect(hat.commands == [0x80, 0x97, 0x89, 0x9D, 0x96, 0x8A, 0x86, 0x8B, 0x8C, 0x0D, 0x95, 0x8E, 0x8F, 0x08, 0x82])
        #expect(hat.mode == .rx && hat.syncWord == [0x14, 0x24] && hat.rfSwitchState == (true, false))
        #expect(hat.radio.params == r.radio.params)
        #expect(SX1262.frequencyWord(hz: 869_618_000) == [0x36, 0x59, 0xE3, 0x53])
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 62_500, sf: 8, cr: 5)) == [8, 0x03, 1, 0])
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 125_000, sf: 12, cr: 8)) == [12, 0x04, 4, 1])  // 32.8 ms symbols: LDRO
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 100_000, sf: 8, cr: 5)) == nil)
        #expect(SX1262.packetParams(RadioParams(), length: 40) == [0x00, 0x20, 0x00, 40, 0x01, 0x00])
        #expect(SX1262.tcxoCode(1.8) == 2 && SX1262.tcxoCode(3.3) == 7 && SX1262.tcxoCode(2.0) == nil)
    }

    @Test func companionsTalkThroughARepeaterOnTheChip() throws {
        let (w, hat, chip, r, a, b) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        exchangeAdverts(w, [a])  // one at a time: one radio hears one packet at once
        exchangeAdverts(w, [b])
        let aKey = w.companions[0].publicKey, bKey = w.companions[1].publicKey
        #expect(a.contact(bKey) != nil && b.contact(aKey) != nil)
        for (from, to, key, text) in [(a, b, bKey, "hello"), (b, a, aKey, "back"), (a, b, bKey, "direct")] {
            from.frames.removeAll()
            #expect(from.call(try CommandFrame.sendTextMessage(to: key, text: text, timestamp: w.mesh.epochNow))?.first == 0x06)
            #expect(w.mesh.run(until: { from.count(0x82) > 0 }, limit: 60_000), "\(text) not acknowledged")
            let m = try #require(to.call(CommandFrame.syncNextMessage()))
            #expect(m.count > 13 && String(decoding: m.dropFirst(13), as: UTF8.self) == text)
        }
        #expect(hat.radio.nSent > 0 && chip.crcErrors == 0 && chip.dropped == 0)
        #expect([9.0, -2.25].contains(r.radio.lastSNR))  // GetPacketStatus carried the link's SNR
        #expect(hat.commands.contains(0x1E) && hat.commands.contains(0x14))
    }

    @Test func channelActivityDetectionHoldsAPacketWhileTheChannelIsBusy() throws {
        let (w, hat, chip, r, a, b) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        chip.cadBeforeTransmit = true
        var busy = 0
        chip.onChannelBusy = { busy += 1; w.mesh.scheduler.after(300) { try? chip.retry() } }
        w.mesh.run(for: 10_000)  // the boot advert has gone out
        let sent = hat.radio.nSent
        hat.radio.rxBusyUntil = w.mesh.now + 1_000  // a preamble on the air for a second
        try chip.send([0x11, 0x00, 0xAB, 0xCD])
        w.mesh.run(for: 200)
        #expect(busy == 1 && hat.radio.nSent == sent && chip.transmitting && hat.mode == .rx)
        w.mesh.run(for: 3_000)
        #expect(busy >= 2 && hat.radio.nSent == sent + 1 && !chip.transmitting && chip.channelBusyCount == busy)
        // And the mesh still works through it.
        exchangeAdverts(w, [a])
        exchangeAdverts(w, [b])
        a.frames.removeAll()
        #expect(a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "cad", timestamp: w.mesh.epochNow))?.first == 0x06)
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 60_000))
        #expect(hat.commands.contains(0xC5) && hat.commands.contains(0x88))
    }
}
