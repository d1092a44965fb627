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

    public init(start: UInt64 = 0) {
        now = start
        heap = .allocate(capacity: heapCapacity)
        slots = .allocate(capacity: slotCapacity)
    }

    deinit {
        heap.deallocate()
        slots.deinitialize(count: slotCount)
        slots.deallocate()
    }

    public var pending: Int { heapCount + (immediate == nil ? 0 : 1) }

    /// The time of the earliest scheduled event, if any.
    public var nextDeadline: UInt64? { immediate != nil ? now : heapCount > 0 ? heap[0].at : nil }

    /// Runs `action` at virtual time `at` (or now, if `at` is in the past).
    public func schedule(at: UInt64, _ action: @escaping Action) {
        add(at: at, Slot(action: action))
    }

    /// Calls `target.timerFired(token)` at virtual time `at` (or now); ordered as `schedule` is.
    public func schedule(at: UInt64, _ target: TimerTarget, token: UInt64) {
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
