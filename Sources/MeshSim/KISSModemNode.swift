import MeshAir
import MeshCompanion
import MeshNode
import struct MeshNode.RadioParams

/// A radio running MeshCore's KISS modem firmware on the simulated air: the host (over the real-time
/// host's pseudo-terminal) sends data frames, one pending at a time (TxBusy otherwise), which go out
/// with this node's links, time on air and listen-before-talk, then TxDone; what the node hears
/// comes back as a data frame followed by RxMeta (SNR × 4, RSSI). SetHardware requests are answered
/// as the firmware answers them: identity, signing, key exchange and hashing with the modem's key,
/// radio parameters (which set the channel this node hears), TX power, channel busy, airtime, noise
/// floor, version, stats, battery, ping, signal report and capabilities. GetRadio answers zeros
/// until SetRadio (as the firmware's, whose settings live in RAM). The KISS timing is the
/// firmware's: a data frame waits its TXDELAY (default 500 ms) and, while the persistence lottery
/// says so, slot times (default p = 64/256, 100 ms slots) before it goes.
/// `faults` makes it misbehave as modems in the field do.
public final class KISSModemNode: SimNode {
    public let identity: LocalIdentity
    /// Bytes to the host.
    public var onWrite: (([UInt8]) -> Void)?
    public static let firmwareVersion: UInt8 = 2
    public var faults = KISSModemFaults()
    private var decoder = KISS.Decoder()
    private var pendingTX = false
    private var signalReport = true
    /// SetRadio was given since the last boot.
    private var configured = false
    /// The radio settings it boots with (its firmware's own).
    public var powerOnParams: RadioParams
    /// The KISS timing (10 ms units), as the firmware's defaults until the host sets them.
    public private(set) var txDelay: UInt8 = 50
    public private(set) var persistence: UInt8 = 63
    public private(set) var slotTime: UInt8 = 10
    public private(set) var rxCount: UInt32 = 0
    public private(set) var txCount: UInt32 = 0
    public private(set) var errorCount: UInt32 = 0
    /// Packets the modem started sending, and packets it heard, since it was made (the faults count these).
    public private(set) var txStarted = 0
    public private(set) var rxHeard = 0
    /// Boots (reboots and resets) since it was made.
    public private(set) var boots = 0

    init(mesh: SimMesh, name: String, identity: LocalIdentity) {
        self.identity = identity
        powerOnParams = RadioParams()
        super.init(mesh: mesh, name: name, role: .kiss, poolSize: 1)
        powerOnParams = radio.params
    }

    /// Whether the modem answers at all now (not silent, not hung, powered).
    private var answering: Bool {
        !faults.silent && powered && !(faults.hangAfterTx.map { txStarted >= $0 } ?? false)
    }

    /// Bytes from the host.
    public func receive<C: Collection<UInt8>>(_ bytes: C) {
        guard answering else { return }
        var frames: [(UInt8, [UInt8])] = []
        decoder.feed(bytes) { frames.append(($0, $1)) }
        for (type, data) in frames where type & 0xF0 == 0 { handle(command: type & 0x0F, data) }
    }

    private func write(_ bytes: [UInt8]) { if answering { onWrite?(bytes) } }
    private func reply(_ sub: UInt8, _ data: [UInt8] = []) { write(KISSModem.frame(sub, data)) }
    private func fail(_ e: KISSModem.ErrorCode) { reply(KISSModem.error, [e.rawValue]) }

    private func handle(command: UInt8, _ data: [UInt8]) {
        switch KISS.Command(rawValue: command) {
        case .data:
            guard !data.isEmpty, data.count <= 255 else { return }  // larger frames are dropped
            guard !pendingTX else { fail(.txBusy); return }
            pendingTX = true
            if !enqueue(data, priority: 0, delay: keyUpDelay()) { pendingTX = false; fail(.txBusy) }
        case .setHardware:
            guard let sub = data.first else { return }
            hardware(sub, Array(data.dropFirst()))
        case .txDelay: if let v = data.first { txDelay = v }
        case .persistence: if let v = data.first { persistence = v }
        case .slotTime: if let v = data.first { slotTime = v }
        default:
            break  // TX tail, full duplex: nothing to model
        }
    }

    /// The firmware's wait before a packet keys up: slot times while the persistence lottery
    /// (a random byte above `persistence`) says wait, then TXDELAY.
    private func keyUpDelay() -> UInt64 {
        var ms = UInt64(txDelay) * 10
        for _ in 0..<64 where UInt8(truncatingIfNeeded: rng.next()) > persistence { ms += UInt64(slotTime) * 10 }
        return ms
    }

    override public func willTransmit(_ bytes: [UInt8]) {
        txStarted += 1
        let n = txStarted
        let air = UInt64(radio.airtime(bytes.count))
        if faults.resetInTx.contains(n) {
            // Power lost (or a watchdog reset) half way through the packet: no TxDone, and the
            // modem comes back without its settings.
            mesh.scheduler.after(air / 2) { [weak self] in self?.reboot(downtime: 200) }
            return
        }
        mesh.scheduler.after(air) { [weak self] in
            guard let self, self.pendingTX, self.powered else { return }
            self.pendingTX = false
            self.txCount &+= 1
            if !self.faults.dropTxDone.contains(n) { self.reply(KISSModem.txDone, [0x01]) }
        }
    }

