/// The firmware's 160-entry ring of recently seen packet hashes (`SimpleMeshTables`): the oldest
/// entry makes room for a new one. A small open-addressing set beside the ring (linear probing,
/// backward-shift deletion; 2 KiB, so that a lookup touches one or two cache lines even with a
/// thousand nodes' tables) answers `contains` without scanning it: the same answers as the
/// firmware's scan.
public struct SeenTable {
    public static let capacity = 160
    static let slots = 256  // a power of two; at most 160 used
    private var ring = [UInt64](repeating: 0, count: SeenTable.capacity)
    private var filled = 0
    private var next = 0
    /// Stored hashes, each + 1 (0: an empty slot; the hash UInt64.max is counted apart).
    private var keys = [UInt64](repeating: 0, count: SeenTable.slots)
    /// How many ring entries hold each slot's hash.
    private var counts = [UInt8](repeating: 0, count: SeenTable.slots)
    private var maxCount = 0

    public init() {}

    @inline(__always) static func home(_ k: UInt64) -> Int { Int(truncatingIfNeeded: (k &* 0x9E37_79B9_7F4A_7C15) >> 56) }

    /// The slot holding `h`, or the empty slot where it would go.
    @inline(__always) private func slot(_ h: UInt64) -> (Int, Bool) {
        let k = h &+ 1
        return keys.withUnsafeBufferPointer { keys in
            var i = SeenTable.home(k)
            while true {
                let v = keys[i]
                if v == k { return (i, true) }
                if v == 0 { return (i, false) }
                i = (i + 1) & (SeenTable.slots - 1)
            }
        }
    }

    public func contains(_ h: UInt64) -> Bool {
        if h == .max { return maxCount > 0 }
        return slot(h).1
    }

    public mutating func insert(_ h: UInt64) {
        if filled == SeenTable.capacity { release(ring[next]) } else { filled += 1 }
        ring[next] = h
        next = (next + 1) % SeenTable.capacity
        if h == .max { maxCount += 1; return }
        let (i, found) = slot(h)
        if found { counts[i] &+= 1 } else { keys[i] = h &+ 1; counts[i] = 1 }
    }

    private mutating func release(_ h: UInt64) {
        if h == .max { maxCount -= 1; return }
        let (i0, found) = slot(h)
        guard found else { return }
        if counts[i0] > 1 { counts[i0] -= 1; return }
        // Backward-shift deletion: later entries of the probe run move into the hole.
        var hole = i0
        keys[hole] = 0
        counts[hole] = 0
        var j = (hole + 1) & (SeenTable.slots - 1)
        while keys[j] != 0 {
            let home = SeenTable.home(keys[j])
            // Move j into the hole unless its home lies cyclically in (hole, j].
            let between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j)
            if !between {
                keys[hole] = keys[j]; counts[hole] = counts[j]
                keys[j] = 0; counts[j] = 0
                hole = j
            }
            j = (j + 1) & (SeenTable.slots - 1)
        }
    }

    /// Marks `h` seen and returns whether it was already there (`hasSeen` in the firmware).
    public mutating func checkAndInsert(_ h: UInt64) -> Bool {
        if contains(h) { return true }
        insert(h); return false
    }

    public mutating func removeAll() {
        filled = 0
        next = 0
        maxCount = 0
        for i in 0..<SeenTable.slots { keys[i] = 0; counts[i] = 0 }
    }
}
