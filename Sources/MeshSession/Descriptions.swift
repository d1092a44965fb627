// Descriptions for the types whose values are printed (log lines, errors, output). Release builds
// carry no reflection metadata (-disable-reflection-metadata), so a value printed without a
// description would print its type's name instead of its case: these spell out what reflection
// printed, byte for byte (Tests check every case).

extension Reply: CustomStringConvertible {
    /// The case and its values, e.g. `error(2)`, `timeout` (log lines of a failed request).
    public var description: String {
        switch self {
        case .ok: return "ok"
        case .frame(let bytes): return "frame(\(bytes))"
        case .contacts(let l):
            return "contacts(MeshSession.ContactListing(records: \(l.records), total: \(l.total), lastmod: \(l.lastmod)"
                + (l.refused > 0 ? ", refused: \(l.refused)))" : "))")
        case .error(let code): return "error(\(code))"
        case .disabled: return "disabled"
        case .timeout: return "timeout"
        case .sent: return "sent"
        case .cancelled: return "cancelled"
        }
    }
}

extension Session.SubmitError: CustomStringConvertible {
    /// The case and its value, e.g. `textTooLong(limit: 160)`.
    public var description: String {
        switch self {
        case .queueFull: return "queueFull"
        case .textTooLong(let limit): return "textTooLong(limit: \(limit))"
        case .badPublicKey: return "badPublicKey"
        case .notUsable: return "notUsable"
        case .invalid(let text): return "invalid(\(String(reflecting: text)))"
        }
    }
}

extension ReceivedMessage.ParseError: CustomStringConvertible {
    /// The case and the frame's code, e.g. `truncated(code: 16)`.
    public var description: String {
        switch self {
        case .truncated(let code): return "truncated(code: \(code))"
        case .notAMessage(let code): return "notAMessage(code: \(code))"
        }
    }
}
