import CMeshCrypto

/// SHA-1 (mbedTLS) for the WebSocket handshakes of MeshNet's client and server, which have no crypto
/// of their own.
func webSocketSHA1(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 20)
    _ = meshcrypto_sha1(&out, bytes, bytes.count)
    return out
}
