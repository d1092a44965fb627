import Testing
import Glibc
@testable import MeshLink

/// A server's read from one client: bytes, nothing yet, the peer's end, or a failure, each told apart.
@Suite struct SocketInputTests {
    @Test func bytesNothingYetEndOfStreamAndFailure() {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let (server, client) = (fds[0], fds[1])
        _ = fcntl(server, F_SETFL, fcntl(server, F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 16)

        #expect(SocketInput.read(server, into: &buffer) == .wouldBlock)
        _ = [UInt8]([1, 2, 3]).withUnsafeBytes { Glibc.write(client, $0.baseAddress, $0.count) }
        #expect(SocketInput.read(server, into: &buffer) == .bytes(3))
        #expect(Array(buffer[0..<3]) == [1, 2, 3])
        close(client)
        #expect(SocketInput.read(server, into: &buffer) == .endOfStream)
        close(server)
        #expect(SocketInput.read(server, into: &buffer) == .failed(.badFileDescriptor))
    }
}
