/// What the SX1262 driver needs of the board: the chip's SPI commands, its BUSY line, NRESET and,
/// where the board has one, an RF switch driven by RXEN/TXEN. DIO1 (the IRQ line) belongs to the
/// host: it calls `SX1262.irq()` on each rising edge (a GPIO edge event in the poll loop).
public protocol SX1262Board: AnyObject {
    /// Clocks `tx` out with chip select held and returns what came back (as many bytes).
    func spi(_ tx: [UInt8]) throws -> [UInt8]
    func busy() throws -> Bool
    func reset(_ high: Bool) throws
    func rfSwitch(rx: Bool, tx: Bool) throws
    /// Waits a few microseconds (reset pulse, BUSY after a command: both bounded by the datasheet).
    func pause(microseconds: UInt32)
}

public enum SX1262Error: Error, Equatable, CustomStringConvertible {
    case busyTimeout(opcode: UInt8)
    public var description: String {
        switch self {
        case .busyTimeout(let op): return "the SX1262 stayed busy before command 0x" + String(op, radix: 16) + "; check the BUSY pin, the reset pin and the chip's supply"
        }
    }
}

/// A Semtech SX1262 LoRa transceiver driven by its SPI commands (datasheet DS.SX1261-2, section
/// 13): LoRa packets with explicit header and CRC, MeshCore's private sync word, continuous receive,
/// one packet transmitting at a time (the rest wait here, at most `maxQueued`).
public final class SX1262 {
    public enum Opcode: UInt8, Sendable {
        case setStandby = 0x80, setRx = 0x82, setTx = 0x83, setRfFrequency = 0x86, calibrate = 0x89
        case setPacketType = 0x8A, setModulationParams = 0x8B, setPacketParams = 0x8C, setTxParams = 0x8E
        case setBufferBaseAddress = 0x8F, setPaConfig = 0x95, setRegulatorMode = 0x96, setDio3AsTcxoCtrl = 0x97
        case setDio2AsRfSwitchCtrl = 0x9D, setDioIrqParams = 0x08, clearIrqStatus = 0x02, writeRegister = 0x0D
        case setCad = 0xC5, setCadParams = 0x88
        case writeBuffer = 0x0E, getIrqStatus = 0x12, getRxBufferStatus = 0x13, getPacketStatus = 0x14, readBuffer = 0x1E
    }

    /// IRQ bits (`SetDioIrqParams`, `GetIrqStatus`).
    public static let irqTxDone: UInt16 = 1 << 0
    public static let irqRxDone: UInt16 = 1 << 1
    public static let irqHeaderErr: UInt16 = 1 << 5
    public static let irqCrcErr: UInt16 = 1 << 6
    public static let irqCadDone: UInt16 = 1 << 7
    public static let irqCadDetected: UInt16 = 1 << 8
    public static let irqTimeout: UInt16 = 1 << 9
    static let irqMask: UInt16 = irqTxDone | irqRxDone | irqHeaderErr | irqCrcErr | irqCadDone | irqCadDetected | irqTimeout
    /// The LoRa sync word register and MeshCore's value (private network, 0x12).
    public static let syncWordRegister: UInt16 = 0x0740
    public static let syncWord: [UInt8] = [0x14, 0x24]
    public static let maxQueued = 8

    let board: SX1262Board
    public var params: RadioParams
    let tcxoVolts: Double?
    let dio2RfSwitch: Bool
    public var onReceive: (([UInt8], Double, Int) -> Void)?
    public var onTxDone: (() -> Void)?
    public private(set) var transmitting = false
    /// Channel activity detection before each transmit: a packet waits while the chip detects a
    /// LoRa preamble, and `onChannelBusy` asks the host to call `retry()` a little later.
    public var cadBeforeTransmit = false
    public var onChannelBusy: (() -> Void)?
    private var cadPacket: [UInt8]? = nil
    public private(set) var channelBusyCount = 0
    private var queue: [[UInt8]] = []
    public private(set) var crcErrors = 0
    public private(set) var dropped = 0

    public init(board: SX1262Board, params: RadioParams, tcxoVolts: Double? = nil, dio2RfSwitch: Bool = false) {
        self.board = board
        self.params = params
        self.tcxoVolts = tcxoVolts
        self.dio2RfSwitch = dio2RfSwitch
    }

