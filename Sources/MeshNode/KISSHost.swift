import MeshAir
import MeshCompanion

/// The host side of MeshCore's KISS modem firmware, without I/O: a node's `RadioAir` on a modem.
/// Data frames carry raw packets, one pending for transmit at a time (the rest wait here for
/// TxDone, at most `maxQueued`, the oldest dropped); each received packet is followed by RxMeta
/// with its SNR × 4 and RSSI (turned on at `start` with SetSignalReport), and goes to the air then
/// (or without them, `rxMetaWaitMs` later, when the RxMeta does not come).
/// The modem answers SetHardware requests one by one, in order: OK and Error go to the oldest
/// request still waiting, any other answer to the oldest that expects its code (the ones before it
/// got none and are told so with Error, NoCallback).
///
/// Every wait on the modem has a deadline on the air's clock: a TxDone that does not come within
/// `txTimeoutMs` (the packet's airtime × 1.5, as the firmware's Dispatcher gives up on a send, plus
/// the modem's own wait for a clear channel and a margin) gives the packet up and asks the modem
/// for its radio settings (GetRadio); the next packet goes once it answers. Settings that are gone
/// mean the modem rebooted: it is set up again. No answer to `probeAttempts` GetRadio, each
/// `probeTimeoutMs` apart, and `onDead` says the modem is gone.
public final class KISSHost {
    public let air: RadioAir
    /// Bytes to the modem.
    public var write: (([UInt8]) -> Void)?
    private var decoder = KISS.Decoder()
    private var txPending = false
    private var inFlight: [UInt8]? = nil
    private var queue: [[UInt8]] = []
    private var heldRx: [UInt8]? = nil
    private var heldToken: UInt64 = 0
    public static let maxQueued = 8
    public private(set) var dropped = 0
    public private(set) var txDone = 0
    /// The modem's replies to SetHardware requests other than the ones handled here (for tests and logs).
    public var onReply: ((UInt8, [UInt8]) -> Void)?
    /// Requests waiting for their answer, oldest first, each with when it was made and what takes
    /// the answer (its response code, or Error, and the data).
    private var awaiting: [(expect: UInt8, at: UInt64, done: ((UInt8, [UInt8]) -> Void)?)] = []
    /// At most this many requests wait; past it a request is refused at once (Error, InvalidParam).
    public static let maxAwaiting = 32
    /// A request still unanswered this long after it was made is given up (Error, NoCallback)
    /// when the next one is made: a lost answer does not hold a place for ever.
    public static let requestLifetimeMs: UInt64 = 30_000

    /// The KISS parameters the modem is given at start, from the node's own timing: the node
    /// already spreads its transmissions (the firmware's retransmit delays) and holds them while
    /// it hears a packet, so the modem keys up at once (TXDELAY 0, not its 500 ms), sends as soon
    /// as its channel is clear (persistence 255: p = 1, no CSMA lottery) and, were persistence
    /// lowered, would wait the node's listen-before-talk step (slot time 120 ms). Units of 10 ms.
    public static let txDelay: UInt8 = 0
    public static let persistence: UInt8 = 255
    public static let slotTime: UInt8 = 12
    /// On top of the airtime deadlines: the serial link and the modem's loop.
    public static let txMarginMs: UInt64 = 1_000
    /// How long a received packet waits for its RxMeta.
    public static let rxMetaWaitMs: UInt64 = 250
    /// How long each GetRadio of a health check waits, and how many are sent.
    public static let probeTimeoutMs: UInt64 = 2_000
    public static let probeAttempts = 3

