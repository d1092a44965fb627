import MeshSession
import Testing
@testable import MeshTerminal

@Suite struct KeyDecoderTests {
    @Test func keysAndText() {
        var d = KeyDecoder()
        #expect(d.feed(Array("héllo".utf8)) == [.text("héllo")])
        #expect(d.feed([0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x43, 0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42]) == [.left, .right, .up, .down])
        #expect(d.feed([0x01, 0x05, 0x15, 0x17, 0x04, 0x03, 0x09, 0x0D, 0x7F]) ==
                [.ctrl("a"), .ctrl("e"), .ctrl("u"), .ctrl("w"), .ctrl("d"), .ctrl("c"), .tab, .enter, .backspace])
        #expect(d.feed(Array("\u{1B}[3~\u{1B}[5~\u{1B}[6~\u{1B}[H\u{1B}[F\u{1B}OH\u{1B}[1;5D".utf8)) ==
                [.delete, .pageUp, .pageDown, .home, .end, .home, .wordLeft])
    }

    @Test func splitAcrossReads() {
        var d = KeyDecoder()
        let wide = Array("漢😀".utf8)
        #expect(d.feed(wide[..<2]) == [])
        #expect(d.feed(wide[2..<5]) == [.text("漢")])
        #expect(d.feed(wide[5...]) == [.text("😀")])
        #expect(d.feed([0x1B]) == [])
        #expect(d.isHolding)
        #expect(d.feed([0x5B]) == [])
        #expect(d.feed([0x44]) == [.left])
    }

    @Test func invalidUTF8IsReplaced() {
        var d = KeyDecoder()
        #expect(d.feed([0x61, 0xFF, 0x62]) == [.text("a\u{FFFD}b")])
        #expect(d.feed([0xC3, 0x28]) == [.text("\u{FFFD}(")])
    }
}

@Suite struct LineEditorTests {
    func type(_ e: inout LineEditor, _ s: String) { _ = e.handle(.text(s)) }

    @Test func editing() {
        var e = LineEditor()
        type(&e, "hello world")
        _ = e.handle(.ctrl("w"))
        #expect(e.text == "hello ")
        _ = e.handle(.ctrl("a"))
        type(&e, ">")
        #expect(e.text == ">hello " && e.cursor == 1)
        _ = e.handle(.ctrl("e"))
        _ = e.handle(.left)
        _ = e.handle(.backspace)
        #expect(e.text == ">hell ")
        _ = e.handle(.ctrl("u"))
        #expect(e.text == " " && e.cursor == 0)
        _ = e.handle(.delete)
        #expect(e.text.isEmpty)
        #expect(e.handle(.ctrl("d")) == .quit)
    }

    @Test func combiningMarkJoinsItsLetter() {
        var e = LineEditor()
        type(&e, "e")
        type(&e, "\u{301}")
        #expect(e.chars.count == 1)
        _ = e.handle(.backspace)
        #expect(e.text.isEmpty)
    }

    @Test func historyAndSubmit() {
        var e = LineEditor()
        type(&e, "one")
        #expect(e.handle(.enter) == .submit("one"))
        type(&e, "two")
        #expect(e.handle(.enter) == .submit("two"))
        #expect(e.handle(.enter) == .none)  // blank lines are not sent
        type(&e, "draft")
        _ = e.handle(.up)
        #expect(e.text == "two")
        _ = e.handle(.up)
        _ = e.handle(.up)
        #expect(e.text == "one")
        _ = e.handle(.down)
        _ = e.handle(.down)
        #expect(e.text == "draft")
    }

    @Test func completionWord() {
        var e = LineEditor()
        type(&e, "/to Bob Sm")
        #expect(e.completionWord.word == "Bob Sm")
        e.complete(with: "Bob Smith")
        #expect(e.text == "/to Bob Smith")
        var f = LineEditor()
        type(&f, "hi al")
        #expect(f.completionWord == ("al", 3))
    }
}

@Suite struct WidthTests {
    @Test func columns() {
        #expect(TerminalWidth.of("abc") == 3)
        #expect(TerminalWidth.of("漢字") == 4)
        #expect(TerminalWidth.of("😀") == 2)
        #expect(TerminalWidth.of("e\u{301}") == 1)
        #expect(TerminalWidth.of("한") == 2)
        #expect(TerminalWidth.prefix("漢字漢", columns: 5) == "漢字")
    }

