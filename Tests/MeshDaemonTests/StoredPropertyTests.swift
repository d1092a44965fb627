import Testing

/// Counts the stored properties of every type in Swift source text: `var` and `let` declared at a
/// class's, struct's, enum's or actor's own scope, not `static` or `class`, and not computed (a
/// `var` whose braces hold no `willSet`/`didSet` and that has no `=` before them). Strings and
/// comments are blanked first, so braces inside them count for nothing.
enum StoredProperties {
    /// Source text with string literals' contents and comments replaced by spaces (newlines kept).
    static func code(_ text: String) -> [UInt8] {
        let s = Array(text.utf8)
        var out = s
        var i = 0
        func blank(_ a: Int, _ b: Int) { for k in a..<min(b, s.count) where s[k] != 0x0A { out[k] = 0x20 } }
        // Skips a string literal starting at `i` (its opening quote or quotes); returns the index after it.
        func string(_ start: Int) -> Int {
            let triple = start + 2 < s.count && s[start + 1] == 0x22 && s[start + 2] == 0x22
            var j = start + (triple ? 3 : 1)
            while j < s.count {
                if s[j] == 0x5C {  // backslash: an escape or an interpolation
                    if j + 1 < s.count && s[j + 1] == 0x28 {
                        j = interpolation(j + 2)
                        continue
                    }
                    j += 2
                    continue
                }
                if s[j] == 0x22 {
                    if !triple { blank(start + 1, j); return j + 1 }
                    if j + 2 < s.count && s[j + 1] == 0x22 && s[j + 2] == 0x22 { blank(start + 3, j); return j + 3 }
                }
                if s[j] == 0x0A && !triple { return j }
                j += 1
            }
            return j
        }
        // Skips the code of `\( ... )` up to its closing parenthesis (strings inside it included).
        func interpolation(_ start: Int) -> Int {
            var depth = 1
            var j = start
            while j < s.count && depth > 0 {
                switch s[j] {
                case 0x22: j = string(j); continue
                case 0x28: depth += 1
                case 0x29: depth -= 1
                default: break
                }
                j += 1
            }
            return j
        }
        while i < s.count {
            if s[i] == 0x2F && i + 1 < s.count && s[i + 1] == 0x2F {  // line comment
                var j = i
                while j < s.count && s[j] != 0x0A { j += 1 }
                blank(i, j)
                i = j
            } else if s[i] == 0x2F && i + 1 < s.count && s[i + 1] == 0x2A {  // block comment
                var j = i + 2
                while j + 1 < s.count && !(s[j] == 0x2A && s[j + 1] == 0x2F) { j += 1 }
                blank(i, j + 2)
                i = j + 2
            } else if s[i] == 0x22 {
                let end = string(i)
                blank(i, end)
                i = end
            } else {
                i += 1
            }
        }
        return out
    }

    /// Each type's name (nested types as `Outer.Inner`) and its stored properties.
    static func count(_ text: String) -> [(type: String, properties: [String])] {
        let bytes = code(text)
        var result: [(type: String, properties: [String])] = []
        // The scopes open at this point: a type's name (its index in `result`), or nil for any other brace.
        var scopes: [(name: String?, index: Int?)] = []
        var statement: [UInt8] = []  // the code since the last brace or newline outside parentheses
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines = lines.map { $0 }
        for line in lines {
            // A declaration line at a type's scope.
            if let top = scopes.last, let index = top.index, let name = property(line, lines: lines) {
                result[index].properties.append(name)
            }
            for b in line.utf8 {
                if b == UInt8(ascii: "{") {
                    let text = String(decoding: statement, as: UTF8.self)
                    if let t = typeName(text) {
                        let outer = scopes.last(where: { $0.name != nil })?.name
                        let full = outer.map { $0 + "." + t } ?? t
                        result.append((full, []))
                        scopes.append((full, result.count - 1))
                    } else {
                        scopes.append((nil, nil))
                    }
                    statement.removeAll()
                } else if b == UInt8(ascii: "}") {
                    if !scopes.isEmpty { scopes.removeLast() }
                    statement.removeAll()
                } else {
                    statement.append(b)
                }
            }
            statement.append(UInt8(ascii: " "))
        }
        return result
    }

    /// The name a type declaration introduces, when `text` (the code before a `{`) is one.
    static func typeName(_ text: String) -> String? {
        let words = text.split(whereSeparator: { " \t\n:<(,".contains($0) }).map(String.init)
        // A declaration's introducer comes after attributes and modifiers only.
        guard let k = words.firstIndex(where: { ["class", "struct", "enum", "actor", "extension", "protocol", "func", "var", "let", "init",
                                                 "case", "if", "for", "while", "switch", "guard", "do", "else", "return", "=", "in"].contains($0) }),
              ["class", "struct", "enum", "actor"].contains(words[k]), k + 1 < words.count else { return nil }
        // `class func`/`class var` are members, not types.
        if words[k] == "class" && ["func", "var", "let", "override", "subscript"].contains(words[k + 1]) { return nil }
        return words[k + 1]
    }

