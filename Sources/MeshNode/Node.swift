/// What a node is.
public enum NodeRole: String, Sendable {
    case companion, repeater, room
    /// A node of another implementation, attached over the simulator's air socket (`sim --air-port`).
    case external
    /// A radio running MeshCore's KISS modem firmware, its host on a pseudo-terminal (`sim`).
    case kiss
}

/// A MeshCore node: its radio's outbound side (queue, listen-before-talk, duty cycle) and clock, on an
/// `Air` (the simulator's, or one real radio's). Roles subclass this.
open class Node: TimerTarget {
    /// The air this node transmits into, with the clock and event queue that drive it.
    ///
    /// unowned(unsafe): every air keeps the nodes registered with it (SimMesh's `nodes`,
    /// RadioAir's `node`), and a node runs only from its air's scheduler or from the host that
    /// holds the air, so the air is alive whenever a node reads this. It is read on every event
    /// (`mesh.now`, `mesh.scheduler`), and the checked `unowned` load (an atomic reference-count
    /// check and a release each time) was a measurable share of a simulator run.
    public unowned(unsafe) let mesh: Air
    public private(set) final var index: Int = 0
    public var name: String
    public let role: NodeRole
    public let radio: Radio
    public var rng: SimRandom
    /// False while "switched off" (between a reboot's power-down and its boot).
    public final var powered = true
    /// Whether the queue waits while a reception is in progress (the firmware's Dispatcher does;
    /// a bare chip told to transmit does not).
    public var listensBeforeTalk = true
    /// Virtual time of the last boot.
    public internal(set) var bootedAt: UInt64 = 0

    /// False for a radio without a battery-backed clock: its clock starts again from
    /// `volatileClockStart` at every boot (ESP32 and volatile RTCs in the firmware).
    public var hasBatteryClock = true
    /// Where a clock without a battery starts after a boot (15 May 2024 20:52:31 UTC).
    public static let volatileClockStart: UInt32 = 1_715_770_351
    /// Called when the node goes down (reboot or power-off), before anything else happens; the real-time
    /// host drops the node's TCP client here, as a rebooting radio does.
    public var onPowerDown: (() -> Void)?

    /// RTC: epoch seconds at virtual ms `rtcSetAt`.
    var rtcEpoch: UInt32
    var rtcSetAt: UInt64

    public init(mesh: Air, name: String, role: NodeRole, poolSize: Int) {
        self.mesh = mesh
        self.name = name
        self.role = role
        self.radio = Radio(poolSize: poolSize)
        self.rng = mesh.rng.fork()
        self.rtcEpoch = mesh.epochNow
        self.rtcSetAt = mesh.now
        super.init()
        self.index = mesh.register(self)
        self.bootedAt = mesh.now
    }

    public var now: UInt64 { mesh.now }

    /// This node's clock, epoch seconds.
    public var epochNow: UInt32 { rtcEpoch &+ UInt32(truncatingIfNeeded: (mesh.now &- rtcSetAt) / 1000) }

    public func setClock(_ epoch: UInt32) { rtcEpoch = epoch; rtcSetAt = mesh.now }

    public var uptimeSeconds: UInt32 { UInt32(truncatingIfNeeded: (mesh.now &- bootedAt) / 1000) }

