import Synchronization

/// Field and group arithmetic on edwards25519 for what swift-crypto does not expose: the public key
/// and signatures of an imported 64-byte expanded private key (no seed), and the Ed25519 -> X25519
/// (Montgomery u) conversion of a peer's public key.
///
/// Fixed-width and allocation-free, standard library only: field elements mod p = 2^255 - 19 in five
/// 51-bit limbs, scalars mod L as four 64-bit words reduced bit by bit, points in extended
/// coordinates.
///
/// Not constant-time: scalar multiplication and scalar reduction branch on the scalar's bits. It is
/// used only for keys imported in the firmware's expanded form and for public-key conversion (which
/// handles public data only); keys generated from a seed sign through swift-crypto.
enum Edwards25519 {
    /// d = -121665 / 121666 mod p
    static let d: FieldElement = FieldElement(0) - FieldElement(121_665) * FieldElement(121_666).inverted()
    static let d2: FieldElement = d + d
    /// The base point B: y = 4/5, x positive.
    static let base = Point(
        x: FieldElement(hex: "1ad5258f602d56c9b2a7259560c72c695cdcd6fd31e2a4c0fe536ecdd3366921"),
        y: FieldElement(hex: "5866666666666666666666666666666666666666666666666666666666666666"))

    /// A point in extended coordinates: x = X/Z, y = Y/Z, x*y = T/Z.
    struct Point {
        var x: FieldElement, y: FieldElement, z: FieldElement, t: FieldElement
        init(x: FieldElement, y: FieldElement) {
            self.x = x; self.y = y; z = .one; t = x * y
        }
        init(x: FieldElement, y: FieldElement, z: FieldElement, t: FieldElement) {
            self.x = x; self.y = y; self.z = z; self.t = t
        }
        static let identity = Point(x: .zero, y: .one, z: .one, t: .zero)
    }

    /// Complete addition for a = -1 twisted Edwards (RFC 8032 5.1.4).
    static func add(_ P: Point, _ Q: Point) -> Point {
        let a = (P.y - P.x) * (Q.y - Q.x)
        let b = (P.y + P.x) * (Q.y + Q.x)
        let c = P.t * d2 * Q.t
        let zz = P.z * Q.z
        let dd = zz + zz
        let e = b - a, f = dd - c, g = dd + c, h = b + a
        return Point(x: e * f, y: g * h, z: f * g, t: e * h)
    }

    /// 2 * P (RFC 8032 5.1.4 doubling).
    static func double(_ P: Point) -> Point {
        let a = P.x.squared()
        let b = P.y.squared()
        let zz = P.z.squared()
        let c = zz + zz
        let h = a + b
        let e = h - (P.x + P.y).squared()
        let g = a - b
        let f = c + g
        return Point(x: e * f, y: g * h, z: f * g, t: e * h)
    }

    /// 2^i * B for i in 0..<256, computed once (40 KB).
    static let baseMultiples: [Point] = {
        var out: [Point] = []
        out.reserveCapacity(256)
        var q = base
        for _ in 0 ..< 256 {
            out.append(q)
            q = double(q)
        }
        return out
    }()

    /// scalar * B from the table of 2^i * B (additions only). Any 256-bit scalar (not reduced mod L).
    static func multiplyBase(_ scalar: UInt256) -> Point {
        var r = Point.identity
        for i in 0 ..< 256 where scalar.bit(i) {
            r = add(r, baseMultiples[i])
        }
        return r
    }

    /// scalar * P by double-and-add (most significant bit first).
    static func multiply(_ scalar: UInt256, _ P: Point) -> Point {
        var r = Point.identity
        var i = 255
        while i >= 0 {
            r = double(r)
            if scalar.bit(i) { r = add(r, P) }
            i -= 1
        }
        return r
    }

    /// 32-byte encoding: y little-endian, top bit = x parity.
    static func encode(_ P: Point) -> [UInt8] {
        let zi = P.z.inverted()
        let x = P.x * zi, y = P.y * zi
        var out = y.bytes
        if x.isNegative { out[31] |= 0x80 }
        return out
    }

    /// Memo of `montgomeryU` per public key: a node needs the conversion once per peer, and the same
    /// few keys recur across every contact table. One conversion is one field inversion (about 10 us).
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

    /// Montgomery u = (1 + y) / (1 - y) mod p of an encoded Ed25519 public key (sign bit ignored,
    /// y >= p accepted and reduced), as the firmware's `ed25519_key_exchange` computes it.
    /// y = 1 gives u = 0 (like fe_invert(0)).
    static func montgomeryU(fromEdwards publicKey: [UInt8]) -> [UInt8] {
        let y = FieldElement(littleEndian: publicKey)
        return ((.one + y) * (.one - y).inverted()).bytes
    }
}

