import MeshCompanion
import Testing
@testable import MeshOps
@testable import MeshSession

/// A setting changed through the session (by this shell or a frame forwarded for someone else) is
/// what `selfInfo` / `deviceInfo` say before the OK is reported.
@Suite struct SettingsRefreshTests {
    @Test func aNameChangeReadsSelfInfoAgainBeforeItsOK() throws {
        let h = Harness.ready()
        _ = h.takeSent(); _ = h.takeEvents()
        let frame = try CommandFrame.setAdvertName("new").bytes
        let t = try h.s.submit(frame: frame, expecting: .answering(frame), now: h.now)
        #expect(h.takeSent() == [frame])
        h.feed([0x00])
        // The OK is held: APP_START goes out first.
        #expect(h.takeEvents().isEmpty)
        let sent = h.takeSent()
        #expect(sent.count == 1 && sent[0].first == 0x01)
        h.feed(selfInfoFrame(name: "new"))
        #expect(h.takeEvents() == [.reply(t, .ok)])
        #expect(h.s.selfInfo == selfInfoFrame(name: "new"))
    }

    @Test func radioParametersReadBothFramesAgain() throws {
        let h = Harness.ready()
        _ = h.takeSent(); _ = h.takeEvents()
        let frame = try CommandFrame.setRadioParams(RadioParams(frequencyKHz: 869_525, bandwidthHz: 250_000, spreadingFactor: 11, codingRate: 5)).bytes
        let t = try h.s.submit(frame: frame, expecting: .answering(frame), now: h.now)
        _ = h.takeSent()
        h.feed([0x00])
        #expect(h.takeSent().first?.first == 0x16)
        var di = deviceInfoFrame(); di[3] = 16
        h.feed(di)
        #expect(h.takeEvents().isEmpty)
        #expect(h.takeSent().first?.first == 0x01)
        h.feed(selfInfoFrame(name: "n2"))
        #expect(h.takeEvents() == [.reply(t, .ok)])
        #expect(h.s.deviceInfo == di)
    }

    @Test func aRefusedOrReadOnlyCommandReadsNothing() throws {
        let h = Harness.ready()
        _ = h.takeSent(); _ = h.takeEvents()
        let frame = try CommandFrame.setAdvertName("x").bytes
        let t = try h.s.submit(frame: frame, expecting: .answering(frame), now: h.now)
        _ = h.takeSent()
        h.feed([0x01, 0x06])
        #expect(h.takeEvents() == [.reply(t, .error(6))])
        #expect(h.takeSent().isEmpty)
        let t2 = try h.s.submit(frame: [0x2B], expecting: .answering([0x2B]), now: h.now)
        _ = h.takeSent()
        h.feed([0x00])
        #expect(h.takeEvents() == [.reply(t2, .ok)])
        #expect(h.takeSent().isEmpty)
    }

    /// Self telemetry is answered with a push-coded frame: it completes the command that asked.
    @Test func selfTelemetryIsCompletedByItsPush() throws {
        let h = Harness.ready()
        _ = h.takeSent(); _ = h.takeEvents()
        let frame: [UInt8] = [0x27, 0, 0, 0]
        #expect(Session.Expectation.answering(frame) == .codes(CodeSet(0x8B)))
        let t = try h.s.submit(frame: frame, expecting: .answering(frame), now: h.now)
        _ = h.takeSent()
        let push: [UInt8] = [0x8B, 0, 1, 2, 3, 4, 5, 6, 0x01, 0x74, 0x01, 0x9F]
        h.feed(push)
        #expect(h.takeEvents() == [.reply(t, .frame(push))])
        #expect(!h.s.isBusy)
    }

    @Test func theFirmwaresAnswerToEachCommand() {
        #expect(CommandReply.answering([0x04]) == .contactListing)
        #expect(CommandReply.answering([0x04, 1, 2, 3, 4]) == .contactListing)
        #expect(CommandReply.answering(Array("\u{13}reboot".utf8)) == .none)
        #expect(CommandReply.answering([0x27, 0, 0, 0]) == .push(.telemetryResponse))
        #expect(CommandReply.answering([0x27, 0, 0, 0] + [UInt8](repeating: 7, count: 32)) == .response)
        #expect(CommandReply.answering([0x14]) == .response)
        #expect(CommandReply.answering([0xEE]) == .response)  // unknown: ERR from the firmware
    }
}

/// SELF_INFO and DEVICE_INFO are decoded once, when they arrive, into owned values.
@Suite struct RadioSnapshotTests {
    @Test func theSessionKeepsDecodedCopies() throws {
        let h = Harness.ready()
        let s = try #require(h.s.radioSelf)
        #expect(s.name == "node")
        #expect(s.publicKey.bytes == keyA)
        #expect(s.radio == RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5))
        #expect(s.txPowerDbm == 20 && s.maxTxPowerDbm == 22)
        let d = try #require(h.s.radioDevice)
        #expect(d.firmwareVersionCode == 13 && d.maxContacts == 100 && d.maxChannels == 40)
        #expect(d.model == "Test Board" && d.version == "v1.17.1")
        #expect(d.clientRepeat == false && d.pathHashMode == 0)
        // A name with a NUL after it (padding) stops at the NUL.
        #expect(RadioSelf(frame: selfInfoFrame(name: "ab\0\0"))?.name == "ab")
        #expect(RadioSelf(frame: [0x05, 1, 2]) == nil)
        #expect(RadioDevice(frame: [0x00]) == nil)
    }

    @Test func infoFieldsFromTheDecodedCopies() throws {
        let v = try #require(RadioInfo.value(selfInfo: selfInfoFrame(name: "x"), deviceInfo: deviceInfoFrame()))
        #expect(v["name"] == .string("x"))
        #expect(v["frequency_mhz"] == .double(869.618))
        #expect(v["bandwidth_khz"] == .double(62.5))
        #expect(v["tx_power_dbm"] == .integer(20))
        #expect(v["max_channels"] == .integer(40))
        #expect(v["model"] == .string("Test Board"))
        #expect(RadioInfo.value(selfInfo: [0x05], deviceInfo: []) == nil)
    }
}
