import MeshNet
import MeshNet
import MeshOps
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshBridge
import MeshLink

/// The MQTT bridge's commands, driven directly (no broker): which run, where results go, what
/// they hold; and the client id.
@Suite struct MQTTBridgeTests {
    static let key: [UInt8] = (0..<32).map { UInt8($0 * 7 + 1) }
    static let keyHex = "01080f161d24"  // the first 6 bytes of `key`

    final class Harness: BridgeHost {
        let bridge: MQTTBridge
        var lines: [String] = []
        var ran: [String] = []
        var answer: (DaemonRequest) -> DaemonResponse = { DaemonResponse(id: $0.id, ok: [("status", .string("ok"))]) }

        init(index: Int? = nil) throws {
            var s = MQTTBridge.Settings(connection: BrokerConnection.Settings(url: try BrokerURL(parsing: "mqtt://127.0.0.1:1")))
            s.prefix = "pm"
            bridge = MQTTBridge(settings: s, index: index)
            bridge.log = { [unowned self] in self.lines.append($0) }
            bridge.host = self
            bridge.radioKnown(publicKey: MQTTBridgeTests.key, now: 0)
            // The session as if connected: what it publishes stays in its output.
            let c = bridge.connection.client
            c.transportOpened(now: 0)
            _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
            _ = c.takeOutput()
        }

        func bridgeExecute(_ req: DaemonRequest, client: Caller) -> DaemonResponse? {
            ran.append(req.name)
            return answer(req)
        }

        func command(_ topic: String, _ payload: String, retain: Bool = false) {
            bridge.command(MQTTPublish(topic: topic, payload: Array(payload.utf8), qos: .atLeastOnce, retain: retain, packetId: 5), now: 1)
        }

        /// The PUBLISHes the bridge made since the last call: (topic, payload as JSON).
        func published() throws -> [(String, JSON)] {
            var d = MQTTDecoder()
            d.append(bridge.connection.client.takeOutput())
            var out: [(String, JSON)] = []
            while let p = try d.next() {
                guard case .publish(let m) = p else { continue }
                #expect(!m.retain)
                out.append((m.topic, try JSONParser.parse(String(decoding: m.payload, as: UTF8.self))))
            }
            return out
        }
    }

    @Test func theClientIdNamesTheRadioAndTheBridge() throws {
        let one = try Harness()
        #expect(one.bridge.clientId == "pocketmesh-bridge-\(Self.keyHex)")
        #expect(one.bridge.connection.isStarted)
        let second = try Harness(index: 2)
        #expect(second.bridge.clientId == "pocketmesh-bridge-\(Self.keyHex)-2")
        // Before the key is known, nothing connects.
        let waiting = MQTTBridge(settings: MQTTBridge.Settings(connection: BrokerConnection.Settings(url: try BrokerURL(parsing: "mqtt://127.0.0.1:1"))))
        #expect(!waiting.connection.isStarted && waiting.connection.tick(now: 0) == nil)
        // Another radio in its place: a new id.
        var other = Self.key
        other[0] = 0xAB
        one.bridge.radioKnown(publicKey: other, now: 5)
        #expect(one.bridge.clientId == "pocketmesh-bridge-ab080f161d24" && one.bridge.connection.isStarted)
        #expect(one.lines.last?.contains("connecting again as pocketmesh-bridge-ab080f161d24") == true)
    }

    @Test func aRetainedCommandIsNeverRunAndLoggedOncePerTopic() throws {
        let h = try Harness()
        for _ in 0..<5 { h.command("pm/command/channel_send", #"{"id":1,"channel":"0","text":"again"}"#, retain: true) }
        h.command("pm/command/send", #"{"id":2,"to":"a","text":"x"}"#, retain: true)
        #expect(h.ran.isEmpty)
        #expect(try h.published().isEmpty)
        let logged = h.lines.filter { $0.contains("retained") }
        #expect(logged.count == 2 && logged[0].contains("\"pm/command/channel_send\""), "\(h.lines)")
        #expect(h.bridge.retainedIgnored == 6)
        // The same command sent live runs.
        h.command("pm/command/channel_send", #"{"id":1,"channel":"0","text":"now"}"#)
        #expect(h.ran == ["channel_send"])
    }

    @Test func aCommandWithoutAnIntegerIdIsAnsweredAndNotRun() throws {
        let h = try Harness()
        h.command("pm/command/channel_send", #"{"channel":"0","text":"no id"}"#)
        h.command("pm/command/status", #"{"id":"7"}"#)
        h.command("pm/command/status", "")
        #expect(h.ran.isEmpty)
        let results = try h.published()
        #expect(results.count == 3)
        for (topic, r) in results {
            #expect(topic == "pm/command/channel_send/result" || topic == "pm/command/status/result")
            #expect(r["id"] == .null && r["ok"] == .bool(false) && r["error"]?["code"]?.string == "usage")
            #expect(r["error"]?["message"]?.string?.contains("integer \"id\"") == true)
        }
        #expect(h.lines.filter { $0.contains("not run") && $0.contains("no integer \"id\"") }.count == 3, "\(h.lines)")
    }

    @Test func resultsGoToTheRequestsResultTopicAndOnlyThisRadiosTopicsRun() throws {
        let h = try Harness()
        h.command("pm/command/status", #"{"id":41}"#)
        h.command("pm/radio/\(Self.keyHex)/command/status", #"{"id":42}"#)
        h.command("pm/radio/ffffffffffff/command/status", #"{"id":43}"#)   // another radio's
        h.command("pm/command/status/result", #"{"id":44}"#)                // a result, not a command
        h.command("other/command/status", #"{"id":45}"#)
        #expect(h.ran == ["status", "status"])
        let results = try h.published()
        #expect(results.map(\.0) == ["pm/command/status/result", "pm/radio/\(Self.keyHex)/command/status/result"])
        #expect(results.map { $0.1["id"] } == [.int(41), .int(42)])
        #expect(results.allSatisfy { $0.1["radio"]?.string == Self.keyHex && $0.1["ok"] == .bool(true) })
    }

    @Test func resultsCarryNoSecrets() throws {
        let h = try Harness()
        let secret = "8b3387e9c5cdea6ac9e5edbaa115cd72"
        h.answer = { req in
            DaemonResponse(id: req.id, ok: [("channels", .array([.obj(("index", 1), ("name", "#x"), ("secret", .string(secret)))])),
                                            ("settings", .obj(("name", "n"), ("pin", 123456))), ("private_key", "00")])
        }
        h.command("pm/command/channel_list", #"{"id":1}"#)
        h.command("pm/command/channel_uri", #"{"id":2,"channel":"1"}"#)
        let results = try h.published()
        #expect(h.ran == ["channel_list"])
        var text: [UInt8] = []
        for (_, r) in results { r.write(into: &text) }
        let all = String(decoding: text, as: UTF8.self)
        #expect(!all.contains(secret) && !all.contains("123456") && !all.contains("private_key") && !all.contains("pin"), "\(all)")
        #expect(results[0].1["channels"]?.array?.first?["name"]?.string == "#x")
        #expect(results[1].0 == "pm/command/channel_uri/result" && results[1].1["error"]?["code"]?.string == "denied")
    }
}
