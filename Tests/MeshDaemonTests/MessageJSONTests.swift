import MeshCompanion
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
    }
}