    override public func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        rxCount &+= 1
        rxHeard += 1
        write(KISSModem.dataFrame(bytes))
        if signalReport && !faults.dropRxMeta.contains(rxHeard) { reply(KISSModem.rxMeta, KISSModem.rxMetaData(snr: snr, rssi: rssi)) }
    }

    override public func boot() {
        boots += 1
        pendingTX = false
        signalReport = true
        configured = false
        radio.params = powerOnParams
        txDelay = 50; persistence = 63; slotTime = 10
    }

    private func hardware(_ sub: UInt8, _ d: [UInt8]) {
        guard let r = KISSModem.Request(rawValue: sub) else { fail(.unknownCmd); return }
        let code = KISSModem.response(r)
        switch r {
        case .getIdentity: reply(code, identity.publicKey.bytes)
        case .getRandom:
            guard let n = d.first, (1...64).contains(n) else { fail(.invalidParam); return }
            reply(code, (0..<Int(n)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        case .verifySignature:
            guard d.count >= 96, let key = PublicKey(d[0..<32]) else { fail(.invalidLength); return }
            reply(code, [key.isValidSignature(d[32..<96], for: d[96...]) ? 1 : 0])
        case .signData:
            guard !d.isEmpty else { fail(.invalidLength); return }
            reply(code, identity.sign(d))
        case .keyExchange:
            guard d.count >= 32, let key = PublicKey(d[0..<32]) else { fail(.invalidLength); return }
            guard let s = try? identity.sharedSecret(with: key) else { fail(.invalidParam); return }
            reply(code, s.bytes)
        case .hash: reply(code, Digest.sha256(d))
        case .setRadio:
            guard let p = KISSModem.radioParams(d, txPowerDbm: radio.params.txPowerDbm) else { fail(d.count < 10 ? .invalidLength : .invalidParam); return }
            radio.params = p
            configured = true
            reply(KISSModem.ok)
        case .setTxPower:
            guard let p = d.first else { fail(.invalidLength); return }
            radio.params.txPowerDbm = Int8(bitPattern: p)
            reply(KISSModem.ok)
        case .getRadio: reply(code, configured ? KISSModem.radioData(radio.params) : [UInt8](repeating: 0, count: 10))
        case .getTxPower: reply(code, [UInt8(bitPattern: radio.params.txPowerDbm)])
        case .getCurrentRssi: reply(code, [UInt8(bitPattern: Int8(radio.rxBusyUntil > now ? -90 : -120))])
        case .isChannelBusy: reply(code, [radio.rxBusyUntil > now ? 1 : 0])
        case .getAirtime:
            guard let n = d.first else { fail(.invalidLength); return }
            var out: [UInt8] = []
            let ms = radio.airtime(Int(n))
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: ms >> (8 * UInt32(i)))) }
            reply(code, out)
        case .getNoiseFloor: reply(code, [0x88, 0xFF])  // -120 dBm
        case .getVersion: reply(code, [Self.firmwareVersion, 0])
        case .getStats:
            var out: [UInt8] = []
            for v in [rxCount, txCount, errorCount] { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
            reply(code, out)
        case .getBattery: reply(code, [0x36, 0x10])  // 4150 mV
        case .getDeviceName: reply(code, Array(name.utf8))
        case .ping: reply(code)
        case .reboot: reboot()
        case .setSignalReport:
            guard let e = d.first else { fail(.invalidLength); return }
            signalReport = e != 0
            reply(KISSModem.response(.getSignalReport), [signalReport ? 1 : 0])
        case .getSignalReport: reply(code, [signalReport ? 1 : 0])
        case .getCapabilities: reply(code, [0x01, 0, 0, 0])
        case .encryptData, .decryptData, .getMCUTemp, .getSensors: fail(.unsupported)
        }
    }
}

/// What a simulated KISS modem does wrong (a topology's `"faults"` on a `"role": "kiss"` node):
/// `{"drop_tx_done": [1], "reset_in_tx": [2], "drop_rx_meta": [1], "hang_after_tx": 3, "silent": true}`.
/// Packets are counted from 1, the first the modem sends (or hears) since it was made.
public struct KISSModemFaults: Equatable, Sendable {
    /// The TxDone of these packets never comes (the packet goes out).
    public var dropTxDone: Set<Int> = []
    /// The modem resets half way through sending these packets: no TxDone, and it comes back
    /// 200 ms later without its settings.
    public var resetInTx: Set<Int> = []
    /// The RxMeta after these received packets never comes.
    public var dropRxMeta: Set<Int> = []
    /// After starting this many packets the modem hangs: it answers nothing and sends nothing.
    public var hangAfterTx: Int? = nil
    /// The modem never answers (a port that says nothing).
    public var silent = false

    public init() {}

    public var isEmpty: Bool { self == KISSModemFaults() }
}
