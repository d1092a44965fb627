/// What the SX1262 driver needs of the board: the chip's SPI commands, its BUSY line, NRESET,
/// DIO1's level and, where the board has one, an RF switch driven by RXEN/TXEN. DIO1's rising
/// edges belong to the host: it calls `SX1262.irq()` on each (a GPIO edge event in the poll loop).
public protocol SX1262Board: AnyObject {
    /// Clocks `tx` out with chip select held and returns what came back (as many bytes).
    func spi(_ tx: [UInt8]) throws -> [UInt8]
    func busy() throws -> Bool
    func reset(_ high: Bool) throws
    func rfSwitch(rx: Bool, tx: Bool) throws
    /// Whether DIO1 is high now (an IRQ routed to it is pending).
    func dio1() throws -> Bool
    /// Waits a few microseconds (reset pulse, BUSY after a command: both bounded by the datasheet).
    func pause(microseconds: UInt32)
}

/// What stops the SX1262 driver, each with what to check.
public enum SX1262Error: Error, Equatable, CustomStringConvertible {
    case busyTimeout(opcode: UInt8)
    /// Every byte the chip sent back was this (0x00: MISO held low; 0xFF: floating, nothing selected).
    case noChip(miso: UInt8)
    /// GetStatus answered, but not with the mode the chip was just put in.
    case badStatus(UInt8)
    /// The version register is not an SX126x's.
    case notSX126x(String)
    /// A register written and read back differs.
    case readBack(register: UInt16, wrote: [UInt8], read: [UInt8])
    /// The oscillator did not start (device errors after calibration), with and without the TCXO.
    case calibration(errors: UInt16)
    /// The chip answers but has lost the settings it was given (it was reset behind the driver's back).
    case settingsLost

    public var description: String {
        switch self {
        case .busyTimeout(let op):
            return "the SX1262 stayed busy before command 0x" + hex(op) + "; check the BUSY pin, the reset pin and the chip's supply"
        case .noChip(0x00):
            return "no SX1262 answers on the SPI bus: every byte read back is 0x00 (MISO stays low); check that the HAT is seated, that SPI is on, and its chip select (--cs, or the --hat preset) and reset lines"
        case .noChip(let b):
            return "no SX1262 answers on the SPI bus: every byte read back is 0x" + hex(b) + " (MISO floats: the chip is not selected or not powered); check the chip select line (--cs, or the --hat preset), the SPI device and the HAT's power"
        case .badStatus(let s):
            return "the SX1262 answered GetStatus with 0x" + hex(s) + " (mode \(s >> 4 & 7)), not standby; check the chip select line (--cs) and that no other program drives the chip"
        case .notSX126x(let v):
            return "the chip on the SPI bus is no SX126x (its version register reads \"\(v)\"); check the SPI device and the chip select line"
        case let .readBack(reg, wrote, read):
            return "the SX1262 read register 0x" + hex(UInt8(reg >> 8)) + hex(UInt8(reg & 0xFF)) + " back as " + read.map(hex).joined()
                + " after " + wrote.map(hex).joined() + " was written; check the SPI wiring (MISO, MOSI, SCK) and the chip select line"
        case .settingsLost:
            return "the SX1262 lost its settings (it was reset: a brown-out, or a glitch on its reset line); check the HAT's supply"
        case .calibration(let e):
            return "the SX1262's calibration failed with and without a TCXO (device errors 0x" + hex(UInt8(e >> 8)) + hex(UInt8(e & 0xFF))
                + ": " + SX1262.deviceErrorNames(e) + "); check the board's oscillator setting (--tcxo VOLTS, 0 for a crystal) and its supply"
        }
    }
}

private func hex(_ b: UInt8) -> String { (b < 0x10 ? "0" : "") + String(b, radix: 16) }

