import MeshCompanion
import Glibc

/// How to open a store.
public struct StoreOptions {
    /// Cap on the message log, both segments together (each segment rotates at half of it).
    public var logCapBytes: UInt64 = 64 << 20
    /// How many recent received messages are checked for duplicates.
    public var dedupWindow = 4096
    /// Appends between index checkpoints (at least; large stores checkpoint every 1/32 of their size).
    public var checkpointEvery = 4096
    /// Open without the lock and without repairing anything (for reading while a daemon owns the radio).
    public var readOnly = false
    /// The file system calls (tests inject failures here).
    public var fileOps: FileOps = SystemFileOps()

    public init(logCapBytes: UInt64 = 64 << 20, dedupWindow: Int = 4096, checkpointEvery: Int = 4096,
                readOnly: Bool = false, fileOps: FileOps = SystemFileOps()) {
        self.logCapBytes = logCapBytes; self.dedupWindow = dedupWindow; self.checkpointEvery = checkpointEvery
        self.readOnly = readOnly; self.fileOps = fileOps
    }
}

/// Where stores live.
public enum StoreLocation {
    /// `stateDir` if given, else `$XDG_STATE_HOME/pocketmesh`, else `$HOME/.local/state/pocketmesh`.
    public static func stateRoot(stateDir: String? = nil, environment: (String) -> String? = { getenv($0).map { String(cString: $0) } }) throws -> String {
        if let d = stateDir, !d.isEmpty { return d }
        if let x = environment("XDG_STATE_HOME"), x.hasPrefix("/") { return x + "/pocketmesh" }
        if let h = environment("HOME"), !h.isEmpty { return h + "/.local/state/pocketmesh" }
        throw StoreError.invalidArgument("neither XDG_STATE_HOME nor HOME is set; pass --state-dir DIR")
    }

    /// The radio's folder: its public key in hex under the state root.
    public static func radioDirectory(stateRoot: String, publicKey: [UInt8]) -> String {
        stateRoot + "/" + hexString(publicKey)
    }

    /// Radio folders present under a state root (public key hex names).
    public static func radios(stateRoot: String) -> [String] {
        guard let d = opendir(stateRoot) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.count == 64, bytesFromHex(name) != nil { out.append(name) }
        }
        return out.sorted()
    }
}

/// A conversation summary.
public struct Conversation: Equatable, Sendable {
    public var thread: ThreadKey
    /// Contact or channel name, or the key prefix / "channel N" when unknown.
    public var name: String
    public var lastMessage: StoredMessage
    public var unread: Int
    public var messageCount: Int
}

/// The store of one radio: contacts, channels, messages, outbox, state and secrets, in one folder.
/// Not thread-safe: one owner (the daemon's poll loop, or one CLI command).
public final class RadioStore {
    public let directory: String
    public let readOnly: Bool
    let files: Files
    let lock: RadioLock?
    let log: MessageLog
    let contactFile: ContactFile
    /// Adverts of nodes that are not contacts (manual add), newest kept: `pending`.
    let pendingFile: ContactFile
    let channelFile: ChannelFile
    let outboxFile: OutboxFile
    /// Room on disk for a received message the log cannot take (Inbox.swift).
    let inbox: Inbox
    var readMarkers: [ThreadKey: UInt64] = [:]
    var contactByPrefix: [KeyPrefix: Int] = [:]
    var closed = false
    /// Set once opening succeeded: only then is the exact next id written on close (a store that
    /// failed to open, e.g. on a damaged cursor, leaves its `ids` file as it was).
    var opened = false
    /// Every message id issued so far is below this (IdMark.swift).
    var idCeiling: UInt64 = 0
    /// Every id a cursor or marker of this store can hold is below this (IdMark.swift).
    public internal(set) var idLimit: UInt64 = RadioStore.maxId + 1

