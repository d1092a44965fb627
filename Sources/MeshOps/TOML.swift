/// A small TOML reader for the config file: the subset a config needs, each error naming its line.
///
/// Supported: `# comments`; `[table]` and `[dotted.table]` headers with bare or "quoted" keys;
/// `key = value` with bare, quoted or dotted keys; basic strings ("…" with \" \\ \n \t \r \uXXXX
/// \UXXXXXXXX escapes) and literal strings ('…'); integers (sign, `_` separators); floats
/// (finite only); booleans; arrays of those (on one or several lines, trailing comma allowed).
/// Not supported (an error says so): multi-line strings, inline tables, arrays of tables, dates.
/// Arrays nest and dotted keys go at most `maxDepth` levels deep (a config needs a few), so a
/// hostile file is an error naming its line, never a stack overflow; nothing here recurses deeper.
public enum TOMLValue: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case bool(Bool)
    case array([TOMLValue])
    case table(TOMLTable)

    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var table: TOMLTable? { if case .table(let t) = self { return t }; return nil }
}

/// Keys in the order they appear (a config is shown as written).
public struct TOMLTable: Equatable, Sendable {
    public private(set) var keys: [String] = []
    public private(set) var values: [String: TOMLValue] = [:]
    /// The line each key was set on (for errors found later, e.g. an unknown setting).
    public private(set) var lines: [String: Int] = [:]

    public init() {}

    public subscript(key: String) -> TOMLValue? { values[key] }

    mutating func set(_ key: String, _ value: TOMLValue, line: Int) {
        if values[key] == nil { keys.append(key) }
        values[key] = value
        lines[key] = line
    }
}

public struct TOMLError: Error, Equatable, CustomStringConvertible, Sendable {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

public enum TOML {
    /// How deep arrays may nest, and how many tables a header or a dotted key may go down.
    public static let maxDepth = 64

    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        var p = Parser(Array(text.unicodeScalars))
        return try p.document()
    }

    struct Parser {
        let s: [Unicode.Scalar]
        var i = 0
        var line = 1
        var root = TOMLTable()
        /// Tables made by a header (a second header for the same table is an error).
        var headers: Set<[String]> = []

        init(_ s: [Unicode.Scalar]) { self.s = s }

        func fail(_ m: String) -> TOMLError { TOMLError(line: line, message: m) }
        var atEnd: Bool { i >= s.count }
        var peek: Unicode.Scalar? { i < s.count ? s[i] : nil }

        mutating func skipSpaces() { while let c = peek, c == " " || c == "\t" { i += 1 } }
        mutating func skipComment() { if peek == "#" { while let c = peek, c != "\n" { i += 1 } } }
        /// Spaces, comments and newlines (inside arrays).
        mutating func skipBlank() {
            while true {
                skipSpaces(); skipComment()
                if peek == "\n" { i += 1; line += 1 } else if peek == "\r" { i += 1 } else { return }
            }
        }
        mutating func endOfLine() throws(TOMLError) {
            skipSpaces(); skipComment()
            if peek == "\r" { i += 1 }
            if atEnd { return }
            guard peek == "\n" else { throw fail("unexpected text after the value") }
            i += 1; line += 1
        }

        mutating func document() throws(TOMLError) -> TOMLTable {
            var current: [String] = []
            while true {
                skipBlank()
                guard let c = peek else { break }
                if c == "[" {
                    i += 1
                    if peek == "[" { throw fail("arrays of tables ([[…]]) are not supported") }
                    skipSpaces()
                    let path = try keyPath()
                    skipSpaces()
                    guard peek == "]" else { throw fail("a table header must end with ]") }
                    i += 1
                    guard headers.insert(path).inserted else { throw fail("table [\(path.joined(separator: "."))] is defined twice") }
                    try ensureTable(path)
                    current = path
                    try endOfLine()
                } else {
                    let keyLine = line
                    let path = try keyPath()
                    skipSpaces()
                    guard peek == "=" else { throw fail("expected = after the key \"\(path.joined(separator: "."))\"") }
                    i += 1
                    skipSpaces()
                    let v = try value()
                    try assign(current + path, v, line: keyLine)
                    try endOfLine()
                }
            }
            return root
        }

        mutating func keyPath() throws(TOMLError) -> [String] {
            var parts: [String] = []
            while true {
                skipSpaces()
                parts.append(try key())
                skipSpaces()
                guard peek == "." else { return parts }
                i += 1
                if parts.count >= TOML.maxDepth { throw fail("a key or table name has more than \(TOML.maxDepth) dotted parts") }
            }
        }

        mutating func key() throws(TOMLError) -> String {
            if peek == "\"" { return try basicString() }
            if peek == "'" { return try literalString() }
            var k = ""
            while let c = peek, ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-" {
                k.unicodeScalars.append(c); i += 1
            }
            guard !k.isEmpty else { throw fail("expected a key") }
            return k
        }

        mutating func ensureTable(_ path: [String]) throws(TOMLError) {
            try descend(path, line: line) { (_: inout TOMLTable, _: Int) throws(TOMLError) in }
        }

        mutating func assign(_ path: [String], _ v: TOMLValue, line: Int) throws(TOMLError) {
            guard path.count <= TOML.maxDepth else {
                throw TOMLError(line: line, message: "\"\(path.joined(separator: "."))\" nests tables more than \(TOML.maxDepth) levels deep")
            }
            try descend(Array(path.dropLast()), line: line) { (t: inout TOMLTable, line: Int) throws(TOMLError) in
                let k = path[path.count - 1]
                guard t[k] == nil else { throw TOMLError(line: line, message: "\"\(path.joined(separator: "."))\" is set twice") }
                t.set(k, v, line: line)
            }
        }