// MARK: - Field elements mod p = 2^255 - 19

/// An element of GF(2^255 - 19) as five 51-bit limbs (value = sum l_i * 2^(51 i)). Limbs may exceed
/// 51 bits slightly between operations; every operation returns limbs below 2^52, and `bytes` reduces
/// fully. Branch-free.
struct FieldElement: Equatable, CustomStringConvertible {
    var l0: UInt64, l1: UInt64, l2: UInt64, l3: UInt64, l4: UInt64

    static let mask: UInt64 = (1 << 51) - 1
    static let zero = FieldElement(0)
    static let one = FieldElement(1)

    init(limbs l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64, _ l4: UInt64) {
        self.l0 = l0; self.l1 = l1; self.l2 = l2; self.l3 = l3; self.l4 = l4
    }

    init(_ value: UInt64) {
        self.init(limbs: value & Self.mask, value >> 51, 0, 0, 0)
    }

    /// From up to 32 little-endian bytes (missing bytes are zero). Bit 255 is ignored; values in
    /// p ..< 2^255 (non-canonical) are accepted and act as value - p.
    init<C: Collection<UInt8>>(littleEndian bytes: C) {
        let w = UInt256(littleEndian: bytes)
        self.init(limbs: w.w0 & Self.mask,
                  (w.w0 >> 51 | w.w1 << 13) & Self.mask,
                  (w.w1 >> 38 | w.w2 << 26) & Self.mask,
                  (w.w2 >> 25 | w.w3 << 39) & Self.mask,
                  (w.w3 >> 12) & Self.mask)
    }

    /// From 64 hex digits (32 bytes little-endian); for constants.
    init(hex: String) {
        self.init(littleEndian: AirHex.decode(hex) ?? [])
    }

    /// One carry pass: limbs 1...4 end below 2^51, limb 0 below 2^51 + 19 * (old l4 >> 51).
    @inline(__always)
    mutating func carry() {
        var c = l0 >> 51; l0 &= Self.mask; l1 &+= c
        c = l1 >> 51; l1 &= Self.mask; l2 &+= c
        c = l2 >> 51; l2 &= Self.mask; l3 &+= c
        c = l3 >> 51; l3 &= Self.mask; l4 &+= c
        c = l4 >> 51; l4 &= Self.mask; l0 &+= c &* 19
    }

    static func + (a: FieldElement, b: FieldElement) -> FieldElement {
        var r = FieldElement(limbs: a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3, a.l4 &+ b.l4)
        r.carry()
        return r
    }

    /// a + 4p - b, so no limb underflows while b's limbs stay below 2^53.
    static func - (a: FieldElement, b: FieldElement) -> FieldElement {
        let p4l0: UInt64 = 0x1F_FFFF_FFFF_FFB4, p4: UInt64 = 0x1F_FFFF_FFFF_FFFC
        var r = FieldElement(limbs: a.l0 &+ p4l0 &- b.l0, a.l1 &+ p4 &- b.l1, a.l2 &+ p4 &- b.l2,
                             a.l3 &+ p4 &- b.l3, a.l4 &+ p4 &- b.l4)
        r.carry()
        return r
    }

    /// Schoolbook product with 2^255 = 19 folded in; 128-bit accumulators (inputs below 2^54 keep
    /// every sum below 2^115).
    static func * (a: FieldElement, b: FieldElement) -> FieldElement {
        let a0 = UInt128(a.l0), a1 = UInt128(a.l1), a2 = UInt128(a.l2), a3 = UInt128(a.l3), a4 = UInt128(a.l4)
        let b0 = UInt128(b.l0), b1 = UInt128(b.l1), b2 = UInt128(b.l2), b3 = UInt128(b.l3), b4 = UInt128(b.l4)
        let b1x = UInt128(b.l1 &* 19), b2x = UInt128(b.l2 &* 19), b3x = UInt128(b.l3 &* 19), b4x = UInt128(b.l4 &* 19)
        let r0 = a0 &* b0 &+ a1 &* b4x &+ a2 &* b3x &+ a3 &* b2x &+ a4 &* b1x
        var r1 = a0 &* b1 &+ a1 &* b0 &+ a2 &* b4x &+ a3 &* b3x &+ a4 &* b2x
        var r2 = a0 &* b2 &+ a1 &* b1 &+ a2 &* b0 &+ a3 &* b4x &+ a4 &* b3x
        var r3 = a0 &* b3 &+ a1 &* b2 &+ a2 &* b1 &+ a3 &* b0 &+ a4 &* b4x
        var r4 = a0 &* b4 &+ a1 &* b3 &+ a2 &* b2 &+ a3 &* b1 &+ a4 &* b0
        let mask = UInt128(Self.mask)
        r1 &+= r0 >> 51
        r2 &+= r1 >> 51
        r3 &+= r2 >> 51
        r4 &+= r3 >> 51
        var l0 = UInt64(truncatingIfNeeded: r0 & mask) &+ UInt64(truncatingIfNeeded: r4 >> 51) &* 19
        let l1 = UInt64(truncatingIfNeeded: r1 & mask) &+ (l0 >> 51)
        l0 &= Self.mask
        return FieldElement(limbs: l0, l1, UInt64(truncatingIfNeeded: r2 & mask),
                            UInt64(truncatingIfNeeded: r3 & mask), UInt64(truncatingIfNeeded: r4 & mask))
    }