    /// Opens (creating if needed) the store in `directory`, takes the radio's lock, and recovers:
    /// a torn log tail is cut off, damaged records are skipped and reported in `recovery`.
    public init(directory: String, options: StoreOptions = StoreOptions()) throws {
        self.directory = directory
        self.readOnly = options.readOnly
        files = Files(ops: options.fileOps)
        inbox = Inbox(files: files, path: directory + "/inbox")
        if !readOnly {
            try Self.makeDirectories(files, directory)
            // Nothing in the folder is followed, read or written unless it is this user's own.
            try StoreTrust.checkTree(directory)
            lock = try RadioLock(files: files, path: directory + "/lock")
        } else {
            guard files.ops.exists(directory) else { throw StoreError.io(operation: "open", path: directory, errno: .notFound) }
            lock = nil
        }
        do {
            log = try MessageLog(files: files, dir: directory, readOnly: readOnly, capBytes: options.logCapBytes,
                                 dedupWindow: options.dedupWindow, checkpointMin: options.checkpointEvery)
            contactFile = try ContactFile(files: files, path: directory + "/contacts", readOnly: readOnly)
            pendingFile = try ContactFile(files: files, path: directory + "/pending", readOnly: readOnly)
            channelFile = try ChannelFile(files: files, path: directory + "/channels", readOnly: readOnly)
            outboxFile = try OutboxFile(files: files, path: directory + "/outbox", readOnly: readOnly)
            if !readOnly {
                try files.makeDirectory(directory + "/secrets", mode: 0o700)
                // Files created above must survive a power cut too: their directory entries.
                try files.syncDirectory(directory)
            }
        } catch {
            lock?.release()
            throw error
        }
        if let p = try readState("read") {
            p.withUnsafeBytes { b in
                for i in 0 ..< b.count / 16 { readMarkers[ThreadKey(raw: b.u64(i * 16))] = b.u64(i * 16 + 8) }
            }
        }
        rebuildContactIndex()
        do {
            try restoreIdMark()
            try reconcileOutbox()
        } catch {
            close()
            throw error
        }
        opened = true
        if !readOnly {
            // Messages an earlier run held while the log could not take them: into the log now
            // if it can (else they wait, and the daemon asks the radio for nothing more).
            inbox.prepare()
            _ = try? storeHeld()
        }
    }

    /// The radio's public key (hex), the name of its folder; nil for a folder named otherwise.
    public var radioKeyHex: String? {
        let name = directory.split(separator: "/").last.map(String.init) ?? ""
        return name.count == 64 && bytesFromHex(name) != nil ? name : nil
    }

    /// Opens the store of the radio with `publicKey` under the state root.
    public convenience init(publicKey: [UInt8], stateDir: String? = nil, options: StoreOptions = StoreOptions()) throws {
        let root = try StoreLocation.stateRoot(stateDir: stateDir)
        if !options.readOnly {
            try Self.makeDirectories(Files(ops: options.fileOps), root)
            try StoreTrust.checkRoot(root)
        }
        try self.init(directory: StoreLocation.radioDirectory(stateRoot: root, publicKey: publicKey), options: options)
    }

