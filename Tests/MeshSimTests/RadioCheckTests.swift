import Glibc
import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// `pocketmesh node check` (MeshNode's `RadioCheck`) against the simulator's SX1262 model and KISS
/// modem, healthy and with their faults, in virtual time: every check passes on a good radio with
/// one packet on the air, and each fault fails the check it belongs to, saying what to check.
@Suite struct RadioCheckTests {
    /// An SX1262 model on the mesh and a driver for it (not started: the check starts it).
    func sx1262(_ setUp: (SX1262Model) -> Void = { _ in }) throws -> (SimWorld, SX1262Model, SX1262, RadioCheck.Wait) {
        let m = try BridgedMesh(role: nil, snr: (9, 7), seed: 35, airSeed: 3) { SX1262Model(mesh: $0, name: "hat") }
        let hat = m.middle as! SX1262Model, w = m.w
        setUp(hat)
        let chip = SX1262(board: hat, params: RadioParams(), scheduler: w.mesh.scheduler)
        let wait: RadioCheck.Wait = { ms, interrupts, done in
            hat.onDIO1 = interrupts ? { chip.irq() } : nil
            return w.mesh.run(until: done, limit: ms)
        }
        return (w, hat, chip, wait)
    }

    @Test func aGoodSX1262PassesEveryCheckWithOnePacketOnTheAir() throws {
        let (w, hat, chip, wait) = try sx1262()
        let steps = RadioCheck.sx1262(chip, board: hat, transmit: true, now: { w.mesh.now }, wait: wait)
        #expect(steps.map(\.name) == ["chip", "version", "oscillator", "registers", "radio", "irq", "tx"])
        #expect(RadioCheck.passed(steps), "\(steps.map(\.line))")
        #expect(hat.radio.nSent == 1 && hat.mode == .rx)
        #expect(steps[1].detail == "\"SX1261 V2D 2D02\"")
        #expect(steps[4].detail.hasPrefix("869.618 MHz, BW 62.5 kHz, SF8, CR 4/5, 20 dBm; image calibrated for 860-876 MHz"))
        #expect(steps[6].line.hasPrefix("ok    tx         a 23-byte packet went out: TxDone after"))
        // --no-transmit: nothing on the air.
        let (w2, hat2, chip2, wait2) = try sx1262()
        let quiet = RadioCheck.sx1262(chip2, board: hat2, transmit: false, now: { w2.mesh.now }, wait: wait2)
        #expect(RadioCheck.passed(quiet) && hat2.radio.nSent == 0 && quiet.last?.detail == "nothing sent (--no-transmit)")
    }

    @Test func eachSX1262FaultFailsItsCheck() throws {
        func run(_ setUp: (SX1262Model) -> Void, board: ((SX1262Model) -> SX1262Board)? = nil) throws -> [RadioCheckStep] {
            let (w, hat, _, wait) = try sx1262(setUp)
            let b = board?(hat) ?? hat
            let chip = SX1262(board: b, params: RadioParams(), scheduler: w.mesh.scheduler)
            let w2: RadioCheck.Wait = { ms, i, done in hat.onDIO1 = i ? { chip.irq() } : nil; return wait(ms, false, done) }
            return RadioCheck.sx1262(chip, board: b, transmit: true, now: { w.mesh.now }, wait: w2)
        }
        let none = try run { $0.faults.miso = 0x00 }
        #expect(none.first?.result == .fail && none.first?.detail.contains("MISO stays low") == true)
        #expect(none.dropFirst().allSatisfy { $0.result == .skip } && none.count == 7)
        let busy = try run { $0.faults.busyStuck = true }
        #expect(busy.first?.line.hasPrefix("FAIL  chip       the SX1262 stayed busy") == true)
        let lost = try run { $0.faults.dropTxDone = [1] }
        #expect(lost.last?.result == .fail && lost.last?.detail.hasPrefix("no TxDone within") == true)
        #expect(lost.dropLast().allSatisfy { $0.result == .ok })
        let hung = try run { $0.faults.txHangs = [1] }
        #expect(hung.last?.detail.contains("the chip's own TX timeout came before TxDone") == true)
        let crystal = try run { $0.hasTCXO = false }  // passes: the other oscillator works, and says so
        #expect(RadioCheck.passed(crystal) && crystal[2].detail.hasPrefix("a crystal"))
        let deaf = try run({ _ in }, board: { DeadDIO1(chip: $0) })
        #expect(deaf.first { $0.name == "irq" }?.detail.hasPrefix("DIO1 did not rise within 500 ms") == true)
    }

