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

    public var exitCode: Int32 {
        switch self {
        case .usage: return 2
        case .link: return 3
        case .timeout: return 4
        case .refused: return 5
        case .notFound: return 6
        case .interrupted: return 130
        }
    }

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
