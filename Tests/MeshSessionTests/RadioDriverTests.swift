import Glibc
import MeshCompanion
import MeshLink
@testable import MeshDaemonClient
import Testing
@testable import MeshOps
@testable import MeshSession

/// The real-I/O driver over a socketpair: a tiny scripted radio answers on the other end, inside
/// the same poll loop (one thread, no sleeps).
final class ScriptedRadio {
    let fd: Int32
    let decoder = FrameDecoder(side: .device)
    var received: [[UInt8]] = []
    /// Frames to answer each command code with (pushes may come first).
    var answers: [UInt8: [[UInt8]]] = [:]
    /// Answers computed from the whole command (tried before `answers`; nil falls through).
    var respond: (([UInt8]) -> [[UInt8]]?)? = nil

    init(fd: Int32) { self.fd = fd }

    func readable() {
        var buf = [UInt8](repeating: 0, count: 1024)
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return }
        var frames: [[UInt8]] = []
        buf.withUnsafeBytes { raw in
            decoder.receive(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { frames.append(Array($0)) }
        }
        for f in frames {
            received.append(f)
            for reply in respond?(f) ?? answers[f[0]] ?? [] { send(reply) }
        }
    }

    func send(_ payload: [UInt8]) {
        let wire = [0x3E, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload
        _ = wire.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

/// `oneShot`: set up as the one-shot command line sets it up (no drain on MSG_WAITING).
func makePair(oneShot: Bool = false) -> (Radio, ScriptedRadio) {
    var fds: [Int32] = [0, 0]
    _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
    for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    let link = TCPLink(adopting: FileDescriptor(rawValue: fds[0]), address: TCPAddress(host: "pair", port: 1))
    var config = SessionConfig()
    config.drainOnStart = false
    config.commandTimeout = 500
    config.drainOnWaiting = !oneShot
    let radio = Radio(link: link, config: config)
    let peer = ScriptedRadio(fd: fds[1])
    radio.loop.register(fd: fds[1], events: .readable) { _ in peer.readable() }
    peer.answers[0x16] = [deviceInfoFrame()]
    peer.answers[0x01] = [[0x80] + keyB, selfInfoFrame(name: "scripted")]  // a push before the response
    return (radio, peer)
}

@Suite struct RadioDriverTests {
    @Test func handshakeAndCommandsOverARealDescriptor() throws {
        let (radio, peer) = makePair()
        defer { radio.loop.unregister(fd: peer.fd); close(peer.fd) }
        var pushes: [[UInt8]] = []
        radio.onEvent = { if case .push(let f) = $0 { pushes.append(f.frame) } }
        try radio.connect(timeoutMilliseconds: 2_000)
        #expect(peer.received.first == [0x16, 0x03])
        #expect(pushes == [[0x80] + keyB])
        peer.answers[0x05] = [[0x09] + le32(1_763_000_000)]
        let r = try radio.call([0x05], expecting: .codes(CodeSet(0x09)))
        #expect(r == .frame([0x09] + le32(1_763_000_000)))

        let info = try Executor(radio: radio, timeout: 500).execute(.info)
        #expect(info.value["name"] == .string("scripted"))
        #expect(info.value["public_key"] == .hex(keyA))
        #expect(info.value["firmware_version"] == .string("v1.17.1"))
    }

    @Test func drainEndsAtNoMoreMessagesWithoutWaitingForMoreBytes() throws {
        let (radio, peer) = makePair()
        defer { radio.loop.unregister(fd: peer.fd); close(peer.fd) }
        try radio.connect(timeoutMilliseconds: 2_000)
        peer.answers[0x0A] = [[0x0A]]  // NO_MORE_MESSAGES, and then silence
        radio.session.drain(now: radio.now)
        radio.pump()
        let start = radio.now
        let done = try radio.run(until: start + 2_000) { !radio.session.draining }
        #expect(done)
        #expect(radio.now - start < 1_000, "the drain ended only when the wait timed out")
    }

    @Test func unansweredCommandTimesOutAndRefusalIsNamed() throws {
        let (radio, peer) = makePair()
        defer { radio.loop.unregister(fd: peer.fd); close(peer.fd) }
        try radio.connect(timeoutMilliseconds: 2_000)
        let exec = Executor(radio: radio, timeout: 300)
        #expect(throws: ClientError.self) { try exec.execute(.battery) }
        do { _ = try exec.execute(.battery) } catch { #expect(error.exitCode == 4) }
        peer.answers[0x06] = [[0x01, 0x06]]
        do { _ = try exec.execute(.timeSync); Issue.record("expected a refusal") } catch {
            #expect(error.exitCode == 5)
            #expect(error.description.contains("ERR 6"))
        }
    }

    @Test func lostLinkIsALinkError() throws {
        let (radio, peer) = makePair()
        try radio.connect(timeoutMilliseconds: 2_000)
        radio.loop.unregister(fd: peer.fd)
        close(peer.fd)
        do { _ = try radio.call([0x05], expecting: .codes(CodeSet(0x09))); Issue.record("expected a link error") } catch {
            #expect(error.exitCode == 3)
        }
    }

    @Test func contactResolution() throws {
        let (radio, peer) = makePair()
        defer { radio.loop.unregister(fd: peer.fd); close(peer.fd) }
        try radio.connect(timeoutMilliseconds: 2_000)
        peer.answers[0x04] = [[0x02] + le32(2), contactFrame(key: keyA, name: "Alice", lastmod: 1), [0x88, 1, 2, 3],
                              contactFrame(key: keyB, name: "bob", lastmod: 2), [0x04] + le32(2)]
        let exec = Executor(radio: radio, timeout: 500)
        #expect(try exec.resolve("Alice").publicKey == keyA)
        #expect(try exec.resolve("alice").publicKey == keyA)
        #expect(try exec.resolve(Hex.encode(keyB.prefix(3))).name == "bob")
        do { _ = try exec.resolve("carol"); Issue.record("expected not found") } catch { #expect(error.exitCode == 6) }
    }
}
