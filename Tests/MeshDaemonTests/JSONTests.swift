import Testing
@testable import MeshDaemon

@Suite struct JSONTests {
    @Test func roundTrip() throws {
        let text = #"{"id":7,"op":"send","to":"alice","text":"h\u00e9 \"q\"\n\ud83d\ude00","n":-1.5,"a":[true,false,null],"o":{}}"#
        let v = try JSONParser.parse(text)
        #expect(v["id"]?.int == 7)
        #expect(v["text"]?.string == "hé \"q\"\n😀")
        #expect(v["n"] == .double(-1.5))
        let again = try JSONParser.parse(v.text)
        #expect(again == v)
        #expect(!v.text.contains("\n"))
    }

    @Test(arguments: ["", "{", "{\"a\":}", "[1,]", "nul", "\"abc", "{\"a\":1}x", "01x", "\"\\x\"", "\"\\ud800\"", "-", "1.", "{\"a\" 1}", "\u{1}"])
    func rejectsMalformed(_ text: String) {
        #expect(throws: JSONError.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsDeepNesting() {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(throws: JSONError.tooDeep) { try JSONParser.parse(deep) }
    }

    @Test func controlCharactersAreEscaped() {
        let v = JSON.string("a\u{0}b\u{1f}")
        #expect(v.text == #""a\u0000b\u001f""#)
    }

    @Test func requestParsing() {
        func parse(_ s: String) -> Result<DaemonRequest, DaemonRequest.ParseFailure> {
            Array(s.utf8).withUnsafeBytes { DaemonRequest.parse(line: $0) }
        }
        if case .success(let r) = parse(#"{"id":3,"op":"send","to":"bob","text":"x"}"#) {
            #expect(r.id == 3 && r.op == .send)
            #expect((try? r.string("to")) == "bob")
        } else { Issue.record("should parse") }
        if case .failure(let f) = parse(#"{"id":4,"op":"fly"}"#) {
            #expect(f.id == 4 && f.error.code == .unsupported)
        } else { Issue.record("unknown op should fail") }
        if case .failure(let f) = parse(#"[1]"#) { #expect(f.error.code == .usage) } else { Issue.record("array") }
        if case .failure(let f) = parse(#"{"id":"x","op":"ping"}"#) { #expect(f.error.code == .usage) } else { Issue.record("id") }
    }

    @Test func errorCodesMapToExitCodes() {
        #expect(DaemonErrorCode.usage.exitCode == 2)
        #expect(DaemonErrorCode.link.exitCode == 3)
        #expect(DaemonErrorCode.timeout.exitCode == 4)
        #expect(DaemonErrorCode.refused.exitCode == 5)
        #expect(DaemonErrorCode.notFound.exitCode == 6)
        let r = DaemonResponse(id: 9, error: DaemonError(.timeout, "no ACK"))
        #expect(r.json.text == #"{"id":9,"ok":false,"error":{"code":"timeout","exit":4,"message":"no ACK"}}"#)
    }

    @Test func commandSplitting() {
        #expect(Spawn.splitCommand("a b  c") == ["a", "b", "c"])
        #expect(Spawn.splitCommand(#"/bin/x 'a b' "c \"d\"" e\ f"#) == ["/bin/x", "a b", "c \"d\"", "e f"])
        #expect(Spawn.splitCommand("echo $HOME;rm") == ["echo", "$HOME;rm"])
        #expect(Spawn.splitCommand("'open") == nil)
        #expect(Spawn.splitCommand("x ''") == ["x", ""])
    }
}
