// The in-memory index of the message log: 6 bytes per message.
//
// Ids are not stored per message: they are consecutive except where a record was lost (damage), so
// a short list of "runs" (first index, first id) gives every id. Per message only the record's
// offset in its segment (u32) and a tag (u16: thread number in bits 0..14, outgoing in bit 15) are kept.

struct EntryTable {
    static let outgoingBit: UInt16 = 0x8000
    static let maxThreads = 0x7FFF

    var offsets: [UInt32] = []
    var tags: [UInt16] = []
    /// Runs of consecutive ids, by first index (ascending; ids ascending too).
    var runs: [(index: Int, id: UInt64)] = []

    var count: Int { offsets.count }
    var isEmpty: Bool { offsets.isEmpty }

    @inline(__always) func offset(_ i: Int) -> UInt32 { offsets[i] }
    @inline(__always) func thread(_ i: Int) -> Int { Int(tags[i] & 0x7FFF) }
    @inline(__always) func outgoing(_ i: Int) -> Bool { tags[i] & Self.outgoingBit != 0 }

    /// Index of the run holding entry `i`.
    func run(containing i: Int) -> Int {
        var lo = 0, hi = runs.count - 1
        if runs[hi].index <= i { return hi }
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if runs[mid].index <= i { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    func id(_ i: Int) -> UInt64 {
        let r = runs[run(containing: i)]
        return r.id + UInt64(i - r.index)
    }

    var lastId: UInt64? { isEmpty ? nil : id(count - 1) }

    mutating func append(id: UInt64, offset: UInt32, thread: Int, outgoing: Bool) {
        if let last = lastId, last &+ 1 == id {} else { runs.append((count, id)) }
        offsets.append(offset)
        tags.append(UInt16(thread) | (outgoing ? Self.outgoingBit : 0))
    }

    /// First index whose id is >= `id` (count if none).
    func lowerBound(id: UInt64) -> Int {
        guard !runs.isEmpty else { return 0 }
        // Last run whose first id is <= id.
        var lo = 0, hi = runs.count - 1
        if runs[0].id > id { return 0 }
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if runs[mid].id <= id { lo = mid } else { hi = mid - 1 }
        }
        let r = runs[lo]
        let end = lo + 1 < runs.count ? runs[lo + 1].index : count
        let i = r.index + Int(min(id - r.id, UInt64(end - r.index)))
        return i
    }

    func index(of id: UInt64) -> Int? {
        let i = lowerBound(id: id)
        return i < count && self.id(i) == id ? i : nil
    }

    /// Drops the first `n` entries.
    mutating func removeFirst(_ n: Int) {
        guard n > 0 else { return }
        if n >= count { self = EntryTable(); return }
        let firstId = id(n)
        offsets.removeFirst(n)
        tags.removeFirst(n)
        var next: [(index: Int, id: UInt64)] = [(0, firstId)]
        for r in runs where r.index > n { next.append((r.index - n, r.id)) }
        runs = next
    }

    /// Bytes per message held in memory (for documentation and tests).
    static let bytesPerEntry = MemoryLayout<UInt32>.stride + MemoryLayout<UInt16>.stride
}
