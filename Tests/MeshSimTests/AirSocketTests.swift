import Testing
import MeshAir
import MeshCompanion
@testable import MeshNode
@testable import MeshSim

@Suite struct AirSocketTests {
    @Test func framesByteExact() {
        #expect(AirFrame.hello("ext0").encoded == [0x05, 0x00, 0x01, 0x65, 0x78, 0x74, 0x30])
        #expect(AirFrame.send([0x11, 0x00, 0xAA]).encoded == [0x04, 0x00, 0x02, 0x11, 0x00, 0xAA])
        #expect(AirFrame.heard(snrQuarterDb: -6, rssi: -100, packet: [0x11, 0x00]).encoded == [0x05, 0x00, 0x03, 0xFA, 0x9C, 0x11, 0x00])
        #expect(AirFrame.error("no").encoded == [0x03, 0x00, 0x04, 0x6E, 0x6F])
    }

    @Test func framesAcrossReads() {
        let wire = AirFrame.hello("ext0").encoded + AirFrame.send([1, 2, 3]).encoded
        var buffer: [UInt8] = []
        var got: [AirFrame] = []
        for b in wire {
            buffer.append(b)
            got += AirFrame.take(&buffer) ?? []
        }
        #expect(got == [.hello("ext0"), .send([1, 2, 3])])
        #expect(buffer.isEmpty)
    }

    @Test func malformedFramesAreRefused() {
        var zero: [UInt8] = [0x00, 0x00]
        #expect(AirFrame.take(&zero) == nil)
        var unknown: [UInt8] = [0x01, 0x00, 0x09]
        #expect(AirFrame.take(&unknown) == nil)
        var tooLong: [UInt8] = [0x00, 0x10]
        #expect(AirFrame.take(&tooLong) == nil)
        var emptyPacket: [UInt8] = [0x02, 0x00, 0x02, 0x11]
        #expect(AirFrame.take(&emptyPacket) == nil)
    }

    /// In virtual time: what the external node sends goes on the air with its links and time on
    /// air; what its links carry reaches the program with the link's SNR.
    @Test func externalNodeOnTheAir() {
        let mesh = SimMesh(seed: 5)
        let ext = ExternalNode(mesh: mesh, name: "ext0")
        let b = ListenerNode(mesh, "b")
        mesh.link(ext, b, snr: 6.5)
        var heard: [([UInt8], Double)] = []
        ext.onHeard = { bytes, snr, _ in heard.append((bytes, snr)) }
        #expect(ext.transmit([0x11, 0x00, 1, 2, 3]))
        #expect(b.heard.isEmpty)
        mesh.run(for: 2_000)
        #expect(b.heard.map(\.bytes) == [[0x11, 0x00, 1, 2, 3]])
        #expect(b.heard[0].at > 0)  // after its time on air
        b.enqueue([0x11, 0x00, 9], priority: 1)
        mesh.run(for: 2_000)
        #expect(heard.map(\.0) == [[0x11, 0x00, 9]] && heard[0].1 == 6.5)
        #expect(!ext.transmit([]))
    }
}

/// LOG_RX_DATA comes before parsing, as the firmware's `Dispatcher::checkRecv` calls `logRxRaw`:
/// an app (an observer uploader) sees packets the node then drops.
@Suite struct RawReceptionTests {
    @Test func aCompanionLogsWhatItCannotParse() throws {
        let mesh = SimMesh(seed: 5)
        let ext = ExternalNode(mesh: mesh, name: "ext0")
        let node = CompanionNode(mesh: mesh, name: "obs", identity: try LocalIdentity(seed: [UInt8](repeating: 3, count: 32)))
        mesh.link(ext, node, snr: 6.5)
        node.connected = true
        var logged: [[UInt8]] = []
        node.onFrame = { f in if f.bytes.first == 0x88 { logged.append(Array(f.bytes.dropFirst(3))) } }
        let packets: [[UInt8]] = [
            [0x4A, 0x01, 0xAA, 0x42],  // payload version 1
            [0x0A, 0xC1, 0xAA, 0xBB, 0xCC, 0xDD, 0x01],  // reserved 4-byte hop mode
            [0x0A, 0x01, 0xAA, 0x42],  // a good one
        ]
        for p in packets { #expect(ext.transmit(p)) }
        mesh.run(for: 10_000)
        #expect(logged == packets)
    }
}
