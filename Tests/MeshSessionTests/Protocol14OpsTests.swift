import Glibc
import MeshCompanion
@testable import MeshDaemonClient
import Testing
@testable import MeshOps
@testable import MeshSession

/// The operations that depend on the radio's companion protocol (13: firmware v1.17.1; 14: its dev
/// line), and the settings and status fields around them, against a scripted radio.
@Suite struct Protocol14OpsTests {
    /// A radio reporting `version`, whose contacts are "rpt" (keyA, a repeater) and "bob" (keyB, a companion).
    func connected(protocol version: UInt8) throws -> (Radio, ScriptedRadio, Executor) {
        let (radio, peer) = makePair(oneShot: true)
        var info = deviceInfoFrame()
        info[1] = version
        peer.answers[0x16] = [info]
        try radio.connect(timeoutMilliseconds: 2_000)
        var rpt = contactFrame(key: keyA, name: "rpt", lastmod: 1)
        rpt[33] = 2
        let bob = contactFrame(key: keyB, name: "bob", lastmod: 2)
        peer.answers[0x04] = [[0x02] + le32(2), rpt, bob, [0x04] + le32(2)]
        return (radio, peer, Executor(radio: radio, timeout: 500))
    }

    func close(_ radio: Radio, _ peer: ScriptedRadio) {
        radio.loop.unregister(fd: peer.fd)
        Glibc.close(peer.fd)
    }

    func sent(_ peer: ScriptedRadio, _ code: UInt8) -> [[UInt8]] { peer.received.filter { $0.first == code } }

    @Test func cmdToACompanionSendsTextType3OnProtocol14AndTheReplyIsMatched() throws {
        let (radio, peer, exec) = try connected(protocol: 14)
        defer { close(radio, peer) }
        radio.onEvent = { if case .message(let m) = $0 { exec.collect(m) } }
        let reply = try ResponseFrame.contactMessage(senderPrefix: KeyPrefix(Array(keyB.prefix(6)))!, pathLength: PathLength(rawValue: 0),
                                                     textType: .cliData, senderTimestamp: 1_700_000_000, text: Array("> bob".utf8)).bytes
        var queue = [reply]
        peer.respond = { f in
            switch f.first {
            case 0x02: return [[0x06, 0] + le32(0) + le32(100), [0x83]]
            case 0x0A: return queue.isEmpty ? [[0x0A]] : [queue.removeFirst()]
            default: return nil
            }
        }
        let out = try exec.execute(.command("bob", text: "get name"))
        #expect(out.error == nil)
        #expect(out.value["reply"] == .string("> bob"))
        let f = try #require(sent(peer, 0x02).last)
        #expect(f[1] == TextType.cliCommand.rawValue)
        #expect(String(decoding: f[13...], as: UTF8.self) == "get name")
        // A repeater still gets text type 1.
        queue = [try ResponseFrame.contactMessage(senderPrefix: KeyPrefix(Array(keyA.prefix(6)))!, pathLength: PathLength(rawValue: 0),
                                                  textType: .cliData, senderTimestamp: 1_700_000_000, text: Array("v1".utf8)).bytes]
        _ = try exec.execute(.command("rpt", text: "ver"))
        #expect(sent(peer, 0x02).last?[1] == TextType.cliData.rawValue)
    }

