import MeshCompanion
import Testing
@testable import MeshAir

@Suite struct PlaintextTests {
    @Test func textMessageExtendedAttempt() throws {
        let msg = TextMessage(timestamp: 1_700_000_000, attempt: 5, text: "Hello")
        let plain = try msg.encoded()
        // flags carry attempt & 3, then NUL and the full attempt after the text.
        #expect(hexOf(plain) == "00f153650148656c6c6f0005")
        let secret = try SharedSecret(hex(Vectors.secretAB))
        let decrypted = try secret.decrypt(secret.encrypt(plain))
        let back = try TextMessage(plaintext: decrypted)
        #expect(back.attempt == 5)
        #expect(back.string == "Hello")
        // The ACK code covers attempt & 3 only.
        var one = msg
        one.attempt = 1
        #expect(msg.ackCode(key: Vectors.a.publicKey) == one.ackCode(key: Vectors.a.publicKey))
        // The receiver's 6-byte ACK carries the extended attempt in byte 4.
        #expect(TextAck.payload(code: msg.ackCode(key: Vectors.a.publicKey), attempt: 5, random: 9).suffix(2) == [5, 9])
    }

    @Test func textLengthLimits() throws {
        let long = String(repeating: "x", count: 160)
        #expect(try TextMessage(timestamp: 1, text: long).encoded().count == 165)
        #expect(throws: AirError.tooLong) { try TextMessage(timestamp: 1, text: long + "y").encoded() }
        #expect(throws: AirError.tooLong) { try TextMessage(timestamp: 1, attempt: 4, text: String(repeating: "x", count: 159)).encoded() }
        #expect(try TextMessage(timestamp: 1, attempt: 4, text: String(repeating: "x", count: 158)).encoded().count == 165)
        // 165-byte plaintext still fits a datagram: 165 + 2 + 15 = 182 <= 184.
        let p = try Packet.textMessage(TextMessage(timestamp: 1, text: long), from: Vectors.a, to: Vectors.b.publicKey,
                                       secret: SharedSecret(hex(Vectors.secretAB)), route: .flood)
        #expect(p.payloadCount == 2 + 2 + 176)
    }

    @Test func signedRoomTextAck() throws {
        // A room server posts a signed message to member B, authored by A.
        let author = Array(Vectors.a.publicKey.bytes.prefix(4))
        let msg = TextMessage(timestamp: 1_700_000_100, type: .signedPlain, authorPrefix: author, text: "post")
        let plain = try msg.encoded()
        #expect(plain[4] == 2 << 2)
        #expect(Array(plain[5 ..< 9]) == author)
        let back = try TextMessage(plaintext: plain + [0, 0, 0])
        #expect(back.type == .signedPlain)
        #expect(back.authorPrefix == author)
        #expect(back.string == "post")
        // ACK = SHA256(ts || flags || author || text || RECEIVER key)[0..4]
        let expected = TextAck.signedCode(timestamp: 1_700_000_100, attempt: 0, authorPrefix: author, text: Array("post".utf8),
                                          receiver: Vectors.b.publicKey)
        #expect(back.ackCode(key: Vectors.b.publicKey) == expected)
        #expect(expected != TextAck.code(timestamp: 1_700_000_100, txtType: 2, attempt: 0, text: Array("post".utf8), sender: Vectors.b.publicKey))
    }

    @Test func cliText() throws {
        let msg = TextMessage(timestamp: 7, type: .cliData, text: "ver")
        let back = try TextMessage(plaintext: msg.encoded())
        #expect(back.type == .cliData && back.string == "ver" && back.authorPrefix == nil)
    }

