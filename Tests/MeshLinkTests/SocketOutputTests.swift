import Testing
import Glibc
@testable import MeshLink

/// A server's per-client output: what a full socket does not take stays queued, in order, and a
/// gone peer is reported.
@Suite struct SocketOutputTests {
    func pair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let r = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        #expect(r == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    func drain(_ fd: Int32) -> [UInt8] {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n <= 0 { break }
            got += buf[0..<n]
        }
        return got
    }

    @Test func whatTheSocketDoesNotTakeStaysQueuedInOrder() {
        let (server, client) = pair()
        defer { close(server); close(client) }
        let message = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var out = SocketOutput()
        out.append(contentsOf: message)
        var received: [UInt8] = []
        var turns = 0
        while out.unsent > 0 || received.count < message.count {
            let sent = out.flush(to: server)
            #expect(sent)
            received += drain(client)
            turns += 1
            if turns > 10_000 { break }
        }
        #expect(turns > 1)  // the socket took it in parts
        #expect(received == message)
        #expect(out.unsent == 0 && out.start == 0 && out.bytes.isEmpty)
    }

    @Test func aGonePeerIsReported() {
        let (server, client) = pair()
        defer { close(server) }
        close(client)
        var out = SocketOutput()
        out.append(contentsOf: [1, 2, 3])
        let sent = out.flush(to: server)
        #expect(!sent)
    }

    @Test func nothingQueuedIsNothingToDo() {
        let (server, client) = pair()
        defer { close(server); close(client) }
        var out = SocketOutput()
        let sent = out.flush(to: server)
        #expect(sent)
        #expect(drain(client).isEmpty)
    }
}
