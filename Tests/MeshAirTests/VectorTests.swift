import Testing
import MeshCompanion
@testable import MeshAir

/// Every vector of reference section 4.11.
@Suite struct CapturedVectorTests {
    @Test func publicChannelGroupText() throws {
        let raw = hex("150011C3C1354D619BAE9590E4D177DB7EEAF982F5BDCF78005D75157D9535FA90178F785D")
        let p = try Packet(bytes: raw)
        #expect(p.routeType == .flood && p.payloadType == .grpTxt && p.pathLength.hopCount == 0)
        let g = try p.groupDatagram()
        #expect(g.channelHash == 0x11)
        #expect(hexOf(g.macAndCiphertext.prefix(2)) == "c3c1")
        let (index, plain) = try #require(g.decrypt(trying: [ChannelSecret(hashtag: "#test"), .publicChannel]))
        #expect(index == 1)
        let t = try GroupText(plaintext: plain)
        #expect(t.timestamp == 1_758_484_279)
        #expect(t.flags == 0)
        #expect(t.string == "🌲 Tree: ☁️")
        #expect(t.senderName == "🌲 Tree")
        #expect(t.message == "☁️")
        // Re-encrypting the same plaintext reproduces the packet byte for byte.
        let again = try Packet.groupText(t, channel: .publicChannel)
        #expect(again.bytes == raw)
    }

    @Test func botChannelThreeByteHashes() throws {
        let raw = hex("15833fa002860ccae0eed9ca78b9ab0775d477c1f6490a398bf4edc75240")
        let p = try Packet(bytes: raw)
        #expect(p.pathLength.encoded == 0x83)
        #expect(p.pathLength.hashSize == 3 && p.pathLength.hopCount == 3)
        #expect(p.hops.map { hexOf($0) } == ["3fa002", "860cca", "e0eed9"])
        let bot = ChannelSecret(hashtag: "#bot")
        let g = try p.groupDatagram()
        #expect(g.channelHash == 0xCA)
        let t = try GroupText(plaintext: g.decrypt(with: bot))
        #expect(t.string == "Roy B V4: P")
        #expect(p.bytes == raw)
    }

    @Test func botChannelTwoByteModeZeroHops() throws {
        let raw = hex("1540cab3b15626481a5ba64247ab25766e410b026e0678a32da9f0c3946fae5b714cab170f")
        let p = try Packet(bytes: raw)
        #expect(p.pathLength.encoded == 0x40)
        #expect(p.pathLength.hashSize == 2 && p.pathLength.hopCount == 0)
        let t = try GroupText(plaintext: p.groupDatagram().decrypt(with: ChannelSecret(hashtag: "bot")))
        #expect(t.string == "Howl 👾: prefix 0101")
        // A relay appends 2-byte hashes in this mode.
        var relayed = p
        try relayed.appendHop(hex("abcd99"))
        #expect(hexOf(relayed.bytes.prefix(4)) == "1541abcd")
    }

    @Test func scopedOttawaTransportCode() throws {
        let raw = hex("14FA1A0000034E927D596EA23622BCB4D5945E49348165AF7DABA3F5DCEED85F430E0856DB5B591E86AB3363BC00E1BA30776698F72FC57C7168E66A4875CDB710F3C175FC2B3FE75A036EF14FA59A709062D3A9FF7014F2E7A8512C")
        try raw.withUnsafeBytes { buf in
            let v = try PacketView(buf)
            #expect(v.routeType == .transportFlood)
            #expect(v.payloadType == .grpTxt)
            #expect(v.transportCodes == TransportCodes(0x1AFA, 0))
            #expect(v.pathLength.hopCount == 3)
            #expect(hexOf(v.path) == "4e927d")
            #expect(RegionKey(name: "#ottawa").transportCode(payloadType: v.payloadType, payload: v.payload) == 0x1AFA)
            #expect(RegionKey(name: "ottawa").transportCode(payloadType: v.payloadType, payload: v.payload) == 0x1AFA)
            #expect(RegionKey(name: "#toronto").transportCode(payloadType: v.payloadType, payload: v.payload) != 0x1AFA)
        }
        #expect(try Packet(bytes: raw).bytes == raw)
    }

