import Glibc

// The message log's in-memory index: built by scanning, loaded from and checkpointed to the index file.

extension MessageLog {
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
        func damage(_ detail: String) {
            report.damage.append(DamageReport(file: file, offset: offset, length: UInt64(p.count + Frame.headerSize), detail: detail))
        }
        switch p.first {
        case Payload.message:
            guard let (id, thread, outgoing) = Payload.peekMessage(p) else {
                damage("malformed message record")
                return
            }
            // An id past the largest the store issues was never written by it: taking it would
            // make every later id (and the `ids` ceiling written on close) unreadable.
            guard id <= RadioStore.maxId else {
                damage("message id \(id) past the largest id \(RadioStore.maxId)")
                return
            }
            guard id >= nextId else {
                damage("message id \(id) out of order")
                return
            }
            addEntry(id: id, offset: offset, thread: try threadNumber(thread), outgoing: outgoing)
        case Payload.status:
            // A status record follows its message: its id is taken even when the message record
            // was lost, so a new message never gets it (and this stale status).
            if let (id, u) = Payload.decodeStatus(p) {
                guard id <= RadioStore.maxId else {
                    damage("status of message id \(id) past the largest id \(RadioStore.maxId)")
                    return
                }
                statuses[id] = u
                if id >= nextId { nextId = id + 1 }
            }
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
        // Ids past the largest the store issues mean the index is not the store's: scan the log.
        guard next <= RadioStore.maxId + 1, lastId <= RadioStore.maxId else { return false }

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
                if let st = DeliveryStatus(rawValue: p[o + 16]), p.u64(o) <= RadioStore.maxId {
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
        nextId = max(next, lastId + 1, (sts.keys.max() ?? 0) &+ 1)
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
}
