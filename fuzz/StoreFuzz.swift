// libFuzzer target over the store's readers: log records, segment headers, the index file, the
// contacts, channels and outbox files and state files, through the store's own opening and
// reading code on an in-memory file system. Built by fuzz/run.sh together with the MeshStore sources.
//
// Input: byte 0 = fix-up flags, then the files of one store, each as a u16 little-endian length and
// that many bytes: messages.log, messages.1.log, index, contacts, channels, outbox, read, cursor-hooks.
//   bit 0: re-seal both segment headers (valid CRC)    bit 1: re-seal the records' CRCs
//   bit 2: re-hash the index file                      bit 3: wrap `read` and `cursor-hooks` as valid state files
// (so that mutations get past the checksums to the parsers behind them).
// Invariants: no trap; record payloads, delivery statuses, state files, contact and channel
// frames decode -> encode -> decode equal; a store opened read-only and read-write answers
// queries; after a read-write open (which repairs) and a clean close, reopening gives the same
// messages, plus one appended.

import MeshCompanion
import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

var fuzzSink = 0

/// An in-memory file system: fast, deterministic, and nothing left behind.
final class MemoryFileOps: FileOps {
    final class Node { var bytes: [UInt8] = [] }
    var files: [String: Node] = [:]
    var directories: Set<String> = []
    var descriptors: [Int32: Node] = [:]
    var nextFD: Int32 = 100_000

    func copy() -> MemoryFileOps {
        let c = MemoryFileOps()
        for (p, n) in files { let m = Node(); m.bytes = n.bytes; c.files[p] = m }
        c.directories = directories
        return c
    }

    func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32 {
        var node = files[path]
        if node == nil, directories.contains(path) || fuzzDir.hasPrefix(path) {
            node = Node()  // a directory, opened to be synced
        } else if node == nil {
            guard flags & O_CREAT != 0 else { throw FileErrno(ENOENT) }
            node = Node()
            files[path] = node
        } else if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
            throw FileErrno(EEXIST)
        }
        if flags & O_TRUNC != 0 { node!.bytes = [] }
        nextFD += 1
        descriptors[nextFD] = node
        return nextFD
    }
    func close(_ fd: Int32) { descriptors[fd] = nil }
    func node(_ fd: Int32) throws(FileErrno) -> Node {
        guard let n = descriptors[fd] else { throw FileErrno(EBADF) }
        return n
    }
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int {
        let n = try node(fd)
        guard offset < UInt64(n.bytes.count) else { return 0 }
        let count = min(buffer.count, n.bytes.count - Int(offset))
        for i in 0 ..< count { buffer[i] = n.bytes[Int(offset) + i] }
        return count
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno) {
        let n = try node(fd)
        let end = Int(offset) + bytes.count
        if n.bytes.count < end { n.bytes += [UInt8](repeating: 0, count: end - n.bytes.count) }
        for i in 0 ..< bytes.count { n.bytes[Int(offset) + i] = bytes[i] }
    }
    func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno) { _ = try node(fd) }
    func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno) {
        let n = try node(fd)
        if n.bytes.count > Int(length) { n.bytes.removeSubrange(Int(length)...) } else {
            n.bytes += [UInt8](repeating: 0, count: Int(length) - n.bytes.count)
        }
    }
    func size(_ fd: Int32) throws(FileErrno) -> UInt64 { UInt64(try node(fd).bytes.count) }
    func rename(_ from: String, _ to: String) throws(FileErrno) {
        guard let n = files[from] else { throw FileErrno(ENOENT) }
        files[from] = nil
        files[to] = n
    }
    func unlink(_ path: String) throws(FileErrno) {
        guard files.removeValue(forKey: path) != nil else { throw FileErrno(ENOENT) }
    }
    func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno) { directories.insert(path) }
    func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno) { _ = try node(fd) }
    func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool { true }
    func exists(_ path: String) -> Bool { files[path] != nil || directories.contains(path) }
}

let fuzzDir = "/nonexistent-fuzz/store"
let fuzzFiles = ["messages.log", "messages.1.log", "index", "contacts", "channels", "outbox", "read", "cursor-hooks"]

func u32(_ b: [UInt8], _ o: Int) -> UInt32 { b.withUnsafeBytes { $0.u32(o) } }
func setU32(_ b: inout [UInt8], _ o: Int, _ v: UInt32) { for i in 0 ..< 4 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) } }

