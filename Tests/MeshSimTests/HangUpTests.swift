import Glibc
import MeshCompanion
import MeshLink
import Testing
@testable import MeshNode
@testable import MeshSim

/// `pocketmesh sim`'s companion ports against clients that hang up: in this process, where
/// SIGPIPE has its default action (the test runner does not ignore it), so a write without
/// MSG_NOSIGNAL to a client that went away would end the whole run.
@Suite(.serialized) struct HangUpTests {
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return UInt16(bigEndian: a.sin_port)
    }

    /// A blocking client socket on 127.0.0.1:`port`, its receive buffer `rcvbuf` bytes if given.
    static func connectClient(_ port: UInt16, rcvbuf: Int32? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = rcvbuf { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(rc == 0)
        return fd
    }

    static func frame(_ payload: [UInt8]) -> [UInt8] { [0x3C, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload }
    static let deviceQuery = frame([0x16, 0x03])
    static let getContacts = frame([0x04])

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
    }

    /// Whatever the socket holds now, without waiting.
    static func drain(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    func host() throws -> (SimHost, UInt16) {
        let t = Topology(nodes: [NodeSpec(name: "a", role: .companion), NodeSpec(name: "b", role: .companion)],
                         links: [LinkSpec(a: "a", b: "b")])
        let world = try SimWorld(topology: t)
        for _ in 0..<20 {
            let port = Self.freePort()
            if port < 65000, let h = try? SimHost(world: world, tcpBase: port, ptyDir: nil, capturePath: nil) { return (h, port) }
        }
        throw SimHostError.listen(port: 0, errno: EADDRINUSE)
    }

    /// The reproduction: 50 DEVICE_QUERY and 50 GET_CONTACTS, closed without reading.
    @Test func aClientThatHangsUpWithRepliesPendingIsDropped() throws {
        let (h, port) = try host()
        for _ in 0..<3 {
            let gone = Self.connectClient(port)
            Self.sendAll(gone, Array(repeating: Self.deviceQuery, count: 50).flatMap { $0 } + Array(repeating: Self.getContacts, count: 50).flatMap { $0 })
            close(gone)
            try h.run(seconds: 0.3)
        }
        // Still serving: a well-behaved client gets DEVICE_INFO.
        let ok = Self.connectClient(port)
        defer { close(ok) }
        Self.sendAll(ok, Self.deviceQuery)
        try h.run(seconds: 0.3)
        let reply = Self.drain(ok)
        #expect(reply.count > 4 && reply[0] == 0x3E && reply[3] == ResponseCode.deviceInfo.rawValue, "\(reply.prefix(8))")
    }

    /// A client that asks and never reads: its queue is bounded, it is disconnected and logged.
    @Test func aClientThatStopsReadingIsDisconnectedAndLogged() throws {
        let (h, port) = try host()
        var logged: [String] = []
        h.log = { logged.append($0) }
        let slow = Self.connectClient(port, rcvbuf: 4096)
        defer { close(slow) }
        let burst = Array(repeating: Self.deviceQuery, count: 400).flatMap { $0 }
        // The kernel takes a megabyte or so first (loopback's send buffer grows with its window).
        for _ in 0..<400 where logged.isEmpty {
            Self.sendAll(slow, burst)
            try h.run(seconds: 0.02)
        }
        #expect(logged.count == 1 && logged.first?.contains("bytes unread (limit 65536); disconnected") == true, "\(logged)")
        // The host serves the next client.
        let ok = Self.connectClient(port)
        defer { close(ok) }
        Self.sendAll(ok, Self.deviceQuery)
        try h.run(seconds: 0.3)
        #expect(Self.drain(ok).first == 0x3E)
    }
}
