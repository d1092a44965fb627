import BigInt
import Synchronization

/// Field and group arithmetic on edwards25519 with BigInt, for what swift-crypto does not expose:
/// the public key and signatures of an imported 64-byte expanded private key (no seed), and the
/// Ed25519 -> X25519 (Montgomery u) conversion of a peer's public key.
///
/// Not constant-time, and slow (plain double-and-add in extended coordinates). It is used only for
/// keys imported in the firmware's expanded form and for public-key conversion; keys generated from
/// a seed sign through swift-crypto.
enum Edwards25519 {
    /// 2^255 - 19
    static let p: BigUInt = (BigUInt(1) << 255) - 19
    /// Group order 2^252 + 27742317777372353535851937790883648493
    static let l: BigUInt = (BigUInt(1) << 252) + BigUInt("27742317777372353535851937790883648493", radix: 10)!
    /// d = -121665 / 121666 mod p
    static let d: BigUInt = mul(p - 121665, inverse(121666))
    static let d2: BigUInt = mul(d, 2)
    static let base = Point(
        x: BigUInt("15112221349535400772501151409588531511454012693041857206046113283949847762202", radix: 10)!,
        y: BigUInt("46316835694926478169428394003475163141307993866256225615783033603165251855960", radix: 10)!)

    struct Point {
        var x: BigUInt, y: BigUInt, z: BigUInt, t: BigUInt
        init(x: BigUInt, y: BigUInt) {
            self.x = x; self.y = y; z = 1; t = Edwards25519.mul(x, y)
        }
        init(x: BigUInt, y: BigUInt, z: BigUInt, t: BigUInt) {
            self.x = x; self.y = y; self.z = z; self.t = t
        }
        static let identity = Point(x: 0, y: 1, z: 1, t: 0)
    }

    static let mask255: BigUInt = (BigUInt(1) << 255) - 1

    /// x mod p using 2^255 = 19 (mod p).
    static func reduce(_ x: BigUInt) -> BigUInt {
        var x = x
        while x.bitWidth > 255 {
            x = (x & mask255) + (x >> 255) * 19
        }
        if x >= p { x -= p }
        return x
    }

    static func add(_ a: BigUInt, _ b: BigUInt) -> BigUInt { reduce(a + b) }
    static func sub(_ a: BigUInt, _ b: BigUInt) -> BigUInt { reduce(a + p - reduce(b)) }
    static func mul(_ a: BigUInt, _ b: BigUInt) -> BigUInt { reduce(a * b) }
    /// a^(p-2) mod p with the usual addition chain (254 squarings, 11 multiplications).
    static func inverse(_ a: BigUInt) -> BigUInt {
        func sq(_ x: BigUInt, _ n: Int) -> BigUInt {
            var x = x
            for _ in 0 ..< n { x = mul(x, x) }
            return x
        }
        let z = reduce(a)
        let z2 = mul(z, z)
        let z9 = mul(sq(z2, 2), z)
        let z11 = mul(z9, z2)
        let z5_0 = mul(mul(z11, z11), z9)
        let z10_0 = mul(sq(z5_0, 5), z5_0)
        let z20_0 = mul(sq(z10_0, 10), z10_0)
        let z40_0 = mul(sq(z20_0, 20), z20_0)
        let z50_0 = mul(sq(z40_0, 10), z10_0)
        let z100_0 = mul(sq(z50_0, 50), z50_0)
        let z200_0 = mul(sq(z100_0, 100), z100_0)
        let z250_0 = mul(sq(z200_0, 50), z50_0)
        return mul(sq(z250_0, 5), z11)
    }

    /// Complete addition for a = -1 twisted Edwards (RFC 8032 5.1.4).
    static func add(_ P: Point, _ Q: Point) -> Point {
        let a = mul(sub(P.y, P.x), sub(Q.y, Q.x))
        let b = mul(add(P.y, P.x), add(Q.y, Q.x))
        let c = mul(mul(P.t, d2), Q.t)
        let dd = mul(mul(P.z, 2), Q.z)
        let e = sub(b, a), f = sub(dd, c), g = add(dd, c), h = add(b, a)
        return Point(x: mul(e, f), y: mul(g, h), z: mul(f, g), t: mul(e, h))
    }

    /// 2^i * B for i in 0..<256, computed once.
    static let baseMultiples: [Point] = {
        var out: [Point] = []
        out.reserveCapacity(256)
        var q = base
        for _ in 0 ..< 256 {
            out.append(q)
            q = add(q, q)
        }
        return out
    }()

    /// scalar * B from the table of 2^i * B (additions only).
    static func multiplyBase(_ scalar: BigUInt) -> Point {
        var r = Point.identity
        for i in 0 ..< min(scalar.bitWidth, 256) where scalar[bitAt: i] {
            r = add(r, baseMultiples[i])
        }
        return r
    }

    /// scalar * P by double-and-add (most significant bit first).
    static func multiply(_ scalar: BigUInt, _ P: Point) -> Point {
        var r = Point.identity
        let bits = scalar.bitWidth
        var i = bits - 1
        while i >= 0 {
            r = add(r, r)
            if scalar[bitAt: i] { r = add(r, P) }
            i -= 1
        }
        return r
    }

    /// 32-byte encoding: y little-endian, top bit = x parity.
    static func encode(_ P: Point) -> [UInt8] {
        let zi = inverse(P.z)
        let x = mul(P.x, zi), y = mul(P.y, zi)
        var out = littleEndianBytes(y, count: 32)
        if x[bitAt: 0] { out[31] |= 0x80 }
        return out
    }

    /// Memo of `montgomeryU` per public key: the conversion costs milliseconds with BigInt, and a node
    /// needs it once per peer, while the same few keys recur across every contact table.
    private static let uMemo = Mutex<[[UInt8]: [UInt8]]>([:])
    private static let uMemoLimit = 4096

    /// `montgomeryU(fromEdwards:)`, remembered per key.
    static func cachedMontgomeryU(fromEdwards publicKey: [UInt8]) -> [UInt8] {
        if let u = uMemo.withLock({ $0[publicKey] }) { return u }
        let u = montgomeryU(fromEdwards: publicKey)
        uMemo.withLock { memo in
            if memo.count >= uMemoLimit { memo.removeAll(keepingCapacity: true) }
            memo[publicKey] = u
        }
        return u
    }

    /// Montgomery u = (1 + y) / (1 - y) mod p of an encoded Ed25519 public key (sign bit ignored),
    /// as the firmware's `ed25519_key_exchange` computes it. y = 1 gives u = 0 (like fe_invert(0)).
    static func montgomeryU(fromEdwards publicKey: [UInt8]) -> [UInt8] {
        var yBytes = publicKey
        yBytes[31] &= 0x7F
        let y = integer(littleEndian: yBytes) % p
        let u = mul(add(1, y), inverse(sub(1, y)))
        return littleEndianBytes(u, count: 32)
    }

    static func integer<C: Collection<UInt8>>(littleEndian bytes: C) -> BigUInt {
        var words: [UInt] = []
        var word: UInt = 0
        var shift: UInt = 0
        for b in bytes {
            word |= UInt(b) << shift
            shift += 8
            if shift == UInt(UInt.bitWidth) { words.append(word); word = 0; shift = 0 }
        }
        if shift > 0 { words.append(word) }
        return BigUInt(words: words)
    }

    static func littleEndianBytes(_ value: BigUInt, count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        for w in value.words {
            var w = w
            for _ in 0 ..< UInt.bitWidth / 8 {
                if i < count { out[i] = UInt8(truncatingIfNeeded: w) }
                w >>= 8
                i += 1
            }
        }
        return out
    }
}