/// A Semtech SX1262 LoRa transceiver driven by its SPI commands (datasheet DS.SX1261-2, section
/// 13): LoRa packets with explicit header and CRC, MeshCore's private sync word, continuous
/// receive, one packet transmitting at a time (the rest wait here, at most `maxQueued`).
///
/// At start the chip is checked: GetStatus (a missing chip reads all 0x00 or 0xFF), the version
/// register, a register written and read back, and the device errors after calibration (the
/// oscillator: with the TCXO on DIO3 first, then, as the firmware retries, the other way). Image
/// calibration for the band, boosted RX gain, the TX clamp fix (datasheet 15.2). Every transmit
/// has a deadline, and so does the health check (`healthIntervalMs`); what goes wrong is
/// recovered from and counted (`recoveries`), or, when a reset does not bring the chip back,
/// `onDead` says why. See SX1262Packets.swift.
public final class SX1262 {
    public enum Opcode: UInt8, Sendable {
        case setStandby = 0x80, setRx = 0x82, setTx = 0x83, setRfFrequency = 0x86, calibrate = 0x89
        case setPacketType = 0x8A, setModulationParams = 0x8B, setPacketParams = 0x8C, setTxParams = 0x8E
        case setBufferBaseAddress = 0x8F, setPaConfig = 0x95, setRegulatorMode = 0x96, setDio3AsTcxoCtrl = 0x97
        case calibrateImage = 0x98, setDio2AsRfSwitchCtrl = 0x9D, setDioIrqParams = 0x08, clearIrqStatus = 0x02
        case writeRegister = 0x0D, readRegister = 0x1D, clearDeviceErrors = 0x07, getDeviceErrors = 0x17, getStatus = 0xC0
        case setCad = 0xC5, setCadParams = 0x88
        case writeBuffer = 0x0E, getIrqStatus = 0x12, getRxBufferStatus = 0x13, getPacketStatus = 0x14, readBuffer = 0x1E
    }

    /// IRQ bits (`SetDioIrqParams`, `GetIrqStatus`).
    public static let irqTxDone: UInt16 = 1 << 0
    public static let irqRxDone: UInt16 = 1 << 1
    public static let irqPreambleDetected: UInt16 = 1 << 2
    public static let irqSyncWordValid: UInt16 = 1 << 3
    public static let irqHeaderValid: UInt16 = 1 << 4
    public static let irqHeaderErr: UInt16 = 1 << 5
    public static let irqCrcErr: UInt16 = 1 << 6
    public static let irqCadDone: UInt16 = 1 << 7
    public static let irqCadDetected: UInt16 = 1 << 8
    public static let irqTimeout: UInt16 = 1 << 9
    /// Every IRQ bit of the LoRa modem (ClearIrqStatus 0x03FF).
    public static let irqAll: UInt16 = 0x03FF
    /// The IRQs that raise DIO1.
    static let dio1Mask: UInt16 = irqTxDone | irqRxDone | irqHeaderErr | irqCrcErr | irqCadDone | irqCadDetected | irqTimeout
    /// The IRQs that are latched in the status: DIO1's, and preamble detected and header valid,
    /// which listen-before-talk reads before each transmit (they raise no DIO1 edge).
    static let irqMask: UInt16 = dio1Mask | irqPreambleDetected | irqHeaderValid | irqSyncWordValid
    /// The LoRa sync word register and MeshCore's value (private network, 0x12).
    public static let syncWordRegister: UInt16 = 0x0740
    public static let syncWord: [UInt8] = [0x14, 0x24]
    /// The version string (16 bytes; SX1262s read "SX1261 ...", as RadioLib notes).
    public static let versionRegister: UInt16 = 0x0320
    /// RX gain: 0x94 power saving, 0x96 boosted (datasheet 9.6), kept in retention through the
    /// register list at 0x029F.
    public static let rxGainRegister: UInt16 = 0x08AC
    public static let rxGainBoosted: UInt8 = 0x96
    public static let rxGainPowerSaving: UInt8 = 0x94
    public static let retentionListRegister: UInt16 = 0x029F
    /// TX clamp configuration (datasheet 15.2, better resistance to antenna mismatch): bits 4-1 set.
    public static let txClampRegister: UInt16 = 0x08D8
    /// Device errors (GetDeviceErrors): the oscillator failing to start.
    public static let xoscStartError: UInt16 = 1 << 5
    /// The TCXO voltage tried first when none is given (meshtasticd's and the HATs' 1.8 V).
    public static let defaultTCXOVolts = 1.8
    public static let maxQueued = 8

