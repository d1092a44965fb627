import MeshCompanion
// Little-endian integer access over raw bytes, and small byte helpers.

extension UnsafeRawBufferPointer {
    @inline(__always) func u8(_ o: Int) -> UInt8 { self[o] }
    @inline(__always) func u16(_ o: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt16.self)) }
    @inline(__always) func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt32.self)) }
    @inline(__always) func u64(_ o: Int) -> UInt64 { UInt64(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt64.self)) }
    func bytes(_ o: Int, _ n: Int) -> [UInt8] { Array(self[o ..< o + n]) }
}

extension Array where Element == UInt8 {
    @inline(__always) mutating func putU8(_ v: UInt8) { append(v) }
    @inline(__always) mutating func putU16(_ v: UInt16) { append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8)) }
    @inline(__always) mutating func putU32(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 24))
    }
    @inline(__always) mutating func putU64(_ v: UInt64) { putU32(UInt32(truncatingIfNeeded: v)); putU32(UInt32(truncatingIfNeeded: v >> 32)) }
    /// Appends exactly `n` bytes: `bytes` truncated or zero-padded.
    mutating func putFixed(_ bytes: [UInt8], _ n: Int) {
        let k = Swift.min(bytes.count, n)
        append(contentsOf: bytes[0 ..< k])
        if k < n { append(contentsOf: repeatElement(0, count: n - k)) }
    }
    mutating func setU32(_ v: UInt32, at o: Int) {
        self[o] = UInt8(truncatingIfNeeded: v); self[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
        self[o + 2] = UInt8(truncatingIfNeeded: v >> 16); self[o + 3] = UInt8(truncatingIfNeeded: v >> 24)
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