    /// A board whose DIO1 never reaches the host (the wrong --irq line).
    final class DeadDIO1: SX1262Board {
        let chip: SX1262Model
        init(chip: SX1262Model) { self.chip = chip }
        func spi(_ tx: [UInt8]) throws -> [UInt8] { try chip.spi(tx) }
        func busy() throws -> Bool { try chip.busy() }
        func reset(_ high: Bool) throws { try chip.reset(high) }
        func rfSwitch(rx: Bool, tx: Bool) throws { try chip.rfSwitch(rx: rx, tx: tx) }
        func dio1() throws -> Bool { false }
        func pause(microseconds: UInt32) {}
    }

    /// A KISS modem on the mesh, what answers on its "port", and a host for it.
    func kiss(_ faults: (inout KISSModemFaults) -> Void = { _ in }) throws -> (SimWorld, KISSModemNode, KISSHost, KISSIdentify.Verdict, RadioCheck.Wait) {
        let m = try BridgedMesh(role: "kiss", snr: (8, 6), seed: 43, airSeed: 2)
        let modem = m.w.modems[0], w = m.w
        faults(&modem.faults)
        var id = KISSIdentify(now: w.mesh.now)
        modem.onWrite = { bytes in w.mesh.scheduler.after(2) { id.feed(bytes) } }
        while true {
            let (out, wake) = id.poll(now: w.mesh.now)
            if let out { modem.receive(out) }
            guard let wake else { break }
            w.mesh.run(until: { id.verdict != nil }, limit: wake - w.mesh.now)
        }
        let air = RadioAir(seed: 5, scheduler: w.mesh.scheduler, epochBase: w.mesh.epochBase)
        let host = KISSHost(air: air)
        host.write = { modem.receive($0) }
        modem.onWrite = { bytes in w.mesh.scheduler.after(2) { host.receive(bytes) } }
        return (w, modem, host, id.verdict!, { ms, _, done in w.mesh.run(until: done, limit: ms) })
    }

    @Test func aGoodKISSModemPassesEveryCheckWithOnePacketOnTheAir() throws {
        let (w, modem, host, verdict, wait) = try kiss()
        let steps = RadioCheck.kiss(host, verdict: verdict, port: "/dev/ttyUSB0", params: RadioParams(), transmit: true, now: { w.mesh.now }, wait: wait)
        #expect(steps.map(\.name) == ["modem", "identity", "radio", "irq", "tx"])
        #expect(RadioCheck.passed(steps), "\(steps.map(\.line))")
        #expect(modem.txStarted == 1 && modem.txDelay == 0)
        #expect(steps[0].detail == "MeshCore's KISS modem firmware v2 answers on /dev/ttyUSB0")
        #expect(steps[1].detail == "public key " + modem.identity.publicKey.hex)
        #expect(steps[2].detail.hasPrefix("869.618 MHz, BW 62.5 kHz, SF8, CR 4/5, 20 dBm: set and read back; KISS timing TXDELAY 0 ms"))
    }

    @Test func eachKISSFaultFailsItsCheck() throws {
        let (w, _, host, verdict, wait) = try kiss { $0.silent = true }
        #expect(verdict == .silent)
        let silent = RadioCheck.kiss(host, verdict: verdict, port: "/dev/ttyACM0", params: RadioParams(), transmit: true, now: { w.mesh.now }, wait: wait)
        #expect(silent.first?.line.hasPrefix("FAIL  modem      nothing answered on /dev/ttyACM0 in 6 s") == true && silent.count == 5)
        #expect(silent.dropFirst().allSatisfy { $0.result == .skip })
        let (w2, modem2, host2, verdict2, wait2) = try kiss { $0.dropTxDone = [1] }
        let lost = RadioCheck.kiss(host2, verdict: verdict2, port: "p", params: RadioParams(), transmit: true, now: { w2.mesh.now }, wait: wait2)
        #expect(lost.last?.result == .fail && lost.last?.detail.hasPrefix("no TxDone within") == true && modem2.txStarted == 1)
        #expect(RadioCheck.kiss(host2, verdict: .companion, port: "p", params: RadioParams(), transmit: false, now: { 0 }, wait: wait2)
            .first?.detail.contains("companion firmware") == true)
    }
}

