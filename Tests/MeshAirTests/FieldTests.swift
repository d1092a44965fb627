import Testing
import Crypto
@testable import MeshAir

// Expected values below were computed independently with arbitrary-precision integers
// (p = 2^255 - 19, L = 2^252 + 27742317777372353535851937790883648493); all hex is little-endian.

private func fe(_ s: String) -> FieldElement { FieldElement(littleEndian: hex(s)) }
private func u256(_ s: String) -> UInt256 { UInt256(littleEndian: hex(s)) }
private func sc(_ s: String) -> Scalar { Scalar(reducing: hex(s)) }

/// p - 1
private let pMinus1 = "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"
private let zero32 = String(repeating: "00", count: 32)
private let one32 = "01" + String(repeating: "00", count: 31)

@Suite struct FieldElementTests {
    @Test func inverses() {
        let vectors: [(String, String)] = [
            ("0200000000000000000000000000000000000000000000000000000000000000", "f7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f"),
            ("1300000000000000000000000000000000000000000000000000000000000000", "14ca6b28afa1bc86f21aca6b28afa1bc86f21aca6b28afa1bc86f21aca6b282f"),
            ("42db010000000000000000000000000000000000000000000000000000000000", "a4785913ca4deb75abd841414d0a700098e879777940c78c73fe6f2bee6c0352"),
            ("ffffffffffffffff000000000000000000000000000000000000000000000000", "e10653e4b36e3045eb0653e4b36e3045eb0653e4b36e3045eb0653e4b36e3045"),
            (pMinus1, pMinus1),
            ("ebffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f"),
            ("6bad39f4c2aaed1a8a27e534ce4aa7426078fe43c27a88b4ada9dd74482b8410", "b681adad9a9c9e9e2b6830a63819cea056892cdf68ad0050f6fae1c2d329b674"),
            ("242cae48c88fff9b500f0b4cca8e9f33a72971aa44125c7294d11bb5c82df818", "e2356c5b8e750e3e525e58ddadf294c7edbe52705bca55ace0c5d8d276c1c807"),
            ("53c00060c28921553a62c526134241b82b54e7a6e2d5c69174e5e75e2a082b6e", "2e8735debcc29baf646bfe5bee49be1473b24ef0e8e6a1ba1f1f7a581cc45c57"),
        ]
        for (x, inverse) in vectors {
            let v = fe(x)
            #expect(hexOf(v.inverted().bytes) == inverse)
            #expect(v * v.inverted() == .one)
            #expect(v.inverted().inverted() == v)
        }
        #expect(FieldElement.one.inverted() == .one)
        #expect(FieldElement.zero.inverted() == .zero)
    }

    @Test func canonicalEncoding() {
        // p - 1 is canonical and round-trips; (p - 1) + 1 = 0; (p - 1)^2 = 1.
        #expect(hexOf(fe(pMinus1).bytes) == pMinus1)
        #expect(fe(pMinus1) + .one == .zero)
        #expect(fe(pMinus1).squared() == .one)
        #expect(-FieldElement.one == fe(pMinus1))
        // Non-canonical inputs >= p reduce: p -> 0, p + 1 -> 1, 2^255 - 1 -> 18.
        #expect(hexOf(fe("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f").bytes) == zero32)
        #expect(hexOf(fe("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f").bytes) == one32)
        #expect(hexOf(fe("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f").bytes) == "12" + String(repeating: "00", count: 31))
        // Bit 255 is ignored.
        #expect(fe(String(repeating: "ff", count: 32)) == FieldElement(18))
        #expect(fe(String(repeating: "00", count: 31) + "80").isZero)
        // Small values, and an element built from limbs at their largest.
        #expect(hexOf(FieldElement(0xFFFF_FFFF_FFFF_FFFF).bytes) == "ffffffffffffffff" + String(repeating: "00", count: 24))
        let big = FieldElement(limbs: FieldElement.mask, FieldElement.mask, FieldElement.mask, FieldElement.mask, FieldElement.mask)
        #expect(hexOf(big.bytes) == "1200000000000000000000000000000000000000000000000000000000000000")
        // "Negative" is the parity of the canonical value: 1 is odd, p - 1 even.
        #expect(FieldElement.one.isNegative)
        #expect(!fe(pMinus1).isNegative && !fe(pMinus1).isZero)
    }

