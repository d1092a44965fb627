import MeshCompanion
// Small byte helpers of the store (the little-endian reader and writer are MeshCompanion's).

extension UnsafeRawBufferPointer {
    func bytes(_ o: Int, _ n: Int) -> [UInt8] { Array(self[o ..< o + n]) }
}

extension Array where Element == UInt8 {
    /// Appends exactly `n` bytes: `bytes` truncated or zero-padded.
    mutating func putFixed(_ bytes: [UInt8], _ n: Int) {
        let k = Swift.min(bytes.count, n)
        append(contentsOf: bytes[0 ..< k])
        if k < n { append(contentsOf: repeatElement(0, count: n - k)) }
    }
}

/// Lowercase hex of bytes (MeshCompanion's codec, the project's one).
func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 { HexCodec.encode(Array(bytes)) }

/// Bytes of hex digits (MeshCompanion's codec); nil on anything else or an odd count.
func bytesFromHex(_ s: String) -> [UInt8]? { HexCodec.decode(s) }

/// Bytes up to the first NUL.
func untilNul(_ bytes: [UInt8]) -> [UInt8] {
    if let i = bytes.firstIndex(of: 0) { return Array(bytes[..<i]) }
    return bytes
}