    /// What was recovered from, counted.
    public private(set) var recoveries = RadioRecoveries()
    /// Each recovery, once, with a sentence for the log.
    public var onRecovery: ((RadioRecovery, String) -> Void)?
    /// The modem stopped answering: the node cannot go on (the shell stops it with this sentence).
    public var onDead: ((String) -> Void)?
    /// When the modem last sent a frame (the air's clock), if ever.
    public private(set) var lastHeard: UInt64? = nil
    /// The radio settings last given to the modem.
    public private(set) var configured: RadioParams? = nil
    private var signalReports = false
    private var txToken: UInt64 = 0
    private var probing: (token: UInt64, attempt: Int, why: String)? = nil
    private var probeToken: UInt64 = 0

    public init(air: RadioAir) { self.air = air }

    /// Sets the modem's KISS timing, its radio parameters and TX power, and turns signal reports on.
    public func start(params: RadioParams) {
        configure(params)
    }

    private func configure(_ p: RadioParams) {
        configured = p
        write?(KISS.frame(type: KISS.Command.txDelay.rawValue, [Self.txDelay]))
        write?(KISS.frame(type: KISS.Command.persistence.rawValue, [Self.persistence]))
        write?(KISS.frame(type: KISS.Command.slotTime.rawValue, [Self.slotTime]))
        request(.setRadio, KISSModem.radioData(p))
        request(.setTxPower, [UInt8(bitPattern: p.txPowerDbm)])
        request(.setSignalReport, [1]) { [weak self] code, data in
            self?.signalReports = code == KISSModem.response(.getSignalReport) && data.first == 1
        }
    }

    /// The node's radio settings now (they change with `tempradio`).
    private var wanted: RadioParams { air.node?.radio.params ?? configured ?? RadioParams() }

    public func request(_ r: KISSModem.Request, _ data: [UInt8] = [], _ done: ((UInt8, [UInt8]) -> Void)? = nil) {
        // Reboot is answered by the modem going away, if at all.
        guard r != .reboot else { write?(KISSModem.frame(r.rawValue, data)); return }
        let now = air.now
        if let first = awaiting.first, now &- first.at > Self.requestLifetimeMs {
            let stale = awaiting.prefix { now &- $0.at > Self.requestLifetimeMs }.map(\.done)
            awaiting.removeFirst(stale.count)
            for d in stale { d?(KISSModem.error, [KISSModem.ErrorCode.noCallback.rawValue]) }
        }
        guard awaiting.count < Self.maxAwaiting, data.count < KISS.maxFrame - 1 else {
            done?(KISSModem.error, [KISSModem.ErrorCode.invalidParam.rawValue]); return
        }
        awaiting.append((Self.answer(to: r), now, done))
        write?(KISSModem.frame(r.rawValue, data))
    }

    /// The response code a request is answered with when it succeeds.
    static func answer(to r: KISSModem.Request) -> UInt8 {
        switch r {
        case .setRadio, .setTxPower: return KISSModem.ok
        case .setSignalReport: return KISSModem.response(.getSignalReport)
        default: return KISSModem.response(r)
        }
    }

    /// Hands an answer to the request it belongs to (none: unsolicited, or nobody waits for it).
    private func answer(_ code: UInt8, _ data: [UInt8]) {
        let at = code == KISSModem.ok || code == KISSModem.error ? (awaiting.isEmpty ? nil : 0)
            : awaiting.firstIndex { $0.expect == code }
        guard let at else { return }
        let skipped = awaiting[..<at].map(\.done)
        let done = awaiting[at].done
        awaiting.removeFirst(at + 1)
        for d in skipped { d?(KISSModem.error, [KISSModem.ErrorCode.noCallback.rawValue]) }
        done?(code, data)
    }

    /// Every request still waiting is told it gets no answer (the modem that had them rebooted).
    private func forgetRequests() {
        let all = awaiting.map(\.done)
        awaiting.removeAll()
        for d in all { d?(KISSModem.error, [KISSModem.ErrorCode.noCallback.rawValue]) }
    }

    /// Asks the modem for its public key (GetIdentity).
    public func identity(_ done: @escaping (PublicKey?) -> Void) {
        request(.getIdentity) { code, data in
            done(code == KISSModem.response(.getIdentity) ? try? PublicKey(air: data) : nil)
        }
    }

