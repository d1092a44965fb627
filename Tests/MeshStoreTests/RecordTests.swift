import MeshCompanion
import Testing
@testable import MeshStore

@Suite struct RecordTests {
    @Test func crc32KnownVectors() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        // Continuation: the CRC of a whole equals the CRC of the tail seeded with the CRC of the head.
        let all = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let head = CRC32.checksum(Array(all[..<cut]))
            #expect(CRC32.checksum(Array(all[cut...]), seed: head) == CRC32.checksum(all))
        }
    }

    static let sample = StoredMessage(id: 7, kind: .direct, direction: .incoming, peer: alice,
                                      senderTimestamp: 1_700_000_000, receivedAt: 1_700_000_100,
                                      pathLength: 2, snr: -8, text: Array("hi".utf8))
    static let samplePayload: [UInt8] = [
        0x01, 0x01, 0x00, 0x00,                          // message, direct, incoming, txt_type 0
        0x07, 0, 0, 0, 0, 0, 0, 0,                       // id 7
        0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6,              // peer prefix
        0, 0, 0, 0,                                      // author
        0x00, 0xF1, 0x53, 0x65,                          // sender ts 1700000000
        0x64, 0xF1, 0x53, 0x65,                          // received at 1700000100
        0x02, 0xF8, 0x00, 0x00,                          // path_len 2, snr -8 (-2 dB), received, 0 attempts
        0, 0, 0, 0, 0, 0, 0, 0,                          // round trip, ack tag
        0x02, 0x00, 0x68, 0x69,                          // text length 2, "hi"
    ]

    @Test func messageRecordIsByteExact() {
        var out: [UInt8] = []
        let s = Frame.begin(&out)
        Payload.encode(Self.sample, into: &out)
        Frame.seal(&out, at: s, salt: 0)
        #expect(out == [0xFF, 0xFE, 0x4D, 0x52, 46, 0, 0, 0, 0xF3, 0xED, 0x0C, 0xCE] + Self.samplePayload)

        var salted: [UInt8] = []
        let s2 = Frame.begin(&salted)
        Payload.encode(Self.sample, into: &salted)
        Frame.seal(&salted, at: s2, salt: 0x1234_5678)
        #expect(Array(salted[8..<12]) == [0xA5, 0x2E, 0x91, 0x4F])

        let decoded = Self.samplePayload.withUnsafeBytes { Payload.decodeMessage($0) }
        #expect(decoded == Self.sample)
        guard case .ok(let len) = out.withUnsafeBytes({ Frame.check($0, salt: 0) }) else {
            Issue.record("frame does not check"); return
        }
        #expect(len == 46)
        #expect(salted.withUnsafeBytes { if case .bad = Frame.check($0, salt: 0) { return true }; return false })
    }

    @Test func channelAndRoomAndStatusRoundTrip() {
        let ch = StoredMessage(id: 1 << 40, kind: .channel, direction: .outgoing, channelIndex: 39,
                               senderTimestamp: 5, receivedAt: 6, status: .acked, attempts: 3, roundTripMs: 1234,
                               ackTag: 0xDEADBEEF, text: Array("me: hello".utf8))
        let room = StoredMessage(id: 2, kind: .room, direction: .incoming, peer: bob, author: 0x0403_0201,
                                 senderTimestamp: 1, receivedAt: 2, textType: 2, pathLength: 0xFF,
                                 text: [0xFF, 0x00, 0xC3])
        for m in [ch, room] {
            var b: [UInt8] = []
            Payload.encode(m, into: &b)
            #expect(b.withUnsafeBytes { Payload.decodeMessage($0) } == m)
            #expect(b.withUnsafeBytes { Payload.peekMessage($0)?.thread } == m.thread)
        }
        var b: [UInt8] = []
        let u = DeliveryUpdate(status: .sent, attempts: 2, roundTripMs: 9, ackTag: 77)
        Payload.encodeStatus(id: 42, u, at: 100, into: &b)
        #expect(b.count == Payload.statusSize)
        let d = b.withUnsafeBytes { Payload.decodeStatus($0) }
        #expect(d?.id == 42 && d?.update == u)
        // Truncated or padded payloads are refused, not trapped on.
        for n in 0 ..< 45 { #expect(Array(Self.samplePayload.prefix(n)).withUnsafeBytes { Payload.decodeMessage($0) } == nil) }
        #expect((Self.samplePayload + [0]).withUnsafeBytes { Payload.decodeMessage($0) } == nil)
    }

    @Test func keysAndThreads() {
        #expect(alice.description == "a1a2a3a4a5a6")
        #expect(KeyPrefix(sixOf: [UInt8](repeating: 0xAB, count: 32)).description == "abababababab")
        #expect(ThreadKey.channel(3).channelIndex == 3)
        #expect(ThreadKey.direct(alice).peer == alice)
        #expect(ThreadKey.room(bob).kind == .room)
        #expect(bytesFromHex("a1B2") == [0xA1, 0xB2])
        #expect(bytesFromHex("a1b") == nil)
    }

    @Test func contactFrameRoundTrip() throws {
        var frame: [UInt8] = [0x03]
        frame += (0..<32).map { UInt8($0) }             // key
        frame += [2, 1, 0x42]                           // repeater, favourite, path len 2 hops of 1 byte | mode
        frame += (0..<64).map { UInt8(100 + $0) }       // out path
        frame += Array("Hilltop".utf8) + [UInt8](repeating: 0, count: 25)
        frame += [1, 0, 0, 0, 0x40, 0x42, 0x0F, 0x00, 0xC0, 0xBD, 0xF0, 0xFF, 9, 0, 0, 0]
        #expect(frame.count == 148)
        let c = try StoredContact(frame: frame)
        #expect(c.name == "Hilltop" && c.type == 2 && c.outPathLength == 0x42)
        #expect(c.latitude == 1_000_000 && c.longitude == -1_000_000 && c.lastModified == 9)
        #expect(c.frame() == frame)
        #expect(throws: StoreError.self) { try StoredContact(frame: Array(frame.prefix(147))) }
    }
}

