import Glibc
import MeshAir
import MeshDaemonClient
import MeshLink
import MeshSession
import MeshOps

/// A node's state folder: `identity` (the 64-byte private key in hex), `prefs` (its settings as
/// `KEY VALUE` lines: they hold the passwords), `regions` (the region map `region save` keeps),
/// `acl` (the clients with permissions, as the firmware's ClientACL keeps them), each 0600, and,
/// while it runs, `node.sock` (the local admin CLI, 0600).
///
/// Trusted as the daemon trusts its state folder (`StoreTrust`): the folder (followed if it is a
/// link: where it lives is the user's choice) must belong to this user and be closed to other
/// users' writes, or someone else could swap the key or the prefs; it is refused with one
/// sentence (exit 2), never repaired. A file in it is never followed: opened with O_NOFOLLOW and
/// checked (a plain file of this user that others cannot write), so a planted `identity` link
/// is refused rather than adopted. Every file is written through a temporary name that is made
/// new (O_CREAT | O_EXCL | O_NOFOLLOW, a stale or planted one removed first, never written
/// through), fsynced and renamed over the old one: a power cut leaves the old file or the new.
struct NodeState {
    let dir: String

    init(dir: String) throws {
        self.dir = dir
        var st = stat()
        if stat(dir, &st) != 0 {
            guard errno == ENOENT else {
                throw ClientError.storage("cannot inspect the state folder \(dir): \(String(cString: strerror(errno))).")
            }
            guard mkdir(dir, 0o700) == 0 || errno == EEXIST else {
                throw ClientError.storage("cannot create the state folder \(dir): \(String(cString: strerror(errno))).")
            }
            guard stat(dir, &st) == 0 else {
                throw ClientError.storage("cannot inspect the state folder \(dir): \(String(cString: strerror(errno))).")
            }
        }
        if (st.st_mode & S_IFMT) != S_IFDIR {
            throw ClientError.usage("\(dir) is not a folder; give --state-dir a folder for the node's key and settings.")
        }
        if let why = Self.problem(st, path: dir, folder: true) {
            throw ClientError.usage("refusing the state folder \(dir): \(why).")
        }
    }

    static func socketPath(_ dir: String) -> String { dir + "/node.sock" }
    var socketPath: String { Self.socketPath(dir) }
    var identityPath: String { dir + "/identity" }
    var prefsPath: String { dir + "/prefs" }
    var regionsPath: String { dir + "/regions" }
    var aclPath: String { dir + "/acl" }

    /// What makes a file or the folder untrustworthy (owner, mode), as the end of a sentence.
    static func problem(_ st: stat, path: String, folder: Bool) -> String? {
        let me = geteuid()
        if st.st_uid != me {
            return "it belongs to uid \(st.st_uid), not to this process's user (uid \(me)); give it to this user (chown \(me) \(path)) or use another \(folder ? "folder" : "state folder")"
        }
        let mode = UInt32(st.st_mode) & 0o7777
        if mode & 0o022 != 0 {
            return "other users can write to it (mode 0\(String(mode, radix: 8))); close it to them (chmod go-w \(path))"
        }
        return nil
    }

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

    func regions() throws -> String? { try read(regionsPath).map { String(decoding: $0, as: UTF8.self) } }
    func saveRegions(_ text: String) throws { try write(regionsPath, Array(text.utf8)) }

    func acl() throws -> String? { try read(aclPath).map { String(decoding: $0, as: UTF8.self) } }
    func saveACL(_ text: String) throws { try write(aclPath, Array(text.utf8)) }

    static let maxFileSize = 1 << 20

    /// A whole file of the folder, or nil when there is none. A link, anything but a plain file,
    /// a file of another user or one others can write is refused (exit 2), never read through.
    func read(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        if fd < 0 {
            let e = errno
            if e == ENOENT { return nil }
            if e == ELOOP {
                throw ClientError.usage("refusing \(path): it is a symbolic link, which the state folder never holds (someone else may have put it there); remove it.")
            }
            throw ClientError.storage("cannot read \(path): \(String(cString: strerror(e))).")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ClientError.storage("cannot read \(path): \(String(cString: strerror(errno))).") }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw ClientError.usage("refusing \(path): it is not a plain file (the node never makes anything else there); remove it.")
        }
        if let why = Self.problem(st, path: path, folder: false) { throw ClientError.usage("refusing \(path): \(why).") }
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
            if out.count > Self.maxFileSize { throw ClientError.storage("\(path) is larger than the node ever writes (1 MiB); remove it.") }
        }
        return out
    }

    /// Writes a whole file, 0600, through `PATH.new`: made new (O_EXCL, O_NOFOLLOW; a stale or
    /// planted one is removed first, a link itself and not what it names), written, fsynced,
    /// renamed over `path` (which replaces a link there rather than writing through it), and
    /// the folder fsynced.
    func write(_ path: String, _ bytes: [UInt8]) throws {
        let tmp = path + ".new"
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = open(tmp, flags, 0o600)
        if fd < 0 && errno == EEXIST {
            unlink(tmp)
            fd = open(tmp, flags, 0o600)
        }
        guard fd >= 0 else { throw ClientError.storage("cannot write \(tmp): \(String(cString: strerror(errno))).") }
        func fail(_ what: String) -> ClientError {
            close(fd)
            unlink(tmp)
            return ClientError.storage("cannot write \(tmp): \(what).")
        }
        // Exactly 0600 whatever the umask is at this moment (a socket's bind narrows it for a while).
        guard fchmod(fd, 0o600) == 0 else { throw fail(String(cString: strerror(errno))) }
        var off = 0
        while off < bytes.count {
            let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { Glibc.write(fd, raw.baseAddress! + off, raw.count - off) } }
            switch r {
            case .success(let n) where n > 0: off += n
            case .success: throw fail("the write made no progress")
            case .failure(let e): throw fail(e.message)
            }
        }
        guard fsync(fd) == 0 else { throw fail(String(cString: strerror(errno))) }
        close(fd)
        guard rename(tmp, path) == 0 else {
            let e = errno
            unlink(tmp)
            throw ClientError.storage("cannot replace \(path): \(String(cString: strerror(e))).")
        }
        StateFile.syncDirectory(of: path)
    }
}