    @Test func malformedPlaintexts() {
        #expect(throws: AirError.truncated) { try TextMessage(plaintext: [1, 2, 3, 4, 0]) }
        #expect(throws: AirError.truncated) { try TextMessage(plaintext: [1, 2, 3, 4, 8, 1, 2]) } // signed without prefix
        #expect(throws: AirError.truncated) { try RequestPlaintext(plaintext: [1, 2, 3, 4]) }
        #expect(throws: AirError.truncated) { try ResponsePlaintext(plaintext: [1, 2, 3]) }
        #expect(throws: AirError.reservedHashSize) { try PathPlaintext(plaintext: [0xC1, 1, 2]) }
        #expect(throws: AirError.truncated) { try PathPlaintext(plaintext: [0x02, 1, 2]) }
        #expect(throws: AirError.invalidPath) { try PathPlaintext(plaintext: [0x7F] + [UInt8](repeating: 0, count: 150)) }
        #expect(throws: AirError.truncated) { try GroupText(plaintext: [1, 2, 3, 4]) }
        #expect(throws: AirError.truncated) { try GroupData(plaintext: [1, 0, 5, 1, 2]) }
        #expect(throws: AirError.truncated) { try LoginRequest(plaintext: [1, 2, 3, 4, 5], room: true) }
        #expect(throws: AirError.truncated) { try LoginResponse(plaintext: [UInt8](repeating: 0, count: 11)) }
    }