/// Makes a segment's header copies and (optionally) its records' CRCs valid.
func reseal(_ seg: inout [UInt8], header: Bool, records: Bool) {
    guard seg.count >= 64 else { return }
    if header {
        setU32(&seg, 28, CRC32.checksum(Array(seg[0 ..< 28])))
        for i in 0 ..< 32 { seg[32 + i] = seg[i] }
    }
    guard records else { return }
    let salt = u32(seg, 12)
    var off = 64
    while off + Frame.headerSize <= seg.count, u32(seg, off) == Frame.magic {
        let len = Int(u32(seg, off + 4))
        guard len >= 1, len <= Frame.maxPayload, off + Frame.headerSize + len <= seg.count else { break }
        let c = seg.withUnsafeBytes { p in
            let c0 = CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[(off + 4) ..< (off + 8)]), seed: salt)
            return CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[(off + Frame.headerSize) ..< (off + Frame.headerSize + len)]), seed: c0)
        }
        setU32(&seg, off + 8, c)
        off += Frame.headerSize + len
    }
}

/// Checks the pure decoders on one piece of bytes.
func decoders(_ b: [UInt8]) {
    b.withUnsafeBytes { p in
        if let m = Payload.decodeMessage(p) {
            var e: [UInt8] = []
            Payload.encode(m, into: &e)
            let again = e.withUnsafeBytes { Payload.decodeMessage($0) }
            fuzzCheck(again == m, "message record round trip")
            let peek = Payload.peekMessage(p)
            fuzzCheck(peek?.id == m.id && peek?.thread == m.thread, "peek agrees with decode")
        }
        if let s = Payload.decodeStatus(p) {
            var e: [UInt8] = []
            Payload.encodeStatus(id: s.id, s.update, at: 0, into: &e)
            let again = e.withUnsafeBytes { Payload.decodeStatus($0) }
            fuzzCheck(again?.id == s.id && again?.update == s.update, "status record round trip")
        }
        if case .ok(let n) = Frame.check(p, salt: 0) { fuzzCheck(n >= 1 && n <= p.count - Frame.headerSize, "record length") }
        if let c = try? StoredContact(frame: p) {
            fuzzCheck((try? StoredContact(frame: c.frame())) == c, "contact frame round trip")
        }
        if let c = try? StoredChannel(frame: p) { fuzzSink &+= c.name.utf8.count &+ (c.isEmpty ? 1 : 0) }
    }
    if let s = StateFile.decode(b) { fuzzCheck(StateFile.encode(s) == b, "state file round trip") }
}

