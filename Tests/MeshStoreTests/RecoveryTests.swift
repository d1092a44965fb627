import Glibc
import Testing
@testable import MeshStore

@Suite struct RecoveryTests {
    /// Offsets of the records of the current segment, from the in-memory index.
    func recordOffsets(_ s: RadioStore) -> [Int] {
        s.log.entries.offsets[s.log.oldCount...].map { Int($0) }
    }

    @Test func tornTailIsTruncatedAtEveryByteOfTheLastRecord() throws {
        let dir = TempDir()
        // Four messages checkpointed in the index, then a fifth after the checkpoint.
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<4 { try s.append(incoming("message \(i)", ts: UInt32(i))) }
        s.close()
        let index4 = readBytes(dir.radio + "/index")
        s = try RadioStore(directory: dir.radio)
        try s.append(incoming("the last one, torn", ts: 99))
        let lastStart = recordOffsets(s).last!
        s.close()
        let full = readBytes(dir.radio + "/messages.log")
        let log = dir.radio + "/messages.log"

        for withIndex in [true, false] {
            for cut in lastStart ..< full.count {
                writeBytes(log, Array(full[..<cut]))
                if withIndex { writeBytes(dir.radio + "/index", index4) } else { unlink(dir.radio + "/index") }
                let r = try RadioStore(directory: dir.radio)
                #expect(r.messageCount == 4, "cut at \(cut)")
                #expect(r.recovery.truncatedBytes == UInt64(cut - lastStart), "cut at \(cut)")
                #expect(r.recovery.damage.isEmpty, "cut at \(cut)")
                #expect(r.recovery.fullScan == !withIndex)
                #expect(fileSize(log) == lastStart)
                r.close()
            }
        }
        // A store cut back like this takes appends again, and they survive a reopen.
        s = try RadioStore(directory: dir.radio)
        let id = try s.append(incoming("after repair", ts: 100)).id
        #expect(id == 6) // ids never go backwards: 5 was issued before the log was cut
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(s.messageCount == 5)
        #expect(try s.history(.direct(alice), limit: 1).first?.textString == "after repair")
        s.close()
    }

