import MeshNode
import Glibc
import MeshCompanion
import MeshLink

/// Errors of the real-time host, each naming what to do.
public enum SimHostError: Error, CustomStringConvertible {
    case listen(port: UInt16, errno: Int32)
    case pty(errno: Int32)
    case symlink(path: String, errno: Int32)
    case capture(path: String, errno: Int32)

    public var description: String {
        switch self {
        case let .listen(port, e):
            return "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(e))); pick another --tcp-base or stop what uses that port"
        case let .pty(e): return "cannot create a pseudo-terminal: \(String(cString: strerror(e)))"
        case let .symlink(path, e): return "cannot create the pty link \(path): \(String(cString: strerror(e))); check that the --pty folder exists and is writable"
        case let .capture(path, e): return "cannot open capture file \(path): \(String(cString: strerror(e)))"
        }
    }
}

/// A non-blocking TCP listener on 127.0.0.1:`port`.
func listenLoopback(port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(1) | SocketFlags.nonBlocking | SocketFlags.closeOnExec, 0)
    guard fd >= 0 else { throw SimHostError.listen(port: port, errno: errno) }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0, listen(fd, 4) == 0 else { let e = errno; close(fd); throw SimHostError.listen(port: port, errno: e) }
    return fd
}

/// One companion node's connections: a TCP listener on 127.0.0.1 with one client at a time (a new
/// connection evicts the old one, as the firmware does) and, optionally, a pseudo-terminal.
/// Frames go `'<' len16 payload` in and `'>' len16 payload` out on both.
///
/// The TCP client's output is a `SocketOutput` (sent with MSG_NOSIGNAL: a client that hangs up
/// with replies pending is dropped, never a SIGPIPE), bounded: a client that leaves more than
/// `maxPending` bytes unread is disconnected and the simulator logs it, so a client that stops
/// reading neither grows the queue nor blocks the loop.
final class NodePort {
    let node: CompanionNode
    let port: UInt16
    let listenFD: Int32
    var clientFD: Int32 = -1
    var clientOut = SocketOutput()
    /// The client's descriptor is polled for writability (it has output waiting).
    var clientPolledForWrite = false
    let clientDecoder = FrameDecoder(side: .device)
    var ptyMaster: Int32 = -1
    var ptyOpen = false
    var ptyOut: [UInt8] = []
    let ptyDecoder = FrameDecoder(side: .device)
    var ptyLink: String? = nil
    static let maxPending = 64 * 1024

    init(node: CompanionNode, port: UInt16) throws {
        self.node = node
        self.port = port
        listenFD = try listenLoopback(port: port)
    }

    func openPty(linkPath: String) throws {
        let p = try SimPty(linkPath: linkPath, keepSlave: false)
        ptyMaster = p.master
        ptyLink = p.link
    }

    /// Queues bytes for the terminal and writes what it takes now (a pty gives EIO, never SIGPIPE,
    /// when nobody holds it; a terminal nobody reads misses frames, like a full firmware queue).
    func ptySend(_ bytes: UnsafeRawBufferPointer) {
        if !ptyOut.isEmpty {
            if ptyOut.count + bytes.count <= NodePort.maxPending { ptyOut += bytes }
            return
        }
        var off = 0
        while off < bytes.count {
            let n = (try? FileDescriptor(rawValue: ptyMaster).write(UnsafeRawBufferPointer(rebasing: bytes[off...]))) ?? 0
            guard n > 0 else { break }
            off += n
        }
        if off < bytes.count { ptyOut += bytes[off...] }
    }

    func ptyFlush() {
        while !ptyOut.isEmpty {
            let n = ptyOut.withUnsafeBytes { raw in (try? FileDescriptor(rawValue: ptyMaster).write(raw)) ?? 0 }
            guard n > 0 else { break }
            ptyOut.removeFirst(n)
        }
    }

    func closeAll() {
        if clientFD >= 0 { close(clientFD); clientFD = -1 }
        close(listenFD)
        if ptyMaster >= 0 { close(ptyMaster); ptyMaster = -1 }
        if let l = ptyLink { unlink(l) }
    }
}

