import Glibc
import MeshCompanion
import Testing
@testable import MeshSession

/// The executor against a scripted radio: what it asks the radio and how it reads the answers.
@Suite struct ExecutorTests {
    func connected() throws -> (Radio, ScriptedRadio, Executor) {
        let (radio, peer) = makePair()
        try radio.connect(timeoutMilliseconds: 2_000)
        peer.answers[0x04] = [[0x02] + le32(1), contactFrame(key: keyA, name: "rpt", lastmod: 1), [0x04] + le32(1)]
        return (radio, peer, Executor(radio: radio, timeout: 500))
    }

    func close(_ radio: Radio, _ peer: ScriptedRadio) {
        radio.loop.unregister(fd: peer.fd)
        Glibc.close(peer.fd)
    }

    @Test(arguments: [Request.send(to: "rpt", text: "", wait: true), .send(to: "rpt", text: "", wait: false), .channelSend("0", text: "")])
    func emptyTextIsAUsageErrorAndNothingIsSent(_ request: Request) throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        let before = peer.received.count
        do { _ = try exec.execute(request); Issue.record("expected a usage error") } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.hasSuffix("."))
        }
        #expect(peer.received.count == before, "a frame went to the radio: \(peer.received.dropFirst(before))")
    }
}
