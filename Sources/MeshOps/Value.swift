import MeshCompanion
import MeshSession
/// A result as plain data: what a request against a radio returns, printable as text or JSON and
/// Codable, so a daemon can carry it over its socket unchanged.
public indirect enum Value: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([Value])
    case object([Field])

    public struct Field: Sendable, Equatable {
        public var key: String
        public var value: Value
        public init(_ key: String, _ value: Value) { self.key = key; self.value = value }
    }

    public static func int<I: BinaryInteger>(_ v: I) -> Value { .integer(Int64(v)) }
    public static func hex<C: Collection<UInt8>>(_ bytes: C) -> Value { .string(Hex.encode(bytes)) }
    public static func object(_ pairs: KeyValuePairs<String, Value>) -> Value {
        .object(pairs.map { Field($0.key, $0.value) })
    }

    public subscript(key: String) -> Value? {
        if case .object(let fields) = self { return fields.first { $0.key == key }?.value }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var intValue: Int64? { if case .integer(let i) = self { return i }; return nil }
    /// A number, whole or not.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    // MARK: JSON

    /// Compact JSON on one line (stable key order: the order the fields were built in).
    public var json: String {
        var out = ""
        writeJSON(into: &out)
        return out
    }

    public func writeJSON(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .double(let d):
            if d.isFinite { out += Value.formatDouble(d) } else { out += "null" }
        case .string(let s): Value.writeJSONString(s, into: &out)
        case .array(let items):
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += "," }
                v.writeJSON(into: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (i, f) in fields.enumerated() {
                if i > 0 { out += "," }
                Value.writeJSONString(f.key, into: &out)
                out += ":"
                f.value.writeJSON(into: &out)
            }
            out += "}"
        }
    }

    static func writeJSONString(_ s: String, into out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    out += "\\u00"
                    out += Hex.digit(UInt8(u.value >> 4))
                    out += Hex.digit(UInt8(u.value & 15))
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        out += "\""
    }

    /// Shortest round-trip form from the standard library, with a trailing ".0" dropped.
    static func formatDouble(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

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
        case .object(let fields): return .object(fields.map { Field(terminalSafeLine($0.key), $0.value.oneLine) })
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
        case .double(let d): return Value.formatDouble(d)
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