    /// Bytes from the modem.
    public func receive<C: Collection<UInt8>>(_ bytes: C) {
        var frames: [(UInt8, [UInt8])] = []
        decoder.feed(bytes) { frames.append(($0, $1)) }
        if !frames.isEmpty { lastHeard = air.now }
        for (type, data) in frames where type & 0xF0 == 0 {
            switch KISS.Command(rawValue: type & 0x0F) {
            case .data:
                deliverHeld()
                if !data.isEmpty { hold(data) }
            case .setHardware:
                guard let sub = data.first else { continue }
                switch sub {
                case KISSModem.rxMeta where data.count >= 3:
                    if let p = heldRx {
                        heldRx = nil
                        air.heard(p, snr: Double(Int8(bitPattern: data[1])) / 4, rssi: Int(Int8(bitPattern: data[2])))
                    }
                case KISSModem.txDone:
                    guard txPending else { continue }  // late, for a packet already given up
                    let n = inFlight?.count ?? 0
                    txPending = false
                    inFlight = nil
                    txToken &+= 1
                    if data.count >= 2 && data[1] == 0 {
                        recover(.txFailure, "the modem reports that a \(n)-byte packet was not sent (TxDone 0: its radio refused it or timed out); the next one goes")
                    } else {
                        txDone += 1
                    }
                    sendNext()
                case KISSModem.error where data.count >= 2 && data[1] == KISSModem.ErrorCode.txBusy.rawValue:
                    // The modem still has a packet of its own (or of a host before us): ours waits for its TxDone.
                    if let p = inFlight { queue.insert(p, at: 0); inFlight = nil }
                default:
                    let reply = Array(data.dropFirst())
                    answer(sub, reply)
                    onReply?(sub, reply)
                }
            default:
                break
            }
        }
    }

    /// A received packet waits for its RxMeta, at most `rxMetaWaitMs`.
    private func hold(_ packet: [UInt8]) {
        heldRx = packet
        heldToken &+= 1
        let token = heldToken
        air.scheduler.after(Self.rxMetaWaitMs) { [weak self] in
            guard let self, self.heldToken == token, self.heldRx != nil else { return }
            if self.signalReports {
                self.recover(.rxRecovery, "a received \(packet.count)-byte packet's RxMeta did not come within \(Self.rxMetaWaitMs) ms; it goes on without SNR and RSSI")
            }
            self.deliverHeld()
        }
    }

    /// A packet whose RxMeta did not come (signal reports off, or lost): delivered without SNR and RSSI.
    private func deliverHeld() {
        if let p = heldRx { heldRx = nil; air.heard(p, snr: 0, rssi: 0) }
    }

    /// A packet from the node, to transmit.
    public func send(_ packet: [UInt8]) {
        if queue.count >= Self.maxQueued { queue.removeFirst(); dropped += 1 }
        queue.append(packet)
        sendNext()
    }

    private func sendNext() {
        guard !txPending, probing == nil, !queue.isEmpty else { return }
        if let c = configured, c != wanted { configure(wanted) }  // the node's settings changed (tempradio)
        let p = queue.removeFirst()
        inFlight = p
        txPending = true
        write?(KISSModem.dataFrame(p))
        txToken &+= 1
        let token = txToken, ms = txTimeoutMs(bytes: p.count)
        air.scheduler.after(ms) { [weak self] in
            guard let self, self.txToken == token, self.txPending else { return }
            self.txPending = false
            self.inFlight = nil
            self.recover(.txTimeout, "no TxDone \(ms) ms after a \(p.count)-byte packet went to the modem; the packet is given up and the modem asked for its settings before the next one goes")
            self.probe("no TxDone within \(ms) ms")
        }
    }

