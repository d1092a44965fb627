import Glibc
import MeshCompanion
import MeshSession
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink
import MeshOps

@Suite struct TunnelQueueTests {
    /// Received message ids in a store, as `firstAfter` sees them.
    static func firstAfter(_ ids: [UInt64]) -> (UInt64) -> UInt64? {
        { after in ids.first { $0 > after } }
    }

    @Test func aRoundHandsEachMessageOnceAndMovesTheCursorAtTheEnd() {
        var q = TunnelQueue(cursor: 2)
        let ids: [UInt64] = [1, 2, 4, 7]
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .message(id: 4))
        #expect(q.cursor == 2)
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .message(id: 7))
        #expect(q.cursor == 2)
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .noMore(commit: 7))
        #expect(q.cursor == 7)
        // The next round has nothing and moves nothing.
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .noMore(commit: nil))
        // A new message arrives: only it.
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids + [9])) == .message(id: 9))
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids + [9])) == .noMore(commit: 9))
    }

    @Test func aRepeaterCLIReplyGoesToTheClientThatAskedAndIsNotQueued() {
        var q = TunnelQueue(cursor: 0)
        let rpt: [UInt8] = [1, 2, 3, 4, 5, 6], other: [UInt8] = [9, 9, 9, 9, 9, 9]
        q.expectCLIReply(from: rpt, to: 7)
        #expect(q.routeCLIReply(from: other, frame: [0x10, 1]) == nil, "a reply nobody waits for is stored as usual")
        #expect(q.routeCLIReply(from: rpt, frame: [0x10, 2]) == 7)
        #expect(q.routeCLIReply(from: rpt, frame: [0x10, 3]) == nil, "one reply per command")
        // Client 8 does not get it; client 7 gets it in a round of its own (not the store's backlog),
        // and the store's messages in its next round.
        #expect(q.next(for: 8, firstAfter: Self.firstAfter([5])) == .message(id: 5))
        #expect(q.next(for: 7, firstAfter: Self.firstAfter([5])) == .frame([0x10, 2]))
        #expect(q.next(for: 7, firstAfter: Self.firstAfter([5])) == .noMore(commit: nil))
        #expect(q.next(for: 7, firstAfter: Self.firstAfter([5])) == .message(id: 5))
        // A client gone before its reply: the reply is stored like any message.
        q.expectCLIReply(from: rpt, to: 9)
        q.disconnected(9)
        #expect(q.routeCLIReply(from: rpt, frame: [0x10, 4]) == nil)
    }

    @Test func aClientGoneMidRoundMovesNothing() {
        var q = TunnelQueue(cursor: 0)
        let ids: [UInt64] = [1, 2, 3]
        #expect(q.next(for: 5, firstAfter: Self.firstAfter(ids)) == .message(id: 1))
        #expect(q.next(for: 5, firstAfter: Self.firstAfter(ids)) == .message(id: 2))
        #expect(q.isDraining(5))
        q.disconnected(5)
        #expect(!q.isDraining(5))
        #expect(q.cursor == 0)
        // The next client starts over at the cursor.
        #expect(q.next(for: 6, firstAfter: Self.firstAfter(ids)) == .message(id: 1))
    }

    @Test func clientsDrainingTogetherBothGetEverythingAndTheCursorOnlyGrows() {
        var q = TunnelQueue(cursor: 0)
        let ids: [UInt64] = [1, 2]
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .message(id: 1))
        #expect(q.next(for: 2, firstAfter: Self.firstAfter(ids)) == .message(id: 1))
        #expect(q.next(for: 2, firstAfter: Self.firstAfter(ids)) == .message(id: 2))
        #expect(q.next(for: 2, firstAfter: Self.firstAfter(ids)) == .noMore(commit: 2))
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .message(id: 2))
        // Client 1 ends its round at 2: the cursor is already there.
        #expect(q.next(for: 1, firstAfter: Self.firstAfter(ids)) == .noMore(commit: nil))
        #expect(q.cursor == 2)
    }

    @Test func framesAreTheRadiosV3Frames() throws {
        let peer = KeyPrefix(sixOf: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6])
        let direct = StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: 1_700_000_000,
                                   receivedAt: 1_700_000_005, pathLength: 2, snr: -7, text: Array("hello".utf8))
        let room = StoredMessage(kind: .room, direction: .incoming, peer: peer, author: 0x0102_0304, senderTimestamp: 1_700_000_001,
                                 receivedAt: 1_700_000_005, textType: 2, pathLength: 0xFF, snr: 12, text: Array("post".utf8))
        let channel = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 3, senderTimestamp: 1_700_000_002,
                                    receivedAt: 1_700_000_005, pathLength: 1, snr: 4, text: Array("bob: hi all".utf8))
        let data = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 1, senderTimestamp: 0,
                                 receivedAt: 1_700_000_005, textType: 0x80 | 5, pathLength: 0, snr: 0, text: [1, 2, 3])
        let codes: [UInt8] = [0x10, 0x10, 0x11, 0x1B]
        for (m, code) in zip([direct, room, channel, data], codes) {
            let f = try #require(TunnelQueue.frame(for: m))
            #expect(f.first == code)
            // What the client parses is what the daemon stored.
            let back = MessageJSON.stored(try ReceivedMessage(frame: f), receivedAt: m.receivedAt)
            #expect(back == m)
        }
        // A datagram's 16-bit data type survives the store and the tunnel.
        for dataType: UInt16 in [0xFFBE, 0x0180] {
            let received = try ReceivedMessage(frame: ResponseFrame.channelData(snrQuarterDb: 8, channelIndex: 2, pathLength: PathLength(rawValue: 1),
                                                                               dataType: dataType, data: [1, 2]).bytes)
            let stored = MessageJSON.stored(received, receivedAt: 1_700_000_005)
            #expect(stored.dataType == dataType)
            let f = try #require(TunnelQueue.frame(for: stored))
            #expect(try ReceivedMessage(frame: f).dataType == dataType)
            #expect(MessageJSON.message(stored, store: nil)["data_type"] == .int(Int64(dataType)))
        }
        let outgoing = StoredMessage(kind: .direct, direction: .outgoing, peer: peer, senderTimestamp: 1, receivedAt: 1, text: [0x41])
        #expect(TunnelQueue.frame(for: outgoing) == nil)
    }

    @Test func overAStoreTheCursorSurvivesReopening() throws {
        let dir = temporaryDirectory("pm-tq")
        defer { removeTree(dir) }
        let peer = KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6])
        func incoming(_ t: UInt32) -> StoredMessage {
            StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: t, receivedAt: t, text: "m\(t)")
        }
        var store = try RadioStore(directory: dir + "/r")
        try store.append([incoming(1), incoming(2)])
        _ = try store.enqueue(StoredMessage(kind: .direct, direction: .outgoing, peer: peer, senderTimestamp: 3, receivedAt: 3, text: "out"), now: 3)
        try store.append(incoming(4))
        func drain(_ q: inout TunnelQueue, _ s: RadioStore, client: Int = 1, upTo limit: Int = 100) throws -> [String] {
            var texts: [String] = []
            for _ in 0..<limit {
                var found: StoredMessage? = nil
                switch q.next(for: client, firstAfter: { a in found = try? s.messages(after: a, limit: 1, incomingOnly: true).first; return found?.id }) {
                case .message: texts.append(try #require(found).textString)
                case .noMore(let c):
                    if let c { try s.setCursor("sync", c) }
                    return texts
                case .frame(let f): texts.append("frame \(f)")
                }
            }
            return texts
        }
        var q = TunnelQueue(cursor: try store.cursor("sync"))
        #expect(try drain(&q, store) == ["m1", "m2", "m4"])
        #expect(try drain(&q, store) == [])
        store.close()
        store = try RadioStore(directory: dir + "/r")
        q = TunnelQueue(cursor: try #require(try store.storedCursor("sync")))
        #expect(try drain(&q, store) == [])
        try store.append(incoming(5))
        // A round cut short (the client went away after one message) is repeated in full.
        try store.append(incoming(6))
        #expect(try drain(&q, store, client: 2, upTo: 1) == ["m5"])
        q.disconnected(2)
        #expect(try drain(&q, store) == ["m5", "m6"])
        store.close()
    }
}
