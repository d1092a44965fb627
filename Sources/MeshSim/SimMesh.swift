import MeshAir
import MeshNode

/// The simulated world: a virtual clock, the air between nodes, and the nodes.
///
/// The air moves raw on-air packets. A transmission from node A reaches every node A has a link to
/// whose radio is on A's channel (frequency, bandwidth, spreading factor), after the packet's LoRa
/// time on air, unless the link's loss probability drops it. With `collisions`
/// on, radios are half-duplex and two receptions overlapping at one node destroy each other unless
/// one is at least `captureThreshold` dB stronger (then it survives).
/// Listen-before-talk sees any reception in progress at the transmitter.
public final class SimMesh: Air {
    public let seed: UInt64
    public let collisions: Bool
    public private(set) var nodes: [SimNode] = []
    /// Links out of each node, by node index.
    var links: [[Link]] = []
    /// Called for every packet a node starts to transmit (the `--capture` hook).
    public var onTransmit: ((SimNode, [UInt8]) -> Void)?
    /// Called for every packet a node receives intact.
    public var onReceive: ((SimNode, [UInt8], Double) -> Void)?

    public private(set) var transmissions: UInt64 = 0
    public private(set) var deliveries: UInt64 = 0
    public private(set) var losses: UInt64 = 0
    public private(set) var collided: UInt64 = 0

    struct Link { var to: Int; var snr: Double; var loss: Double }

    struct Reception { var id: UInt64; var end: UInt64; var corrupted: Bool; var snr: Double = 0 }
    /// A reception survives an overlapping one this many dB weaker (LoRa capture effect).
    public var captureThreshold: Double = 6
    var receptions: [[Reception]] = []
    var receptionSeq: UInt64 = 0

    public init(seed: UInt64, epochBase: UInt32 = 1_767_225_600, collisions: Bool = false, start: UInt64 = 0) {
        self.seed = seed
        self.collisions = collisions
        super.init(seed: seed, epochBase: epochBase, start: start)
    }

    /// The nodes and their radios without reference counting (`nodes` keeps them): the receptions
    /// of a transmission touch each receiver without a retain and release (an atomic write to a
    /// node not touched for a while).
    private var nodeRefs: [Unmanaged<SimNode>] = []
    private var radioRefs: [Unmanaged<Radio>] = []

    public override func register(_ node: SimNode) -> Int {
        nodes.append(node)
        nodeRefs.append(Unmanaged.passUnretained(node))
        radioRefs.append(Unmanaged.passUnretained(node.radio))
        links.append([])
        receptions.append([])
        return nodes.count - 1
    }

    public func node(named name: String) -> SimNode? { nodes.first { $0.name == name } }

    /// Adds or replaces the link a → b (and b → a unless `oneway`).
    public func link(_ a: SimNode, _ b: SimNode, snr: Double = 8, loss: Double = 0, oneway: Bool = false) {
        setLink(a.index, b.index, snr: snr, loss: loss)
        if !oneway { setLink(b.index, a.index, snr: snr, loss: loss) }
    }

    /// Removes the links between a and b.
    public func unlink(_ a: SimNode, _ b: SimNode) {
        links[a.index].removeAll { $0.to == b.index }
        links[b.index].removeAll { $0.to == a.index }
    }

    /// Changes the loss probability of the links between a and b (both ways).
    public func setLoss(_ a: SimNode, _ b: SimNode, _ loss: Double) {
        for i in links[a.index].indices where links[a.index][i].to == b.index { links[a.index][i].loss = loss }
        for i in links[b.index].indices where links[b.index][i].to == a.index { links[b.index][i].loss = loss }
    }

    private func setLink(_ a: Int, _ b: Int, snr: Double, loss: Double) {
        if let i = links[a].firstIndex(where: { $0.to == b }) { links[a][i] = Link(to: b, snr: snr, loss: loss) } else {
            links[a].append(Link(to: b, snr: snr, loss: loss))
        }
    }

    public func neighbours(of node: SimNode) -> [SimNode] { links[node.index].map { nodes[$0.to] } }

    /// A transmission on the air: its receivers, whose receptions all end at the same time.
    struct Flight {
        var bytes: [UInt8] = []
        var airtime: UInt64 = 0
        var hash: UInt64? = nil
        var sender = 0
        var receivers: [Receiver] = []
    }
    /// `id`: the reception's, kept only with collisions (0 otherwise).
    struct Receiver { var to: Int; var id: UInt64; var snr: Double }
    /// Transmissions in flight, by the token of the event that ends them; their slots (and the
    /// receivers' arrays) are used again, so a transmission allocates nothing.
    var flights: [Flight] = []
    var freeFlights: [Int] = []

