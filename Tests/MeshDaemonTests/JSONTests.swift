import MeshNet
import Testing
@testable import MeshDaemon
import MeshSession
import MeshOps
import MeshDaemonClient
import MeshLink

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

    /// Found by fuzzing: 1e400 parsed as an infinite double, which then re-serialised as null.
    @Test(arguments: ["1e400", "-1E+999", "[123456780.121E345678]", "{\"id\":1,\"op\":\"ping\",\"x\":1e309}"])
    func rejectsNumbersBeyondDouble(_ text: String) {
        #expect(throws: JSONError.self) { _ = try JSONParser.parse(text) }
    }

    @Test func rejectsDeepNesting() {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(throws: JSONError.tooDeep) { try JSONParser.parse(deep) }
    }

    /// Hostile nesting from the API socket or an MQTT payload (200,000 levels, unclosed or
    /// closed, arrays and objects): an error at the depth limit, never a stack overflow.
    @Test(arguments: [
        String(repeating: "[", count: 200_000),
        String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000),
        String(repeating: "{\"a\":", count: 200_000) + "1" + String(repeating: "}", count: 200_000),
        "{\"id\":1,\"op\":\"send\",\"x\":" + String(repeating: "[{\"b\":", count: 100_000),
    ])
    func hostileNestingIsAnErrorNotACrash(_ text: String) {
        #expect(throws: JSONError.tooDeep) { try JSONParser.parse(text) }
        // The API's request parser answers it as a usage error.
        let result = Array(text.utf8).withUnsafeBytes { DaemonRequest.parse(line: $0) }
        if case .failure(let f) = result { #expect(f.error.code == .usage) } else { Issue.record("parsed") }
        // Exactly at the limit still parses.
        let ok = String(repeating: "[", count: JSONParser.maxDepth + 1) + String(repeating: "]", count: JSONParser.maxDepth + 1)
        #expect((try? JSONParser.parse(ok)) != nil)
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
            #expect((try? r.values())?.string("to") == "bob")
        } else { Issue.record("should parse") }
        if case .failure(let f) = parse(#"{"id":4,"op":"fly"}"#) {
            #expect(f.id == 4 && f.error.code == .unsupported)
            // The daemon's own ops by their rows' names, in DaemonOp's order, then the others.
            #expect(f.error.message.hasPrefix("unknown op \"fly\" (known: ping, status, info, contacts, channels, send, sync, chats, history, outbox, "
                + "hooks_failed, hooks_retry, hooks_drop, contacts_pending, contacts_add_pending, contacts_flush_pending, samples_signal, samples_battery, subscribe, tunnel, "), "\(f.error.message)")
        } else { Issue.record("unknown op should fail") }
        // A daemon op is found by its row's name; `operation` is no op's name.
        if case .success(let r) = parse(#"{"id":5,"op":"contacts_flush_pending"}"#) { #expect(r.op == .contactsFlushPending && r.name == "contacts_flush_pending") } else { Issue.record("flush") }
        if case .success(let r) = parse(#"{"id":6,"op":"hooks_drop","message":3}"#) { #expect(r.op == .hooksDrop && r.line.contains(#""op":"hooks_drop""#)) } else { Issue.record("drop") }
        if case .failure(let f) = parse(#"{"id":7,"op":"operation"}"#) { #expect(f.error.code == .unsupported) } else { Issue.record("operation") }
        if case .success(let r) = parse(#"{"id":8,"op":"contacts_remove","name":"x"}"#) { #expect(r.op == .operation && r.name == "contacts_remove") } else { Issue.record("operation") }
        #expect(DaemonRequest(id: 9, op: .contactsPending).line == #"{"id":9,"op":"contacts_pending"}"#)
        if case .failure(let f) = parse(#"[1]"#) { #expect(f.error.code == .usage) } else { Issue.record("array") }
        if case .failure(let f) = parse(#"{"id":"x","op":"ping"}"#) { #expect(f.error.code == .usage) } else { Issue.record("id") }
    }

    @Test func errorCodesMapToExitCodes() {
        #expect(DaemonErrorCode.usage.exitCode == 2)
        #expect(DaemonErrorCode.link.exitCode == 3)
        #expect(DaemonErrorCode.timeout.exitCode == 4)
        #expect(DaemonErrorCode.refused.exitCode == 5)
        #expect(DaemonErrorCode.notFound.exitCode == 6)
        // Every kind exits with a code of the README's table (no 1: storage and internal are 7).
        #expect(DaemonErrorCode.storage.exitCode == 7 && DaemonErrorCode.internal.exitCode == 7)
        for kind in DaemonErrorCode.allCases { #expect([2, 3, 4, 5, 6, 7, 130].contains(kind.exitCode), "\(kind)") }
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

@Suite struct OperationRequestTests {
    func parse(_ s: String) -> Result<DaemonRequest, DaemonRequest.ParseFailure> {
        Array(s.utf8).withUnsafeBytes { DaemonRequest.parse(line: $0) }
    }

    @Test func commandPathsAreOperations() throws {
        let r = try parse(#"{"id":3,"op":"contacts_remove","name":"bob"}"#).get()
        #expect(r.op == .operation && r.name == "contacts_remove" && r.args["name"]?.string == "bob")
        #expect(r.args["op"]?.string == "contacts_remove")
        // `status` is the daemon's own, unless it names a node.
        #expect(try parse(#"{"id":1,"op":"status"}"#).get().op == .status)
        let s = try parse(#"{"id":1,"op":"status","name":"rpt"}"#).get()
        #expect(s.op == .operation && s.name == "status")
        // Unknown names, and the internal name itself, are refused.
        for bad in [#"{"id":2,"op":"contacts_frob"}"#, #"{"id":2,"op":"operation"}"#] {
            guard case .failure(let f) = parse(bad) else { Issue.record("accepted \(bad)"); continue }
            #expect(f.error.code == .unsupported && f.id == 2)
        }
    }

    @Test func fieldsBecomeTheCommandsRequest() throws {
        #expect(try Request(apiOp: "contacts_add", fields: ["public_key": .string("ab"), "name": .string("n"), "type": .string("room")])
                == .contactAdd(publicKey: "ab", name: "n", type: 3, path: nil))
        #expect(try Request(apiOp: "set", fields: ["setting": .string("coords"), "values": .array([.double(45.5), .integer(-75)])])
                == .set("coords", ["45.5", "-75"]))
        #expect(try Request(apiOp: "channel_set", fields: ["index": .integer(2), "name": .string("#hike"), "hashtag": .bool(true)])
                == .channelSet(index: 2, name: "#hike", secret: nil, hashtag: true))
        #expect(throws: ClientError.self) { try Request(apiOp: "login", fields: ["name": .string("r")]) }
        #expect(throws: ClientError.self) { try Request(apiOp: "factory_reset", fields: [:]) }
        #expect(throws: ClientError.self) { try Request(apiOp: "contacts_add", fields: ["public_key": .string("ab"), "name": .string("n"), "type": .string("boat")]) }
        // Every op in the table is one the initializer knows.
        for op in Request.apiOps {
            do { _ = try Request(apiOp: op, fields: [:]) } catch {
                #expect(!"\(error)".contains("unknown operation"), "\(op)")
            }
        }
    }
}
