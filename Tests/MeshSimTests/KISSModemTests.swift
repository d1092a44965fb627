import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// The simulator's KISS modem (`"role": "kiss"`) with MeshNode's KISS host and a repeater on it, in
/// one virtual time: what `pocketmesh node --radio kiss:PTY` runs against `pocketmesh sim`.
@Suite struct KISSModemTests {
    func world() throws -> (SimWorld, KISSModemNode, KISSHost, RepeaterNode, FrameApp, FrameApp) {
        let m = try BridgedMesh(role: "kiss", snr: (8, -3.5), seed: 21, airSeed: 4)
        let modem = m.w.modems[0], air = m.air
        let r = m.repeater(name: "linux", seed: 77, password: "secret")
        let host = KISSHost(air: air)
        host.write = { modem.receive($0) }
        modem.onWrite = { host.receive($0) }
        air.send = { host.send($0) }
        host.start(params: r.radio.params)
        return (m.w, modem, host, r, m.a, m.b)
    }

    @Test func companionsTalkThroughARepeaterOnTheModem() throws {
        let (w, modem, host, r, a, b) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        exchangeAdverts(w, [a, b])
        let aKey = w.companions[0].publicKey, bKey = w.companions[1].publicKey
        #expect(a.contact(bKey) != nil && b.contact(aKey) != nil)
        for (from, to, key, text) in [(a, b, bKey, "hello"), (b, a, aKey, "back"), (a, b, bKey, "direct")] {
            from.frames.removeAll()
            #expect(from.call(try CommandFrame.sendTextMessage(to: key, text: text, timestamp: w.mesh.epochNow))?.first == 0x06)
            #expect(w.mesh.run(until: { from.count(0x82) > 0 }, limit: 60_000), "\(text) not acknowledged")
            let m = try #require(to.call(CommandFrame.syncNextMessage()))
            #expect(String(decoding: m[13...], as: UTF8.self) == text)
        }
        #expect(host.txDone == Int(modem.txCount) && modem.txCount > 0 && host.dropped == 0)
        #expect(r.radio.lastSNR == -3.5 || r.radio.lastSNR == 8)  // RxMeta carried the link's SNR
    }

    @Test func setHardwareRepliesAsTheFirmware() throws {
        let (w, modem, host, r, _, _) = try world()
        defer { withExtendedLifetime((w, r)) {} }
        var replies: [(UInt8, [UInt8])] = []
        host.onReply = { replies.append(($0, $1)) }
        host.request(.getIdentity)
        host.request(.ping)
        host.request(.getRadio)
        host.request(.getVersion)
        host.request(.getSignalReport)
        host.request(.getAirtime, [20])
        host.write?(KISSModem.frame(0x7E))
        host.request(.setRadio, [1, 2])
        host.request(.hash, [0x61, 0x62, 0x63])
        #expect(replies.map(\.0) == [0x81, 0x97, 0x8B, 0x91, 0x9A, 0x8F, 0xF1, 0xF1, 0x88])
        #expect(replies[0].1 == modem.identity.publicKey.bytes)
        #expect(replies[2].1 == [0x50, 0x51, 0xD5, 0x33, 0x24, 0xF4, 0x00, 0x00, 0x08, 0x05])
        #expect(replies[3].1 == [2, 0] && replies[4].1 == [1])
        #expect(replies[6].1 == [0x05] && replies[7].1 == [0x01])  // UnknownCmd, InvalidLength
        #expect(replies[8].1 == AirHex.decode("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        // A second data frame while one is pending: TxBusy.
        var raw: [UInt8] = []
        modem.onWrite = { raw += $0 }
        modem.receive(KISSModem.dataFrame([0x11, 0x00, 1]) + KISSModem.dataFrame([0x11, 0x00, 2]))
        #expect(raw == [0xC0, 0x06, 0xF1, 0x07, 0xC0])
        w.mesh.run(for: 5_000)
        #expect(Array(raw.prefix(10)) == [0xC0, 0x06, 0xF1, 0x07, 0xC0, 0xC0, 0x06, 0xF8, 0x01, 0xC0])  // then TxDone
    }
}
