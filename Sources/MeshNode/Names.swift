import MeshAir
import MeshCompanion


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
