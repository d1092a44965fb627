/// What the scheduler calls without a closure (`schedule(at:_:token:)`): a node's radio timers,
/// the simulator's deliveries. The most frequent events then cost no allocation.
open class TimerTarget {
    public init() {}
    /// Called at the time the timer was set for, with its token.
    open func timerFired(_ token: UInt64) {}
}

/// The virtual clock and its event queue. Time is milliseconds; events at the same millisecond run in
/// the order they were scheduled, so a run is fully determined by its inputs and seed.
public final class Scheduler {
    public typealias Action = () -> Void

    /// 16 bytes, four to a cache line: the sequence number in the high 40 bits of `order`, the slot
    /// in the low 24 (sequence numbers are unique, so the slot bits never decide an order).
    private struct Entry { var at: UInt64; var order: UInt64; var slot: Int { Int(truncatingIfNeeded: order & Scheduler.slotMask) } }
    private static let slotBits: UInt64 = 24
    private static let slotMask: UInt64 = 1 << slotBits - 1
    /// An action in a struct of its own: a closure stored directly as an array's (generic)
    /// element is wrapped in a reabstraction thunk on the way in and again on the way out, two
    /// more allocations and calls per event.
    /// A node's own timer (`node`, with `token`) needs no closure: the most frequent events (a
    /// radio's wake-ups and the end of each transmission) then cost no allocation.
    private struct Slot { var action: Action?; var target: TimerTarget? = nil; var token: UInt64 = 0 }

    public private(set) var now: UInt64
    /// The 4-ary heap and the slots, in buffers of their own (no uniqueness or bounds checks on
    /// the hottest path). A free slot holds the index of the next free one in `token`.
    private var heap: UnsafeMutablePointer<Entry>
    private var heapCount = 0
    private var heapCapacity = 64
    private var slots: UnsafeMutablePointer<Slot>
    private var slotCount = 0
    private var slotCapacity = 64
    private var freeSlot = -1
    private var seq: UInt64 = 0
    /// The event that runs next, before anything in the heap (`runNext`).
    private var immediate: TimerTarget? = nil
    private var immediateToken: UInt64 = 0

    /// Timers set a fixed delay ahead (listen-before-talk's back-offs of 120, 240 and 360 ms, most
    /// of a large mesh's events) skip the heap: each delay has a FIFO of its own, which is already
    /// in (time, sequence) order as the clock never goes back, and the earliest of the heap's top
    /// and the FIFOs' heads runs next: the same order as one heap.
    private struct LaneEntry { var at: UInt64; var seq: UInt64; var target: TimerTarget; var token: UInt64 }
    private struct Lane { var buf: UnsafeMutablePointer<LaneEntry>; var capacity: Int; var head = 0; var count = 0 }
    private static let laneDelay: UInt64 = 120
    private static let laneCount = 3
    private var lanes: UnsafeMutablePointer<Lane>

    public init(start: UInt64 = 0) {
        now = start
        heap = .allocate(capacity: heapCapacity)
        slots = .allocate(capacity: slotCapacity)
        lanes = .allocate(capacity: Scheduler.laneCount)
        for k in 0 ..< Scheduler.laneCount { (lanes + k).initialize(to: Lane(buf: .allocate(capacity: 64), capacity: 64)) }
    }

    deinit {
        heap.deallocate()
        slots.deinitialize(count: slotCount)
        slots.deallocate()
        for k in 0 ..< Scheduler.laneCount {
            let l = lanes[k]
            for i in 0 ..< l.count { (l.buf + (l.head + i) & (l.capacity - 1)).deinitialize(count: 1) }
            l.buf.deallocate()
        }
        lanes.deallocate()
    }

    public var pending: Int {
        var n = heapCount + (immediate == nil ? 0 : 1)
        for k in 0 ..< Scheduler.laneCount { n += lanes[k].count }
        return n
    }

    /// The time of the earliest scheduled event, if any.
    public var nextDeadline: UInt64? {
        if immediate != nil { return now }
        var t = heapCount > 0 ? heap[0].at : UInt64.max
        for k in 0 ..< Scheduler.laneCount where lanes[k].count > 0 {
            let l = lanes[k]
            t = min(t, l.buf[l.head].at)
        }
        return t == .max && heapCount == 0 ? nil : t
    }

    /// Runs `action` at virtual time `at` (or now, if `at` is in the past).
    public func schedule(at: UInt64, _ action: @escaping Action) {
        add(at: at, Slot(action: action))
    }

    /// Calls `target.timerFired(token)` at virtual time `at` (or now); ordered as `schedule` is.
    public func schedule(at: UInt64, _ target: TimerTarget, token: UInt64) {
        let d = at &- now
        if at > now, d % Scheduler.laneDelay == 0, d <= Scheduler.laneDelay * UInt64(Scheduler.laneCount) {
            seq &+= 1
            let l = lanes + Int(d / Scheduler.laneDelay) - 1
            if l.pointee.count == l.pointee.capacity {
                let c = l.pointee.capacity
                let bigger = UnsafeMutablePointer<LaneEntry>.allocate(capacity: c * 2)
                for i in 0 ..< c { (bigger + i).moveInitialize(from: l.pointee.buf + (l.pointee.head + i) & (c - 1), count: 1) }
                l.pointee.buf.deallocate()
                l.pointee = Lane(buf: bigger, capacity: c * 2, head: 0, count: c)
            }
            (l.pointee.buf + (l.pointee.head + l.pointee.count) & (l.pointee.capacity - 1))
                .initialize(to: LaneEntry(at: at, seq: seq, target: target, token: token))
            l.pointee.count += 1
            return
        }
        add(at: at, Slot(action: nil, target: target, token: token))
    }

