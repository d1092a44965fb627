import Glibc
import MeshAir
import MeshLink
import MeshSession

/// A node's state folder (mode 0700): `identity` (the 64-byte private key in hex, 0600), `prefs`
/// (its settings as `KEY VALUE` lines, 0600: they hold the passwords) and, while it runs,
/// `node.sock` (the local admin CLI, 0600).
struct NodeState {
    let dir: String

    init(dir: String) throws {
        self.dir = dir
        var st = stat()
        if stat(dir, &st) != 0 {
            guard mkdir(dir, 0o700) == 0 else {
                throw ClientError.storage("cannot create the state folder \(dir): \(String(cString: strerror(errno))).")
            }
        } else if (st.st_mode & S_IFMT) != S_IFDIR {
            throw ClientError.usage("\(dir) is not a folder; give --state-dir a folder for the node's key and settings.")
        }
    }

    static func socketPath(_ dir: String) -> String { dir + "/node.sock" }
    var socketPath: String { Self.socketPath(dir) }
    var identityPath: String { dir + "/identity" }
    var prefsPath: String { dir + "/prefs" }

    /// The node's key: read, or made and kept on the first run.
    func identity() throws -> LocalIdentity {
        if let text = try read(identityPath) {
            let hex = String(decoding: text, as: UTF8.self).filter { !$0.isWhitespace }
            guard let bytes = AirHex.decode(hex), bytes.count == 64, let id = try? LocalIdentity(privateKey: bytes) else {
                throw ClientError.storage("\(identityPath) does not hold a 64-byte private key in hex; restore it or remove it to make a new one.")
            }
            return id
        }
        let id = LocalIdentity.generate()
        try write(identityPath, Array((AirHex.encode(id.privateKey) + "\n").utf8))
        return id
    }

    func prefs() throws -> String? { try read(prefsPath).map { String(decoding: $0, as: UTF8.self) } }

    func savePrefs(_ text: String) throws { try write(prefsPath, Array(text.utf8)) }

    private func read(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ClientError.storage("cannot read \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(fd) }
        // The node's key and settings: this user's or root's, closed to others' writes.
        if let problem = FileTrust.problem(path, fd: fd) { throw ClientError.usage("\(problem).") }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let r = buf.withUnsafeMutableBytes { raw in retryingOnInterrupt { Glibc.read(fd, raw.baseAddress, raw.count) } }
            let n: Int
            switch r {
            case .success(let count): n = count
            case .failure(let e): throw ClientError.storage("cannot read \(path): \(e.message).")
            }
            if n == 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    /// Writes a whole file, 0600, through a temporary file, fsync and rename: a power cut leaves
    /// the old file or the new one.
    private func write(_ path: String, _ bytes: [UInt8]) throws {
        let tmp = path + ".new"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ClientError.storage("cannot write \(tmp): \(String(cString: strerror(errno))).") }
        var off = 0
        while off < bytes.count {
            let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { Glibc.write(fd, raw.baseAddress! + off, raw.count - off) } }
            guard case .success(let n) = r, n > 0 else {
                let e: Errno
                if case .failure(let failure) = r { e = failure } else { e = .current }  // a write of nothing: the last errno, as before
                close(fd); throw ClientError.storage("cannot write \(tmp): \(e.message).")
            }
            off += n
        }
        fsync(fd)
        close(fd)
        guard rename(tmp, path) == 0 else { throw ClientError.storage("cannot replace \(path): \(String(cString: strerror(errno))).") }
    }
}