    @Test func requestAndResponse() throws {
        let r = RequestPlaintext(tag: 0x6553_F100, requestType: 0x01, random: [9, 8, 7, 6])
        #expect(hexOf(r.encoded) == "00f15365" + "01" + "00000000" + "09080706")
        let back = try RequestPlaintext(plaintext: r.encoded + [0, 0, 0])
        #expect(back.tag == r.tag && back.requestType == 1)
        let resp = ResponsePlaintext(tag: r.tag, body: [1, 2, 3])
        #expect(try ResponsePlaintext(plaintext: resp.encoded) == resp)
        // REQ datagram round trip through packets.
        let secret = try Vectors.a.sharedSecret(with: Vectors.b.publicKey)
        let p = try Packet.peerDatagram(.req, plaintext: r.encoded, from: Vectors.a, to: Vectors.b.publicKey, secret: secret, route: .flood)
        #expect(p.payloadType == .req)
        let got = try RequestPlaintext(plaintext: p.peerDatagram().decrypt(with: secret))
        #expect(got.tag == r.tag && got.body.prefix(9) == r.body[...])
        #expect(throws: AirError.invalidField) {
            try Packet.peerDatagram(.ack, plaintext: [1], from: Vectors.a, to: Vectors.b.publicKey, secret: secret, route: .flood)
        }
        #expect(throws: AirError.tooLong) {
            try Packet.peerDatagram(.req, plaintext: [UInt8](repeating: 1, count: 168), from: Vectors.a, to: Vectors.b.publicKey,
                                    secret: secret, route: .flood)
        }
    }

    @Test func pathWithoutExtra() throws {
        let plain = PathPlaintext(pathLength: try PathLength(hashSize: 2, hopCount: 1), path: [0xAB, 0xCD], random: [1, 2, 3, 4])
        #expect(hexOf(try plain.encoded()) == "41abcdff01020304")
        let back = try PathPlaintext(plaintext: plain.encoded() + [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(back.extraType == 0x0F)
        #expect(back.extraPayloadType == nil)
        #expect(back.path == [0xAB, 0xCD])
        let withResponse = PathPlaintext(pathLength: try PathLength(encoded: 0), path: [], extraType: .response, extra: [1, 2, 3, 4, 5])
        #expect(try PathPlaintext(plaintext: withResponse.encoded()).extraPayloadType == .response)
        #expect(throws: AirError.tooLong) {
            try PathPlaintext(pathLength: PathLength(hashSize: 1, hopCount: 63), path: [UInt8](repeating: 1, count: 63),
                              extraType: .response, extra: [UInt8](repeating: 0, count: 100)).encoded()
        }
    }

    @Test func groupTextTruncationAndData() throws {
        let t = GroupText(timestamp: 5, senderName: "Bob", message: String(repeating: "z", count: 200))
        #expect(t.text.count == 160)
        #expect(t.senderName == "Bob")
        let p = try Packet.groupText(t, channel: ChannelSecret(hashtag: "#test"))
        #expect(p.payloadCount <= 184)
        let d = GroupData(dataType: 0xFFFF, data: [1, 2, 3])
        #expect(hexOf(try d.encoded()) == "ffff03010203")
        let pd = try Packet.groupData(d, channel: .publicChannel)
        #expect(pd.payloadType == .grpData)
        let back = try GroupData(plaintext: pd.groupDatagram().decrypt(with: .publicChannel))
        #expect(back == d)
        #expect(throws: AirError.tooLong) { try GroupData(dataType: 1, data: [UInt8](repeating: 0, count: 166)).encoded() }
        #expect(try Packet.groupData(GroupData(dataType: 1, data: [UInt8](repeating: 0, count: 165)), channel: .publicChannel).payloadCount == 1 + 2 + 176)
        // A channel with the same hash byte but another key does not decrypt.
        let g = try p.groupDatagram()
        #expect(g.decrypt(trying: [ChannelSecret.publicChannel]) == nil)
        #expect(throws: AirError.macMismatch) { try g.decrypt(with: .publicChannel) }
    }

    @Test func loginPlaintexts() throws {
        let rep = LoginRequest(timestamp: 100, password: "password-longer-than-15")
        #expect(rep.encoded.count == 4 + 15)
        #expect(try LoginRequest(plaintext: rep.encoded + [0, 0], room: false).passwordString == "password-longer")
        let room = LoginRequest(timestamp: 100, syncSince: 50, password: "hello")
        #expect(hexOf(room.encoded) == "64000000" + "32000000" + "68656c6c6f")
        let back = try LoginRequest(plaintext: room.encoded + [0, 0, 0], room: true)
        #expect(back.syncSince == 50 && back.passwordString == "hello")
        let blank = LoginRequest(timestamp: 1, password: "")
        #expect(try LoginRequest(plaintext: blank.encoded, room: false).password.isEmpty)

        let reply = LoginResponse(serverTime: 1_700_000_000, adminFlag: 1, permissions: 3, random: [1, 2, 3, 4])
        #expect(hexOf(reply.encoded) == "00f15365" + "00" + "00" + "01" + "03" + "01020304" + "02")
        #expect(reply.encoded.count == 13)
        #expect(try LoginResponse(plaintext: reply.encoded + [0, 0, 0]) == reply)

        // Anonymous login: A -> B over ANON_REQ, B derives the secret from the embedded key.
        let p = try Packet.anonRequest(plaintext: room.encoded, from: Vectors.a, to: Vectors.b.publicKey, route: .flood)
        #expect(p.payloadType == .anonReq)
        let req = try p.anonRequest()
        #expect(req.destHash == Vectors.b.publicKey.hashByte)
        #expect(req.sender == Vectors.a.publicKey)
        let (secret, plain) = try req.decrypt(recipient: Vectors.b)
        #expect(hexOf(secret.bytes) == Vectors.secretAB)
        #expect(try LoginRequest(plaintext: plain, room: true).passwordString == "hello")
    }
}

