import CMeshLink
import Glibc

/// A raw file descriptor with thin typed wrappers over the syscalls MeshLink uses.
/// Each method names the C call it makes; `EINTR` is retried inside, other failures throw `Errno`.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `open(path, flags | O_CLOEXEC)`.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        let fd = try sys { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    /// `socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, protocol)`.
    public static func socket(_ domain: Int32, _ type: Int32, _ proto: Int32) throws(Errno) -> FileDescriptor {
        let flags = SocketFlags.closeOnExec | SocketFlags.nonBlocking
        let fd = try sys { Glibc.socket(domain, type | flags, proto) }
        return FileDescriptor(rawValue: fd)
    }

    /// `pipe2(O_CLOEXEC | O_NONBLOCK)`: (read end, write end).
    public static func pipe() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &fds) { (raw) throws(Errno) -> Int32 in
            let p = raw.baseAddress!.assumingMemoryBound(to: Int32.self)
            return try sys { cml_pipe_nonblocking(p) }
        }
        return (FileDescriptor(rawValue: fds.0), FileDescriptor(rawValue: fds.1))
    }

    /// `read(2)`. Returns the byte count; 0 is end of file. `EAGAIN` throws `.wouldBlock`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return try sys { Glibc.read(rawValue, base, buffer.count) }
    }

    /// `write(2)`. Returns the byte count written (may be short). `EAGAIN` throws `.wouldBlock`.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        return try sys { Glibc.write(rawValue, base, bytes.count) }
    }

    /// `send(2)` with `MSG_NOSIGNAL`, so a closed socket gives `EPIPE` instead of SIGPIPE.
    public func send(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        return try sys { Glibc.send(rawValue, base, bytes.count, SocketFlags.noSignal) }
    }

    /// `connect(2)` of a non-blocking socket to `address` (a `sockaddr_in`, `sockaddr_in6`,
    /// `sockaddr_storage`...). True when connected at once; false when the connection goes on in
    /// the background: `EINPROGRESS`, or `EINTR` (Linux goes on connecting after a signal, and a
    /// second `connect` would only fail with `EALREADY`). Other failures throw.
    public func connect<Address>(to address: Address, length: socklen_t) throws(Errno) -> Bool {
        let status = withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(rawValue, $0, length) }
        }
        if status == 0 { return true }
        let error = Errno.current
        if error == .inProgress || error == .interrupted { return false }
        throw error
    }

    /// `poll(2)` of this descriptor alone for `events`, waiting at most `timeout` milliseconds (-1:
    /// no limit). True when it is ready (or has an error or a hangup to report); false when the time
    /// passed or a signal ended the wait early (`EINTR`: the caller looks at its deadline again, as
    /// `PollLoop` does). Other failures throw.
    public func poll(_ events: Int16, timeout: Int32) throws(Errno) -> Bool {
        var entry = pollfd(fd: rawValue, events: events, revents: 0)
        let ready = Glibc.poll(&entry, 1, timeout)
        if ready > 0 { return true }
        if ready == 0 { return false }
        let error = Errno.current
        if error == .interrupted { return false }
        throw error
    }

    /// `close(2)`. EINTR is not retried (Linux always releases the descriptor).
    public func close() {
        _ = Glibc.close(rawValue)
    }

    /// `fcntl(F_SETFL, flags | O_NONBLOCK)`.
    public func setNonBlocking() throws(Errno) {
        let flags = try sys { Glibc.fcntl(rawValue, F_GETFL) }
        if flags & O_NONBLOCK == 0 {
            _ = try sys { Glibc.fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
        }
    }

    /// `fcntl(F_SETFD, FD_CLOEXEC)`.
    public func setCloseOnExec() throws(Errno) {
        _ = try sys { Glibc.fcntl(rawValue, F_SETFD, FD_CLOEXEC) }
    }

    /// `setsockopt(level, name, &value, sizeof(value))`.
    public func setOption<T: BitwiseCopyable>(_ level: Int32, _ name: Int32, _ value: T) throws(Errno) {
        let status = withUnsafeBytes(of: value) { raw in
            retryingOnInterrupt { setsockopt(rawValue, level, name, raw.baseAddress, socklen_t(raw.count)) }
        }
        _ = try status.get()
    }

    /// `getsockopt(SOL_SOCKET, SO_ERROR)`: the pending socket error, if any.
    public func pendingSocketError() -> Errno? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &value, &length) != 0 { return Errno.current }
        return value == 0 ? nil : Errno(rawValue: value)
    }

    /// `ioctl(fd, request, &value)` for an `Int32` argument.
    public func ioctl(_ request: UInt, _ value: inout Int32) throws(Errno) {
        _ = try sys { Glibc.ioctl(rawValue, request, &value) }
    }

    /// `ioctl(fd, request)` without an argument.
    public func ioctl(_ request: UInt) throws(Errno) {
        _ = try sys { Glibc.ioctl(rawValue, request) }
    }
}

/// Monotonic milliseconds from `clock_gettime(CLOCK_MONOTONIC)`: the `now` every sans-I/O API expects.
public func monotonicMilliseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1000 &+ UInt64(ts.tv_nsec) / 1_000_000
}