    @Test func cmdToACompanionIsRefusedBelowProtocol14() throws {
        let (radio, peer, exec) = try connected(protocol: 13)
        defer { close(radio, peer) }
        do { _ = try exec.execute(.command("bob", text: "ver")); Issue.record("expected a refusal") } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.contains("protocol 14") && error.description.hasSuffix("."))
        }
        #expect(sent(peer, 0x02).isEmpty)
    }

    @Test func permissionsSetTheRemoteCLIBitAndKeepTheOldNames() throws {
        let (radio, peer, exec) = try connected(protocol: 14)
        defer { close(radio, peer) }
        peer.answers[0x09] = [[0x00]]
        let v = try exec.execute(.contactPermissions("bob", grant: "base,cli")).value
        #expect(v["cli"] == .bool(true) && v["base"] == .bool(true))
        #expect(sent(peer, 0x09).last?[34] == ContactFlags.telemetryBase | ContactFlags.remoteCLI)
        _ = try exec.execute(.contactPermissions("bob", grant: "all"))
        #expect(sent(peer, 0x09).last?[34] == ContactFlags.telemetry)
        let (radio13, peer13, exec13) = try connected(protocol: 13)
        defer { close(radio13, peer13) }
        do { _ = try exec13.execute(.contactPermissions("bob", grant: "cli")); Issue.record("expected a refusal") } catch {
            #expect(error.exitCode == 2)
        }
    }

    @Test func cliUsesRunCLICommandAndItsReply() throws {
        let (radio, peer, exec) = try connected(protocol: 14)
        defer { close(radio, peer) }
        peer.answers[0x42] = [[0x1D] + Array("> sim0".utf8)]
        #expect(try exec.execute(.localCommand("get name")).value["reply"] == .string("> sim0"))
        #expect(sent(peer, 0x42).last == [0x42] + Array("get name".utf8))
    }

    @Test func rawDataEncodesThePathLengthOnProtocol14() throws {
        let (radio, peer, exec) = try connected(protocol: 14)
        defer { close(radio, peer) }
        peer.answers[0x19] = [[0x00]]
        let v = try exec.execute(.rawData(path: "5f1a,33b2", hex: "01020304")).value
        #expect(v["hops"] == .int(2))
        #expect(sent(peer, 0x19).last == [0x19, 0x42, 0x5F, 0x1A, 0x33, 0xB2, 1, 2, 3, 4])
        _ = try exec.execute(.rawData(path: "5f,33", hex: "01020304"))
        #expect(sent(peer, 0x19).last == [0x19, 0x02, 0x5F, 0x33, 1, 2, 3, 4])
        let (radio13, peer13, exec13) = try connected(protocol: 13)
        defer { close(radio13, peer13) }
        peer13.answers[0x19] = [[0x00]]
        _ = try exec13.execute(.rawData(path: "5f33", hex: "01020304"))
        #expect(sent(peer13, 0x19).last == [0x19, 0x02, 0x5F, 0x33, 1, 2, 3, 4])
    }

    @Test func resetAdvertTimeSetsTheLastAdvertToZeroAndKeepsTheRest() throws {
        let (radio, peer, exec) = try connected(protocol: 13)
        defer { close(radio, peer) }
        peer.answers[0x09] = [[0x00]]
        let v = try exec.execute(.contactResetAdvertTime("rpt")).value
        #expect(v["last_advert"] == .int(0))
        let f = try #require(sent(peer, 0x09).last)
        #expect(Array(f[1..<33]) == keyA && f[33] == 2)
        #expect(readLE32(f, 132) == 0)
        #expect(try Request(apiOp: "contacts_reset_advert_time", fields: ["name": .string("rpt")]) == .contactResetAdvertTime("rpt"))
    }

    @Test func enumSettingsTakeTheFirmwareNamesAndAutoAddTakesHex() throws {
        let (radio, peer, exec) = try connected(protocol: 13)
        defer { close(radio, peer) }
        peer.answers[0x26] = [[0x00]]
        peer.answers[0x3A] = [[0x00]]
        _ = try exec.execute(.set("advert-loc-policy", ["share"]))
        #expect(sent(peer, 0x26).last?[3] == 1)
        _ = try exec.execute(.set("advert-loc-policy", ["none"]))
        #expect(sent(peer, 0x26).last?[3] == 0)
        _ = try exec.execute(.set("advert-loc-policy", ["1"]))
        #expect(sent(peer, 0x26).last?[3] == 1)
        _ = try exec.execute(.set("auto-add", ["0x1e"]))
        #expect(sent(peer, 0x3A).last == [0x3A, 0x1E])
        _ = try exec.execute(.set("auto-add", ["overwrite,chat", "3"]))
        #expect(sent(peer, 0x3A).last == [0x3A, 0x03, 3])
        _ = try exec.execute(.set("auto-add", ["30"]))
        #expect(sent(peer, 0x3A).last == [0x3A, 30])
        for bad in [["advert-loc-policy", "somewhere"], ["auto-add", "0xzz"], ["auto-add", "cats"]] {
            do { _ = try exec.execute(.set(bad[0], [bad[1]])); Issue.record("accepted \(bad)") } catch { #expect(error.exitCode == 2) }
        }
    }

    /// STATUS_RESPONSE: a repeater's receive air time and receive errors, a room server's post and
    /// push counts.
    @Test func statusShowsTheFieldsOfEachServerType() throws {
        let (radio, peer, exec) = try connected(protocol: 13)
        defer { close(radio, peer) }
        func stats(_ tail: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: 48) + tail }
        var push: [UInt8] = []
        peer.respond = { f in f.first == 0x1B ? [[0x06, 0] + le32(5) + le32(100), push] : nil }
        push = [0x87, 0] + Array(keyA.prefix(6)) + stats(le32(42) + le32(7))
        let r = try exec.execute(.status("rpt")).value["stats"]
        #expect(r?["rx_air_s"] == .int(42) && r?["receive_errors"] == .int(7))
        push = [0x87, 0] + Array(keyB.prefix(6)) + stats([9, 0, 4, 0])
        let room = try exec.execute(.status("bob")).value["stats"]
        #expect(room?["posted"] == .int(9) && room?["post_pushes"] == .int(4))
        #expect(room?["rx_air_s"] == nil)
    }
}
