import MeshCompanion
import MeshOps
import MeshSession
import MeshStore
import Testing
@testable import MeshDaemon

@Suite struct HubTests {
    @Test func listenerSyntax() throws {
        let plain = try HubListener(parsing: "127.0.0.1:5000")
        #expect(plain.address.port == 5000 && !plain.readOnly && plain.allowed == .hubDefault)
        #expect(plain.allowed.description == "read,message,config")
        let v6 = try HubListener(parsing: "[::1]:5001,read-only")
        #expect(v6.address.host == "::1" && v6.readOnly && v6.allowed.description == "read")
        let allow = try HubListener(parsing: "0.0.0.0:5002,allow=admin+secret")
        #expect(allow.allowed == .everything)
        // The older command names still open their class.
        let legacy = try HubListener(parsing: "0.0.0.0:5002,allow=reboot")
        #expect(legacy.allowed.description == "read,message,config,admin")
        let roWidened = try HubListener(parsing: "0.0.0.0:5002,read-only,allow=message")
        #expect(roWidened.allowed.description == "read,message")
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,allow=everything") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,writable") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "localhost") }
    }

    static func text(_ type: TextType) throws -> [UInt8] {
        try CommandFrame.sendTextMessage(to: KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6]), text: "ver", timestamp: 1_700_000_000, type: type).bytes
    }

    @Test func defaultListenerRefusesAdminAndSecretCommands() throws {
        let rw = try HubListener(parsing: "127.0.0.1:5000")
        // Key-equivalent, administrative and raw commands: refused on a default listener.
        for code: CommandCode in [.factoryReset, .exportPrivateKey, .importPrivateKey, .reboot, .signStart, .signData, .signFinish,
                                  .setDevicePin, .sendRawPacket, .sendRawData, .sendLogin, .logout, .sendBinaryRequest] {
            #expect(rw.refusal([code.rawValue, 0, 0, 0]) != nil, "\(code)")
        }
        // RUN_CLI_COMMAND (protocol 14) and codes this build does not know: admin.
        #expect(rw.refusal([0x42] + Array("get name".utf8)) != nil)
        #expect(rw.refusal([0x7F]) != nil)
        // A text message of the CLI type is a remote command.
        #expect(rw.refusal(try Self.text(.cliData)) != nil)
        #expect(rw.refusal(try Self.text(.plain)) == nil)
        for code: CommandCode in [.setAdvertName, .setOtherParams, .setRadioParams, .sendChannelTextMessage, .syncNextMessage, .getContacts] {
            #expect(rw.refusal([code.rawValue, 0, 0, 0]) == nil, "\(code)")
        }
        let opened = try HubListener(parsing: "127.0.0.1:5000,allow=admin")
        #expect(opened.refusal([CommandCode.reboot.rawValue]) == nil)
        #expect(opened.refusal(try Self.text(.cliData)) == nil)
        #expect(opened.refusal([CommandCode.exportPrivateKey.rawValue]) != nil)
        let ro = try HubListener(parsing: "127.0.0.1:5000,read-only")
        #expect(ro.refusal([CommandCode.setAdvertName.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.sendChannelTextMessage.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.syncNextMessage.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.getContacts.rawValue]) == nil)
        #expect(ro.refusal([CommandCode.getBatteryAndStorage.rawValue]) == nil)
    }

    @Test func messagesInTheVersionTheClientAskedFor() throws {
        let peer = KeyPrefix(sixOf: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6])
        let direct = StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: 1_700_000_000,
                                   receivedAt: 1_700_000_005, pathLength: 2, snr: -7, text: Array("hello".utf8))
        let channel = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 3, senderTimestamp: 1_700_000_002,
                                    receivedAt: 1_700_000_005, pathLength: 1, snr: 4, text: Array("bob: hi all".utf8))
        // Legacy frames are MeshCompanion's own legacy encodings.
        let legacyDirect = try ResponseFrame.contactMessage(v3: false, senderPrefix: peer, pathLength: PathLength(rawValue: 2),
                                                            senderTimestamp: 1_700_000_000, text: Array("hello".utf8)).bytes
        let legacyChannel = ResponseFrame.channelMessage(v3: false, channelIndex: 3, pathLength: PathLength(rawValue: 1),
                                                         timestamp: 1_700_000_002, text: Array("bob: hi all".utf8)).bytes
        #expect(Daemon.hubFrame(for: direct, v3: false) == legacyDirect)
        #expect(Daemon.hubFrame(for: channel, v3: false) == legacyChannel)
        #expect(Daemon.hubFrame(for: direct, v3: true) == TunnelQueue.frame(for: direct))
        #expect(Daemon.hubFrame(for: channel, v3: true)?.first == ResponseCode.channelMessage.rawValue)
    }

    @Test func appCursorNames() {
        #expect(HubCursors.name(forApp: "mccli") == "hub-mccli")
        #expect(HubCursors.name(forApp: "Home Assistant") == "hub-home_assistant")
        #expect(HubCursors.name(forApp: "") == "hub-unnamed")
        #expect(HubCursors.name(forApp: String(repeating: "x", count: 200)).utf8.count == 64)
    }
}
