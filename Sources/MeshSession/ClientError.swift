/// What kind of failure, by the name the daemon's API reports and the exit code the command line
/// returns: the one exit-code table of the project (README, "Exit codes").
public enum ErrorKind: String, Sendable, CaseIterable {
    /// Bad input: arguments, a malformed API request, a value out of range.
    case usage
    /// An API request line over the limit.
    case tooLong = "too_long"
    /// An API operation this daemon does not know.
    case unsupported
    /// The link could not be opened, or was lost.
    case link
    /// Another request holds the radio; try again.
    case busy
    /// No response, no ACK, no reply in time.
    case timeout
    /// The radio answered with an error.
    case refused
    /// The front end the request came through does not allow its operation class.
    case denied
    /// Unknown contact, channel or thread.
    case notFound = "not_found"
    /// The store, or another file or socket, could not be read, written or opened.
    case storage
    /// Something that should not happen (a bug, or a daemon answer that makes no sense).
    case `internal`
    /// SIGINT or SIGTERM.
    case interrupted

    public var exitCode: Int32 {
        switch self {
        case .usage, .tooLong, .unsupported: return 2
        case .link, .busy: return 3
        case .timeout: return 4
        case .refused, .denied: return 5
        case .notFound: return 6
        case .storage, .internal: return 7
        case .interrupted: return 130
        }
    }
}

/// The project's one error type: why a request failed, as a kind from the one exit-code table
/// (`ErrorKind`) and one sentence that says what to do. The command line exits with
/// `exitCode`; the daemon's API reports `kind.rawValue`, `exitCode` and `message` (its
/// `DaemonError` is this type), so a command routed through the daemon fails exactly as it would
/// on a directly opened link.
public struct ClientError: Error, Equatable, CustomStringConvertible, Sendable {
    public var kind: ErrorKind
    public var message: String
    /// The radio's error code, when the radio refused.
    public var radioCode: UInt8?

    public init(_ kind: ErrorKind, _ message: String, radioCode: UInt8? = nil) {
        self.kind = kind
        self.message = message
        self.radioCode = radioCode
    }

    /// Bad input that the user typed (exit 2).
    public static func usage(_ m: String) -> ClientError { ClientError(.usage, m) }
    /// The link could not be opened, or was lost (exit 3).
    public static func link(_ m: String) -> ClientError { ClientError(.link, m) }
    /// No response, no ACK, no reply in time (exit 4).
    public static func timeout(_ m: String) -> ClientError { ClientError(.timeout, m) }
    /// The radio refused: its error code is part of the message (exit 5).
    public static func refused(_ m: String, code: UInt8) -> ClientError { ClientError(.refused, m, radioCode: code) }
    /// Unknown contact or channel (exit 6).
    public static func notFound(_ m: String) -> ClientError { ClientError(.notFound, m) }
    /// The store or the system failed (exit 7).
    public static func storage(_ m: String) -> ClientError { ClientError(.storage, m) }
    /// Interrupted by SIGINT/SIGTERM.
    public static let interrupted = ClientError(.interrupted, "interrupted.")

    /// The kind under the name the daemon's API has always used for it.
    public var code: ErrorKind { kind }
    public var exitCode: Int32 { kind.exitCode }
    public var description: String { message }

    /// Names a radio error code the way the firmware does.
    public static func radioErrorName(_ code: UInt8) -> String {
        switch code {
        case 1: return "ERR 1 (unsupported command or bad length)"
        case 2: return "ERR 2 (not found)"
        case 3: return "ERR 3 (table full or text too long)"
        case 4: return "ERR 4 (bad state)"
        case 5: return "ERR 5 (file I/O error)"
        case 6: return "ERR 6 (illegal argument)"
        default: return "ERR \(code)"
        }
    }

    /// The radio refused `what` with error `code`.
    public static func radio(_ what: String, code: UInt8, hint: String = "check the arguments and the radio's firmware version") -> ClientError {
        .refused("the radio refused \(what) with \(radioErrorName(code)): \(hint).", code: code)
    }
}
