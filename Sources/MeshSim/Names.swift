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
