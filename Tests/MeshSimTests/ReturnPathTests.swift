import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

@Suite struct ReturnPathRetryTests {
    @Test func aFloodedAckFromAContactWeReachDirectGetsTheReturnPathAgain() throws {
        let w = try line(repeaters: 2)
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        let aKey = w.companions[0].publicKey, bKey = w.companions[1].publicKey
        _ = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "first", timestamp: w.companions[0].epochNow))
        w.mesh.run(for: 20_000)
        let rpts = w.repeaters.map { $0.publicKey.hashByte }
        #expect(a.contact(bKey)?.outPath == rpts)
        // b forgets its path to a: its ACK to a's next (direct) message floods.
        #expect(b.call(CommandFrame.resetPath(aKey))?.first == 0x00)
        #expect(b.contact(aKey)!.outPathLength.isUnknown)
        a.frames.removeAll(); b.frames.removeAll()
        let sent = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "second", timestamp: w.companions[0].epochNow + 1))!
        #expect(sent[1] == 0) // direct
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 30_000))
        // Three seconds later a sends its return path again, direct: b learns the way back.
        #expect(w.mesh.run(until: { b.count(0x81) > 0 }, limit: 15_000))
        #expect(b.contact(aKey)?.outPath == rpts.reversed())
    }
}
