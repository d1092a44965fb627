import MeshAir

/// The air of one real radio (a KISS modem, an SX1262, the simulator's air socket): a single node
/// on it, driven by a radio driver and the host's clock.
///
/// The node's queue (priorities, retransmit delays, listen-before-talk, duty cycle) decides when a
/// packet goes out; `send` then hands it to the driver, which starts transmitting it. What the
/// radio hears comes in through `heard`; channel activity the radio reports, through
/// `channelBusy`. The shell runs `scheduler` up to the host's monotonic clock after every wake-up
/// and sleeps until `scheduler.nextDeadline`: the node never polls.
public final class RadioAir: Air {
    public private(set) var node: Node?
    /// Starts transmitting one raw packet (set by the shell to its radio's transmit).
    public var send: (([UInt8]) -> Void)?
    public private(set) var sentCount: UInt64 = 0
    public private(set) var heardCount: UInt64 = 0
    /// Each packet heard, with its SNR (dB) and RSSI (dBm), before the node has it (the observer uploader).
    public var onHeard: (([UInt8], Double, Int) -> Void)?

    /// `start`: the host's monotonic clock now, in ms; `epochNow`: wall-clock epoch seconds now.
    public init(seed: UInt64, start: UInt64, epochNow: UInt32) {
        super.init(seed: seed, epochBase: epochNow &- UInt32(truncatingIfNeeded: start / 1000), start: start)
    }

    /// Shares another air's clock (tests run a real node's code against the simulator in one
    /// virtual time).
    public init(seed: UInt64, scheduler: Scheduler, epochBase: UInt32) {
        super.init(seed: seed, epochBase: epochBase, scheduler: scheduler)
    }

    public override func register(_ node: Node) -> Int {
        precondition(self.node == nil, "one node per radio")
        self.node = node
        return 0
    }

    public override func transmit(from sender: Node, bytes: [UInt8], airtime: UInt64) -> Bool {
        sentCount &+= 1
        send?(bytes)
        return false
    }

    /// A packet the radio received intact, with its SNR (dB) and RSSI (dBm).
    public func heard(_ bytes: [UInt8], snr: Double, rssi: Int) {
        guard let node, !bytes.isEmpty else { return }
        heardCount &+= 1
        onHeard?(bytes, snr, rssi)
        deliver(to: node, bytes: bytes, snr: snr, rssi: rssi, airtime: UInt64(node.radio.airtime(bytes.count)))
    }

    /// The radio saw the channel busy (a preamble, or its carrier sense) for `ms` from now:
    /// listen-before-talk waits.
    public func channelBusy(for ms: UInt64) {
        guard let node else { return }
        let until = now &+ ms
        if node.radio.rxBusyUntil < until { node.radio.rxBusyUntil = until }
    }

    /// Runs every timer due by `time` (the host's monotonic ms).
    public func run(until time: UInt64) { scheduler.run(until: time) }

    /// The next time the node has something to do, if any.
    public var nextDeadline: UInt64? { scheduler.nextDeadline }
}
