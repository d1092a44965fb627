import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// MeshNode's SX1262 driver on the simulator's SX1262 model (SPI commands, BUSY and DIO1), a
/// repeater on it, in virtual time: what `pocketmesh node --radio sx1262:SPIDEV` runs on a HAT.
@Suite struct SX1262Tests {
    func world(tcxo: Double? = SX1262.defaultTCXOVolts, dio2: Bool = false) throws -> (SimWorld, SX1262Model, SX1262, RepeaterNode, FrameApp, FrameApp) {
        let m = try BridgedMesh(role: nil, snr: (9, -2.25), seed: 31, airSeed: 6) { SX1262Model(mesh: $0, name: "hat") }
        let hat = m.middle as! SX1262Model, air = m.air
        let r = m.repeater(name: "pi", seed: 8, password: "x")
        let chip = SX1262(board: hat, params: r.radio.params, tcxoVolts: tcxo, dio2RfSwitch: dio2, scheduler: m.w.mesh.scheduler)
        chip.retryDelay = { 300 }
        hat.onDIO1 = { chip.irq() }
        chip.onReceive = { air.heard($0, snr: $1, rssi: $2) }
        air.send = { chip.send($0) }
        try chip.begin()
        return (m.w, hat, chip, r, m.a, m.b)
    }

    @Test func bringUpCommandsAndTheirArguments() throws {
        let (w, hat, chip, r, _, _) = try world(dio2: true)
        defer { withExtendedLifetime((w, r)) {} }
        // Reset; GetStatus, the version register, ClearDeviceErrors, the TCXO, Calibrate and
        // CalibrateImage, GetDeviceErrors; then the settings, the sync word written and read
        // back, PA, TX clamp (read, written), RX gain and its retention, buffers, IRQs, RX.
        #expect(hat.commands == [0x80, 0xC0, 0x1D, 0x07, 0x97, 0x89, 0x98, 0x17, 0x9D, 0x96, 0x8A, 0x86, 0x8B, 0x8C, 0x0D, 0x1D,
                                 0x95, 0x8E, 0x1D, 0x0D, 0x0D, 0x0D, 0x8F, 0x08, 0x02, 0x82])
        #expect(hat.mode == .rx && hat.syncWord == [0x14, 0x24] && hat.rfSwitchState == (true, false))
        #expect(hat.radio.params == r.radio.params)
        #expect(chip.version == "SX1261 V2D 2D02" && chip.tcxoVolts == 1.8 && chip.calibrationWarnings == 0)
        #expect(hat.imageCalibration == [0xD7, 0xDB])  // 863-870 MHz
        #expect(hat.register(SX1262.rxGainRegister) == 0x96 && hat.register(SX1262.txClampRegister) == 0x1E)
        #expect([hat.register(0x029F), hat.register(0x02A0), hat.register(0x02A1)] == [0x01, 0x08, 0xAC])
        #expect(SX1262.frequencyWord(hz: 869_618_000) == [0x36, 0x59, 0xE3, 0x53])
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 62_500, sf: 8, cr: 5)) == [8, 0x03, 1, 0])
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 125_000, sf: 12, cr: 8)) == [12, 0x04, 4, 1])  // 32.8 ms symbols: LDRO
        #expect(SX1262.modulation(RadioParams(freqKHz: 869_618, bwHz: 100_000, sf: 8, cr: 5)) == nil)
        #expect(SX1262.packetParams(RadioParams(), length: 40) == [0x00, 0x20, 0x00, 40, 0x01, 0x00])
        #expect(SX1262.tcxoCode(1.8) == 2 && SX1262.tcxoCode(3.3) == 7 && SX1262.tcxoCode(2.0) == nil)
        // The datasheet's image calibration table (9.2.1), and 4 MHz steps elsewhere.
        #expect(SX1262.imageCalibration(freqKHz: 433_175) == [0x6B, 0x6F] && SX1262.imageCalibration(freqKHz: 490_000) == [0x75, 0x81])
        #expect(SX1262.imageCalibration(freqKHz: 780_500) == [0xC1, 0xC5] && SX1262.imageCalibration(freqKHz: 915_000) == [0xE1, 0xE9])
        #expect(SX1262.imageCalibration(freqKHz: 920_000) == [0xE1, 0xE9] && SX1262.imageCalibration(freqKHz: 450_000) == [0x6F, 0x73])
        #expect(SX1262.txTimeout(ms: 1000) == [0x00, 0xFA, 0x00])  // 64 000 steps of 15.625 µs
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

    /// Listen before talk, as the firmware before every transmit (not only with `set cad on`):
    /// a packet waits while the chip reports a preamble or header, and CAD still runs when asked.
    @Test func listenBeforeTalkHoldsAPacketWhileAPreambleIsOnTheAir() throws {
        let (w, hat, chip, r, a, b) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        chip.cadBeforeTransmit = true
        var busy = 0
        chip.onChannelBusy = { busy += 1 }
        w.mesh.run(for: 10_000)  // the boot advert has gone out
        let sent = hat.radio.nSent
        hat.radio.rxBusyUntil = w.mesh.now + 1_000  // a preamble on the air for a second
        chip.send([0x11, 0x00, 0xAB, 0xCD])
        w.mesh.run(for: 200)
        #expect(busy == 1 && hat.radio.nSent == sent && chip.transmitting && hat.mode == .rx)
        #expect(chip.recoveries[.lbtDeferral] == 1)
        w.mesh.run(for: 3_000)
        #expect(busy >= 2 && hat.radio.nSent == sent + 1 && !chip.transmitting && chip.channelBusyCount == busy)
        #expect(chip.recoveries[.lbtDeferral] == UInt32(busy) && chip.recoveries.troubles == 0)
        // And the mesh still works through it.
        exchangeAdverts(w, [a])
        exchangeAdverts(w, [b])
        a.frames.removeAll()
        #expect(a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "cad", timestamp: w.mesh.epochNow))?.first == 0x06)
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 60_000))
        #expect(hat.commands.contains(0xC5) && hat.commands.contains(0x88))
    }

    /// A preamble that never clears does not hold a packet for ever: it goes within 4 s (the
    /// firmware's header-valid flag expires after the longest payload's airtime; past 4 s the
    /// packet goes anyway), and its TxDone comes.
    @Test func listenBeforeTalkGivesUpWithinFourSeconds() throws {
        let (w, hat, chip, r, _, _) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        w.mesh.run(for: 10_000)
        let sent = hat.radio.nSent
        hat.radio.rxBusyUntil = w.mesh.now + 60_000
        chip.send([0x11, 0x00, 0x01])
        w.mesh.run(for: 1_000)
        #expect(hat.radio.nSent == sent && chip.recoveries[.lbtDeferral] >= 2)
        w.mesh.run(for: UInt64(SX1262.lbtMaxMs))
        #expect(hat.radio.nSent == sent + 1)
        w.mesh.run(for: 1_000)
        #expect(!chip.transmitting && chip.recoveries.troubles == 0)
    }
}
