import Glibc

// Small state files, each replaced atomically (write temp + fsync + rename + fsync directory):
//
//     0 "PMST"   4 u32 payload length   8 u32 CRC-32 of the payload   12 payload
enum StateFile {
    static let magic: [UInt8] = [0x50, 0x4D, 0x53, 0x54]

    static func encode(_ payload: [UInt8]) -> [UInt8] {
        var b = magic
        b.putU32(UInt32(payload.count))
        b.putU32(CRC32.checksum(payload))
        return b + payload
    }

    /// The payload, or nil if the file is damaged.
    static func decode(_ b: [UInt8]) -> [UInt8]? {
        guard b.count >= 12, Array(b[0..<4]) == magic else { return nil }
        let (n, c) = b.withUnsafeBytes { (Int($0.u32(4)), $0.u32(8)) }
        guard b.count == 12 + n else { return nil }
        let p = Array(b[12...])
        return CRC32.checksum(p) == c ? p : nil
    }
}

/// `lock`: a POSIX write lock (`FileOps.lockExclusive`) held for the store's lifetime; the
/// holder's pid is written in it.
///
/// The kernel lock tells processes apart; `HeldLocks` tells stores of this process apart, and is
/// consulted before the file is even opened, because closing any descriptor of a locked file drops
/// the process's lock on it.
final class RadioLock {
    let files: Files
    let path: String
    var fd: Int32 = -1
    var id: HeldLocks.FileID? = nil

    init(files: Files, path: String) throws {
        self.files = files
        self.path = path
        try HeldLocks.shared.withLock { held throws in
            if let existing = HeldLocks.fileID(path: path), held.contains(existing) {
                throw StoreError.locked(path: path, pid: getpid())
            }
            fd = try files.open(path, O_RDWR | O_CREAT, 0o644)
            let got: Bool
            do throws(FileErrno) { got = try files.ops.lockExclusive(fd) } catch {
                files.ops.close(fd)
                fd = -1
                throw StoreError.io(operation: "lock", path: path, errno: error)
            }
            guard got else {
                var pid: Int32? = nil
                var b = [UInt8](repeating: 0, count: 32)
                if let n = try? b.withUnsafeMutableBytes({ try files.read(fd, path, into: $0, at: 0) }) {
                    let digits = b[0..<n].prefix { $0 >= 48 && $0 <= 57 }
                    pid = Int32(String(decoding: digits, as: UTF8.self))
                }
                files.ops.close(fd)
                fd = -1
                throw StoreError.locked(path: path, pid: pid)
            }
            if let mine = HeldLocks.fileID(fd: fd) {
                id = mine
                held.insert(mine)
            }
        }
        let text = Array("\(getpid())\n".utf8)
        try? files.ops.truncate(fd, to: 0)
        try? files.write(fd, path, text, at: 0)
    }

    func release() {
        HeldLocks.shared.withLock { held in
            if fd >= 0 {
                try? files.ops.truncate(fd, to: 0)
                files.ops.close(fd)
                fd = -1
            }
            if let id { held.remove(id) }
            id = nil
        }
    }
}

/// The lock files this process holds, by device and inode, behind a mutex (stores are opened
/// from any thread).
final class HeldLocks: @unchecked Sendable {
    struct FileID: Hashable { var device: UInt64; var inode: UInt64 }
    static let shared = HeldLocks()

    private var mutex = pthread_mutex_t()
    private var held = Set<FileID>()

    private init() { pthread_mutex_init(&mutex, nil) }

    func withLock<T>(_ body: (inout Set<FileID>) throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body(&held)
    }

    static func fileID(path: String) -> FileID? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileID(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    static func fileID(fd: Int32) -> FileID? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileID(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }
}