    static prefix func - (a: FieldElement) -> FieldElement { zero - a }

    func squared() -> FieldElement { self * self }

    /// self^(2^n)
    func squared(times n: Int) -> FieldElement {
        var x = self
        for _ in 0 ..< n { x = x * x }
        return x
    }

    /// self^(p-2) = 1/self (0 for 0), with the usual addition chain (254 squarings, 11 multiplications).
    func inverted() -> FieldElement {
        let z = self
        let z2 = z.squared()
        let z9 = z2.squared(times: 2) * z
        let z11 = z9 * z2
        let z5_0 = z11.squared() * z9
        let z10_0 = z5_0.squared(times: 5) * z5_0
        let z20_0 = z10_0.squared(times: 10) * z10_0
        let z40_0 = z20_0.squared(times: 20) * z20_0
        let z50_0 = z40_0.squared(times: 10) * z10_0
        let z100_0 = z50_0.squared(times: 50) * z50_0
        let z200_0 = z100_0.squared(times: 100) * z100_0
        let z250_0 = z200_0.squared(times: 50) * z50_0
        return z250_0.squared(times: 5) * z11
    }

    /// The unique representative in 0 ..< p as four 64-bit words.
    var canonical: UInt256 {
        var h = self
        h.carry()
        h.carry()
        // Now value < 2^255 + 19 < 2p. q = 1 exactly when value >= p, i.e. value + 19 >= 2^255.
        var q = (h.l0 &+ 19) >> 51
        q = (h.l1 &+ q) >> 51
        q = (h.l2 &+ q) >> 51
        q = (h.l3 &+ q) >> 51
        q = (h.l4 &+ q) >> 51
        // value - q * p = value + 19 q - q * 2^255: add 19 q, carry, drop bit 255.
        h.l0 &+= 19 &* q
        var c = h.l0 >> 51; h.l0 &= Self.mask; h.l1 &+= c
        c = h.l1 >> 51; h.l1 &= Self.mask; h.l2 &+= c
        c = h.l2 >> 51; h.l2 &= Self.mask; h.l3 &+= c
        c = h.l3 >> 51; h.l3 &= Self.mask; h.l4 &+= c
        h.l4 &= Self.mask
        return UInt256(h.l0 | h.l1 << 51,
                       h.l1 >> 13 | h.l2 << 38,
                       h.l2 >> 26 | h.l3 << 25,
                       h.l3 >> 39 | h.l4 << 12)
    }

    /// Canonical 32-byte little-endian encoding.
    var bytes: [UInt8] { canonical.bytes }

    /// Odd canonical value (the "sign" of x in point encodings).
    var isNegative: Bool { canonical.w0 & 1 == 1 }

    var isZero: Bool { canonical == .zero }

    static func == (a: FieldElement, b: FieldElement) -> Bool { a.canonical == b.canonical }

    var description: String { AirHex.encode(bytes) }
}

// MARK: - 256-bit integers and scalars mod L

/// A 256-bit unsigned integer as four little-endian 64-bit words.
struct UInt256: Equatable, Comparable, CustomStringConvertible {
    var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    static let zero = UInt256(0, 0, 0, 0)

    init(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ w3: UInt64) {
        self.w0 = w0; self.w1 = w1; self.w2 = w2; self.w3 = w3
    }

    /// From up to 32 little-endian bytes (missing bytes are zero, extra bytes ignored).
    init<C: Collection<UInt8>>(littleEndian bytes: C) {
        self = .zero
        var i = 0
        for b in bytes {
            guard i < 32 else { break }
            let v = UInt64(b) << UInt64((i & 7) * 8)
            switch i >> 3 {
            case 0: w0 |= v
            case 1: w1 |= v
            case 2: w2 |= v
            default: w3 |= v
            }
            i += 1
        }
    }

    func word(_ i: Int) -> UInt64 {
        switch i {
        case 0: w0
        case 1: w1
        case 2: w2
        default: w3
        }
    }