    static func makeDirectories(_ files: Files, _ path: String) throws {
        var p = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            let parent = p.isEmpty ? "/" : p
            p += "/" + part
            if !files.ops.exists(p) {
                try files.makeDirectory(p, mode: 0o700)
                try files.syncDirectory(parent)
            }
        }
    }

    /// Writes the index checkpoint, closes the files and releases the lock.
    public func close() {
        guard !closed else { return }
        closed = true
        if !readOnly && opened { try? writeIdMark(log.nextId) }
        log.close()
        contactFile.close()
        pendingFile.close()
        channelFile.close()
        outboxFile.close()
        inbox.close()
        lock?.release()
    }

    deinit { close() }

    /// What opening found and repaired (damage also accumulates from later reads).
    public var recovery: RecoveryReport {
        var r = log.report
        r.damage += log.readDamage + contactFile.damage + channelFile.damage + outboxFile.report.damage
        r.truncatedBytes += outboxFile.report.truncatedBytes
        return r
    }

    /// Damaged records found while reading messages through the index (each once, in the order
    /// found; also part of `recovery`). Report them: they are skipped.
    public var readDamage: [DamageReport] { log.readDamage }

    /// The last index checkpoint failure, if the last attempt failed (appends are still durable).
    public var checkpointError: StoreError? { log.lastCheckpointError }

    func checkOpen() throws {
        if closed { throw StoreError.closed }
    }

    // MARK: - Messages

    /// Stores one message durably (write + fdatasync) before returning. A received message whose
    /// sender, sender timestamp and text are already stored is not stored again (`.duplicate`).
    @discardableResult
    public func append(_ m: StoredMessage) throws -> AppendResult {
        try checkOpen()
        reserveIds(1)
        return try log.append([m])[0]
    }

    /// Stores several messages with one write and one fsync.
    @discardableResult
    public func append(_ batch: [StoredMessage]) throws -> [AppendResult] {
        try checkOpen()
        reserveIds(batch.count)
        return try log.append(batch)
    }

    /// Records a delivery state change of an outgoing message (appended to the log, fsynced).
    public func setDelivery(id: UInt64, _ update: DeliveryUpdate, at now: UInt32) throws {
        try checkOpen()
        try log.setStatus(id: id, update, at: now)
    }

    public func message(id: UInt64) throws -> StoredMessage? {
        guard let i = log.entryIndex(id: id) else { return nil }
        return try log.message(at: i)
    }

    /// Messages with id > `after`, oldest first, at most `limit` (for delivery cursors).
    public func messages(after id: UInt64, limit: Int, incomingOnly: Bool = false) throws -> [StoredMessage] {
        var out: [StoredMessage] = []
        var i = log.lowerBound(id: id &+ 1)
        while i < log.entries.count && out.count < limit {
            if !incomingOnly || !log.entries.outgoing(i), let m = try log.message(at: i) { out.append(m) }
            i += 1
        }
        return out
    }

    /// The id the next stored message will get.
    public var nextMessageId: UInt64 { log.nextId }
    /// Messages in the store (both log segments).
    public var messageCount: Int { log.entries.count }

    /// Conversations ordered by last activity, newest first.
    public func conversations() throws -> [Conversation] {
        var out: [Conversation] = []
        for (t, ps) in log.positions.enumerated() {
            guard let lastPos = ps.last else { continue }
            let key = log.threadKeys[t]
            guard let last = try log.message(at: log.entry(atPosition: lastPos)) else { continue }
            out.append(Conversation(thread: key, name: name(of: key), lastMessage: last,
                                    unread: log.unread(thread: t, readMarker: readMarkers[key] ?? 0),
                                    messageCount: ps.count))
        }
        out.sort { $0.lastMessage.id > $1.lastMessage.id }
        return out
    }

    /// Up to `limit` messages of a thread older than `before` (all if nil), oldest first.
    public func history(_ thread: ThreadKey, limit: Int = 50, before: UInt64? = nil) throws -> [StoredMessage] {
        guard let t = log.threadNumbers[thread] else { return [] }
        return try log.history(thread: Int(t), limit: limit, before: before)
    }

    /// Received messages not read yet (sending in a thread also counts as reading it).
    public func unreadCount(_ thread: ThreadKey) -> Int {
        guard let t = log.threadNumbers[thread] else { return 0 }
        return log.unread(thread: Int(t), readMarker: readMarkers[thread] ?? 0)
    }

    /// Marks a thread read up to `through` (default: its newest message). Persisted atomically.
    public func markRead(_ thread: ThreadKey, through: UInt64? = nil) throws {
        try checkOpen()
        guard !readOnly else { throw StoreError.readOnly }
        guard let t = log.threadNumbers[thread], let lastPos = log.positions[Int(t)].last else { return }
        let upTo = through ?? log.entries.id(log.entry(atPosition: lastPos))
        guard upTo > readMarkers[thread] ?? 0 else { return }
        var next = readMarkers
        next[thread] = upTo
        var p: [UInt8] = []
        for (k, v) in next.sorted(by: { $0.key < $1.key }) { p.putU64(k.raw); p.putU64(v) }
        try writeState("read", p)
        readMarkers = next
    }

    // MARK: - Outbox

    /// Stores an outgoing message (status pending) and queues it for sending; both are durable on
    /// return. `origin`: the door that queued it (the daemon's numbering; see `OutboxItem.origin`).
    public func enqueue(_ m: StoredMessage, now: UInt32, origin: UInt8 = 0) throws -> OutboxItem {
        try checkOpen()
        var mm = m
        mm.direction = .outgoing
        mm.status = .pending
        reserveIds(1)
        let id = try log.append([mm])[0].id
        let item = OutboxItem(messageId: id, thread: mm.thread, textType: mm.textType,
                              senderTimestamp: mm.senderTimestamp, text: mm.text, createdAt: now, origin: origin)
        try outboxFile.put(item)
        return item
    }

    /// Items waiting to be sent or acknowledged, oldest first.
    public var outbox: [OutboxItem] { outboxFile.sorted }

    /// Saves an item's attempt state (attempts, ack tag, next attempt time).
    public func updateOutbox(_ item: OutboxItem) throws {
        try checkOpen()
        try outboxFile.put(item)
    }

    /// An attempt went out: remembers its ACK tag and when to retry, and marks the message sent.
    public func recordSent(id: UInt64, attempts: UInt8, ackTag: UInt32, nextAttemptAt: UInt32, now: UInt32) throws {
        try checkOpen()
        if var item = outboxFile.items[id] {
            item.attempts = attempts
            item.ackTag = ackTag
            item.nextAttemptAt = nextAttemptAt
            try outboxFile.put(item)
        }
        try log.setStatus(id: id, DeliveryUpdate(status: .sent, attempts: attempts, ackTag: ackTag), at: now)
    }

    /// The recipient acknowledged: leaves the outbox (first, so a crash cannot resend it) and is marked acked.
    public func recordAcked(id: UInt64, roundTripMs: UInt32, now: UInt32) throws {
        try checkOpen()
        let item = outboxFile.items[id]
        try outboxFile.remove(id)
        try log.setStatus(id: id, DeliveryUpdate(status: .acked, attempts: item?.attempts ?? (log.statuses[id]?.attempts ?? 1),
                                                 roundTripMs: roundTripMs, ackTag: item?.ackTag ?? (log.statuses[id]?.ackTag ?? 0)),
                          at: now)
    }

    /// Gave up: leaves the outbox and is marked failed.
    public func recordFailed(id: UInt64, now: UInt32) throws {
        try checkOpen()
        let item = outboxFile.items[id]
        try outboxFile.remove(id)
        try log.setStatus(id: id, DeliveryUpdate(status: .failed, attempts: item?.attempts ?? 0, ackTag: item?.ackTag ?? 0), at: now)
    }

    /// The outbox entry of a message, if it is still waiting.
    public func outboxItem(id: UInt64) -> OutboxItem? { outboxFile.items[id] }

    /// The outbox entry of an ACK tag, if one is waiting for it.
    public func outboxItem(ackTag: UInt32) -> OutboxItem? {
        guard ackTag != 0 else { return nil }
        return outboxFile.items.values.first { $0.ackTag == ackTag }
    }

    /// A crash between storing an outgoing message and queueing it leaves a pending message that is
    /// in no outbox: queue it again (only the newest message can be in that state).
    func reconcileOutbox() throws {
        let n = log.entries.count
        guard !readOnly, n > 0, log.entries.outgoing(n - 1), outboxFile.items[log.entries.id(n - 1)] == nil,
              log.statuses[log.entries.id(n - 1)] == nil, let m = try log.message(at: n - 1),
              m.status == .pending else { return }
        try outboxFile.put(OutboxItem(messageId: m.id, thread: m.thread, textType: m.textType,
                                      senderTimestamp: m.senderTimestamp, text: m.text, createdAt: m.receivedAt))
    }

    // MARK: - Contacts and channels

    public var contacts: [StoredContact] { contactFile.contacts }

    public func contact(publicKey: [UInt8]) -> StoredContact? {
        contactFile.slotByKey[publicKey].flatMap { contactFile.slots[$0] }
    }

    public func contact(prefix: KeyPrefix) -> StoredContact? {
        contactByPrefix[prefix].flatMap { contactFile.slots[$0] }
    }

    /// Inserts or updates contacts in place, with one fsync.
    /// Contact records the store keeps, live and removed together (twice the most a radio can
    /// list: `CompanionLimits.contactsCeiling`): past it the removed contacts seen longest ago
    /// make room, and new contacts that still find none are refused.
    public static let contactsLimit = 2 * CompanionLimits.contactsCeiling

    /// Writes contacts (new ones and changes), within `contactsLimit`; returns how many new
    /// contacts were refused for want of room.
    @discardableResult
    public func saveContacts(_ cs: [StoredContact]) throws -> Int {
        try checkOpen()
        var keep = cs
        var refused = 0
        let known = contactFile.slotByKey.count
        var seen = Set<[UInt8]>()
        let fresh = cs.filter { contactFile.slotByKey[$0.publicKey] == nil && seen.insert($0.publicKey).inserted }
        if known + fresh.count > Self.contactsLimit {
            // Room from the removed contacts heard from longest ago (never one being written now).
            let writing = Set(cs.map(\.publicKey))
            let old = contactFile.contacts.filter { $0.removed && !writing.contains($0.publicKey) }.sorted { $0.updatedAt < $1.updatedAt }
            var excess = known + fresh.count - Self.contactsLimit
            for c in old where excess > 0 {
                try contactFile.free(publicKey: c.publicKey)
                excess -= 1
            }
            if excess > 0 {
                let refusedKeys = Set(fresh.suffix(excess).map(\.publicKey))
                keep = cs.filter { !refusedKeys.contains($0.publicKey) }
                refused = refusedKeys.count
            }
        }
        try contactFile.upsert(keep)
        rebuildContactIndex()
        return refused
    }

    /// How many pending adverts are kept (the oldest goes first).
    public static let pendingLimit = 256

    /// Adverts heard from nodes that are not contacts (the radio's manual-add mode), newest first;
    /// `updatedAt` is when this host heard the advert.
    public var pending: [StoredContact] {
        pendingFile.contacts.filter { !$0.removed }.sorted { ($0.updatedAt, $0.lastAdvert) > ($1.updatedAt, $1.lastAdvert) }
    }

    /// Keeps an advert of a node that is not a contact (replacing an older one of the same node).
    public func savePending(_ c: StoredContact) throws {
        try checkOpen()
        try pendingFile.upsert([c])
        let live = pending
        if live.count > Self.pendingLimit {
            for old in live[Self.pendingLimit...] { try pendingFile.free(publicKey: old.publicKey) }
        }
    }

    /// Forgets a pending advert (added as a contact, or dismissed).
    public func dropPending(publicKey: [UInt8]) throws {
        try checkOpen()
        try pendingFile.free(publicKey: publicKey)
    }

    /// Keeps the record (its history keeps a name) but flags it removed.
    public func markContactRemoved(publicKey: [UInt8], now: UInt32) throws {
        guard var c = contact(publicKey: publicKey) else { return }
        c.removed = true
        c.updatedAt = now
        try saveContacts([c])
    }

    /// Flags removed every live contact whose key is not in `keys` (the radio's whole list), with
    /// one fsync; returns how many.
    @discardableResult
    public func markContactsRemoved(except keys: Set<[UInt8]>, now: UInt32) throws -> Int {
        var gone: [StoredContact] = []
        for c in contacts where !c.removed && !keys.contains(c.publicKey) {
            var r = c
            r.removed = true
            r.updatedAt = now
            gone.append(r)
        }
        if !gone.isEmpty { try saveContacts(gone) }
        return gone.count
    }

    func rebuildContactIndex() {
        contactByPrefix = [:]
        for (i, c) in contactFile.slots.enumerated() {
            guard let c = c else { continue }
            if let j = contactByPrefix[c.prefix], let other = contactFile.slots[j], !other.removed && c.removed { continue }
            contactByPrefix[c.prefix] = i
        }
    }

    public var channels: [StoredChannel] { channelFile.channels.values.sorted { $0.index < $1.index } }

    /// Saves channel slots (an empty name and zero secret frees the slot), with one fsync.
    public func saveChannels(_ chs: [StoredChannel]) throws {
        try checkOpen()
        try channelFile.set(chs)
    }

    public func channel(index: UInt8) -> StoredChannel? { channelFile.channels[index] }

    // MARK: - State

    func readState(_ name: String) throws -> [UInt8]? {
        guard let b = try files.readFile(directory + "/" + name) else { return nil }
        guard let p = StateFile.decode(b) else {
            log.report.damage.append(DamageReport(file: name, offset: 0, length: UInt64(b.count), detail: "state file checksum"))
            return nil
        }
        return p
    }

    func writeState(_ name: String, _ payload: [UInt8], mode: UInt32 = 0o644) throws {
        guard !readOnly else { throw StoreError.readOnly }
        try files.writeAtomically(directory + "/" + name, StateFile.encode(payload), mode: mode)
    }

    /// The contacts `lastmod` watermark (for incremental contact sync; 0 = full sync, also when a
    /// contact record was found damaged).
    public func contactsWatermark() throws -> UInt32 {
        // A damaged contact record may hold a contact the radio will not send again incrementally.
        guard contactFile.damage.isEmpty else { return 0 }
        guard let p = try readState("lastmod"), p.count == 4 else { return 0 }
        return p.withUnsafeBytes { $0.u32(0) }
    }

    /// Saves the watermark. Ignores 0 (END_OF_CONTACTS reports 0 when nothing was sent).
    public func setContactsWatermark(_ v: UInt32) throws {
        guard v != 0 else { return }
        var p: [UInt8] = []
        p.putU32(v)
        try writeState("lastmod", p)
    }

    static func checkName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 64,
              name.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }) else {
            throw StoreError.invalidArgument("cursor name \"\(name)\" (use a-z, 0-9, - and _)")
        }
    }

    /// A delivery cursor (e.g. "hook": the id of the last message handed over), 0 if never set.
    public func cursor(_ name: String) throws -> UInt64 {
        try storedCursor(name) ?? 0
    }

    /// A delivery cursor, or nil if it was never set. A damaged cursor file reads as 0 (deliver
    /// again rather than skip) and is reported.
    public func storedCursor(_ name: String) throws -> UInt64? {
        try Self.checkName(name)
        guard files.ops.exists(directory + "/cursor-" + name) else { return nil }
        guard let p = try readState("cursor-" + name), p.count == 8 else { return 0 }
        return p.withUnsafeBytes { $0.u64(0) }
    }

    public func setCursor(_ name: String, _ value: UInt64) throws {
        try Self.checkName(name)
        var p: [UInt8] = []
        p.putU64(value)
        try writeState("cursor-" + name, p)
    }

    // MARK: - Secrets

    func secretPath(_ publicKey: [UInt8]) -> String { directory + "/secrets/" + hexString(publicKey) }

    /// Saves a room or repeater password (file mode 0600 in a 0700 directory).
    public func savePassword(_ password: String, for publicKey: [UInt8]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        try files.writeAtomically(secretPath(publicKey), StateFile.encode(Array(password.utf8)), mode: 0o600)
    }

    public func password(for publicKey: [UInt8]) throws -> String? {
        guard let b = try files.readFile(secretPath(publicKey)), let p = StateFile.decode(b) else { return nil }
        return String(decoding: p, as: UTF8.self)
    }

    public func removePassword(for publicKey: [UInt8]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        let path = secretPath(publicKey)
        do { try files.ops.unlink(path) } catch {
            if error.code != ENOENT { throw StoreError.io(operation: "remove", path: path, errno: error) }
        }
    }

    // MARK: - Names

    /// The display name of a thread.
    public func name(of thread: ThreadKey) -> String {
        switch thread.kind {
        case .channel:
            if let ch = channelFile.channels[thread.channelIndex], !ch.name.isEmpty { return ch.name }
            return "channel \(thread.channelIndex)"
        case .direct, .room:
            if let c = contact(prefix: thread.peer), !c.name.isEmpty { return c.name }
            return thread.peer.description
        case nil:
            return thread.description
        }
    }
}