    /// How long a packet of `n` bytes may take from the host to its TxDone: its airtime × 1.5 (the
    /// modem's own send timeout), the modem's wait for a clear channel (at most the longest
    /// packet's airtime × 1.5), TXDELAY, and `txMarginMs`.
    public func txTimeoutMs(bytes n: Int) -> UInt64 {
        let p = wanted
        let own = UInt64(LoRa.airtimeMs(bytes: n, params: p)), longest = UInt64(LoRa.airtimeMs(bytes: 255, params: p))
        return (own * 3 + longest * 3) / 2 + UInt64(Self.txDelay) * 10 + Self.txMarginMs
    }

    // MARK: health

    /// Asks the modem for its radio settings (a health check): an answer shows it alive, and
    /// settings that are not the ones given show it rebooted (it is set up again); no answer and
    /// `onDead` is called. Nothing goes to the air meanwhile. One check at a time.
    public func probe(_ why: String) {
        guard probing == nil else { return }
        probeToken &+= 1
        probing = (probeToken, 1, why)
        sendProbe()
    }

    /// Whether a health check is under way.
    public var isProbing: Bool { probing != nil }

    private func sendProbe() {
        guard let pr = probing else { return }
        let token = pr.token, attempt = pr.attempt
        request(.getRadio) { [weak self] code, data in self?.probeAnswered(token, code, data) }
        air.scheduler.after(Self.probeTimeoutMs) { [weak self] in
            guard let self, let pr = self.probing, pr.token == token, pr.attempt == attempt else { return }
            guard attempt < Self.probeAttempts else {
                self.probing = nil
                self.onDead?("the KISS modem stopped answering: \(pr.why), and no answer to \(Self.probeAttempts) GetRadio requests \(Self.probeTimeoutMs / 1000) s apart; check its power, its cable and that it still runs the KISS modem firmware")
                return
            }
            self.probing = (token, attempt + 1, pr.why)
            self.sendProbe()
        }
    }

    private func probeAnswered(_ token: UInt64, _ code: UInt8, _ data: [UInt8]) {
        guard let pr = probing, pr.token == token, code == KISSModem.response(.getRadio) else { return }
        probing = nil
        let want = configured ?? wanted
        let got = KISSModem.radioParams(data, txPowerDbm: want.txPowerDbm)
        if got.map({ $0.freqKHz != want.freqKHz || $0.bwHz != want.bwHz || $0.sf != want.sf || $0.cr != want.cr }) ?? true {
            let had = got.map { "\(Double($0.freqKHz) / 1000) MHz SF\($0.sf)" } ?? "no radio settings"
            recover(.modemReset, "the modem answered with \(had) (\(pr.why)): it rebooted; its KISS timing, radio settings, TX power and signal reports are set again")
            forgetRequests()
            configure(wanted)
        }
        sendNext()
    }

    private func recover(_ r: RadioRecovery, _ text: String) {
        recoveries[r] &+= 1
        onRecovery?(r, text)
    }
}

/// The identity of the modem under a `KISSHost` (`pocketmesh node --identity modem`): the node's
/// key is the modem's; signatures come from SignData and shared secrets from KeyExchange.
public final class KISSModemIdentity: RemoteIdentity {
    public let publicKey: PublicKey
    public let host: KISSHost

    public init(publicKey: PublicKey, host: KISSHost) {
        self.publicKey = publicKey
        self.host = host
    }

    public func sign(_ message: [UInt8], _ done: @escaping ([UInt8]?) -> Void) {
        host.request(.signData, message) { code, data in
            done(code == KISSModem.response(.signData) && data.count == AirLimits.signatureSize ? data : nil)
        }
    }

    public func keyExchange(with peer: PublicKey, _ done: @escaping (SharedSecret?) -> Void) {
        host.request(.keyExchange, peer.bytes) { code, data in
            done(code == KISSModem.response(.keyExchange) ? try? SharedSecret(data) : nil)
        }
    }
}