    @Test func badChecksumAtTheEndIsTruncated() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        for i in 0..<3 { try s.append(incoming("m\(i)", ts: UInt32(i))) }
        let last = recordOffsets(s).last!
        s.close()
        var b = readBytes(dir.radio + "/messages.log")
        b[b.count - 1] ^= 0x40
        writeBytes(dir.radio + "/messages.log", b)
        unlink(dir.radio + "/index")
        let r = try RadioStore(directory: dir.radio)
        #expect(r.messageCount == 2)
        #expect(fileSize(dir.radio + "/messages.log") == last)
        #expect(r.recovery.truncatedBytes > 0)
    }

    @Test(arguments: ["text", "length", "magic"])
    func damagedMiddleRecordIsReportedAndLaterRecordsKept(what: String) throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<10 { try s.append(incoming("message number \(i)", ts: UInt32(i))) }
        let offsets = recordOffsets(s)
        s.close()
        var b = readBytes(dir.radio + "/messages.log")
        switch what {
        case "text": b[offsets[4] + 12 + 46] ^= 0x01
        case "length": b[offsets[4] + 6] = 0x7F  // a huge length
        default: b[offsets[4]] = 0x00
        }
        writeBytes(dir.radio + "/messages.log", b)
        unlink(dir.radio + "/index")
        s = try RadioStore(directory: dir.radio)
        #expect(s.messageCount == 9)
        #expect(s.recovery.damage.count == 1)
        #expect(s.recovery.damage.first?.offset == UInt64(offsets[4]))
        #expect(s.recovery.damage.first?.length == UInt64(offsets[5] - offsets[4]))
        #expect(s.recovery.truncatedBytes == 0)
        let texts = try s.history(.direct(alice), limit: 100).map(\.textString)
        #expect(texts == (0..<10).filter { $0 != 4 }.map { "message number \($0)" })
        // Appending goes on after the damage, and nothing is lost on the next open either.
        try s.append(incoming("eleven", ts: 11))
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(s.messageCount == 10)
        #expect(!s.recovery.fullScan) // the index holds the gap in the ids
        #expect(try s.history(.direct(alice), limit: 100).map(\.id) == [1, 2, 3, 4, 6, 7, 8, 9, 10, 11])
        #expect(try s.message(id: 5) == nil)
        #expect(fileSize(dir.radio + "/messages.log") == b.count + (offsets[1] - offsets[0]) - 10) // "eleven" is 10 bytes shorter
    }

    @Test func damageInsideTheIndexedRegionIsReportedOnRead() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<5 { try s.append(incoming("message number \(i)", ts: UInt32(i))) }
        let offsets = recordOffsets(s)
        s.close()
        var b = readBytes(dir.radio + "/messages.log")
        b[offsets[2] + 12 + 46] ^= 0x01
        writeBytes(dir.radio + "/messages.log", b)
        s = try RadioStore(directory: dir.radio)
        #expect(!s.recovery.fullScan)
        let texts = try s.history(.direct(alice), limit: 10).map(\.textString)
        #expect(texts.count == 4)
        #expect(s.recovery.damage.count == 1)
        #expect(s.recovery.damage.first?.description.contains("message 3 is damaged") == true)
    }

    @Test func staleOrDamagedIndexFallsBackToAFullScan() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<50 { try s.append(i % 2 == 0 ? incoming("in \(i)", ts: UInt32(i)) : outgoing("out \(i)", ts: UInt32(i))) }
        try s.setDelivery(id: 2, DeliveryUpdate(status: .acked, attempts: 1, roundTripMs: 800), at: 5)
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(!s.recovery.fullScan)
        #expect(s.recovery.scannedRecords == 0)
        let before = try s.history(.direct(alice), limit: 100)
        #expect(before.count == 50 && before[1].status == .acked && before[1].roundTripMs == 800)
        s.close()
        var idx = readBytes(dir.radio + "/index")
        idx[100] ^= 0xFF
        writeBytes(dir.radio + "/index", idx)
        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.fullScan)
        #expect(try s.history(.direct(alice), limit: 100) == before)
        s.close()
        // The scan rewrote the index.
        s = try RadioStore(directory: dir.radio)
        #expect(!s.recovery.fullScan)
        #expect(try s.history(.direct(alice), limit: 100) == before)
    }

    @Test func logCutInsideTheIndexedRegionMeansAFullScan() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<5 { try s.append(incoming("message \(i)", ts: UInt32(i))) }
        let offsets = recordOffsets(s)
        s.close()
        truncateFile(dir.radio + "/messages.log", offsets[2] + 7)
        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.fullScan)
        #expect(s.messageCount == 2)
        #expect(s.recovery.truncatedBytes == 7)
        // Messages 3 to 5 are gone, but their ids were handed out (to hooks, cursors): never again.
        #expect(try s.append(incoming("again", ts: 9)) == .stored(6))
    }

    @Test func idsNeverGoBackwardsWhenTheLogIsLost() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<5 { try s.append(incoming("message \(i)", ts: UInt32(i))) }
        s.close()
        for f in ["messages.log", "index"] { unlink(dir.radio + "/" + f) }
        s = try RadioStore(directory: dir.radio)
        #expect(s.messageCount == 0)
        #expect(s.recovery.idsRaised == 5)
        #expect(try s.append(incoming("after the loss", ts: 10)) == .stored(6))
        s.close()
        // A crash (no close) after more appends: the ceiling written ahead still covers them.
        s = try RadioStore(directory: dir.radio)
        for i in 0..<3 { try s.append(incoming("more \(i)", ts: UInt32(20 + i))) }  // ids 7, 8, 9
        let ids = readBytes(dir.radio + "/ids")
        s.close()
        writeBytes(dir.radio + "/ids", ids)  // as if the close never ran
        for f in ["messages.log", "index"] { unlink(dir.radio + "/" + f) }
        s = try RadioStore(directory: dir.radio)
        let next = try s.append(incoming("after the crash", ts: 30)).id
        #expect(next > 9 && next <= 9 + RadioStore.idBlock + 1)
        s.close()
        // A store from before the ceiling existed: a delivery cursor still keeps ids above it.
        unlink(dir.radio + "/ids")
        for f in ["messages.log", "index"] { unlink(dir.radio + "/" + f) }
        s = try RadioStore(directory: dir.radio)
        try s.setCursor("sync", 500)
        s.close()
        unlink(dir.radio + "/ids")
        s = try RadioStore(directory: dir.radio)
        #expect(try s.append(incoming("above the cursor", ts: 40)) == .stored(501))
        s.ensureNextId(atLeast: 900)
        #expect(try s.append(incoming("above the hook's ids", ts: 41)) == .stored(900))
    }

    @Test func writeErrorsAreTypedAndLeaveTheStoreConsistent() throws {
        let dir = TempDir()
        let ops = FaultyFileOps()
        var s = try RadioStore(directory: dir.radio, options: StoreOptions(fileOps: ops))
        try s.append(incoming("one", ts: 1))
        let size1 = fileSize(dir.radio + "/messages.log")

        ops.failWrite = .noSpace
        ops.partialBytes = 20
        #expect {
            try s.append(incoming("two", ts: 2))
        } throws: { e in
            guard case let .io(_, path, errno)? = e as? StoreError else { return false }
            return errno == .noSpace && path.hasSuffix("messages.log")
                && "\(e)".contains("No space left on device (ENOSPC); free some disk space")
        }
        #expect(fileSize(dir.radio + "/messages.log") == size1)

        ops.failSync = .io
        #expect(throws: StoreError.io(operation: "fsync", path: dir.radio + "/messages.log", errno: .io)) {
            try s.append(incoming("three", ts: 3))
        }
        #expect(fileSize(dir.radio + "/messages.log") == size1)
        #expect(s.messageCount == 1)

        // The same message can be stored once the disk is back (it was not stored, so it is no duplicate).
        #expect(try s.append(incoming("two", ts: 2)) == .stored(2))
        // A failed status write and a failed outbox write are errors too, nothing else changes.
        ops.failWrite = .noSpace
        #expect(throws: StoreError.self) { try s.setDelivery(id: 1, DeliveryUpdate(status: .sent), at: 0) }
        ops.failSync = .io
        #expect(throws: StoreError.self) { _ = try s.enqueue(outgoing("not stored"), now: 9) }
        ops.failSync = .io
        ops.syncsBeforeFailure = 1 // the message is stored, queueing it fails
        #expect(throws: StoreError.self) { _ = try s.enqueue(outgoing("queued"), now: 9) }
        #expect(s.outbox.isEmpty)
        s.close()

        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.damage.isEmpty)
        #expect(s.recovery.truncatedBytes == 0)
        let texts = try s.history(.direct(alice), limit: 10).map(\.textString)
        #expect(texts.prefix(2) == ["one", "two"])
        // The enqueue above stored the message but failed to queue it: reopening queues it.
        #expect(texts.count == 3 && texts[2] == "queued")
        #expect(s.outbox.map(\.text) == [Array("queued".utf8)])
    }

    @Test func failedRotationKeepsEverything() throws {
        let dir = TempDir()
        let ops = FaultyFileOps()
        var s = try RadioStore(directory: dir.radio, options: StoreOptions(logCapBytes: 8192, fileOps: ops))
        var n = 0
        while s.log.cur.length + 150 < s.log.segmentCap {
            try s.append(incoming("message \(n)", ts: UInt32(n)))
            n += 1
        }
        let big = incoming(String(repeating: "x", count: 200), ts: 1000)
        ops.failRename = .io
        #expect(throws: StoreError.self) { try s.append(big) }
        #expect(!ops.exists(dir.radio + "/messages.1.log"))
        #expect(s.messageCount == n)
        #expect(try s.append(big) == .stored(UInt64(n + 1)))
        #expect(ops.exists(dir.radio + "/messages.1.log"))
        #expect(try s.history(.direct(alice), limit: 1000).count == n + 1)
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(try s.history(.direct(alice), limit: 1000).count == n + 1)
        #expect(s.recovery.damage.isEmpty)
    }
}