    /// Calls `target.timerFired(token)` as the very next event, at the current time, before
    /// anything already scheduled: for an event known to follow the one running now with nothing
    /// between them (the end of a transmission after its receptions, both at the same time and
    /// scheduled back to back). It is one event, as it would be from the heap.
    public func runNext(_ target: TimerTarget, token: UInt64) {
        precondition(immediate == nil, "one event runs next")
        immediate = target
        immediateToken = token
    }

    private func add(at: UInt64, _ s: Slot) {
        let slot: Int
        if freeSlot >= 0 {
            slot = freeSlot
            freeSlot = Int(truncatingIfNeeded: slots[slot].token)
            slots[slot] = s
        } else {
            precondition(UInt64(slotCount) < Scheduler.slotMask, "too many events pending")
            if slotCount == slotCapacity {
                let bigger = UnsafeMutablePointer<Slot>.allocate(capacity: slotCapacity * 2)
                bigger.moveInitialize(from: slots, count: slotCount)
                slots.deallocate()
                slots = bigger
                slotCapacity *= 2
            }
            slot = slotCount
            (slots + slot).initialize(to: s)
            slotCount += 1
        }
        seq &+= 1
        if heapCount == heapCapacity {
            let bigger = UnsafeMutablePointer<Entry>.allocate(capacity: heapCapacity * 2)
            bigger.moveInitialize(from: heap, count: heapCount)
            heap.deallocate()
            heap = bigger
            heapCapacity *= 2
        }
        heap[heapCount] = Entry(at: max(at, now), order: seq << Scheduler.slotBits | UInt64(slot))
        heapCount += 1
        siftUp(heapCount - 1)
    }

    public func after(_ delay: UInt64, _ action: @escaping Action) { schedule(at: now &+ delay, action) }

    /// Runs the earliest event, advancing the clock to it. Returns false when nothing is scheduled.
    @discardableResult
    public func step() -> Bool {
        if let t = immediate.take() { t.timerFired(immediateToken); return true }
        // The earliest lane head, if it comes before the heap's top.
        var lane = -1
        var at = heapCount > 0 ? heap[0].at : .max
        var order = heapCount > 0 ? heap[0].order >> Scheduler.slotBits : .max
        for k in 0 ..< Scheduler.laneCount where lanes[k].count > 0 {
            let e = lanes[k].buf + lanes[k].head
            if e.pointee.at < at || (e.pointee.at == at && e.pointee.seq < order) { lane = k; at = e.pointee.at; order = e.pointee.seq }
        }
        if lane >= 0 {
            let l = lanes + lane
            let e = (l.pointee.buf + l.pointee.head).move()
            l.pointee.head = (l.pointee.head + 1) & (l.pointee.capacity - 1)
            l.pointee.count -= 1
            now = max(now, e.at)
            e.target.timerFired(e.token)
            return true
        }
        guard heapCount > 0 else { return false }
        let top = heap[0]
        heapCount -= 1
        if heapCount > 0 { heap[0] = heap[heapCount]; siftDown(0) }
        now = max(now, top.at)
        let i = top.slot
        let action = slots[i].action.take()  // moved out: no retain and release
        let target = slots[i].target.take()
        let token = slots[i].token
        slots[i].token = UInt64(bitPattern: Int64(freeSlot))
        freeSlot = i
        if let action { action() } else { target?.timerFired(token) }
        return true
    }

    /// Runs every event due at or before `time`, then sets the clock to `time`.
    public func run(until time: UInt64) {
        while let d = nextDeadline, d <= time { step() }
        if time > now { now = time }
    }

    /// Runs for `ms` milliseconds of virtual time.
    public func run(for ms: UInt64) { run(until: now &+ ms) }

    /// Runs until `condition` holds (checked after each event) or `limit` ms of virtual time pass.
    /// Returns whether the condition became true.
    @discardableResult
    public func run(until condition: () -> Bool, limit: UInt64) -> Bool {
        let end = now &+ limit
        if condition() { return true }
        while let d = nextDeadline, d <= end {
            step()
            if condition() { return true }
        }
        if end > now { now = end }
        return condition()
    }

    private func less(_ a: Entry, _ b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.order < b.order }

    // A 4-ary heap: half as deep as a binary one, and a node's children share a cache line or two.
    private func siftUp(_ i0: Int) {
        let h = heap
        var i = i0
        let e = h[i]
        while i > 0 {
            let p = (i - 1) >> 2
            if !less(e, h[p]) { break }
            h[i] = h[p]; i = p
        }
        h[i] = e
    }

    private func siftDown(_ i0: Int) {
        let h = heap
        var i = i0
        let n = heapCount
        let e = h[i]
        while true {
            let first = 4 * i + 1
            if first >= n { break }
            var c = first
            let last = min(first + 4, n)
            var k = first + 1
            while k < last {
                if less(h[k], h[c]) { c = k }
                k += 1
            }
            if !less(h[c], e) { break }
            h[i] = h[c]; i = c
        }
        h[i] = e
    }
}
