// Little-endian reads over borrowed bytes. Offsets are validated by the caller (the decoders
// check lengths once, then read fields with these).

extension UnsafeRawBufferPointer {
    @inlinable func u8(_ o: Int) -> UInt8 { self[o] }
    @inlinable func i8(_ o: Int) -> Int8 { Int8(bitPattern: self[o]) }
    @inlinable func u16(_ o: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt16.self)) }
    @inlinable func i16(_ o: Int) -> Int16 { Int16(littleEndian: loadUnaligned(fromByteOffset: o, as: Int16.self)) }
    @inlinable func u32(_ o: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: o, as: UInt32.self)) }
    @inlinable func i32(_ o: Int) -> Int32 { Int32(littleEndian: loadUnaligned(fromByteOffset: o, as: Int32.self)) }
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

extension String {
    /// UTF-8 text of `bytes` (invalid sequences repaired); allocates only for long text.
    @inlinable init(utf8Bytes bytes: UnsafeRawBufferPointer) {
        self = String(decoding: bytes, as: UTF8.self)
    }
}