    static let modifiers: Set<String> = ["public", "private", "fileprivate", "internal", "open", "final", "lazy", "weak", "unowned",
                                         "unowned(unsafe)", "nonisolated", "nonisolated(unsafe)", "override", "dynamic", "@usableFromInline",
                                         "private(set)", "public", "internal(set)", "public(set)", "fileprivate(set)", "package", "package(set)"]

    /// The stored property a line declares, if it declares one.
    static func property(_ line: String, lines: [String]) -> String? {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        while let w = words.first, w.hasPrefix("@") || modifiers.contains(w) { words.removeFirst() }
        guard let kw = words.first, kw == "var" || kw == "let", words.count > 1 else { return nil }
        let name = String(words[1].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
        if kw == "let" { return name }
        // `var`: stored unless braces follow with no `=` before them (a computed property), or
        // the braces hold only observers.
        let u = Array(line.utf8)
        var depth = 0
        for (n, b) in u.enumerated() {
            switch b {
            case UInt8(ascii: "("), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: "=") where depth == 0:
                // `==`, `>=`, `<=`, `!=` and `->` are not an initializer's `=`.
                let prev = n > 0 ? u[n - 1] : 0
                let next = n + 1 < u.count ? u[n + 1] : 0
                if next != UInt8(ascii: "=") && !"=!<>".utf8.contains(prev) { return name }
            case UInt8(ascii: "{") where depth == 0:
                let rest = String(decoding: u[(n + 1)...], as: UTF8.self)
                if rest.contains("didSet") || rest.contains("willSet") { return name }
                // Observers on the next lines.
                if rest.blankTrimmed.isEmpty, let at = lines.firstIndex(of: line), at + 1 < lines.count {
                    let next = lines[at + 1].blankTrimmed
                    if next.hasPrefix("didSet") || next.hasPrefix("willSet") { return name }
                }
                return nil
            default: break
            }
        }
        return name
    }
}

extension String {
    var blankTrimmed: String {
        String(String(drop { $0 == " " || $0 == "\t" }.reversed()).drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// No type holds more than it can own: the daemon is wiring between parts, each part a small type
/// with its own state.
@Suite struct StoredPropertyTests {
    static let limit = 30
    static let daemonLimit = 15

    static func everyType() -> [(file: String, type: String, properties: [String])] {
        var out: [(file: String, type: String, properties: [String])] = []
        for dir in ["/Sources", "/cmd"] {
            for f in SourceTree.swiftFiles(SourceTree.root + dir) {
                for t in StoredProperties.count(SourceTree.read(f)) {
                    out.append((String(f.dropFirst(SourceTree.root.count + 1)), t.type, t.properties))
                }
            }
        }
        return out
    }

    @Test func noTypeHoldsMoreThanThirty() {
        let types = Self.everyType()
        #expect(types.count > 300, "the sources' types were not found (\(types.count))")
        for t in types where t.properties.count > Self.limit {
            Issue.record("\(t.file): \(t.type) has \(t.properties.count) stored properties (at most \(Self.limit)): \(t.properties.joined(separator: ", "))")
        }
    }

    @Test func theDaemonIsWiring() {
        let daemon = Self.everyType().filter { $0.type == "Daemon" }
        #expect(daemon.count == 1)
        for d in daemon {
            #expect(d.properties.count <= Self.daemonLimit, "Daemon has \(d.properties.count) stored properties: \(d.properties.joined(separator: ", "))")
        }
    }

    /// The counter itself: what is stored and what is not.
    @Test func theCounterCounts() {
        let text = """
        final class A: B {
            public struct Config {
                var x = 1
                let y: Int
            }
            let a: Int
            var b = "{"   // a brace in a string
            var c: Int { 3 }
            var d: Int {
                get { 1 }
            }
            var e: Int = 0 {
                didSet { f() }
            }
            lazy var f = F(self)
            static var g = 0
            public internal(set) var h: Int? = nil
            var log: (String) -> Void = { line in print("\\(line) }") }
            func k() { var local = 0; let other = 1 }
            enum E { case one, two }
            /* var commented = 0 */
        }
        extension A { var computed: Int { 1 } }
        """
        let types = StoredProperties.count(text)
        let a = types.first { $0.type == "A" }
        #expect(a?.properties == ["a", "b", "e", "f", "h", "log"])
        #expect(types.first { $0.type == "A.Config" }?.properties == ["x", "y"])
        #expect(types.first { $0.type == "A.E" }?.properties == [])
    }
}
