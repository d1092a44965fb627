import Testing
@testable import MeshCompanion

/// Byte-exact command frames, written by hand from the protocol tables (§2.3).
@Suite struct CommandVectorTests {
    static let ts: UInt32 = 1_700_000_000  // 00 f1 53 65 LE
    static let kA = keyA.hex, kB = keyB.hex
    static let publicSecret = hex("8b3387e9c5cdea6ac9e5edbaa115cd72")

    static func vectors() throws -> [(String, EncodedFrame, String)] {
        var c = Contact(publicKey: keyB, type: .chat, flags: 0, name: "bob", lastAdvertTimestamp: ts,
                        latitude: 0, longitude: 0, lastModified: ts + 1)
        try c.setOutPath(PathLength(hopCount: 1)!, [0x5F])
        let contactHex = "09" + kB + "01" + "00" + "01" + "5f" + String(repeating: "00", count: 63)
            + "626f62" + String(repeating: "00", count: 29) + "00f15365" + "00000000" + "00000000" + "01f15365"
        return [
            ("APP_START", try CommandFrame.appStart(appName: "mccli"), "01 03 20 20 20 20 20 20 6D 63 63 6C 69"),
            ("SEND_TXT_MSG", try CommandFrame.sendTextMessage(to: keyB, text: "Hello", timestamp: ts),
             "02 00 00 00f15365 4852b6936457 48656c6c6f"),
            ("SEND_TXT_MSG cli", try CommandFrame.sendTextMessage(to: keyB.prefix(6), text: "ver", timestamp: ts, attempt: 1, type: .cliData),
             "02 01 01 00f15365 4852b6936457 766572"),
            ("SEND_CHANNEL_TXT_MSG", try CommandFrame.sendChannelTextMessage(channel: 0, text: "Hi", timestamp: ts), "03 00 00 00f15365 4869"),
            ("GET_CONTACTS", CommandFrame.getContacts(), "04"),
            ("GET_CONTACTS since", CommandFrame.getContacts(since: 0x0102_0304), "04 04030201"),
            ("GET_DEVICE_TIME", CommandFrame.getDeviceTime(), "05"),
            ("SET_DEVICE_TIME", CommandFrame.setDeviceTime(ts), "06 00f15365"),
            ("SEND_SELF_ADVERT flood", CommandFrame.sendSelfAdvert(flood: true), "07 01"),
            ("SEND_SELF_ADVERT zero", CommandFrame.sendSelfAdvert(flood: false), "07 00"),
            ("SET_ADVERT_NAME", try CommandFrame.setAdvertName("node"), "08 6e6f6465"),
            ("ADD_UPDATE_CONTACT", try CommandFrame.addUpdateContact(c), contactHex),
            ("SYNC_NEXT_MESSAGE", CommandFrame.syncNextMessage(), "0A"),
            ("SET_RADIO_PARAMS", try CommandFrame.setRadioParams(RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)),
             "0B F2440D00 24F40000 08 05"),
            ("SET_RADIO_PARAMS repeat", try CommandFrame.setRadioParams(RadioParams(frequencyKHz: 869_495, bandwidthHz: 250_000, spreadingFactor: 10, codingRate: 5), clientRepeat: true),
             "0B 77440D00 90D00300 0A 05 01"),
            ("SET_RADIO_TX_POWER", try CommandFrame.setRadioTxPower(-9), "0C F7"),
            ("RESET_PATH", CommandFrame.resetPath(keyB), "0D" + kB),
            ("SET_ADVERT_LATLON", try CommandFrame.setAdvertLatLon(latitude: 52_000_000, longitude: -1_500_000), "0E 00751903 A01CE9FF"),
            ("REMOVE_CONTACT", CommandFrame.removeContact(keyB), "0F" + kB),
            ("SHARE_CONTACT", CommandFrame.shareContact(keyB), "10" + kB),
            ("EXPORT_CONTACT self", CommandFrame.exportContact(), "11"),
            ("EXPORT_CONTACT", CommandFrame.exportContact(keyB), "11" + kB),
            ("IMPORT_CONTACT", try CommandFrame.importContact(advertPacket: [UInt8](repeating: 0xAB, count: 100)), "12" + String(repeating: "ab", count: 100)),
            ("REBOOT", CommandFrame.reboot(), "13 7265626f6f74"),
            ("GET_BATT_AND_STORAGE", CommandFrame.getBatteryAndStorage(), "14"),
            ("SET_TUNING_PARAMS", CommandFrame.setTuningParams(TuningParams(rxDelayBaseMilli: 0, airtimeFactorMilli: 1000)), "15 00000000 E8030000"),
            ("DEVICE_QUERY", CommandFrame.deviceQuery(), "16 03"),
            ("EXPORT_PRIVATE_KEY", CommandFrame.exportPrivateKey(), "17"),
            ("IMPORT_PRIVATE_KEY", try CommandFrame.importPrivateKey([UInt8](repeating: 7, count: 64)), "18" + String(repeating: "07", count: 64)),
            ("SEND_RAW_DATA", try CommandFrame.sendRawData(path: [0x5F], payload: [1, 2, 3, 4]), "19 01 5f 01020304"),
            ("SEND_LOGIN", try CommandFrame.sendLogin(keyB, password: "pw"), "1A" + kB + "7077"),
            ("SEND_STATUS_REQ", CommandFrame.sendStatusRequest(keyB), "1B" + kB),
            ("HAS_CONNECTION", CommandFrame.hasConnection(keyB), "1C" + kB),
            ("LOGOUT", CommandFrame.logout(keyB), "1D" + kB),
            ("GET_CONTACT_BY_KEY", CommandFrame.getContactByKey(keyB), "1E" + kB),
            ("GET_CHANNEL", CommandFrame.getChannel(1), "1F 01"),
            ("SET_CHANNEL", try CommandFrame.setChannel(0, name: "Public", secret: publicSecret),
             "20 00 5075626c6963" + String(repeating: "00", count: 26) + "8b3387e9c5cdea6ac9e5edbaa115cd72"),
            ("SIGN_START", CommandFrame.signStart(), "21"),
            ("SIGN_DATA", try CommandFrame.signData([0xDE, 0xAD]), "22 dead"),
            ("SIGN_FINISH", CommandFrame.signFinish(), "23"),
            ("SEND_TRACE_PATH", try CommandFrame.sendTracePath(tag: 0xBD89_4DA2, authCode: 0, flags: 0, hashes: [0xFB]), "24 A24D89BD 00000000 00 FB"),
            ("SET_DEVICE_PIN", try CommandFrame.setDevicePin(123_456), "25 40E20100"),
            ("SET_OTHER_PARAMS", CommandFrame.setOtherParams(manualAddContacts: 0, telemetryModes: TelemetryModes(base: 1, location: 2, environment: 0),
                                                             advertLocationPolicy: 1, multiAcks: 0), "26 00 09 01 00"),
            ("SEND_TELEMETRY_REQ self", CommandFrame.sendTelemetryRequest(), "27 000000"),
            ("SEND_TELEMETRY_REQ", CommandFrame.sendTelemetryRequest(keyB), "27 000000" + kB),
            ("GET_CUSTOM_VARS", CommandFrame.getCustomVars(), "28"),
            ("SET_CUSTOM_VAR", try CommandFrame.setCustomVar(name: "gps", value: "1"), "29 6770733a31"),
            ("GET_ADVERT_PATH", CommandFrame.getAdvertPath(keyB), "2A 00" + kB),
            ("GET_TUNING_PARAMS", CommandFrame.getTuningParams(), "2B"),
            ("SEND_BINARY_REQ", try CommandFrame.sendBinaryRequest(keyB, data: [0x06]), "32" + kB + "06"),
            ("FACTORY_RESET", CommandFrame.factoryReset(), "33 7265736574"),
            ("SEND_PATH_DISCOVERY_REQ", CommandFrame.sendPathDiscoveryRequest(keyB), "34 00" + kB),
            ("SET_FLOOD_SCOPE_KEY clear", try CommandFrame.setFloodScopeKey(.clear), "36 00"),
            ("SET_FLOOD_SCOPE_KEY unscoped", try CommandFrame.setFloodScopeKey(.unscoped), "36 01"),
            ("SET_FLOOD_SCOPE_KEY key", try CommandFrame.setFloodScopeKey(.key(publicSecret)), "36 00 8b3387e9c5cdea6ac9e5edbaa115cd72"),
            ("SEND_CONTROL_DATA", try CommandFrame.sendControlData([0x80, 0x01]), "37 8001"),
            ("GET_STATS", CommandFrame.getStats(.packets), "38 02"),
            ("SEND_ANON_REQ", try CommandFrame.sendAnonRequest(keyB, data: [0x02]), "39" + kB + "02"),
            ("SET_AUTOADD_CONFIG", try CommandFrame.setAutoAddConfig(flags: 0x1F, maxHops: 3), "3A 1F 03"),
            ("GET_AUTOADD_CONFIG", CommandFrame.getAutoAddConfig(), "3B"),
            ("GET_ALLOWED_REPEAT_FREQ", CommandFrame.getAllowedRepeatFrequencies(), "3C"),
            ("SET_PATH_HASH_MODE", try CommandFrame.setPathHashMode(1), "3D 00 01"),
            ("SEND_CHANNEL_DATA flood", try CommandFrame.sendChannelData(channel: 1, dataType: 0xFF00, payload: [0xAA]), "3E 01 FF 00FF aa"),
            ("SEND_CHANNEL_DATA direct", try CommandFrame.sendChannelData(channel: 1, pathLength: PathLength(hopCount: 1, hashSize: 2)!, path: [0x12, 0x34],
                                                                           dataType: 0xFF00, payload: [0xAA]), "3E 01 41 1234 00FF aa"),
            ("SET_DEFAULT_FLOOD_SCOPE", try CommandFrame.setDefaultFloodScope(name: "#test", key: publicSecret),
             "3F 2374657374" + String(repeating: "00", count: 26) + "8b3387e9c5cdea6ac9e5edbaa115cd72"),
            ("SET_DEFAULT_FLOOD_SCOPE clear", try CommandFrame.setDefaultFloodScope(name: nil), "3F"),
            ("GET_DEFAULT_FLOOD_SCOPE", CommandFrame.getDefaultFloodScope(), "40"),
            ("SEND_RAW_PACKET", try CommandFrame.sendRawPacket(priority: 1, packet: hex("260130A24D89BD0000000000FB")), "41 01 260130A24D89BD0000000000FB"),
            ("RUN_CLI_COMMAND (protocol 14)", try CommandFrame.runCLICommand("get name"), "42 676574206e616d65"),
            ("SEND_RAW_DATA (protocol 14, 2-byte hashes)", try CommandFrame.sendRawData(pathLength: PathLength(hopCount: 2, hashSize: 2)!, path: [0x5F, 0x1A, 0x33, 0xB2], payload: [1, 2, 3, 4]),
             "19 42 5f1a33b2 01020304"),
            ("SEND_TXT_MSG CLI command (protocol 14)", try CommandFrame.sendTextMessage(to: KeyPrefix(hex("a1a2a3a4a5a6"))!, text: "ver", timestamp: 1, type: .cliCommand),
             "02 03 00 01000000 a1a2a3a4a5a6 766572"),
        ]
    }

    @Test func byteExact() throws {
        for (name, frame, expected) in try Self.vectors() {
            #expect(frame.bytes == hex(expected), "\(name)")
        }
    }

    @Test func everyCommandCodeHasAVector() throws {
        let codes = Set(try Self.vectors().map { $0.1.code })
        for c in CommandCode.allCases { #expect(codes.contains(c.rawValue), "no vector for \(c)") }
    }

    @Test func everyVectorDecodesOnTheDeviceSide() throws {
        for (name, frame, _) in try Self.vectors() {
            try frame.withUnsafeBytes { raw in
                let cmd = try CompanionCommand.decode(raw)
                #expect(cmd.code == frame.code, "\(name)")
            }
        }
    }

    @Test func deviceSideValues() throws {
        func dec(_ f: EncodedFrame, _ body: (CompanionCommand) throws -> Void) throws {
            try f.withUnsafeBytes { try body(try CompanionCommand.decode($0)) }
        }
        try dec(try CommandFrame.sendTextMessage(to: keyB, text: "Hello", timestamp: 7, attempt: 2)) {
            guard case .sendTextMessage(let m) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(m.text == "Hello" && m.timestamp == 7 && m.attempt == 2 && m.textType == .plain)
            #expect(m.recipientPrefix == keyB.prefix(6))
        }
        try dec(try CommandFrame.appStart(appName: "mccli")) {
            guard case .appStart(let n) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(n) == Array("mccli".utf8))
        }
        try dec(try CommandFrame.setRadioParams(RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5))) {
            guard case .setRadioParams(let p, let r) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(p == RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5) && r == nil)
        }
        var c = Contact(publicKey: keyB, type: .room, flags: 3, name: "room", lastAdvertTimestamp: 9, latitude: -5, longitude: 6, lastModified: 10)
        try c.setOutPath(PathLength(hopCount: 2, hashSize: 3)!, [1, 2, 3, 4, 5, 6])
        try dec(try CommandFrame.addUpdateContact(c)) {
            guard case .addUpdateContact(let r) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(r.contact == c)
        }
        try dec(try CommandFrame.addUpdateContact(c, includeLastModified: false)) {
            guard case .addUpdateContact(let r) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(r.lastModified == nil && r.latitude == -5)
        }
        try dec(try CommandFrame.setChannel(3, name: "#bot", secret: Self.publicSecret)) {
            guard case .setChannel(let s) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.index == 3 && s.name == "#bot" && Array(s.secret) == Self.publicSecret)
        }
        try dec(try CommandFrame.sendChannelData(channel: 1, pathLength: PathLength(hopCount: 1, hashSize: 2)!, path: [0x12, 0x34], dataType: 0xFF00, payload: [0xAA])) {
            guard case .sendChannelData(let d) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(d.path) == [0x12, 0x34] && d.dataType == 0xFF00 && Array(d.payload) == [0xAA] && d.channelIndex == 1)
        }
        try dec(try CommandFrame.sendTracePath(tag: 5, authCode: 6, flags: 1, hashes: [1, 2, 3, 4])) {
            guard case .sendTracePath(let t) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(t.tag == 5 && t.authCode == 6 && t.hashSize == 2 && Array(t.hashes) == [1, 2, 3, 4] && t.isValid)
        }
        try dec(try CommandFrame.sendLogin(keyB, password: "secret")) {
            guard case .sendLogin(let l) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(l.publicKey == keyB && l.text == "secret")
        }
        try dec(CommandFrame.sendTelemetryRequest()) {
            guard case .sendTelemetryRequest(nil) = $0 else { throw Unexpected(what: "\($0)") }
        }
        try dec(try CommandFrame.setDefaultFloodScope(name: "#test", key: Self.publicSecret)) {
            guard case .setDefaultFloodScope(let s?) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(s.name == "#test" && s.isValid && Array(s.key) == Self.publicSecret)
        }
        try dec(try CommandFrame.sendRawPacket(priority: 2, packet: [9, 8, 7])) {
            guard case .sendRawPacket(2, let p) = $0 else { throw Unexpected(what: "\($0)") }
            #expect(Array(p) == [9, 8, 7])
        }
    }

    @Test func firmwareGuardsOnTheDeviceSide() {
        func fails(_ bytes: [UInt8]) -> CompanionDecodeError? {
            bytes.withUnsafeBytes { raw -> CompanionDecodeError? in
                do throws(CompanionDecodeError) { _ = try CompanionCommand.decode(raw); return nil } catch { return error }
            }
        }
        #expect(fails([0x09] + keyB.bytes + [1, 0, 0xFF]) != nil)  // ADD_UPDATE needs ≥ 136
        #expect(fails([0x02, 0, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5]) != nil)  // SEND_TXT_MSG needs ≥ 14
        #expect(fails([0x20, 0] + [UInt8](repeating: 0, count: 64)) == .malformed(code: 0x20, field: .channelSecret))  // 32-byte secret
        #expect(fails([0x13] + Array("reboo".utf8)) != nil)
        #expect(fails([0x16]) != nil)
        #expect(fails([0x27, 0, 0]) != nil)
        #expect(fails([0x37, 0x01]) != nil)
        #expect(fails([0x3E, 1, 0xC1, 0, 0]) == .malformed(code: 0x3E, field: .pathLength))
        #expect(CompanionCommand.radioError(for: .malformed(code: 0x3E, field: .pathLength)) == .illegalArgument)
        #expect(CompanionCommand.radioError(for: .truncated(code: 0x09, length: 5, minimum: 136)) == .unsupportedCommand)
        #expect(fails([0x42, 0x76]) != nil)  // RUN_CLI_COMMAND needs 2 bytes of text (ERR 1)
        [0x2C, 0x35, 0x43, 0x7F].forEach { code in
            [UInt8(code)].withUnsafeBytes { raw in
                guard case .unknown = try? CompanionCommand.decode(raw) else { Issue.record("0x\(code) not unknown"); return }
            }
        }
    }

    @Test func limitsCheckedBeforeSending() {
        let long = String(repeating: "x", count: 161)
        #expect(throws: CompanionEncodeError.tooLong(.text, length: 161, limit: 160)) {
            try CommandFrame.sendTextMessage(to: keyB, text: long, timestamp: 0)
        }
        #expect(throws: CompanionEncodeError.tooLong(.text, length: 159, limit: 158)) {
            try CommandFrame.sendTextMessage(to: keyB, text: String(repeating: "x", count: 159), timestamp: 0, attempt: 4)
        }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendTextMessage(to: keyB, text: "x", timestamp: 0, type: .signedPlain) }
        #expect(throws: CompanionEncodeError.tooLong(.text, length: 161, limit: 160)) {
            try CommandFrame.sendTextMessage(to: keyB, text: long, timestamp: 0, type: .cliData)
        }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendChannelTextMessage(channel: 0, text: long, timestamp: 0) }
        #expect(throws: CompanionEncodeError.tooLong(.name, length: 32, limit: 31)) { try CommandFrame.setAdvertName(String(repeating: "n", count: 32)) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setAdvertName("") }
        #expect(throws: CompanionEncodeError.tooLong(.password, length: 16, limit: 15)) { try CommandFrame.sendLogin(keyB, password: String(repeating: "p", count: 16)) }
        let ok = RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)
        var p = ok; p.frequencyKHz = 149_999
        #expect(throws: CompanionEncodeError.outOfRange(.frequency, value: 149_999, allowed: 150_000...2_500_000)) { try CommandFrame.setRadioParams(p) }
        p = ok; p.frequencyKHz = 2_500_001
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        p = ok; p.bandwidthHz = 6_999
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        p = ok; p.bandwidthHz = 500_001
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        p = ok; p.spreadingFactor = 4
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        p = ok; p.spreadingFactor = 13
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        p = ok; p.codingRate = 9
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioParams(p) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioTxPower(-10) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setRadioTxPower(23, maxDbm: 22) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setDevicePin(99_999) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setDevicePin(1_000_000) }
        #expect((try? CommandFrame.setDevicePin(0)) != nil)
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setAdvertLatLon(latitude: 90_000_001, longitude: 0) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setAdvertLatLon(latitude: 0, longitude: -180_000_001) }
        #expect(throws: CompanionEncodeError.wrongLength(.channelSecret, length: 32, expected: 16)) {
            try CommandFrame.setChannel(0, name: "x", secret: [UInt8](repeating: 1, count: 32))
        }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setChannel(0, name: String(repeating: "c", count: 32), secret: Self.publicSecret) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendAnonRequest(keyB, data: [UInt8](repeating: 0, count: 133)) }
        #expect((try? CommandFrame.sendAnonRequest(keyB, data: [UInt8](repeating: 0, count: 132))) != nil)
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendBinaryRequest(keyB, data: [UInt8](repeating: 0, count: 144)) }
        #expect((try? CommandFrame.sendBinaryRequest(keyB, data: [UInt8](repeating: 0, count: 143)))?.count == 176)
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendTracePath(tag: 0, flags: 1, hashes: [1, 2, 3]) }  // not whole 2-byte hashes
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendTracePath(tag: 0, hashes: [UInt8]()) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendTracePath(tag: 0, hashes: [UInt8](repeating: 1, count: 65)) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendChannelData(channel: 0, dataType: 0, payload: [1]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendChannelData(channel: 0, dataType: 1, payload: [UInt8](repeating: 0, count: 164)) }
        #expect(throws: CompanionEncodeError.self) {
            try CommandFrame.sendChannelData(channel: 0, pathLength: PathLength(rawValue: 0xC1), path: [1, 2, 3, 4], dataType: 1, payload: [1])
        }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendRawData(path: [UInt8](repeating: 1, count: 65), payload: [1, 2, 3, 4]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendRawData(path: [1], payload: [1, 2, 3]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.sendControlData([0x01]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setPathHashMode(3) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setAutoAddConfig(flags: 0, maxHops: 65) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setDefaultFloodScope(name: String(repeating: "s", count: 31), key: Self.publicSecret) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.importPrivateKey([1, 2]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.importContact(advertPacket: [UInt8](repeating: 0, count: 97)) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.setCustomVar(name: "a:b", value: "1") }
        var c = Contact(publicKey: keyB, name: String(repeating: "z", count: 32))
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.addUpdateContact(c) }
        c.name = "z"
        #expect(throws: CompanionEncodeError.self) { try c.setOutPath(PathLength(rawValue: 0xC1), [1, 2, 3, 4]) }
        #expect(throws: CompanionEncodeError.self) { try c.setOutPath(PathLength(hopCount: 2)!, [1]) }
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.raw([UInt8](repeating: 0, count: 177)) }
    }
}
