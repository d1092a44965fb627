import Testing
import MeshCompanion
@testable import MeshOps

@Suite struct SurfaceTests {
    @Test func mmaRecordsDecode() throws {
        // channel 1 temperature (0x67, 0.1 °C, big-endian): min 20.0, max 25.0, avg 22.5;
        // channel 2 voltage (0x74, 0.01 V): min 4.00, max 4.20, avg 4.10; then the end.
        let bytes: [UInt8] = [0x01, 0x67, 0x00, 0xC8, 0x00, 0xFA, 0x00, 0xE1,
                              0x02, 0x74, 0x01, 0x90, 0x01, 0xA4, 0x01, 0x9A, 0x00]
        let r = try #require(MMARecord.decode(bytes))
        #expect(r.count == 2)
        #expect(r[0].channel == 1 && r[0].type == .temperature)
        #expect(r[0].min == .scalar(20.0) && r[0].max == .scalar(25.0) && r[0].avg == .scalar(22.5))
        #expect(r[1].type == .voltage && r[1].max == .scalar(4.2))
        // Cut short, or an unknown type: not a reply.
        #expect(MMARecord.decode(Array(bytes[0..<7])) == nil)
        #expect(MMARecord.decode([0x01, 0xEE, 0, 0]) == nil)
        #expect(MMARecord.decode([]) == [])
    }

    @Test func discoverFilter() {
        #expect(DiscoverTypes.filter("repeater") == 0x04)
        #expect(DiscoverTypes.filter("repeater,room") == 0x0C)
        #expect(DiscoverTypes.filter("all") == 0x1E)
        #expect(DiscoverTypes.filter("chat,sensor") == 0x12)
        #expect(DiscoverTypes.filter("toaster") == nil)
        #expect(DiscoverTypes.filter("") == nil)
    }

    @Test func newOperationsFromTheAPI() throws {
        #expect(try Request(apiOp: "discover", fields: ["for": .integer(3), "type": .string("room")]) == .discover(waitMs: 3000, types: 0x08))
        #expect(try Request(apiOp: "mma", fields: ["name": .string("s"), "from": .integer(60)]) == .mma("s", from: 60, to: 0))
        #expect(try Request(apiOp: "channel_data", fields: ["channel": .string("0"), "data_type": .integer(65280), "data": .string("ab")])
                == .channelData("0", dataType: 65280, hex: "ab"))
        #expect(throws: (any Error).self) { try Request(apiOp: "channel_data", fields: ["channel": .string("0"), "data_type": .integer(70000), "data": .string("ab")]) }
        #expect(throws: (any Error).self) { try Request(apiOp: "discover", fields: ["for": .double(.infinity)]) }
    }
}
