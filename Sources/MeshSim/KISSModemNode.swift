import MeshAir
import MeshCompanion
import MeshNode

/// A radio running MeshCore's KISS modem firmware on the simulated air: the host (over the real-time
/// host's pseudo-terminal) sends data frames, one pending at a time (TxBusy otherwise), which go out
/// with this node's links, time on air and listen-before-talk, then TxDone; what the node hears
/// comes back as a data frame followed by RxMeta (SNR × 4, RSSI). SetHardware requests are answered
/// as the firmware answers them: identity, signing, key exchange and hashing with the modem's key,
/// radio parameters (which set the channel this node hears), TX power, channel busy, airtime, noise
/// floor, version, stats, battery, ping, signal report and capabilities.
public final class KISSModemNode: SimNode {
    public let identity: LocalIdentity
    /// Bytes to the host.
    public var onWrite: (([UInt8]) -> Void)?
    public static let firmwareVersion: UInt8 = 2
    private var decoder = KISS.Decoder()
    private var pendingTX = false
    private var signalReport = true
    public private(set) var rxCount: UInt32 = 0
    public private(set) var txCount: UInt32 = 0
    public private(set) var errorCount: UInt32 = 0

    init(mesh: SimMesh, name: String, identity: LocalIdentity) {
        self.identity = identity
        super.init(mesh: mesh, name: name, role: .kiss, poolSize: 1)
    }

    /// Bytes from the host.
    public func receive<C: Collection<UInt8>>(_ bytes: C) {
        var frames: [(UInt8, [UInt8])] = []
        decoder.feed(bytes) { frames.append(($0, $1)) }
        for (type, data) in frames where type & 0xF0 == 0 { handle(command: type & 0x0F, data) }
    }

    private func write(_ bytes: [UInt8]) { onWrite?(bytes) }
    private func reply(_ sub: UInt8, _ data: [UInt8] = []) { write(KISSModem.frame(sub, data)) }
    private func fail(_ e: KISSModem.ErrorCode) { reply(KISSModem.error, [e.rawValue]) }

    private func handle(command: UInt8, _ data: [UInt8]) {
        switch KISS.Command(rawValue: command) {
        case .data:
            guard !data.isEmpty, data.count <= 255 else { return }  // larger frames are dropped
            guard !pendingTX else { fail(.txBusy); return }
            pendingTX = true
            if !enqueue(data, priority: 0) { pendingTX = false; fail(.txBusy) }
        case .setHardware:
            guard let sub = data.first else { return }
            hardware(sub, Array(data.dropFirst()))
        default:
            break  // TXDELAY, persistence, slot time, TX tail, full duplex: the simulated radio's own timing stands
        }
    }

    override public func willTransmit(_ bytes: [UInt8]) {
        let air = UInt64(radio.airtime(bytes.count))
        mesh.scheduler.after(air) { [weak self] in
            guard let self, self.pendingTX else { return }
            self.pendingTX = false
            self.txCount &+= 1
            self.reply(KISSModem.txDone, [0x01])
        }
    }

    override public func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {
        rxCount &+= 1
        write(KISSModem.dataFrame(bytes))
        if signalReport { reply(KISSModem.rxMeta, KISSModem.rxMetaData(snr: snr, rssi: rssi)) }
    }

    override public func boot() {
        pendingTX = false
        signalReport = true
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
            reply(KISSModem.ok)
        case .setTxPower:
            guard let p = d.first else { fail(.invalidLength); return }
            radio.params.txPowerDbm = Int8(bitPattern: p)
            reply(KISSModem.ok)
        case .getRadio: reply(code, KISSModem.radioData(radio.params))
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