    @Test func realAdvertParsesAndVerifies() throws {
        let raw = hex("11007E7662676F7F0850A8A355BAAFBFC1EB7B4174C340442D7D7161C9474A2C94006CE7CF682E58408DD8FCC51906ECA98EBF94A037886BDADE7ECD09FD92B839491DF3809C9454F5286D1D3370AC31A34593D569E9A042A3B41FD331DFFB7E18599CE1E60992A076D50238C5B8F85757375354522F50756765744D65736820436F75676172")
        let p = try Packet(bytes: raw)
        #expect(p.routeType == .flood && p.payloadType == .advert && p.pathLength.hopCount == 0)
        let a = try p.advert()
        #expect(a.timestamp == 1_758_455_660)
        #expect(a.isValid)
        #expect(Sodium.verify(a.signature, a.publicKey.bytes + le32(a.timestamp) + a.appData, publicKey: a.publicKey.bytes))
        let d = try a.data()
        #expect(a.appData[0] == 0x92)
        #expect(d.type == .repeater)
        #expect(d.latitudeE6 == 47_543_968)
        #expect(d.longitudeE6 == -122_108_616)
        #expect(abs(d.latitude! - 47.543968) < 1e-9)
        #expect(abs(d.longitude! - -122.108616) < 1e-9)
        #expect(d.feat1 == nil && d.feat2 == nil)
        #expect(d.name == "WW7STR/PugetMesh Cougar")
        #expect(d.encoded == a.appData)
        // Tampering breaks the signature; bytes past 32 of appdata are not covered.
        var bad = a
        bad.timestamp += 1
        #expect(!bad.isValid)
        var longer = a
        longer.appData += [1, 2, 3]
        #expect(longer.appData.count > 32 || longer.isValid)
    }

    @Test func oldFourByteAck() throws {
        let raw = hex("0D04B891647EBB40BA70")
        let p = try Packet(bytes: raw)
        #expect(p.routeType == .flood && p.payloadType == .ack)
        #expect(p.pathLength.hopCount == 4)
        #expect(hexOf(p.path) == "b891647e")
        let ack = try p.ack()
        #expect(ack.code.hex == "bb40ba70")
        #expect(ack.extra.isEmpty)
        var built = try Packet.ack(ack.code, route: .flood)
        for h in p.hops { try built.appendHop(h) }
        #expect(built.bytes == raw)
    }

    @Test func traceVector() throws {
        let raw = hex("260130A24D89BD0000000000FB")
        let p = try Packet(bytes: raw)
        #expect(p.routeType == .direct && p.payloadType == .trace)
        #expect(p.path == [0x30])
        #expect(p.traceSNRs == [12.0])
        let t = try p.trace()
        #expect(hexOf(le32(t.tag)) == "a24d89bd")
        #expect(t.authCode == 0 && t.flags == 0)
        #expect(t.hashes == [0xFB])
        #expect(t.nextHash(afterSNRCount: 0) == [0xFB])
        #expect(t.nextHash(afterSNRCount: 1) == nil)
        var built = try Packet.trace(t)
        #expect(hexOf(built.bytes) == "2600a24d89bd0000000000fb")
        try built.appendTraceSNR(48)
        #expect(built.bytes == raw)
        // The TRACE hash includes path_len, so the same trace after another hop is new.
        let unhopped = try Packet.trace(t)
        #expect(built.hash != unhopped.hash)
    }

    @Test func keyDerivation() throws {
        #expect(Vectors.b.publicKey.hex == "4852b69364572b52efa1b6bb3e6d0abed4f389a1cbfbb60a9bba2cce649caf0e")
        #expect(Vectors.a.publicKey.hex == Vectors.aPublic)
    }
}

@Suite struct DerivedVectorTests {
    let a = Vectors.a, b = Vectors.b

    @Test func ecdh() throws {
        #expect(hexOf(try a.sharedSecret(with: b.publicKey).bytes) == Vectors.secretAB)
        #expect(hexOf(try b.sharedSecret(with: a.publicKey).bytes) == Vectors.secretAB)
    }