    let board: SX1262Board
    public var params: RadioParams
    /// The TCXO's supply on DIO3 in use (nil: a crystal), known after `begin`.
    public private(set) var tcxoVolts: Double?
    /// Whether `begin` may try the other oscillator setting when calibration fails (the firmware
    /// retries without the TCXO).
    public let tcxoFallback: Bool
    let dio2RfSwitch: Bool
    /// Boosted RX gain (the firmware's `radio.rxgain`, on by default).
    public var rxBoostedGain = true
    /// The clock of deadlines and the health check (nil: none, bring-up tests only).
    let scheduler: Scheduler?
    public var onReceive: (([UInt8], Double, Int) -> Void)?
    public var onTxDone: (() -> Void)?
    /// Each recovery, once, with a sentence for the log.
    public var onRecovery: ((RadioRecovery, String) -> Void)?
    /// The chip did not come back from a reset: the node cannot go on.
    public var onDead: ((String) -> Void)?
    public internal(set) var recoveries = RadioRecoveries()
    /// Device errors other than the oscillator's left after calibration (logged, not fatal).
    public private(set) var calibrationWarnings: UInt16 = 0
    /// The version register's text, read at start.
    public private(set) var version = ""
    /// When the chip last showed it works (a TxDone, a packet, a health check), on `scheduler`'s clock.
    public internal(set) var lastAlive: UInt64? = nil
    public internal(set) var transmitting = false
    /// Channel activity detection before each transmit: a packet waits while the chip detects a
    /// LoRa preamble (`set cad on`).
    public var cadBeforeTransmit = false
    /// Called when a packet waits for a busy channel (the host pumps its clock).
    public var onChannelBusy: (() -> Void)?
    /// How long a packet waits before the channel is looked at again (the firmware's 120-360 ms).
    public var retryDelay: () -> UInt64 = { 120 * UInt64.random(in: 1...3) }
    /// Packets that waited for a busy channel, received with a bad CRC, dropped.
    public internal(set) var counters = SX1262Counters()
    var queue: [[UInt8]] = []
    /// The packet waiting for CAD or for the channel to clear.
    var waitingPacket: [UInt8]? = nil
    var cadPacket: [UInt8]? = nil
    /// The waiting packet is to be looked at again (`retry`).
    var waitingForChannel = false
    var lbtSince: UInt64? = nil
    var activityAt: UInt64? = nil
    var headerSeen = false
    var deadlineToken: UInt64 = 0
    var healthToken: UInt64 = 0
    /// How often the chip's mode and DIO1 are looked at while nothing else shows it works.
    public static let healthIntervalMs: UInt64 = 30_000
    /// Listen-before-talk holds a packet at most this long, then sends it (the firmware's 4 s).
    public static let lbtMaxMs: UInt64 = 4_000
    /// On top of a transmit's airtime × 1.5: the host's own deadline.
    public static let txMarginMs: UInt64 = 1_000