/// Runs a simulated mesh in real time: virtual milliseconds follow the monotonic clock, and each
/// companion node is served over TCP (and optionally a pty) from one `poll()` loop.
public final class SimHost {
    public let world: SimWorld
    let loop = PollLoop()
    var ports: [NodePort] = []
    var start: UInt64 = 0
    var timer: PollLoop.TimerID? = nil
    var timerAt: UInt64 = .max
    var capture: UnsafeMutablePointer<FILE>? = nil
    var air: AirSocket? = nil
    var kissPorts: [KISSPort] = []
    /// One line for each client the simulator disconnects on its own (one that stopped reading).
    public var log: (String) -> Void = { _ in }

    public init(world: SimWorld, tcpBase: UInt16, ptyDir: String?, capturePath: String?, airPort: UInt16? = nil) throws {
        self.world = world
        if let p = airPort { air = try AirSocket(port: p) }
        for (i, c) in world.companions.enumerated() {
            let p = try NodePort(node: c, port: tcpBase &+ UInt16(i))
            if let dir = ptyDir { try p.openPty(linkPath: dir + "/" + c.name) }
            ports.append(p)
        }
        for m in world.modems { kissPorts.append(try KISSPort(node: m, linkDir: ptyDir)) }
        if let path = capturePath {
            guard let f = fopen(path, "w") else { throw SimHostError.capture(path: path, errno: errno) }
            capture = f
            world.mesh.onTransmit = { _, bytes in
                fputs(hexLine(bytes), f)
                fflush(f)
            }
        }
    }

    deinit {
        for p in ports { p.closeAll() }
        air?.closeAll()
        for k in kissPorts { k.closeAll() }
        if let f = capture { fclose(f) }
    }

    /// One line per companion node: `node NAME pubkey=HEX tcp=127.0.0.1:PORT [pty=PATH]`.
    public var announcement: [String] {
        var lines = ports.map { p in
            "node \(p.node.name) pubkey=\(p.node.publicKey.hex) tcp=127.0.0.1:\(p.port)" + (p.ptyLink.map { " pty=\($0)" } ?? "")
        }
        for r in world.repeaters { lines.append("repeater \(r.name) pubkey=\(r.publicKey.hex)") }
        for r in world.rooms { lines.append("room \(r.name) pubkey=\(r.publicKey.hex)") }
        if let a = air { for e in world.externals { lines.append("external \(e.name) air=127.0.0.1:\(a.port)") } }
        for k in kissPorts { lines.append("kiss \(k.node.name) pubkey=\(k.node.identity.publicKey.hex) pty=\(k.link ?? k.path)") }
        return lines
    }

    var virtualNow: UInt64 { monotonicMilliseconds() &- start }

    func pump() {
        world.mesh.run(until: virtualNow)
        rearm()
    }

    func rearm() {
        guard let d = world.mesh.scheduler.nextDeadline else { return }
        if d == timerAt { return }
        if let t = timer { loop.cancelTimer(t) }
        timerAt = d
        timer = loop.addTimer(at: start &+ d) { [unowned self] in
            self.timer = nil; self.timerAt = .max
            self.pump()
        }
    }

    /// Runs until SIGINT/SIGTERM, or for `seconds` if given.
    public func run(seconds: Double?) throws {
        start = monotonicMilliseconds() &- world.mesh.now
        for p in ports { attach(p) }
        if let a = air { attachAir(a) }
        for k in kissPorts { attachKISS(k) }
        try loop.handleSignals()
        pump()
        let deadline = seconds.map { monotonicMilliseconds() &+ UInt64($0 * 1000) }
        _ = loop.run(until: deadline)
        loop.restoreSignals()
    }

