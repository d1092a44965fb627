import Glibc
import MeshLink
import MeshNode
import MeshOps
import MeshSession

/// Where an SX1262 HAT's pins are: GPIO line offsets on one chip (a path, gpiochipN or a label),
/// its chip select, the lines held high, and how its RF path and oscillator are set up.
struct SX1262Pins: Equatable {
    var chip: String
    var irq: UInt32
    var reset: UInt32
    var busy: UInt32
    /// NSS on a GPIO line driven here (nil: the SPI device's own chip select).
    var cs: UInt32? = nil
    var rxen: UInt32? = nil
    var txen: UInt32? = nil
    var holdHigh: [UInt32] = []
    /// The TCXO's supply on DIO3 tried first (nil: a crystal); the other is tried if calibration fails.
    var tcxoVolts: Double? = SX1262.defaultTCXOVolts
    var dio2RfSwitch = false

    /// The SPI device and pins from `--hat` and the pin options (an option wins over the preset).
    /// The pins as `node run` and `node check` take them (`--hat`, `--gpiochip`, `--irq`, ...).
    static func resolve(spidev: String?, _ a: OperationValues) throws -> (spidev: String, pins: SX1262Pins) {
        try resolve(spidev: spidev, hat: a.string("hat"), gpiochip: a.string("gpiochip"), irq: a.whole("irq"), reset: a.whole("reset"),
                    busy: a.whole("busy"), cs: a.whole("cs"), rxen: a.whole("rxen"), txen: a.whole("txen"),
                    holdHigh: a.wholes("hold-high"), tcxo: a.number("tcxo"), dio2RfSwitch: a.flag("dio2-rf-switch"))
    }

    static func resolve(spidev: String?, hat name: String?, gpiochip: String?, irq: Int?, reset: Int?, busy: Int?, cs: Int?,
                        rxen: Int?, txen: Int?, holdHigh: [Int], tcxo: Double?, dio2RfSwitch: Bool) throws -> (spidev: String, pins: SX1262Pins) {
        var hat: SX1262Hat? = nil
        if let name {
            guard let h = SX1262Hat.named(name) else {
                throw ValidationError("--hat must be one of \(SX1262Hat.all.map(\.name).joined(separator: ", ")) (or give the pins: --irq, --reset, --busy, --cs, ...)")
            }
            hat = h
        }
        for v in [irq, reset, busy, cs, rxen, txen].compactMap({ $0 }) + holdHigh where !(0...1023).contains(v) {
            throw ValidationError("GPIO line offsets are 0 to 1023")
        }
        guard let dio1 = irq.map({ UInt32($0) }) ?? hat?.irq, let nreset = reset.map({ UInt32($0) }) ?? hat?.reset,
              let busyLine = busy.map({ UInt32($0) }) ?? hat?.busy else {
            throw ValidationError("an SX1262 needs --hat NAME, or --irq, --reset and --busy (GPIO line offsets)")
        }
        if let tcxo, tcxo != 0, SX1262.tcxoCode(tcxo) == nil {
            throw ValidationError("--tcxo must be one of 1.6, 1.7, 1.8, 2.2, 2.4, 2.7, 3.0 or 3.3 volts, or 0 for a crystal")
        }
        var pins = SX1262Pins(chip: gpiochip ?? "", irq: dio1, reset: nreset, busy: busyLine)
        pins.cs = cs.map { UInt32($0) } ?? hat?.cs
        pins.rxen = rxen.map { UInt32($0) } ?? hat?.rxen
        pins.txen = txen.map { UInt32($0) } ?? hat?.txen
        pins.holdHigh = holdHigh.isEmpty ? hat?.holdHigh ?? [] : holdHigh.map { UInt32($0) }
        pins.tcxoVolts = tcxo.map { $0 == 0 ? nil : $0 } ?? (hat.map { $0.tcxoVolts } ?? SX1262.defaultTCXOVolts)
        pins.dio2RfSwitch = dio2RfSwitch || hat?.dio2RfSwitch == true
        let lines = [pins.irq, pins.reset, pins.busy] + [pins.cs, pins.rxen, pins.txen].compactMap { $0 } + pins.holdHigh
        if let twice = lines.first(where: { l in lines.filter { $0 == l }.count > 1 }) {
            throw ValidationError("GPIO line \(twice) is given for two pins")
        }
        guard let bus = spidev ?? hat?.spidev else { throw ValidationError("--radio sx1262 needs the SPI device (sx1262:/dev/spidevB.C) or a --hat") }
        return (bus, pins)
    }
}

/// The board under MeshNode's SX1262 driver: spidev for the commands, GPIO v2 lines for NRESET,
/// BUSY, DIO1, the chip select where the board puts NSS on a GPIO line, the RF switch, and the
/// lines held high.
final class SX1262HAT: SX1262Board {
    let bus: SPIDevice
    let outputs: GPIOLines      // reset, then cs, rxen, txen and the held lines where given
    let busyLine: GPIOLines
    let irqLine: GPIOLines
    let chipPath: String
    let csIndex: Int?, rxenIndex: Int?, txenIndex: Int?

