import Glibc
import MeshLink
import MeshOps

/// The folder that holds a user's daemon sockets and registry entries, and the checks that make it
/// safe to trust: whatever is in it decides which socket the command line sends secrets through.
///
/// A per-user folder is used only if it is a real directory (not a symbolic link), owned by this
/// user, with no permissions for group or others, in a parent that others cannot rename it in.
/// A folder that fails any of these is refused, never repaired: someone else may already have put
/// a registry entry in it.
public enum RuntimeDirectory {
    /// What `inspect` found.
    public enum State: Equatable, Sendable {
        case missing
        case safe
        /// The reason, as the end of a sentence ("it belongs to uid 1001, not to you (uid 1000)").
        case unsafe(String)
    }

    /// Checks `dir` without following a symbolic link at its last component.
    /// `owner`: the uid it must belong to (nil: anyone, for the system folder /run/pocketmesh).
    public static func inspect(_ dir: String, owner: uid_t? = geteuid()) -> State {
        var st = stat()
        if lstat(dir, &st) != 0 {
            return errno == ENOENT ? .missing : .unsafe("it cannot be inspected (\(SystemError("lstat", dir)))")
        }
        return check(st, owner: owner).map(State.unsafe) ?? parentCheck(dir)
    }

    static func check(_ st: stat, owner: uid_t?) -> String? {
        let type = st.st_mode & S_IFMT
        if type == S_IFLNK { return "it is a symbolic link" }
        if type != S_IFDIR { return "it is not a directory" }
        if let owner, st.st_uid != owner { return "it belongs to uid \(st.st_uid), not to you (uid \(owner))" }
        // A daemon shared with a group (`--api-group`) opens its folder to that group for reading
        // (750): nobody else may write in it or look into it.
        if st.st_mode & 0o027 != 0 && owner != nil {
            return "it is open to other users (mode \(String(st.st_mode & 0o7777, radix: 8)); it must be 700, or 750 for a daemon shared with a group)"
        }
        if owner == nil && st.st_mode & 0o022 != 0 { return "others can write to it (mode \(String(st.st_mode & 0o7777, radix: 8)))" }
        return nil
    }

    /// Others must not be able to rename or replace the folder: its parent is not writable by
    /// group or others, unless it has the sticky bit (as /tmp does).
    static func parentCheck(_ dir: String) -> State {
        guard let slash = dir.lastIndex(of: "/") else { return .safe }
        let parent = slash == dir.startIndex ? "/" : String(dir[..<slash])
        var st = stat()
        guard stat(parent, &st) == 0 else { return .unsafe("its parent \(parent) cannot be inspected") }
        if st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0 {
            return .unsafe("its parent \(parent) can be written by others (mode \(String(st.st_mode & 0o7777, radix: 8)), no sticky bit)")
        }
        return .safe
    }

    /// The sentence a refused folder gets.
    public static func refusal(_ dir: String, _ why: String) -> String {
        "refusing the runtime directory \(dir): \(why); remove it, or set XDG_RUNTIME_DIR to a directory only you can use."
    }

    /// Makes sure `dir` exists and is safe, creating it (mode 0700) if missing. Throws a usage
    /// error with one sentence when it is not safe.
    public static func prepare(_ dir: String) throws(DaemonError) {
        switch inspect(dir) {
        case .safe: return
        case .unsafe(let why): throw DaemonError(.usage, refusal(dir, why))
        case .missing: break
        }
        if let slash = dir.lastIndex(of: "/"), slash != dir.startIndex {
            // Missing parents ($XDG_RUNTIME_DIR/…): created private too; existing ones are left alone.
            do { try UnixSocket.makeDirectory(String(dir[..<slash]), leaf: false) } catch {
                throw DaemonError(.usage, "cannot create the runtime directory \(dir): \(error).")
            }
        }
        if mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw DaemonError(.usage, "cannot create the runtime directory \(dir): \(SystemError("mkdir", dir)).")
        }
        // Whoever created it (we, or someone faster), look at what is there now, through a
        // descriptor that cannot follow a symbolic link, and fix only the mode bits a umask took.
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 { throw DaemonError(.usage, refusal(dir, errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link" : "\(SystemError("open", dir))")) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw DaemonError(.usage, refusal(dir, "\(SystemError("fstat", dir))")) }
        if st.st_uid == geteuid() && st.st_mode & 0o077 == 0 && st.st_mode & 0o700 != 0o700 { fchmod(fd, 0o700); st.st_mode |= 0o700 }
        if let why = check(st, owner: geteuid()) { throw DaemonError(.usage, refusal(dir, why)) }
    }

    /// A daemon `--name`: it names files in the runtime directory, so it must be a plain file name.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && !name.hasPrefix(".")
            && name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 || $0 == 46 }
    }

    public static let nameRule = "--name must be 1 to 64 letters, digits, '-', '_' or '.', not starting with '.' (it names the socket file)."

    /// The uid of the process at the other end of a connected Unix socket (SO_PEERCRED), if known.
    public static func peerUID(_ fd: Int32) -> uid_t? {
        var cred: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: cred))
        let rc = withUnsafeMutablePointer(to: &cred) { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0, &len) }
        guard rc == 0, len == socklen_t(12) else { return nil }
        return cred.uid
    }
}
