/// Draws a chat on a terminal with ANSI sequences only (no terminfo): a title row, the
/// conversation, a status row and the input row. Everything is drawn whole each time, so nothing
/// that arrives (a message, a delivery state changing in place, a resize) can leave a broken
/// line; text from the mesh must already be made safe (`terminalSafe`).
public struct ChatScreen {
    public var rows: Int
    public var cols: Int

    public init(rows: Int, cols: Int) {
        self.rows = max(4, rows)
        self.cols = max(10, cols)
    }

    /// How many rows the conversation gets.
    public var bodyRows: Int { rows - 3 }

    /// The conversation's rows, oldest first, wrapped to the width.
    public func bodyLines(_ entries: [ChatEntry], format: (ChatEntry) -> String) -> [String] {
        var out: [String] = []
        for e in entries { out += TerminalWidth.wrap(format(e), width: cols) }
        return out
    }

    /// The whole screen. `scrollBack` rows up from the newest; `prompt` before the input.
    public func render(title: String, lines: [String], scrollBack: Int, status: String,
                       prompt: String, editor: LineEditor) -> String {
        var s = "\u{1B}[?25l\u{1B}[H"
        s += "\u{1B}[7m" + pad(title) + "\u{1B}[0m\r\n"
        let n = bodyRows
        let end = max(0, lines.count - max(0, scrollBack))
        let start = max(0, end - n)
        let visible = Array(lines[start..<end])
        for i in 0..<n {
            // Short conversations sit at the bottom, above the input.
            let k = i - (n - visible.count)
            if k >= 0 { s += TerminalWidth.prefix(visible[k], columns: cols) }
            s += "\u{1B}[K\r\n"
        }
        s += "\u{1B}[2m" + TerminalWidth.prefix(status, columns: cols) + "\u{1B}[0m\u{1B}[K\r\n"
        let (line, column) = inputRow(prompt: prompt, editor: editor)
        s += line + "\u{1B}[K"
        s += "\u{1B}[\(rows);\(column + 1)H\u{1B}[?25h"
        return s
    }

    /// Only the input row (after a key that changed nothing else).
    public func renderInput(prompt: String, editor: LineEditor) -> String {
        let (line, column) = inputRow(prompt: prompt, editor: editor)
        return "\u{1B}[?25l\u{1B}[\(rows);1H" + line + "\u{1B}[K\u{1B}[\(rows);\(column + 1)H\u{1B}[?25h"
    }

    /// The input row and the cursor's column (0-based): the text scrolls sideways so that the
    /// cursor stays in view.
    public func inputRow(prompt: String, editor: LineEditor) -> (String, Int) {
        let p = TerminalWidth.prefix(prompt, columns: cols / 2)
        let room = max(1, cols - TerminalWidth.of(p) - 1)
        let chars = editor.chars
        var start = 0
        var before = TerminalWidth.of(String(chars[..<editor.cursor]))
        while before > room && start < editor.cursor {
            before -= TerminalWidth.of(chars[start])
            start += 1
        }
        let shown = TerminalWidth.prefix(String(chars[start...]), columns: room)
        return (p + shown, TerminalWidth.of(p) + before)
    }

    func pad(_ s: String) -> String {
        let t = TerminalWidth.prefix(s, columns: cols)
        return t + String(repeating: " ", count: max(0, cols - TerminalWidth.of(t)))
    }
}