    /// Puts a packet on the air from `sender` for `airtime` ms.
    public override func transmit(from sender: SimNode, bytes: [UInt8], airtime: UInt64) -> Bool {
        transmissions &+= 1
        onTransmit?(sender, bytes)
        let start = scheduler.now
        let end = start &+ airtime
        if collisions {
            // Half-duplex: our own receptions in progress are lost.
            for i in receptions[sender.index].indices { receptions[sender.index][i].corrupted = true }
        }
        let channel = sender.radio.params
        let f: Int
        if let free = freeFlights.popLast() { f = free } else { f = flights.count; flights.append(Flight()) }
        // Every reception of one transmission ends at the same time: one event finishes them all,
        // in link order (as one event each would, scheduled back to back), then the sender's
        // transmission (the event the sender would have scheduled next).
        var ending = flights[f].receivers  // moved out and back: appended to in place
        flights[f].receivers = []
        links[sender.index].withUnsafeBufferPointer { out in
            for l in out { radioRefs[l.to]._withUnsafeGuaranteedRef { r in
                guard Self.hears(channel, r.params) else { return }
                let lost = l.loss > 0 && rng.unit() < l.loss
                if lost { losses &+= 1; return }
                if r.rxBusyUntil < end { r.rxBusyUntil = end }
                guard collisions else { ending.append(Receiver(to: l.to, id: 0, snr: l.snr)); return }
                receptionSeq &+= 1
                let id = receptionSeq
                var corrupted = false
                if r.txUntil > start { corrupted = true }
                for i in receptions[l.to].indices where receptions[l.to][i].end > start {
                    let other = receptions[l.to][i].snr
                    // The one in progress survives only if it is clearly stronger, and vice versa.
                    if other < l.snr + captureThreshold { receptions[l.to][i].corrupted = true }
                    if l.snr < other + captureThreshold { corrupted = true }
                }
                receptions[l.to].append(Reception(id: id, end: end, corrupted: corrupted, snr: l.snr))
                ending.append(Receiver(to: l.to, id: id, snr: l.snr))
            } }
        }
        if ending.isEmpty {
            flights[f].receivers = ending
            freeFlights.append(f)
            scheduler.schedule(at: end, sender, token: Node.transmissionEndToken)
            return true
        }
        flights[f].receivers = ending
        flights[f].bytes = bytes
        flights[f].airtime = airtime
        // The sender's node knew the packet's hash (its own packet, or one it relays): the
        // receivers need not compute it.
        flights[f].hash = sender.radio.txHash
        flights[f].sender = sender.index
        scheduler.schedule(at: end, self, token: UInt64(f))
        return true
    }

    /// The end of flight `token`: its receptions, then the sender's end of transmission.
    public override func timerFired(_ token: UInt64) {
        let f = Int(token)
        let sender = flights[f].sender
        let bytes = flights[f].bytes
        let airtime = flights[f].airtime
        delivering = true
        deliveryHashMemo = flights[f].hash
        var j = 0
        while j < flights[f].receivers.count {  // by index: a reception may start other flights
            let r = flights[f].receivers[j]
            finishReception(to: r.to, id: r.id, bytes: bytes, snr: r.snr, airtime: airtime)
            j += 1
        }
        delivering = false
        flights[f].bytes = []
        flights[f].receivers.removeAll(keepingCapacity: true)
        freeFlights.append(f)
        scheduler.runNext(nodes[sender], token: Node.transmissionEndToken)
    }

    /// While the receptions of one transmission are delivered, the packet's hash (the same bytes
    /// for every receiver) is computed by the first receiver that needs it and shared.
    var delivering = false
    var deliveryHashMemo: UInt64? = nil

    public override func deliveryHash(_ compute: () -> UInt64) -> UInt64 {
        guard delivering else { return compute() }
        if let h = deliveryHashMemo {
            assert(h == compute(), "the hash a sender passed on is not the packet's")
            return h
        }
        let h = compute()
        deliveryHashMemo = h
        return h
    }

    /// Whether a receiver on `b` hears a sender on `a`: same bandwidth and spreading factor, centre
    /// frequencies within a quarter of the bandwidth (what LoRa tolerates); the coding rate is in the
    /// explicit header, so it may differ.
    public static func hears(_ a: RadioParams, _ b: RadioParams) -> Bool {
        a.sf == b.sf && a.bwHz == b.bwHz && UInt64(a.freqKHz > b.freqKHz ? a.freqKHz - b.freqKHz : b.freqKHz - a.freqKHz) * 1000 * 4 <= UInt64(a.bwHz)
    }

    private func finishReception(to: Int, id: UInt64, bytes: [UInt8], snr: Double, airtime: UInt64) {
        if collisions {  // without, a reception is never corrupted and none is kept
            guard let i = receptions[to].firstIndex(where: { $0.id == id }) else { return }
            let rec = receptions[to].remove(at: i)
            if rec.corrupted { collided &+= 1; nodes[to].radio.errEvents &+= 1; return }
        }
        nodeRefs[to]._withUnsafeGuaranteedRef { node in
            guard node.powered else { return }
            deliveries &+= 1
            node.radio.rxAirMs &+= airtime
            onReceive?(node, bytes, snr)
            node.radioReceived(bytes, snr: snr, rssi: Int((-110 + snr * 2).rounded()))
        }
    }

    /// Signature checks of advert payloads already seen on this air: a flooded advert reaches every
    /// node, and the check is a pure function of the payload, so it is done once per payload rather
    /// than once per hop (the result, and so the run, is the same). Keyed by the packet hash (a
    /// truncated SHA-256 of the payload); at most 65,536 are kept.
    private var advertChecks: [UInt64: Bool] = [:]

    /// An advert a simulated node signed: valid by construction. Any change to its payload on
    /// the way changes its hash, and is then checked like any other.
    public override func markAdvertValid(hash: UInt64) {
        if advertChecks.count >= 65_536 { advertChecks.removeAll(keepingCapacity: true) }
        advertChecks[hash] = true
    }

    public override func advertIsValid(_ advert: Advert, hash: UInt64) -> Bool {
        if let v = advertChecks[hash] { return v }
        let v = advert.isValid
        if advertChecks.count >= 65_536 { advertChecks.removeAll(keepingCapacity: true) }
        advertChecks[hash] = v
        return v
    }

    // MARK: running

    public func run(for ms: UInt64) { scheduler.run(for: ms) }
    public func run(until t: UInt64) { scheduler.run(until: t) }
    @discardableResult
    public func run(until condition: () -> Bool, limit: UInt64) -> Bool { scheduler.run(until: condition, limit: limit) }
}
