import MeshCompanion
import Testing
@testable import MeshAir

@Suite struct IdentityTests {
    @Test func importedKeysDeriveFirmwarePublicKeys() throws {
        #expect(Vectors.a.publicKey.hex == Vectors.aPublic)
        #expect(Vectors.b.publicKey.hex == Vectors.bPublic)
        #expect(hexOf(Vectors.a.privateKey) == Vectors.aPrivate)
        #expect(!Vectors.a.hasSeed)
    }

    @Test func importedKeySignaturesVerifyWithLibsodium() throws {
        for id in [Vectors.a, Vectors.b] {
            for msg in [[UInt8](), Array("hello".utf8), [UInt8](repeating: 0xAB, count: 200)] {
                let sig = id.sign(msg)
                #expect(sig.count == 64)
                #expect(Sodium.verify(sig, msg, publicKey: id.publicKey.bytes))
                #expect(id.publicKey.isValidSignature(sig, for: msg))
                #expect(!id.publicKey.isValidSignature(sig, for: msg + [0]))
            }
        }
    }

    @Test func seedIdentityExportsExpandedKeyAndReimports() throws {
        let seed = (1 ... 32).map { UInt8($0) }
        let id = try LocalIdentity(seed: seed)
        #expect(id.hasSeed)
        #expect(id.privateKey.count == 64)
        #expect(id.privateKey[0] & 7 == 0)
        #expect(id.privateKey[31] & 0xC0 == 0x40)
        let back = try LocalIdentity(privateKey: id.privateKey)
        #expect(back.publicKey == id.publicKey)
        // Ed25519 is deterministic: signing from the expanded key equals libsodium's from the seed.
        let msg = Array("MeshCore".utf8)
        #expect(back.sign(msg) == id.sign(msg))
        #expect(id.sign(msg) == Sodium.sign(msg, secretKey: Sodium.keyPair(seed: seed).secretKey))
    }

    @Test func seedVectorMatchesTheFirmware() throws {
        // Seed 01 02 … 20: the firmware's orlp code and Python `cryptography` agree on the key and the
        // signature (reference 4.5); the expanded key is SHA-512(seed) clamped.
        let id = try LocalIdentity(seed: (1 ... 32).map { UInt8($0) })
        #expect(hexOf(id.privateKey) == "70788f1a0cea001a2631dae5d05dbd062008d5b30f50b9e29beb2a7822289044573dfc9b6ffeb1c786a16349e70f9836876a743c31c0a7a2a70727a852eec372")
        #expect(id.publicKey.hex == "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664")
        #expect(hexOf(id.sign(Array("MeshCore".utf8))) == "ca34d00a99cbe9d98813f0a949f033ba0362a8b7657f32d2c2d5d818e3bfe67eaccd6108041f09167b1fb3c36662556cb2a374071e8f2f1ba97cee3365e9c003")
    }

    @Test func signaturesFromFirmwareKeysMatchRFC8032() {
        // The firmware's keys have no seed: RFC 8032 signing from the scalar and prefix, computed with an
        // independent implementation (and checked there with Python `cryptography`'s verifier).
        let cases: [(LocalIdentity, String, String)] = [
            (Vectors.a, "", "d270b32c30edac86327ed9586b7584f2d9253aad90703f706fd3b3a00021afc9b2c9714785d51a89a7a64c7623f0a205be5f9e28fdc5e60eda0e0d10e928f504"),
            (Vectors.a, "MeshCore", "97456ba72ad9d2150355843247c48f6e62fc4faccc244429494817418580d23e6b19877b3ef66a76d131c965d11f9e7e17c5dca9c29a2b67ed3dfe0fd6b19703"),
            (Vectors.b, "", "c4a00e8e188b4793405fbff317cce4fbf1d7fcd31c5f745730ce1f0b23792a710ff9d348fe4c80ba9c4bc90f07d4845ccc62b4aa5982613e516d16653b5a450c"),
            (Vectors.b, "MeshCore", "4d8fe3cfbcf452548e7a2e0a86ddfab807cc41a143da578461470aba65568784c3bc4cbd7e530c0f18e2250bd0cf134462428841151375bc356473a13774d800"),
        ]
        for (id, message, signature) in cases {
            #expect(hexOf(id.sign(Array(message.utf8))) == signature)
            #expect(id.publicKey.isValidSignature(hex(signature), for: Array(message.utf8)))
        }
        // A signature with S >= L (S + L) is refused, as is one of the wrong length.
        var sig = hex(cases[1].2)
        var carry = 0
        let order = hex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
        for i in 0 ..< 32 {
            let v = Int(sig[32 + i]) + Int(order[i]) + carry
            sig[32 + i] = UInt8(v & 0xFF)
            carry = v >> 8
        }
        #expect(!Vectors.a.publicKey.isValidSignature(sig, for: Array("MeshCore".utf8)))
        #expect(!Vectors.a.publicKey.isValidSignature(hex(cases[1].2).prefix(63), for: Array("MeshCore".utf8)))
    }

