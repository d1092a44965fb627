/// Terminal columns: how wide text is on a terminal, and text cut into rows of a width.
/// Wide characters (CJK, Hangul, fullwidth forms, emoji shown as emoji) take two columns,
/// combining marks and zero-width characters none; everything else one.
public enum TerminalWidth {
    /// Columns of one character (grapheme cluster).
    public static func of(_ c: Character) -> Int {
        guard let first = c.unicodeScalars.first else { return 0 }
        if c.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }  // emoji presentation selector
        return of(first)
    }

    /// Columns of a scalar on its own.
    public static func of(_ u: Unicode.Scalar) -> Int {
        let v = u.value
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return 0 }
        if v < 0x300 { return 1 }
        switch u.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if v == 0x200B || (0x1160...0x11FF).contains(v) { return 0 }
        if isWide(v) || u.properties.isEmojiPresentation { return 2 }
        return 1
    }

    static func isWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// Columns of a string.
    public static func of(_ s: some StringProtocol) -> Int {
        var n = 0
        for c in s { n += of(c) }
        return n
    }

    /// The longest prefix of `s` that fits `columns`.
    public static func prefix(_ s: some StringProtocol, columns: Int) -> String {
        var out = ""
        var used = 0
        for c in s {
            let w = of(c)
            if used + w > columns { break }
            used += w
            out.append(c)
        }
        return out
    }

    /// `s` cut into rows of at most `width` columns: at its newlines, and at the last space that
    /// fits (a word longer than a row is cut where the row ends). Tabs become spaces.
    public static func wrap(_ s: String, width: Int) -> [String] {
        let width = max(1, width)
        var rows: [String] = []
        for line in s.split(separator: "\n", omittingEmptySubsequences: false) {
            var row: [Character] = []
            var used = 0
            var lastSpace: Int? = nil  // index in row
            for var c in line {
                if c == "\t" { c = " " }
                let w = of(c)
                if used + w > width {
                    if c == " " { rows.append(String(row)); row = []; used = 0; lastSpace = nil; continue }
                    if let sp = lastSpace, sp > 0 {
                        rows.append(String(row[..<sp]))
                        row = Array(row[(sp + 1)...])
                        used = row.reduce(0) { $0 + of($1) }
                    } else {
                        rows.append(String(row))
                        row = []
                        used = 0
                    }
                    lastSpace = nil
                }
                if c == " " { lastSpace = row.count }
                row.append(c)
                used += w
            }
            rows.append(String(row))
        }
        return rows
    }
}
