import MeshNode

/// An SX1262 on the simulated air at the level of its SPI commands and its BUSY and DIO1 lines:
/// the commands MeshNode's driver uses (standby, packet type, frequency, modulation and packet
/// parameters, IRQ setup, buffer base, buffer write and read, TX, RX, IRQ status and clear, RX
/// buffer and packet status, register write, calibration, regulator, PA, TX parameters, TCXO and
/// RF switch control). The frequency, bandwidth and spreading factor it is set to are the channel
/// it hears and sends on; a packet is heard only while it is in receive mode. DIO1 rises
/// (`onDIO1`) when an enabled IRQ is raised. BUSY is high only while NRESET is held low.
public final class SX1262Model: SimNode, SX1262Board {
    public enum Mode: Equatable, Sendable { case sleep, standby, rx, tx }
    public private(set) var mode: Mode = .standby
    public private(set) var commands: [UInt8] = []
    public var onDIO1: (() -> Void)?
    private var buffer = [UInt8](repeating: 0, count: 256)
    private var txBase: UInt8 = 0, rxBase: UInt8 = 0
    private var payloadLength: UInt8 = 0xFF
    private var irq: UInt16 = 0
    private var dio1Mask: UInt16 = 0
    private var rxLength: UInt8 = 0
    private var packetSNR: Double = 0, packetRSSI = 0
    private var inReset = false
    public private(set) var syncWord: [UInt8] = []
    public private(set) var rfSwitchState: (rx: Bool, tx: Bool) = (false, false)
    private var freqWord: UInt32 = 0
    /// Packets heard while not listening, or while the last one was unread.
    public private(set) var missed = 0

    public init(mesh: SimMesh, name: String) {
        super.init(mesh: mesh, name: name, role: .external, poolSize: 4)
    }

    // MARK: board

    public func busy() throws -> Bool { inReset }
    public func reset(_ high: Bool) throws {
        if !high { inReset = true } else if inReset {
            inReset = false
            mode = .standby; irq = 0; dio1Mask = 0
        }
    }
    public func rfSwitch(rx: Bool, tx: Bool) throws { rfSwitchState = (rx, tx) }
    public func pause(microseconds: UInt32) {}

    public func spi(_ tx: [UInt8]) throws -> [UInt8] {
        var rx = [UInt8](repeating: 0, count: tx.count)
        guard let op = tx.first, !inReset else { return rx }
        commands.append(op)
        let a = Array(tx.dropFirst())
        let status: UInt8 = mode == .rx ? 0x50 : mode == .tx ? 0x60 : 0x20
        switch SX1262.Opcode(rawValue: op) {
        case .setStandby: mode = .standby
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
        case .setDioIrqParams where a.count >= 4: dio1Mask = UInt16(a[2]) << 8 | UInt16(a[3])
        case .writeRegister where a.count >= 2:
            if UInt16(a[0]) << 8 | UInt16(a[1]) == SX1262.syncWordRegister { syncWord = Array(a.dropFirst(2)) }
        case .writeBuffer where a.count >= 1:
            for (i, b) in a.dropFirst().enumerated() { buffer[(Int(a[0]) + i) & 0xFF] = b }
        case .readBuffer where a.count >= 2:
            rx[1] = status; rx[2] = status
            for i in 3..<tx.count { rx[i] = buffer[(Int(a[0]) + i - 3) & 0xFF] }
        case .getIrqStatus where tx.count >= 4: rx[1] = status; rx[2] = UInt8(irq >> 8); rx[3] = UInt8(irq & 0xFF)
        case .clearIrqStatus where a.count >= 2: irq &= ~(UInt16(a[0]) << 8 | UInt16(a[1]))
        case .getRxBufferStatus where tx.count >= 4: rx[1] = status; rx[2] = rxLength; rx[3] = rxBase
        case .getPacketStatus where tx.count >= 5:
            rx[1] = status
            rx[2] = UInt8(clamping: -packetRSSI * 2)
            rx[3] = UInt8(bitPattern: Int8(clamping: Int((packetSNR * 4).rounded())))
            rx[4] = rx[2]
        case .setRx: mode = .rx
        case .setCad:
            // A LoRa preamble on the air now (a reception in progress here) is detected; the
            // detection takes 8 symbols.
            let detected = radio.rxBusyUntil > now
            let symbolMs = max(1, (UInt64(1) << UInt64(radio.params.sf)) * 1000 / UInt64(max(1, radio.params.bwHz)))
            mesh.scheduler.after(8 * symbolMs) { [weak self] in
                self?.raise(SX1262.irqCadDone | (detected ? SX1262.irqCadDetected : 0))
            }
        case .setTx:
            mode = .tx
            let n = Int(payloadLength)
            let packet = (0..<n).map { buffer[(Int(txBase) + $0) & 0xFF] }
            if !enqueue(packet, priority: 0) { raise(SX1262.irqTimeout) }
        default: break  // calibrate, regulator, PA, packet type, TCXO and RF switch control: nothing to model
        }
        return rx
    }

    private func raise(_ bits: UInt16) {
        let before = irq & dio1Mask
        irq |= bits
        // The edge reaches the host as an event after this moment, not inside the SPI call.
        if before == 0 && irq & dio1Mask != 0 { mesh.scheduler.after(0) { [weak self] in self?.onDIO1?() } }
    }

    // MARK: air

    override public func willTransmit(_ bytes: [UInt8]) {
        let air = UInt64(radio.airtime(bytes.count))
        mesh.scheduler.after(air) { [weak self] in
            guard let self, self.mode == .tx else { return }
            self.mode = .standby
            self.raise(SX1262.irqTxDone)
        }
    }

    override public func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        // One receiver: a packet that ends while the last one's RxDone is still unread is lost (the
        // simulated air can deliver two at the same moment; a real channel would have collided them).
        guard mode == .rx, syncWord == SX1262.syncWord, irq & SX1262.irqRxDone == 0 else { missed &+= 1; return }
        for (i, b) in bytes.enumerated() { buffer[(Int(rxBase) + i) & 0xFF] = b }
        rxLength = UInt8(bytes.count)
        packetSNR = snr; packetRSSI = rssi
        raise(SX1262.irqRxDone)
    }
}
