import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// MeshNode's SX1262 driver on the simulator's SX1262 model misbehaving as chips and boards do
/// (`SX1262Faults`, a brown-out, a packet arriving between the IRQ read and its clear), a
/// repeater on it, in virtual time: each fault is recovered from, or the start or the node stops
/// with one sentence, within a stated bound.
@Suite struct SX1262FaultTests {
    final class Log {
        var lines: [(RadioRecovery, String)] = []
        var dead: [(UInt64, String)] = []
    }

    struct World {
        let w: SimWorld
        let hat: SX1262Model
        let chip: SX1262
        let air: RadioAir
        let r: RepeaterNode
        let a: FrameApp, b: FrameApp
        let log: Log
    }

    /// The mesh with the chip; `begin` is not run when `start` is false.
    func world(tcxo: Double? = SX1262.defaultTCXOVolts, fallback: Bool = true, start: Bool = true,
               _ setUp: (SX1262Model) -> Void = { _ in }) throws -> World {
        let m = try BridgedMesh(role: nil, snr: (9, 7), seed: 33, airSeed: 7) { SX1262Model(mesh: $0, name: "hat") }
        let hat = m.middle as! SX1262Model, air = m.air, w = m.w
        setUp(hat)
        let r = m.repeater(name: "pi", seed: 8, password: "x")
        let chip = SX1262(board: hat, params: r.radio.params, tcxoVolts: tcxo, tcxoFallback: fallback, scheduler: w.mesh.scheduler)
        chip.retryDelay = { 300 }
        hat.onDIO1 = { chip.irq() }
        chip.onReceive = { air.heard($0, snr: $1, rssi: $2) }
        air.send = { chip.send($0) }
        let log = Log()
        chip.onRecovery = { if $0 != .lbtDeferral { log.lines.append(($0, $1)) } }
        chip.onDead = { log.dead.append((w.mesh.now, $0)) }
        if start { try chip.begin() }
        return World(w: w, hat: hat, chip: chip, air: air, r: r, a: m.a, b: m.b, log: log)
    }

    func messageGoesThrough(_ x: World) throws -> Bool {
        exchangeAdverts(x.w, [x.a])
        exchangeAdverts(x.w, [x.b])
        x.a.frames.removeAll()
        #expect(x.a.call(try CommandFrame.sendTextMessage(to: x.w.companions[1].publicKey, text: "on", timestamp: x.w.mesh.epochNow))?.first == 0x06)
        return x.w.mesh.run(until: { x.a.count(0x82) > 0 }, limit: 60_000)
    }

    // MARK: at start: one sentence

    @Test func noChipOnTheBusIsOneSentence() throws {
        for b: UInt8 in [0x00, 0xFF] {
            let x = try world(start: false) { $0.faults.miso = b }
            #expect(throws: SX1262Error.noChip(miso: b)) { try x.chip.begin() }
            let text = SX1262Error.noChip(miso: b).description
            #expect(text.hasPrefix("no SX1262 answers on the SPI bus") && text.contains("chip select") && !text.contains("\n"))
        }
    }

    @Test func aStuckBusyLineIsOneSentence() throws {
        let x = try world(start: false) { $0.faults.busyStuck = true }
        #expect(throws: SX1262Error.busyTimeout(opcode: 0x80)) { try x.chip.begin() }
        #expect(SX1262Error.busyTimeout(opcode: 0x80).description.contains("check the BUSY pin"))
    }

    /// A board with a crystal where a TCXO was tried: the oscillator does not start (XOSC start
    /// error after calibration), and, as the firmware, the chip is reset and tried without it.
    @Test func theOtherOscillatorIsTriedWhenCalibrationFails() throws {
        let x = try world { $0.hasTCXO = false }
        #expect(x.chip.tcxoVolts == nil && x.hat.mode == .rx)
        #expect(x.hat.commands.filter { $0 == 0x89 }.count == 2 && x.hat.commands.filter { $0 == 0x97 }.count == 1)
        // And a TCXO board told it has a crystal.
        let y = try world(tcxo: nil) { $0.hasTCXO = true }
        #expect(y.chip.tcxoVolts == 1.8)
        // Without the retry: one sentence naming the errors.
        let z = try world(fallback: false, start: false) { $0.hasTCXO = false }
        #expect(throws: SX1262Error.calibration(errors: SX1262.xoscStartError | 4)) { try z.chip.begin() }
        #expect(SX1262Error.calibration(errors: 0x24).description.contains("XOSC start") && SX1262Error.calibration(errors: 0x24).description.contains("--tcxo"))
    }

    // MARK: while running: recovered, counted, logged once

    /// A lost TxDone: the deadline (airtime × 1.5 + 1 s) gives the packet up, the chip is
    /// checked and the next packets go.
    @Test func aLostTxDoneGivesThePacketUpAndTheNextOnesGo() throws {
        let x = try world { $0.faults.dropTxDone = [1] }
        defer { withExtendedLifetime(x) {} }
        #expect(x.w.mesh.run(until: { x.hat.txStarted == 1 }, limit: 10_000))
        let t0 = x.w.mesh.now
        #expect(x.w.mesh.run(until: { x.chip.recoveries[.txTimeout] == 1 }, limit: 20_000))
        #expect(x.w.mesh.now - t0 <= UInt64(LoRa.airtimeMs(bytes: 255, params: x.chip.params)) * 3 / 2 + SX1262.txMarginMs)
        #expect(!x.chip.transmitting && x.hat.mode == .rx)
        #expect(try messageGoesThrough(x))
        #expect(x.chip.recoveries.troubles == 1 && x.log.lines.count == 1 && x.log.lines.first?.1.contains("no TxDone") == true && x.log.dead.isEmpty)
    }

