import MeshCompanion
import Glibc
import Testing
@testable import MeshStore

@Suite struct StoreTests {
    @Test func duplicatesAreStoredOnce() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        #expect(try s.append(incoming("hello", ts: 10)) == .stored(1))
        #expect(try s.append(incoming("hello", ts: 10)) == .duplicate(1))
        #expect(try s.append(incoming("hello", ts: 11)) == .stored(2))        // other timestamp
        #expect(try s.append(incoming("hello", from: bob, ts: 10)) == .stored(3)) // other sender
        #expect(try s.append(incoming("hello!", ts: 10)) == .stored(4))       // other text
        #expect(try s.append(channelMessage("ann: hi", ts: 10)) == .stored(5))
        #expect(try s.append(channelMessage("ann: hi", ts: 10)) == .duplicate(5))
        #expect(try s.append(channelMessage("ann: hi", channel: 1, ts: 10)) == .stored(6))
        // Outgoing messages are never deduplicated (a resend is the user's choice).
        #expect(try s.append(outgoing("hello", ts: 10)) == .stored(7))
        #expect(try s.append(outgoing("hello", ts: 10)) == .stored(8))
        // Within one batch too.
        let r = try s.append([incoming("batch", ts: 20), incoming("batch", ts: 20), incoming("hello", ts: 10)])
        #expect(r == [.stored(9), .duplicate(9), .duplicate(1)])
        s.close()
        // After a restart the recent keys are rebuilt from disk.
        s = try RadioStore(directory: dir.radio)
        #expect(try s.append(incoming("hello", ts: 10)) == .duplicate(1))
        #expect(try s.append(incoming("batch", ts: 20)) == .duplicate(9))
        #expect(s.messageCount == 9)
    }

    @Test func dedupWindowIsBounded() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio, options: StoreOptions(dedupWindow: 8))
        for i in 0..<20 { try s.append(incoming("m\(i)", ts: UInt32(i))) }
        #expect(s.log.dedupMap.count == 8)
        #expect(try s.append(incoming("m19", ts: 19)) == .duplicate(20))
        #expect(try s.append(incoming("m0", ts: 0)) == .stored(21)) // fell out of the window
    }

    @Test func rotationKeepsIdsMonotonicAndQueriesSeeBothSegments() throws {
        let dir = TempDir()
        let opts = StoreOptions(logCapBytes: 16 * 1024)
        var s = try RadioStore(directory: dir.radio, options: opts)
        var ids: [UInt64] = []
        for i in 0..<600 {
            ids.append(try s.append(i % 3 == 0 ? outgoing("out \(i)", ts: UInt32(i)) : incoming("in \(i)", ts: UInt32(i))).id)
        }
        #expect(ids == (1...600).map { UInt64($0) })
        #expect(fileSize(dir.radio + "/messages.log") <= 8 * 1024)
        #expect(fileSize(dir.radio + "/messages.1.log") <= 8 * 1024)
        #expect(fileSize(dir.radio + "/messages.log") + fileSize(dir.radio + "/messages.1.log") <= 16 * 1024)
        let kept = s.messageCount
        #expect(kept > 100 && kept < 600)
        let hist = try s.history(.direct(alice), limit: 10_000)
        #expect(hist.count == kept)
        #expect(hist.map(\.id) == Array(ids.suffix(kept)))
        #expect(hist.last?.textString == "in 599")
        // The oldest kept message is in messages.1.log, the newest in messages.log.
        #expect(s.log.oldCount > 0 && s.log.oldCount < kept)
        s.close()
        for dropIndex in [false, true] {
            if dropIndex { unlink(dir.radio + "/index") }
            s = try RadioStore(directory: dir.radio, options: opts)
            #expect(s.messageCount == kept)
            #expect(s.recovery.fullScan == dropIndex)
            #expect(try s.history(.direct(alice), limit: 10_000).map(\.id) == Array(ids.suffix(kept)))
            s.close()
        }
        s = try RadioStore(directory: dir.radio, options: opts)
        #expect(try s.append(incoming("next", ts: 9999)).id == 601)
    }

    @Test func conversationsUnreadAndMarkRead() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        try s.saveContacts([StoredContact(publicKey: alice.bytes + [UInt8](repeating: 1, count: 26), name: "Alice"),
                            StoredContact(publicKey: bob.bytes + [UInt8](repeating: 2, count: 26), name: "Bob")])
        try s.saveChannels([StoredChannel(index: 0, name: "Public", secret: [0x8B, 0x33])])
        try s.append(incoming("a1", from: alice, ts: 1))
        try s.append(channelMessage("x: c1", ts: 2))
        try s.append(incoming("b1", from: bob, ts: 3))
        try s.append(incoming("a2", from: alice, ts: 4))
        try s.append(channelMessage("y: c2", ts: 5))
        try s.append(channelMessage("z: c3", ts: 6))

        var convs = try s.conversations()
        #expect(convs.map(\.name) == ["Public", "Alice", "Bob"])
        #expect(convs.map(\.unread) == [3, 2, 1])
        #expect(convs.map(\.lastMessage.textString) == ["z: c3", "a2", "b1"])

        try s.markRead(.channel(0), through: 5)
        #expect(s.unreadCount(.channel(0)) == 1)
        try s.markRead(.channel(0))
        #expect(s.unreadCount(.channel(0)) == 0)
        // Replying counts as reading.
        try s.append(outgoing("hi bob", to: bob))
        #expect(s.unreadCount(.direct(bob)) == 0)
        try s.append(incoming("b2", from: bob, ts: 7))
        #expect(s.unreadCount(.direct(bob)) == 1)
        convs = try s.conversations()
        #expect(convs.map(\.name) == ["Bob", "Public", "Alice"])
        s.close()

        s = try RadioStore(directory: dir.radio)
        #expect(try s.conversations().map(\.unread) == [1, 0, 2])
        let chats = try s.chats()
        #expect(chats.first?.name == "Bob" && chats.first?.lastText == "b2" && chats.first?.unread == 1)
    }

    @Test func historyPagesBackwards() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        for i in 0..<120 {
            try s.append(incoming("a\(i)", from: alice, ts: UInt32(i)))
            try s.append(incoming("b\(i)", from: bob, ts: UInt32(i)))
        }
        let p1 = try s.history(.direct(alice), limit: 50)
        #expect(p1.map(\.textString) == (70..<120).map { "a\($0)" })
        let p2 = try s.history(.direct(alice), limit: 50, before: p1.first!.id)
        #expect(p2.map(\.textString) == (20..<70).map { "a\($0)" })
        let p3 = try s.history(.direct(alice), limit: 50, before: p2.first!.id)
        #expect(p3.map(\.textString) == (0..<20).map { "a\($0)" })
        #expect(try s.history(.direct(alice), limit: 50, before: p3.first!.id).isEmpty)
        #expect(try s.history(.channel(9), limit: 50).isEmpty)
        // The CLI page says where the next page starts.
        let page = try s.historyPage("a1a2a3a4a5a6", limit: 50)
        #expect(page.lines.count == 50 && page.olderBefore == p1.first!.id)
        let last = try s.historyPage(.direct(alice), limit: 50, before: p2.first!.id)
        #expect(last.lines.count == 20 && last.olderBefore == nil)
        // Global order for delivery cursors.
        let after = try s.messages(after: 10, limit: 3)
        #expect(after.map(\.id) == [11, 12, 13])
    }

    @Test func resolveNamesForTheCLI() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        try s.saveContacts([StoredContact(publicKey: alice.bytes + [UInt8](repeating: 1, count: 26), name: "Alice Smith"),
                            StoredContact(publicKey: bob.bytes + [UInt8](repeating: 2, count: 26), type: 3, name: "Bob's Room")])
        try s.saveChannels([StoredChannel(index: 0, name: "Public", secret: []),
                            StoredChannel(index: 2, name: "#hike", secret: [1])])
        #expect(try s.resolveThread("Alice Smith") == .direct(alice))
        #expect(try s.resolveThread("alice smith") == .direct(alice))
        #expect(try s.resolveThread("ali") == .direct(alice))
        #expect(try s.resolveThread("bob's room") == .room(bob))
        #expect(try s.resolveThread("public") == .channel(0))
        #expect(try s.resolveThread("hike") == .channel(2))
        #expect(try s.resolveThread("#hike") == .channel(2))
        #expect(try s.resolveThread("#2") == .channel(2))
        #expect(try s.resolveThread("channel 5") == .channel(5))
        #expect(try s.resolveThread("b0b1") == .room(bob))
        #expect(throws: StoreError.unknownThread("carol")) { try s.resolveThread("carol") }
        try s.append(channelMessage("ann: hello there", channel: 2))
        try s.append(StoredMessage(kind: .channel, direction: .outgoing, channelIndex: 2, senderTimestamp: 1,
                                   receivedAt: 2, text: "me: hi ann"))
        let page = try s.historyPage("#hike")
        #expect(page.name == "#hike")
        #expect(page.lines.map(\.sender) == ["ann", "me"])
        #expect(page.lines.map(\.text) == ["hello there", "me: hi ann"])
        #expect(page.lines[1].status == .pending)
    }

    @Test func outboxSurvivesReopen() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        let a = try s.enqueue(outgoing("first", ts: 100), now: 100)
        let b = try s.enqueue(outgoing("second", to: bob, ts: 101), now: 101)
        try s.recordSent(id: a.messageId, attempts: 1, ackTag: 0xAABBCCDD, nextAttemptAt: 130, now: 110)
        s.close()

        s = try RadioStore(directory: dir.radio)
        #expect(s.outbox.map(\.messageId) == [a.messageId, b.messageId])
        #expect(s.outbox[0].attempts == 1 && s.outbox[0].ackTag == 0xAABBCCDD && s.outbox[0].nextAttemptAt == 130)
        #expect(s.outbox[1].thread == .direct(bob) && s.outbox[1].text == Array("second".utf8))
        #expect(s.outboxItem(ackTag: 0xAABBCCDD)?.messageId == a.messageId)
        #expect(try s.message(id: a.messageId)?.status == .sent)
        try s.recordAcked(id: a.messageId, roundTripMs: 2100, now: 120)
        try s.recordFailed(id: b.messageId, now: 121)
        s.close()

        s = try RadioStore(directory: dir.radio)
        #expect(s.outbox.isEmpty)
        let m = try s.message(id: a.messageId)
        #expect(m?.status == .acked && m?.roundTripMs == 2100 && m?.attempts == 1 && m?.ackTag == 0xAABBCCDD)
        #expect(try s.message(id: b.messageId)?.status == .failed)
    }

    /// The outbox record layout is a file format: one written byte by byte as documented (an attempt
    /// in flight with its ACK code and deadline, and one from before codes were kept: tag 0) reads back.
    @Test func outboxRecordsInTheDocumentedLayoutRead() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        let a = try s.enqueue(outgoing("waits", ts: 100), now: 100)
        let b = try s.enqueue(outgoing("old", to: bob, ts: 101), now: 101)
        s.close()
        func put(_ id: UInt64, _ thread: ThreadKey, attempts: UInt8, ts: UInt32, tag: UInt32, at: UInt32, _ text: String) -> [UInt8] {
            var p: [UInt8] = [1, 0, attempts, 0]
            p.putU64(id); p.putU64(thread.raw)
            p.putU32(ts); p.putU32(tag); p.putU32(at); p.putU32(ts)
            p.putU16(UInt16(text.utf8.count)); p += Array(text.utf8)
            var f: [UInt8] = []
            let start = Frame.begin(&f)
            f += p
            Frame.seal(&f, at: start, salt: 0)
            return f
        }
        writeBytes(dir.radio + "/outbox", put(a.messageId, a.thread, attempts: 1, ts: 100, tag: 0x1234_5678, at: 107, "waits")
                   + put(b.messageId, b.thread, attempts: 1, ts: 101, tag: 0, at: 0, "old"))
        s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        #expect(s.recovery.damage.isEmpty)
        #expect(s.outbox == [OutboxItem(messageId: a.messageId, thread: a.thread, senderTimestamp: 100, text: Array("waits".utf8),
                                        attempts: 1, ackTag: 0x1234_5678, nextAttemptAt: 107, createdAt: 100),
                             OutboxItem(messageId: b.messageId, thread: .direct(bob), senderTimestamp: 101, text: Array("old".utf8),
                                        attempts: 1, createdAt: 101)])
        #expect(s.outboxItem(ackTag: 0x1234_5678)?.messageId == a.messageId)
        #expect(s.outboxItem(ackTag: 0) == nil)
    }

    @Test func outboxCompacts() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        for i in 0..<100 {
            let item = try s.enqueue(outgoing("message \(i) " + String(repeating: "-", count: 900)), now: 1)
            try s.recordAcked(id: item.messageId, roundTripMs: 1, now: 2)
        }
        #expect(fileSize(dir.radio + "/outbox") <= 64 * 1024)
        #expect(s.outbox.isEmpty)
    }

    @Test func secretsAreMode0600() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        let key = [UInt8](repeating: 0x5A, count: 32)
        try s.savePassword("hunter2", for: key)
        #expect(try s.password(for: key) == "hunter2")
        #expect(fileMode(dir.radio + "/secrets") == 0o700)
        #expect(fileMode(dir.radio + "/secrets/" + hexString(key)) == 0o600)
        try s.saveChannels([StoredChannel(index: 1, name: "ops", secret: [UInt8](repeating: 7, count: 16))])
        #expect(fileMode(dir.radio + "/channels") == 0o600)
        #expect(fileMode(dir.radio) == 0o700)
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(try s.password(for: key) == "hunter2")
        #expect(s.channels == [StoredChannel(index: 1, name: "ops", secret: [UInt8](repeating: 7, count: 16))])
        try s.removePassword(for: key)
        #expect(try s.password(for: key) == nil)
        try s.removePassword(for: key)
        // A freed channel slot is gone after reopening.
        try s.saveChannels([StoredChannel(index: 1, name: "", secret: [])])
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(s.channels.isEmpty)
    }

    @Test func oneOwnerPerRadio() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        try s.append(incoming("x"))
        #expect(throws: StoreError.locked(path: dir.radio + "/lock", pid: getpid())) {
            _ = try RadioStore(directory: dir.radio)
        }
        let e = StoreError.locked(path: dir.radio + "/lock", pid: getpid())
        #expect("\(e)".contains("in use by process \(getpid())"))
        // Read-only opening works while the owner runs, and refuses writes.
        let r = try RadioStore(directory: dir.radio, options: StoreOptions(readOnly: true))
        #expect(r.messageCount == 1)
        #expect(throws: StoreError.readOnly) { try r.append(incoming("y")) }
        #expect(throws: StoreError.readOnly) { try r.markRead(.direct(alice)) }
        r.close()
        s.close()
        let s2 = try RadioStore(directory: dir.radio)
        #expect(s2.messageCount == 1)
    }

    @Test func contactsUpdateInPlace() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        var cs = (0..<10).map { i in
            StoredContact(publicKey: [UInt8](repeating: UInt8(i), count: 32), name: "node \(i)", lastModified: UInt32(i))
        }
        try s.saveContacts(cs)
        #expect(fileSize(dir.radio + "/contacts") == 10 * 256)
        cs[3].nameBytes = Array("renamed".utf8) + [UInt8](repeating: 0, count: 25)
        cs[3].lastModified = 99
        try s.saveContacts([cs[3]])
        try s.markContactRemoved(publicKey: cs[4].publicKey, now: 5)
        #expect(fileSize(dir.radio + "/contacts") == 10 * 256)
        try s.setContactsWatermark(99)
        try s.setContactsWatermark(0) // ignored
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(try s.contactsWatermark() == 99)
        s.close()

        // A torn write of one record damages that record only.
        var b = readBytes(dir.radio + "/contacts")
        b[5 * 256 + 40] ^= 0xFF
        writeBytes(dir.radio + "/contacts", b)
        s = try RadioStore(directory: dir.radio)
        #expect(s.contacts.count == 9)
        #expect(s.recovery.damage.count == 1)
        #expect(s.contact(publicKey: cs[3].publicKey)?.name == "renamed")
        #expect(s.contact(publicKey: cs[4].publicKey)?.removed == true)
        #expect(s.contact(prefix: KeyPrefix(sixOf: cs[7].publicKey))?.name == "node 7")
        #expect(try s.contactsWatermark() == 0) // damage means a full contact sync
        // The damaged slot is reused.
        try s.saveContacts([StoredContact(publicKey: [UInt8](repeating: 0xEE, count: 32), name: "new")])
        #expect(fileSize(dir.radio + "/contacts") == 10 * 256)
    }

    @Test func cursorsAndState() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        #expect(try s.cursor("hook") == 0)
        #expect(try s.storedCursor("hook") == nil)
        try s.setCursor("hook", 42)
        #expect(throws: StoreError.self) { try s.setCursor("../x", 1) }
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(try s.cursor("hook") == 42)
        // A damaged state file reads as unset and is reported.
        var b = readBytes(dir.radio + "/cursor-hook")
        b[b.count - 1] ^= 1
        writeBytes(dir.radio + "/cursor-hook", b)
        #expect(try s.cursor("hook") == 0)
        #expect(try s.storedCursor("hook") == 0)
        #expect(s.recovery.damage.contains { $0.file == "cursor-hook" })
        try s.setCursor("sync", 0)
        #expect(try s.storedCursor("sync") == 0)
    }

    @Test func stateLocation() throws {
        #expect(try StoreLocation.stateRoot(stateDir: "/srv/pm") == "/srv/pm")
        let env1: (String) -> String? = { ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"][$0] }
        #expect(try StoreLocation.stateRoot(environment: env1) == "/x/state/pocketmesh")
        let env2: (String) -> String? = { ["HOME": "/home/u"][$0] }
        #expect(try StoreLocation.stateRoot(environment: env2) == "/home/u/.local/state/pocketmesh")
        #expect(throws: StoreError.self) { try StoreLocation.stateRoot(environment: { _ in nil }) }
        let key = (0..<32).map { UInt8($0) }
        #expect(StoreLocation.radioDirectory(stateRoot: "/r", publicKey: key) == "/r/" + hexString(key))

        let dir = TempDir()
        let s = try RadioStore(publicKey: key, stateDir: dir.path + "/state")
        try s.append(incoming("x"))
        s.close()
        #expect(StoreLocation.radios(stateRoot: dir.path + "/state") == [hexString(key)])
        for f in ["messages.log", "index", "contacts", "channels", "outbox", "lock"] {
            #expect(fileSize(dir.path + "/state/" + hexString(key) + "/" + f) >= 0, "\(f)")
        }
    }
}

@Suite struct ResolveThreadRuleTests {
    @Test func ambiguousNamesAreReportedNotGuessed() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        defer { s.close() }
        try s.saveContacts([StoredContact(publicKey: [0x10] + [UInt8](repeating: 1, count: 31), name: "Ann"),
                            StoredContact(publicKey: [0x20] + [UInt8](repeating: 2, count: 31), name: "ann")])
        #expect(try s.resolveThread("Ann") == .direct(KeyPrefix(sixOf: [0x10] + [UInt8](repeating: 1, count: 5))))
        #expect(throws: StoreError.ambiguousThread("ANN", count: 2)) { try s.resolveThread("ANN") }
        #expect(try s.resolveThread("2002") == .direct(KeyPrefix(sixOf: [0x20] + [UInt8](repeating: 2, count: 5))))
    }
}
