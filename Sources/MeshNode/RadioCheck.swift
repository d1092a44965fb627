import MeshAir
import MeshCompanion

/// One line of `pocketmesh node check`: a check, whether it passed, and what was found or what to check.
public struct RadioCheckStep: Equatable, Sendable {
    public enum Result: String, Sendable { case ok, fail, skip }
    public var name: String
    public var result: Result
    public var detail: String

    public init(_ name: String, _ result: Result, _ detail: String) {
        self.name = name; self.result = result; self.detail = detail
    }

    public var line: String {
        let mark = result == .ok ? "ok  " : result == .fail ? "FAIL" : "skip"
        return mark + "  " + name + String(repeating: " ", count: max(1, 11 - name.count)) + detail
    }
}

/// `pocketmesh node check`'s checks, without I/O: the shell, or a test on the simulator's chip and
/// modem models, gives the driver, its clock and a way to wait on it. At most one packet goes on
/// the air (`testPacket`).
public enum RadioCheck {
    /// Runs the caller's clock (and its I/O) until `done` holds or `ms` pass; whether it held.
    /// With `interrupts` false, DIO1's edges are left alone (the IRQ line check looks at the level).
    public typealias Wait = (_ ms: UInt64, _ interrupts: Bool, _ done: () -> Bool) -> Bool

    /// A zero-hop raw packet (type 0x0F, direct, no path) that no MeshCore node forwards or answers: 23 bytes.
    public static let testPacket: [UInt8] = [PayloadType.rawCustom.rawValue << 2 | RouteType.direct.rawValue, 0x00] + Array("pocketmesh node check".utf8)

    /// Whether every check passed.
    public static func passed(_ steps: [RadioCheckStep]) -> Bool { !steps.contains { $0.result != .ok } }

    static func describe(_ p: RadioParams) -> String {
        "\(Double(p.freqKHz) / 1000) MHz, BW \(Double(p.bwHz) / 1000) kHz, SF\(p.sf), CR 4/\(p.cr), \(p.txPowerDbm) dBm"
    }

    static func skipped(_ names: [String], after: String) -> [RadioCheckStep] {
        names.map { RadioCheckStep($0, .skip, "not checked: \(after) failed") }
    }

    // MARK: SX1262

    /// The SX1262 checks: the chip (GetStatus, BUSY), its version register, the oscillator, a
    /// register read back, the radio parameters, DIO1 (an RX timeout raises it, the clear drops
    /// it), and a TxDone within its deadline.
    public static func sx1262(_ chip: SX1262, board: SX1262Board, transmit: Bool, now: () -> UInt64, wait: Wait) -> [RadioCheckStep] {
        let later = ["version", "oscillator", "registers", "radio", "irq", "tx"]
        do { try chip.begin() } catch let e as SX1262Error {
            let name: String
            switch e {
            case .busyTimeout, .noChip, .badStatus: name = "chip"
            case .notSX126x: name = "version"
            case .calibration: name = "oscillator"
            case .readBack, .settingsLost: name = "registers"
            }
            let all = ["chip"] + later, at = all.firstIndex(of: name)!
            return all[..<at].map { RadioCheckStep($0, .ok, "passed") } + [RadioCheckStep(name, .fail, e.description)]
                + skipped(Array(all[(at + 1)...]), after: name)
        } catch {
            return [RadioCheckStep("chip", .ok, "answers"), RadioCheckStep("radio", .fail, "\(error)")]
        }
        var steps = [RadioCheckStep("chip", .ok, "answers GetStatus in standby after a reset; BUSY falls")]
        steps.append(RadioCheckStep("version", .ok, "\"\(chip.version)\""))
        var osc = chip.tcxoVolts.map { "a TCXO at \($0) V on DIO3" } ?? "a crystal"
        if chip.calibrationWarnings != 0 { osc += "; calibration left: " + SX1262.deviceErrorNames(chip.calibrationWarnings) }
        steps.append(RadioCheckStep("oscillator", .ok, osc + " (calibrated)"))
        steps.append(RadioCheckStep("registers", .ok, "the sync word written and read back; TX clamp and RX gain set"))
        let band = SX1262.imageCalibration(freqKHz: chip.params.freqKHz).map { String(Int($0) * 4) }.joined(separator: "-")
        steps.append(RadioCheckStep("radio", .ok, describe(chip.params) + "; image calibrated for \(band) MHz"
            + (chip.rxBoostedGain ? "; boosted RX gain" : "")))

        // DIO1: low now, high on an interrupt, low again once it is cleared.
        do {
            if try board.dio1() {
                steps.append(RadioCheckStep("irq", .fail, "DIO1 is high before any interrupt; check the IRQ line (--irq) and that nothing else drives it"))
            } else {
                try chip.startRxTimeout(ms: 20)
                if !wait(500, false, { (try? board.dio1()) == true }) {
                    steps.append(RadioCheckStep("irq", .fail, "DIO1 did not rise within 500 ms of an interrupt (an RX timeout); check the IRQ line (--irq) and the chip's DIO1"))
                } else {
                    try chip.clearInterrupts()
                    if try board.dio1() {
                        steps.append(RadioCheckStep("irq", .fail, "DIO1 stayed high after the interrupt was cleared; check the IRQ line (--irq)"))
                    } else {
                        steps.append(RadioCheckStep("irq", .ok, "DIO1 rises on an interrupt and falls when it is cleared"))
                    }
                }
                try chip.listen()
            }
        } catch {
            steps.append(RadioCheckStep("irq", .fail, "\(error)"))
        }

        guard transmit else { return steps + [RadioCheckStep("tx", .ok, "nothing sent (--no-transmit)")] }
        let before = chip.recoveries
        var done = false
        chip.onTxDone = { done = true }
        let deadline = SX1262.lbtMaxMs + UInt64(LoRa.airtimeMs(bytes: testPacket.count, params: chip.params)) * 3 / 2 + SX1262.txMarginMs
        let start = now()
        chip.send(testPacket)
        _ = wait(deadline + 500, true, { done })
        let took = now() &- start, after = chip.recoveries
        if done && after[.txTimeout] == before[.txTimeout] && after[.txFailure] == before[.txFailure] && after[.chipReset] == before[.chipReset] {
            steps.append(RadioCheckStep("tx", .ok, "a \(testPacket.count)-byte packet went out: TxDone after \(took) ms (deadline \(deadline) ms)"))
        } else if after[.txFailure] > before[.txFailure] {
            steps.append(RadioCheckStep("tx", .fail, "the chip's own TX timeout came before TxDone; check the RF switch (--rxen, --txen, --dio2-rf-switch, --hold-high) and the PA's supply"))
        } else if after[.chipReset] > before[.chipReset] {
            steps.append(RadioCheckStep("tx", .fail, "the chip stopped answering while sending and had to be reset; check its supply (a 1 W module needs 5 V and more current) and the reset line"))
        } else {
            steps.append(RadioCheckStep("tx", .fail, "no TxDone within \(deadline) ms; check the RF switch (--rxen, --txen, --dio2-rf-switch, --hold-high), the IRQ line and the HAT's supply"))
        }
        return steps
    }