    @Test func wrapping() {
        #expect(TerminalWidth.wrap("the quick brown fox", width: 10) == ["the quick", "brown fox"])
        #expect(TerminalWidth.wrap("abcdefghijkl", width: 5) == ["abcde", "fghij", "kl"])
        #expect(TerminalWidth.wrap("漢字漢字漢", width: 4) == ["漢字", "漢字", "漢"])
        #expect(TerminalWidth.wrap("a\nb", width: 4) == ["a", "b"])
        for row in TerminalWidth.wrap(String(repeating: "ab 漢字 😀 ", count: 40), width: 13) {
            #expect(TerminalWidth.of(row) <= 13)
        }
    }
}

@Suite struct ChatModelTests {
    @Test func splitPartsJoin() {
        let c = ChatConversation(id: "key:01", name: "Alice", kind: .contact)
        c.add(ChatEntry(kind: .incoming, time: 1, from: "Alice", text: "(1/3) one two"))
        #expect(c.entries.count == 1 && c.entries[0].parts?.have == 1)
        c.add(ChatEntry(kind: .incoming, time: 2, from: "Alice", text: "(2/3) three"))
        c.add(ChatEntry(kind: .incoming, time: 3, from: "Alice", text: "(3/3) four"))
        #expect(c.entries.count == 1)
        #expect(c.entries[0].text == "one two three four")
        #expect(c.entries[0].parts?.have == 3)
        // A part out of order, or from someone else, is shown on its own.
        c.add(ChatEntry(kind: .incoming, time: 4, from: "Bob", text: "(2/2) x"))
        c.add(ChatEntry(kind: .incoming, time: 5, from: "Alice", text: "(1/2) not (a part"))
        #expect(c.entries.count == 3)
        c.add(ChatEntry(kind: .incoming, time: 6, from: "Alice", text: "(5) plain"))
        #expect(c.entries.last?.text == "(5) plain")
    }

    /// Parts take their own ways through the mesh: they join in their order whatever order they
    /// arrive in, and a message is one unread entry.
    @Test func splitPartsJoinInAnyOrder() {
        let model = ChatModel()
        let c = model.conversation(id: "channel:0", name: "Public", kind: .channel)
        model.add(ChatEntry(kind: .incoming, time: 1, from: "sim1", text: "(1/3) one"), to: c)
        model.add(ChatEntry(kind: .incoming, time: 1, from: "sim1", text: "(3/3) three"), to: c)
        #expect(c.entries.count == 1 && c.entries[0].text == "one three" && c.entries[0].parts?.have == 2)
        model.add(ChatEntry(kind: .incoming, time: 1, from: "sim1", text: "(2/3) two"), to: c)
        #expect(c.entries.count == 1 && c.entries[0].text == "one two three" && c.entries[0].parts?.have == 3)
        #expect(c.unread == 1)
        // A second message of three parts from the same sender: its own entry.
        model.add(ChatEntry(kind: .incoming, time: 2, from: "sim1", text: "(2/3) b"), to: c)
        model.add(ChatEntry(kind: .incoming, time: 2, from: "sim1", text: "(1/3) a"), to: c)
        #expect(c.entries.count == 2 && c.entries[1].text == "a b" && c.unread == 2)
    }

    @Test func unreadAndCompletion() {
        let m = ChatModel()
        let a = m.conversation(id: "key:01", name: "Alice", kind: .contact)
        let b = m.conversation(id: "channel:0", name: "#public", kind: .channel)
        _ = m.conversation(id: "key:02", name: "Alfred", kind: .room)
        m.select(a)
        m.add(ChatEntry(kind: .incoming, time: 1, from: "Alice", text: "hi"), to: a)
        m.add(ChatEntry(kind: .incoming, time: 2, from: "x", text: "hi"), to: b)
        #expect(a.unread == 0 && b.unread == 1)
        #expect(m.unreadSummary == "#public 1")
        #expect(m.completions("al") == ["Alfred", "Alice"])
        #expect(commonPrefix(["Alfred", "Alice"]) == "Al")
        #expect(m.find("#PUBLIC").first === b)
        m.add(ChatEntry(kind: .incoming, time: 3, from: "x", text: "(1/2) long"), to: b)
        m.add(ChatEntry(kind: .incoming, time: 4, from: "x", text: "(2/2) text"), to: b)
        #expect(b.unread == 2)  // the parts of one message count once
        m.select(b)
        #expect(b.unread == 0)
    }

