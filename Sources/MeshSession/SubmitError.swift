/// Why a command could not be submitted, as the one error type says it (the command line's and
/// the daemon's shells both answer with it).
extension Session.SubmitError {
    public var clientError: ClientError {
        switch self {
        case .queueFull: return .usage("too many commands are waiting: send fewer at once.")
        case .textTooLong(let limit): return .usage("the text is longer than \(limit) bytes: shorten it.")
        case .badPublicKey: return .usage("a public key must be 32 bytes (64 hex digits).")
        case .notUsable: return .link("the session with the radio ended: reconnect and try again.")
        case .invalid(let why):
            return .usage(ClientError.sentence(why) == "." ? "the command has a value outside the radio's limits."
                                                          : "the command has a value outside the radio's limits: \(ClientError.sentence(why))")
        }
    }
}

extension ClientError {
    /// Makes sure a message is one sentence ending in a full stop.
    public static func sentence(_ s: String) -> String {
        var t = s
        while t.hasSuffix(".") { t.removeLast() }
        return t + "."
    }
}