@Suite struct EntryTableTests {
    @Test func idsWithGapsAndLookups() {
        var t = EntryTable()
        #expect(t.lowerBound(id: 5) == 0 && t.index(of: 1) == nil)
        let ids: [UInt64] = [3, 4, 5, 9, 10, 20, 21, 22, 23]
        for (i, id) in ids.enumerated() { t.append(id: id, offset: UInt32(100 + i), thread: i % 3, outgoing: i == 4) }
        #expect(t.runs.count == 3)
        #expect((0..<t.count).map { t.id($0) } == ids)
        for probe in UInt64(0)...25 {
            #expect(t.lowerBound(id: probe) == (ids.firstIndex { $0 >= probe } ?? ids.count), "probe \(probe)")
            #expect(t.index(of: probe) == ids.firstIndex(of: probe))
        }
        #expect(t.outgoing(4) && !t.outgoing(3) && t.thread(5) == 2 && t.offset(8) == 108)
        t.removeFirst(4)
        #expect((0..<t.count).map { t.id($0) } == Array(ids.dropFirst(4)))
        #expect(t.runs.count == 2 && t.offset(0) == 104)
        t.removeFirst(100)
        #expect(t.isEmpty)
        #expect(EntryTable.bytesPerEntry == 6)
    }

    @Test func channelDatagramsKeepTheirWholeDataType() throws {
        for dataType: UInt16 in [0xFFBE, 0x0100, 0x8000, 0x007F, 1] {
            let m = StoredMessage.channelDatagram(channelIndex: 3, dataType: dataType, receivedAt: 1_700_000_000, data: [9, 8, 7])
            var out: [UInt8] = []
            Payload.encode(m, into: &out)
            let back = try #require(out.withUnsafeBytes { Payload.decodeMessage($0) })
            #expect(back.dataType == dataType)
            #expect(back.isDatagram)
            #expect(back.channelIndex == 3)
            #expect(back == m)
        }
        // Plain channel texts have no data type.
        var out: [UInt8] = []
        Payload.encode(StoredMessage(kind: .channel, direction: .incoming, channelIndex: 2, senderTimestamp: 5, receivedAt: 6, text: "a: b"), into: &out)
        let text = try #require(out.withUnsafeBytes { Payload.decodeMessage($0) })
        #expect(text.dataType == 0 && !text.isDatagram && text.channelIndex == 2)
    }

    @Test func olderDatagramRecordsStillRead() throws {
        // As written before the data type was kept whole: txt_type 0x80 | 0x3E (of 0xFFBE), channel 1.
        let old: [UInt8] = [
            0x01, 0x02, 0x00, 0xBE,                          // message, channel, incoming, txt_type 0x80 | 0x3E
            0x09, 0, 0, 0, 0, 0, 0, 0,                       // id 9
            0x01, 0, 0, 0, 0, 0,                             // channel 1
            0, 0, 0, 0,                                      // author
            0, 0, 0, 0,                                      // sender ts 0
            0x64, 0xF1, 0x53, 0x65,                          // received at 1700000100
            0xFF, 0x00, 0x00, 0x00,                          // came direct, snr 0, received, 0 attempts
            0, 0, 0, 0, 0, 0, 0, 0,                          // round trip, ack tag
            0x02, 0x00, 0xAA, 0xBB,                          // 2 bytes of data
        ]
        let m = try #require(old.withUnsafeBytes { Payload.decodeMessage($0) })
        #expect(m.id == 9 && m.kind == .channel && m.channelIndex == 1)
        #expect(m.isDatagram)
        #expect(m.dataType == 0x3E)
        #expect(m.text == [0xAA, 0xBB])
    }
}