    init(spidev: String, pins: SX1262Pins) throws {
        if pins.chip.isEmpty { chipPath = GPIOChip.defaultChip() } else {
            guard let p = GPIOChip.find(pins.chip) else {
                throw ClientError.link("no GPIO chip is labelled \(pins.chip); give --gpiochip as a path (/dev/gpiochipN) or one of the labels gpiodetect lists.")
            }
            chipPath = p
        }
        do { bus = try SPIDevice(path: spidev, ownChipSelect: pins.cs != nil) } catch {
            throw ClientError.link("cannot open the SPI device \(spidev): \(error); check that SPI is enabled and the user is in the spi group.")
        }
        // Outputs and their first levels: reset high (running), chip select high (idle), the RF
        // switch off, the held lines high.
        var outs = [pins.reset]
        var high: UInt64 = 1
        func add(_ line: UInt32?, high h: Bool) -> Int? {
            guard let line else { return nil }
            if h { high |= 1 << UInt64(outs.count) }
            outs.append(line)
            return outs.count - 1
        }
        csIndex = add(pins.cs, high: true)
        rxenIndex = add(pins.rxen, high: false)
        txenIndex = add(pins.txen, high: false)
        for l in pins.holdHigh { _ = add(l, high: true) }
        let label = (try? GPIOChip.info(chipPath).label).map { " (\($0))" } ?? ""
        do {
            outputs = try GPIOLines(chip: chipPath, offsets: outs, consumer: "pocketmesh", flags: GPIOv2.flagOutput, initialValues: high)
            busyLine = try GPIOLines(chip: chipPath, offsets: [pins.busy], consumer: "pocketmesh", flags: GPIOv2.flagInput)
            irqLine = try GPIOLines(chip: chipPath, offsets: [pins.irq], consumer: "pocketmesh", flags: GPIOv2.flagInput | GPIOv2.flagEdgeRising)
        } catch {
            throw ClientError.link("cannot take GPIO lines \(outs + [pins.busy, pins.irq]) of \(chipPath)\(label): \(error); check --gpiochip and the pin numbers (line offsets), and that no other program (meshtasticd, pyMC) holds them.")
        }
    }

    func spi(_ tx: [UInt8]) throws -> [UInt8] {
        guard let cs = csIndex else { return try bus.transfer(tx) }
        try outputs.set(cs, false)
        defer { try? outputs.set(cs, true) }
        return try bus.transfer(tx)
    }
    func busy() throws -> Bool { try busyLine.get(0) }
    func reset(_ high: Bool) throws { try outputs.set(0, high) }
    func rfSwitch(rx: Bool, tx: Bool) throws {
        if let i = rxenIndex { try outputs.set(i, rx) }
        if let i = txenIndex { try outputs.set(i, tx) }
    }
    func dio1() throws -> Bool { try irqLine.get(0) }
    func pause(microseconds: UInt32) { usleep(microseconds) }
}

/// An SX1262 on this host's SPI bus: DIO1's rising edges come as GPIO edge events on the poll loop
/// (the IRQ line's descriptor), never polled; the driver's deadlines and health check run on the
/// node's clock.
final class SX1262Radio: NodeRadio {
    let spidev: String
    let pins: SX1262Pins
    let hat: SX1262HAT
    var chip: SX1262?
    /// Whether the node asks for channel activity detection (`set cad on`) and boosted RX gain.
    var wantsCAD: () -> Bool = { false }
    var wantsBoostedGain: () -> Bool = { true }
    var onRecovery: ((RadioRecovery, String) -> Void)?
    var description: String { "sx1262 \(spidev)" }
    var recoveries: RadioRecoveries? { chip?.recoveries }
    var lastAlive: UInt64? { chip?.lastAlive }

    init(spidev: String, pins: SX1262Pins) throws {
        self.spidev = spidev
        self.pins = pins
        hat = try SX1262HAT(spidev: spidev, pins: pins)
    }

    func attach(to loop: PollLoop, air: RadioAir, params: RadioParams, pump: @escaping () -> Void, fail: @escaping (Error) -> Void) throws {
        let chip = SX1262(board: hat, params: params, tcxoVolts: pins.tcxoVolts, dio2RfSwitch: pins.dio2RfSwitch, scheduler: air.scheduler)
        chip.rxBoostedGain = wantsBoostedGain()
        chip.onReceive = { air.heard($0, snr: $1, rssi: $2) }
        chip.onRecovery = { [unowned self] r, text in self.onRecovery?(r, text) }
        chip.onDead = { [unowned self] text in fail(ClientError.link("\(self.description): \(text).")) }
        self.chip = chip
        do { try chip.begin() } catch { throw ClientError.link("\(description): \(error).") }
        if chip.tcxoVolts != pins.tcxoVolts {
            let used = chip.tcxoVolts.map { "with a TCXO at \($0) V (--tcxo \($0))" } ?? "with a crystal (--tcxo 0)"
            writeError("pocketmesh node: \(description): the oscillator did not start as given; it did \(used).")
        }
        if chip.calibrationWarnings != 0 {
            writeError("pocketmesh node: \(description): calibration left device errors: \(SX1262.deviceErrorNames(chip.calibrationWarnings)).")
        }
        loop.register(fd: hat.irqLine.fd.rawValue, events: .readable) { [unowned self] _ in
            _ = self.hat.irqLine.events()
            air.run(until: monotonicMilliseconds())
            chip.irq()
            pump()
        }
    }

    func send(_ packet: [UInt8]) {
        chip?.cadBeforeTransmit = wantsCAD()
        chip?.send(packet)
    }
    func probe() { chip?.healthCheck() }
    func close() {}
}