@Suite struct PayloadLayoutTests {
    @Test func advertBuildAndNameCut() throws {
        var rng = SplitMix(seed: 3)
        let id = LocalIdentity.generate(using: &rng)
        // 23 bytes max with a location: the name is cut at a UTF-8 boundary.
        let name = "Ünïcödé-Repeater-Name-👾👾"
        let data = AdvertData(type: .repeater, name: name, latitude: 47.543968, longitude: -122.108616)
        let enc = data.encoded
        #expect(enc.count <= 32)
        #expect(enc[0] == 0x92)
        let parsed = try AdvertData(bytes: enc)
        #expect(parsed.name.map { name.hasPrefix($0) } == true)
        #expect(parsed.nameBytes.count <= 23)
        #expect(String(validating: parsed.nameBytes, as: UTF8.self) != nil)
        #expect(parsed.latitudeE6 == 47_543_968 && parsed.longitudeE6 == -122_108_616)

        let p = try Packet.advert(identity: id, timestamp: 1_700_000_000, appData: enc, route: .zeroHop)
        #expect(p.routeType == .direct && p.pathLength.hopCount == 0)
        let a = try p.advert()
        #expect(a.isValid)
        #expect(a.publicKey == id.publicKey)
        #expect(try a.data().type == .repeater)

        // Feature words, chat type, no location.
        let chat = AdvertData(type: .chat, name: "n", feat1: 0x1234, feat2: 0)
        #expect(hexOf(chat.encoded) == "a1" + "3412" + "6e")
        let cp = try AdvertData(bytes: chat.encoded)
        #expect(cp.feat1 == 0x1234 && cp.feat2 == nil && cp.name == "n")
        #expect(hexOf(AdvertData(type: .sensor).encoded) == "04")
        #expect(try AdvertData(bytes: [0x04]).name == nil)
        #expect(throws: AirError.tooLong) { try Advert(identity: id, timestamp: 1, appData: [UInt8](repeating: 0x41, count: 33)) }
        #expect(throws: AirError.truncated) { try AdvertData(bytes: [0x91, 1, 2, 3]) }
        #expect(throws: AirError.truncated) { try AdvertData(bytes: []) }
        #expect(throws: AirError.truncated) { try Advert(payload: [UInt8](repeating: 1, count: 99)) }
    }

    @Test func advertWithImportedKeyVerifies() throws {
        let appData = AdvertData(type: .chat, name: "A").encoded
        let p = try Packet.advert(identity: Vectors.a, timestamp: 1_700_000_000, appData: appData, route: .flood)
        #expect(try p.advert().isValid)
    }

    @Test func advertAppDataCappedBeforeVerify() throws {
        var rng = SplitMix(seed: 4)
        let id = LocalIdentity.generate(using: &rng)
        let appData = [UInt8](repeating: 0x81, count: 32)
        var a = try Advert(identity: id, timestamp: 9, appData: appData)
        a.appData += [0xEE, 0xEE]   // trailing bytes beyond 32 are ignored by receivers
        #expect(a.isValid)
        #expect(a.cappedAppData == appData)
    }

    @Test func ackAndMultipart() throws {
        let code = try AckCode(hex("918d0c8e"))
        #expect(code.value == 0x8e0c8d91)
        let p = try Packet.ack(code, extra: [0, 0xaa], route: .direct([0x5f]))
        #expect(hexOf(p.bytes) == "0e015f918d0c8e00aa")
        #expect(try p.ack().code == code)
        #expect(throws: AirError.truncated) { try AckPayload(payload: [1, 2, 3]) }
        let m = try Packet.multipartAck(code, remaining: 1, route: .flood)
        #expect(hexOf(m.bytes) == "2900" + "13" + "918d0c8e")
        let mp = try m.multipart()
        #expect(mp.remaining == 1 && mp.innerType == .ack && mp.inner == code.bytes)
        #expect(throws: AirError.truncated) { try MultipartPayload(payload: []) }
    }

