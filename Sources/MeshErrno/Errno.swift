import Glibc

/// A C `errno` value with a name and a readable description.
///
/// Wrappers in this module return `Errno` instead of reading the global `errno` at a distance;
/// `EINTR` never escapes them (see `retryingOnInterrupt`).
public struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    public static var current: Errno { Errno(rawValue: Glibc.errno) }

    public static let notPermitted = Errno(rawValue: EPERM)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let busy = Errno(rawValue: EBUSY)
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let notTerminal = Errno(rawValue: ENOTTY)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let protocolNotSupported = Errno(rawValue: EPROTONOSUPPORT)
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    public static let networkDown = Errno(rawValue: ENETDOWN)
    public static let networkUnreachable = Errno(rawValue: ENETUNREACH)
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let notConnected = Errno(rawValue: ENOTCONN)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let hostDown = Errno(rawValue: EHOSTDOWN)
    public static let hostUnreachable = Errno(rawValue: EHOSTUNREACH)
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    public static let alreadyInProgress = Errno(rawValue: EALREADY)

    /// The C name (`EAGAIN`) for common values, else `errno N`.
    public var name: String {
        switch rawValue {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case ENXIO: "ENXIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EBUSY: "EBUSY"
        case ENODEV: "ENODEV"
        case ENOTDIR: "ENOTDIR"
        case EINVAL: "EINVAL"
        case ENOTTY: "ENOTTY"
        case EPIPE: "EPIPE"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case EPROTONOSUPPORT: "EPROTONOSUPPORT"
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EADDRINUSE: "EADDRINUSE"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case ENETDOWN: "ENETDOWN"
        case ENETUNREACH: "ENETUNREACH"
        case ECONNABORTED: "ECONNABORTED"
        case ECONNRESET: "ECONNRESET"
        case ENOTCONN: "ENOTCONN"
        case ETIMEDOUT: "ETIMEDOUT"
        case ECONNREFUSED: "ECONNREFUSED"
        case EHOSTDOWN: "EHOSTDOWN"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case EINPROGRESS: "EINPROGRESS"
        case EALREADY: "EALREADY"
        default: "errno \(rawValue)"
        }
    }

    /// `strerror` text, e.g. "Connection refused".
    public var message: String {
        guard let text = strerror(rawValue) else { return name }
        return String(cString: text)
    }

    /// e.g. "Connection refused (ECONNREFUSED)".
    public var description: String { "\(message) (\(name))" }
}

/// Runs a syscall wrapper until it does not fail with `EINTR`: the one place EINTR is handled.
/// `body` returns the C result; -1 means failure with `errno` set.
@inline(__always)
public func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) -> Result<T, Errno> {
    while true {
        let result = body()
        if result != -1 { return .success(result) }
        let error = Errno.current
        if error != .interrupted { return .failure(error) }
    }
}

/// Like `retryingOnInterrupt` but throws the `Errno`.
@inline(__always)
public func sys<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
    switch retryingOnInterrupt(body) {
    case .success(let value): return value
    case .failure(let error): throw error
    }
}
