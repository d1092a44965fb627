import Glibc

/// Small files the daemon keeps next to the store: written whole and durably
/// (temporary file, fsync, rename, fsync of the folder), read whole. Neither follows a symbolic
/// link (`O_NOFOLLOW`): a link planted in the state folder is an error, not another file.
public enum StateFile {
    public static func read(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while out.count < limit {
            let r = chunk.withUnsafeMutableBytes { raw in retryingOnInterrupt { Glibc.read(fd, raw.baseAddress, raw.count) } }
            guard case .success(let n) = r, n > 0 else { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    public static func readString(_ path: String) -> String? {
        read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Replaces `path` atomically and durably with `bytes`; `group`: the file's group (its
    /// members read it when `mode` lets them).
    public static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600, group: gid_t? = nil) throws(SystemError) {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        if fd < 0 { throw SystemError("open", tmp) }
        // Exactly `mode`, whatever the umask is at this moment: the umask is the process's, and
        // another thread may have narrowed it for a while (a socket bound 0600 takes umask 0177).
        if let group, fchown(fd, uid_t.max, group) != 0 { let e = errno; close(fd); unlink(tmp); throw SystemError("fchown", tmp, errno: e) }
        if fchmod(fd, mode) != 0 { let e = errno; close(fd); unlink(tmp); throw SystemError("fchmod", tmp, errno: e) }
        var off = 0
        while off < bytes.count {
            switch bytes.withUnsafeBytes({ raw in retryingOnInterrupt { Glibc.write(fd, raw.baseAddress! + off, bytes.count - off) } }) {
            case .success(let n): off += n
            case .failure(let e):
                close(fd)
                unlink(tmp)
                throw SystemError("write", tmp, errno: e.rawValue)
            }
        }
        if fsync(fd) != 0 { let e = errno; close(fd); unlink(tmp); throw SystemError("fsync", tmp, errno: e) }
        close(fd)
        if rename(tmp, path) != 0 { let e = errno; unlink(tmp); throw SystemError("rename", path, errno: e) }
        syncDirectory(of: path)
    }

    public static func write(_ path: String, _ text: String, mode: mode_t = 0o600, group: gid_t? = nil) throws(SystemError) {
        try write(path, Array(text.utf8), mode: mode, group: group)
    }

    public static func syncDirectory(of path: String) {
        let dir: String
        if let slash = path.lastIndex(of: "/") { dir = slash == path.startIndex ? "/" : String(path[..<slash]) } else { dir = "." }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }
}