    /// Called by the air with an intact packet.
    open func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) {}

    /// Called just before a queued packet goes on air.
    open func willTransmit(_ bytes: [UInt8]) {}

    // MARK: outbound queue

    /// Queues a raw packet to go on air `delay` ms from now. Lower `priority` goes first.
    /// Returns false if the pool is full (the packet is dropped, as in the firmware).
    @discardableResult
    /// `hash`, when the caller knows it, is the packet's hash (`PacketHash`), which the air may
    /// hand to the receivers instead of computing it again (a relay's packet has the hash of the
    /// one it received).
    public func enqueue(_ bytes: [UInt8], priority: UInt8, delay: UInt64 = 0, hash: UInt64? = nil) -> Bool {
        guard powered else { return false }
        if radio.queue.count >= radio.poolSize { radio.dropped &+= 1; return false }
        radio.seq &+= 1
        radio.queue.append(Outbound(bytes: bytes, priority: priority, at: mesh.now &+ delay, seq: radio.seq, hash: hash))
        serviceQueue()
        return true
    }

    private func wake(at t: UInt64) {
        if t >= radio.wakeAt && radio.wakeAt > mesh.now { return }
        radio.wakeAt = t
        radio.wakeToken &+= 1
        mesh.scheduler.schedule(at: t, self, token: radio.wakeToken)
    }

    /// The token of the timer at the end of a transmission (wake-ups count up from 1).
    public static let transmissionEndToken = UInt64.max

    /// The radio's timers, run by the scheduler without a closure (the most frequent events): the
    /// end of a transmission, or a wake-up (stale once a later one replaced it).
    override public func timerFired(_ token: UInt64) {
        if token == Node.transmissionEndToken {
            radio.refill(now: mesh.now)
            if radio.budget < 100 {
                let wait = UInt64(((100 - radio.budget) / radio.duty).rounded(.up))
                wake(at: mesh.now &+ wait)
            } else {
                serviceQueue()
            }
            return
        }
        guard radio.wakeToken == token else { return }
        radio.wakeAt = .max
        serviceQueue()
    }

    func serviceQueue() {
        guard powered else { return }
        let now = mesh.now
        if radio.txUntil > now { return } // the end of this TX services the queue
        // Next packet due: lowest priority value among those whose time has come, FIFO within it.
        // Nothing due: wake when the earliest is (nothing queued: the next enqueue services it).
        if radio.queueDueAt > now {
            if radio.queueDueAt != .max { wake(at: radio.queueDueAt) }
            return
        }
        // Duty-cycle budget.
        radio.refill(now: now)
        let maxAir = Double(radio.largestPacketAirtime) / 2
        if radio.budget < maxAir {
            let wait = UInt64(((maxAir - radio.budget) / radio.duty).rounded(.up))
            wake(at: now &+ max(1, wait)); return
        }
        // Listen before talk: postpone while a reception is in progress, up to 4 s.
        if listensBeforeTalk && radio.rxBusyUntil > now {
            if radio.lbtSince == nil { radio.lbtSince = now }
            if now &- radio.lbtSince! < 4000 {
                wake(at: now &+ rng.between(1, 3) * 120); return
            }
            radio.errEvents &+= 1 // ERR_EVENT_CAD_TIMEOUT: send anyway
        }
        radio.lbtSince = nil
        // The packet to send: the lowest priority value among those due, first queued first.
        // Scanned only now, not on every wake of listen-before-talk or the duty cycle.
        var best = -1
        radio.queue.withUnsafeBufferPointer { q in  // read in place: no retain of each entry's bytes
            for i in 0..<q.count where q[i].at <= now {
                if best < 0 || q[i].priority < q[best].priority ||
                    (q[i].priority == q[best].priority && q[i].seq < q[best].seq) { best = i }
            }
        }
        let p = radio.queue.remove(at: best)
        let air = UInt64(radio.airtime(p.bytes.count))
        willTransmit(p.bytes)
        radio.budget -= Double(air)
        radio.txUntil = now &+ air
        radio.txAirMs &+= air
        radio.nSent &+= 1
        if let h = p.bytes.first {
            if h & 0x03 == 0 || h & 0x03 == 1 { radio.sentFlood &+= 1 } else { radio.sentDirect &+= 1 }
        }
        radio.txHash = p.hash
        // The end of the transmission: set here, unless the air runs it after its receptions.
        if !mesh.transmit(from: self, bytes: p.bytes, airtime: air) {
            mesh.scheduler.schedule(at: radio.txUntil, self, token: Node.transmissionEndToken)
        }
    }

    /// Power cycle: the outbound queue is lost; `boot()` runs after `downtime` ms.
    public func reboot(downtime: UInt64 = 1000) {
        onPowerDown?()
        powered = false
        radio.queue.removeAll()
        radio.wakeToken &+= 1
        radio.wakeAt = .max
        mesh.scheduler.schedule(at: mesh.now &+ downtime) { [unowned self] in
            self.powered = true
            self.bootedAt = self.mesh.now
            if !self.hasBatteryClock { self.setClock(Self.volatileClockStart) }
            self.radio.reset()
            self.boot()
        }
    }

    /// Switches the node off for good (`poweroff`).
    public func powerOff() {
        onPowerDown?()
        powered = false
        radio.queue.removeAll()
        radio.wakeToken &+= 1
        radio.wakeAt = .max
    }

    /// Role-specific state reset after a reboot.
    open func boot() {}
}