    /// Bit i (0 = least significant) for i in 0..<256.
    func bit(_ i: Int) -> Bool { (word(i >> 6) >> UInt64(i & 63)) & 1 == 1 }

    /// 32 bytes little-endian.
    var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0 ..< 32 { out[i] = UInt8(truncatingIfNeeded: word(i >> 3) >> UInt64((i & 7) * 8)) }
        return out
    }

    static func < (a: UInt256, b: UInt256) -> Bool {
        if a.w3 != b.w3 { return a.w3 < b.w3 }
        if a.w2 != b.w2 { return a.w2 < b.w2 }
        if a.w1 != b.w1 { return a.w1 < b.w1 }
        return a.w0 < b.w0
    }

    /// a + b mod 2^256.
    static func &+ (a: UInt256, b: UInt256) -> UInt256 {
        let (s0, c0) = a.w0.addingReportingOverflow(b.w0)
        let (t1, c1a) = a.w1.addingReportingOverflow(b.w1)
        let (s1, c1b) = t1.addingReportingOverflow(c0 ? 1 : 0)
        let (t2, c2a) = a.w2.addingReportingOverflow(b.w2)
        let (s2, c2b) = t2.addingReportingOverflow(c1a || c1b ? 1 : 0)
        let s3 = a.w3 &+ b.w3 &+ (c2a || c2b ? 1 : 0)
        return UInt256(s0, s1, s2, s3)
    }

    /// a - b mod 2^256.
    static func &- (a: UInt256, b: UInt256) -> UInt256 {
        let (s0, b0) = a.w0.subtractingReportingOverflow(b.w0)
        let (t1, b1a) = a.w1.subtractingReportingOverflow(b.w1)
        let (s1, b1b) = t1.subtractingReportingOverflow(b0 ? 1 : 0)
        let (t2, b2a) = a.w2.subtractingReportingOverflow(b.w2)
        let (s2, b2b) = t2.subtractingReportingOverflow(b1a || b1b ? 1 : 0)
        let s3 = a.w3 &- b.w3 &- (b2a || b2b ? 1 : 0)
        return UInt256(s0, s1, s2, s3)
    }

    /// self * 2 + (bit ? 1 : 0), mod 2^256.
    func shiftedLeft(in bit: Bool) -> UInt256 {
        UInt256(w0 << 1 | (bit ? 1 : 0), w1 << 1 | w0 >> 63, w2 << 1 | w1 >> 63, w3 << 1 | w2 >> 63)
    }

    var description: String { AirHex.encode(bytes) }
}

/// An integer mod L = 2^252 + 27742317777372353535851937790883648493 (the order of B), always
/// reduced. Reduction and multiplication are bit-serial (shift, add, conditional subtract): simple,
/// a few microseconds, and not constant-time.
struct Scalar: Equatable, CustomStringConvertible {
    /// L
    static let order = UInt256(0x5812_631A_5CF5_D3ED, 0x14DE_F9DE_A2F7_9CD6, 0, 0x1000_0000_0000_0000)

    /// The reduced value, below L.
    let value: UInt256

    static let zero = Scalar(unchecked: .zero)

    private init(unchecked value: UInt256) { self.value = value }

    /// Any number of little-endian bytes (32 for a key scalar, 64 for a SHA-512 digest) mod L.
    init<C: BidirectionalCollection<UInt8>>(reducing littleEndian: C) {
        var r = UInt256.zero
        for byte in littleEndian.reversed() {
            var i = 7
            while i >= 0 {
                // r < L < 2^253, so 2r + 1 fits and one subtraction reduces it.
                r = r.shiftedLeft(in: (byte >> UInt8(i)) & 1 == 1)
                if r >= Self.order { r = r &- Self.order }
                i -= 1
            }
        }
        value = r
    }

    init(reducing value: UInt256) {
        var r = UInt256.zero
        var i = 255
        while i >= 0 {
            r = r.shiftedLeft(in: value.bit(i))
            if r >= Self.order { r = r &- Self.order }
            i -= 1
        }
        self.value = r
    }

    static func + (a: Scalar, b: Scalar) -> Scalar {
        let s = a.value &+ b.value // < 2L < 2^254
        return Scalar(unchecked: s >= order ? s &- order : s)
    }

    /// a * b mod L by double-and-add over b's bits.
    static func * (a: Scalar, b: Scalar) -> Scalar {
        var acc = Scalar.zero
        var i = 252
        while i >= 0 {
            acc = acc + acc
            if b.value.bit(i) { acc = acc + a }
            i -= 1
        }
        return acc
    }

    /// 32 bytes little-endian.
    var bytes: [UInt8] { value.bytes }

    var description: String { value.description }
}
