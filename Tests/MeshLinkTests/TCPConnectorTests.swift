import Glibc
import Testing
@testable import MeshLink

/// A listener whose accept queue is full and never drained: the kernel drops every further SYN,
/// so a connect to it neither succeeds nor fails until its own timeout (what a radio that is
/// switched off behind a router looks like: the "link that drops SYNs" fault).
final class SYNDroppingListener {
    let listener: LoopbackListener
    var fillers: [Int32] = []
    var port: UInt16 { listener.port }

    init() throws {
        listener = try LoopbackListener(backlog: 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        // Two connections fill a backlog of 0 (the kernel allows backlog + 1); a third is sure.
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | SocketFlags.nonBlocking, 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        usleep(50_000)
    }

    func close() {
        for f in fillers { Glibc.close(f) }
        listener.close()
    }
}

@Suite struct TCPConnectorTests {
    static func loopback(_ port: UInt16) -> [TCPLink.Candidate] {
        TCPLink.literalCandidates(TCPAddress(host: "127.0.0.1", port: port))!
    }

    /// Drives the connector as a poll loop would, for at most `rounds` polls of 10 ms.
    static func drive(_ c: TCPConnector, rounds: Int = 200) {
        for _ in 0..<rounds {
            guard case .connecting = c.state, let fd = c.fd else { return }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&p, 1, 10) > 0 { c.ready(now: monotonicMilliseconds()) }
        }
    }

    @Test func connectsWithoutBlockingAndSetsTheLinkOptions() throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let c = TCPConnector(address: TCPAddress(host: "127.0.0.1", port: listener.port), candidates: Self.loopback(listener.port),
                             timeoutMilliseconds: 2_000, now: monotonicMilliseconds())
        Self.drive(c)
        guard case .connected(let link) = c.state else { Issue.record("not connected: \(c.state)"); return }
        defer { link.close() }
        var nodelay: Int32 = 0
        var length = socklen_t(4)
        getsockopt(link.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, &length)
        #expect(nodelay == 1)
        let peer = listener.accept()
        #expect(peer >= 0)
        Glibc.close(peer)
    }

    @Test func aClosedPortIsRefusedAsTheBlockingConnectSaysIt() throws {
        let listener = try LoopbackListener()
        let port = listener.port
        listener.close()
        let c = TCPConnector(address: TCPAddress(host: "127.0.0.1", port: port), candidates: Self.loopback(port),
                             timeoutMilliseconds: 2_000, now: monotonicMilliseconds())
        Self.drive(c)
        guard case .failed(let e) = c.state else { Issue.record("not failed: \(c.state)"); return }
        #expect(e == .refused("127.0.0.1:\(port)"))
    }

    /// A host that drops SYNs: the connector stays pending (the caller's loop goes on) and ends
    /// at its deadline, in virtual time, with the blocking connect's timeout sentence.
    @Test func aHostThatDropsSYNsTimesOutAtTheDeadline() throws {
        let syn = try SYNDroppingListener()
        defer { syn.close() }
        let start = monotonicMilliseconds()
        let c = TCPConnector(address: TCPAddress(host: "127.0.0.1", port: syn.port), candidates: Self.loopback(syn.port),
                             timeoutMilliseconds: 5_000, now: start)
        #expect(monotonicMilliseconds() - start < 1_000, "the connect blocked its caller")
        Self.drive(c, rounds: 5)
        guard case .connecting = c.state else { Issue.record("no longer connecting: \(c.state)"); return }
        #expect(c.fd != nil && c.deadline == start + 5_000)
        c.tick(now: start + 4_999)
        guard case .connecting = c.state else { Issue.record("gave up early"); return }
        c.tick(now: start + 5_000)
        guard case .failed(let e) = c.state else { Issue.record("not failed: \(c.state)"); return }
        #expect(e == .timeout("127.0.0.1:\(syn.port)", milliseconds: 5_000))
        #expect(c.fd == nil)
    }

    @Test func candidatesFromAddressBytes() {
        #expect(TCPLink.Candidate(ip: [10, 0, 0, 5], port: 5000)?.description == "10.0.0.5")
        #expect(TCPLink.Candidate(ip: [UInt8](repeating: 0, count: 15) + [1], port: 5000)?.description == "::1")
        #expect(TCPLink.Candidate(ip: [1, 2, 3], port: 5000) == nil)
        #expect(TCPLink.literalCandidates(TCPAddress(host: "radio.local", port: 5000)) == nil)
        #expect(TCPLink.literalCandidates(TCPAddress(host: "::1", port: 5000))?.count == 1)
    }
}
