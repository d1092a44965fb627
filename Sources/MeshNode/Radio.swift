import MeshAir

/// LoRa settings of a simulated radio, in the companion protocol's units.
public struct RadioParams: Equatable, Sendable {
    public var freqKHz: UInt32 = 869_618
    public var bwHz: UInt32 = 62_500
    public var sf: UInt8 = 8
    public var cr: UInt8 = 5
    public var txPowerDbm: Int8 = 20

    public init() {}
    public init(freqKHz: UInt32, bwHz: UInt32, sf: UInt8, cr: UInt8, txPowerDbm: Int8 = 20) {
        self.freqKHz = freqKHz; self.bwHz = bwHz; self.sf = sf; self.cr = cr; self.txPowerDbm = txPowerDbm
    }
}

/// A packet waiting in a node's outbound queue.
struct Outbound {
    var bytes: [UInt8]
    var priority: UInt8
    var at: UInt64
    var seq: UInt64
    /// The packet's hash, if the node knew it when queueing.
    var hash: UInt64? = nil
}

/// The radio half of a node: outbound priority queue (fixed pool, dropped when full), retransmit
/// scheduling, listen-before-talk and the duty-cycle token bucket (`Dispatcher` in the firmware).
public final class Radio {
    // Stored properties in the order of use, as the layout follows it: with thousands of nodes a
    // radio is rarely in the caches, and a wake of listen-before-talk (most of a large mesh's
    // events) reads the first group, a reception the counters after it.
    public var params = RadioParams() { didSet { largestPacketAirtime = airtime(255) } }
    /// `airtime(255)` with the current settings (the queue asks on every wake): made again when they change.
    private(set) var largestPacketAirtime: UInt32 = LoRa.airtimeMs(bytes: 255, params: RadioParams())
    /// A reception (preamble heard) is in progress until this time.
    public var rxBusyUntil: UInt64 = 0
    /// The radio is transmitting until this time.
    public internal(set) var txUntil: UInt64 = 0
    /// The earliest `at` in the queue (`.max` when empty): whether anything is due is known
    /// without a scan.
    private(set) var queueDueAt: UInt64 = .max
    var wakeAt: UInt64 = .max
    var wakeToken: UInt64 = 0
    /// Airtime budget in ms.
    var budget: Double
    var budgetAt: UInt64 = 0
    /// Duty cycle = 1 / (1 + airtimeFactor).
    public var airtimeFactor: Double = 1.0
    /// Since when listen-before-talk has been deferring, if it is.
    var lbtSince: UInt64? = nil

    // Counters (RepeaterStats / GET_STATS). Those every reception changes come first, side by
    // side (40 bytes): with thousands of nodes a reception finds few of them in the caches.
    public internal(set) var nRecv: UInt32 = 0
    public internal(set) var recvFlood: UInt32 = 0
    public internal(set) var recvDirect: UInt32 = 0
    public internal(set) var directDups: UInt16 = 0
    public internal(set) var floodDups: UInt16 = 0
    public var rxAirMs: UInt64 = 0
    /// SNR and RSSI of the last packet heard.
    public internal(set) var lastHeard: (snr: Double, rssi: Int) = (0, 0)
    public internal(set) var lastSNR: Double { get { lastHeard.snr } set { lastHeard.snr = newValue } }
    public internal(set) var lastRSSI: Int { get { lastHeard.rssi } set { lastHeard.rssi = newValue } }
    public internal(set) var nSent: UInt32 = 0
    public internal(set) var sentFlood: UInt32 = 0
    public internal(set) var sentDirect: UInt32 = 0
    public internal(set) var txAirMs: UInt64 = 0
    public internal(set) var dropped: UInt32 = 0
    public var errEvents: UInt16 = 0
    /// What the driver of a real radio recovered from (`stats-recovery`); nil on the simulated air.
    public var driverRecoveries: (() -> RadioRecoveries)?

    /// Packet pool size: 16 on companions, 32 on repeaters.
    public let poolSize: Int
    public var rxDelayBase: Double = 0
    var queue: [Outbound] = [] { didSet { queueDueAt = queue.reduce(UInt64.max) { min($0, $1.at) } } }
    var seq: UInt64 = 0
    /// The hash of the packet last put on air, if the node knew it (see `Node.enqueue`).
    public internal(set) var txHash: UInt64? = nil

    static let windowMs: Double = 3_600_000

    init(poolSize: Int) {
        self.poolSize = poolSize
        budget = Radio.windowMs * 0.5
    }

    var duty: Double { 1.0 / (1.0 + max(0, airtimeFactor)) }

    public var queueLength: Int { queue.count }

    func reset() {
        queue.removeAll(); txUntil = 0; lbtSince = nil; wakeAt = .max; wakeToken &+= 1
        clearStats()
    }

    /// Zeroes the counters (`clear stats`).
    func clearStats() {
        nSent = 0; nRecv = 0; sentFlood = 0; sentDirect = 0; recvFlood = 0; recvDirect = 0
        txAirMs = 0; rxAirMs = 0; dropped = 0; errEvents = 0; directDups = 0; floodDups = 0
    }

    /// Time on air in ms of an `n`-byte LoRa packet with these settings (Semtech formula,
    /// explicit header, CRC on; preamble 32 symbols for SF ≤ 8, else 16).
    public func airtime(_ n: Int) -> UInt32 { LoRa.airtimeMs(bytes: n, params: params) }

    func refill(now: UInt64) {
        if now > budgetAt {
            budget = min(Radio.windowMs * duty, budget + Double(now - budgetAt) * duty)
        }
        budgetAt = now
    }
}

public enum LoRa {
    /// Time on air in whole ms (MeshAir's Semtech formula with these settings).
    public static func airtimeMs(bytes n: Int, params p: RadioParams) -> UInt32 {
        LoRaSettings(spreadingFactor: Int(p.sf), bandwidthHz: Int(p.bwHz), codingRate: Int(p.cr)).airtimeMilliseconds(length: n)
    }
}
