import Testing
@testable import MeshCompanion

/// Byte-exact radio → app frames written by hand from the tables (§2.4–2.6), and round trips
/// through the decoder.
@Suite struct ResponseVectorTests {
    static let ts: UInt32 = 1_700_000_000
    static let kA = keyA.hex
    static let pA = "1ec77175b091"
    static let secret = hex("8b3387e9c5cdea6ac9e5edbaa115cd72")

    func check(_ f: EncodedFrame, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation,
               _ body: (CompanionFrame) throws -> Void) throws {
        #expect(f.bytes == hex(expected), sourceLocation: sourceLocation)
        try hex(expected).withUnsafeBytes { try body(try CompanionFrame.decode($0)) }
    }

    @Test func simpleResponses() throws {
        try check(ResponseFrame.ok(), "00") { guard case .ok = $0 else { throw Unexpected(what: "\($0)") } }
        try check(ResponseFrame.error(.notFound), "01 02") {
            guard case .error(let e) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(e.code == .notFound)
        }
        try check(ResponseFrame.contactsStart(count: 5), "02 05000000") {
            guard case .contactsStart(5) = $0 else { throw Unexpected(what: "\($0)") }
        }
        try check(ResponseFrame.endOfContacts(lastModified: Self.ts), "04 00f15365") {
            guard case .endOfContacts(Self.ts) = $0 else { throw Unexpected(what: "\($0)") }
        }
        try check(ResponseFrame.sent(SentInfo(isFlood: true, tag: 0x8E0C_8D91, estimatedTimeoutMs: 5000)), "06 01 918d0c8e 88130000") {
            guard case .sent(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s == SentInfo(isFlood: true, tag: 0x8E0C_8D91, estimatedTimeoutMs: 5000))
        }
        try check(ResponseFrame.currentTime(Self.ts), "09 00f15365") { guard case .currentTime(Self.ts) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(ResponseFrame.noMoreMessages(), "0A") { guard case .noMoreMessages = $0 else { throw Unexpected(what: "\($0)") } }
        try check(try ResponseFrame.exportContact(advertPacket: [0x11, 0x00, 0xAA]), "0B 1100aa") {
            guard case .exportContact(let p) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(p) == [0x11, 0x00, 0xAA])
        }
        try check(ResponseFrame.batteryAndStorage(BatteryAndStorage(millivolts: 3600, usedKB: 10, totalKB: 4096)), "0C 100E 0A000000 00100000") {
            guard case .batteryAndStorage(let b) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(b == BatteryAndStorage(millivolts: 3600, usedKB: 10, totalKB: 4096))
        }
        try check(ResponseFrame.batteryAndStorage(BatteryAndStorage(millivolts: 3600, usedKB: nil, totalKB: nil)), "0C 100E") {
            guard case .batteryAndStorage(let b) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(b.usedKB == nil)
        }
        try check(try ResponseFrame.privateKey([UInt8](repeating: 9, count: 64)), "0E" + String(repeating: "09", count: 64)) {
            guard case .privateKey(let k) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(k.count == 64)
        }
        try check(ResponseFrame.disabled(), "0F") { guard case .disabled = $0 else { throw Unexpected(what: "\($0)") } }
        try check(ResponseFrame.signStart(), "13 00 00200000") { guard case .signStart(8192) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(try ResponseFrame.signature([UInt8](repeating: 1, count: 64)), "14" + String(repeating: "01", count: 64)) {
            guard case .signature(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.count == 64)
        }
        try check(try ResponseFrame.customVars("gps:1"), "15 6770733a31") {
            guard case .customVars(let v) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(String(decoding: v, as: UTF8.self) == "gps:1")
        }
        try check(try ResponseFrame.advertPath(receivedTimestamp: Self.ts, pathLength: PathLength(hopCount: 2)!, path: [0x5F, 0x33]), "16 00f15365 02 5f33") {
            guard case .advertPath(let a) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(a.receivedTimestamp == Self.ts && Array(a.path) == [0x5F, 0x33])
        }
        try check(ResponseFrame.tuningParams(TuningParams(rxDelayBaseMilli: 0, airtimeFactorMilli: 1000)), "17 00000000 E8030000") {
            guard case .tuningParams(let t) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(t.airtimeFactorMilli == 1000)
        }
        try check(ResponseFrame.autoAddConfig(AutoAddConfig(flags: 0x1F, maxHops: 3)), "19 1F 03") {
            guard case .autoAddConfig(let a) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(a == AutoAddConfig(flags: 0x1F, maxHops: 3))
        }
        try check(try ResponseFrame.allowedRepeatFrequencies([433_000...433_000, 869_495...869_495]), "1A 689B0600 689B0600 77440D00 77440D00") {
            guard case .allowedRepeatFrequencies(let r) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(r) == [433_000...433_000, 869_495...869_495])
        }
        try check(try ResponseFrame.channelData(snrQuarterDb: 40, channelIndex: 1, pathLength: .unknown, dataType: 0xFF00, data: [0xAA, 0xBB]),
                  "1B 28 0000 01 FF 00FF 02 aabb") {
            guard case .channelData(let d) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(d.snr == 10 && d.channelIndex == 1 && d.pathLength.isUnknown && d.dataType == 0xFF00 && Array(d.data) == [0xAA, 0xBB])
        }
        try check(try ResponseFrame.defaultFloodScope(name: nil), "1C") { guard case .defaultFloodScope(nil) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(try ResponseFrame.cliReply(Array("OK".utf8)), "1D 4f4b") {
            guard case .cliReply(let t) = $0, Array(t) == Array("OK".utf8) else { throw Unexpected(what: "\($0)") }
        }
        try check(try ResponseFrame.defaultFloodScope(name: "#test", key: Self.secret),
                  "1C 2374657374" + String(repeating: "00", count: 26) + "8b3387e9c5cdea6ac9e5edbaa115cd72") {
            guard case .defaultFloodScope(let s?) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.name == "#test" && Array(s.key) == Self.secret)
        }
    }