    @Test func generationAvoidsReservedPrefixes() {
        var rng = SplitMix(seed: 1)
        for _ in 0 ..< 300 {
            let id = LocalIdentity.generate(using: &rng)
            #expect(!id.publicKey.hasReservedPrefix)
        }
        var r1 = SplitMix(seed: 42), r2 = SplitMix(seed: 42)
        #expect(LocalIdentity.generate(using: &r1).publicKey == LocalIdentity.generate(using: &r2).publicKey)
    }

    @Test func reservedPrefixRejectedOnSeedAndImport() throws {
        // Find seeds whose public key starts with 0x00 or 0xFF.
        var found = 0
        var s: UInt8 = 0
        for i in 0 ..< 2000 {
            var seed = [UInt8](repeating: 0, count: 32)
            seed[0] = UInt8(i & 0xFF); seed[1] = UInt8(i >> 8); seed[2] = s
            let first = Sodium.keyPair(seed: seed).publicKey.first!
            if first == 0 || first == 0xFF {
                #expect(throws: AirError.reservedKeyPrefix) { try LocalIdentity(seed: seed) }
                var expanded = Sodium.sha512(seed)
                expanded[0] &= 248; expanded[31] &= 63; expanded[31] |= 64
                #expect(throws: AirError.reservedKeyPrefix) { try LocalIdentity(privateKey: expanded) }
                found += 1
                if found == 2 { break }
            }
            s &+= 1
        }
        #expect(found == 2)
    }

    @Test func badKeyLengths() {
        #expect(throws: AirError.invalidKey) { try LocalIdentity(seed: [1, 2, 3]) }
        #expect(throws: AirError.invalidKey) { try LocalIdentity(privateKey: [UInt8](repeating: 1, count: 32)) }
        #expect(throws: AirError.invalidKey) { try PublicKey(air: [1, 2]) }
        #expect(PublicKey([1, 2]) == nil)
        #expect(throws: AirError.invalidKey) { try SharedSecret([1, 2]) }
    }
}

@Suite struct PeerCryptoTests {
    @Test func ecdhMatchesFirmwareBothDirections() throws {
        let ab = try Vectors.a.sharedSecret(with: Vectors.b.publicKey)
        let ba = try Vectors.b.sharedSecret(with: Vectors.a.publicKey)
        #expect(hexOf(ab.bytes) == Vectors.secretAB)
        #expect(ab == ba)
    }

    @Test func ecdhVectors() throws {
        // Computed independently (u = (1 + y) / (1 - y), then X25519 with the clamped scalar).
        let seeded = try LocalIdentity(seed: (1 ... 32).map { UInt8($0) })
        let expected = "cc53d979824e5ea28edde3a29e8053835dd143a3f6f4b9b6be57a63881943742"
        #expect(hexOf(try seeded.sharedSecret(with: Vectors.a.publicKey).bytes) == expected)
        #expect(hexOf(try Vectors.a.sharedSecret(with: seeded.publicKey).bytes) == expected)
        // Any 32 bytes get the firmware's secret, even a y with no curve point (u from y alone).
        let offCurve = PublicKey(hex: "02" + String(repeating: "00", count: 31))!
        #expect(hexOf(try Vectors.a.sharedSecret(with: offCurve).bytes) == "8487b7b46a89de60f5169b640694b11c562352290bab0d6ee1cbefc43d364f60")
        // The identity point (y = 1, so u = 0) makes an all-zero secret: refused.
        let identity = PublicKey(hex: "01" + String(repeating: "00", count: 31))!
        #expect(throws: AirError.cryptoFailure) { try Vectors.a.sharedSecret(with: identity) }
    }

    @Test func ecdhSeedIdentities() throws {
        var rng = SplitMix(seed: 9)
        let x = LocalIdentity.generate(using: &rng), y = LocalIdentity.generate(using: &rng)
        #expect(try x.sharedSecret(with: y.publicKey) == y.sharedSecret(with: x.publicKey))
    }

    @Test func derivedTextCiphertextAndMac() throws {
        let secret = try SharedSecret(hex(Vectors.secretAB))
        let plain = hex("00f153650048656c6c6f")
        #expect(hexOf(secret.ciphertext(for: plain)) == "be9a7f09431d92c06963d479b2be40e9")
        #expect(hexOf(secret.encrypt(plain)) == "192fbe9a7f09431d92c06963d479b2be40e9")
        let back = try secret.decrypt(hex("192fbe9a7f09431d92c06963d479b2be40e9"))
        #expect(back == plain + [UInt8](repeating: 0, count: 6))
        #expect(throws: AirError.macMismatch) { try secret.decrypt(hex("192ebe9a7f09431d92c06963d479b2be40e9")) }
        #expect(throws: AirError.truncated) { try secret.decrypt(hex("192f")) }
        #expect(throws: AirError.invalidField) { try secret.decrypt(hex("192fbe9a")) }
    }

