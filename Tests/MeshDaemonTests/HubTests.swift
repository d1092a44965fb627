import MeshCompanion
import MeshSession
import MeshStore
import Testing
@testable import MeshDaemon

@Suite struct HubTests {
    @Test func listenerSyntax() throws {
        let plain = try HubListener(parsing: "127.0.0.1:5000")
        #expect(plain.address.port == 5000 && !plain.readOnly && plain.allowed.isEmpty)
        let v6 = try HubListener(parsing: "[::1]:5001,read-only")
        #expect(v6.address.host == "::1" && v6.readOnly)
        let allow = try HubListener(parsing: "0.0.0.0:5002,allow=reboot+radio-params")
        #expect(allow.allowed == ["reboot", "radio-params"])
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,allow=everything") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,writable") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "localhost") }
    }

    @Test func policyDeniesDangerousCommandsByDefaultAndWritesOnReadOnly() throws {
        let rw = try HubListener(parsing: "127.0.0.1:5000")
        for code: CommandCode in [.factoryReset, .exportPrivateKey, .importPrivateKey, .setRadioParams, .setTuningParams, .setRadioTxPower, .reboot] {
            #expect(rw.refusal(code.rawValue) != nil)
        }
        #expect(rw.refusal(CommandCode.sendTextMessage.rawValue) == nil)
        #expect(rw.refusal(CommandCode.setAdvertName.rawValue) == nil)
        let opened = try HubListener(parsing: "127.0.0.1:5000,allow=reboot")
        #expect(opened.refusal(CommandCode.reboot.rawValue) == nil)
        #expect(opened.refusal(CommandCode.factoryReset.rawValue) != nil)
        let ro = try HubListener(parsing: "127.0.0.1:5000,read-only")
        #expect(ro.refusal(CommandCode.setAdvertName.rawValue) != nil)
        #expect(ro.refusal(CommandCode.sendChannelTextMessage.rawValue) != nil)
        #expect(ro.refusal(CommandCode.getContacts.rawValue) == nil)
        #expect(ro.refusal(CommandCode.syncNextMessage.rawValue) == nil)
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