@Suite struct HeaderTests {
    @Test func damagedHeaderIsRepairedFromTheIndexSalt() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<5 { try s.append(incoming("message \(i)", ts: UInt32(i))) }
        s.close()
        var b = readBytes(dir.radio + "/messages.log")
        for i in 0..<64 { b[i] = 0 }
        writeBytes(dir.radio + "/messages.log", b)
        s = try RadioStore(directory: dir.radio)
        #expect(s.messageCount == 5)
        #expect(s.recovery.damage.count == 1 && s.recovery.damage[0].detail == "segment header unreadable")
        #expect(s.recovery.truncatedBytes == 0)
        s.close()
        // Repaired: the next open is clean and uses the index again.
        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.damage.isEmpty && !s.recovery.fullScan)
        #expect(try s.history(.direct(alice), limit: 10).count == 5)
    }

    @Test func unreadableHeaderWithoutAnySaltIsAClearErrorAndNothingIsCut() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        for i in 0..<5 { try s.append(incoming("message \(i)", ts: UInt32(i))) }
        s.close()
        var b = readBytes(dir.radio + "/messages.log")
        for i in 0..<64 { b[i] = 0 }
        writeBytes(dir.radio + "/messages.log", b)
        unlink(dir.radio + "/index")
        #expect {
            _ = try RadioStore(directory: dir.radio)
        } throws: { e in
            guard case .corrupt? = e as? StoreError else { return false }
            return "\(e)".contains("move it aside")
        }
        #expect(readBytes(dir.radio + "/messages.log") == b)
    }
}