    @Test func traceRelaySteps() throws {
        // Route out and back: r1, r2, r1 with 2-byte hashes (flags 1).
        let t = TracePayload(tag: 0x11223344, authCode: 7, flags: 1, hashes: hex("aaaabbbbaaaa"))
        #expect(t.hashSize == 2)
        #expect(t.hopHashes.map { hexOf($0) } == ["aaaa", "bbbb", "aaaa"])
        var p = try Packet.trace(t)
        var seen = Set<PacketHash>()
        for (i, snr) in [Int8(40), -12, 8].enumerated() {
            let next = try #require(try p.trace().nextHash(afterSNRCount: p.pathLength.hopCount))
            #expect(hexOf(next) == hexOf(t.hopHashes[i]))
            #expect(seen.insert(p.hash).inserted)
            try p.appendTraceSNR(snr)
        }
        #expect(try p.trace().nextHash(afterSNRCount: p.pathLength.hopCount) == nil)
        #expect(p.traceSNRs == [10, -3, 2])
        #expect(throws: AirError.truncated) { try TracePayload(payload: [UInt8](repeating: 0, count: 8)) }
        var notTrace = try Packet.ack(AckCode(value: 1), route: .flood)
        #expect(throws: AirError.invalidField) { try notTrace.appendTraceSNR(1) }
    }

    @Test func controlDiscover() throws {
        let req = ControlPayload.discoverRequest(prefixOnly: true, typeFilter: 1 << 2, tag: 0xDEADBEEF, since: 0)
        #expect(hexOf(req.encoded) == "81" + "04" + "efbeadde" + "00000000")
        #expect(try ControlPayload(payload: req.encoded) == req)
        #expect(try ControlPayload(payload: hex("8004efbeadde")) == .discoverRequest(prefixOnly: false, typeFilter: 4, tag: 0xDEADBEEF, since: nil))
        let key = Array(Vectors.b.publicKey.bytes.prefix(8))
        let resp = ControlPayload.discoverResponse(nodeType: .repeater, snrQuarterDb: -20, tag: 0xDEADBEEF, publicKey: key)
        #expect(hexOf(resp.encoded.prefix(6)) == "92ecefbeadde")
        let p = try Packet.control(resp)
        #expect(p.routeType == .direct && p.payloadType == .control)
        #expect(try p.control() == resp)
        #expect(try ControlPayload(payload: [0x30, 1]) == .other(flags: 0x30, data: [1]))
        #expect(throws: AirError.truncated) { try ControlPayload(payload: [0x80, 1, 2]) }
        #expect(throws: AirError.truncated) { try ControlPayload(payload: []) }
    }

    @Test func rawCustomAndWrongTypeAccess() throws {
        let p = try Packet.rawCustom([1, 2, 3], path: [9])
        #expect(hexOf(p.bytes) == "3e0109010203")
        #expect(throws: AirError.invalidField) { try p.peerDatagram() }
        #expect(throws: AirError.invalidField) { try p.advert() }
        #expect(throws: AirError.invalidField) { try p.groupDatagram() }
    }

    @Test func malformedDatagrams() throws {
        #expect(throws: AirError.truncated) { try PeerDatagram(payload: [1, 2, 3, 4]) }
        #expect(throws: AirError.truncated) { try GroupDatagram(payload: [1, 2, 3]) }
        #expect(throws: AirError.truncated) { try AnonRequest(payload: [UInt8](repeating: 1, count: 35)) }
        // Fuzz every payload decoder: never traps.
        var rng = SplitMix(seed: 11)
        for _ in 0 ..< 3000 {
            let n = Int.random(in: 0 ... 190, using: &rng)
            let b = (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            _ = try? PeerDatagram(payload: b)
            _ = try? GroupDatagram(payload: b)
            _ = try? AnonRequest(payload: b)
            _ = try? AckPayload(payload: b)
            _ = try? Advert(payload: b)
            _ = try? AdvertData(bytes: b)
            _ = try? TracePayload(payload: b).hopHashes
            _ = try? MultipartPayload(payload: b)
            _ = try? ControlPayload(payload: b)
            _ = try? TextMessage(plaintext: b)
            _ = try? PathPlaintext(plaintext: b)
            _ = try? GroupText(plaintext: b).message
            _ = try? GroupData(plaintext: b)
            _ = try? LoginRequest(plaintext: b, room: true)
            _ = try? LoginResponse(plaintext: b)
            _ = try? SharedSecret(hex(Vectors.secretAB)).decrypt(b)
        }
    }
}
