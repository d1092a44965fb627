// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), slicing-by-8.
// A checksum against torn writes and bit rot, not a cryptographic hash.

enum CRC32 {
    /// 8 tables of 256 entries, table k at [k*256 ..< (k+1)*256].
    static let table: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
            t[i] = c
        }
        for i in 0..<256 {
            var c = t[i]
            for k in 1..<8 {
                c = (c >> 8) ^ t[Int(c & 0xFF)]
                t[k * 256 + i] = c
            }
        }
        return t
    }()

    /// CRC of `bytes`, continuing from `seed` (the CRC of the bytes before, or a salt).
    /// `checksum(b, seed: checksum(a)) == checksum(a + b)`.
    static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var c = ~seed
        guard var p = bytes.baseAddress else { return seed }
        var n = bytes.count
        table.withUnsafeBufferPointer { t in
            while n >= 8 {
                let lo = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ c
                let hi = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                // In three statements: Swift 6.0's type checker gives up on the one long expression.
                let a: UInt32 = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                let b: UInt32 = t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                c = a ^ b
                p += 8
                n -= 8
            }
            while n > 0 {
                c = (c >> 8) ^ t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)]
                p += 1
                n -= 1
            }
        }
        return ~c
    }

    static func checksum(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, seed: seed) }
    }
}
