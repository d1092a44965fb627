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

    // MARK: - Index

    func resetIndex() {
        entries = EntryTable(); oldCount = 0; base = 0; threadKeys = []; threadNumbers = [:]
        positions = []; lastOutgoing = []; statuses = [:]; nextId = 1
        checkpointLength = 0; appendsSinceCheckpoint = 0
    }

    func threadNumber(_ key: ThreadKey) throws -> UInt16 {
        if let t = threadNumbers[key] { return t }
        guard threadKeys.count < EntryTable.maxThreads else {
            throw StoreError.invalidArgument("more than \(EntryTable.maxThreads) conversations")
        }
        let t = UInt16(threadKeys.count)
        threadKeys.append(key)
        threadNumbers[key] = t
        positions.append([])
        lastOutgoing.append(0)
        return t
    }

    func addEntry(id: UInt64, offset: UInt64, thread: UInt16, outgoing: Bool) {
        entries.append(id: id, offset: UInt32(offset), thread: Int(thread), outgoing: outgoing)
        positions[Int(thread)].append(UInt32(truncatingIfNeeded: base + entries.count - 1))
        if outgoing { lastOutgoing[Int(thread)] = id }
        nextId = id + 1
    }

    /// Applies one record found by a scan.
    func apply(offset: UInt64, payload p: UnsafeRawBufferPointer, file: String) throws {
        switch p.first {
        case Payload.message:
            guard let (id, thread, outgoing) = Payload.peekMessage(p) else {
                report.damage.append(DamageReport(file: file, offset: offset, length: UInt64(p.count + Frame.headerSize),
                                                  detail: "malformed message record"))
                return
            }
            guard id >= nextId else {
                report.damage.append(DamageReport(file: file, offset: offset, length: UInt64(p.count + Frame.headerSize),
                                                  detail: "message id \(id) out of order"))
                return
            }
            addEntry(id: id, offset: offset, thread: try threadNumber(thread), outgoing: outgoing)
        case Payload.status:
            if let (id, u) = Payload.decodeStatus(p) { statuses[id] = u }
        default:
            break // a record kind from a newer version: keep it, skip it
        }
    }

    func fullScan() throws {
        resetIndex()
        report.fullScan = true
        if let o = old {
            let out = try scanRecords(files, fd: o.fd, path: o.path, from: Self.headerSize, to: o.length, salt: salt) {
                try apply(offset: $0, payload: $1, file: "messages.1.log")
            }
            report.damage += out.damage
            if out.tornBytes > 0 {
                report.damage.append(DamageReport(file: "messages.1.log", offset: out.validEnd, length: out.tornBytes,
                                                  detail: "unreadable tail of the old segment"))
            }
            report.scannedRecords += out.records
            oldCount = entries.count
        }
        try scanCurrent(from: Self.headerSize)
    }

    /// Scans the current segment from `start`, truncating a torn tail.
    func scanCurrent(from start: UInt64) throws {
        guard cur.fd >= 0 else { return }
        let before = entries.count
        let out = try scanRecords(files, fd: cur.fd, path: cur.path, from: start, to: cur.length, salt: salt) {
            try apply(offset: $0, payload: $1, file: "messages.log")
        }
        report.damage += out.damage
        report.scannedRecords += out.records
        appendsSinceCheckpoint += entries.count - before
        if out.tornBytes > 0 {
            report.truncatedBytes += out.tornBytes
            if !readOnly {
                try files.truncate(cur.fd, cur.path, to: out.validEnd)
                try files.sync(cur.fd, cur.path)
            }
            cur.length = out.validEnd
        }
    }

    /// Loads the checkpoint and scans the log after it. False if the index is missing, damaged or
    /// does not match the log (then the caller scans everything).
    func loadIndex() throws -> Bool {
        guard UInt32(littleEndian: 1) == 1 else { return false }
        let fd: Int32
        do { fd = try files.ops.open(indexPath, flags: O_RDONLY, mode: 0) } catch {
            if error.code == ENOENT { return false }
            throw StoreError.io(operation: "open", path: indexPath, errno: error)
        }
        defer { files.ops.close(fd) }
        let size = try files.size(fd, indexPath)
        guard size >= 72 else { return false }
        var header = [UInt8](repeating: 0, count: 64)
        guard try header.withUnsafeMutableBytes({ try files.read(fd, indexPath, into: $0, at: 0) }) == 64,
              Array(header[0..<8]) == Self.indexMagic else { return false }
        let (hsalt, curGen, oldGen, oldEntries, covered, oldLength, next) = header.withUnsafeBytes { p in
            (p.u32(8), p.u32(12), p.u32(16), Int(p.u32(20)), p.u64(24), p.u64(32), p.u64(40))
        }
        let (count, threads, nStatus, nRuns) = header.withUnsafeBytes { p in
            (Int(p.u32(48)), Int(p.u32(52)), Int(p.u32(56)), Int(p.u32(60)))
        }
        let offsetsSize = count * 4 + padding8(count * 4)
        let tagsSize = count * 2 + padding8(count * 2)
        guard hsalt == salt, curGen == cur.gen, covered >= Self.headerSize, covered <= cur.length,
              oldEntries <= count, threads <= EntryTable.maxThreads, (count == 0) == (nRuns == 0), nRuns <= count,
              UInt64(64 + threads * 8 + offsetsSize + tagsSize + nRuns * 16 + nStatus * 24 + 8) == size else { return false }
        if let o = old {
            guard o.gen == oldGen, o.length == oldLength else { return false }
        } else {
            guard oldGen == 0, oldEntries == 0 else { return false }
        }
        var hash = IndexHash()
        hash.add(header)
        var off: UInt64 = 64
        var short = false
        func readBlock(_ n: Int) throws -> [UInt8] {
            var b = [UInt8](repeating: 0, count: n)
            let got = try b.withUnsafeMutableBytes { try files.read(fd, indexPath, into: $0, at: off) }
            off += UInt64(n)
            if got != n { short = true }
            hash.add(b)
            return b
        }
        /// Reads `n` elements of T (plus padding) straight into an array.
        func readArray<T: FixedWidthInteger>(_ n: Int, _: T.Type) -> [T] {
            let bytes = n * MemoryLayout<T>.stride
            let padded = bytes + padding8(bytes)
            let a = [T](unsafeUninitializedCapacity: max(1, padded / MemoryLayout<T>.stride) + n / 8) { buf, initialized in
                let raw = UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(buf.baseAddress!), count: padded)
                let got = (try? files.read(fd, indexPath, into: raw, at: off)) ?? -1
                if got != padded { short = true; initialized = 0; return }
                hash.add(UnsafeRawBufferPointer(raw))
                initialized = n
            }
            off += UInt64(padded)
            return a
        }
        let threadBytes = try readBlock(threads * 8)
        let offsets = readArray(count, UInt32.self)
        let tags = readArray(count, UInt16.self)
        let runBytes = try readBlock(nRuns * 16)
        let statusBytes = try readBlock(nStatus * 24)
        guard !short else { return false }
        var trailer = [UInt8](repeating: 0, count: 8)
        guard try trailer.withUnsafeMutableBytes({ try files.read(fd, indexPath, into: $0, at: off) }) == 8,
              hash.h == trailer.withUnsafeBytes({ $0.u64(0) }) else { return false }

        var table = EntryTable()
        table.offsets = offsets
        table.tags = tags
        var runsOK = true
        runBytes.withUnsafeBytes { p in
            var lastIndex = -1
            var lastEnd: UInt64 = 0
            for r in 0..<nRuns {
                let index = Int(truncatingIfNeeded: p.u64(r * 16)), id = p.u64(r * 16 + 8)
                if index <= lastIndex || index >= count || id < lastEnd || id == 0 || (r == 0 && index != 0) { runsOK = false; return }
                if r > 0 { lastEnd = table.runs[r - 1].id + UInt64(index - table.runs[r - 1].index) }
                if r > 0 && id < lastEnd { runsOK = false; return }
                table.runs.append((index, id))
                lastIndex = index
            }
        }
        guard runsOK else { return false }
        let lastId = table.lastId ?? 0

        // Check the entries and sort them into per-thread lists (counting sort, no per-entry allocation).
        var keys: [ThreadKey] = []
        var numbers: [ThreadKey: UInt16] = [:]
        keys.reserveCapacity(threads)
        threadBytes.withUnsafeBytes { p in
            for i in 0..<threads {
                let k = ThreadKey(raw: p.u64(i * 8))
                numbers[k] = UInt16(i)
                keys.append(k)
            }
        }
        guard numbers.count == threads else { return false }
        var counts = [Int](repeating: 0, count: threads + 1)
        var lastOutIndex = [Int](repeating: -1, count: threads)
        let ok: Bool = table.offsets.withUnsafeBufferPointer { os in
            table.tags.withUnsafeBufferPointer { ts in
                counts.withUnsafeMutableBufferPointer { cnt in
                    lastOutIndex.withUnsafeMutableBufferPointer { lo in
                        var lastOffset: UInt32 = 0
                        for i in 0..<count {
                            if i == oldEntries { lastOffset = 0 }
                            let o = os[i], tag = ts[i]
                            let t = Int(tag & 0x7FFF)
                            let segEnd = i < oldEntries ? oldLength : covered
                            guard o > lastOffset, UInt64(o) >= Self.headerSize, UInt64(o) < segEnd, t < threads else { return false }
                            lastOffset = o
                            cnt[t + 1] += 1
                            if tag & EntryTable.outgoingBit != 0 { lo[t] = i }
                        }
                        return true
                    }
                }
            }
        }
        guard ok else { return false }
        for t in 0..<threads { counts[t + 1] += counts[t] }
        var flat = [UInt32](repeating: 0, count: count)
        var fill = counts
        table.tags.withUnsafeBufferPointer { ts in
            flat.withUnsafeMutableBufferPointer { f in
                fill.withUnsafeMutableBufferPointer { fl in
                    for i in 0..<count {
                        let t = Int(ts[i] & 0x7FFF)
                        f[fl[t]] = UInt32(i)
                        fl[t] += 1
                    }
                }
            }
        }
        var lists: [[UInt32]] = []
        lists.reserveCapacity(threads)
        for t in 0..<threads { lists.append(Array(flat[counts[t] ..< counts[t + 1]])) }
        flat = []
        var sts: [UInt64: DeliveryUpdate] = [:]
        sts.reserveCapacity(nStatus)
        statusBytes.withUnsafeBytes { p in
            for i in 0..<nStatus {
                let o = i * 24
                if let st = DeliveryStatus(rawValue: p[o + 16]) {
                    sts[p.u64(o)] = DeliveryUpdate(status: st, attempts: p[o + 17], roundTripMs: p.u32(o + 8), ackTag: p.u32(o + 12))
                }
            }
        }
        resetIndex()
        entries = table
        threadKeys = keys
        threadNumbers = numbers
        positions = lists
        lastOutgoing = lastOutIndex.map { $0 < 0 ? 0 : table.id($0) }
        statuses = sts
        oldCount = oldEntries
        nextId = max(next, lastId + 1)
        checkpointLength = covered
        // The last indexed record of the current segment must still be there, intact.
        if entries.count > oldCount {
            let i = entries.count - 1
            guard let m = try readRecord(segment: cur, offset: UInt64(entries.offset(i))), case .message(let id, _) = m,
                  id == entries.id(i) else {
                resetIndex()
                return false
            }
        }
        try scanCurrent(from: checkpointLength)
        return true
    }

    /// Writes the index file content in pieces (the big arrays straight from memory).
    func writeIndex(_ w: SequentialWriter) throws {
        var hash = IndexHash()
        func put(_ b: [UInt8]) throws { hash.add(b); try w.write(b) }
        func putArray<T>(_ a: [T]) throws {
            try a.withUnsafeBytes { p in
                let whole = p.count - p.count % 8
                let head = UnsafeRawBufferPointer(rebasing: p[0..<whole])
                hash.add(head)
                try w.write(head)
                var tail = Array(p[whole...])
                tail += [UInt8](repeating: 0, count: padding8(tail.count))
                try put(tail)
            }
        }
        var b = Self.indexMagic
        b.putU32(salt)
        b.putU32(cur.gen)
        b.putU32(old?.gen ?? 0)
        b.putU32(UInt32(oldCount))
        b.putU64(cur.length)
        b.putU64(old?.length ?? 0)
        b.putU64(nextId)
        b.putU32(UInt32(entries.count))
        b.putU32(UInt32(threadKeys.count))
        b.putU32(UInt32(statuses.count))
        b.putU32(UInt32(entries.runs.count))
        try put(b)
        b = []
        for k in threadKeys { b.putU64(k.raw) }
        try put(b)
        try putArray(entries.offsets)
        try putArray(entries.tags)
        b = []
        for r in entries.runs { b.putU64(UInt64(r.index)); b.putU64(r.id) }
        try put(b)
        b = []
        for (id, u) in statuses.sorted(by: { $0.key < $1.key }) {
            b.putU64(id); b.putU32(u.roundTripMs); b.putU32(u.ackTag); b.putU8(u.status.rawValue); b.putU8(u.attempts)
            b.append(contentsOf: repeatElement(0, count: 6))
        }
        try put(b)
        b = []
        b.putU64(hash.h)
        try w.write(b)
    }

    /// Writes the index atomically. The log is already durable, so a lost index only costs a scan.
    func writeCheckpoint() throws {
        guard !readOnly else { return }
        try files.writeAtomically(indexPath, mode: 0o600, syncDir: false) { try writeIndex($0) }
        checkpointLength = cur.length
        appendsSinceCheckpoint = 0
        lastCheckpointError = nil
    }

    func maybeCheckpoint() {
        if appendsSinceCheckpoint >= max(checkpointMin, entries.count / 32) {
            do { try writeCheckpoint() } catch { lastCheckpointError = error as? StoreError }
        }
    }

    // MARK: - Reading records

    enum Record { case message(UInt64, StoredMessage?), status(UInt64, DeliveryUpdate) }

    /// Reads and checks the record at `offset`; nil if it is damaged.
    func readRecord(segment: Segment, offset: UInt64, decode: Bool = false) throws -> Record? {
        guard segment.fd >= 0, offset < segment.length else { return nil }
        let remaining = Int(min(segment.length - offset, UInt64(Frame.headerSize + Frame.maxPayload)))
        var want = min(512, remaining)
        while true {
            if readBuffer.count < want { readBuffer = [UInt8](repeating: 0, count: want) }
            let got = try readBuffer.withUnsafeMutableBytes {
                try files.read(segment.fd, segment.path, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset)
            }
            var more = 0
            let r: Record? = readBuffer.withUnsafeBytes { all in
                let p = UnsafeRawBufferPointer(rebasing: all[0..<got])
                switch Frame.check(p, salt: salt) {
                case .bad: return nil
                case let .needMore(n): more = n; return nil
                case let .ok(len):
                    let payload = UnsafeRawBufferPointer(rebasing: p[Frame.headerSize ..< Frame.headerSize + len])
                    if payload.first == Payload.message {
                        if decode {
                            guard let m = Payload.decodeMessage(payload) else { return nil }
                            return .message(m.id, m)
                        }
                        guard let (id, _, _) = Payload.peekMessage(payload) else { return nil }
                        return .message(id, nil)
                    }
                    if let (id, u) = Payload.decodeStatus(payload) { return .status(id, u) }
                    return nil
                }
            }
            if more > got && more <= remaining && got == want {
                want = more
                continue
            }
            return r
        }
    }

    /// The message at entry index `i`, with its latest delivery status; nil (and a damage report) if
    /// its record is damaged.
    func message(at i: Int) throws -> StoredMessage? {
        let eid = entries.id(i), eoff = entries.offset(i)
        let seg: Segment? = i < oldCount ? old : cur
        guard let s = seg, let r = try readRecord(segment: s, offset: UInt64(eoff), decode: true),
              case .message(let id, let mm) = r, id == eid, var m = mm else {
            let d = DamageReport(file: fileName(seg?.path ?? oldPath), offset: UInt64(eoff), length: 0,
                                 detail: "message \(eid) is damaged")
            if !readDamage.contains(d) { readDamage.append(d) }
            return nil
        }
        if let u = statuses[m.id] {
            m.status = u.status; m.attempts = u.attempts; m.roundTripMs = u.roundTripMs; m.ackTag = u.ackTag
        }
        return m
    }

    /// Index into `entries` of the first entry with id >= `id`.
    func lowerBound(id: UInt64) -> Int { entries.lowerBound(id: id) }

    func entryIndex(id: UInt64) -> Int? { entries.index(of: id) }

    // MARK: - Appending

    func dedupKey(_ m: StoredMessage) -> Int {
        var h = Hasher()
        h.combine(m.thread.raw)
        h.combine(m.author)
        h.combine(m.senderTimestamp)
        h.combine(m.dataType)
        m.text.withUnsafeBytes { h.combine(bytes: $0) }
        return h.finalize()
    }

    func sameKey(_ a: StoredMessage, _ b: StoredMessage) -> Bool {
        a.thread == b.thread && a.author == b.author && a.senderTimestamp == b.senderTimestamp && a.dataType == b.dataType && a.text == b.text
    }

    func rememberKey(_ key: Int, id: UInt64) {
        if dedupRing.count < dedupWindow {
            dedupRing.append(key)
        } else {
            let evicted = dedupRing[dedupHead]
            if dedupMap[evicted] != nil { dedupMap[evicted] = nil }
            dedupRing[dedupHead] = key
            dedupHead = (dedupHead + 1) % dedupWindow
        }
        dedupMap[key] = id
    }

    /// Builds the recent-keys set from the newest received messages (once, on the first append).
    func buildDedup() throws {
        guard !dedupBuilt else { return }
        dedupBuilt = true
        var recent: [Int] = []
        var i = entries.count - 1
        while i >= 0 && recent.count < dedupWindow {
            if !entries.outgoing(i) { recent.append(i) }
            i -= 1
        }
        for j in recent.reversed() {
            if let m = try message(at: j) { rememberKey(dedupKey(m), id: m.id) }
        }
    }

    /// The id of a stored message with the same sender, timestamp and text, if any.
    func duplicate(of m: StoredMessage, key: Int) throws -> UInt64? {
        guard let id = dedupMap[key] else { return nil }
        guard let i = entryIndex(id: id) else { return id } // rotated away: trust the 64-bit key
        guard let stored = try message(at: i) else { return id }
        return sameKey(stored, m) ? id : nil
    }

    /// Writes `bytes` at the end of the current segment and fsyncs. On failure the segment is cut
    /// back to where it was, so earlier records are untouched and the next append starts clean.
    func writeDurably(_ bytes: [UInt8]) throws {
        let at = cur.length
        do {
            try files.write(cur.fd, cur.path, bytes, at: at)
            try files.sync(cur.fd, cur.path)
        } catch {
            try? files.ops.truncate(cur.fd, to: at)
            throw error
        }
        cur.length += UInt64(bytes.count)
    }

    func append(_ batch: [StoredMessage]) throws -> [AppendResult] {
        guard !readOnly else { throw StoreError.readOnly }
        guard cur.fd >= 0 else { throw StoreError.closed }
        for m in batch where m.text.count > Payload.maxText {
            throw StoreError.invalidArgument("message text of \(m.text.count) bytes (at most \(Payload.maxText))")
        }
        if batch.contains(where: { $0.direction == .incoming }) { try buildDedup() }
        var results: [AppendResult] = []
        results.reserveCapacity(batch.count)
        var fresh: [(id: UInt64, rel: Int, thread: ThreadKey, outgoing: Bool, key: Int?)] = []
        var batchKeys: [Int: (UInt64, Int)] = [:]
        scratch.removeAll(keepingCapacity: true)
        var id = nextId
        for (n, m) in batch.enumerated() {
            var key: Int? = nil
            if m.direction == .incoming {
                let k = dedupKey(m)
                if let d = try duplicate(of: m, key: k) { results.append(.duplicate(d)); continue }
                if let (d, j) = batchKeys[k], sameKey(batch[j], m) { results.append(.duplicate(d)); continue }
                batchKeys[k] = (id, n)
                key = k
            }
            var mm = m
            mm.id = id
            let start = Frame.begin(&scratch)
            Payload.encode(mm, into: &scratch)
            Frame.seal(&scratch, at: start, salt: salt)
            fresh.append((id, start, m.thread, m.direction == .outgoing, key))
            results.append(.stored(id))
            id += 1
        }
        guard !fresh.isEmpty else { return results }
        // Thread numbers first: the only step that can refuse, before anything is written.
        let numbers = try fresh.map { try threadNumber($0.thread) }
        if cur.length + UInt64(scratch.count) > segmentCap && cur.length > Self.headerSize {
            try rotate()
        }
        let at = cur.length
        try writeDurably(scratch)
        for (f, t) in zip(fresh, numbers) {
            addEntry(id: f.id, offset: at + UInt64(f.rel), thread: t, outgoing: f.outgoing)
            if let k = f.key { rememberKey(k, id: f.id) }
        }
        appendsSinceCheckpoint += fresh.count
        maybeCheckpoint()
        return results
    }

    func setStatus(id: UInt64, _ u: DeliveryUpdate, at: UInt32) throws {
        guard !readOnly else { throw StoreError.readOnly }
        guard entryIndex(id: id) != nil else { throw StoreError.invalidArgument("no message with id \(id)") }
        scratch.removeAll(keepingCapacity: true)
        let start = Frame.begin(&scratch)
        Payload.encodeStatus(id: id, u, at: at, into: &scratch)
        Frame.seal(&scratch, at: start, salt: salt)
        if cur.length + UInt64(scratch.count) > segmentCap && cur.length > Self.headerSize { try rotate() }
        try writeDurably(scratch)
        statuses[id] = u
    }

    // MARK: - Rotation

    /// messages.log becomes messages.1.log (replacing the older one), and a new messages.log starts.
    func rotate() throws {
        let newGen = cur.gen &+ 1
        let tmp = curPath + ".new"
        try files.writeAtomically(tmp, Self.encodeHeader(gen: newGen, salt: salt), mode: 0o600, syncDir: false)
        do { try files.rename(curPath, oldPath) } catch { files.unlinkIfPresent(tmp); throw error }
        do { try files.rename(tmp, curPath) } catch {
            try? files.rename(oldPath, curPath)
            files.unlinkIfPresent(tmp)
            throw error
        }
        try files.syncDirectory(dir)
        let fd = try files.open(curPath, O_RDWR)
        if let o = old { files.ops.close(o.fd) }
        old = Segment(fd: cur.fd, gen: cur.gen, length: cur.length, path: oldPath)
        cur = Segment(fd: fd, gen: newGen, length: Self.headerSize, path: curPath)
        // Forget the messages of the segment that was dropped.
        let drop = oldCount
        if drop > 0 {
            entries.removeFirst(drop)
            base += drop
            for t in positions.indices {
                var k = 0
                while k < positions[t].count && Int(positions[t][k]) < base { k += 1 }
                if k > 0 { positions[t].removeFirst(k) }
            }
            let firstId = entries.isEmpty ? nextId : entries.id(0)
            statuses = statuses.filter { $0.key >= firstId }
        }
        oldCount = entries.count
        do { try writeCheckpoint() } catch { lastCheckpointError = error as? StoreError }
    }

    // MARK: - Queries

    func entry(atPosition p: UInt32) -> Int { Int(p) - base }

    /// Index in `positions[t]` of the first position whose message id is > `id`.
    func upperBound(thread t: Int, id: UInt64) -> Int {
        let ps = positions[t]
        var lo = 0, hi = ps.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries.id(entry(atPosition: ps[mid])) <= id { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    func unread(thread t: Int, readMarker: UInt64) -> Int {
        positions[t].count - upperBound(thread: t, id: max(readMarker, lastOutgoing[t]))
    }

    /// Up to `limit` messages of thread `t` with id < `before`, oldest first.
    func history(thread t: Int, limit: Int, before: UInt64?) throws -> [StoredMessage] {
        let end = before.map { upperBound(thread: t, id: $0 &- 1) } ?? positions[t].count
        let start = max(0, end - max(0, limit))
        var out: [StoredMessage] = []
        out.reserveCapacity(end - start)
        for k in start..<end {
            if let m = try message(at: entry(atPosition: positions[t][k])) { out.append(m) }
        }
        return out
    }
}
