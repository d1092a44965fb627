import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// MeshNode's KISS host against the simulator's KISS modem misbehaving as modems in the field do
/// (`KISSModemFaults`), a repeater on it, in virtual time: each fault is recovered from, or
/// reported as the modem gone, within a stated bound. The modem's answers reach the host 2 ms
/// after they leave it, as over a serial port.
@Suite struct KISSFaultTests {
    struct World {
        let w: SimWorld
        let modem: KISSModemNode
        let host: KISSHost
        let air: RadioAir
        let r: RepeaterNode
        let a: FrameApp, b: FrameApp
        var log: Log
    }

    final class Log {
        var lines: [(RadioRecovery, String)] = []
        var dead: [(UInt64, String)] = []
    }

    func world(_ faults: (inout KISSModemFaults) -> Void = { _ in }) throws -> World {
        let m = try BridgedMesh(role: "kiss", snr: (8, 6), seed: 41, airSeed: 9)
        let modem = m.w.modems[0], w = m.w
        faults(&modem.faults)
        let r = m.repeater(name: "linux", seed: 5, password: "pw")
        let host = KISSHost(air: m.air)
        host.write = { modem.receive($0) }
        modem.onWrite = { bytes in w.mesh.scheduler.after(2) { host.receive(bytes) } }
        m.air.send = { host.send($0) }
        let log = Log()
        host.onRecovery = { log.lines.append(($0, $1)) }
        host.onDead = { log.dead.append((w.mesh.now, $0)) }
        host.start(params: r.radio.params)
        return World(w: w, modem: modem, host: host, air: m.air, r: r, a: m.a, b: m.b, log: log)
    }

    /// Two companions that hear each other only through the repeater on the modem exchange an
    /// acknowledged message: the modem transmits again.
    func messageGoesThrough(_ x: World) throws -> Bool {
        exchangeAdverts(x.w, [x.a])
        exchangeAdverts(x.w, [x.b])
        x.a.frames.removeAll()
        #expect(x.a.call(try CommandFrame.sendTextMessage(to: x.w.companions[1].publicKey, text: "again", timestamp: x.w.mesh.epochNow))?.first == 0x06)
        return x.w.mesh.run(until: { x.a.count(0x82) > 0 }, limit: 60_000)
    }

