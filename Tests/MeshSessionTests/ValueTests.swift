import Testing
@testable import MeshOps
@testable import MeshSession

@Suite struct ValueTests {
    @Test func jsonIsCompactOrderedAndEscaped() {
        let v: Value = .object([
            ("name", .string("a\"b\\c\nd\u{01}é🌲")),
            ("n", .int(-5)),
            ("x", .double(869.618)),
            ("whole", .double(915)),
            ("ok", .bool(true)),
            ("none", .null),
            ("list", .array([.int(1), .string("z")])),
        ])
        #expect(v.json == #"{"name":"a\"b\\c\nd\u0001é🌲","n":-5,"x":869.618,"whole":915,"ok":true,"none":null,"list":[1,"z"]}"#)
    }

    @Test func nonFiniteDoublesBecomeNull() {
        #expect(Value.double(.infinity).json == "null")
        #expect(Value.double(.nan).json == "null")
    }

    @Test func textRendering() {
        let v: Value = .object([("name", .string("sim0")), ("modes", .object([("base", .string("deny"))]))])
        #expect(v.text() == "name: sim0\nmodes:\n  base: deny")
        #expect(Value.array([.object([("a", .int(1)), ("b", .bool(false))])]).text() == "a=1 b=no")
    }

    @Test func hexRoundTrip() {
        #expect(Hex.encode([0x00, 0xAB, 0xff]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xAB, 0xFF])
        #expect(Hex.decode("16 03") == [0x16, 0x03])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func fixedDecimals() {
        #expect(Value.fixed(869.618, 3) == "869.618")
        #expect(Value.fixed(-0.5, 1) == "-0.5")
        #expect(Value.fixed(62.5, 0) == "63")
        #expect(Value.fixed(1.05, 2) == "1.05")
    }

    @Test func exitCodes() {
        #expect(ClientError.usage("x").exitCode == 2)
        #expect(ClientError.link("x").exitCode == 3)
        #expect(ClientError.timeout("x").exitCode == 4)
        #expect(ClientError.radio("the name", code: 6).exitCode == 5)
        #expect(ClientError.radio("the name", code: 6).description.contains("ERR 6"))
        #expect(ClientError.notFound("x").exitCode == 6)
    }

    @Test func contactSummaryFromRecord() {
        var f: [UInt8] = [0x03] + keyB + [2, 1, 0x02, 0x5F, 0x33] + [UInt8](repeating: 0, count: 62)
        var n = Array("rpt".utf8); n += [UInt8](repeating: 0, count: 32 - n.count)
        f += n + le32(10) + le32(UInt32(bitPattern: 52_500_000)) + le32(UInt32(bitPattern: -1_250_000)) + le32(77)
        let c = ContactSummary(record: f)!
        #expect(c.name == "rpt" && c.type == 2 && c.outPath == [0x5F, 0x33] && c.lastModified == 77)
        #expect(c.value["latitude"] == .double(52.5))
        #expect(c.value["longitude"] == .double(-1.25))
        #expect(c.value["type"] == .string("repeater"))
        #expect(ContactSummary(record: [0x03]) == nil)
    }

    @Test func terminalSafeShowsControlCharactersAsEscapes() {
        // A node named to retitle the window, then clearing the screen, ringing and rewriting the line.
        #expect(terminalSafe("\u{1B}]0;pwned\u{07}bob") == "\\x1b]0;pwned\\x07bob")
        #expect(terminalSafe("hi\u{1B}[2J\rX\u{7F}\u{08}") == "hi\\x1b[2J\\x0dX\\x7f\\x08")
        // C1 CSI (a control sequence on some terminals) and bidirectional overrides.
        #expect(terminalSafe("a\u{9B}31mb\u{202E}c") == "a\\u009b31mb\\u202ec")
        // Ordinary text, newlines and tabs are untouched.
        for s in ["plain", "multi\nline\ttext", "héllo wörld ☀️ 你好", ""] { #expect(terminalSafe(s) == s) }
        // JSON keeps its own escaping.
        #expect(Value.string("\u{1B}[2J").json == "\"\\u001b[2J\"")
    }
}