    @Test func textMessageFloodAndDirect() throws {
        let msg = TextMessage(timestamp: 1_700_000_000, attempt: 0, text: "Hello")
        #expect(hexOf(try msg.encoded()) == "00f153650048656c6c6f")
        let secret = try SharedSecret(hex(Vectors.secretAB))
        let flood = try Packet.textMessage(msg, from: a, to: b.publicKey, secret: secret, route: .flood)
        #expect(hexOf(flood.bytes) == "0900481e192fbe9a7f09431d92c06963d479b2be40e9")
        #expect(flood.hash.hex == "bc5a9c5e9de70640")
        let direct = try Packet.textMessage(msg, from: a, to: b.publicKey, route: .direct([0x5f, 0x33]))
        #expect(hexOf(direct.bytes) == "0a025f33481e192fbe9a7f09431d92c06963d479b2be40e9")
        #expect(direct.hash == flood.hash)
        #expect(msg.ackCode(key: a.publicKey).hex == "918d0c8e")
        var retry = msg
        retry.attempt = 1
        #expect(retry.ackCode(key: a.publicKey).hex == "b28cd4bc")

        // B receives it: dest matches, src 0x1e picks candidate contacts, the MAC picks the secret.
        let d = try flood.peerDatagram()
        #expect(d.destHash == b.publicKey.hashByte && d.srcHash == a.publicKey.hashByte)
        #expect(hexOf(d.mac) == "192f")
        #expect(hexOf(d.ciphertext) == "be9a7f09431d92c06963d479b2be40e9")
        let wrong = try SharedSecret([UInt8](repeating: 7, count: 32))
        let (idx, plain) = try #require(d.decrypt(trying: [wrong, secret]))
        #expect(idx == 1)
        let got = try TextMessage(plaintext: plain)
        #expect(got == msg)
        #expect(got.ackCode(key: a.publicKey).hex == "918d0c8e")
        #expect(d.decrypt(trying: [wrong]) == nil)
    }

    @Test func pathReplyWithAck() throws {
        let ackExtra = hex("918d0c8e00aa")
        let plain = PathPlaintext(pathLength: try PathLength(hashSize: 1, hopCount: 2), path: [0x5f, 0x33], extraType: .ack, extra: ackExtra)
        #expect(hexOf(try plain.encoded()) == "025f3303918d0c8e00aa")
        let p = try Packet.pathReturn(plain, from: b, to: a.publicKey, route: .flood)
        #expect(hexOf(p.bytes) == "21001e484c1fe0b0ca7e5f191937fa25dffabc51e5b1")
        // A decodes it.
        let d = try p.peerDatagram()
        let back = try PathPlaintext(plaintext: d.decrypt(with: a.sharedSecret(with: b.publicKey)))
        #expect(back.path == [0x5f, 0x33])
        #expect(back.pathLength.hopCount == 2)
        #expect(back.extraPayloadType == .ack)
        let ack = try AckPayload(payload: back.extra.prefix(6))
        #expect(ack.code.hex == "918d0c8e")
        #expect(ack.extra == [0x00, 0xaa])
        #expect(TextAck.payload(code: ack.code, attempt: 0, random: 0xaa) == ackExtra)
    }

    @Test func publicGroupTextAndScopedForm() throws {
        let t = GroupText(timestamp: 1_700_000_000, senderName: "Alice", message: "Hi")
        let p = try Packet.groupText(t, channel: .publicChannel)
        #expect(hexOf(p.bytes) == "150011b42da7f1c3ef15b35ecb191c8d35200a1d60")
        #expect(p.hash.hex == "de5e1c79c2743260")
        let test = RegionKey(name: "#test")
        #expect(hexOf(test.key) == "9cd8fcf22a47333b591d96a2b848b73f")
        let scoped = try Packet.groupText(t, channel: .publicChannel, route: .scopedFlood(test, hashSize: 1))
        #expect(scoped.transportCodes == TransportCodes(0xE80C, 0))
        #expect(hexOf(scoped.bytes) == "140ce800000011b42da7f1c3ef15b35ecb191c8d35200a1d60")
        // The hash ignores route and transport codes.
        #expect(scoped.hash == p.hash)
    }
}
