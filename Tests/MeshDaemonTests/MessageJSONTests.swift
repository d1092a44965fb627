import MeshBridge
import MeshCompanion
import MeshNet
import MeshOps
import MeshSession
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink
import MeshOps

/// The message JSON of the API, hooks, `history` and the MQTT bridge.
@Suite struct MessageJSONTests {
    /// A radio's store with one contact (a neighbour: its stored path has zero hops).
    func store() throws -> (RadioStore, String, KeyPrefix) {
        let dir = temporaryDirectory("pm-mj")
        let radioKey = [UInt8](repeating: 0x5A, count: 32)
        let s = try RadioStore(publicKey: radioKey, stateDir: dir)
        let bob = (0..<32).map { UInt8($0 + 0x10) }
        try s.saveContacts([StoredContact(publicKey: bob, type: 1, outPathLength: 0, name: "bob")])
        return (s, dir, KeyPrefix(sixOf: bob))
    }

    /// The first message of a sender floods (the radio gives its path length), the next come
    /// direct (the radio gives 0xFF): both have the hops of the route, and say which route.
    @Test func hopsAreTheSameForASenderWhetherItsMessageFloodsOrComesDirect() throws {
        let (s, dir, bob) = try store()
        defer { s.close(); removeTree(dir) }
        let flood = StoredMessage(kind: .direct, direction: .incoming, peer: bob, senderTimestamp: 1_700_000_000,
                                  receivedAt: 1_700_000_001, pathLength: 0, text: Array("first".utf8))
        let direct = StoredMessage(kind: .direct, direction: .incoming, peer: bob, senderTimestamp: 1_700_000_010,
                                   receivedAt: 1_700_000_011, pathLength: 0xFF, text: Array("second".utf8))
        let a = MessageJSON.message(flood, store: s), b = MessageJSON.message(direct, store: s)
        #expect(a["hops"] == .int(0) && a["route"] == .string("flood"))
        #expect(b["hops"] == .int(0) && b["route"] == .string("direct"))
        // Direct from a sender without a stored path: the hops are unknown, not made up.
        let stranger = StoredMessage(kind: .direct, direction: .incoming, peer: KeyPrefix(sixOf: [9, 9, 9, 9, 9, 9]),
                                     senderTimestamp: 1, receivedAt: 2, pathLength: 0xFF, text: Array("hi".utf8))
        #expect(MessageJSON.message(stranger, store: s)["hops"] == .null)
    }

    @Test func aMessageNamesTheRadioThatReceivedIt() throws {
        let (s, dir, bob) = try store()
        defer { s.close(); removeTree(dir) }
        let m = StoredMessage(kind: .direct, direction: .incoming, peer: bob, senderTimestamp: 1, receivedAt: 2, text: Array("x".utf8))
        #expect(MessageJSON.message(m, store: s)["radio"] == .string(HexCodec.encode(Array([UInt8](repeating: 0x5A, count: 32)))))
        #expect(MessageJSON.message(m, store: nil)["radio"] == nil)
    }

    /// CHANNEL_DATA_RECV carries no timestamp: the JSON has none either.
    @Test func aChannelDatagramHasNoTimestamp() throws {
        let d = StoredMessage.channelDatagram(channelIndex: 1, dataType: 0xFF01, receivedAt: 1_700_000_005, data: [1, 2, 3])
        let j = MessageJSON.message(d, store: nil)
        #expect(j["timestamp"] == nil)
        #expect(j["received"] == .int(1_700_000_005) && j["data_type"] == .int(0xFF01))
        let text = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 0, senderTimestamp: 1_700_000_000,
                                 receivedAt: 1_700_000_001, pathLength: 1, text: Array("bob: hi".utf8))
        #expect(MessageJSON.message(text, store: nil)["timestamp"] == .int(1_700_000_000))
        // Its bytes are `data` (hex), never a `text` made of raw bytes, and it names no sender.
        let raw = StoredMessage.channelDatagram(channelIndex: 1, dataType: 0xFF01, receivedAt: 1_700_000_005,
                                                data: Array("bob: \u{0}\u{1}".utf8))
        let rj = MessageJSON.message(raw, store: nil)
        #expect(rj["text"] == nil && rj["data"] == .string("626f623a200001") && rj["from"] == .string(""))
    }

    /// The MQTT bridge publishes the same JSON: a datagram's bytes in `data`, none in `text`.
    @Test func theBridgePublishesADatagramsBytesAsHexOnly() throws {
        let (s, dir, _) = try store()
        defer { s.close(); removeTree(dir) }
        let raw = StoredMessage.channelDatagram(channelIndex: 0, dataType: 0xFF00, receivedAt: 1_700_000_005, data: [0xC0, 0xFF, 0xEE])
        let bridge = MQTTBridge(settings: MQTTBridge.Settings(connection: BrokerConnection.Settings(url: try BrokerURL(parsing: "mqtt://127.0.0.1:1"))))
        let text = String(decoding: bridge.payload(for: raw, store: s), as: UTF8.self)
        #expect(text.contains("\"data\":\"c0ffee\"") && !text.contains("\"text\""), "\(text)")
    }

    /// A contact's CLI command (text type 3) and CLI reply (type 1) are named as such, in the
    /// store's JSON (hooks' POCKETMESH_KIND, history, MQTT) as in `listen`/`sync`, under the one field name `kind`.
    @Test func aCLICommandOrReplyIsNotADirectMessage() throws {
        let (s, dir, bob) = try store()
        defer { s.close(); removeTree(dir) }
        func kind(_ t: TextType) -> JSON? {
            MessageJSON.message(StoredMessage(kind: .direct, direction: .incoming, peer: bob, senderTimestamp: 1, receivedAt: 2,
                                              textType: t.rawValue, text: Array("ver".utf8)), store: s)["kind"]
        }
        #expect(kind(.plain) == .string("direct") && kind(.cliData) == .string("cli") && kind(.cliCommand) == .string("cli_command"))
        let env = HookMessage(id: 7, json: MessageJSON.message(StoredMessage(kind: .direct, direction: .incoming, peer: bob,
            senderTimestamp: 1, receivedAt: 2, textType: TextType.cliCommand.rawValue, text: Array("ver".utf8)), store: s)).environment
        #expect(env.contains("POCKETMESH_KIND=cli_command"))
        let received = try ReceivedMessage(frame: ResponseFrame.contactMessage(senderPrefix: bob, pathLength: .unknown,
                                                                               textType: .cliCommand, senderTimestamp: 5, text: Array("ver".utf8)).bytes)
        // One name for the message's kind: `kind` in listen/sync as in the store's JSON, never `type`.
        #expect(messageValue(received)["kind"] == .string("cli_command") && messageValue(received)["type"] == nil)
        let data = try ReceivedMessage(frame: ResponseFrame.channelData(channelIndex: 2, pathLength: PathLength(rawValue: 1),
                                                                        dataType: 0xFF00, data: [1, 2]).bytes)
        #expect(messageValue(data)["timestamp"] == nil && messageValue(data)["data"] == .string("0102"))
    }
}
