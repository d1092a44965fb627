extension StringProtocol {
    /// Whether `text` occurs in this string, compared by its UTF-8 bytes (the needles used here are
    /// ASCII). The standard library's `contains(_:)` for a string comes from _StringProcessing, which
    /// the package does not import (`-disable-implicit-string-processing-module-import` in
    /// Package.swift): that module and its regular-expression parser were 1.1 MB of the binary.
    public func containsText(_ text: some StringProtocol) -> Bool {
        let hay = Array(utf8), needle = Array(text.utf8)
        if needle.isEmpty { return true }
        if needle.count > hay.count { return false }
        for start in 0...(hay.count - needle.count) where hay[start] == needle[0] {
            var i = 1
            while i < needle.count, hay[start + i] == needle[i] { i += 1 }
            if i == needle.count { return true }
        }
        return false
    }

    /// This string with every `old` character replaced by `new`.
    public func replacingCharacter(_ old: Character, with new: Character) -> String {
        String(map { $0 == old ? new : $0 })
    }
}
