import MeshAir

/// What nodes transmit into and hear from, with the clock that drives them: the simulator's air
/// (`SimMesh`, many nodes in virtual time) or one real radio (`RadioAir`, one node in wall-clock
/// time). Time is milliseconds on `scheduler`'s clock; every node's timer is an event on it.
open class Air: TimerTarget {
    public let scheduler: Scheduler
    public var rng: SimRandom
    /// Wall-clock epoch seconds at time 0 of `scheduler`; nodes' clocks start from it.
    public var epochBase: UInt32

    public init(seed: UInt64, epochBase: UInt32, start: UInt64 = 0) {
        self.rng = SimRandom(seed: seed)
        self.scheduler = Scheduler(start: start)
        self.epochBase = epochBase
        super.init()
    }

    /// An air on another air's clock.
    public init(seed: UInt64, epochBase: UInt32, scheduler: Scheduler) {
        self.rng = SimRandom(seed: seed)
        self.scheduler = scheduler
        self.epochBase = epochBase
        super.init()
    }

    public var now: UInt64 { scheduler.now }

    /// Epoch seconds at the current time.
    public var epochNow: UInt32 { epochBase &+ UInt32(truncatingIfNeeded: scheduler.now / 1000) }

    /// A node joins this air; returns its index.
    open func register(_ node: Node) -> Int { 0 }

    /// Puts a packet on the air from `sender` for `airtime` ms (the radio is busy until then).
    /// Returns true when the air itself calls `sender.timerFired(Node.transmissionEndToken)` at
    /// the end (as the next event after the receptions end); false, and the sender sets that timer.
    @discardableResult
    open func transmit(from sender: Node, bytes: [UInt8], airtime: UInt64) -> Bool { false }

    /// The hash of the packet being delivered; an air that delivers one packet to many nodes at
    /// once may compute it once for all of them.
    open func deliveryHash(_ compute: () -> UInt64) -> UInt64 { compute() }

    /// An advert a node on this air signed itself (valid by construction).
    open func markAdvertValid(hash: UInt64) {}

    /// Whether an advert's signature holds (an air may remember checks already made).
    open func advertIsValid(_ advert: Advert, hash: UInt64) -> Bool { advert.isValid }

    /// A packet heard intact by `node`: counted, then handed to the node.
    public func deliver(to node: Node, bytes: [UInt8], snr: Double, rssi: Int, airtime: UInt64) {
        guard node.powered else { return }
        node.radio.rxAirMs &+= airtime
        node.radioReceived(bytes, snr: snr, rssi: rssi)
    }
}