    @Test func selfAndDeviceInfo() throws {
        let radio = RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)
        let f = try ResponseFrame.selfInfo(txPowerDbm: 20, maxTxPowerDbm: 22, publicKey: keyA, latitude: 52_000_000, longitude: -1_500_000,
                                           multiAcks: 1, advertLocationPolicy: 0, telemetryModes: TelemetryModes(base: 2, location: 1, environment: 0),
                                           manualAddContacts: 1, radio: radio, name: "base")
        try check(f, "05 01 14 16" + Self.kA + "00751903 A01CE9FF 01 00 06 01 F2440D00 24F40000 08 05 62617365") {
            guard case .selfInfo(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.publicKey == keyA && s.name == "base" && s.radio == radio && s.txPowerDbm == 20 && s.maxTxPowerDbm == 22)
            #expect(s.latitude == 52_000_000 && s.longitude == -1_500_000 && s.multiAcks == 1 && s.manualAddContacts == 1)
            #expect(s.telemetryModes == TelemetryModes(base: 2, location: 1, environment: 0))
        }
        let d = try ResponseFrame.deviceInfo(maxContacts: 350, maxChannels: 40, blePin: 123_456, buildDate: "14 Aug 2026",
                                             model: "Heltec V3", version: "v1.17.1", clientRepeat: false, pathHashMode: 1)
        let expected = "0D 0D AF 28 40E20100" + "3134204175672032303236" + "00"
            + "48656c7465632056330000" + String(repeating: "00", count: 29)
            + "76312e31372e31" + String(repeating: "00", count: 13) + "00 01"
        #expect(d.count == 82)
        try check(d, expected) {
            guard case .deviceInfo(let i) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(i.firmwareVersionCode == 13 && i.maxContacts == 350 && i.maxChannels == 40 && i.blePin == 123_456)
            #expect(i.buildDate == "14 Aug 2026" && i.model == "Heltec V3" && i.version == "v1.17.1")
            #expect(i.clientRepeat == false && i.pathHashMode == 1)
        }
        // An older radio (v8) stops after the version string; v1 sends just the code.
        try Array(d.bytes[0..<80]).withUnsafeBytes { raw in
            guard case .deviceInfo(let i) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
            #expect(i.version == "v1.17.1" && i.clientRepeat == nil && i.pathHashMode == nil)
        }
        try ([0x0D, 0x01] as [UInt8]).withUnsafeBytes { raw in
            guard case .deviceInfo(let i) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
            #expect(i.firmwareVersionCode == 1 && i.maxContacts == nil && i.model == nil)
        }
    }

    @Test func messageFrames() throws {
        let pfx = keyA.prefix(6)
        // V3 direct message that arrived direct (path 0xFF), SNR -3 dB.
        try check(try ResponseFrame.contactMessage(snrQuarterDb: -12, senderPrefix: pfx, pathLength: .unknown, senderTimestamp: Self.ts, text: Array("Hello".utf8)),
                  "10 F4 0000 \(Self.pA) FF 00 00f15365 48656c6c6f") {
            guard case .contactMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(m.isV3 && m.snr == -3 && m.senderPrefix == pfx && m.pathLength.isUnknown && m.textType == .plain)
            #expect(m.senderTimestamp == Self.ts && m.text == "Hello" && m.authorPrefix == nil)
        }
        // Legacy direct message, flood over 2 hops.
        try check(try ResponseFrame.contactMessage(v3: false, senderPrefix: pfx, pathLength: PathLength(hopCount: 2)!, senderTimestamp: Self.ts, text: Array("Hi!".utf8)),
                  "07 \(Self.pA) 02 00 00f15365 486921") {
            guard case .contactMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(!m.isV3 && m.snr == nil && m.pathLength.hopCount == 2 && m.text == "Hi!")
        }
        // Room post (signed) with author prefix.
        let author = keyB.prefix(4)
        try check(try ResponseFrame.contactMessage(senderPrefix: pfx, pathLength: .zeroHop, textType: .signedPlain, senderTimestamp: Self.ts,
                                                   authorPrefix: author, text: Array("post".utf8)),
                  "10 00 0000 \(Self.pA) 00 02 00f15365 4852b693 706f7374") {
            guard case .contactMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(m.authorPrefix == author && m.text == "post")
        }
        try check(try ResponseFrame.contactMessage(v3: false, senderPrefix: pfx, pathLength: .zeroHop, textType: .signedPlain, senderTimestamp: 1,
                                                   authorPrefix: author, text: Array("p".utf8)),
                  "07 \(Self.pA) 00 02 01000000 4852b693 70") {
            guard case .contactMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(m.authorPrefix == author && m.text == "p")
        }
        // V3 channel message: "Alice: Hi" on channel 0, 1 hop, SNR 10 dB.
        try check(ResponseFrame.channelMessage(snrQuarterDb: 40, channelIndex: 0, pathLength: PathLength(hopCount: 1)!, timestamp: Self.ts, text: Array("Alice: Hi".utf8)),
                  "11 28 0000 00 01 00 00f15365 416c6963653a204869") {
            guard case .channelMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(m.isV3 && m.snr == 10 && m.channelIndex == 0 && m.pathLength.hopCount == 1 && m.timestamp == Self.ts)
            #expect(m.text == "Alice: Hi" && m.sender == "Alice" && m.message == "Hi")
        }
        try check(ResponseFrame.channelMessage(v3: false, channelIndex: 2, pathLength: .unknown, timestamp: Self.ts, text: Array("no sender".utf8)),
                  "08 02 FF 00 00f15365 6e6f2073656e646572") {
            guard case .channelMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(!m.isV3 && m.channelIndex == 2 && m.sender == nil && m.message == "no sender")
        }
        // Text is cut at 176 bytes, as the firmware does.
        let long = [UInt8](repeating: 0x41, count: 200)
        let cut = try ResponseFrame.contactMessage(senderPrefix: pfx, pathLength: .zeroHop, senderTimestamp: 0, text: long)
        #expect(cut.count == 176)
        // Truncated frames are errors, not traps.
        #expect(throws: CompanionDecodeError.truncated(code: 0x10, length: 15, minimum: 16)) {
            try Array(cut.bytes[0..<15]).withUnsafeBytes { _ = try CompanionFrame.decode($0) }
        }
    }

    @Test func channelInfoWithStaleBytesAfterTheName() throws {
        try check(try ResponseFrame.channelInfo(index: 0, name: "Public", secret: Self.secret),
                  "12 00 5075626c6963" + String(repeating: "00", count: 26) + "8b3387e9c5cdea6ac9e5edbaa115cd72") {
            guard case .channelInfo(let c) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(c.index == 0 && c.name == "Public" && Array(c.secret) == Self.secret && !c.isEmpty)
        }
        // strcpy leaves garbage after the NUL on real radios.
        try hex("12 05 2362 6f74 00 4142 43" + String(repeating: "ee", count: 25) + String(repeating: "00", count: 16)).withUnsafeBytes { raw in
            guard case .channelInfo(let c) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
            #expect(c.name == "#bot" && c.index == 5)
        }
    }

    @Test func stats() throws {
        try check(ResponseFrame.stats(.core(CoreStats(batteryMillivolts: 3600, uptimeSeconds: 60, errorFlags: 0, queueLength: 2))), "18 00 100E 3C000000 0000 02") {
            guard case .stats(.core(let c)) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(c.uptimeSeconds == 60 && c.queueLength == 2)
        }
        try check(ResponseFrame.stats(.radio(RadioStats(noiseFloor: -116, lastRSSI: -60, lastSNRQuarterDb: 40, txAirSeconds: 10, rxAirSeconds: 20))),
                  "18 01 8CFF C4 28 0A000000 14000000") {
            guard case .stats(.radio(let r)) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(r.noiseFloor == -116 && r.lastRSSI == -60 && r.rxAirSeconds == 20)
        }
        let p30 = PacketStats(received: 1, sent: 2, sentFlood: 3, sentDirect: 4, receivedFlood: 5, receivedDirect: 6, receiveErrors: 7)
        try check(ResponseFrame.stats(.packets(p30)), "18 02 01000000 02000000 03000000 04000000 05000000 06000000 07000000") {
            guard case .stats(.packets(let p)) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(p == p30)
        }
        var p26 = p30; p26.receiveErrors = nil
        try check(ResponseFrame.stats(.packets(p26)), "18 02 01000000 02000000 03000000 04000000 05000000 06000000") {
            guard case .stats(.packets(let p)) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(p == p26)
        }
        try hex("18 09 01").withUnsafeBytes { raw in
            guard case .stats(.unknown(type: 9)) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
        }
        #expect(throws: CompanionDecodeError.self) { try hex("18 00 100E").withUnsafeBytes { _ = try CompanionFrame.decode($0) } }
    }

    @Test func pushes() throws {
        let pfx = keyA.prefix(6)
        try check(PushFrame.advert(keyA), "80" + Self.kA) { guard case .advert(keyA) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(PushFrame.pathUpdated(keyA), "81" + Self.kA) { guard case .pathUpdated(keyA) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(PushFrame.sendConfirmed(SendConfirmed(ack: 0x8E0C_8D91, roundTripMs: 123)), "82 918d0c8e 7B000000") {
            guard case .sendConfirmed(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.ack == 0x8E0C_8D91 && s.roundTripMs == 123)
        }
        try check(PushFrame.messageWaiting(), "83") { guard case .messageWaiting = $0 else { throw Unexpected(what: "\($0)") } }
        try check(try PushFrame.rawData(snrQuarterDb: 40, rssi: -60, payload: [1, 2, 3, 4]), "84 28 C4 FF 01020304") {
            guard case .rawData(let r) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(r.rssi == -60 && Array(r.payload) == [1, 2, 3, 4])
        }
        try check(try PushFrame.loginSuccess(LoginSuccess(permissions: 1, prefix: pfx, serverTimestamp: Self.ts, aclPermissions: 3, firmwareLevel: 2)),
                  "85 01 \(Self.pA) 00f15365 03 02") {
            guard case .loginSuccess(let l) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(l.isAdmin && l.prefix == pfx && l.serverTimestamp == Self.ts && l.aclPermissions == 3 && l.firmwareLevel == 2)
        }
        try check(try PushFrame.loginSuccess(LoginSuccess(permissions: 0, prefix: pfx)), "85 00 \(Self.pA)") {
            guard case .loginSuccess(let l) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(!l.isAdmin && l.serverTimestamp == nil)
        }
        try check(try PushFrame.loginFail(pfx), "86 00 \(Self.pA)") { guard case .loginFail(pfx) = $0 else { throw Unexpected(what: "\($0)") } }
        let rs = ServerStats(batteryMillivolts: 4100, txQueueLength: 1, noiseFloor: -110, lastRSSI: -70, packetsReceived: 100, packetsSent: 50,
                             airTimeSeconds: 30, uptimeSeconds: 3600, sentFlood: 20, sentDirect: 30, receivedFlood: 60, receivedDirect: 40,
                             errorEvents: 0, lastSNRQuarterDb: 24, directDuplicates: 2, floodDuplicates: 3, rxAirTimeSeconds: 90, receiveErrors: 4)
        #expect(rs.encoded.count == 56)
        let rsHex = "0410 0100 92FF BAFF 64000000 32000000 1E000000 100E0000 14000000 1E000000 3C000000 28000000 0000 1800 0200 0300 5A000000 04000000"
        try check(try PushFrame.statusResponse(pfx, stats: rs), "87 00 \(Self.pA) " + rsHex) {
            guard case .statusResponse(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.prefix == pfx && s.stats == rs && s.stats?.isRoom == false)
        }
        var room = rs; room.rxAirTimeSeconds = nil; room.receiveErrors = nil; room.postedCount = 7; room.postPushCount = 8
        #expect(room.encoded.count == 52)
        try check(try PushFrame.statusResponse(pfx, stats: room), "87 00 \(Self.pA) " + rsHex.dropLast(18) + "0700 0800") {
            guard case .statusResponse(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.stats == room && s.stats?.isRoom == true)
        }
        try check(try PushFrame.logRxData(snrQuarterDb: 48, rssi: -60, packet: hex("260130A24D89BD0000000000FB")), "88 30 C4 260130A24D89BD0000000000FB") {
            guard case .logRxData(let l) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(l.snr == 12 && l.rssi == -60 && Array(l.packet) == hex("260130A24D89BD0000000000FB"))
        }
        try check(try PushFrame.traceData(tag: 0xBD89_4DA2, authCode: 0, flags: 0, pathHashes: [0xFB], pathSNRs: [0x30], finalSNRQuarterDb: 40),
                  "89 00 01 00 A24D89BD 00000000 FB 30 28") {
            guard case .traceData(let t) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(t.tag == 0xBD89_4DA2 && Array(t.pathHashes) == [0xFB] && Array(t.pathSNRs) == [0x30] && t.finalSNRQuarterDb == 40)
        }
        // 2-byte hashes: 4 hash bytes, 2 SNRs.
        try check(try PushFrame.traceData(tag: 1, authCode: 2, flags: 1, pathHashes: [1, 2, 3, 4], pathSNRs: [5, 6], finalSNRQuarterDb: -4),
                  "89 00 04 01 01000000 02000000 01020304 0506 FC") {
            guard case .traceData(let t) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(t.hashSize == 2 && Array(t.pathSNRs) == [5, 6] && t.finalSNRQuarterDb == -4)
        }
        let c = Contact(publicKey: keyB, type: .sensor, name: "s1", lastAdvertTimestamp: 1)
        let na = try PushFrame.newAdvert(c)
        #expect(na.count == 148 && na.code == 0x8A && na.bytes[35] == 0xFF)
        try na.withUnsafeBytes { raw in
            guard case .newAdvert(let r) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
            #expect(r.contact == c && r.outPath.isEmpty && r.outPathLength.isUnknown)
            // Add it back: same bytes with code 0x09.
            let add = try CommandFrame.addUpdateContact(r)
            #expect(add.bytes == [0x09] + Array(na.bytes[1...]))
        }
        try check(try PushFrame.telemetryResponse(pfx, lpp: hex("01 74 0173 01 67 00FA")), "8B 00 \(Self.pA) 01740173 016700FA") {
            guard case .telemetryResponse(let t) = $0 else { throw Unexpected(what: "\($0)") }
            var r = t.lpp
            #expect(try r.next() == LPPRecord(channel: 1, type: .voltage, value: .scalar(3.71)))
            #expect(try r.next() == LPPRecord(channel: 1, type: .temperature, value: .scalar(25.0)))
            #expect(try r.next() == nil)
        }
        try check(try PushFrame.binaryResponse(tag: 0x0403_0201, data: [0xAA]), "8C 00 01020304 aa") {
            guard case .binaryResponse(let b) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(b.tag == 0x0403_0201 && Array(b.data) == [0xAA])
        }
        try check(try PushFrame.pathDiscoveryResponse(pfx, outPathLength: PathLength(hopCount: 1)!, outPath: [0x5F],
                                                      inPathLength: PathLength(hopCount: 2)!, inPath: [0x33, 0x5F]),
                  "8D 00 \(Self.pA) 01 5f 02 335f") {
            guard case .pathDiscoveryResponse(let p) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(p.prefix == pfx && Array(p.outPath) == [0x5F] && Array(p.inPath) == [0x33, 0x5F])
        }
        try check(try PushFrame.controlData(snrQuarterDb: 40, rssi: -60, pathLength: .zeroHop, payload: [0x92, 0x28]), "8E 28 C4 00 9228") {
            guard case .controlData(let c) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(c.payload) == [0x92, 0x28])
        }
        try check(PushFrame.contactDeleted(keyB), "8F" + keyB.hex) { guard case .contactDeleted(keyB) = $0 else { throw Unexpected(what: "\($0)") } }
        try check(PushFrame.contactsFull(), "90") { guard case .contactsFull = $0 else { throw Unexpected(what: "\($0)") } }
        try hex("9A 0102").withUnsafeBytes { raw in
            guard case .unknown(let r) = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
            #expect(r.code == 0x9A && Array(r.body) == [1, 2])
        }
        try hex("1E").withUnsafeBytes { raw in
            guard case .unknown = try CompanionFrame.decode(raw) else { throw Unexpected(what: "") }
        }
        try hex("1D").withUnsafeBytes { raw in  // protocol 14: an empty CLI reply
            guard case .cliReply(let t) = try CompanionFrame.decode(raw), t.isEmpty else { throw Unexpected(what: "") }
        }
    }

    @Test func everyResponseAndPushCodeDecodes() throws {
        // Minimal valid frames for every code: each must decode to its own code.
        var frames: [EncodedFrame] = [
            ResponseFrame.ok(), ResponseFrame.error(.badState), ResponseFrame.contactsStart(count: 1),
            try ResponseFrame.contact(Contact(publicKey: keyA, name: "a")), ResponseFrame.endOfContacts(lastModified: 0),
            try ResponseFrame.selfInfo(txPowerDbm: 1, maxTxPowerDbm: 2, publicKey: keyA, radio: RadioParams(frequencyKHz: 1, bandwidthHz: 2, spreadingFactor: 7, codingRate: 5), name: ""),
            ResponseFrame.sent(SentInfo(isFlood: false, tag: 1, estimatedTimeoutMs: 2)),
            try ResponseFrame.contactMessage(v3: false, senderPrefix: keyA.prefix(), pathLength: .zeroHop, senderTimestamp: 0, text: [UInt8]()),
            ResponseFrame.channelMessage(v3: false, channelIndex: 0, pathLength: .zeroHop, timestamp: 0, text: [UInt8]()),
            ResponseFrame.currentTime(1), ResponseFrame.noMoreMessages(), try ResponseFrame.exportContact(advertPacket: [0x11]),
            ResponseFrame.batteryAndStorage(BatteryAndStorage(millivolts: 1, usedKB: 2, totalKB: 3)),
            try ResponseFrame.deviceInfo(maxContacts: 100, maxChannels: 8, buildDate: "", model: "", version: ""),
            try ResponseFrame.privateKey([UInt8](repeating: 0, count: 64)), ResponseFrame.disabled(),
            try ResponseFrame.contactMessage(senderPrefix: keyA.prefix(), pathLength: .zeroHop, senderTimestamp: 0, text: [UInt8]()),
            ResponseFrame.channelMessage(channelIndex: 0, pathLength: .zeroHop, timestamp: 0, text: [UInt8]()),
            try ResponseFrame.channelInfo(index: 1, name: "", secret: [UInt8](repeating: 0, count: 16)), ResponseFrame.signStart(),
            try ResponseFrame.signature([UInt8](repeating: 0, count: 64)), try ResponseFrame.customVars(""),
            try ResponseFrame.advertPath(receivedTimestamp: 0, pathLength: .zeroHop, path: [UInt8]()),
            ResponseFrame.tuningParams(TuningParams(rxDelayBaseMilli: 0, airtimeFactorMilli: 0)),
            ResponseFrame.stats(.core(CoreStats(batteryMillivolts: 0, uptimeSeconds: 0, errorFlags: 0, queueLength: 0))),
            ResponseFrame.autoAddConfig(AutoAddConfig(flags: 0, maxHops: 0)), try ResponseFrame.allowedRepeatFrequencies([]),
            try ResponseFrame.channelData(channelIndex: 0, pathLength: .unknown, dataType: 1, data: [UInt8]()),
            try ResponseFrame.defaultFloodScope(name: nil), try ResponseFrame.cliReply(Array("> sim0".utf8)),
        ]
        frames += [
            PushFrame.advert(keyA), PushFrame.pathUpdated(keyA), PushFrame.sendConfirmed(SendConfirmed(ack: 0, roundTripMs: 0)),
            PushFrame.messageWaiting(), try PushFrame.rawData(snrQuarterDb: 0, rssi: 0, payload: [UInt8]()),
            try PushFrame.loginSuccess(LoginSuccess(permissions: 0, prefix: keyA.prefix())), try PushFrame.loginFail(keyA.prefix()),
            try PushFrame.statusResponse(keyA.prefix(), statsBytes: [UInt8]()), try PushFrame.logRxData(snrQuarterDb: 0, rssi: 0, packet: [UInt8]()),
            try PushFrame.traceData(tag: 0, authCode: 0, flags: 0, pathHashes: [UInt8](), pathSNRs: [UInt8](), finalSNRQuarterDb: 0),
            try PushFrame.newAdvert(Contact(publicKey: keyB, name: "b")), try PushFrame.telemetryResponse(keyA.prefix(), lpp: [UInt8]()),
            try PushFrame.binaryResponse(tag: 0, data: [UInt8]()),
            try PushFrame.pathDiscoveryResponse(keyA.prefix(), outPathLength: .zeroHop, outPath: [UInt8](), inPathLength: .zeroHop, inPath: [UInt8]()),
            try PushFrame.controlData(snrQuarterDb: 0, rssi: 0, pathLength: .zeroHop, payload: [UInt8]()),
            PushFrame.contactDeleted(keyA), PushFrame.contactsFull(),
        ]
        let expected = ResponseCode.allCases.map(\.rawValue) + PushCode.allCases.map(\.rawValue)
        #expect(frames.map(\.code) == expected)
        for f in frames {
            try decoded(f) { frame in
                #expect(frame.code == f.code)
                if case .unknown = frame { Issue.record("0x\(f.code) decoded as unknown") }
                // Every strict prefix shorter than the minimum is an error, never a trap.
                touch(frame)
            }
            for n in 0..<f.count {
                Array(f.bytes[0..<n]).withUnsafeBytes { raw in
                    if let g = try? CompanionFrame.decode(raw) { touch(g) }
                }
            }
        }
    }
}
