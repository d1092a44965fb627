import MeshCompanion
import Testing
import Crypto
@testable import MeshAir

@Suite struct IdentityTests {
    @Test func importedKeysDeriveFirmwarePublicKeys() throws {
        #expect(Vectors.a.publicKey.hex == Vectors.aPublic)
        #expect(Vectors.b.publicKey.hex == Vectors.bPublic)
        #expect(hexOf(Vectors.a.privateKey) == Vectors.aPrivate)
        #expect(!Vectors.a.hasSeed)
    }

    @Test func importedKeySignaturesVerifyWithSwiftCrypto() throws {
        for id in [Vectors.a, Vectors.b] {
            for msg in [[UInt8](), Array("hello".utf8), [UInt8](repeating: 0xAB, count: 200)] {
                let sig = id.sign(msg)
                #expect(sig.count == 64)
                let key = try Curve25519.Signing.PublicKey(rawRepresentation: id.publicKey.bytes)
                #expect(key.isValidSignature(sig, for: msg))
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
        // Ed25519 is deterministic: signing from the expanded key equals swift-crypto's signature.
        let msg = Array("MeshCore".utf8)
        #expect(back.sign(msg) == id.sign(msg))
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
            let key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
            let first = key.publicKey.rawRepresentation.first!
            if first == 0 || first == 0xFF {
                #expect(throws: AirError.reservedKeyPrefix) { try LocalIdentity(seed: seed) }
                var expanded = Array(SHA512.hash(data: seed))
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
