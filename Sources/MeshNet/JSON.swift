// The program's one JSON value, with its one parser and one writer: the local API's
// newline-delimited messages, the operations' results (MeshOps' `Value` is this type), hooks,
// MQTT payloads and topology files.
//
// Hand-written rather than Codable: requests are tiny, the parser must reject bad input with a
// typed error (never trap), cap nesting depth, and keep the daemon's RSS and binary small.

/// One JSON value. Objects keep their keys in insertion order so output is deterministic.
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([Field])

    /// An object's member. Objects keep their members in the order they were built in.
    public typealias Field = (key: String, value: JSON)

    public static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.integer(x), .integer(y)): return x == y
        case let (.double(x), .double(y)): return x == y
        case let (.integer(x), .double(y)), let (.double(y), .integer(x)): return Double(x) == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        for (k, v) in pairs where k == key { return v }
        return nil
    }

    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var int: Int64? {
        switch self {
        case .integer(let i): return i
        case .double(let d):
            guard d.rounded() == d, d >= -9.2e18, d <= 9.2e18 else { return nil }
            return Int64(d)
        default: return nil
        }
    }
    public var array: [JSON]? { if case .array(let a) = self { return a }; return nil }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements) }
    public init(nilLiteral: ()) { self = .null }
}

public enum JSONError: Error, Equatable, CustomStringConvertible {
    case unexpectedEnd
    case unexpectedByte(UInt8, at: Int)
    case badEscape(at: Int)
    case badNumber(at: Int)
    case badUTF8
    case tooDeep
    case trailingBytes(at: Int)

    public var description: String {
        switch self {
        case .unexpectedEnd: return "unexpected end of JSON"
        case .unexpectedByte(let b, let at): return "unexpected byte 0x\(String(b, radix: 16)) at offset \(at)"
        case .badEscape(let at): return "bad string escape at offset \(at)"
        case .badNumber(let at): return "bad number at offset \(at)"
        case .badUTF8: return "text is not valid UTF-8"
        case .tooDeep: return "nesting deeper than \(JSONParser.maxDepth) levels"
        case .trailingBytes(let at): return "extra bytes after the JSON value at offset \(at)"
        }
    }
}

/// Parses one JSON value from bytes. Leading and trailing whitespace are allowed.
public struct JSONParser {
    public static let maxDepth = 16
    private let bytes: UnsafeRawBufferPointer
    private var i = 0

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> JSON {
        var p = JSONParser(bytes: bytes)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        if p.i != bytes.count { throw .trailingBytes(at: p.i) }
        return v
    }

    public static func parse(_ text: String) throws(JSONError) -> JSON {
        var copy = Array(text.utf8)
        do {
            return try copy.withUnsafeMutableBytes { buf in try parse(UnsafeRawBufferPointer(buf)) }
        } catch let e as JSONError {
            throw e
        } catch {
            throw .badUTF8
        }
    }

