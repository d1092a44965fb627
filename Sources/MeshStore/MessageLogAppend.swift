import Glibc

// Reading records, appending (dedup, durable writes), rotation and the per-thread queries.

extension MessageLog {
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
        guard nextId <= RadioStore.maxId, UInt64(batch.count) <= RadioStore.maxId + 1 - nextId else {
            throw StoreError.invalidArgument("no message ids left: the store has issued every id up to \(RadioStore.maxId)")
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