    /// A transmit that never ends: the chip's own SetTx timeout raises Timeout; the failure is
    /// counted and the next packets go.
    @Test func aHungTransmitEndsWithTheChipsTimeout() throws {
        let x = try world { $0.faults.txHangs = [1] }
        defer { withExtendedLifetime(x) {} }
        #expect(x.w.mesh.run(until: { x.chip.recoveries[.txFailure] == 1 }, limit: 20_000))
        #expect(try messageGoesThrough(x))
        #expect(x.chip.recoveries[.txTimeout] == 0 && x.log.lines.map(\.0) == [.txFailure])
    }

    /// An RxDone whose edge never reached the host: DIO1 high, no edge to come. The health check
    /// (every 30 s) finds it and the packet goes to the node.
    @Test func aLostRxDoneEdgeIsFoundByTheHealthCheck() throws {
        let x = try world { $0.faults.dropRxDoneEdge = [1] }
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10_000)
        #expect(x.a.call(CommandFrame.sendSelfAdvert(flood: false)) == [0x00])
        #expect(x.w.mesh.run(until: { x.hat.rxReceived == 1 }, limit: 10_000))
        let high = try x.hat.dio1()
        #expect(x.air.heardCount == 0 && high)
        #expect(x.w.mesh.run(until: { x.air.heardCount == 1 }, limit: SX1262.healthIntervalMs))
        let after = try x.hat.dio1()
        #expect(!after && x.chip.recoveries[.rxRecovery] == 1 && x.log.lines.first?.1.contains("health check") == true)
    }

    /// A packet that arrives between the host's GetIrqStatus and its ClearIrqStatus: clearing
    /// only what was read leaves its RxDone set, DIO1 high and no edge to come. DIO1 is looked at
    /// again after the clear, and the packet is handled.
    @Test func anInterruptBetweenReadAndClearIsNotLost() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10_000)
        let heard = x.air.heardCount
        x.chip.send([0x11, 0x00, 0x09])  // its TxDone is the interrupt being read
        x.w.mesh.run(for: 10)
        #expect(x.hat.mode == .tx)
        x.hat.receiveDuringNextIrqRead([0x3E, 0x00, 0x01, 0x02, 0x03], snr: 5, rssi: -80)
        x.w.mesh.run(for: 2_000)
        let high = try x.hat.dio1()
        #expect(x.air.heardCount == heard + 1 && !high && x.hat.mode == .rx)
        #expect(x.chip.recoveries[.rxRecovery] == 1 && x.log.lines.first?.1.contains("between the read and the clear") == true)
    }

    /// A brown-out: the chip comes back in standby with its registers at their defaults. The
    /// health check sees it (not receiving, TX clamp gone), resets and sets it up again.
    @Test func aChipThatLostItsSettingsIsSetUpAgain() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10_000)
        x.hat.brownOut()
        #expect(x.hat.mode == .standby && x.hat.register(SX1262.txClampRegister) == 0x08)
        #expect(x.w.mesh.run(until: { x.chip.recoveries[.chipReset] == 1 }, limit: SX1262.healthIntervalMs))
        #expect(x.hat.mode == .rx && x.hat.register(SX1262.txClampRegister) == 0x1E && x.hat.register(SX1262.rxGainRegister) == 0x96)
        #expect(try messageGoesThrough(x))
        #expect(x.log.dead.isEmpty && x.log.lines.map(\.0) == [.chipReset])
    }

    /// A chip that stops answering (MISO floats) while the node runs: the health check resets it,
    /// it does not come back, and the node is told so in one sentence within one interval.
    @Test func aChipGoneMidRunStopsTheNodeWithOneSentence() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 1_000)
        let t0 = x.w.mesh.now
        x.hat.faults.miso = 0xFF
        #expect(x.w.mesh.run(until: { !x.log.dead.isEmpty }, limit: SX1262.healthIntervalMs))
        let dead = try #require(x.log.dead.first)
        #expect(dead.0 - t0 <= SX1262.healthIntervalMs)
        #expect(x.log.dead.count == 1 && dead.1.hasPrefix("the SX1262 did not come back from a reset: no SX1262 answers"))
    }

    /// BUSY stuck high while the node runs: the next command times out (200 ms), the chip is
    /// reset, BUSY stays up, the node is told.
    @Test func aBusyLineStuckMidRunStopsTheNodeWithOneSentence() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10_000)
        x.hat.faults.busyStuck = true
        x.chip.send([0x11, 0x00, 0x05])
        #expect(x.log.dead.count == 1 && x.log.dead.first?.1.contains("stayed busy") == true)
        #expect(x.chip.recoveries[.chipReset] == 1)
    }
}
