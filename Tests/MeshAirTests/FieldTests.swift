import CMeshCrypto
import CSodium
import Testing
@testable import MeshAir

// The curve arithmetic is libsodium's (constant-time) and CMeshCrypto's compositions of it. The
// expected values below were computed independently with arbitrary-precision integers
// (p = 2^255 - 19, L = 2^252 + 27742317777372353535851937790883648493); all hex is little-endian.
// They pin down what MeshCore's keys rely on: scalars mod L (signing from an expanded key),
// base-point multiples (its public key) and the Edwards-to-Montgomery map (the ECDH).

private let zero32 = String(repeating: "00", count: 32)
private let one32 = "01" + String(repeating: "00", count: 31)
private let lMinus1 = "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010"

/// A 32- or 64-byte little-endian value mod L.
private func reduced(_ bytes: [UInt8]) -> [UInt8] {
    var wide = bytes + [UInt8](repeating: 0, count: 64 - bytes.count), out = [UInt8](repeating: 0, count: 32)
    crypto_core_ed25519_scalar_reduce(&out, &wide)
    return out
}

private func sc(_ s: String) -> [UInt8] { reduced(hex(s)) }

/// k·B for a 256-bit k, as an expanded private key with scalar k derives its public key; nil when
/// libsodium refuses (k = 0 mod L).
private func baseMultiple(_ k: [UInt8]) -> String? {
    var pk = [UInt8](repeating: 0, count: 32)
    guard meshcrypto_ed25519_public_key(&pk, k + [UInt8](repeating: 0, count: 32)) == 0 else { return nil }
    return hexOf(pk)
}

private func montgomeryU(_ key: [UInt8], unchecked: Bool = false) -> String {
    var u = [UInt8](repeating: 0, count: 32)
    if unchecked { meshcrypto_montgomery_u_unchecked(&u, key) } else { meshcrypto_montgomery_u(&u, key) }
    return hexOf(u)
}

@Suite struct ScalarTests {
    @Test func orderConstant() {
        #expect(hexOf(sc("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")) == zero32)
        #expect(hexOf(sc(lMinus1)) == lMinus1)
        var sum = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_add(&sum, sc(lMinus1), sc(one32))
        #expect(hexOf(sum) == zero32)
    }

    @Test func reductionOfWideValues() {
        #expect(hexOf(reduced([UInt8](repeating: 0xFF, count: 64))) == "000f9c44e31106a447938568a71b0ed065bef517d273ecce3d9a307c1b419903")
        #expect(hexOf(reduced([UInt8](repeating: 0xFF, count: 32))) == "1c95988d7431ecd670cf7d73f45befc6feffffffffffffffffffffffffffff0f")
        // SHA-512 digests mod L, as signing reduces them.
        let digests: [(String, String)] = [
            ("", "9ef5a0ea93678eb78d69b33367e129543b0d8520122c42e7dfe9d1977f6c3a0c"),
            ("abc", "d15dbef29abf1ff29f9cf91c4b75ee0bb1012cb031d9605d684e841df034de0b"),
            ("MeshCore", "b9033f54086c71f8ff2874b12e3f330582e7915575074cdb229ca9b698faa100"),
        ]
        for (message, expected) in digests {
            #expect(hexOf(reduced(Digest.sha512(Array(message.utf8)))) == expected)
        }
    }

    @Test func multiplyAddMatchesReference() {
        // (a, b, c, a*b + c mod L)
        let vectors: [(String, String, String, String)] = [
            ("8d1613ce3c32923fc658eac66a8040cf5efb61aee99951d591629abb48179e00", "fdc3b49e90d1facf1bf29e0c02a177db5d9df5b1c0a2dbd0a3775bdf4fd8650b", "c2d7ad131a63268dcc463ae8b98deb02339cad3bf65e34109c685a9c31418d0d", "ce26dbd40f762fbb743e94bb38151c81427dd71f43a581ac67378a2b99c6380c"),
            ("76b90928a9b1aa00ec0533e2f010397cba97449634c0f457ccac62fa6e094a01", "1d09fffb8942cd5ae5c11296e10067a45caa82c8e7d7e27a0078fc8a5ade3109", "d28283ee779cd951577f841c98e85d39fb4f828000d2767981c89ae4b5272602", "3cd8296628a9f805ed8cb7c45d560fa90c12a4d0ff77e78eab26121cb4f1d30a"),
            ("eb500376915c51d131be9f5d45f0ad3c0529de9760f4745bb0fadd9c03279c00", "ade5ab643c92e70c8285155bd80f36ab0628f5a54c48b9e9454a91ad9da01204", "013df0a171d9140bf6c8a0b68be4cdc14e012ad1de42ff100a856823cd168608", "c91ca1d70fd6c09d7cdaed857e91a7b5cd9080938cadec1d1db740827cd4e20a"),
            ("aa2202d2721ff973b9ee20a0226c3e9b8dd9585257c295b5a899c33de8452007", "96c690d448455715ab5bdb04ca2372b25b25ce57a403d8b92517b25ba1c67107", "4e745a0693a7266ce869ced1f4cab8635bff219399ae9fd33f26b3fa1198bc04", "180d70018351baccb62be22d4028e2fcbe9e42e8dcafe6f1343af562a65e0d07"),
            (lMinus1, lMinus1, lMinus1, zero32),
        ]
        for (a, b, c, expected) in vectors {
            var ab = [UInt8](repeating: 0, count: 32), ba = ab, sum = ab
            crypto_core_ed25519_scalar_mul(&ab, sc(a), sc(b))
            crypto_core_ed25519_scalar_mul(&ba, sc(b), sc(a))
            crypto_core_ed25519_scalar_add(&sum, ab, sc(c))
            #expect(hexOf(sum) == expected)
            #expect(ab == ba)
        }
    }
}

