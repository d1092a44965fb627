import MeshAir
import MeshCompanion
import MeshSession
import Testing
@testable import MeshNode
@testable import MeshSim

/// Companion protocol 14 (the firmware's dev line, "Companion CLI") in the simulator, and protocol 13
/// radios going on as before.
@Suite struct Protocol14Tests {
    /// s0 - s1 (neighbours) on the given protocol, with each other as contacts.
    func pair(protocol version: UInt8) throws -> (SimWorld, FrameApp, FrameApp) {
        let w = try line(repeaters: 0) { $0.companion.protocolVersion = version }
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        #expect(a.contact(w.companions[1].publicKey) != nil && b.contact(w.companions[0].publicKey) != nil)
        return (w, a, b)
    }

    func cli(_ a: FrameApp, _ text: String) -> String? {
        guard let f = a.call(try! CommandFrame.runCLICommand(text)), f.first == ResponseCode.cliReply.rawValue else { return nil }
        return String(decoding: f.dropFirst(), as: UTF8.self)
    }

    func protocolOf(_ a: FrameApp) -> UInt8? {
        a.call(CommandFrame.deviceQuery())?.dropFirst().first
    }

    @Test func deviceInfoReportsTheProtocolAndThirteenStaysTheDefault() throws {
        let (_, a13, _) = try pair(protocol: 13)
        #expect(protocolOf(a13) == 13)
        #expect(CompanionNode.Config().protocolVersion == 13)
        let (_, a14, _) = try pair(protocol: 14)
        #expect(protocolOf(a14) == 14)
    }

    @Test func runCLICommandAnswersAsTheFirmware() throws {
        let (w, a, _) = try pair(protocol: 14)
        let node = w.companions[0]
        #expect(cli(a, "ver") == "\(CompanionNode.firmwareVersion) (Build: \(CompanionNode.buildDate))")
        #expect(cli(a, "board") == CompanionNode.model)
        #expect(cli(a, "get name") == "> \(node.name)")
        #expect(cli(a, "ab|get name") == "ab|> \(node.name)")
        #expect(cli(a, "  zz|nosuch") == "zz|Unknown command")
        #expect(cli(a, "frobnicate") == "Unknown command")
        #expect(cli(a, "set name bad:name") == "Error, bad chars")
        #expect(cli(a, "set name Base") == "OK")
        #expect(node.name == "Base")
        #expect(cli(a, "set pin 42") == "> pin is now 000042")
        #expect(cli(a, "set path.hash.mode 3") == "Error, must be 0,1, or 2")
        #expect(cli(a, "set path.hash.mode 1") == "OK")
        #expect(cli(a, "get path.hash.mode") == "> 1")
        #expect(cli(a, "set rxdelay 21") == "Error, must be 0-20")
        #expect(cli(a, "set af 10") == "ERROR: af must be 0-9")
        #expect(cli(a, "set tz.offset 15") == "Error, must be from -12 to +14")
        // Radio settings: comma-separated, saved for the next boot.
        #expect(cli(a, "set radio 869.525 250 11 5") == "Error, invalid radio params")
        #expect(cli(a, "set radio 869.525,250,11,5") == "OK - reboot to apply")
        #expect(cli(a, "get radio") == "> 869.5250244,250,11,5")
        #expect(node.radio.params.sf != 11)
        // A line shorter than 2 bytes is not a command (the firmware's length check: ERR 1).
        #expect(a.call(try EncodedFrame([0x42, 0x76])) == [0x01, 0x01])
        // The dev line's companion CLI has no `reboot` (v1.17.1: "Unknown command"); CMD_REBOOT
        // reboots, and the saved radio settings apply at the boot.
        #expect(cli(a, "reboot") == "Unknown command" && node.powered)
        a.send(CommandFrame.reboot())
        #expect(!node.powered)
        w.mesh.run(for: 3_000)
        #expect(node.powered && node.radio.params.freqKHz == 869_525 && node.radio.params.sf == 11)
    }

    /// CommonCLI's channel access settings, which the companion CLI shares with the admin CLI:
    /// `int.thresh`, `cad`, `radio.rxgain`, `agc.reset.interval`, `rssi.lbt` and `rssi.lbt.params`.
    @Test func channelAccessSettingsAnswerAsTheFirmware() throws {
        let (w, a, _) = try pair(protocol: 14)
        let node = w.companions[0]
        #expect(cli(a, "get int.thresh") == "> 0")
        #expect(cli(a, "set int.thresh 14") == "OK")
        #expect(cli(a, "get int.thresh") == "> 14")
        #expect(cli(a, "get cad") == "> off" && !node.channelActivityDetection)
        #expect(cli(a, "set cad on") == "OK")
        #expect(cli(a, "get cad") == "> on" && node.channelActivityDetection)
        #expect(cli(a, "get radio.rxgain") == "> on")
        #expect(cli(a, "set radio.rxgain off") == "OK")
        #expect(cli(a, "get radio.rxgain") == "> off" && !node.rxBoostedGain)
        #expect(cli(a, "get radio") != "> off")  // `get radio` is still the radio settings
        #expect(cli(a, "set agc.reset.interval 10") == "OK - interval rounded to 8")
        #expect(cli(a, "get agc.reset.interval") == "> 8")
        #expect(cli(a, "get rssi.lbt") == "> off")
        #expect(cli(a, "set rssi.lbt on") == "OK")
        #expect(cli(a, "get rssi.lbt") == "> on")
        #expect(cli(a, "get rssi.lbt.params") == "> -80,5,0,4000,50")
        #expect(cli(a, "set rssi.lbt.params -90,10,500,3000,100") == "OK")
        #expect(cli(a, "get rssi.lbt.params") == "> -90,10,500,3000,100")
        #expect(cli(a, "set rssi.lbt.params -90,10") == "Error, invalid params")
        #expect(cli(a, "get rssi.lbt.params") == "> -90,10,500,3000,100")
    }

