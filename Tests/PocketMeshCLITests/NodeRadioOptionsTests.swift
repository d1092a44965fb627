import Glibc
import MeshLink
import MeshNode
import MeshOps
import Testing
@testable import pocketmesh

/// `pocketmesh node`'s SX1262 options (`--hat`, `--cs`, `--hold-high`, `--tcxo 0`) and the
/// systemd watchdog's rule (fed only while the radio shows that it works).
@Suite struct NodeRadioOptionsTests {
    @Test func theTablesHatNamesAreThePresets() {
        #expect(OperationTable.hatNames == SX1262Hat.all.map(\.name))
        for h in SX1262Hat.all {
            let lines = [h.irq, h.busy, h.reset] + [h.cs, h.rxen, h.txen].compactMap { $0 } + h.holdHigh
            #expect(Swift.Set(lines).count == lines.count, "\(h.name) gives a line twice")
            #expect(h.cs.map { ![7, 8].contains($0) } ?? true, "\(h.name): CE0/CE1 are the SPI device's own chip select")
            #expect(h.tcxoVolts.map { SX1262.tcxoCode($0) != nil } ?? true)
        }
    }

    @Test func aHatsPinsAndTheOptionsOverThem() throws {
        let w = try SX1262Pins.resolve(spidev: nil, hat: "waveshare", gpiochip: nil, irq: nil, reset: nil, busy: nil, cs: nil, rxen: nil,
                                       txen: nil, holdHigh: [], tcxo: nil, dio2RfSwitch: false)
        #expect(w.spidev == "/dev/spidev0.0")
        #expect(w.pins == SX1262Pins(chip: "", irq: 16, reset: 18, busy: 20, cs: 21, holdHigh: [6], tcxoVolts: nil, dio2RfSwitch: true))
        let m = try SX1262Pins.resolve(spidev: "/dev/spidev1.0", hat: "meshadv", gpiochip: "pinctrl-rp1", irq: 22, reset: nil, busy: nil, cs: nil,
                                       rxen: nil, txen: nil, holdHigh: [5], tcxo: 0, dio2RfSwitch: false)
        #expect(m.spidev == "/dev/spidev1.0" && m.pins.irq == 22 && m.pins.cs == 21 && m.pins.rxen == 12 && m.pins.txen == 13)
        #expect(m.pins.holdHigh == [5] && m.pins.tcxoVolts == nil && m.pins.chip == "pinctrl-rp1")
        // No hat: the pins given, NSS on a line of their own, a TCXO tried first.
        let p = try SX1262Pins.resolve(spidev: "/dev/spidev0.0", hat: nil, gpiochip: nil, irq: 16, reset: 18, busy: 20, cs: 21, rxen: nil,
                                       txen: nil, holdHigh: [6, 26], tcxo: nil, dio2RfSwitch: true)
        #expect(p.pins.cs == 21 && p.pins.holdHigh == [6, 26] && p.pins.tcxoVolts == 1.8)
        func refused(_ hat: String?, irq: Int? = nil, cs: Int? = nil, hold: [Int] = [], tcxo: Double? = nil, spidev: String? = "/dev/spidev0.0") -> String? {
            do {
                _ = try SX1262Pins.resolve(spidev: spidev, hat: hat, gpiochip: nil, irq: irq, reset: hat == nil ? 18 : nil, busy: hat == nil ? 20 : nil,
                                           cs: cs, rxen: nil, txen: nil, holdHigh: hold, tcxo: tcxo, dio2RfSwitch: false)
                return nil
            } catch let e as ValidationError { return e.message } catch { return "\(error)" }
        }
        #expect(refused("lora-hat")?.hasPrefix("--hat must be one of waveshare, meshadv, meshadv-mini,") == true)
        #expect(refused(nil) == "an SX1262 needs --hat NAME, or --irq, --reset and --busy (GPIO line offsets)")
        #expect(refused("waveshare", hold: [21]) == "GPIO line 21 is given for two pins")
        #expect(refused("waveshare", cs: 2000) == "GPIO line offsets are 0 to 1023")
        #expect(refused(nil, irq: 16, tcxo: 2.0)?.hasPrefix("--tcxo must be one of") == true)
        #expect(refused(nil, irq: 16, spidev: nil)?.hasPrefix("--radio sx1262 needs the SPI device") == true)
        #expect(try NodeRadioSpec(parsing: "sx1262") == .sx1262(spidev: nil))
        #expect(try NodeRadioSpec(parsing: "sx1262:/dev/spidev0.1") == .sx1262(spidev: "/dev/spidev0.1"))
    }

    /// A radio for the watchdog's rule: it shows it works when `answers` is true and it is asked.
    final class FakeRadio: NodeRadio {
        var answers = true
        var probes = 0
        var now: UInt64 = 0
        var lastAlive: UInt64? = nil
        var description: String { "fake" }
        var recoveries: RadioRecoveries? { RadioRecoveries() }
        var onRecovery: ((RadioRecovery, String) -> Void)?
        func attach(to loop: PollLoop, air: RadioAir, params: RadioParams, pump: @escaping () -> Void, fail: @escaping (Error) -> Void) throws {}
        func send(_ packet: [UInt8]) {}
        func close() {}
        func probe() { probes += 1; if answers { lastAlive = now } }
    }

    /// WATCHDOG=1 only for an interval in which the radio showed that it works; the radio is
    /// asked at every interval.
    @Test func theWatchdogIsFedOnlyWhileTheRadioWorks() {
        let radio = FakeRadio()
        let l = NodeLiveness(radio: radio, environment: [:])
        radio.lastAlive = 0
        radio.now = 30_000
        #expect(l.tick(now: 30_000) && radio.probes == 1)  // alive since the start (0)
        radio.now = 60_000
        #expect(l.tick(now: 60_000))                        // answered the probe at 30 s
        radio.answers = false
        radio.now = 90_000
        #expect(l.tick(now: 90_000))                        // answered at 60 s
        radio.now = 120_000
        #expect(!l.tick(now: 120_000) && radio.probes == 4)  // nothing since 90 s: not fed
        radio.lastAlive = 125_000                           // a packet heard
        #expect(l.tick(now: 150_000))
    }
}
