import Glibc
import MeshAir
import MeshCompanion
import MeshLink
import MeshNode
import MeshSession
import Testing
@testable import pocketmesh

/// `pocketmesh node --role companion --companion-listen`: clients that hang up with replies
/// pending, or stop reading, in this process (SIGPIPE at its default action: a plain `write` to a
/// client that went away would end the test run).
@Suite(.serialized) struct NodeListenerTests {
    func server() throws -> (NodeCompanionServer, RadioAir, UInt16) {
        let air = RadioAir(seed: 7, start: monotonicMilliseconds(), epochNow: UInt32(truncatingIfNeeded: time(nil)))
        let node = CompanionNode(mesh: air, name: "hangup", identity: LocalIdentity.generate())
        for _ in 0..<20 {
            let port = freePort()
            if let s = try? NodeCompanionServer(node: node, listen: "127.0.0.1:\(port)") { return (s, air, port) }
        }
        throw ClientError.link("no free port")
    }

    func freePort() -> UInt16 {
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

    func client(_ port: UInt16, rcvbuf: Int32? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = rcvbuf { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        return fd
    }

    func put(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
    }

    func frame(_ payload: [UInt8]) -> [UInt8] { [0x3C, UInt8(payload.count), 0] + payload }

    func drain(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    @Test func aClientThatHangsUpWithRepliesPendingIsDroppedAndTheNextServed() throws {
        let (s, air, port) = try server()
        let loop = PollLoop()
        s.attach(to: loop) { air.run(until: monotonicMilliseconds()) }
        for _ in 0..<3 {
            let gone = client(port)
            put(gone, Array(repeating: frame([0x16, 0x03]), count: 50).flatMap { $0 } + Array(repeating: frame([0x04]), count: 50).flatMap { $0 })
            close(gone)
            _ = loop.run(until: monotonicMilliseconds() + 300)
        }
        let ok = client(port)
        defer { close(ok) }
        put(ok, frame([0x16, 0x03]))
        _ = loop.run(until: monotonicMilliseconds() + 300)
        let reply = drain(ok)
        #expect(reply.count > 4 && reply[0] == 0x3E && reply[3] == ResponseCode.deviceInfo.rawValue)
    }

    @Test func aClientThatStopsReadingIsDisconnectedAndLogged() throws {
        let (s, air, port) = try server()
        var logged: [String] = []
        s.log = { logged.append($0) }
        let loop = PollLoop()
        s.attach(to: loop) { air.run(until: monotonicMilliseconds()) }
        let slow = client(port, rcvbuf: 4096)
        defer { close(slow) }
        let burst = Array(repeating: frame([0x16, 0x03]), count: 400).flatMap { $0 }
        // The kernel takes a megabyte or so first (loopback's send buffer grows with its window).
        for _ in 0..<400 where logged.isEmpty {
            put(slow, burst)
            _ = loop.run(until: monotonicMilliseconds() + 20)
        }
        #expect(logged.count == 1 && logged.first?.contains("bytes unread (limit 65536); disconnected") == true, "\(logged)")
        let ok = client(port)
        defer { close(ok) }
        put(ok, frame([0x16, 0x03]))
        _ = loop.run(until: monotonicMilliseconds() + 300)
        #expect(drain(ok).first == 0x3E)
    }
}
