import Glibc

// The message log: two segments (`messages.1.log`, the older, and `messages.log`, the one appended
// to) of framed records, and a compact in-memory index of every message, checkpointed to `index`.
//
// Segment header (64 bytes: two copies of a 32-byte block, so one bad sector does not lose the salt):
//     0 "PMLOG\0\0\1"   8 u32 generation   12 u32 salt   16..<28 reserved   28 u32 CRC-32 of 0..<28
//
// Index file (`index`, rewritten atomically at checkpoints; a stale or damaged one means a full scan):
//     0 "PMIDX\0\0\3"   8 u32 salt   12 u32 current generation   16 u32 old generation (0 = none)
//    20 u32 entries in the old segment   24 u64 current segment bytes covered   32 u64 old segment length
//    40 u64 next id   48 u32 entry count   52 u32 thread count   56 u32 status count   60 u32 run count
//    64 thread keys (u64 each)
//       record offsets (u32 each), zero-padded to a multiple of 8 bytes
//       tags (u16 each: thread number, bit 15 = outgoing), zero-padded to a multiple of 8 bytes
//       id runs (u64 first index, u64 first id)
//       statuses (24 bytes: u64 message id, u32 round trip, u32 ack tag, u8 status, u8 attempts, 6 × 0)
//       u64 checksum of everything before it (`IndexHash`: a word-wise multiply-xor hash, because
//       CRC-32 over the whole index would take a good part of the opening budget; the index is
//       derived data, and every record read through it is still checked by its own CRC)
//
// The offset and tag arrays are read straight from the file into memory (little-endian hosts).

/// 64-bit checksum of the index file: for each little-endian u64 word w, h = rotl(h ^ w, 29) &* odd.
/// Each step is a bijection of h, so any change to a single word changes the result.
struct IndexHash {
    var h: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func add(_ p: UnsafeRawBufferPointer) {
        precondition(p.count % 8 == 0)
        var x = h
        var o = 0
        let n = p.count
        while o < n {
            let w = UInt64(littleEndian: p.loadUnaligned(fromByteOffset: o, as: UInt64.self))
            x = ((x ^ w) << 29 | (x ^ w) >> 35) &* 0xFF51_AFD7_ED55_8CCD
            o += 8
        }
        h = x
    }

    mutating func add(_ b: [UInt8]) { b.withUnsafeBytes { add($0) } }
}

func padding8(_ n: Int) -> Int { (8 - n % 8) % 8 }

struct Segment {
    var fd: Int32
    var gen: UInt32
    var length: UInt64
    var path: String
}

final class MessageLog {
    static let headerSize: UInt64 = 64
    static let segmentMagic: [UInt8] = [0x50, 0x4D, 0x4C, 0x4F, 0x47, 0, 0, 1]
    static let indexMagic: [UInt8] = [0x50, 0x4D, 0x49, 0x44, 0x58, 0, 0, 3]

    let files: Files
    let dir: String
    let readOnly: Bool
    let segmentCap: UInt64
    let dedupWindow: Int
    let checkpointMin: Int

    var curPath: String { dir + "/messages.log" }
    var oldPath: String { dir + "/messages.1.log" }
    var indexPath: String { dir + "/index" }

    var salt: UInt32 = 0
    var cur: Segment
    var old: Segment?

    var entries = EntryTable()
    /// Entries `0..<oldCount` are in the old segment.
    var oldCount = 0
    /// Entries dropped by rotations; a thread position p refers to `entries[p - base]`.
    var base = 0
    var threadKeys: [ThreadKey] = []
    var threadNumbers: [ThreadKey: UInt16] = [:]
    var positions: [[UInt32]] = []
    var lastOutgoing: [UInt64] = []
    var statuses: [UInt64: DeliveryUpdate] = [:]
    var nextId: UInt64 = 1

    var checkpointLength: UInt64 = 0
    var appendsSinceCheckpoint = 0
    var lastCheckpointError: StoreError?
    var report = RecoveryReport()
    var readDamage: [DamageReport] = []

    var dedupBuilt = false
    var dedupRing: [Int] = []
    var dedupHead = 0
    var dedupMap: [Int: UInt64] = [:]

    var scratch: [UInt8] = []
    var readBuffer = [UInt8](repeating: 0, count: 512)

    init(files: Files, dir: String, readOnly: Bool, capBytes: UInt64, dedupWindow: Int, checkpointMin: Int) throws {
        self.files = files
        self.dir = dir
        self.readOnly = readOnly
        self.segmentCap = max(4096, min(capBytes / 2, UInt64(UInt32.max)))
        self.dedupWindow = max(1, dedupWindow)
        self.checkpointMin = max(1, checkpointMin)
        cur = Segment(fd: -1, gen: 0, length: 0, path: "")
        try open()
    }

