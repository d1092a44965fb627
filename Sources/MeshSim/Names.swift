import MeshAir
import MeshCompanion

// MeshAir and MeshCompanion both name some types after the protocol (public key, path length);
// inside the simulator these say which side a value belongs to.
public typealias AirKey = MeshAir.PublicKey
public typealias FrameKey = MeshCompanion.PublicKey
public typealias AirPathLength = MeshAir.PathLength
public typealias FramePathLength = MeshCompanion.PathLength

extension MeshAir.PublicKey {
    var frameKey: FrameKey { FrameKey(bytes)! }
}

extension MeshCompanion.PublicKey {
    var airKey: AirKey? { try? AirKey(bytes) }
}

/// Reads command fields in order; out-of-range reads return zeros and set `short`.
struct CommandReader {
    let bytes: [UInt8]
    var at: Int
    var short = false
    init(_ bytes: [UInt8], at: Int = 1) { self.bytes = bytes; self.at = at }
    var remaining: Int { max(0, bytes.count - at) }
    mutating func u8() -> UInt8 { guard at < bytes.count else { short = true; return 0 }; defer { at += 1 }; return bytes[at] }
    mutating func u32() -> UInt32 {
        guard at + 4 <= bytes.count else { short = true; at = bytes.count; return 0 }
        defer { at += 4 }
        return get32(bytes, at)
    }
    mutating func i32() -> Int32 { Int32(bitPattern: u32()) }
    mutating func take(_ n: Int) -> [UInt8] {
        guard n >= 0, at + n <= bytes.count else { short = true; let r = Array(bytes[min(at, bytes.count)...]); at = bytes.count; return r }
        defer { at += n }
        return Array(bytes[at ..< at + n])
    }
    mutating func rest() -> [UInt8] { take(remaining) }
    /// A C string field: bytes up to the first NUL.
    mutating func cString(_ n: Int) -> String {
        let b = take(n)
        return String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// The longest prefix of `bytes` of at most `max` bytes ending on a UTF-8 boundary.
func utf8Cut(_ bytes: [UInt8], max n: Int) -> [UInt8] {
    if bytes.count <= n { return bytes }
    var k = n
    while k > 0 && (bytes[k] & 0xC0) == 0x80 { k -= 1 }
    return Array(bytes[0 ..< k])
}

func truncatedName(_ s: String, max n: Int = 31) -> String {
    String(decoding: utf8Cut(Array(s.utf8), max: n), as: UTF8.self)
}
