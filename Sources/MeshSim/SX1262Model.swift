import MeshNode

/// An SX1262 on the simulated air at the level of its SPI commands and its BUSY and DIO1 lines:
/// the commands MeshNode's driver uses (standby, status, device errors, packet type, frequency,
/// modulation and packet parameters, IRQ setup, buffer base, buffer write and read, TX, RX, CAD,
/// IRQ status and clear, RX buffer and packet status, register write and read, calibration and
/// image calibration, regulator, PA, TX parameters, TCXO and RF switch control). The frequency,
/// bandwidth and spreading factor it is set to are the channel it hears and sends on; a packet
/// is heard only while it is in receive mode. The IRQ bits enabled by SetDioIrqParams are latched
/// in its status; DIO1 rises (`onDIO1`) when one routed to it is raised, and stays high until
/// those are cleared. While a packet is on the air towards it (in receive mode), its status shows
/// preamble detected, sync word and header valid. BUSY is high only while NRESET is held low.
/// Registers keep what is written (a reset brings back their defaults); the version register
/// reads "SX1261 V2D 2D02", as SX1262s do. `faults` makes it misbehave as chips and boards do.
public final class SX1262Model: SimNode, SX1262Board {
    public enum Mode: Equatable, Sendable { case sleep, standby, rx, tx }
    public private(set) var mode: Mode = .standby
    public private(set) var commands: [UInt8] = []
    public var onDIO1: (() -> Void)?
    public var faults = SX1262Faults()
    /// The board's oscillator: a TCXO (powered from DIO3) or a crystal. Calibration fails
    /// (XOSC start error) when the driver sets the other up.
    public var hasTCXO = true
    private var tcxoSet = false
    public private(set) var deviceErrors: UInt16 = 0
    public private(set) var imageCalibration: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 256)
    private var txBase: UInt8 = 0, rxBase: UInt8 = 0
    private var payloadLength: UInt8 = 0xFF
    private var irq: UInt16 = 0
    private var irqMask: UInt16 = 0
    private var dio1Mask: UInt16 = 0
    private var rxLength: UInt8 = 0
    private var packetSNR: Double = 0, packetRSSI = 0
    private var inReset = false
    private var registers: [UInt16: UInt8] = [:]
    public private(set) var rfSwitchState: (rx: Bool, tx: Bool) = (false, false)
    private var freqWord: UInt32 = 0
    /// Packets heard while not listening, or while the last one was unread.
    public private(set) var missed = 0
    /// Transmits started and packets received since it was made (the faults count these from 1).
    public private(set) var txStarted = 0
    public private(set) var rxReceived = 0
    private var raceOnRead: (bytes: [UInt8], snr: Double, rssi: Int)? = nil
    private var txToken: UInt64 = 0

    public init(mesh: SimMesh, name: String) {
        super.init(mesh: mesh, name: name, role: .external, poolSize: 4)
        registers = Self.defaultRegisters
        // A chip sends when told: no queue discipline of the firmware's (listen before talk and
        // the duty cycle are the driver's and the node's).
        listensBeforeTalk = false
        radio.airtimeFactor = 0
    }

    /// Register values after a reset: the sync word (0x1424), RX gain power saving (0x94), the TX
    /// clamp (0x08), the version string.
    static let defaultRegisters: [UInt16: UInt8] = {
        var r: [UInt16: UInt8] = [0x0740: 0x14, 0x0741: 0x24, SX1262.rxGainRegister: SX1262.rxGainPowerSaving, SX1262.txClampRegister: 0x08]
        for (i, b) in Array("SX1261 V2D 2D02".utf8).enumerated() { r[SX1262.versionRegister + UInt16(i)] = b }
        return r
    }()

    public func register(_ r: UInt16) -> UInt8 { registers[r] ?? 0 }
    public var syncWord: [UInt8] { [register(SX1262.syncWordRegister), register(SX1262.syncWordRegister + 1)] }

    /// The chip loses its settings as after a brown-out (it comes back in standby, registers at
    /// their defaults, no IRQ setup).
    public func brownOut() {
        mode = .standby; irq = 0; irqMask = 0; dio1Mask = 0; registers = Self.defaultRegisters; tcxoSet = false
        txToken &+= 1
    }

    /// A packet arrives just after the host's next GetIrqStatus, before its ClearIrqStatus: the
    /// race that leaves DIO1 high with no new edge when the host clears only what it read.
    public func receiveDuringNextIrqRead(_ bytes: [UInt8], snr: Double, rssi: Int) { raceOnRead = (bytes, snr, rssi) }

    // MARK: board

    public func busy() throws -> Bool { inReset || faults.busyStuck }
    public func reset(_ high: Bool) throws {
        if !high { inReset = true } else if inReset {
            inReset = false
            brownOut()
            deviceErrors = 0
        }
    }
    public func rfSwitch(rx: Bool, tx: Bool) throws { rfSwitchState = (rx, tx) }
    public func dio1() throws -> Bool { !inReset && irq & dio1Mask != 0 }
    public func pause(microseconds: UInt32) {}

    public func spi(_ tx: [UInt8]) throws -> [UInt8] {
        if let b = faults.miso { return [UInt8](repeating: b, count: tx.count) }
        var rx = [UInt8](repeating: 0, count: tx.count)
        guard let op = tx.first, !inReset else { return rx }
        commands.append(op)
        let a = Array(tx.dropFirst())
        let status: UInt8 = mode == .rx ? 0x50 : mode == .tx ? 0x60 : 0x20
        for i in 1..<rx.count { rx[i] = status }
        switch SX1262.Opcode(rawValue: op) {
        case .setStandby: mode = .standby; txToken &+= 1
        case .getStatus: break
        case .getDeviceErrors where tx.count >= 4: rx[2] = UInt8(deviceErrors >> 8); rx[3] = UInt8(deviceErrors & 0xFF)
        case .clearDeviceErrors: deviceErrors = 0
        case .setDio3AsTcxoCtrl: tcxoSet = true
        case .calibrate:
            if tcxoSet != hasTCXO { deviceErrors |= SX1262.xoscStartError | 1 << 2 }  // XOSC start, and so the PLL
        case .calibrateImage: imageCalibration = a
        case .setRfFrequency where a.count >= 4:
            freqWord = UInt32(a[0]) << 24 | UInt32(a[1]) << 16 | UInt32(a[2]) << 8 | UInt32(a[3])
            let hz = (UInt64(freqWord) * 32_000_000) >> 25
            radio.params.freqKHz = UInt32((hz + 500) / 1000)
        case .setModulationParams where a.count >= 3:
            radio.params.sf = a[0]
            if let bw = [0x00: 7_800, 0x08: 10_400, 0x01: 15_600, 0x09: 20_800, 0x02: 31_250, 0x0A: 41_700, 0x03: 62_500,
                         0x04: 125_000, 0x05: 250_000, 0x06: 500_000][Int(a[1])] { radio.params.bwHz = UInt32(bw) }
            radio.params.cr = a[2] + 4
        case .setPacketParams where a.count >= 4: payloadLength = a[3]
        case .setTxParams where a.count >= 1: radio.params.txPowerDbm = Int8(bitPattern: a[0])
        case .setBufferBaseAddress where a.count >= 2: txBase = a[0]; rxBase = a[1]
        case .setDioIrqParams where a.count >= 4:
            irqMask = UInt16(a[0]) << 8 | UInt16(a[1])
            dio1Mask = UInt16(a[2]) << 8 | UInt16(a[3])
        case .writeRegister where a.count >= 2:
            let at = UInt16(a[0]) << 8 | UInt16(a[1])
            for (i, b) in a.dropFirst(2).enumerated() { registers[at &+ UInt16(i)] = b }
        case .readRegister where a.count >= 3:
            let at = UInt16(a[0]) << 8 | UInt16(a[1])
            for i in 4..<max(4, tx.count) { rx[i] = register(at &+ UInt16(i - 4)) }
        case .writeBuffer where a.count >= 1:
            for (i, b) in a.dropFirst().enumerated() { buffer[(Int(a[0]) + i) & 0xFF] = b }
        case .readBuffer where a.count >= 2:
            for i in 3..<tx.count { rx[i] = buffer[(Int(a[0]) + i - 3) & 0xFF] }
        case .getIrqStatus where tx.count >= 4:
            if mode == .rx && radio.rxBusyUntil > now {
                irq |= (SX1262.irqPreambleDetected | SX1262.irqSyncWordValid | SX1262.irqHeaderValid) & irqMask
            }
            rx[2] = UInt8(irq >> 8); rx[3] = UInt8(irq & 0xFF)
            if let r = raceOnRead {
                raceOnRead = nil
                receive(r.bytes, snr: r.snr, rssi: r.rssi)
            }
        case .clearIrqStatus where a.count >= 2: irq &= ~(UInt16(a[0]) << 8 | UInt16(a[1]))
        case .getRxBufferStatus where tx.count >= 4: rx[2] = rxLength; rx[3] = rxBase
        case .getPacketStatus where tx.count >= 5:
            rx[2] = UInt8(clamping: -packetRSSI * 2)
            rx[3] = UInt8(bitPattern: Int8(clamping: Int((packetSNR * 4).rounded())))
            rx[4] = rx[2]
        case .setRx:
            mode = .rx
            txToken &+= 1
            // A timeout (not 0, continuous, nor 0xFFFFFF, single until a packet): Timeout IRQ then, unless a packet came.
            if a.count >= 3, case let steps = UInt64(a[0]) << 16 | UInt64(a[1]) << 8 | UInt64(a[2]), steps != 0, steps != 0xFF_FFFF {
                let token = txToken, received = rxReceived
                mesh.scheduler.after(max(1, steps / 64)) { [weak self] in
                    guard let self, self.txToken == token, self.mode == .rx, self.rxReceived == received else { return }
                    self.mode = .standby
                    self.raise(SX1262.irqTimeout)
                }
            }
        case .setCad:
            // A LoRa preamble on the air now (a reception in progress here) is detected; the
            // detection takes 8 symbols.
            let detected = radio.rxBusyUntil > now
            let symbolMs = max(1, (UInt64(1) << UInt64(radio.params.sf)) * 1000 / UInt64(max(1, radio.params.bwHz)))
            mesh.scheduler.after(8 * symbolMs) { [weak self] in
                self?.raise(SX1262.irqCadDone | (detected ? SX1262.irqCadDetected : 0))
            }
        case .setTx where a.count >= 3:
            mode = .tx
            txStarted += 1
            txToken &+= 1
            let token = txToken, n = txStarted
            let timeoutMs = (UInt64(a[0]) << 16 | UInt64(a[1]) << 8 | UInt64(a[2])) / 64
            if faults.txHangs.contains(n) {
                // The PA never finishes: only the chip's own timeout (if one was given) ends it.
                if timeoutMs > 0 {
                    mesh.scheduler.after(timeoutMs) { [weak self] in
                        guard let self, self.txToken == token, self.mode == .tx else { return }
                        self.mode = .standby
                        self.raise(SX1262.irqTimeout)
                    }
                }
                break
            }
            let packet = (0..<Int(payloadLength)).map { buffer[(Int(txBase) + $0) & 0xFF] }
            if !enqueue(packet, priority: 0) { mode = .standby; raise(SX1262.irqTimeout) }
        default: break  // regulator, PA, packet type and RF switch control: nothing to model
        }
        return rx
    }

    private func raise(_ bits: UInt16, edge: Bool = true) {
        let before = irq & dio1Mask
        irq |= bits & irqMask
        // The edge reaches the host as an event after this moment, not inside the SPI call.
        if edge && before == 0 && irq & dio1Mask != 0 { mesh.scheduler.after(0) { [weak self] in self?.onDIO1?() } }
    }

    // MARK: air

    override public func willTransmit(_ bytes: [UInt8]) {
        let air = UInt64(radio.airtime(bytes.count))
        let token = txToken, n = txStarted
        mesh.scheduler.after(air) { [weak self] in
            guard let self, self.mode == .tx, self.txToken == token else { return }
            self.mode = .standby
            if !self.faults.dropTxDone.contains(n) { self.raise(SX1262.irqTxDone) }
        }
    }

    override public func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        // One receiver: a packet that ends while the last one's RxDone is still unread is lost (the
        // simulated air can deliver two at the same moment; a real channel would have collided them).
        guard mode == .rx, syncWord == SX1262.syncWord, irq & SX1262.irqRxDone == 0 else { missed &+= 1; return }
        receive(bytes, snr: snr, rssi: rssi)
    }

    private func receive(_ bytes: [UInt8], snr: Double, rssi: Int) {
        rxReceived += 1
        for (i, b) in bytes.enumerated() { buffer[(Int(rxBase) + i) & 0xFF] = b }
        rxLength = UInt8(bytes.count)
        packetSNR = snr; packetRSSI = rssi
        raise(SX1262.irqRxDone, edge: !faults.dropRxDoneEdge.contains(rxReceived))
    }
}

/// What a simulated SX1262 (or its board) does wrong. Transmits and receptions are counted from 1.
public struct SX1262Faults: Equatable, Sendable {
    /// These transmits end without their TxDone IRQ (the chip goes back to standby).
    public var dropTxDone: Set<Int> = []
    /// These transmits never end on their own: the chip stays in TX until SetTx's timeout, if any.
    public var txHangs: Set<Int> = []
    /// These receptions raise RxDone but no DIO1 edge reaches the host (a lost edge).
    public var dropRxDoneEdge: Set<Int> = []
    /// BUSY stays high.
    public var busyStuck = false
    /// No chip (or none selected): every byte read back is this, 0x00 or 0xFF.
    public var miso: UInt8? = nil

    public init() {}
}
