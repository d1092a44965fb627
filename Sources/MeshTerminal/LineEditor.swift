/// The input line of an interactive program: editing keys, history, and what Enter, Tab and the
/// leaving keys ask of the program. Sans-I/O: feed it keys, draw `text` and `cursor`.
public struct LineEditor {
    public enum Action: Equatable, Sendable {
        case none
        /// Enter on a line that is not blank (the line is cleared and kept in the history).
        case submit(String)
        /// Tab: the program completes the word before the cursor (`completionWord`, `complete`).
        case complete
        /// Ctrl-D on an empty line, or Ctrl-C.
        case quit
        /// Ctrl-L.
        case redraw
        case pageUp, pageDown
    }

    public private(set) var chars: [Character] = []
    /// Characters before the cursor.
    public private(set) var cursor = 0
    public private(set) var history: [String] = []
    var historyIndex: Int? = nil
    var draft: [Character] = []
    public var historyLimit = 500

    public init() {}

    public var text: String { String(chars) }

    public mutating func set(_ s: String) {
        chars = Array(s)
        cursor = chars.count
    }

    public mutating func handle(_ key: Key) -> Action {
        switch key {
        case .text(let s):
            insert(s)
        case .enter:
            let line = text
            chars = []
            cursor = 0
            historyIndex = nil
            guard line.contains(where: { !$0.isWhitespace }) else { return .none }
            if history.last != line { history.append(line) }
            if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
            return .submit(line)
        case .tab: return .complete
        case .backspace:
            if cursor > 0 { chars.remove(at: cursor - 1); cursor -= 1 }
        case .delete:
            if cursor < chars.count { chars.remove(at: cursor) }
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(chars.count, cursor + 1)
        case .home: cursor = 0
        case .end: cursor = chars.count
        case .wordLeft: cursor = wordStart(before: cursor)
        case .wordRight:
            var i = cursor
            while i < chars.count && chars[i] == " " { i += 1 }
            while i < chars.count && chars[i] != " " { i += 1 }
            cursor = i
        case .up: recall(-1)
        case .down: recall(1)
        case .pageUp: return .pageUp
        case .pageDown: return .pageDown
        case .ctrl(let c):
            switch c {
            case "a": cursor = 0
            case "e": cursor = chars.count
            case "b": cursor = max(0, cursor - 1)
            case "f": cursor = min(chars.count, cursor + 1)
            case "u": chars.removeFirst(cursor); cursor = 0
            case "k": chars.removeLast(chars.count - cursor)
            case "w":
                let start = wordStart(before: cursor)
                chars.removeSubrange(start..<cursor)
                cursor = start
            case "p": recall(-1)
            case "n": recall(1)
            case "l": return .redraw
            case "c": return .quit
            case "d":
                if chars.isEmpty { return .quit }
                if cursor < chars.count { chars.remove(at: cursor) }
            default: break
            }
        case .unknown: break
        }
        return .none
    }

    mutating func insert(_ s: String) {
        // Rebuilt through String so that a combining mark joins the character before it.
        let left = String(chars[..<cursor]) + s
        let right = chars[cursor...]
        let l = Array(left)
        chars = l + right
        cursor = l.count
    }

    func wordStart(before i: Int) -> Int {
        var j = i
        while j > 0 && chars[j - 1] == " " { j -= 1 }
        while j > 0 && chars[j - 1] != " " { j -= 1 }
        return j
    }

    mutating func recall(_ step: Int) {
        guard !history.isEmpty else { return }
        var i = historyIndex ?? history.count
        if historyIndex == nil { draft = chars }
        i += step
        if i < 0 { i = 0 }
        if i >= history.count {
            historyIndex = nil
            chars = draft
        } else {
            historyIndex = i
            chars = Array(history[i])
        }
        cursor = chars.count
    }

    /// The word before the cursor (what Tab completes) and where it starts.
    public var completionWord: (word: String, start: Int) {
        var j = cursor
        while j > 0 && chars[j - 1] != " " { j -= 1 }
        // "/to Bob Sm" completes the whole name after a command, spaces included.
        let t = String(chars[..<cursor])
        for command in ["/to ", "/login ", "/status ", "/cmd ", "/logout "] where t.hasPrefix(command) {
            let start = command.count
            if command == "/cmd " { break }
            return (String(chars[start..<cursor]), start)
        }
        return (String(chars[j..<cursor]), j)
    }

    /// Replaces the completion word with `s`.
    public mutating func complete(with s: String) {
        let start = completionWord.start
        chars.replaceSubrange(start..<cursor, with: Array(s))
        cursor = start + Array(s).count
    }
}