func query(_ store: RadioStore) -> [StoredMessage] {
    var all: [StoredMessage] = []
    if let ms = try? store.messages(after: 0, limit: 100_000) { all = ms }
    if let cs = try? store.conversations() {
        for c in cs.prefix(16) {
            fuzzSink &+= store.unreadCount(c.thread)
            if let h = try? store.history(c.thread, limit: 20) { fuzzSink &+= h.count }
        }
    }
    for m in all.prefix(8) {
        fuzzSink &+= (try? store.message(id: m.id))??.text.count ?? 0
        if m.kind == .direct { fuzzSink &+= store.contact(prefix: m.peer)?.nameBytes.count ?? 0 }
    }
    fuzzSink &+= store.outboxItem(ackTag: 1)?.text.count ?? 0
    fuzzSink &+= Int(truncatingIfNeeded: (try? store.cursor("hooks")) ?? 0)
    return all
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: data, count: size))
    let flags = input[0]
    decoders(Array(input[1...]))

    // Split into files.
    let ops = MemoryFileOps()
    ops.directories = ["/nonexistent-fuzz", fuzzDir, fuzzDir + "/secrets"]
    var i = 1
    for name in fuzzFiles where i + 2 <= input.count {
        let n = min(Int(input[i]) | Int(input[i + 1]) << 8, input.count - i - 2)
        var b = Array(input[(i + 2) ..< (i + 2 + n)])
        i += 2 + n
        decoders(b)
        if name.hasPrefix("messages") { reseal(&b, header: flags & 1 != 0, records: flags & 2 != 0) }
        if name == "index", flags & 4 != 0, b.count >= 72, b.count % 8 == 0 {
            var h = IndexHash()
            b.withUnsafeBytes { h.add(UnsafeRawBufferPointer(rebasing: $0[0 ..< b.count - 8])) }
            for k in 0 ..< 8 { b[b.count - 8 + k] = UInt8(truncatingIfNeeded: h.h >> (8 * UInt64(k))) }
        }
        if (name == "read" || name == "cursor-hooks"), flags & 8 != 0 { b = StateFile.encode(b) }
        let node = MemoryFileOps.Node()
        node.bytes = b
        ops.files[fuzzDir + "/" + name] = node
    }

    // Read-only: nothing is repaired, every query must still answer (or throw).
    if let store = try? RadioStore(directory: fuzzDir, options: StoreOptions(readOnly: true, fileOps: ops.copy())) {
        fuzzSink &+= query(store).count &+ store.recovery.damage.count
        store.close()
    }

    // Read-write: opening repairs; after a clean close the store must reopen the same.
    let rw = ops.copy()
    let options = StoreOptions(checkpointEvery: 2, fileOps: rw)
    guard let store = try? RadioStore(directory: fuzzDir, options: options) else { return 0 }
    var before = query(store)
    let appended = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 3, senderTimestamp: 0xF00D,
                                 receivedAt: 0xF00E, text: Array("fuzz \(input.count)".utf8))
    if case .stored(let id)? = try? store.append(appended) {
        var m = appended
        m.id = id
        before.append(m)
    }
    store.close()
    let again: RadioStore
    do {
        again = try RadioStore(directory: fuzzDir, options: options)
    } catch {
        if getenv("FUZZ_EXPLAIN") != nil { fputs("reopen: \(error)\n", stderr) }
        fuzzCheck(false, "a store closed cleanly reopens")
        return 0
    }
    let after = query(again)
    if after != before, getenv("FUZZ_EXPLAIN") != nil {
        fputs("before \(before.count) after \(after.count)\n", stderr)
        for (x, y) in zip(before, after) where x != y { fputs("before: \(x)\nafter:  \(y)\n", stderr); break }
        if before.count != after.count { fputs("before ids \(before.map(\.id))\nafter ids \(after.map(\.id))\n", stderr) }
    }
    fuzzCheck(after == before, "a store closed cleanly reopens with the same messages")
    again.close()
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    func seed(_ name: String, checkpointEvery: Int, capBytes: UInt64, count: Int) {
        let ops = MemoryFileOps()
        let store = try! RadioStore(directory: fuzzDir, options: StoreOptions(logCapBytes: capBytes, checkpointEvery: checkpointEvery, fileOps: ops))
        let alice = KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6])
        for k in 0 ..< count {
            let ts = UInt32(1_700_000_000 + k)
            _ = try! store.append(StoredMessage(kind: .direct, direction: .incoming, peer: alice, senderTimestamp: ts,
                                                receivedAt: ts + 1, text: Array("hello \(k)".utf8)))
            _ = try! store.append(StoredMessage(kind: .channel, direction: .incoming, channelIndex: UInt8(k % 3),
                                                senderTimestamp: ts, receivedAt: ts, text: Array("Bob: hi \(k)".utf8)))
        }
        let out = try! store.enqueue(StoredMessage(kind: .direct, direction: .outgoing, peer: alice, senderTimestamp: 5,
                                                   receivedAt: 5, text: Array("queued".utf8)), now: 5)
        try! store.recordSent(id: out.messageId, attempts: 1, ackTag: 77, nextAttemptAt: 9, now: 6)
        try! store.saveContacts([StoredContact(publicKey: [1, 2, 3, 4, 5, 6] + [UInt8](repeating: 9, count: 26), name: "Alice")])
        try! store.saveChannels([StoredChannel(index: 0, name: "Public", secret: [UInt8](repeating: 0x8B, count: 16))])
        try! store.markRead(.direct(alice))
        try! store.setCursor("hooks", 3)
        store.close()
        var bytes: [UInt8] = [0]
        for f in fuzzFiles {
            let b = ops.files[fuzzDir + "/" + f]?.bytes ?? []
            let n = min(b.count, 0xFFFF)
            bytes += [UInt8(n & 0xFF), UInt8(n >> 8)] + b.prefix(n)
        }
        let fp = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, fp)
        fclose(fp)
    }
    seed("small", checkpointEvery: 4096, capBytes: 64 << 20, count: 2)
    seed("indexed", checkpointEvery: 2, capBytes: 64 << 20, count: 6)
    seed("rotated", checkpointEvery: 3, capBytes: 8192, count: 40)
    _exit(0)
}