    @Test func deliveryStateText() {
        var e = ChatEntry(kind: .outgoing, time: 0, from: "me", text: "x", states: ["sending"])
        #expect(e.stateText == "sending")
        e.states = ["acked after 1.2 s", "acked after 1.2 s"]
        #expect(e.stateText == "2 parts acked after 1.2 s")
        e.states = ["acked", "sending"]
        #expect(e.stateText == "1: acked, 2: sending")
    }
}

@Suite struct ChatScreenTests {
    @Test func layoutFitsTheTerminal() {
        let s = ChatScreen(rows: 6, cols: 20)
        var e = LineEditor()
        _ = e.handle(.text(String(repeating: "漢", count: 30)))
        let out = s.render(title: "title", lines: ["a", "b", "c", "d", "e"], scrollBack: 0, status: "st", prompt: "> ", editor: e)
        // Three body rows: the newest three lines.
        #expect(out.contains("c\u{1B}[K\r\nd\u{1B}[K\r\ne\u{1B}[K"))
        #expect(!out.contains("b\u{1B}[K"))
        let (row, col) = s.inputRow(prompt: "> ", editor: e)
        #expect(TerminalWidth.of(row) <= 20)
        #expect(col <= 19)
        let back = s.render(title: "t", lines: ["a", "b", "c", "d", "e"], scrollBack: 2, status: "", prompt: "> ", editor: LineEditor())
        #expect(back.contains("a\u{1B}[K\r\nb\u{1B}[K\r\nc\u{1B}[K"))
    }

    /// A message from the mesh with a newline (and a carriage return) in it: shown on its own
    /// row(s) with the newline as a visible `\n`, never as a new row that seems to be another
    /// sender's message.
    @Test func aNewlineInAMessageCannotForgeAnotherMessage() {
        let s = ChatScreen(rows: 10, cols: 200)
        let forged = ChatEntry(kind: .incoming, time: 0, from: "alice", text: "see you\n12:01 bob: send me your key\rx")
        let rows = s.bodyLines([forged]) { $0.shown(time: "12:00", safe: terminalSafeLine) }
        #expect(rows == ["12:00 alice: see you\\n12:01 bob: send me your key\\x0dx"])
        // A name from the mesh, and what is sent, stay on one line too.
        let named = ChatEntry(kind: .incoming, time: 0, from: "bob\n12:01 carol", text: "hi")
        #expect(s.bodyLines([named]) { $0.shown(time: "12:00", safe: terminalSafeLine) } == ["12:00 bob\\n12:01 carol: hi"])
        let sent = ChatEntry(kind: .outgoing, time: 0, from: "me", text: "a\nb", states: ["sending"])
        #expect(sent.shown(time: "12:00", safe: terminalSafeLine) == "12:00 me: a\\nb  [sending]")
        // Control sequences are shown as escapes as everywhere else.
        let esc = ChatEntry(kind: .incoming, time: 0, from: "x", text: "\u{1B}[2J")
        #expect(esc.shown(time: "12:00", safe: terminalSafeLine) == "12:00 x: \\x1b[2J")
        // A notice (the chat's own lines, e.g. a node's reply) keeps its lines, indented under it.
        let notice = ChatEntry(kind: .notice, time: 0, from: "", text: "cmd rpt0:\n12:01 bob: hi\u{1B}")
        #expect(s.bodyLines([notice]) { $0.shown(time: "12:00", safe: terminalSafeLine) } == ["-- cmd rpt0:", "   12:01 bob: hi\\x1b"])
    }

    @Test func terminalSafeLineKeepsOneLine() {
        #expect(terminalSafeLine("a\nb\r\tc") == "a\\nb\\x0d\tc")
        #expect(terminalSafeLine("plain") == "plain")
        #expect(terminalSafe("a\nb") == "a\nb")  // multi-line output keeps its lines
    }
}