    // MARK: commands

    private func waitReady(_ op: UInt8) throws {
        for _ in 0..<2000 {  // 200 ms at most: the longest is calibration, a few ms
            if try !board.busy() { return }
            board.pause(microseconds: 100)
        }
        throw SX1262Error.busyTimeout(opcode: op)
    }

    @discardableResult
    func command(_ op: Opcode, _ args: [UInt8] = [], reply: Int = 0) throws -> [UInt8] {
        try waitReady(op.rawValue)
        return try board.spi([op.rawValue] + args + [UInt8](repeating: 0, count: reply))
    }

    /// The frequency word: Hz × 2^25 / 32 MHz.
    public static func frequencyWord(hz: UInt64) -> [UInt8] {
        let w = UInt32(truncatingIfNeeded: (hz << 25) / 32_000_000)
        return [UInt8(w >> 24), UInt8(truncatingIfNeeded: w >> 16), UInt8(truncatingIfNeeded: w >> 8), UInt8(truncatingIfNeeded: w)]
    }

    /// The bandwidth's code in SetModulationParams.
    public static func bandwidthCode(_ hz: UInt32) -> UInt8? {
        switch hz {
        case 7_800: return 0x00
        case 10_400: return 0x08
        case 15_600: return 0x01
        case 20_800: return 0x09
        case 31_250: return 0x02
        case 41_700: return 0x0A
        case 62_500: return 0x03
        case 125_000: return 0x04
        case 250_000: return 0x05
        case 500_000: return 0x06
        default: return nil
        }
    }

    /// The TCXO voltage's code in SetDIO3AsTCXOCtrl.
    public static func tcxoCode(_ volts: Double) -> UInt8? {
        [1.6, 1.7, 1.8, 2.2, 2.4, 2.7, 3.0, 3.3].firstIndex { abs($0 - volts) < 0.01 }.map { UInt8($0) }
    }

    /// SetModulationParams' arguments: SF, bandwidth code, coding rate 4/5..4/8 as 1..4, and low data
    /// rate optimisation when a symbol lasts 16 ms or more.
    public static func modulation(_ p: RadioParams) -> [UInt8]? {
        guard let bw = bandwidthCode(p.bwHz), (5...12).contains(p.sf), (5...8).contains(p.cr) else { return nil }
        let symbolUs = (1 << UInt64(p.sf)) * 1_000_000 / UInt64(p.bwHz)
        return [p.sf, bw, p.cr - 4, symbolUs >= 16_000 ? 1 : 0]
    }

    /// SetPacketParams' arguments: preamble (32 symbols at SF ≤ 8, else 16, as the airtime assumes),
    /// explicit header, the payload length, CRC on, standard IQ.
    public static func packetParams(_ p: RadioParams, length: UInt8) -> [UInt8] {
        let preamble: UInt16 = p.sf <= 8 ? 32 : 16
        return [UInt8(preamble >> 8), UInt8(preamble & 0xFF), 0x00, length, 0x01, 0x00]
    }

    // MARK: bring-up

    /// Resets the chip and sets it up for MeshCore, then listens.
    public func begin() throws {
        guard let modulation = Self.modulation(params) else { throw SX1262ParamError() }
        try board.reset(false)
        board.pause(microseconds: 1_000)
        try board.reset(true)
        board.pause(microseconds: 5_000)
        try command(.setStandby, [0x00])
        if let v = tcxoVolts, let code = Self.tcxoCode(v) {
            try command(.setDio3AsTcxoCtrl, [code, 0x00, 0x01, 0x40])  // 5 ms start-up (320 × 15.625 µs)
        }
        try command(.calibrate, [0x7F])
        if dio2RfSwitch { try command(.setDio2AsRfSwitchCtrl, [0x01]) }
        try command(.setRegulatorMode, [0x01])
        try command(.setPacketType, [0x01])
        try command(.setRfFrequency, Self.frequencyWord(hz: UInt64(params.freqKHz) * 1000))
        try command(.setModulationParams, modulation)
        try command(.setPacketParams, Self.packetParams(params, length: 0xFF))
        try command(.writeRegister, [UInt8(Self.syncWordRegister >> 8), UInt8(Self.syncWordRegister & 0xFF)] + Self.syncWord)
        try command(.setPaConfig, [0x04, 0x07, 0x00, 0x01])
        try command(.setTxParams, [UInt8(bitPattern: max(-9, min(22, params.txPowerDbm))), 0x04])
        try command(.setBufferBaseAddress, [0x00, 0x00])
        let m = Self.irqMask
        try command(.setDioIrqParams, [UInt8(m >> 8), UInt8(m & 0xFF), UInt8(m >> 8), UInt8(m & 0xFF), 0, 0, 0, 0])
        try listen()
    }

