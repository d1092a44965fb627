import Glibc

/// A failed system call: the C `errno` it set.
public struct FileErrno: Error, Equatable, Sendable {
    public var code: Int32
    public init(_ code: Int32) { self.code = code }
    public static let noSpace = FileErrno(ENOSPC)
    public static let io = FileErrno(EIO)
    public static let wouldBlock = FileErrno(EWOULDBLOCK)
    public static let notFound = FileErrno(ENOENT)

    /// The C library's text for the error, e.g. "No space left on device".
    public var text: String { String(cString: strerror(code)) }

    var name: String {
        switch code {
        case ENOSPC: return "ENOSPC"
        case EIO: return "EIO"
        case ENOENT: return "ENOENT"
        case EACCES: return "EACCES"
        case EPERM: return "EPERM"
        case EROFS: return "EROFS"
        case EDQUOT: return "EDQUOT"
        case EWOULDBLOCK: return "EWOULDBLOCK"
        case EEXIST: return "EEXIST"
        case ENOTDIR: return "ENOTDIR"
        case ELOOP: return "ELOOP"
        case EFBIG: return "EFBIG"
        default: return "errno \(code)"
        }
    }
}

/// Everything that can go wrong in the store. Each case names the file and says what to do.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// A system call on `path` failed.
    case io(operation: String, path: String, errno: FileErrno)
    /// Another process holds the radio's lock.
    case locked(path: String, pid: Int32?)
    /// A file is not a store file or is damaged beyond what opening can recover.
    case corrupt(path: String, detail: String)
    /// The store was opened read-only.
    case readOnly
    /// A caller-supplied value is out of range.
    case invalidArgument(String)
    /// No conversation matches a name.
    case unknownThread(String)
    /// Several contacts match a name (how many).
    case ambiguousThread(String, count: Int)
    /// The store was closed.
    case closed
    /// A file or folder of the state folder that the store will not use: a symbolic link, owned by
    /// another user, or writable by others (`problem` says which and what to do).
    case untrusted(path: String, problem: String)
    /// A counter or cursor read from `path` holds an id the store never issued.
    case outOfRange(path: String, value: UInt64, limit: UInt64)

    public var description: String {
        switch self {
        case let .io(op, path, e):
            var hint = ""
            switch e.code {
            case ELOOP: hint = "; it is a symbolic link, which the state folder never holds: remove it"
            case ENOSPC, EDQUOT, EFBIG: hint = "; free some disk space (or lower the log size cap) and retry"
            case EIO: hint = "; the storage device reported an error, check it (dmesg) and its cable or card"
            case EACCES, EPERM: hint = "; check the permissions of the state directory"
            case EROFS: hint = "; the file system is read-only, remount it read-write"
            default: break
            }
            return "\(op) \(path) failed: \(e.text) (\(e.name))\(hint)"
        case let .locked(path, pid):
            let who = pid.map { "process \($0)" } ?? "another process"
            return "the radio's store is in use by \(who) (lock \(path)); stop that daemon or talk to it instead"
        case let .corrupt(path, detail):
            return "\(path) is damaged: \(detail); move it aside to start it afresh"
        case .readOnly:
            return "the store was opened read-only (a daemon owns this radio); send the change through the daemon"
        case let .invalidArgument(what):
            return "invalid argument: \(what)"
        case let .unknownThread(name):
            return "no contact or channel named \"\(name)\" in the store"
        case let .ambiguousThread(name, count):
            return "\"\(name)\" matches \(count) contacts: give the whole name or more hex digits of the key"
        case .closed:
            return "the store is closed"
        case let .untrusted(path, problem):
            return "\(path) \(problem)"
        case let .outOfRange(path, value, limit):
            return "\(path) holds id \(value), beyond the ids this store has issued (below \(limit)): it is damaged or was "
                + "written by something else; remove it (or put the right id in it) and start again"
        }
    }
}
