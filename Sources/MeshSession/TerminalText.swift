/// Text from the mesh (names, messages, replies) made harmless for a terminal, for every human
/// printer: control characters other than newline and tab, DEL, the C1 controls (U+0080–U+009F;
/// U+009B starts a control sequence on some terminals) and the bidirectional and line-separator
/// controls are shown as visible escapes (`\x1b`, `\x7f`, `\u009b`, `\u202e`), so a remote node
/// cannot retitle the window, clear the screen, rewrite a line or reorder what is shown.
/// JSON output escapes by its own rules and does not go through this.
public func terminalSafe(_ s: String) -> String {
    guard s.unicodeScalars.contains(where: needsEscape) else { return s }
    var out = String.UnicodeScalarView()
    for u in s.unicodeScalars {
        guard needsEscape(u) else { out.append(u); continue }
        let v = u.value
        let hex = Array("0123456789abcdef".unicodeScalars)
        let digits = v < 0x80 ? 2 : 4
        out.append("\\")
        out.append(v < 0x80 ? "x" : "u")
        for i in stride(from: digits - 1, through: 0, by: -1) { out.append(hex[Int(v >> (4 * UInt32(i)) & 15)]) }
    }
    return String(out)
}

func needsEscape(_ u: Unicode.Scalar) -> Bool {
    switch u.value {
    case 0x0A, 0x09: return false
    case 0x00..<0x20, 0x7F, 0x80..<0xA0: return true
    case 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
}

/// `terminalSafe` for text that must stay on one line (a message in the chat, a name): a newline
/// is shown as `\n` as well, so that text from the mesh cannot start a line that seems to come
/// from another sender. Tabs stay (they are shown as a space).
public func terminalSafeLine(_ s: String) -> String {
    let safe = terminalSafe(s)
    guard safe.unicodeScalars.contains("\n") else { return safe }
    var out = String.UnicodeScalarView()
    for u in safe.unicodeScalars {
        if u == "\n" { out.append("\\"); out.append("n") } else { out.append(u) }
    }
    return String(out)
}
