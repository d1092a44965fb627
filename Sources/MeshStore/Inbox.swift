import Glibc

// The inbox: room on disk, written in advance, for the received message the log could not take.
//
// The radio forgets a message once it hands it over (SYNC_NEXT_MESSAGE), so a message that
// arrives while the log cannot be written (a full disk, a file size limit, an I/O error) needs a
// place that cannot fail in the same way. `inbox` is a small file of fixed-size slots, written
// whole (zeros) and fsynced when the store opens; holding a message overwrites bytes the file
// already has (no new blocks, no growth) and fsyncs. The daemon asks the radio for the next
// message only while a slot is free and none is in use, so everything else stays on the radio;
// held messages move into the log as soon as it takes them again (at the latest when the store
// next opens). A message is therefore always on the radio or on disk.
//
// Slot (`slotSize` bytes): 0 "PMIB"  4 u32 payload length  8 u32 CRC-32 of the payload
// 12 payload (a message payload as in the log, Record.swift); an empty slot is all zeros.
final class Inbox {
    static let slotSize = 256
    static let slots = 4
    static let magic: [UInt8] = [0x50, 0x4D, 0x49, 0x42]

    let files: Files
    let path: String
    var fd: Int32 = -1
    /// The message in each slot (nil: free).
    var held: [StoredMessage?] = Array(repeating: nil, count: Inbox.slots)
    /// Why the inbox cannot be used, if it cannot.
    var problem: StoreError? = nil

    init(files: Files, path: String) {
        self.files = files
        self.path = path
    }

    var isReady: Bool { fd >= 0 }
    var messages: [StoredMessage] { held.compactMap { $0 } }

    /// Opens the inbox, creating it if needed; reads what an earlier run held. A failure leaves it
    /// unusable (`problem`) until `prepare` succeeds.
    func prepare() {
        guard fd < 0 else { return }
        do {
            let size = UInt64(Self.slots * Self.slotSize)
            let f = try files.open(path, O_RDWR | O_CREAT, 0o600)
            do {
                let have = try files.size(f, path)
                if have == size {
                    var b = [UInt8](repeating: 0, count: Int(size))
                    _ = try b.withUnsafeMutableBytes { try files.read(f, path, into: $0, at: 0) }
                    for i in 0..<Self.slots { held[i] = Self.decode(Array(b[i * Self.slotSize ..< (i + 1) * Self.slotSize])) }
                } else {
                    // New (or cut short by a crash while being made): written whole, so that holding
                    // a message later only overwrites blocks the file has.
                    try files.truncate(f, path, to: 0)
                    try files.write(f, path, [UInt8](repeating: 0, count: Int(size)), at: 0)
                    try files.sync(f, path, dataOnly: false)
                    try files.syncDirectory(parentDirectory(path))
                    held = Array(repeating: nil, count: Self.slots)
                }
            } catch {
                files.ops.close(f)
                throw error
            }
            fd = f
            problem = nil
        } catch {
            problem = error as? StoreError ?? StoreError.io(operation: "open", path: path, errno: .io)
        }
    }

    static func decode(_ slot: [UInt8]) -> StoredMessage? {
        guard Array(slot[0..<4]) == magic else { return nil }
        let (n, c) = slot.withUnsafeBytes { (Int($0.u32(4)), $0.u32(8)) }
        guard n > 0, 12 + n <= slot.count else { return nil }
        let p = Array(slot[12 ..< 12 + n])
        guard CRC32.checksum(p) == c else { return nil }
        return p.withUnsafeBytes { Payload.decodeMessage($0) }
    }

    /// Writes `m` into a free slot and fsyncs.
    func hold(_ m: StoredMessage) throws {
        guard fd >= 0 else { throw problem ?? StoreError.closed }
        guard let i = held.firstIndex(where: { $0 == nil }) else {
            throw StoreError.invalidArgument("the inbox is full (\(Self.slots) messages wait for the log)")
        }
        var p: [UInt8] = []
        Payload.encode(m, into: &p)
        var b = Self.magic
        b.putU32(UInt32(p.count))
        b.putU32(CRC32.checksum(p))
        b += p
        guard b.count <= Self.slotSize else {
            throw StoreError.invalidArgument("a message of \(m.text.count) bytes does not fit the inbox")
        }
        try files.write(fd, path, b, at: UInt64(i * Self.slotSize))
        try files.sync(fd, path)
        held[i] = m
    }

    /// Empties the slots (their messages are in the log now).
    func clear() throws {
        guard fd >= 0 else { return }
        for i in 0..<Self.slots where held[i] != nil {
            try files.write(fd, path, [UInt8](repeating: 0, count: 12), at: UInt64(i * Self.slotSize))
        }
        try files.sync(fd, path)
        held = Array(repeating: nil, count: Self.slots)
    }

    func close() {
        if fd >= 0 { files.ops.close(fd) }
        fd = -1
    }
}

extension RadioStore {
    /// Received messages waiting in the inbox for the log (see Inbox.swift).
    public var heldMessages: [StoredMessage] { inbox.messages }

    /// True when the next received message has a place on disk whatever happens to the log: the
    /// inbox is ready and empty. While it is not, ask the radio for nothing (it keeps its queue).
    public var canTakeMessage: Bool {
        !readOnly && !closed && inbox.isReady && inbox.messages.isEmpty
    }

    /// Tries again to make the inbox, if opening could not (a full disk).
    public func prepareInbox() {
        guard !readOnly, !closed else { return }
        inbox.prepare()
    }

    /// Why the inbox cannot be used, if it cannot.
    public var inboxProblem: StoreError? { inbox.problem }

    /// Keeps a received message the log could not take (`append` failed) in the inbox, durably.
    public func hold(_ m: StoredMessage) throws {
        try checkOpen()
        guard !readOnly else { throw StoreError.readOnly }
        var mm = m
        mm.id = 0
        try inbox.hold(mm)
    }

    /// Moves the held messages into the log (one write, one fsync) and empties the inbox. Returns
    /// what the log made of them; throws (and keeps them) while the log still cannot take them.
    @discardableResult
    public func storeHeld() throws -> [AppendResult] {
        try checkOpen()
        let ms = inbox.messages
        guard !ms.isEmpty else { return [] }
        let results = try append(ms)
        // If emptying fails, the next opening appends them again: received messages are
        // deduplicated (same sender, timestamp and text), so they are stored once.
        try inbox.clear()
        return results
    }
}