    @Test func channelKeysAndHashes() throws {
        #expect(ChannelSecret.publicChannel.hash == 0x11)
        let test = ChannelSecret(hashtag: "#test")
        #expect(hexOf(test.key) == "9cd8fcf22a47333b591d96a2b848b73f")
        #expect(test.hash == 0xd9)
        #expect(ChannelSecret(hashtag: "test") == test)
        let bot = ChannelSecret(hashtag: "#bot")
        #expect(hexOf(bot.key) == "eb50a1bcb3e4e5d7bf69a57c9dada211")
        #expect(bot.hash == 0xca)
        #expect(bot.sharedSecret.bytes == bot.key + [UInt8](repeating: 0, count: 16))
    }

    @Test func regionTransportCodes() throws {
        let test = RegionKey(name: "#test")
        #expect(hexOf(test.key) == "9cd8fcf22a47333b591d96a2b848b73f")
        #expect(RegionKey(name: "test") == test)
        let payload = hex("11b42da7f1c3ef15b35ecb191c8d35200a1d60")
        #expect(test.transportCode(payloadType: .grpTxt, payload: payload) == 0xE80C)
        let ottawaPayload = hex("596EA23622BCB4D5945E49348165AF7DABA3F5DCEED85F430E0856DB5B591E86AB3363BC00E1BA30776698F72FC57C7168E66A4875CDB710F3C175FC2B3FE75A036EF14FA59A709062D3A9FF7014F2E7A8512C")
        #expect(RegionKey(name: "#ottawa").transportCode(payloadType: .grpTxt, payload: ottawaPayload) == 0x1AFA)
        #expect(RegionKey(name: "ottawa").transportCode(payloadType: .grpTxt, payload: ottawaPayload) == 0x1AFA)
    }

    @Test func textAckCodes() throws {
        let text = Array("Hello".utf8)
        #expect(TextAck.code(timestamp: 1_700_000_000, txtType: 0, attempt: 0, text: text, sender: Vectors.a.publicKey).hex == "918d0c8e")
        #expect(TextAck.code(timestamp: 1_700_000_000, txtType: 0, attempt: 1, text: text, sender: Vectors.a.publicKey).hex == "b28cd4bc")
    }

    @Test func airtime() {
        let d = LoRaSettings.meshCoreDefault
        #expect(d.preambleSymbols == 32)
        let t = d.airtime(length: 100)
        #expect(t > 705 && t < 715)
        #expect(d.airtimeMilliseconds(length: 100) == 713)
        // SF12 / 125 kHz: Tsym 32.768 ms -> LDRO, 16-symbol preamble.
        let slow = LoRaSettings(spreadingFactor: 12, bandwidthHz: 125_000, codingRate: 5)
        #expect(slow.preambleSymbols == 16)
        // PL 10: ceil((80-48+44)/(4*10)) = 2 blocks * 5 + 8 = 18 symbols; (16+4.25+18) * 32.768 = 1253.376
        #expect(abs(slow.airtime(length: 10) - 1253.376) < 0.001)
        // SF7 / 250k: PL 0 -> ceil(16/28)=1 -> 13 symbols; (32+4.25+13) * 0.512 = 25.216
        let fast = LoRaSettings(spreadingFactor: 7, bandwidthHz: 250_000, codingRate: 5)
        #expect(abs(fast.airtime(length: 0) - 25.216) < 0.001)
        // Integer form: SF8/62.5k Tsym = 4096 us; 100 bytes = 697/4 symbols -> 713728 us.
        #expect(d.airtimeMicroseconds(length: 100) == 713_728)
        #expect(d.airtimeMilliseconds(length: 255) == UInt32(d.airtimeMicroseconds(length: 255) / 1000))
        #expect(abs(Double(d.airtimeMicroseconds(length: 255)) / 1000 - d.airtime(length: 255)) < 0.01)
        // Longer packets and slower coding rates take longer.
        #expect(d.airtime(length: 101) >= d.airtime(length: 100))
        #expect(LoRaSettings(spreadingFactor: 8, bandwidthHz: 62_500, codingRate: 8).airtime(length: 100) > t)
        // SF5 uses 6.25 sync symbols and no +8 bits.
        let sf5 = LoRaSettings(spreadingFactor: 5, bandwidthHz: 500_000, codingRate: 5)
        // bits = 80 + 16 - 20 + 0 + 20 = 96 -> 96/20 -> 5 blocks * 5 = 25; (32+8)*4 + 25 + 100 = 285 x4 symbols; Tsym 64 us
        #expect(sf5.airtimeMicroseconds(length: 10) == 64 * 285 / 4)
    }
}