/// The simulator's KISS modem faults in a topology file, and `stats-recovery` on the admin CLI.
@Suite struct RadioFaultSettingsTests {
    @Test func kissFaultsInATopologyFile() throws {
        let json = #"{"nodes":[{"name":"m","role":"kiss","faults":{"drop_tx_done":[1,3],"reset_in_tx":[2],"drop_rx_meta":[1],"hang_after_tx":5,"silent":false}}],"links":[]}"#
        let t = try Topology.decode(json: Array(json.utf8))
        var f = KISSModemFaults()
        f.dropTxDone = [1, 3]; f.resetInTx = [2]; f.dropRxMeta = [1]; f.hangAfterTx = 5
        #expect(t.nodes[0].kissFaults == f)
        #expect(try Topology(json: t.json) == t)
        let w = try SimWorld(topology: t, options: SimWorld.Options())
        #expect(w.modems[0].faults == f)
        for (bad, says) in [(#"{"drop_tx_done":[0]}"#, "nodes[0].faults.drop_tx_done[0] must be a packet number from 1"),
                            (#"{"hang_after_tx":-1}"#, "nodes[0].faults.hang_after_tx must be a whole number from 0")] {
            let j = #"{"nodes":[{"name":"m","role":"kiss","faults":"# + bad + #"}],"links":[]}"#
            #expect { try Topology.decode(json: Array(j.utf8)) } throws: { "\($0)".contains(says) }
        }
        let c = #"{"nodes":[{"name":"c","role":"companion","faults":{"silent":true}}],"links":[]}"#
        #expect { try Topology.decode(json: Array(c.utf8)) } throws: { "\($0)".contains("faults is for a \"kiss\" node") }
    }

    @Test func statsRecoveryOnTheSerialConsole() throws {
        let w = try SimWorld(topology: .builtIn(.line, companions: 1, repeaters: 1, rooms: 0), options: SimWorld.Options())
        let r = w.repeaters[0]
        #expect(r.command("stats-recovery", senderTimestamp: 0) == #"{"tx_timeouts":0,"tx_failures":0,"rx_recoveries":0,"modem_resets":0,"chip_resets":0,"lbt_deferrals":0}"#)
        var counts = RadioRecoveries()
        counts[.txTimeout] = 2; counts[.modemReset] = 1; counts[.lbtDeferral] = 7
        r.radio.driverRecoveries = { counts }
        #expect(r.command("stats-recovery", senderTimestamp: 0) == #"{"tx_timeouts":2,"tx_failures":0,"rx_recoveries":0,"modem_resets":1,"chip_resets":0,"lbt_deferrals":7}"#)
        #expect(r.command("stats-recovery", senderTimestamp: 1) == "Unknown command")  // the serial console's, as stats-*
        #expect(counts.troubles == 3 && counts.summary.hasPrefix("tx_timeouts=2 tx_failures=0"))
        // A companion node's own CLI (`pocketmesh node cli` on --role companion) answers it too.
        let c = w.companions[0]
        c.radio.driverRecoveries = { counts }
        #expect(c.cliCommand("stats-recovery") == r.command("stats-recovery", senderTimestamp: 0))
    }
}

/// docs/unattended.md's HAT table is `--hat`'s presets, row for row.
@Suite struct HatTableTests {
    @Test func theDocsTableIsThePresets() throws {
        let path = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/") + "/docs/unattended.md"
        let f = try #require(fopen(path, "r"))
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&buf, 1, buf.count, f), n > 0 { bytes += buf[0..<n] }
        // The HAT table: its header row (`--hat`) and the rows that follow it, up to the first line
        // that is not a table row (the file has other tables).
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| `--hat` |") })
        let rows = lines[header...].prefix { $0.hasPrefix("|") }.filter { $0.hasPrefix("| `") }
            .map { $0.split(separator: "|").map { $0.trimmingSpaces } }
        func line(_ v: UInt32?) -> String { v.map { String($0) } ?? "-" }
        let expected: [[String]] = SX1262Hat.all.map { h in
            let ce = h.spidev.hasSuffix(".1") ? "CE1" : "CE0"
            return ["`\(h.name)`", h.title, String(h.spidev.dropFirst(5)), h.cs.map { String($0) } ?? ce, line(h.irq), line(h.busy), line(h.reset),
                    line(h.rxen), line(h.txen), h.holdHigh.isEmpty ? "-" : h.holdHigh.map { String($0) }.joined(separator: ", "),
                    h.dio2RfSwitch ? "yes" : "no", h.tcxoVolts.map { "\($0) V" } ?? "-"]
        }
        #expect(Array(rows.dropFirst()) == expected)  // under the header row
    }

    /// README's short HAT table (name, board, NSS, DIO1, BUSY, RESET) is the presets' too.
    @Test func theReadmeTableIsThePresets() throws {
        let path = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/") + "/README.md"
        let f = try #require(fopen(path, "r"))
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&buf, 1, buf.count, f), n > 0 { bytes += buf[0..<n] }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| `--hat` |") })
        let rows = lines[(header + 1)...].prefix { $0.hasPrefix("|") }.filter { $0.hasPrefix("| `") }
            .map { Array($0.split(separator: "|").map { $0.trimmingSpaces }.prefix(6)) }
        func line(_ v: UInt32?) -> String { v.map { String($0) } ?? "-" }
        let expected: [[String]] = SX1262Hat.all.map { h in
            let ce = h.spidev.hasSuffix(".1") ? "CE1" : "CE0"
            return ["`\(h.name)`", h.title, h.cs.map { String($0) } ?? ce, line(h.irq), line(h.busy), line(h.reset)]
        }
        #expect(rows == expected)
    }
}

extension Substring {
    var trimmingSpaces: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}