@Suite struct StatusOfALostMessageTests {
    /// A delivery status record names its message's id. When that message's record is damaged
    /// (and the index and id ceiling are gone too), the id stays taken: a new message must not
    /// get it, nor the stale status (found by fuzzing the store).
    @Test func aStatusKeepsItsIdTakenWhenItsMessageIsLost() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        try s.append(incoming("one", ts: 1))
        try s.append(incoming("two", ts: 2))
        let item = try s.enqueue(outgoing("the lost one", ts: 3), now: 1)
        try s.recordAcked(id: item.messageId, roundTripMs: 77, now: 2)
        s.close()
        var log = readBytes(dir.radio + "/messages.log")
        let needle = Array("the lost one".utf8)
        let at = try #require((0...(log.count - needle.count)).first { Array(log[$0 ..< $0 + needle.count]) == needle })
        log[at] ^= 0xFF
        writeBytes(dir.radio + "/messages.log", log)
        for f in ["index", "ids"] { unlink(dir.radio + "/" + f) }
        s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        #expect(s.recovery.damage.count == 1)
        guard case .stored(let id) = try s.append(incoming("new", ts: 4)) else { Issue.record("not stored"); return }
        #expect(id > item.messageId)
        let m = try #require(try s.message(id: id))
        #expect(m.status == .received && m.ackTag == 0)
    }
}

@Suite struct IdsPastTheLargestTests {
    /// A record whose id is past the largest id the store issues (2^53 - 1) was not written by it.
    /// Taking it raised the next id past that largest id; the clean close then wrote an `ids`
    /// ceiling the next open refused as damage, so a store that opened and closed cleanly could not
    /// be opened again (found by fuzzing the store). Such a record is damage, skipped and reported.
    @Test(arguments: ["message", "status"])
    func aRecordPastTheLargestIdIsDamageAndTheStoreReopens(kind: String) throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        try s.append(incoming("one", ts: 1))
        let salt = s.log.salt
        s.close()
        let big = RadioStore.maxId + 0x1234
        var f: [UInt8] = []
        let start = Frame.begin(&f)
        if kind == "message" {
            var m = incoming("forged", ts: 2)
            m.id = big
            Payload.encode(m, into: &f)
        } else {
            Payload.encodeStatus(id: big, DeliveryUpdate(status: .acked, attempts: 1, roundTripMs: 5, ackTag: 9), at: 3, into: &f)
        }
        Frame.seal(&f, at: start, salt: salt)
        writeBytes(dir.radio + "/messages.log", readBytes(dir.radio + "/messages.log") + f)
        for name in ["index", "ids"] { unlink(dir.radio + "/" + name) }

        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.damage.count == 1)
        #expect(s.nextMessageId <= RadioStore.maxId)
        guard case .stored(let id) = try s.append(incoming("two", ts: 4)) else { Issue.record("not stored"); return }
        #expect(id == 2)
        s.close()
        s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        #expect(try s.messages(after: 0, limit: 10).map(\.id) == [1, 2])
    }

    /// An index whose next id is past the largest id is not the store's: the log is scanned instead.
    @Test func anIndexWithANextIdPastTheLargestIsNotUsed() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<3 { try s.append(incoming("m\(i)", ts: UInt32(i))) }
        s.close()
        var b = readBytes(dir.radio + "/index")
        for k in 0..<8 { b[40 + k] = UInt8(truncatingIfNeeded: (RadioStore.maxId + 7) >> (8 * UInt64(k))) }
        var h = IndexHash()
        b.withUnsafeBytes { h.add(UnsafeRawBufferPointer(rebasing: $0[0 ..< b.count - 8])) }
        for k in 0..<8 { b[b.count - 8 + k] = UInt8(truncatingIfNeeded: h.h >> (8 * UInt64(k))) }
        writeBytes(dir.radio + "/index", b)
        unlink(dir.radio + "/ids")
        s = try RadioStore(directory: dir.radio)
        #expect(s.recovery.fullScan)
        #expect(s.nextMessageId == 4)
        s.close()
        s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        #expect(try s.messages(after: 0, limit: 10).map(\.id) == [1, 2, 3])
    }

    /// The last id is never issued twice and never passed: an append once every id is issued is an
    /// error, and nothing is written.
    @Test func anAppendPastTheLargestIdIsRefused() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        s.ensureNextId(atLeast: RadioStore.maxId)
        guard case .stored(let id) = try s.append(incoming("the last id", ts: 1)) else { Issue.record("not stored"); return }
        #expect(id == RadioStore.maxId)
        #expect(throws: StoreError.self) { try s.append(incoming("one too many", ts: 2)) }
        s.close()
        s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        #expect(try s.messages(after: 0, limit: 10).map(\.id) == [RadioStore.maxId])
    }
}