    // MARK: KISS modem

    /// The KISS modem checks: what answers on the port (`verdict`, from `KISSIdentify`), its
    /// identity, the radio parameters set and read back, and a TxDone within its deadline.
    public static func kiss(_ host: KISSHost, verdict: KISSIdentify.Verdict, port: String, params: RadioParams, transmit: Bool,
                            now: () -> UInt64, wait: Wait) -> [RadioCheckStep] {
        guard case .modem(let version) = verdict else {
            return [RadioCheckStep("modem", .fail, KISSIdentify.refusal(verdict, port: port)!)] + skipped(["identity", "radio", "irq", "tx"], after: "modem")
        }
        var steps = [RadioCheckStep("modem", .ok, "MeshCore's KISS modem firmware" + (version > 0 ? " v\(version)" : "") + " answers on \(port)")]
        var key: PublicKey?? = nil
        host.identity { key = .some($0) }
        if !wait(2_000, true, { key != nil }) {
            steps.append(RadioCheckStep("identity", .fail, "no answer to GetIdentity within 2 s; check the modem's firmware version"))
        } else if let k = key ?? nil {
            steps.append(RadioCheckStep("identity", .ok, "public key " + k.hex))
        } else {
            steps.append(RadioCheckStep("identity", .ok, "the modem keeps no key of its own (use --identity host)"))
        }
        host.start(params: params)
        var read: RadioParams?? = nil
        host.request(.getRadio) { code, data in
            read = .some(code == KISSModem.response(.getRadio) ? KISSModem.radioParams(data, txPowerDbm: params.txPowerDbm) : nil)
        }
        let timing = "; KISS timing TXDELAY \(Int(KISSHost.txDelay) * 10) ms, persistence \(KISSHost.persistence), slot \(Int(KISSHost.slotTime) * 10) ms"
        if !wait(2_000, true, { read != nil }) {
            steps.append(RadioCheckStep("radio", .fail, "no answer to GetRadio within 2 s after SetRadio; check the modem's firmware"))
        } else if let got = read ?? nil, got.freqKHz == params.freqKHz, got.bwHz == params.bwHz, got.sf == params.sf, got.cr == params.cr {
            steps.append(RadioCheckStep("radio", .ok, describe(params) + ": set and read back" + timing))
        } else {
            let got = (read ?? nil).map(describe) ?? "nothing"
            steps.append(RadioCheckStep("radio", .fail, "the modem read back \(got) after \(describe(params)) was set; check that its radio takes these settings"))
        }
        steps.append(RadioCheckStep("irq", .ok, "the modem handles its radio's interrupts"))
        guard transmit else { return steps + [RadioCheckStep("tx", .ok, "nothing sent (--no-transmit)")] }
        let before = host.recoveries, sent = host.txDone
        let deadline = host.txTimeoutMs(bytes: testPacket.count)
        let start = now()
        host.send(testPacket)
        _ = wait(deadline + 500, true, { host.txDone > sent || host.recoveries != before })
        let took = now() &- start
        if host.txDone > sent {
            steps.append(RadioCheckStep("tx", .ok, "a \(testPacket.count)-byte packet went out: TxDone after \(took) ms (deadline \(deadline) ms)"))
        } else if host.recoveries[.txFailure] > before[.txFailure] {
            steps.append(RadioCheckStep("tx", .fail, "the modem reports that the packet was not sent (TxDone 0); check its antenna and its radio settings"))
        } else {
            steps.append(RadioCheckStep("tx", .fail, "no TxDone within \(deadline) ms; check the modem's firmware (TxDone came with v1) and its power"))
        }
        return steps
    }
}
