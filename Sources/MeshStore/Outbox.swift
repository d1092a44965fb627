import Glibc

/// An outgoing message waiting to be sent or acknowledged. Survives restarts.
public struct OutboxItem: Equatable, Sendable {
    /// The message's id in the log.
    public var messageId: UInt64
    public var thread: ThreadKey
    public var textType: UInt8
    /// Kept for every retry (the firmware hashes it into the ACK).
    public var senderTimestamp: UInt32
    public var text: [UInt8]
    /// Attempts made so far.
    public var attempts: UInt8
    /// Expected ACK code of the latest attempt (0 = none yet). A SEND_CONFIRMED carrying it, even
    /// one pushed after a restart, acknowledges the message.
    public var ackTag: UInt32
    /// Epoch seconds before which the next attempt should not be made (0 = now): the latest
    /// attempt's ACK deadline, or the end of the backoff after a round without an ACK.
    public var nextAttemptAt: UInt32
    public var createdAt: UInt32
    /// Which door queued it, in the daemon's numbering (0: the local API, and items queued before
    /// the field existed): the outbox's bounds are per door.
    public var origin: UInt8

    public init(messageId: UInt64, thread: ThreadKey, textType: UInt8 = 0, senderTimestamp: UInt32, text: [UInt8],
                attempts: UInt8 = 0, ackTag: UInt32 = 0, nextAttemptAt: UInt32 = 0, createdAt: UInt32 = 0, origin: UInt8 = 0) {
        self.messageId = messageId; self.thread = thread; self.textType = textType
        self.senderTimestamp = senderTimestamp; self.text = text; self.attempts = attempts
        self.ackTag = ackTag; self.nextAttemptAt = nextAttemptAt; self.createdAt = createdAt; self.origin = origin
    }
}

/// `outbox`: a small append-only log of framed records (same framing as the message log, salt 0):
///
///     put:    0 u8 1   1 u8 txt_type   2 u8 attempts   3 u8 origin   4 u64 message id   12 u64 thread key
///            20 u32 sender timestamp   24 u32 ack tag   28 u32 next attempt at   32 u32 created at
///            36 u16 text length   38 text
///     remove: 0 u8 2   1..<4 0   4 u64 message id
///
/// Replayed at open (the last put wins, a remove deletes); compacted by an atomic rewrite when it
/// has grown past 64 KiB and is mostly dead records.
final class OutboxFile {
    let files: Files
    let path: String
    let readOnly: Bool
    var fd: Int32 = -1
    var length: UInt64 = 0
    var items: [UInt64: OutboxItem] = [:]
    var report = RecoveryReport()

    init(files: Files, path: String, readOnly: Bool) throws {
        self.files = files
        self.path = path
        self.readOnly = readOnly
        if readOnly && !files.ops.exists(path) { return }
        fd = try files.open(path, readOnly ? O_RDONLY : O_RDWR | O_CREAT, 0o600)
        length = try files.size(fd, path)
        let out = try scanRecords(files, fd: fd, path: path, from: 0, to: length, salt: 0) { _, p in apply(p) }
        report.damage = out.damage
        report.scannedRecords = out.records
        if out.tornBytes > 0 {
            report.truncatedBytes = out.tornBytes
            if !readOnly {
                try files.truncate(fd, path, to: out.validEnd)
                try files.sync(fd, path)
            }
            length = out.validEnd
        }
    }

    func apply(_ p: UnsafeRawBufferPointer) {
        guard p.count >= 12 else { return }
        let id = p.u64(4)
        if p[0] == 2 { items[id] = nil; return }
        guard p[0] == 1, p.count >= 38, p.count == 38 + Int(p.u16(36)) else { return }
        items[id] = OutboxItem(messageId: id, thread: ThreadKey(raw: p.u64(12)), textType: p[1],
                               senderTimestamp: p.u32(20), text: Array(p[38...]), attempts: p[2],
                               ackTag: p.u32(24), nextAttemptAt: p.u32(28), createdAt: p.u32(32), origin: p[3])
    }

    static func encodePut(_ i: OutboxItem, into b: inout [UInt8]) {
        let s = Frame.begin(&b)
        b.putU8(1); b.putU8(i.textType); b.putU8(i.attempts); b.putU8(i.origin)
        b.putU64(i.messageId); b.putU64(i.thread.raw)
        b.putU32(i.senderTimestamp); b.putU32(i.ackTag); b.putU32(i.nextAttemptAt); b.putU32(i.createdAt)
        b.putU16(UInt16(i.text.count)); b.append(contentsOf: i.text)
        Frame.seal(&b, at: s, salt: 0)
    }

    func write(_ b: [UInt8]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        do {
            try files.write(fd, path, b, at: length)
            try files.sync(fd, path)
        } catch {
            try? files.ops.truncate(fd, to: length)
            throw error
        }
        length += UInt64(b.count)
    }

    func put(_ i: OutboxItem) throws {
        var b: [UInt8] = []
        Self.encodePut(i, into: &b)
        try write(b)
        items[i.messageId] = i
        try compactIfWorthIt()
    }

    func remove(_ id: UInt64) throws {
        guard items[id] != nil else { return }
        var b: [UInt8] = []
        let s = Frame.begin(&b)
        b.putU8(2); b.putU8(0); b.putU8(0); b.putU8(0); b.putU64(id)
        Frame.seal(&b, at: s, salt: 0)
        try write(b)
        items[id] = nil
        try compactIfWorthIt()
    }

    func compactIfWorthIt() throws {
        guard length > 64 * 1024 else { return }
        var b: [UInt8] = []
        for i in items.values.sorted(by: { $0.messageId < $1.messageId }) { Self.encodePut(i, into: &b) }
        guard UInt64(b.count) * 4 < length else { return }
        try files.writeAtomically(path, b, mode: 0o600)
        let fd2 = try files.open(path, O_RDWR)
        files.ops.close(fd)
        fd = fd2
        length = UInt64(b.count)
    }

    var sorted: [OutboxItem] { items.values.sorted { $0.messageId < $1.messageId } }

    func close() { if fd >= 0 { files.ops.close(fd); fd = -1 } }
}
