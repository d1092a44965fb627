// How a person names a contact: one rule for the command line, the daemon's API and history.

/// Finds the contact a query names, among `names` and their public `keys` (same order):
/// 1. the exact name (the first, if several share it);
/// 2. the name, ignoring case, when only one has it;
/// 3. a prefix of the public key in hex (at least 2 digits), when only one key has it;
/// 4. the start of a name, ignoring case, when only one name starts so.
/// Where a step finds several, the query is ambiguous: the caller asks for more.
public enum NameMatch: Equatable, Sendable {
    case one(Int)
    case ambiguous(count: Int)
    case none

    public static func find(_ query: String, names: [String], keys: [[UInt8]]) -> NameMatch {
        guard !query.isEmpty else { return .none }
        if let i = names.firstIndex(of: query) { return .one(i) }
        let lower = query.lowercased()
        if let m = unique(names.indices.filter { names[$0].lowercased() == lower }) { return m }
        if query.count >= 2, query.utf8.allSatisfy(isHexDigit) {
            let hex = Array(lower.utf8)
            if let m = unique(keys.indices.filter { keyHasHexPrefix(keys[$0], hex) }) { return m }
        }
        if let m = unique(names.indices.filter { names[$0].lowercased().hasPrefix(lower) }) { return m }
        return .none
    }

    /// nil when nothing matched (try the next rule).
    static func unique(_ hits: [Int]) -> NameMatch? {
        switch hits.count {
        case 0: return nil
        case 1: return .one(hits[0])
        default: return .ambiguous(count: hits.count)
        }
    }

    static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)
    }

    /// True when `key` in lowercase hex starts with the lowercase hex digits `hex`.
    static func keyHasHexPrefix(_ key: [UInt8], _ hex: [UInt8]) -> Bool {
        let digits = Array("0123456789abcdef".utf8)
        guard hex.count <= key.count * 2 else { return false }
        for (i, h) in hex.enumerated() {
            let b = key[i / 2]
            if digits[Int(i % 2 == 0 ? b >> 4 : b & 15)] != h { return false }
        }
        return true
    }
}