@Suite struct EdwardsTests {
    @Test func baseMultiplesMatchReference() {
        // (k, encode(k * B)) for 256-bit k, not reduced mod L.
        let vectors: [(String, String)] = [
            (one32, "58" + String(repeating: "66", count: 31)),  // B itself
            (lMinus1, "58666666666666666666666666666666666666666666666666666666666666e6"),
            ("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "af9b6a948d400c38197f1d0675ec3d6630780c67ad4dfc7e5fe6e6a39cc90fd3"),
            ("6da682a4f69209365539914965444672537b9198fbad2e1be0af14f1ae01b5ec", "62c0b9aa7830580cfbdbde26a6877b02b92c5b3a98e09b04b6992335e0b046c9"),
            ("a4f8f0f57ce87dd080133ca1835f295c84be4504363e6b66169125ddfd6fed07", "ba4a18cff59d3c78b7bafab2ad25222ce99c86f7e785524eb6e6772db88baf44"),
        ]
        let base = hex("58" + String(repeating: "66", count: 31))
        for (k, point) in vectors {
            #expect(baseMultiple(hex(k)) == point)
            // The variable-base multiplication agrees with the base-point one.
            var q = [UInt8](repeating: 0, count: 32)
            #expect(crypto_scalarmult_ed25519_noclamp(&q, sc(k), base) == 0)
            #expect(hexOf(q) == point)
        }
    }

    @Test func identityAndDoubling() throws {
        // L * B is the identity: no public key (an imported key with scalar 0 mod L is refused).
        #expect(baseMultiple(hex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")) == nil)
        #expect(baseMultiple(hex(zero32)) == nil)
        #expect(throws: AirError.invalidKey) { try LocalIdentity(privateKey: [UInt8](repeating: 0, count: 64)) }
        // Doubling equals adding a point to itself.
        let p = hex(baseMultiple(hex("3930" + String(repeating: "00", count: 30)))!)  // 12345 B
        var doubled = [UInt8](repeating: 0, count: 32)
        #expect(crypto_core_ed25519_add(&doubled, p, p) == 0)
        #expect(hexOf(doubled) == baseMultiple(hex("7260" + String(repeating: "00", count: 30))))  // 24690 B
    }

    @Test func montgomeryConversion() {
        let base = hex("58" + String(repeating: "66", count: 31))
        #expect(montgomeryU(base) == "09" + String(repeating: "00", count: 31))
        #expect(montgomeryU(hex(Vectors.aPublic)) == "8454321a0d3cb275f3151602a84865513120f77c7b00da0d31679c0ef6ba4555")
        #expect(montgomeryU(hex(Vectors.bPublic)) == "3f1c6aba3c3c462e98cd8bdc41be33537f1657f82818b2632a84dd33763d6a39")
        // The sign bit does not matter; y = 1 gives u = 0.
        var flipped = hex(Vectors.aPublic)
        flipped[31] ^= 0x80
        #expect(montgomeryU(flipped) == montgomeryU(hex(Vectors.aPublic)))
        #expect(montgomeryU(hex(one32)) == zero32)
        // A y with no point on the curve is converted all the same, as the firmware does.
        #expect(montgomeryU(hex("02" + String(repeating: "00", count: 31))) == "eaffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
        // The big-number path (for keys libsodium refuses) agrees with libsodium's on real keys.
        for key in [base, hex(Vectors.aPublic), hex(Vectors.bPublic), flipped] {
            #expect(montgomeryU(key, unchecked: true) == montgomeryU(key))
        }
    }

    @Test func publicKeysAndSignaturesMatchLibsodiumForSeeds() throws {
        var rng = SplitMix(seed: 77)
        for _ in 0 ..< 20 {
            var seed = [UInt8](repeating: 0, count: 32)
            for i in 0 ..< 32 { seed[i] = UInt8.random(in: 0 ... 255, using: &rng) }
            let sodium = Sodium.keyPair(seed: seed)
            var expanded = Sodium.sha512(seed)
            expanded[0] &= 248; expanded[31] &= 63; expanded[31] |= 64
            guard let id = try? LocalIdentity(privateKey: expanded) else {
                #expect(sodium.publicKey[0] == 0 || sodium.publicKey[0] == 0xFF)  // a reserved prefix
                continue
            }
            #expect(id.publicKey.bytes == sodium.publicKey)
            let msg = Array(seed.prefix(Int(seed[0] % 32)))
            #expect(id.sign(msg) == Sodium.sign(msg, secretKey: sodium.secretKey))
        }
    }
}
