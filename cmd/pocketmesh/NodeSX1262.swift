import Glibc
import MeshLink
import MeshNode
import MeshSession

/// Where an SX1262 HAT's pins are: GPIO line offsets on one chip, and how its RF path is switched.
struct SX1262Pins {
    var chip: String
    var irq: UInt32
    var reset: UInt32
    var busy: UInt32
    var rxen: UInt32?
    var txen: UInt32?
    var tcxoVolts: Double?
    var dio2RfSwitch: Bool
}

/// The board under MeshNode's SX1262 driver: spidev for the commands, GPIO v2 lines for NRESET,
/// BUSY and the RF switch.
final class SX1262HAT: SX1262Board {
    let bus: SPIDevice
    let outputs: GPIOLines      // reset, then rxen and txen where given
    let busyLine: GPIOLines
    let rxenIndex: Int?, txenIndex: Int?

    init(spidev: String, pins: SX1262Pins) throws {
        do { bus = try SPIDevice(path: spidev) } catch {
            throw ClientError.link("cannot open the SPI device \(spidev): \(error); check that SPI is enabled and the user is in the spi group.")
        }
        var outs = [pins.reset]
        var rx: Int? = nil, tx: Int? = nil
        if let r = pins.rxen { rx = outs.count; outs.append(r) }
        if let t = pins.txen { tx = outs.count; outs.append(t) }
        rxenIndex = rx; txenIndex = tx
        do {
            outputs = try GPIOLines(chip: pins.chip, offsets: outs, consumer: "pocketmesh", flags: GPIOv2.flagOutput)
            busyLine = try GPIOLines(chip: pins.chip, offsets: [pins.busy], consumer: "pocketmesh", flags: GPIOv2.flagInput)
        } catch {
            throw ClientError.link("cannot take GPIO lines \(outs + [pins.busy]) of \(pins.chip): \(error); check --gpiochip and the pin numbers (line offsets), and that nothing else holds them.")
        }
    }

    func spi(_ tx: [UInt8]) throws -> [UInt8] { try bus.transfer(tx) }
    func busy() throws -> Bool { try busyLine.get(0) }
    func reset(_ high: Bool) throws { try outputs.set(0, high) }
    func rfSwitch(rx: Bool, tx: Bool) throws {
        if let i = rxenIndex { try outputs.set(i, rx) }
        if let i = txenIndex { try outputs.set(i, tx) }
    }
    func pause(microseconds: UInt32) { usleep(microseconds) }
}

/// An SX1262 on this host's SPI bus: DIO1's rising edges come as GPIO edge events on the poll loop
/// (the IRQ line's descriptor), never polled.
final class SX1262Radio: NodeRadio {
    let spidev: String
    let pins: SX1262Pins
    let hat: SX1262HAT
    let irqLine: GPIOLines
    var chip: SX1262?
    /// Whether the node asks for channel activity detection (`set cad on`).
    var wantsCAD: () -> Bool = { false }
    var description: String { "sx1262 \(spidev)" }

    init(spidev: String, pins: SX1262Pins) throws {
        self.spidev = spidev
        self.pins = pins
        hat = try SX1262HAT(spidev: spidev, pins: pins)
        do {
            irqLine = try GPIOLines(chip: pins.chip, offsets: [pins.irq], consumer: "pocketmesh", flags: GPIOv2.flagInput | GPIOv2.flagEdgeRising)
        } catch {
            throw ClientError.link("cannot watch GPIO line \(pins.irq) of \(pins.chip) for DIO1: \(error).")
        }
    }

    func attach(to loop: PollLoop, air: RadioAir, params: RadioParams, pump: @escaping () -> Void, fail: @escaping (Error) -> Void) throws {
        let chip = SX1262(board: hat, params: params, tcxoVolts: pins.tcxoVolts, dio2RfSwitch: pins.dio2RfSwitch)
        chip.onReceive = { air.heard($0, snr: $1, rssi: $2) }
        // A busy channel: detect again after a random 120-360 ms, as listen-before-talk waits.
        chip.onChannelBusy = { [unowned chip] in
            air.scheduler.after(120 * UInt64.random(in: 1...3)) {
                do { try chip.retry() } catch { fail(ClientError.link("sx1262: \(error).")) }
            }
            pump()
        }
        self.chip = chip
        do { try chip.begin() } catch { throw ClientError.link("\(description): \(error).") }
        loop.register(fd: irqLine.fd.rawValue, events: .readable) { [unowned self] _ in
            _ = self.irqLine.events()
            air.run(until: monotonicMilliseconds())
            do { try chip.irq() } catch { fail(ClientError.link("\(self.description): \(error).")) }
            pump()
        }
    }

    func send(_ packet: [UInt8]) {
        chip?.cadBeforeTransmit = wantsCAD()
        try? chip?.send(packet)
    }
    func close() {}
}
