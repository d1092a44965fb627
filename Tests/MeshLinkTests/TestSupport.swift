import Glibc
@testable import MeshLink

/// A pseudo-terminal pair: `master` is the test's end, `path` is the slave device a link opens.
final class PseudoTerminal {
    let master: Int32
    let path: String

    init() throws {
        var master: Int32 = -1, slave: Int32 = -1
        var name = [CChar](repeating: 0, count: 128)
        guard openpty(&master, &slave, &name, nil, nil) == 0 else { throw Errno.current }
        // Raw on the slave side too, so bytes pass unchanged in both directions.
        var t = termios()
        tcgetattr(slave, &t)
        cfmakeraw(&t)
        tcsetattr(slave, TCSANOW, &t)
        Glibc.close(slave)
        let flags = fcntl(master, F_GETFL)
        _ = fcntl(master, F_SETFL, flags | O_NONBLOCK)
        self.master = master
        self.path = String(cString: name)
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
    }

    /// Reads whatever arrives within `timeout` ms until `count` bytes are in.
    func read(count: Int, timeout: Int32 = 2000) -> [UInt8] {
        var result: [UInt8] = []
        let deadline = monotonicMilliseconds() + UInt64(timeout)
        while result.count < count, monotonicMilliseconds() < deadline {
            var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 50)
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
            if n > 0 { result += chunk[0..<n] }
        }
        return result
    }

    func close() { Glibc.close(master) }
}

/// A TCP listener on 127.0.0.1 with an ephemeral port.
final class LoopbackListener {
    let fd: Int32
    let port: UInt16

    init(backlog: Int32 = 8) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else { throw Errno.current }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    /// Blocks up to `timeout` ms for one connection.
    func accept(timeout: Int32 = 2000) -> Int32 {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, timeout) == 1 else { return -1 }
        return Glibc.accept(fd, nil, nil)
    }

    func close() { Glibc.close(fd) }
}

func readAll(_ fd: Int32, count: Int, timeout: Int32 = 2000) -> [UInt8] {
    var result: [UInt8] = []
    let deadline = monotonicMilliseconds() + UInt64(timeout)
    while result.count < count, monotonicMilliseconds() < deadline {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 50) == 1 else { continue }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { result += chunk[0..<n] } else if n == 0 { break }
    }
    return result
}

func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}

/// Reads from a link through a poll loop until `count` bytes arrived or `timeout` ms passed.
func receive(from link: ByteLink, count: Int, timeout: UInt64 = 2000) throws -> [UInt8] {
    let loop = PollLoop()
    var received: [UInt8] = []
    var failure: LinkError? = nil
    loop.attach(link, onReceive: { chunk in
        received += chunk
        if received.count >= count { loop.stop() }
    }, onError: { error in
        failure = error
        loop.stop()
    })
    loop.run(until: monotonicMilliseconds() + timeout)
    if let failure { throw failure }
    return received
}
