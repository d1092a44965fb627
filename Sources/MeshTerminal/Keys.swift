/// A key (or typed text) read from a terminal in raw mode.
public enum Key: Equatable, Sendable {
    /// Printable text: one or more characters typed or pasted.
    case text(String)
    case enter, tab, backspace, delete
    case left, right, up, down, home, end, pageUp, pageDown
    case wordLeft, wordRight
    /// Ctrl and a letter (`ctrl("a")`), other than those with a name above.
    case ctrl(Character)
    /// A sequence this decoder does not know (ignored by the editor).
    case unknown
}

/// Turns the bytes a terminal sends into keys; sans-I/O (feed it what `read` returned).
/// UTF-8 split across reads and escape sequences split across reads are held until complete;
/// invalid UTF-8 becomes U+FFFD. A lone ESC at the end of a read is held until the next read
/// (`flush()` gives it up, e.g. after a short quiet time).
public struct KeyDecoder {
    var pending: [UInt8] = []

    public init() {}

    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var text: [UInt8] = []
        func flushText() {
            if !text.isEmpty { keys.append(.text(String(decoding: text, as: UTF8.self))); text.removeAll() }
        }
        var i = 0
        loop: while i < pending.count {
            let b = pending[i]
            switch b {
            case 0x1B:
                flushText()
                guard let (key, used) = Self.escape(pending[i...]) else { break loop }  // incomplete: wait
                keys.append(key)
                i += used
                continue
            case 0x0D, 0x0A: flushText(); keys.append(.enter)
            case 0x09: flushText(); keys.append(.tab)
            case 0x7F, 0x08: flushText(); keys.append(.backspace)
            case 0x00..<0x20:
                flushText()
                keys.append(.ctrl(Character(Unicode.Scalar(b + 0x60))))
            case 0x80...:
                // A multi-byte character: wait for all of it.
                let need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1
                if i + need > pending.count {
                    // Only wait when the bytes so far can still make a character.
                    if pending[(i + 1)...].allSatisfy({ $0 & 0xC0 == 0x80 }) { break loop }
                }
                let end = min(i + need, pending.count)
                var j = i + 1
                while j < end && pending[j] & 0xC0 == 0x80 { j += 1 }
                text.append(contentsOf: pending[i..<j])
                i = j
                continue
            default:
                text.append(b)
            }
            i += 1
        }
        flushText()
        pending.removeFirst(i)
        return keys
    }

    /// Gives up a held ESC (or an unfinished sequence) as an unknown key.
    public mutating func flush() -> [Key] {
        guard !pending.isEmpty else { return [] }
        pending.removeAll()
        return [.unknown]
    }

    public var isHolding: Bool { !pending.isEmpty }

    /// The key of the escape sequence at the start of `s` and its length; nil when incomplete.
    static func escape(_ s: ArraySlice<UInt8>) -> (Key, Int)? {
        let start = s.startIndex
        guard s.count >= 2 else { return nil }
        let second = s[start + 1]
        switch second {
        case UInt8(ascii: "["), UInt8(ascii: "O"):
            // CSI: parameters (0x30–0x3F), intermediates (0x20–0x2F), a final byte (0x40–0x7E).
            var j = start + 2
            while j < s.endIndex, (0x20...0x3F).contains(s[j]) { j += 1 }
            guard j < s.endIndex else { return s.count > 32 ? (.unknown, s.count) : nil }
            let params = String(decoding: s[(start + 2)..<j], as: UTF8.self)
            let final = s[j]
            let used = j - start + 1
            guard (0x40...0x7E).contains(final) else { return (.unknown, used) }
            let first = params.split(separator: ";").first.map(String.init) ?? ""
            let modified = params.split(separator: ";", omittingEmptySubsequences: false).dropFirst().contains { $0.first == "5" || $0.first == "3" }  // Ctrl or Alt with an arrow
            switch final {
            case UInt8(ascii: "A"): return (.up, used)
            case UInt8(ascii: "B"): return (.down, used)
            case UInt8(ascii: "C"): return (modified ? .wordRight : .right, used)
            case UInt8(ascii: "D"): return (modified ? .wordLeft : .left, used)
            case UInt8(ascii: "H"): return (.home, used)
            case UInt8(ascii: "F"): return (.end, used)
            case UInt8(ascii: "~"):
                switch first {
                case "1", "7": return (.home, used)
                case "4", "8": return (.end, used)
                case "3": return (.delete, used)
                case "5": return (.pageUp, used)
                case "6": return (.pageDown, used)
                default: return (.unknown, used)
                }
            default: return (.unknown, used)
            }
        case UInt8(ascii: "b"): return (.wordLeft, 2)
        case UInt8(ascii: "f"): return (.wordRight, 2)
        case 0x7F, 0x08: return (.ctrl("w"), 2)  // Alt-Backspace: delete the word before
        default: return (.unknown, 2)
        }
    }
}