    private init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private mutating func skipSpace() {
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 } else { break }
        }
    }

    private func peek() throws(JSONError) -> UInt8 {
        guard i < bytes.count else { throw .unexpectedEnd }
        return bytes[i]
    }

    private mutating func expectWord(_ word: StaticString) throws(JSONError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw .unexpectedEnd }
        let p = word.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] { throw .unexpectedByte(bytes[i + k], at: i + k) }
        i += n
    }

    private mutating func value(depth: Int) throws(JSONError) -> JSON {
        if depth > JSONParser.maxDepth { throw .tooDeep }
        let b = try peek()
        switch b {
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            i += 1
            var items: [JSON] = []
            skipSpace()
            if try peek() == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                let c = try peek()
                i += 1
                if c == UInt8(ascii: "]") { return .array(items) }
                if c != UInt8(ascii: ",") { throw .unexpectedByte(c, at: i - 1) }
            }
        case UInt8(ascii: "{"):
            i += 1
            var pairs: [(String, JSON)] = []
            skipSpace()
            if try peek() == UInt8(ascii: "}") { i += 1; return .object(pairs) }
            while true {
                skipSpace()
                let c0 = try peek()
                if c0 != UInt8(ascii: "\"") { throw .unexpectedByte(c0, at: i) }
                let key = try string()
                skipSpace()
                let colon = try peek()
                if colon != UInt8(ascii: ":") { throw .unexpectedByte(colon, at: i) }
                i += 1
                skipSpace()
                pairs.append((key, try value(depth: depth + 1)))
                skipSpace()
                let c = try peek()
                i += 1
                if c == UInt8(ascii: "}") { return .object(pairs) }
                if c != UInt8(ascii: ",") { throw .unexpectedByte(c, at: i - 1) }
            }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw .unexpectedByte(b, at: i)
        }
    }

    private mutating func hex4() throws(JSONError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw .unexpectedEnd }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw .badEscape(at: i)
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func string() throws(JSONError) -> String {
        i += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw .unexpectedEnd }
            let b = bytes[i]
            i += 1
            if b == UInt8(ascii: "\"") { break }
            if b < 0x20 { throw .unexpectedByte(b, at: i - 1) }
            if b != UInt8(ascii: "\\") { out.append(b); continue }
            guard i < bytes.count else { throw .unexpectedEnd }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    // A high surrogate must be followed by an escaped low surrogate.
                    guard i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                    else { throw .badEscape(at: i) }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw .badEscape(at: i - 6) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw .badEscape(at: i - 6)
                }
                guard let u = Unicode.Scalar(scalar) else { throw .badEscape(at: i - 6) }
                out.append(contentsOf: String(Character(u)).utf8)
            default:
                throw .badEscape(at: i - 1)
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw .badUTF8 }
        return s
    }

    private mutating func number() throws(JSONError) -> JSON {
        let start = i
        var isInt = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        var digits = 0
        while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; digits += 1 }
        if digits == 0 { throw .badNumber(at: start) }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInt = false
            i += 1
            var frac = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; frac += 1 }
            if frac == 0 { throw .badNumber(at: start) }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInt = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            var exp = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; exp += 1 }
            if exp == 0 { throw .badNumber(at: start) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if isInt, let v = Int64(text) { return .int(v) }
        // A number too large for a double is refused: JSON has no infinity, and it would re-serialise as null.
        guard let d = Double(text), d.isFinite else { throw .badNumber(at: start) }
        return .double(d)
    }
}

extension JSON {
    /// Compact JSON text on one line (no newlines inside: suitable for newline-delimited streams).
    public var text: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .integer(let v): out.append(contentsOf: String(v).utf8)
        case .double(let d): out.append(contentsOf: (d.isFinite ? JSON.formatDouble(d) : "null").utf8)
        case .string(let s): JSON.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let pairs):
            out.append(UInt8(ascii: "{"))
            for (n, (k, v)) in pairs.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(k, into: &out)
                out.append(UInt8(ascii: ":"))
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7F:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 15)])
            default: out.append(b)
            }
        }
        out.append(0x22)
    }
}

extension JSON {
    /// Shortest round-trip form from the standard library; a whole number below 1e15 without ".0".
    public static func formatDouble(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// A string as a JSON string literal (quotes and escapes).
    public static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        writeString(s, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A whole number of any integer type.
    public static func int<I: BinaryInteger>(_ v: I) -> JSON { .integer(Int64(v)) }

    public static func object(_ pairs: KeyValuePairs<String, JSON>) -> JSON {
        .object(pairs.map { ($0.key, $0.value) })
    }

    public var stringValue: String? { string }
    /// A whole number as it was written (not a double that happens to be whole: see `int`).
    public var intValue: Int64? { if case .integer(let i) = self { return i }; return nil }
    /// A number, whole or not.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// Builds an object, dropping keys whose value is nil.
    public static func obj(_ pairs: (String, JSON?)...) -> JSON {
        .object(pairs.compactMap { k, v in v.map { (k, $0) } })
    }
}
