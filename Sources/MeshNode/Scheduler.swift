/// The virtual clock and its event queue. Time is milliseconds; events at the same millisecond run in
/// the order they were scheduled, so a run is fully determined by its inputs and seed.
public final class Scheduler {
    public typealias Action = () -> Void

    private struct Entry { var at: UInt64; var seq: UInt64; var slot: Int32 }
    /// An action in a struct of its own: a closure stored directly as an array's (generic)
    /// element is wrapped in a reabstraction thunk on the way in and again on the way out, two
    /// more allocations and calls per event.
    /// A node's own timer (`node`, with `token`) needs no closure: the most frequent events (a
    /// radio's wake-ups and the end of each transmission) then cost no allocation.
    private struct Slot { var action: Action?; var node: Node? = nil; var token: UInt64 = 0 }

    public private(set) var now: UInt64
    private var heap: [Entry] = []
    private var actions: [Slot] = []
    private var freeSlots: [Int32] = []
    private var seq: UInt64 = 0

    public init(start: UInt64 = 0) { now = start }

    public var pending: Int { heap.count }

    /// The time of the earliest scheduled event, if any.
    public var nextDeadline: UInt64? { heap.first?.at }

    /// Runs `action` at virtual time `at` (or now, if `at` is in the past).
    public func schedule(at: UInt64, _ action: @escaping Action) {
        add(at: at, Slot(action: action))
    }

    /// Calls `node.timerFired(token)` at virtual time `at` (or now); ordered as `schedule` is.
    func schedule(at: UInt64, _ node: Node, token: UInt64) {
        add(at: at, Slot(action: nil, node: node, token: token))
    }

    private func add(at: UInt64, _ s: Slot) {
        let slot: Int32
        if let free = freeSlots.popLast() { slot = free; actions[Int(free)] = s } else {
            slot = Int32(actions.count); actions.append(s)
        }
        seq &+= 1
        heap.append(Entry(at: max(at, now), seq: seq, slot: slot))
        siftUp(heap.count - 1)
    }

    public func after(_ delay: UInt64, _ action: @escaping Action) { schedule(at: now &+ delay, action) }

    /// Runs the earliest event, advancing the clock to it. Returns false when nothing is scheduled.
    @discardableResult
    public func step() -> Bool {
        guard let top = heap.first else { return false }
        let last = heap.removeLast()
        if !heap.isEmpty { heap[0] = last; siftDown(0) }
        now = max(now, top.at)
        let i = Int(top.slot)
        let action = actions[i].action.take()  // moved out: no retain and release
        let node = actions[i].node.take()
        let token = actions[i].token
        freeSlots.append(top.slot)
        if let action { action() } else { node?.timerFired(token) }
        return true
    }

    /// Runs every event due at or before `time`, then sets the clock to `time`.
    public func run(until time: UInt64) {
        while let d = heap.first?.at, d <= time { step() }
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
        while let d = heap.first?.at, d <= end {
            step()
            if condition() { return true }
        }
        if end > now { now = end }
        return condition()
    }

    private func less(_ a: Entry, _ b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.seq < b.seq }

    // A 4-ary heap: half as deep as a binary one, and a node's children share a cache line or two.
    private func siftUp(_ i0: Int) {
        var i = i0
        let e = heap[i]
        while i > 0 {
            let p = (i - 1) >> 2
            if !less(e, heap[p]) { break }
            heap[i] = heap[p]; i = p
        }
        heap[i] = e
    }

    private func siftDown(_ i0: Int) {
        heap.withUnsafeMutableBufferPointer { h in
            var i = i0
            let n = h.count
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
}
