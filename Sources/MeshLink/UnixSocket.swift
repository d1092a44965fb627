import Glibc

/// A system call failure: which call, on what, and errno.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public var call: String
    public var target: String
    public var errno: Int32

    public init(_ call: String, _ target: String = "", errno: Int32 = Glibc.errno) {
        self.call = call
        self.target = target
        self.errno = errno
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        return target.isEmpty ? "\(call): \(reason)" : "\(call) \(target): \(reason)"
    }
}

/// Thin wrappers over the socket calls the local API needs (`AF_UNIX`, `SOCK_STREAM` and `SOCK_DGRAM`).
public enum UnixSocket {
    /// Fills a `sockaddr_un`. A path starting with "@" is an abstract-namespace name (Linux).
    /// Returns the address and its length, or nil if the path does not fit `sun_path` (108 bytes).
    public static func address(_ path: String) -> (sockaddr_un, socklen_t)? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            if !abstract { raw[bytes.count] = 0 }
        }
        let base = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let len = abstract ? base + bytes.count : base + bytes.count + 1
        return (addr, socklen_t(len))
    }

    /// Creates a listening stream socket at `path` (non-blocking, close-on-exec), mode 0600.
    /// An existing socket file nobody listens on is removed first; a live one is an error.
    public static func listen(path: String, backlog: Int32 = 16) throws(SystemError) -> Int32 {
        guard case (var addr, let len)? = address(path) else { throw SystemError("bind", path, errno: ENAMETOOLONG) }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw SystemError("bind", path + " (exists, not a socket)", errno: EEXIST) }
            if let probe = try? connect(path: path) {
                close(probe)
                throw SystemError("bind", path + " (another daemon is listening there)", errno: EADDRINUSE)
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, SocketType.stream | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
        if fd < 0 { throw SystemError("socket", path) }
        // The file bind creates takes the socket's own mode (less the umask): 0600 from its first
        // instant, without changing the process's umask (which other threads' files would get).
        if fchmod(fd, 0o600) != 0 { let e = errno; close(fd); throw SystemError("fchmod", path, errno: e) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        let bindErrno = errno
        if rc != 0 { close(fd); throw SystemError("bind", path, errno: bindErrno) }
        chmod(path, 0o600)
        if Glibc.listen(fd, backlog) != 0 { let e = errno; close(fd); throw SystemError("listen", path, errno: e) }
        return fd
    }

    /// Connects a blocking stream socket to `path` (close-on-exec).
    public static func connect(path: String) throws(SystemError) -> Int32 {
        guard case (var addr, let len)? = address(path) else { throw SystemError("connect", path, errno: ENAMETOOLONG) }
        let fd = socket(AF_UNIX, SocketType.stream | SocketFlags.closeOnExec, 0)
        if fd < 0 { throw SystemError("socket", path) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, len) }
        }
        if rc != 0 { let e = errno; close(fd); throw SystemError("connect", path, errno: e) }
        return fd
    }

    /// `pipe()` with both ends close-on-exec, optionally non-blocking (glibc's `pipe2` is not exported).
    public static func makePipe(nonBlocking: Bool) -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            if nonBlocking { setNonBlocking(fd) }
        }
        return (fds[0], fds[1])
    }

    public static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    /// Creates `path` and missing parents with `mode`; an existing directory owned by us is chmod'ed to `mode`.
    /// Only the last component is chmod'ed; existing parents are left alone.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700, leaf: Bool = true) throws(SystemError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else { throw SystemError("mkdir", path + " (exists, not a directory)", errno: ENOTDIR) }
            if leaf && st.st_uid == getuid() && (st.st_mode & 0o777) != mode { chmod(path, mode) }
            return
        }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectory(String(path[..<slash]), mode: mode, leaf: false)
        }
        if mkdir(path, mode) != 0 && errno != EEXIST { throw SystemError("mkdir", path) }
    }
}

/// `socket(2)` types. Swift's Glibc module does not reliably export the `__socket_type` enum in
/// every build configuration, so the Linux values are spelled out here.
public enum SocketType {
    public static let stream: Int32 = 1
    public static let datagram: Int32 = 2
}
