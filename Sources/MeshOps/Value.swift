import MeshCompanion
import MeshSession
import MeshNet
/// A result as plain data: what a request against a radio returns, printable as text or JSON.
/// It is MeshNet's `JSON`, the program's one value type (one parser, one writer); the name stays
/// for the operation layer's code.
public typealias Value = JSON

extension JSON {
    public static func hex<C: Collection<UInt8>>(_ bytes: C) -> JSON { .string(Hex.encode(bytes)) }

    /// Compact JSON on one line (MeshNet's writer; stable key order: the order the fields were built in).
    public var json: String { text }

    /// Fixed decimals without Foundation: `fixed(869.618, 3)` → "869.618".
    public static func fixed(_ d: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let neg = d < 0
        let n = Int64((abs(d) * scale).rounded())
        let whole = n / Int64(scale)
        var frac = String(n % Int64(scale))
        while frac.count < decimals { frac = "0" + frac }
        return (neg && n != 0 ? "-" : "") + String(whole) + (decimals > 0 ? "." + frac : "")
    }

    // MARK: text

    /// The value with every string (and key) on one line (`terminalSafeLine`: a newline shows as
    /// `\n`, control characters as visible escapes), as message text already is: for human output,
    /// where a name, path, region or CLI reply that a remote node chose must not start a line that
    /// seems to be the program's own (a forged row in `contacts`). JSON output does not use it.
    public var oneLine: Value {
        switch self {
        case .string(let s): return .string(terminalSafeLine(s))
        case .array(let items): return .array(items.map(\.oneLine))
        case .object(let fields): return .object(fields.map { (terminalSafeLine($0.key), $0.value.oneLine) })
        default: return self
        }
    }

    /// Human-readable text: objects as `key: value` lines, arrays one item per line.
    public func text(indent: String = "") -> String {
        switch self {
        case .object(let fields):
            var lines: [String] = []
            for f in fields {
                switch f.value {
                case .object, .array:
                    let inner = f.value.text(indent: indent + "  ")
                    lines.append(indent + f.key + ":" + (inner.isEmpty ? " (none)" : "\n" + inner))
                default:
                    lines.append(indent + f.key + ": " + f.value.scalarText)
                }
            }
            return lines.joined(separator: "\n")
        case .array(let items):
            return items.map { item -> String in
                switch item {
                case .object(let fields):
                    return indent + fields.map { $0.key + "=" + $0.value.scalarText }.joined(separator: " ")
                default:
                    return indent + item.scalarText
                }
            }.joined(separator: "\n")
        default:
            return indent + scalarText
        }
    }

    public var scalarText: String {
        switch self {
        case .null: return "-"
        case .bool(let b): return b ? "yes" : "no"
        case .integer(let i): return String(i)
        case .double(let d): return JSON.formatDouble(d)
        case .string(let s): return s
        case .array(let a): return a.map(\.scalarText).joined(separator: ",")
        case .object: return json
        }
    }
}

/// Hex for the command line's values: MeshCompanion's codec (the project's one).
public enum Hex {
    public static func digit(_ v: UInt8) -> String { String(HexCodec.encode([v & 15]).dropFirst()) }

    public static func encode<C: Collection<UInt8>>(_ bytes: C) -> String { HexCodec.encode(Array(bytes)) }

    /// Decodes hex (either case, optional spaces or colons); nil on anything else or an odd count.
    public static func decode(_ text: String) -> [UInt8]? { HexCodec.decode(text) }
}
