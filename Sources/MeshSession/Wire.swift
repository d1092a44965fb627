// Little helpers the session routes with. Frame layouts and the byte order live in MeshCompanion;
// the session only peeks at codes, tags and prefixes.

/// True when `b[offset..<offset+n]` equals the first `n` bytes of `key`.
@inline(__always)
func prefixMatches(_ b: UnsafeRawBufferPointer, at offset: Int, _ key: [UInt8], count n: Int) -> Bool {
    guard b.count >= offset + n, key.count >= n else { return false }
    for i in 0..<n where b[offset + i] != key[i] { return false }
    return true
}

/// A set of frame codes (256 bits), used to say which responses complete a command.
public struct CodeSet: Sendable, Equatable {
    var bits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    public init(_ codes: UInt8...) { for c in codes { insert(c) } }
    public init(array codes: [UInt8]) { for c in codes { insert(c) } }

    public mutating func insert(_ c: UInt8) {
        let bit = UInt64(1) << UInt64(c & 63)
        switch c >> 6 {
        case 0: bits.0 |= bit
        case 1: bits.1 |= bit
        case 2: bits.2 |= bit
        default: bits.3 |= bit
        }
    }

    public func contains(_ c: UInt8) -> Bool {
        let bit = UInt64(1) << UInt64(c & 63)
        switch c >> 6 {
        case 0: return bits.0 & bit != 0
        case 1: return bits.1 & bit != 0
        case 2: return bits.2 & bit != 0
        default: return bits.3 & bit != 0
        }
    }

    public static func == (a: CodeSet, b: CodeSet) -> Bool {
        a.bits.0 == b.bits.0 && a.bits.1 == b.bits.1 && a.bits.2 == b.bits.2 && a.bits.3 == b.bits.3
    }
}