    /// The modem is given the node's timing at start: no 500 ms TXDELAY, no persistence lottery;
    /// a packet's TxDone comes its airtime after it was handed over.
    @Test func theModemAddsNoDelayOfItsOwn() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10)
        #expect(x.modem.txDelay == 0 && x.modem.persistence == 255 && x.modem.slotTime == 12)
        x.w.mesh.run(for: 12_000)  // the boot advert has gone
        let done = x.host.txDone, t0 = x.w.mesh.now
        x.host.send([0x11, 0x00, 0x01, 0x02])
        #expect(x.w.mesh.run(until: { x.host.txDone > done }, limit: 5_000))
        #expect(x.w.mesh.now - t0 == UInt64(x.r.radio.airtime(4)) + 2)  // airtime, and the 2 ms back over the link
    }

    /// One lost TxDone does not mute the repeater: the packet is given up `txTimeoutMs` after it
    /// went to the modem (counted and logged once), the modem answers GetRadio, and the next
    /// packets go.
    @Test func aLostTxDoneGivesThePacketUpAndTheNextOnesGo() throws {
        let x = try world { $0.dropTxDone = [1] }
        defer { withExtendedLifetime(x) {} }
        #expect(x.w.mesh.run(until: { x.modem.txStarted == 1 }, limit: 10_000))  // the boot advert
        let t0 = x.w.mesh.now
        #expect(x.w.mesh.run(until: { x.host.recoveries[.txTimeout] == 1 }, limit: 20_000))
        let bound = x.host.txTimeoutMs(bytes: 255)
        #expect(x.w.mesh.now - t0 <= bound, "given up after \(x.w.mesh.now - t0) ms, bound \(bound)")
        #expect(try messageGoesThrough(x))
        #expect(x.host.recoveries[.txTimeout] == 1 && x.host.recoveries.troubles == 1 && x.modem.boots == 0)
        #expect(x.log.lines.count == 1 && x.log.lines.first?.0 == .txTimeout && x.log.lines.first?.1.contains("no TxDone") == true)
        #expect(x.log.dead.isEmpty)
    }

    /// A modem that resets while it sends: no TxDone, and it comes back without its settings
    /// (GetRadio answers zeros). The host finds out at the TxDone deadline, sets it up again
    /// (KISS timing, radio, TX power, signal reports) and goes on.
    @Test func aModemResetMidTransmitIsSetUpAgain() throws {
        let x = try world { $0.resetInTx = [1] }
        defer { withExtendedLifetime(x) {} }
        #expect(x.w.mesh.run(until: { x.modem.boots == 1 }, limit: 10_000))
        #expect(x.modem.txDelay == 50)  // the firmware's default again
        let t0 = x.w.mesh.now
        #expect(x.w.mesh.run(until: { x.host.recoveries[.modemReset] == 1 }, limit: 30_000))
        #expect(x.w.mesh.now - t0 <= x.host.txTimeoutMs(bytes: 255) + KISSHost.probeTimeoutMs)
        x.w.mesh.run(for: 10)
        #expect(x.modem.txDelay == 0 && x.modem.persistence == 255)
        var radio: [UInt8] = []
        x.host.request(.getRadio) { _, d in radio = d }
        x.w.mesh.run(for: 10)
        #expect(KISSModem.radioParams(radio)?.freqKHz == x.r.radio.params.freqKHz)
        #expect(try messageGoesThrough(x))
        #expect(x.host.recoveries[.txTimeout] == 1 && x.host.recoveries[.modemReset] == 1 && x.log.dead.isEmpty)
        #expect(x.log.lines.map(\.0) == [.txTimeout, .modemReset])
    }

    /// A modem that stops answering altogether: the node is told it is gone (one sentence) within
    /// the TxDone deadline and three GetRadio tries, 2 s apart.
    @Test func aHungModemIsReportedGoneWithinItsBound() throws {
        let x = try world { $0.hangAfterTx = 1 }
        defer { withExtendedLifetime(x) {} }
        #expect(x.w.mesh.run(until: { x.modem.txStarted == 1 }, limit: 10_000))
        let t0 = x.w.mesh.now
        #expect(x.w.mesh.run(until: { !x.log.dead.isEmpty }, limit: 60_000))
        let bound = x.host.txTimeoutMs(bytes: 255) + UInt64(KISSHost.probeAttempts) * KISSHost.probeTimeoutMs
        let dead = try #require(x.log.dead.first)
        #expect(dead.0 - t0 <= bound)
        #expect(x.log.dead.count == 1 && dead.1.hasPrefix("the KISS modem stopped answering") && dead.1.contains("check its power"))
    }

    /// A received packet whose RxMeta is lost goes to the node 250 ms later without SNR, not when
    /// the next packet happens to come.
    @Test func aLostRxMetaDoesNotHoldThePacket() throws {
        let x = try world { $0.dropRxMeta = [1] }
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 12_000)
        #expect(x.a.call(CommandFrame.sendSelfAdvert(flood: false)) == [0x00])
        #expect(x.w.mesh.run(until: { x.modem.rxHeard == 1 }, limit: 10_000))
        let t0 = x.w.mesh.now
        #expect(x.air.heardCount == 0)
        #expect(x.w.mesh.run(until: { x.air.heardCount == 1 }, limit: 1_000))
        #expect(x.w.mesh.now - t0 <= KISSHost.rxMetaWaitMs + 2)
        #expect(x.host.recoveries[.rxRecovery] == 1 && x.log.lines.first?.1.contains("RxMeta") == true)
    }

    /// Answers that never come do not hold the request list's places for ever.
    @Test func unansweredRequestsAreGivenUp() throws {
        let x = try world()
        defer { withExtendedLifetime(x) {} }
        x.w.mesh.run(for: 10)
        x.modem.faults.silent = true
        var refused = 0
        for _ in 0..<KISSHost.maxAwaiting { x.host.request(.ping) { code, _ in if code == KISSModem.error { refused += 1 } } }
        var code: UInt8? = nil
        x.host.request(.ping) { c, _ in code = c }
        #expect(code == KISSModem.error)  // full: refused at once
        x.modem.faults.silent = false
        x.w.mesh.run(for: KISSHost.requestLifetimeMs + 1)
        code = nil
        x.host.request(.ping) { c, _ in code = c }
        x.w.mesh.run(for: 10)
        #expect(code == KISSModem.response(.ping) && refused == KISSHost.maxAwaiting)
    }

    /// What answers on a port given as a KISS modem: the modem (its GetVersion answer, or any
    /// other SetHardware answer), companion firmware (its answer to DEVICE_QUERY), other bytes,
    /// or nothing, each within 6 s.
    @Test func identifyingWhatAnswersOnThePort() throws {
        // Silent: GetVersion at 0, 1, 2, 3, 4 s, the companion query at 5 s, the verdict at 6 s.
        var id = KISSIdentify(now: 100)
        var writes: [(UInt64, [UInt8])] = []
        var t: UInt64 = 100
        while let wake = { () -> UInt64? in let (o, w) = id.poll(now: t); if let o { writes.append((t, o)) }; return w }() { t = wake }
        #expect(id.verdict == .silent && t == 100 + KISSIdentify.boundMs)
        #expect(writes.map(\.0) == [100, 1100, 2100, 3100, 4100, 5100])
        #expect(writes.first?.1 == [0xC0, 0x06, 0x11, 0xC0] && writes.last?.1 == [0x3C, 0x02, 0x00, 0x16, 0x03])
        // A modem: the simulator's answers GetVersion.
        let m = try BridgedMesh(role: "kiss", snr: (8, 6), seed: 41, airSeed: 9)
        id = KISSIdentify(now: 0)
        m.w.modems[0].onWrite = { id.feed($0) }
        if let out = id.poll(now: 0).write { m.w.modems[0].receive(out) }
        #expect(id.verdict == .modem(version: KISSModemNode.firmwareVersion))
        // An older modem without GetVersion still answers in KISS (Error, UnknownCmd).
        id = KISSIdentify(now: 0)
        id.feed([0xC0, 0x06, 0xF1, 0x05, 0xC0])
        #expect(id.verdict == .modem(version: 0))
        // Companion firmware: a '>' frame.
        id = KISSIdentify(now: 0)
        id.feed([0x3E, 0x03, 0x00, 0x0D, 0x0A, 0x00])
        #expect(id.verdict == .companion)
        // Something else: a console's text.
        id = KISSIdentify(now: 0)
        id.feed(Array("ets Jun  8 2016 00:22:57\r\n".utf8))
        #expect(id.verdict == nil)
        _ = id.poll(now: KISSIdentify.boundMs)
        #expect(id.verdict == .other(bytes: 26))
        #expect(KISSIdentify.refusal(.companion, port: "/dev/ttyUSB0")!.contains("companion firmware"))
        #expect(KISSIdentify.refusal(.silent, port: "/dev/ttyUSB0")!.hasPrefix("nothing answered on /dev/ttyUSB0 in 6 s"))
        #expect(KISSIdentify.refusal(.modem(version: 1), port: "x") == nil)
    }
}