    private func listen() throws {
        try board.rfSwitch(rx: true, tx: false)
        try command(.setRx, [0xFF, 0xFF, 0xFF])  // continuous
    }

    // MARK: packets

    /// Sends a packet now, or after the ones before it.
    public func send(_ packet: [UInt8]) throws {
        guard !packet.isEmpty, packet.count <= 255 else { return }
        if transmitting {
            if queue.count >= Self.maxQueued { queue.removeFirst(); dropped += 1 }
            queue.append(packet)
            return
        }
        try start(packet)
    }

    private func start(_ packet: [UInt8]) throws {
        if cadBeforeTransmit {
            transmitting = true
            cadPacket = packet
            try command(.setStandby, [0x00])
            try command(.setCadParams, [0x03, params.sf + 13, 10, 0x00, 0x00, 0x00, 0x00])  // 8 symbols, CAD only
            try command(.setCad)
            return
        }
        try transmitNow(packet)
    }

    /// After a busy channel: detects again, and sends if it is clear.
    public func retry() throws {
        guard let p = cadPacket else { return }
        try start(p)
    }

    private func transmitNow(_ packet: [UInt8]) throws {
        cadPacket = nil
        try command(.setStandby, [0x00])
        try board.rfSwitch(rx: false, tx: true)
        try command(.setPacketParams, Self.packetParams(params, length: UInt8(packet.count)))
        try command(.writeBuffer, [0x00] + packet)
        try command(.clearIrqStatus, [0xFF, 0xFF])
        try command(.setTx, [0x00, 0x00, 0x00])
        transmitting = true
    }

    /// DIO1 rose: reads and clears the IRQ status and handles what it says.
    public func irq() throws {
        let s = try command(.getIrqStatus, reply: 3)
        let irq = UInt16(s[2]) << 8 | UInt16(s[3])
        guard irq != 0 else { return }
        try command(.clearIrqStatus, [UInt8(irq >> 8), UInt8(irq & 0xFF)])
        if irq & Self.irqCadDone != 0, let p = cadPacket {
            if irq & Self.irqCadDetected != 0 {
                channelBusyCount += 1
                try listen()  // hear what is on the air meanwhile
                onChannelBusy?()
            } else {
                try transmitNow(p)
            }
            return
        }
        if irq & Self.irqTxDone != 0 || (transmitting && irq & Self.irqTimeout != 0) {
            transmitting = false
            onTxDone?()
            if !queue.isEmpty { try start(queue.removeFirst()) } else {
                try command(.setPacketParams, Self.packetParams(params, length: 0xFF))
                try listen()
            }
        }
        if irq & Self.irqRxDone != 0 {
            if irq & (Self.irqCrcErr | Self.irqHeaderErr) != 0 { crcErrors += 1; return }
            let b = try command(.getRxBufferStatus, reply: 3)
            let length = Int(b[2]), start = b[3]
            guard length > 0 else { return }
            let data = try command(.readBuffer, [start, 0x00], reply: length)
            let packet = Array(data[3...])
            let ps = try command(.getPacketStatus, reply: 4)
            let rssi = -Int(ps[2]) / 2
            let snr = Double(Int8(bitPattern: ps[3])) / 4
            onReceive?(packet, snr, rssi)
        }
    }
}

/// Radio parameters the SX1262 cannot take (a bandwidth it has no code for, SF or CR out of range).
public struct SX1262ParamError: Error, CustomStringConvertible {
    public var description: String { "the SX1262 takes bandwidths 7.8 to 500 kHz of the LoRa set, SF 5-12 and CR 5-8" }
}
