import MeshCompanion
import Glibc
@testable import MeshStore

/// A fresh directory under /tmp, removed with everything in it when released.
final class TempDir {
    let path: String
    init() {
        var template = Array("/tmp/pocketmesh-store-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = String(cString: p!)
    }
    deinit { removeTree(path) }
    var radio: String { path + "/radio" }
}

func removeTree(_ path: String) {
    if let d = opendir(path) {
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            if e.pointee.d_type == UInt8(DT_DIR) { removeTree(child) } else { unlink(child) }
        }
        closedir(d)
        rmdir(path)
    } else {
        unlink(path)
    }
}

func readBytes(_ path: String) -> [UInt8] {
    ((try? Files(ops: SystemFileOps()).readFile(path)) ?? nil) ?? []
}

func writeBytes(_ path: String, _ b: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0)
    _ = b.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

func fileSize(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : -1
}

func fileMode(_ path: String) -> UInt32 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt32(st.st_mode) & 0o777 : 0
}

func truncateFile(_ path: String, _ n: Int) { _ = truncate(path, off_t(n)) }

let alice = KeyPrefix(sixOf: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6])
let bob = KeyPrefix(sixOf: [0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5])

func incoming(_ text: String, from peer: KeyPrefix = alice, ts: UInt32 = 1_700_000_000, at: UInt32 = 1_700_000_100) -> StoredMessage {
    StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: ts, receivedAt: at, text: text)
}

func channelMessage(_ text: String, channel: UInt8 = 0, ts: UInt32 = 1_700_000_000) -> StoredMessage {
    StoredMessage(kind: .channel, direction: .incoming, channelIndex: channel, senderTimestamp: ts, receivedAt: ts + 1, text: text)
}

func outgoing(_ text: String, to peer: KeyPrefix = alice, ts: UInt32 = 1_700_000_000) -> StoredMessage {
    StoredMessage(kind: .direct, direction: .outgoing, peer: peer, senderTimestamp: ts, receivedAt: ts, text: text)
}

/// File operations that fail on demand: the next write (optionally after writing some bytes) or sync.
final class FaultyFileOps: FileOps {
    let real = SystemFileOps()
    var failWrite: FileErrno? = nil
    var partialBytes = 0
    var failSync: FileErrno? = nil
    /// Syncs to let through before `failSync` applies.
    var syncsBeforeFailure = 0
    var failRename: FileErrno? = nil
    var writes = 0

    func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32 { try real.open(path, flags: flags, mode: mode) }
    func close(_ fd: Int32) { real.close(fd) }
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int {
        try real.read(fd, into: buffer, at: offset)
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno) {
        writes += 1
        if let e = failWrite {
            failWrite = nil
            let n = min(partialBytes, bytes.count)
            if n > 0 { try real.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: offset) }
            throw e
        }
        try real.write(fd, bytes, at: offset)
    }
    func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno) {
        if let e = failSync {
            if syncsBeforeFailure > 0 { syncsBeforeFailure -= 1 } else { failSync = nil; throw e }
        }
        try real.sync(fd, dataOnly: dataOnly)
    }
    func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno) { try real.truncate(fd, to: length) }
    func size(_ fd: Int32) throws(FileErrno) -> UInt64 { try real.size(fd) }
    func rename(_ from: String, _ to: String) throws(FileErrno) {
        if let e = failRename { failRename = nil; throw e }
        try real.rename(from, to)
    }
    func unlink(_ path: String) throws(FileErrno) { try real.unlink(path) }
    func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno) { try real.makeDirectory(path, mode: mode) }
    func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno) { try real.setMode(fd, mode) }
    func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool { try real.lockExclusive(fd) }
    func exists(_ path: String) -> Bool { real.exists(path) }
}
