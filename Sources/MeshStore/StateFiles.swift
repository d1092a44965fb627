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

/// `lock`: `flock(LOCK_EX|LOCK_NB)` held for the store's lifetime; the holder's pid is written in it.
final class RadioLock {
    let files: Files
    let path: String
    var fd: Int32 = -1

    init(files: Files, path: String) throws {
        self.files = files
        self.path = path
        fd = try files.open(path, O_RDWR | O_CREAT, 0o644)
        let got: Bool
        do { got = try files.ops.lockExclusive(fd) } catch {
            files.ops.close(fd)
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
        let text = Array("\(getpid())\n".utf8)
        try? files.ops.truncate(fd, to: 0)
        try? files.write(fd, path, text, at: 0)
    }

    func release() {
        if fd >= 0 {
            try? files.ops.truncate(fd, to: 0)
            files.ops.close(fd)
            fd = -1
        }
    }
}
