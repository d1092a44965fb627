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
    /// Unknown contact, channel or thread.
    case notFound = "not_found"
    /// The store could not be written or read.
    case storage
    case `internal`
    /// SIGINT or SIGTERM.
    case interrupted

    public var exitCode: Int32 {
        switch self {
        case .usage, .tooLong, .unsupported: return 2
        case .link, .busy: return 3
        case .timeout: return 4
        case .refused: return 5
        case .notFound: return 6
        case .storage, .internal: return 1
        case .interrupted: return 130
        }
    }
}

/// Why a request against a radio failed, grouped the way the command line reports it.
/// Every message is one sentence that says what to do.
public enum ClientError: Error, Equatable, CustomStringConvertible, Sendable, Codable {
    /// Bad input that the user typed (exit 2).
    case usage(String)
    /// The link could not be opened, or was lost (exit 3).
    case link(String)
    /// No response, no ACK, no reply in time (exit 4).
    case timeout(String)
    /// The radio refused: its error code is part of the message (exit 5).
    case refused(String, code: UInt8)
    /// Unknown contact or channel (exit 6).
    case notFound(String)
    /// Interrupted by SIGINT/SIGTERM.
    case interrupted

    public var kind: ErrorKind {
        switch self {
        case .usage: return .usage
        case .link: return .link
        case .timeout: return .timeout
        case .refused: return .refused
        case .notFound: return .notFound
        case .interrupted: return .interrupted
        }
    }

    public var exitCode: Int32 { kind.exitCode }

    public var description: String {
        switch self {
        case .usage(let m), .link(let m), .timeout(let m), .refused(let m, _), .notFound(let m): return m
        case .interrupted: return "interrupted."
        }
    }

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