    func close() {
        if !readOnly && appendsSinceCheckpoint > 0 { try? writeCheckpoint() }
        if cur.fd >= 0 { files.ops.close(cur.fd); cur.fd = -1 }
        if let o = old { files.ops.close(o.fd); old = nil }
    }

    // MARK: - Segments

    static func encodeHeader(gen: UInt32, salt: UInt32) -> [UInt8] {
        var block = segmentMagic
        block.putU32(gen)
        block.putU32(salt)
        block.append(contentsOf: repeatElement(0, count: 12))
        block.putU32(CRC32.checksum(block))
        return block + block
    }

    /// (gen, salt) from a segment header, trying both copies.
    func readHeader(fd: Int32, path: String) throws -> (UInt32, UInt32)? {
        var h = [UInt8](repeating: 0, count: Int(Self.headerSize))
        let n = try h.withUnsafeMutableBytes { try files.read(fd, path, into: $0, at: 0) }
        for copy in 0..<2 where n >= 32 * (copy + 1) {
            let b = Array(h[32 * copy ..< 32 * copy + 32])
            if Array(b[0..<8]) == Self.segmentMagic && CRC32.checksum(Array(b[0..<28])) == b.withUnsafeBytes({ $0.u32(28) }) {
                return b.withUnsafeBytes { ($0.u32(8), $0.u32(12)) }
            }
        }
        return nil
    }

    func createSegment(gen: UInt32) throws -> Segment {
        let tmp = curPath + ".new"
        try files.writeAtomically(tmp, Self.encodeHeader(gen: gen, salt: salt), mode: 0o600, syncDir: false)
        try files.rename(tmp, curPath)
        try files.syncDirectory(dir)
        let fd = try files.open(curPath, O_RDWR)
        return Segment(fd: fd, gen: gen, length: Self.headerSize, path: curPath)
    }

    func openSegment(_ path: String) throws -> (Segment, salt: UInt32?)? {
        guard files.ops.exists(path) else { return nil }
        let fd = try files.open(path, readOnly ? O_RDONLY : O_RDWR)
        let len = try files.size(fd, path)
        let header = try readHeader(fd: fd, path: path)
        if header == nil {
            report.damage.append(DamageReport(file: fileName(path), offset: 0, length: min(len, Self.headerSize),
                                              detail: "segment header unreadable"))
        }
        return (Segment(fd: fd, gen: header?.0 ?? 0, length: max(len, Self.headerSize), path: path), header?.1)
    }

    func open() throws {
        var saltFound: UInt32? = nil
        var oldSalt: UInt32? = nil, curSalt: UInt32? = nil
        if let (seg, s) = try openSegment(oldPath) { old = seg; oldSalt = s; saltFound = s }
        if let (seg, s) = try openSegment(curPath) { cur = seg; curSalt = s; saltFound = s ?? saltFound }
        if saltFound == nil, let idx = try files.readFile(indexPath), idx.count >= 16, Array(idx[0..<8]) == Self.indexMagic {
            saltFound = idx.withUnsafeBytes { $0.u32(8) }
        }
        // Without the salt no record can be checked: refuse rather than cut the log as "torn".
        let curHasData = cur.fd >= 0 && cur.length > Self.headerSize
        if saltFound == nil && (curHasData || (old.map { $0.length > Self.headerSize } ?? false)) {
            throw StoreError.corrupt(path: cur.fd >= 0 ? curPath : oldPath,
                                     detail: "the log's header is unreadable and no other file holds its salt")
        }
        salt = saltFound ?? UInt32.random(in: 1...UInt32.max)
        // Rewrite an unreadable header from what the other files know (generations stay ordered).
        if !readOnly {
            if cur.fd >= 0 && curSalt == nil {
                cur.gen = (old?.gen ?? 0) &+ 1
                try files.write(cur.fd, cur.path, Self.encodeHeader(gen: cur.gen, salt: salt), at: 0)
                try files.sync(cur.fd, cur.path)
            }
            if var o = old, oldSalt == nil {
                o.gen = cur.fd >= 0 ? cur.gen &- 1 : 1
                try files.write(o.fd, o.path, Self.encodeHeader(gen: o.gen, salt: salt), at: 0)
                try files.sync(o.fd, o.path)
                old = o
            }
        }
        if cur.fd < 0 {
            if readOnly {
                cur = Segment(fd: -1, gen: (old?.gen ?? 0) + 1, length: Self.headerSize, path: curPath)
            } else {
                files.unlinkIfPresent(curPath + ".new")
                cur = try createSegment(gen: (old?.gen ?? 0) &+ 1)
            }
        }
        if !(try loadIndex()) {
            try fullScan()
        }
        if !readOnly && (report.fullScan || appendsSinceCheckpoint >= checkpointMin) {
            do { try writeCheckpoint() } catch let e as StoreError { lastCheckpointError = e }
        }
    }
}