    @Test func protocol13RadiosRefuseTheProtocol14Commands() throws {
        let (w, a, _) = try pair(protocol: 13)
        #expect(a.call(try CommandFrame.runCLICommand("ver")) == [0x01, 0x01])
        #expect(a.call(try CommandFrame.sendTextMessage(to: w.companions[1].publicKey, text: "ver", timestamp: 1, type: .cliCommand)) == [0x01, 0x01])
    }

    /// A text of type 3 from a contact with the remote CLI permission runs on the companion's CLI and
    /// its reply comes back as CLI data; from any other contact it goes to the app as a message.
    @Test func cliCommandToACompanionRunsOnlyWithThePermission() throws {
        let (w, a, b) = try pair(protocol: 14)
        let aKey = w.companions[0].publicKey, bKey = w.companions[1].publicKey
        // Without the flag: b's app gets the command as a message of type 3; a gets no reply.
        let sent = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "get name", timestamp: 1, type: .cliCommand))
        #expect(sent?.first == ResponseCode.sent.rawValue && sent.map { Array($0[2 ..< 6]) } == [0, 0, 0, 0]) // no ACK expected
        #expect(w.mesh.run(until: { b.count(PushCode.messageWaiting.rawValue) > 0 }, limit: 30_000))
        let queued = b.call(CommandFrame.syncNextMessage())!
        #expect(queued.first == 0x07 && queued[8] == TextType.cliCommand.rawValue)
        #expect(String(decoding: queued[13...], as: UTF8.self) == "get name")
        w.mesh.run(for: 5_000)
        #expect(a.count(PushCode.messageWaiting.rawValue) == 0)

        // b gives a the remote CLI permission (contact flag 0x10).
        var c = w.companions[1].contact(key: aKey)!
        c.flags |= ContactFlags.remoteCLI
        #expect(b.call(try CommandFrame.addUpdateContact(c)) == [0x00])
        a.frames.removeAll()
        _ = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "get name", timestamp: 2, type: .cliCommand))
        #expect(w.mesh.run(until: { a.count(PushCode.messageWaiting.rawValue) > 0 }, limit: 30_000))
        let reply = a.call(CommandFrame.syncNextMessage())!
        #expect(reply.first == 0x07 && reply[8] == TextType.cliData.rawValue)
        #expect(String(decoding: reply[13...], as: UTF8.self) == "> \(w.companions[1].name)")
        // Nothing reached b's app this time.
        b.frames.removeAll()
        #expect(b.call(CommandFrame.syncNextMessage()) == [ResponseCode.noMoreMessages.rawValue])
    }

    /// SEND_RAW_DATA: protocol 14 reads the length byte as an encoded path length (2-byte hashes
    /// go through); protocol 13 as a byte count.
    @Test func rawDataPathLengthFollowsTheProtocol() throws {
        for version: UInt8 in [13, 14] {
            let (w, a, _) = try pair(protocol: version)
            var heard: [Packet] = []
            w.mesh.onTransmit = { _, bytes in if let p = try? Packet(bytes: bytes), p.payloadType == .rawCustom { heard.append(p) } }
            let twoBytes = MeshCompanion.PathLength(hopCount: 2, hashSize: 2)!
            let encoded = try CommandFrame.sendRawData(pathLength: twoBytes, path: [0x11, 0x22, 0x33, 0x44], payload: [1, 2, 3, 4])
            let legacy = try CommandFrame.sendRawData(path: [0x11, 0x22], payload: [1, 2, 3, 4])
            if version == 14 {
                #expect(a.call(encoded) == [0x00])
                w.mesh.run(for: 2_000)
                #expect(heard.count == 1 && heard.first?.pathLength.encoded == twoBytes.rawValue && heard.first?.path == [0x11, 0x22, 0x33, 0x44])
                #expect(a.call(try EncodedFrame([0x19, 0xC1, 0x11, 1, 2, 3, 4])) == [0x01, 0x01]) // reserved hash size
                #expect(a.call(try EncodedFrame([0x19, 0x02, 0x11, 0x22, 1, 2, 3])) == [0x01, 0x06]) // no 4-byte payload
            } else {
                #expect(a.call(encoded) == [0x01, 0x01]) // 0x42 as a byte count runs past the frame
                #expect(a.call(legacy) == [0x00])
                w.mesh.run(for: 2_000)
                #expect(heard.count == 1 && heard.first?.pathLength.encoded == 2 && heard.first?.path == [0x11, 0x22])
            }
        }
    }
}