    @Test func arithmeticMatchesReference() {
        // (a, b, a*b, a+b, a-b) mod p, including non-canonical inputs.
        let vectors: [(String, String, String, String, String)] = [
            ("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "1100000000000000000000000000000000000000000000000000000000000000", "1300000000000000000000000000000000000000000000000000000000000000"),
            ("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "0000000000000000000000000000000000000000000000000000000000000000", "1200000000000000000000000000000000000000000000000000000000000000", "dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
            ("d99a08e47ccc61a0c7fd186f5fc43b369986715a5578f834b4324705eb25294a", "0102016c9e45bf9fcd7bc5036e3c2e972bed6264cf29988e597852748da15a56", "8902d971ef0765d17968656365e178fe70049c9c745c6a7fd14ba4f93360406e", "ed9c09501b1221409579de72cd006acdc473d4be24a290c30dab997978c78320", "c5980778de86a200fa81536bf1870d9f6d990ef6854e60a65abaf4905d84ce73"),
            ("4b77fe0050ade3f673512d0695ee17f8fd13d8972f0392c0b80a3e503433067a", "13b5e7857d0a0c37b8407af248c56e0c1fe9f4bdc1163d4b27a96135dcca2e6a", "d37d1f61fdc912d0a737067ccbdecd7c7e6f81c742e6f27921a072dfc4b9247f", "712ce686cdb7ef2d2c92a7f8ddb386041dfdcc55f119cf0be0b39f8510fe3464", "38c2167bd2a2d7bfbb10b3134c29a9ebde2ae3d96dec54759161dc1a5868d70f"),
            ("1ab405cc295e1e9e307c739d83664b2259de939351012a121212c10a4e0a500a", "f417eccb0e89c5cf84761a5978a1f11fcdccd4d174e6c726ce04f0e2e1662817", "de1e20f532d6c7e5dd09a1484fb62fe8454c82c8bdbb74354f71bd1b6855d92e", "0eccf19738e7e36db5f28df6fb073d4226ab6865c6e7f138e016b1ed2f717821", "139c19001bd558ceab0559440bc559028c11bfc1dc1a62eb430dd1276ca32773"),
            ("20917875652ee1ac97a229a1f7d2e8b7de7810be457f2f7ff1805355fa5fb73f", "9a36bbfdf02738c80da9f28625665ad61734d49d078bfd88ac7eb7afa34a792d", "c618e89441a89ea0b4c45166a981ea480b088bb46bcaf8bd6fe6ff19e705032b", "bac7337356561975a54b1c281d39438ef6ace45b4d0a2d089eff0a059eaa306d", "865abd777406a9e489f9361ad26c8ee1c6443c203ef431f644029ca556153e12"),
        ]
        for (a, b, product, sum, difference) in vectors {
            #expect(hexOf((fe(a) * fe(b)).bytes) == product)
            #expect(hexOf((fe(a) + fe(b)).bytes) == sum)
            #expect(hexOf((fe(a) - fe(b)).bytes) == difference)
            #expect(hexOf((fe(b) - fe(a) + fe(a) - fe(b)).bytes) == zero32)
        }
    }

    @Test func longChainsStayReduced() {
        // Many operations without encoding in between keep limbs bounded: x^(2^k) by repeated squaring
        // equals a fresh power chain, and alternating adds/subtracts return to the start.
        let x = fe("53c00060c28921553a62c526134241b82b54e7a6e2d5c69174e5e75e2a082b6e")
        var y = x
        for _ in 0 ..< 1000 { y = y + fe(pMinus1) - fe(pMinus1) - x + x }
        #expect(y == x)
        // x^(p-1) = 1 (Fermat) via the inverse: x^(p-2) * x.
        #expect(x.inverted() * x == .one)
        #expect(x.squared(times: 255) == (x.squared(times: 200)).squared(times: 55))
    }

    @Test func curveConstants() {
        #expect(hexOf(Edwards25519.d.bytes) == "a3785913ca4deb75abd841414d0a700098e879777940c78c73fe6f2bee6c0352")
        #expect(hexOf(Edwards25519.d2.bytes) == "59f1b226949bd6eb56b183829a14e00030d1f3eef2808e19e7fcdf56dcd90624")
        // B is on the curve: -x^2 + y^2 = 1 + d x^2 y^2.
        let x2 = Edwards25519.base.x.squared(), y2 = Edwards25519.base.y.squared()
        #expect(y2 - x2 == .one + Edwards25519.d * x2 * y2)
    }
}

@Suite struct ScalarTests {
    @Test func orderConstant() {
        #expect(hexOf(Scalar.order.bytes) == "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
        #expect(Scalar(reducing: Scalar.order) == .zero)
        let lMinus1 = "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010"
        #expect(hexOf(sc(lMinus1).bytes) == lMinus1)
        #expect(sc(lMinus1) + sc(one32) == .zero)
    }

    @Test func reductionOfWideValues() {
        #expect(hexOf(Scalar(reducing: [UInt8](repeating: 0xFF, count: 64)).bytes) == "000f9c44e31106a447938568a71b0ed065bef517d273ecce3d9a307c1b419903")
        #expect(hexOf(Scalar(reducing: [UInt8](repeating: 0xFF, count: 32)).bytes) == "1c95988d7431ecd670cf7d73f45befc6feffffffffffffffffffffffffffff0f")
        #expect(hexOf(Scalar(reducing: UInt256(littleEndian: [UInt8](repeating: 0xFF, count: 32))).bytes) == "1c95988d7431ecd670cf7d73f45befc6feffffffffffffffffffffffffffff0f")
        // SHA-512 digests mod L, as signing reduces them.
        let digests: [(String, String)] = [
            ("", "9ef5a0ea93678eb78d69b33367e129543b0d8520122c42e7dfe9d1977f6c3a0c"),
            ("abc", "d15dbef29abf1ff29f9cf91c4b75ee0bb1012cb031d9605d684e841df034de0b"),
            ("MeshCore", "b9033f54086c71f8ff2874b12e3f330582e7915575074cdb229ca9b698faa100"),
        ]
        for (message, reduced) in digests {
            let s = SHA512.hash(data: Array(message.utf8)).withUnsafeBytes { Scalar(reducing: $0) }
            #expect(hexOf(s.bytes) == reduced)
        }
    }

    @Test func multiplyAddMatchesReference() {
        // (a, b, c, a*b + c mod L)
        let vectors: [(String, String, String, String)] = [
            ("8d1613ce3c32923fc658eac66a8040cf5efb61aee99951d591629abb48179e00", "fdc3b49e90d1facf1bf29e0c02a177db5d9df5b1c0a2dbd0a3775bdf4fd8650b", "c2d7ad131a63268dcc463ae8b98deb02339cad3bf65e34109c685a9c31418d0d", "ce26dbd40f762fbb743e94bb38151c81427dd71f43a581ac67378a2b99c6380c"),
            ("76b90928a9b1aa00ec0533e2f010397cba97449634c0f457ccac62fa6e094a01", "1d09fffb8942cd5ae5c11296e10067a45caa82c8e7d7e27a0078fc8a5ade3109", "d28283ee779cd951577f841c98e85d39fb4f828000d2767981c89ae4b5272602", "3cd8296628a9f805ed8cb7c45d560fa90c12a4d0ff77e78eab26121cb4f1d30a"),
            ("eb500376915c51d131be9f5d45f0ad3c0529de9760f4745bb0fadd9c03279c00", "ade5ab643c92e70c8285155bd80f36ab0628f5a54c48b9e9454a91ad9da01204", "013df0a171d9140bf6c8a0b68be4cdc14e012ad1de42ff100a856823cd168608", "c91ca1d70fd6c09d7cdaed857e91a7b5cd9080938cadec1d1db740827cd4e20a"),
            ("aa2202d2721ff973b9ee20a0226c3e9b8dd9585257c295b5a899c33de8452007", "96c690d448455715ab5bdb04ca2372b25b25ce57a403d8b92517b25ba1c67107", "4e745a0693a7266ce869ced1f4cab8635bff219399ae9fd33f26b3fa1198bc04", "180d70018351baccb62be22d4028e2fcbe9e42e8dcafe6f1343af562a65e0d07"),
            ("ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", zero32),
        ]
        for (a, b, c, expected) in vectors {
            #expect(hexOf((sc(a) * sc(b) + sc(c)).bytes) == expected)
            #expect(sc(a) * sc(b) == sc(b) * sc(a))
        }
    }
}

@Suite struct EdwardsTests {
    @Test func tableMultiplicationMatchesDoubleAndAdd() {
        for s: UInt64 in [1, 2, 3, 8, 0xFFFF_FFFF, 0x1234_5678_9ABC_DEF0] {
            let k = UInt256(s, 0, 0, 0)
            #expect(Edwards25519.encode(Edwards25519.multiplyBase(k)) == Edwards25519.encode(Edwards25519.multiply(k, Edwards25519.base)))
        }
        // L * B is the identity (encoded y = 1).
        #expect(hexOf(Edwards25519.encode(Edwards25519.multiplyBase(Scalar.order))) == one32)
        #expect(hexOf(Edwards25519.encode(Edwards25519.multiply(Scalar.order, Edwards25519.base))) == one32)
        // The base point encodes as 0x58 0x66 ... 0x66.
        #expect(hexOf(Edwards25519.encode(Edwards25519.base)) == "58" + String(repeating: "66", count: 31))
        // Doubling equals adding a point to itself.
        let p = Edwards25519.multiplyBase(UInt256(12345, 0, 0, 0))
        #expect(Edwards25519.encode(Edwards25519.double(p)) == Edwards25519.encode(Edwards25519.add(p, p)))
    }

    @Test func baseMultiplesMatchReference() {
        // (k, encode(k * B)) for 256-bit k, not reduced mod L.
        let vectors: [(String, String)] = [
            ("ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", "58666666666666666666666666666666666666666666666666666666666666e6"),
            ("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "af9b6a948d400c38197f1d0675ec3d6630780c67ad4dfc7e5fe6e6a39cc90fd3"),
            ("6da682a4f69209365539914965444672537b9198fbad2e1be0af14f1ae01b5ec", "62c0b9aa7830580cfbdbde26a6877b02b92c5b3a98e09b04b6992335e0b046c9"),
            ("a4f8f0f57ce87dd080133ca1835f295c84be4504363e6b66169125ddfd6fed07", "ba4a18cff59d3c78b7bafab2ad25222ce99c86f7e785524eb6e6772db88baf44"),
        ]
        for (k, point) in vectors {
            #expect(hexOf(Edwards25519.encode(Edwards25519.multiplyBase(u256(k)))) == point)
            #expect(hexOf(Edwards25519.encode(Edwards25519.multiply(u256(k), Edwards25519.base))) == point)
        }
    }

    @Test func montgomeryConversion() {
        let u = Edwards25519.montgomeryU(fromEdwards: Edwards25519.encode(Edwards25519.base))
        #expect(u == [9] + [UInt8](repeating: 0, count: 31))
        #expect(hexOf(Edwards25519.montgomeryU(fromEdwards: hex(Vectors.aPublic))) == "8454321a0d3cb275f3151602a84865513120f77c7b00da0d31679c0ef6ba4555")
        #expect(hexOf(Edwards25519.montgomeryU(fromEdwards: hex(Vectors.bPublic))) == "3f1c6aba3c3c462e98cd8bdc41be33537f1657f82818b2632a84dd33763d6a39")
        // The sign bit does not matter; y = 1 gives u = 0.
        var flipped = hex(Vectors.aPublic)
        flipped[31] ^= 0x80
        #expect(Edwards25519.montgomeryU(fromEdwards: flipped) == Edwards25519.montgomeryU(fromEdwards: hex(Vectors.aPublic)))
        #expect(hexOf(Edwards25519.montgomeryU(fromEdwards: hex(one32))) == zero32)
        #expect(Edwards25519.cachedMontgomeryU(fromEdwards: hex(Vectors.bPublic)) == Edwards25519.montgomeryU(fromEdwards: hex(Vectors.bPublic)))
    }

    @Test func publicKeysMatchSwiftCryptoForSeeds() throws {
        var rng = SplitMix(seed: 77)
        for _ in 0 ..< 20 {
            var seed = [UInt8](repeating: 0, count: 32)
            for i in 0 ..< 32 { seed[i] = UInt8.random(in: 0 ... 255, using: &rng) }
            let key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
            var expanded = Array(SHA512.hash(data: seed))
            expanded[0] &= 248; expanded[31] &= 63; expanded[31] |= 64
            let point = Edwards25519.multiplyBase(UInt256(littleEndian: expanded[0 ..< 32]))
            #expect(Edwards25519.encode(point) == Array(key.publicKey.rawRepresentation))
            let msg = Array(seed.prefix(Int(seed[0] % 32)))
            let sig = Ed25519Expanded.sign(msg, privateKey: expanded, publicKey: Edwards25519.encode(point))
            #expect(sig == Array(try key.signature(for: msg)))
        }
    }
}
