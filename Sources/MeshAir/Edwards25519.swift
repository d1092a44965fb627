import BigInt

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

    static func add(_ a: BigUInt, _ b: BigUInt) -> BigUInt { (a + b) % p }
    static func sub(_ a: BigUInt, _ b: BigUInt) -> BigUInt { (a + p - b % p) % p }
    static func mul(_ a: BigUInt, _ b: BigUInt) -> BigUInt { (a * b) % p }
    static func inverse(_ a: BigUInt) -> BigUInt { (a % p).power(p - 2, modulus: p) }

    /// Complete addition for a = -1 twisted Edwards (RFC 8032 5.1.4).
    static func add(_ P: Point, _ Q: Point) -> Point {
        let a = mul(sub(P.y, P.x), sub(Q.y, Q.x))
        let b = mul(add(P.y, P.x), add(Q.y, Q.x))
        let c = mul(mul(P.t, d2), Q.t)
        let dd = mul(mul(P.z, 2), Q.z)
        let e = sub(b, a), f = sub(dd, c), g = add(dd, c), h = add(b, a)
        return Point(x: mul(e, f), y: mul(g, h), z: mul(f, g), t: mul(e, h))
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
