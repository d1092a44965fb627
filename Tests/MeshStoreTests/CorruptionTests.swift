import Glibc
import Testing
@testable import MeshStore

/// Deterministic pseudo-random numbers (SplitMix64), so that a failure can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct CorruptionTests {
    /// A store with `n` messages; returns their texts and record byte ranges in messages.log.
    func makeStore(_ dir: TempDir, _ n: Int) throws -> (texts: [String], ranges: [Range<Int>]) {
        let s = try RadioStore(directory: dir.radio)
        var texts: [String] = []
        for i in 0..<n {
            let t = "message \(i) " + String(repeating: "x", count: i % 17)
            texts.append(t)
            try s.append(i % 4 == 0 ? channelMessage("n: " + t, ts: UInt32(i)) : incoming(t, ts: UInt32(i)))
        }
        let offs = s.log.entries.offsets.map { Int($0) }
        let end = Int(s.log.cur.length)
        s.close()
        let ranges = offs.indices.map { offs[$0] ..< ($0 + 1 < offs.count ? offs[$0 + 1] : end) }
        return (texts, ranges)
    }

    func storedTexts(_ s: RadioStore) throws -> Set<String> {
        var out = Set<String>()
        for m in try s.messages(after: 0, limit: 10_000) {
            let t = m.textString
            out.insert(m.kind == .channel ? String(t.dropFirst(3)) : t)
        }
        return out
    }

    @Test func randomDamageLosesOnlyTheDamagedRecords() throws {
        var rng = SplitMix64(state: 20261122)
        let dir = TempDir()
        let (texts, ranges) = try makeStore(dir, 30)
        let pristine = readBytes(dir.radio + "/messages.log")
        for round in 0..<150 {
            var b = pristine
            var hit = Set<Int>()
            for _ in 0 ..< Int.random(in: 1...3, using: &rng) {
                let pos = Int.random(in: 64 ..< b.count, using: &rng)
                b[pos] ^= UInt8.random(in: 1...255, using: &rng)
                hit.insert(ranges.firstIndex { $0.contains(pos) }!)
            }
            writeBytes(dir.radio + "/messages.log", b)
            unlink(dir.radio + "/index")
            let s = try RadioStore(directory: dir.radio)
            let expected = Set(texts.indices.filter { !hit.contains($0) }.map { texts[$0] })
            #expect(try storedTexts(s) == expected, "round \(round), damaged records \(hit.sorted())")
            s.close()
        }
    }

    @Test func randomTruncationKeepsEveryWholeRecord() throws {
        var rng = SplitMix64(state: 7)
        let dir = TempDir()
        let (texts, ranges) = try makeStore(dir, 30)
        let pristine = readBytes(dir.radio + "/messages.log")
        let pristineIndex = readBytes(dir.radio + "/index")
        for round in 0..<100 {
            let cut = Int.random(in: 64 ... pristine.count, using: &rng)
            writeBytes(dir.radio + "/messages.log", Array(pristine[..<cut]))
            if round % 2 == 0 { writeBytes(dir.radio + "/index", pristineIndex) } else { unlink(dir.radio + "/index") }
            let s = try RadioStore(directory: dir.radio)
            let whole = ranges.indices.filter { ranges[$0].upperBound <= cut }
            #expect(try storedTexts(s) == Set(whole.map { texts[$0] }), "round \(round), cut \(cut)")
            #expect(s.recovery.damage.isEmpty)
            s.close()
        }
    }

    @Test func randomIndexDamageNeverChangesWhatIsRead() throws {
        var rng = SplitMix64(state: 99)
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<40 {
            if i % 5 == 4 {
                let item = try s.enqueue(outgoing("out \(i)", to: i % 2 == 0 ? alice : bob, ts: UInt32(i)), now: 1)
                try s.recordAcked(id: item.messageId, roundTripMs: UInt32(i), now: 2)
            } else {
                try s.append(incoming("in \(i)", from: i % 3 == 0 ? alice : bob, ts: UInt32(i)))
            }
        }
        s.close()
        s = try RadioStore(directory: dir.radio)
        let expected = try s.messages(after: 0, limit: 1000)
        let convs = try s.conversations()
        s.close()
        let index = readBytes(dir.radio + "/index")
        for round in 0..<150 {
            var b = index
            let pos = Int.random(in: 0 ..< b.count, using: &rng)
            b[pos] ^= UInt8.random(in: 1...255, using: &rng)
            writeBytes(dir.radio + "/index", b)
            s = try RadioStore(directory: dir.radio)
            #expect(s.recovery.fullScan, "round \(round): byte \(pos) of the index")
            #expect(try s.messages(after: 0, limit: 1000) == expected, "round \(round)")
            #expect(try s.conversations() == convs, "round \(round)")
            s.close()
        }
    }
}
