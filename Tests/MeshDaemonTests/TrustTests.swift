import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshSession
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshBridge
@testable import MeshHub

/// The second trust round (issue 35), door by door: what a frame inside an op is classed as, what
/// a result or a reply may carry where `secret` is not allowed, the MQTT bridge's bounds, the
/// status a broker sees, the refusal log's bound, the files the daemon takes orders from.
@Suite struct TrustTests {
    typealias Harness = MQTTBridgeTests.Harness

    // MARK: classes

    @Test func rawIsTheClassOfTheFrameItCarries() throws {
        func cls(_ hex: String) throws -> OperationClass { try Request.operationClass(apiOp: "raw", fields: ["hex": .string(hex)]) }
        // EXPORT_PRIVATE_KEY, IMPORT_PRIVATE_KEY, SIGN_START/DATA/FINISH: secret, not the row's admin.
        for hex in ["17", "18" + String(repeating: "00", count: 64), "21", "2200112233", "23"] {
            #expect(try cls(hex) == .secret, "\(hex)")
        }
        // Anything else is at least the row's class.
        for hex in ["1f02", "1603", "14", "0a", "ff", "zz"] { #expect(try cls(hex) == .admin, "\(hex)") }
        #expect(Request.operationClass(apiOp: "raw") == .admin)
    }

    @Test func theSecretTableAgreesWithTheClassOfEveryCommand() {
        for code in CommandCode.allCases {
            #expect((OperationClass(command: code) == .secret) == Secrets.commands.contains(code), "\(code)")
        }
    }

    @Test func replyFramesLoseTheirSecretBytesOnly() {
        let name = Array("Private".utf8) + [UInt8](repeating: 0, count: 25)
        let secret: [UInt8] = (1...16).map { UInt8($0) }
        let channel = [ResponseCode.channelInfo.rawValue, 2] + name + secret
        let zeroed = Secrets.redacted(reply: channel)
        #expect(zeroed.count == channel.count && Array(zeroed[0..<34]) == Array(channel[0..<34]))
        #expect(zeroed[34..<50].allSatisfy { $0 == 0 } && Secrets.holdsSecret(reply: channel) && !Secrets.holdsSecret(reply: zeroed))
        var info = [UInt8](repeating: 7, count: 82)
        info[0] = ResponseCode.deviceInfo.rawValue
        let pinless = Secrets.redacted(reply: info)
        #expect(pinless[4..<8].allSatisfy { $0 == 0 } && Array(pinless[8...]) == Array(info[8...]) && Array(pinless[0..<4]) == Array(info[0..<4]))
        let key = [ResponseCode.privateKey.rawValue] + [UInt8](repeating: 9, count: 64)
        #expect(Secrets.redacted(reply: key).dropFirst().allSatisfy { $0 == 0 })
        // Short frames and frames without secrets are unchanged.
        #expect(Secrets.redacted(reply: [ResponseCode.channelInfo.rawValue, 1, 65]) == [ResponseCode.channelInfo.rawValue, 1, 65])
        #expect(Secrets.redacted(reply: [ResponseCode.ok.rawValue]) == [ResponseCode.ok.rawValue])
        #expect(Secrets.redacted(reply: []) == [])
    }

    // MARK: MQTT

    @Test func rawOverMQTTIsClassedByItsFrameAndItsReplyLosesItsSecret() throws {
        let h = try Harness()
        let channel = [ResponseCode.channelInfo.rawValue, 1] + Array("Private".utf8) + [UInt8](repeating: 0, count: 25) + [UInt8](repeating: 0xAB, count: 16)
        h.answer = { req in DaemonResponse(id: req.id, ok: [("reply", .string(HexCodec.encode(channel)))]) }
        h.command("pm/command/raw", #"{"id":1,"hex":"1f01"}"#)
        h.command("pm/command/channel_add", ##"{"id":2,"name":"#x"}"##)
        let results = try h.published()
        let reply = results[0].1["reply"]?.string ?? ""
        #expect(reply.hasPrefix(HexCodec.encode(Array(channel[0..<34]))) && reply.hasSuffix(String(repeating: "00", count: 16)), "\(reply)")
        // channel_add's link holds the channel's secret: left out.
        #expect(results[1].1["uri"] == nil)
        // The class itself is the daemon's to check: the request the bridge hands over is secret.
        guard case .run(_, let req) = MQTTBridge.parseCommand(op: "raw", payload: Array(#"{"id":201,"hex":"17"}"#.utf8), prefix: "pm") else {
            Issue.record("not parsed")
            return
        }
        #expect(try req.operationClass() == .secret)
    }

    @Test func aResultNeverCarriesASecretField() {
        let fields: [(String, JSON)] = [("channels", .array([.obj(("index", 1), ("secret", "aa"), ("uri", "meshcore://x"))])),
                                        ("deep", .obj(("signature", "bb"), ("ble_pin", 1), ("password", "p"), ("ok", true)))]
        let out = String(decoding: MQTTBridge.resultPayload(id: 1, op: "channel_list", radio: "r", .success(fields)), as: UTF8.self)
        for k in ["\"secret\"", "signature", "ble_pin", "password"] { #expect(!out.contains(k), "\(k) in \(out)") }
        // A contact's link is not a secret; a channel's is.
        #expect(out.contains("meshcore://x"))
        let add = String(decoding: MQTTBridge.resultPayload(id: 1, op: "channel_add", radio: "r", .success([("uri", "meshcore://channel/add?secret=00")])), as: UTF8.self)
        #expect(!add.contains("meshcore://"))
    }

    @Test func commandsOffMeansNoSubscriptionAndNothingRuns() throws {
        var s = MQTTBridge.Settings(connection: BrokerConnection.Settings(url: try BrokerURL(parsing: "mqtt://127.0.0.1:1")))
        s.prefix = "pm"
        s.allowed = try AllowedClasses(parsing: "none")
        let b = MQTTBridge(settings: s)
        var lines: [String] = []
        b.log = { lines.append($0) }
        b.radioKnown(publicKey: MQTTBridgeTests.key, now: 0)
        let c = b.connection.client
        c.transportOpened(now: 0)
        _ = c.takeOutput()
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        // After CONNACK: no SUBSCRIBE (0x82) at all.
        var d = MQTTDecoder()
        d.append(c.takeOutput())
        while let p = try d.next() {
            if case .subscribe = p { Issue.record("subscribed with commands off") }
        }
        #expect(lines.contains { $0.contains("commands are off") })
        b.command(MQTTPublish(topic: "pm/command/info", payload: Array(#"{"id":1}"#.utf8), qos: .atLeastOnce, packetId: 3), now: 1)
        #expect(b.commandsRun == 0 && !c.hasOutput)
        #expect(b.statusFields["commands"]?.string == "off")
    }

    @Test func aCommandFloodIsDroppedAndCountedAndStoredMessagesStillGoFirst() throws {
        let h = try Harness()
        var ran = 0
        h.answer = { req in ran += 1; return DaemonResponse(id: req.id, ok: [("status", .string("ok"))]) }
        // 10,000 commands in one millisecond: the burst (20) runs, the rest is dropped, with one log line.
        for i in 0..<10_000 {
            h.bridge.command(MQTTPublish(topic: "pm/command/info", payload: Array("{\"id\":\(i)}".utf8), qos: .atMostOnce), now: 1)
        }
        #expect(ran == 20 && h.bridge.commandsRun == 20 && h.bridge.commandsDropped == 9_980)
        #expect(h.lines.filter { $0.contains("dropped") }.count == 1, "\(h.lines)")
        // A second later, the rate's credit lets ten more in.
        for i in 0..<100 {
            h.bridge.command(MQTTPublish(topic: "pm/command/info", payload: Array("{\"id\":\(i)}".utf8), qos: .atMostOnce), now: 1_001)
        }
        #expect(ran == 30)
        #expect(h.bridge.statusFields["commands_dropped"]?.int == 10_070)
        // The results fill the queue's share of the window; the stored messages' share stays free.
        let c = h.bridge.connection.client
        #expect(c.inflightCount == 16 && c.queuedCount == 14)
        #expect(c.publishAhead(topic: "pm/message/channel/0", payload: [1], now: 2) != nil)
        #expect(c.inflightCount == 17)
    }

    @Test func aPasswordInABrokerURLIsRefusedWithoutItsText() {
        for url in ["mqtt://user:hunter2@broker", "mqttx://user:hunter2@broker", "mqtt://user:hunter2@broker:99999", "user:hunter2@broker"] {
            do throws(MQTTError) {
                _ = try BrokerURL(parsing: url)
                Issue.record("\(url) parsed")
            } catch {
                #expect(!error.description.contains("hunter2"), "\(error)")
            }
        }
        #expect(BrokerURL.withoutPassword("mqtt://u:p@h:1/x") == "mqtt://u:***@h:1/x")
        #expect(BrokerURL.withoutPassword("mqtt://u@h") == "mqtt://u@h")
    }

    @Test func statusForABrokerHasNoPathsOrAddresses() {
        let f: [(String, JSON)] = [("state", "ready"), ("link", "serial:/dev/ttyUSB0"), ("store", "/var/lib/pocketmesh/abc"),
                                   ("hub_clients", .array([.obj(("client", 1), ("address", "192.168.1.7:40000"), ("app", "a"))]))]
        let out = JSON.object(Daemon.statusForRemoteDoor(f)).text
        #expect(!out.contains("/dev/") && !out.contains("/var/") && !out.contains("192.168") && out.contains("\"app\":\"a\""), "\(out)")
    }

    // MARK: hub

    @Test func aHubListenerWithoutSecretRefusesToWriteAZeroSecretOverAChannel() throws {
        let rw = try HubListener(parsing: "127.0.0.1:5000")
        var set = [CommandCode.setChannel.rawValue, 1] + Array("Private".utf8) + [UInt8](repeating: 0, count: 25) + [UInt8](repeating: 0, count: 16)
        #expect(rw.refusal(set) != nil)
        set[40] = 1
        #expect(rw.refusal(set) == nil)
        // Deleting a channel (empty name, zero secret) is still allowed, and so is everything on a listener with secret.
        let delete = [CommandCode.setChannel.rawValue, 1] + [UInt8](repeating: 0, count: 48)
        #expect(rw.refusal(delete) == nil)
        #expect(try HubListener(parsing: "127.0.0.1:5000,allow=secret").refusal(set.enumerated().map { $0.offset == 40 ? 0 : $0.element }) == nil)
    }

    @Test func loopbackListenersAreTold() throws {
        for (a, loop) in [("127.0.0.1:1", true), ("127.9.9.9:1", true), ("[::1]:1", true), ("0.0.0.0:1", false), ("[::]:1", false),
                          ("192.168.1.2:1", false), ("[::ffff:127.0.0.1]:1", true)] {
            #expect(try HubListener(parsing: a).isLoopback == loop, "\(a)")
        }
        #expect(HubListener.isLoopbackHost("localhost") && !HubListener.isLoopbackHost("broker.example"))
    }

    // MARK: logs

    @Test func refusalsAreLoggedOneByOneThenOnceAMinute() {
        var r = RefusalLog()
        var verdicts: [RefusalLog.Verdict] = []
        for i in 0..<1_000 { verdicts.append(r.note("hub client 1", what: "reboot", now: UInt64(i))) }
        #expect(verdicts.prefix(10).allSatisfy { $0 == .log } && verdicts.dropFirst(10).allSatisfy { $0 == .quiet })
        // The first refusal of another op is logged whatever the count.
        #expect(r.note("hub client 1", what: "factoryReset", now: 1_000) == .log)
        #expect(r.note("hub client 1", what: "factoryReset", now: 1_001) == .quiet)
        #expect(r.note("hub client 1", what: "reboot", now: 61_000) == .summary(992))
        #expect(r.note("hub client 2", now: 61_000) == .log)
        // Bounded: doors beyond 64 push the oldest out.
        for i in 0..<200 { _ = r.note("door \(i)", now: 0) }
        #expect(r.note("hub client 1", now: 61_001) == .log)
    }

    // MARK: files

    @Test func filesTheDaemonTakesOrdersFromMustBeItsOwnAndClosed() throws {
        let dir = temporaryDirectory("trust")
        defer { removeTree(dir) }
        let hook = dir + "/hook.sh"
        try StateFile.write(hook, "#!/bin/sh\nexit 0\n", mode: 0o755)
        #expect(Spawn.problem(running: hook, path: nil) == nil)
        chmod(hook, 0o777)
        let open = Spawn.problem(running: hook, path: nil)
        #expect(open?.contains(hook) == true && open?.contains("chmod go-w") == true, "\(open ?? "")")
        chmod(hook, 0o775)
        #expect(Spawn.problem(running: hook, path: nil)?.contains("its group") == true)
        // Found through PATH: the file found is the one checked.
        chmod(hook, 0o757)
        #expect(Spawn.problem(running: "hook.sh", path: dir) != nil)
        chmod(hook, 0o755)
        #expect(Spawn.problem(running: "hook.sh", path: dir) == nil)
        // Password files: the same rule on top of "readable by no one else".
        let pw = dir + "/pw"
        try StateFile.write(pw, "secret\n", mode: 0o600)
        #expect(try SecretFile.password(pw) == Array("secret".utf8))
        if geteuid() == 0 {
            chown(pw, 4242, 4242)
            #expect(throws: DaemonError.self) { try SecretFile.password(pw) }
            chown(hook, 4242, 4242)
            #expect(Spawn.problem(running: hook, path: nil)?.contains("belongs to user 4242") == true)
        }
    }
}
