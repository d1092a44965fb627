import MeshAir
import MeshCompanion

/// The host side of MeshCore's KISS modem firmware, without I/O: a node's `RadioAir` on a modem.
/// Data frames carry raw packets, one pending for transmit at a time (the rest wait here for
/// TxDone, at most `maxQueued`, the oldest dropped); each received packet is followed by RxMeta
/// with its SNR × 4 and RSSI (turned on at `start` with SetSignalReport), and goes to the air then.
/// The modem answers SetHardware requests one by one, in order: OK and Error go to the oldest
/// request still waiting, any other answer to the oldest that expects its code (the ones before it
/// got none and are told so with Error, NoCallback).
public final class KISSHost {
    public let air: RadioAir
    /// Bytes to the modem.
    public var write: (([UInt8]) -> Void)?
    private var decoder = KISS.Decoder()
    private var txPending = false
    private var inFlight: [UInt8]? = nil
    private var queue: [[UInt8]] = []
    private var heldRx: [UInt8]? = nil
    public static let maxQueued = 8
    public private(set) var dropped = 0
    public private(set) var txDone = 0
    /// The modem's replies to SetHardware requests other than the ones handled here (for tests and logs).
    public var onReply: ((UInt8, [UInt8]) -> Void)?
    /// Requests waiting for their answer, oldest first, each with what takes the answer (its
    /// response code, or Error, and the data).
    private var awaiting: [(expect: UInt8, done: ((UInt8, [UInt8]) -> Void)?)] = []
    /// At most this many requests wait; past it a request is refused at once (Error, InvalidParam).
    public static let maxAwaiting = 32

    public init(air: RadioAir) { self.air = air }

    /// Sets the modem's radio parameters and TX power and turns signal reports on.
    public func start(params: RadioParams) {
        request(.setRadio, KISSModem.radioData(params))
        request(.setTxPower, [UInt8(bitPattern: params.txPowerDbm)])
        request(.setSignalReport, [1])
    }

    public func request(_ r: KISSModem.Request, _ data: [UInt8] = [], _ done: ((UInt8, [UInt8]) -> Void)? = nil) {
        // Reboot is answered by the modem going away, if at all.
        guard r != .reboot else { write?(KISSModem.frame(r.rawValue, data)); return }
        guard awaiting.count < Self.maxAwaiting, data.count < KISS.maxFrame - 1 else {
            done?(KISSModem.error, [KISSModem.ErrorCode.invalidParam.rawValue]); return
        }
        awaiting.append((Self.answer(to: r), done))
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
        for (type, data) in frames where type & 0xF0 == 0 {
            switch KISS.Command(rawValue: type & 0x0F) {
            case .data:
                deliverHeld()
                if !data.isEmpty { heldRx = data }
            case .setHardware:
                guard let sub = data.first else { continue }
                switch sub {
                case KISSModem.rxMeta where data.count >= 3:
                    if let p = heldRx {
                        heldRx = nil
                        air.heard(p, snr: Double(Int8(bitPattern: data[1])) / 4, rssi: Int(Int8(bitPattern: data[2])))
                    }
                case KISSModem.txDone:
                    txPending = false
                    inFlight = nil
                    txDone += 1
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

    /// A packet whose RxMeta did not come (signal reports off): delivered without SNR and RSSI.
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
        guard !txPending, !queue.isEmpty else { return }
        let p = queue.removeFirst()
        inFlight = p
        txPending = true
        write?(KISSModem.dataFrame(p))
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