        /// Goes down `path` from the root, making the tables that are missing, runs `body` on the
        /// last one and puts the tables back: a loop over the parts (no recursion), at most
        /// `TOML.maxDepth` of them.
        mutating func descend(_ path: [String], line: Int, _ body: (inout TOMLTable, Int) throws(TOMLError) -> Void) throws(TOMLError) {
            var chain: [TOMLTable] = [root]
            chain.reserveCapacity(path.count + 1)
            for k in path {
                switch chain[chain.count - 1][k] {
                case nil: chain.append(TOMLTable())
                case .table(let x)?: chain.append(x)
                default: throw TOMLError(line: line, message: "\"\(k)\" is already a value, not a table")
                }
            }
            try body(&chain[chain.count - 1], line)
            for d in stride(from: path.count, to: 0, by: -1) {
                let k = path[d - 1]
                let sub = chain.removeLast()
                chain[d - 1].set(k, .table(sub), line: chain[d - 1].lines[k] ?? line)
            }
            root = chain[0]
        }

        mutating func value(depth: Int = 0) throws(TOMLError) -> TOMLValue {
            guard let c = peek else { throw fail("expected a value") }
            switch c {
            case "\"":
                if i + 2 < s.count, s[i + 1] == "\"", s[i + 2] == "\"" { throw fail("multi-line strings are not supported") }
                return .string(try basicString())
            case "'":
                if i + 2 < s.count, s[i + 1] == "'", s[i + 2] == "'" { throw fail("multi-line strings are not supported") }
                return .string(try literalString())
            case "[": return try array(depth: depth + 1)
            case "{": throw fail("inline tables ({…}) are not supported: use a [table]")
            case "t", "f":
                let word = bareWord()
                if word == "true" { return .bool(true) }
                if word == "false" { return .bool(false) }
                throw fail("unknown value \"\(word)\" (strings need quotes)")
            default:
                return try number()
            }
        }

        mutating func bareWord() -> String {
            var w = ""
            while let c = peek, c != " ", c != "\t", c != "\n", c != "\r", c != ",", c != "]", c != "#" {
                w.unicodeScalars.append(c); i += 1
            }
            return w
        }

        mutating func number() throws(TOMLError) -> TOMLValue {
            let word = bareWord()
            let digits = word.filter { $0 != "_" }
            guard !digits.isEmpty, !word.hasPrefix("_"), !word.hasSuffix("_"), !word.containsText("__") else {
                throw fail("\"\(word)\" is not a value (strings need quotes)")
            }
            if let n = Int64(digits) { return .integer(n) }
            let lower = digits.lowercased()
            if lower.containsText("inf") || lower.containsText("nan") || lower.hasPrefix("0x") || lower.hasPrefix("+0x") {
                throw fail("\"\(word)\" is not a usable number here")
            }
            if let d = Double(digits), d.isFinite, digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
                return .float(d)
            }
            if digits.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "+" }) { throw fail("the number \(word) is too large") }
            throw fail("\"\(word)\" is not a value (strings need quotes)")
        }

        mutating func array(depth: Int) throws(TOMLError) -> TOMLValue {
            if depth > TOML.maxDepth { throw fail("arrays are nested more than \(TOML.maxDepth) levels deep") }
            i += 1
            var items: [TOMLValue] = []
            while true {
                skipBlank()
                guard let c = peek else { throw fail("an array is not closed with ]") }
                if c == "]" { i += 1; return .array(items) }
                items.append(try value(depth: depth))
                skipBlank()
                if peek == "," { i += 1; continue }
                guard !atEnd else { throw fail("an array is not closed with ]") }
                guard peek == "]" else { throw fail("expected , or ] in an array") }
            }
        }

        mutating func literalString() throws(TOMLError) -> String {
            i += 1
            var out = ""
            while let c = peek {
                i += 1
                if c == "'" { return out }
                if c == "\n" { break }
                if (c.value < 0x20 && c != "\t") || c.value == 0x7F { throw fail("a control character cannot be in a literal string: use a \"…\" string with an escape") }
                out.unicodeScalars.append(c)
            }
            throw fail("a string is not closed with '")
        }

        mutating func basicString() throws(TOMLError) -> String {
            i += 1
            var out = ""
            while let c = peek {
                i += 1
                switch c {
                case "\"": return out
                case "\n": throw fail("a string is not closed with \"")
                case "\\":
                    guard let e = peek else { break }
                    i += 1
                    switch e {
                    case "\"": out += "\""
                    case "\\": out += "\\"
                    case "n": out += "\n"
                    case "t": out += "\t"
                    case "r": out += "\r"
                    case "b": out += "\u{8}"
                    case "f": out += "\u{C}"
                    case "u", "U":
                        let n = e == "u" ? 4 : 8
                        guard i + n <= s.count else { throw fail("a \\\(e) escape needs \(n) hex digits") }
                        var hex = ""
                        for k in 0..<n { hex.unicodeScalars.append(s[i + k]) }
                        guard let v = UInt32(hex, radix: 16), let u = Unicode.Scalar(v) else { throw fail("\\\(e)\(hex) is not a character") }
                        out.unicodeScalars.append(u)
                        i += n
                    default: throw fail("unknown escape \\\(e) in a string")
                    }
                default:
                    if (c.value < 0x20 && c != "\t") || c.value == 0x7F { throw fail("a control character in a string must be escaped") }
                    out.unicodeScalars.append(c)
                }
            }
            throw fail("a string is not closed with \"")
        }
    }
}