    private func attach(_ p: NodePort) {
        p.node.onFrame = { [unowned self, unowned p] f in self.deliver(f, to: p) }
        // A rebooting radio's TCP connection dies with it.
        p.node.onPowerDown = { [unowned self, unowned p] in self.dropClient(p) }
        if p.ptyMaster >= 0 { p.node.connected = true }
        loop.register(fd: p.listenFD, events: .readable) { [unowned self, unowned p] _ in
            guard case .success(let fd) = retryingOnInterrupt({ accept(p.listenFD, nil, nil) }) else { return }
            // While the radio is down (rebooting, or off) nobody answers: the connection is closed.
            self.pump()
            guard p.node.powered else { close(fd); return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if p.clientFD >= 0 { self.loop.unregister(fd: p.clientFD); close(p.clientFD) } // new connection evicts the old
            p.clientFD = fd
            p.clientOut = SocketOutput()
            p.clientPolledForWrite = false
            p.clientDecoder.reset()
            p.node.connected = true
            self.watchClient(p)
        }
        if p.ptyMaster >= 0 { watchPty(p) }
    }

    /// A frame from the node to every transport attached (like `MultiSerialInterface::writeFrame`).
    private func deliver(_ frame: EncodedFrame, to p: NodePort) {
        guard p.clientFD >= 0 || p.ptyOpen else { return }
        frame.withWireBytes(.fromRadio) { wire in
            if p.clientFD >= 0 { p.clientOut.append(contentsOf: wire) }
            if p.ptyOpen { p.ptySend(wire) }
        }
        if p.clientFD >= 0 { flushClient(p) }
    }

    /// Sends what the client takes now; drops a client that is gone or has too much unread.
    private func flushClient(_ p: NodePort) {
        let fd = p.clientFD
        guard fd >= 0 else { return }
        guard p.clientOut.flush(to: fd) else { dropClient(p); return }  // hung up, replies pending
        if p.clientOut.unsent > NodePort.maxPending {
            log("node \(p.node.name): its TCP client left \(p.clientOut.unsent) bytes unread (limit \(NodePort.maxPending)); disconnected.")
            dropClient(p)
            return
        }
        let wantsWrite = p.clientOut.unsent > 0
        if wantsWrite != p.clientPolledForWrite {
            p.clientPolledForWrite = wantsWrite
            loop.setEvents(fd: fd, wantsWrite ? [.readable, .writable] : .readable)
        }
    }

    /// Closes the node's TCP client, if it has one.
    private func dropClient(_ p: NodePort) {
        guard p.clientFD >= 0 else { return }
        loop.unregister(fd: p.clientFD)
        close(p.clientFD)
        p.clientFD = -1
        p.clientOut = SocketOutput()
        p.clientPolledForWrite = false
        p.node.connected = p.ptyMaster >= 0
    }

    private func watchClient(_ p: NodePort) {
        let fd = p.clientFD
        loop.register(fd: fd, events: .readable) { [unowned self, unowned p] ev in
            guard p.clientFD == fd else { return }
            if ev.contains(.writable) {
                self.flushClient(p)
                guard p.clientFD == fd else { return }
            }
            var buf = [UInt8](repeating: 0, count: 4096)
            let input = SocketInput.read(fd, into: &buf)
            if case .bytes(let n) = input {
                self.feed(p, decoder: p.clientDecoder, bytes: Array(buf[0 ..< n]))
            } else if input != .wouldBlock {  // end of stream, or a failed socket
                self.dropClient(p)
            }
        }
    }

    private func watchPty(_ p: NodePort) {
        let fd = p.ptyMaster
        loop.register(fd: fd, events: .readable) { [unowned self, unowned p] ev in
            if ev.contains(.writable) {
                p.ptyFlush()
                if p.ptyOut.isEmpty { self.loop.setEvents(fd: fd, .readable) }
            }
            var buf = [UInt8](repeating: 0, count: 4096)
            let input = SocketInput.read(fd, into: &buf)
            if case .bytes(let n) = input {
                p.ptyOpen = true
                self.feed(p, decoder: p.ptyDecoder, bytes: Array(buf[0 ..< n]))
                if !p.ptyOut.isEmpty { self.loop.setEvents(fd: fd, [.readable, .writable]) }
                return
            }
            if input == .wouldBlock { return }
            // Nobody has the terminal open: stop writing, look again shortly.
            p.ptyOpen = false
            p.ptyOut.removeAll()
            p.ptyDecoder.reset()
            self.loop.unregister(fd: fd)
            self.loop.addTimer(after: 50) { [unowned self, unowned p] in self.watchPty(p) }
        }
    }

    private func feed(_ p: NodePort, decoder: FrameDecoder, bytes: [UInt8]) {
        pump()
        var frames: [[UInt8]] = []
        bytes.withUnsafeBytes { raw in decoder.receive(raw) { frames.append(Array($0)) } }
        for f in frames { p.node.receive(frame: f) }
        pump()
    }
}
