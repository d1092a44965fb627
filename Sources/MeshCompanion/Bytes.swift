// The code base's one little-endian reader and writer: reads over borrowed bytes (offsets are
// validated by the caller: decoders check lengths once, then read fields with these), reads over
// any byte collection, and appends to byte arrays. MeshAir, MeshStore, MeshSession and the
// simulator use these; nothing else spells out a byte order.

extension UnsafeRawBufferPointer {
    @inlinable public func u8(_ o: Int) -> UInt8 { self[o] }
    @inlinable public func i8(_ o: Int) -> Int8 { Int8(bitPattern: self[o]) }
    @inlinable public func u16(_ o: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt16.self)) }
    @inlinable public func i16(_ o: Int) -> Int16 { Int16(littleEndian: loadUnaligned(fromByteOffset: o, as: Int16.self)) }
    @inlinable public func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt32.self)) }
    @inlinable public func i32(_ o: Int) -> Int32 { Int32(littleEndian: loadUnaligned(fromByteOffset: o, as: Int32.self)) }
    @inlinable public func u64(_ o: Int) -> UInt64 { UInt64(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt64.self)) }
    @inlinable func key(_ o: Int) -> PublicKey { PublicKey(unchecked: self, at: o) }
    @inlinable func prefix(_ o: Int, _ n: Int = 6) -> KeyPrefix { KeyPrefix(unchecked: self, at: o, count: n) }

    /// Bytes `o ..< o+n`.
    @inlinable func slice(_ o: Int, _ n: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[o ..< o + n])
    }
    /// Bytes from `o` to the end (empty if `o >= count`).
    @inlinable func tail(_ o: Int) -> UnsafeRawBufferPointer {
        o >= count ? UnsafeRawBufferPointer(start: nil, count: 0) : UnsafeRawBufferPointer(rebasing: self[o...])
    }
    /// Bytes of a fixed-width field up to its first NUL.
    @inlinable func cField(_ o: Int, _ n: Int) -> UnsafeRawBufferPointer {
        var end = o
        let limit = Swift.min(o + n, count)
        while end < limit && self[end] != 0 { end += 1 }
        return UnsafeRawBufferPointer(rebasing: self[o ..< end])
    }
}

extension Array where Element == UInt8 {
    @inlinable public mutating func putU8(_ v: UInt8) { append(v) }
    @inlinable public mutating func putU16(_ v: UInt16) { append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8)) }
    @inlinable public mutating func putU32(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 24))
    }
    @inlinable public mutating func putU64(_ v: UInt64) { putU32(UInt32(truncatingIfNeeded: v)); putU32(UInt32(truncatingIfNeeded: v >> 32)) }
    /// Overwrites 4 bytes at `o`.
    @inlinable public mutating func setU32(_ v: UInt32, at o: Int) {
        self[o] = UInt8(truncatingIfNeeded: v); self[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
        self[o + 2] = UInt8(truncatingIfNeeded: v >> 16); self[o + 3] = UInt8(truncatingIfNeeded: v >> 24)
    }
}

/// The 4 little-endian bytes of `v`.
@inlinable public func le32(_ v: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 24)]
}

/// The 2 little-endian bytes of `v`.
@inlinable public func le16(_ v: UInt16) -> [UInt8] {
    [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
}

/// A little-endian u32 at `offset` of any byte collection (an array, a slice).
@inlinable public func readLE32<C: Collection<UInt8>>(_ c: C, _ offset: Int) -> UInt32 {
    var i = c.index(c.startIndex, offsetBy: offset)
    var v: UInt32 = 0
    for k in 0 ..< 4 { v |= UInt32(c[i]) << (8 * UInt32(k)); i = c.index(after: i) }
    return v
}

/// A little-endian u16 at `offset` of any byte collection.
@inlinable public func readLE16<C: Collection<UInt8>>(_ c: C, _ offset: Int) -> UInt16 {
    let s = c.index(c.startIndex, offsetBy: offset)
    return UInt16(c[s]) | UInt16(c[c.index(after: s)]) << 8
}

extension String {
    /// UTF-8 text of `bytes` (invalid sequences repaired); allocates only for long text.
    @inlinable init(utf8Bytes bytes: UnsafeRawBufferPointer) {
        self = String(decoding: bytes, as: UTF8.self)
    }
}