    public init(board: SX1262Board, params: RadioParams, tcxoVolts: Double? = SX1262.defaultTCXOVolts, tcxoFallback: Bool = true,
                dio2RfSwitch: Bool = false, scheduler: Scheduler? = nil) {
        self.board = board
        self.params = params
        self.tcxoVolts = tcxoVolts
        self.tcxoFallback = tcxoFallback
        self.dio2RfSwitch = dio2RfSwitch
        self.scheduler = scheduler
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

    func writeRegister(_ r: UInt16, _ data: [UInt8]) throws {
        try command(.writeRegister, [UInt8(r >> 8), UInt8(r & 0xFF)] + data)
    }

    /// `count` bytes from register `r` (ReadRegister: address, a status byte, then the data).
    func readRegister(_ r: UInt16, count: Int) throws -> [UInt8] {
        Array(try command(.readRegister, [UInt8(r >> 8), UInt8(r & 0xFF), 0x00], reply: count).dropFirst(4))
    }

    /// GetStatus: bits 6-4 the chip mode (2 standby RC, 3 standby XOSC, 4 FS, 5 RX, 6 TX), bits
    /// 3-1 the last command's status.
    public func status() throws -> UInt8 { try command(.getStatus, reply: 1)[1] }

    public func deviceErrors() throws -> UInt16 {
        let r = try command(.getDeviceErrors, reply: 3)
        return UInt16(r[2]) << 8 | UInt16(r[3])
    }

    public static func chipMode(_ status: UInt8) -> UInt8 { status >> 4 & 0x07 }

    /// The names of GetDeviceErrors' bits.
    public static func deviceErrorNames(_ e: UInt16) -> String {
        let names = [(0, "RC64k calibration"), (1, "RC13M calibration"), (2, "PLL calibration"), (3, "ADC calibration"),
                     (4, "image calibration"), (5, "XOSC start"), (6, "PLL lock"), (8, "PA ramp")]
        let set = names.filter { e & (1 << UInt16($0.0)) != 0 }.map(\.1)
        return set.isEmpty ? "none" : set.joined(separator: ", ")
    }

    // MARK: encodings

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

    /// CalibrateImage's arguments for the band the frequency is in (datasheet 9.2.1, table 9-2):
    /// 430-440, 470-510, 779-787, 863-870 and 902-928 MHz; elsewhere 4 MHz steps around the
    /// frequency (odd, as RadioLib's calibrateImageRejection).
    public static func imageCalibration(freqKHz: UInt32) -> [UInt8] {
        let mhz = Int(freqKHz / 1000)
        switch mhz {
        case 902...928: return [0xE1, 0xE9]
        case 863...870: return [0xD7, 0xDB]
        case 779...787: return [0xC1, 0xC5]
        case 470...510: return [0x75, 0x81]
        case 430...440: return [0x6B, 0x6F]
        default:
            let lo = max(0, (Double(freqKHz) / 1000 - 5) / 4).rounded(.down), hi = min(255, ((Double(freqKHz) / 1000 + 5) / 4).rounded(.up))
            let a = UInt8(lo), b = UInt8(hi)
            return [a % 2 == 1 ? a : a &- 1, b % 2 == 1 ? b : b &+ 1]
        }
    }

    /// SetModulationParams' arguments: SF, bandwidth code, coding rate 4/5..4/8 as 1..4, and low data
    /// rate optimisation when a symbol lasts 16 ms or more.
    public static func modulation(_ p: RadioParams) -> [UInt8]? {
        guard let bw = bandwidthCode(p.bwHz), (5...12).contains(p.sf), (5...8).contains(p.cr) else { return nil }
        let symbolUs = (1 << UInt64(p.sf)) * 1_000_000 / UInt64(p.bwHz)
        return [p.sf, bw, p.cr - 4, symbolUs >= 16_000 ? 1 : 0]
    }

    /// The preamble in symbols: 32 at SF ≤ 8, else 16, as the airtime assumes.
    static func preambleSymbols(_ p: RadioParams) -> UInt16 { p.sf <= 8 ? 32 : 16 }

    /// SetPacketParams' arguments: the preamble, explicit header, the payload length, CRC on, standard IQ.
    public static func packetParams(_ p: RadioParams, length: UInt8) -> [UInt8] {
        let preamble = preambleSymbols(p)
        return [UInt8(preamble >> 8), UInt8(preamble & 0xFF), 0x00, length, 0x01, 0x00]
    }

    /// SetTx's timeout argument: `ms` in steps of 15.625 µs (24 bits).
    public static func txTimeout(ms: UInt64) -> [UInt8] {
        let steps = UInt32(min(ms * 64, 0xFF_FFFF))
        return [UInt8(steps >> 16), UInt8(truncatingIfNeeded: steps >> 8), UInt8(truncatingIfNeeded: steps)]
    }

    // MARK: bring-up

    /// Resets the chip, checks that it answers and sets it up for MeshCore, then listens.
    public func begin() throws {
        guard let modulation = Self.modulation(params) else { throw SX1262ParamError() }
        var errors = try bringUp(tcxo: tcxoVolts)
        if errors & Self.xoscStartError != 0 && tcxoFallback {
            // The oscillator did not start: the board is the other kind (a crystal where a TCXO
            // was tried, or the other way round). The firmware retries so, after a reset.
            let other: Double? = tcxoVolts == nil ? Self.defaultTCXOVolts : nil
            errors = try bringUp(tcxo: other)
            if errors & Self.xoscStartError == 0 { tcxoVolts = other }
        }
        if errors & Self.xoscStartError != 0 { throw SX1262Error.calibration(errors: errors) }
        calibrationWarnings = errors
        if dio2RfSwitch { try command(.setDio2AsRfSwitchCtrl, [0x01]) }
        try command(.setRegulatorMode, [0x01])
        try command(.setPacketType, [0x01])
        try command(.setRfFrequency, Self.frequencyWord(hz: UInt64(params.freqKHz) * 1000))
        try command(.setModulationParams, modulation)
        try command(.setPacketParams, Self.packetParams(params, length: 0xFF))
        try writeRegister(Self.syncWordRegister, Self.syncWord)
        let sync = try readRegister(Self.syncWordRegister, count: 2)
        guard sync == Self.syncWord else { throw SX1262Error.readBack(register: Self.syncWordRegister, wrote: Self.syncWord, read: sync) }
        try command(.setPaConfig, [0x04, 0x07, 0x00, 0x01])
        try command(.setTxParams, [UInt8(bitPattern: max(-9, min(22, params.txPowerDbm))), 0x04])
        let clamp = try readRegister(Self.txClampRegister, count: 1)[0]
        try writeRegister(Self.txClampRegister, [clamp | 0x1E])
        try writeRegister(Self.rxGainRegister, [rxBoostedGain ? Self.rxGainBoosted : Self.rxGainPowerSaving])
        try writeRegister(Self.retentionListRegister, [0x01, UInt8(Self.rxGainRegister >> 8), UInt8(Self.rxGainRegister & 0xFF)])
        try command(.setBufferBaseAddress, [0x00, 0x00])
        let m = Self.irqMask, d = Self.dio1Mask
        try command(.setDioIrqParams, [UInt8(m >> 8), UInt8(m & 0xFF), UInt8(d >> 8), UInt8(d & 0xFF), 0, 0, 0, 0])
        try command(.clearIrqStatus, [UInt8(Self.irqAll >> 8), UInt8(Self.irqAll & 0xFF)])
        try listen()
        transmitting = false
        waitingPacket = nil
        cadPacket = nil
        waitingForChannel = false
        lbtSince = nil
        activityAt = nil
        headerSeen = false
        deadlineToken &+= 1
        lastAlive = scheduler?.now
        armHealthCheck()
    }

    /// Reset, the chip check, the oscillator and calibration; returns the device errors after it.
    private func bringUp(tcxo: Double?) throws -> UInt16 {
        try board.reset(false)
        board.pause(microseconds: 1_000)
        try board.reset(true)
        board.pause(microseconds: 5_000)
        try command(.setStandby, [0x00])
        let s = try status()
        if s == 0x00 || s == 0xFF { throw SX1262Error.noChip(miso: s) }
        guard Self.chipMode(s) == 2 else { throw SX1262Error.badStatus(s) }
        let v = try readRegister(Self.versionRegister, count: 16)
        if v.allSatisfy({ $0 == 0x00 }) || v.allSatisfy({ $0 == 0xFF }) { throw SX1262Error.noChip(miso: v[0]) }
        version = String(decoding: v.prefix { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
        guard version.hasPrefix("SX126") else { throw SX1262Error.notSX126x(version) }
        try command(.clearDeviceErrors, [0x00, 0x00])
        if let v = tcxo, let code = Self.tcxoCode(v) {
            try command(.setDio3AsTcxoCtrl, [code, 0x00, 0x01, 0x40])  // 5 ms start-up (320 × 15.625 µs)
        }
        try command(.calibrate, [0x7F])
        // Calibrate(0x7F) leaves the image calibrated for 902-928 MHz: the band's own follows.
        try command(.calibrateImage, Self.imageCalibration(freqKHz: params.freqKHz))
        return try deviceErrors()
    }

    func listen() throws {
        try board.rfSwitch(rx: true, tx: false)
        try command(.setRx, [0xFF, 0xFF, 0xFF])  // continuous
    }

    /// Receives for `ms` only: the Timeout IRQ that ends it raises DIO1 (`node check`'s IRQ line check).
    public func startRxTimeout(ms: UInt64) throws {
        try command(.setStandby, [0x00])
        try command(.clearIrqStatus, [UInt8(Self.irqAll >> 8), UInt8(Self.irqAll & 0xFF)])
        try board.rfSwitch(rx: true, tx: false)
        try command(.setRx, Self.txTimeout(ms: ms))
    }

    /// Clears every IRQ bit (DIO1 falls).
    public func clearInterrupts() throws {
        try command(.clearIrqStatus, [UInt8(Self.irqAll >> 8), UInt8(Self.irqAll & 0xFF)])
    }
}

/// Radio parameters the SX1262 cannot take (a bandwidth it has no code for, SF or CR out of range).
public struct SX1262ParamError: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the SX1262 takes bandwidths 7.8 to 500 kHz of the LoRa set, SF 5-12 and CR 5-8" }
}

/// What an SX1262 counts as it runs.
public struct SX1262Counters: Sendable, Equatable {
    public var channelBusy = 0
    public var crcErrors = 0
    public var dropped = 0
}

extension SX1262 {
    public internal(set) var channelBusyCount: Int {
        get { counters.channelBusy }
        set { counters.channelBusy = newValue }
    }
    public internal(set) var crcErrors: Int {
        get { counters.crcErrors }
        set { counters.crcErrors = newValue }
    }
    public internal(set) var dropped: Int {
        get { counters.dropped }
        set { counters.dropped = newValue }
    }
}
