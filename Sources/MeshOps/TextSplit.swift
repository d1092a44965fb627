/// Splits a text longer than one message into numbered parts, "(1/3) …", each at most `limit`
/// UTF-8 bytes with its number, cut at spaces where it can and never inside a character.
/// A text that fits is one part, unnumbered.
public enum TextSplit {
    public static func split(_ text: String, limit: Int) -> [String] {
        guard text.utf8.count > limit else { return [text] }
        var count = 2
        while true {
            let parts = cut(text, count: count, limit: limit)
            // The room for the numbers depends only on how many digits the count has.
            if String(parts.count).count <= String(count).count {
                return parts.enumerated().map { "(\($0.offset + 1)/\(parts.count)) \($0.element)" }
            }
            count = parts.count
        }
    }

    /// The text in pieces that leave room for a "(i/count) " number.
    static func cut(_ text: String, count: Int, limit: Int) -> [String] {
        let room = max(1, limit - "(\(count)/\(count)) ".utf8.count)
        var parts: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            if rest.utf8.count <= room {
                parts.append(String(rest))
                break
            }
            // The longest run of whole characters that fits, then back to the last space in it.
            var end = rest.startIndex
            var bytes = 0
            var lastSpace: Substring.Index? = nil
            for i in rest.indices {
                let n = rest[i].utf8.count
                if bytes + n > room { break }
                bytes += n
                if rest[i] == " " { lastSpace = i }
                end = rest.index(after: i)
            }
            if end == rest.startIndex { end = rest.index(after: rest.startIndex) }  // one character wider than a part
            var cutAt = end
            if end < rest.endIndex, rest[end] != " ", let s = lastSpace, s > rest.startIndex { cutAt = s }
            parts.append(String(rest[..<cutAt]).trimmingSpaces)
            rest = rest[cutAt...].drop { $0 == " " }
        }
        return parts.filter { !$0.isEmpty }
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
