import Glibc
import MeshCompanion
import MeshLink
import MeshNode
import MeshSession

/// `--companion-listen HOST:PORT`: the companion node serves the companion protocol over TCP (the
/// firmware's WiFi companion: `<` length frames in, `>` length frames out), one client at a time;
/// a new connection evicts the old one, as the firmware does.
///
/// The client's output is sent with MSG_NOSIGNAL (`SocketOutput`): a client that hangs up at any
/// point, replies pending or not, is dropped and the node goes on (its contacts and queued
/// messages are the node's, not the connection's). It is bounded: a client that leaves more than
/// `maxPending` bytes unread is disconnected and logged, so it neither grows the queue nor
/// blocks the loop.
final class NodeCompanionServer {
    let node: CompanionNode
    let listenFD: Int32
    let address: String
    private var clientFD: Int32 = -1
    private var output = SocketOutput()
    private var polledForWrite = false
    private let decoder = FrameDecoder(side: .device)
    static let maxPending = 64 * 1024
    /// Where a disconnected slow reader is reported.
    var log: (String) -> Void = { writeError("pocketmesh node: \($0)") }

    init(node: CompanionNode, listen spec: String) throws {
        self.node = node
        let addr: TCPAddress
        do { addr = try TCPAddress(parsing: spec) } catch {
            throw ClientError.usage("--companion-listen \(spec): give HOST:PORT (an IPv4 address or localhost).")
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = addr.port.bigEndian
        let host = addr.host == "localhost" ? "127.0.0.1" : addr.host
        guard inet_pton(AF_INET, host, &sin.sin_addr) == 1 else {
            throw ClientError.usage("--companion-listen \(spec): HOST must be an IPv4 address or localhost.")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | SocketFlags.nonBlocking | SocketFlags.closeOnExec, 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard fd >= 0, rc == 0, listen(fd, 4) == 0 else {
            let e = errno
            if fd >= 0 { close(fd) }
            throw ClientError.link("cannot listen on \(host):\(addr.port): \(String(cString: strerror(e))).")
        }
        listenFD = fd
        address = "\(host):\(addr.port)"
    }

    deinit {
        if clientFD >= 0 { close(clientFD) }
        close(listenFD)
    }

    /// Serves on `loop`; `pump` runs the node's clock before and after each batch of frames.
    func attach(to loop: PollLoop, pump: @escaping () -> Void) {
        node.onFrame = { [unowned self, unowned loop] f in
            guard self.clientFD >= 0 else { return }
            f.withWireBytes(.fromRadio) { wire in self.output.append(contentsOf: wire) }
            self.flush(loop)
        }
        node.onPowerDown = { [unowned self, unowned loop] in self.drop(loop) }
        loop.register(fd: listenFD, events: .readable) { [unowned self, unowned loop] _ in
            guard case .success(let fd) = retryingOnInterrupt({ accept(self.listenFD, nil, nil) }) else { return }
            pump()
            guard self.node.powered else { close(fd); return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            self.drop(loop)
            self.clientFD = fd
            self.output = SocketOutput()
            self.polledForWrite = false
            self.decoder.reset()
            self.node.connected = true
            loop.register(fd: fd, events: .readable) { [unowned self, unowned loop] ev in
                guard self.clientFD == fd else { return }
                if ev.contains(.writable) {
                    self.flush(loop)
                    guard self.clientFD == fd else { return }
                }
                var buf = [UInt8](repeating: 0, count: 4096)
                let input = SocketInput.read(fd, into: &buf)
                guard case .bytes(let n) = input else {
                    if input != .wouldBlock { self.drop(loop) }  // end of stream, or a failed socket
                    return
                }
                pump()
                var frames: [[UInt8]] = []
                self.decoder.receive(Array(buf[0..<n])) { frames.append(Array($0)) }
                for f in frames { self.node.receive(frame: f) }
                pump()
            }
        }
    }

    /// Sends what the client takes now; drops a client that is gone or has too much unread.
    private func flush(_ loop: PollLoop) {
        guard clientFD >= 0 else { return }
        guard output.flush(to: clientFD) else { drop(loop); return }  // hung up, replies pending
        if output.unsent > Self.maxPending {
            log("the companion client on \(address) left \(output.unsent) bytes unread (limit \(Self.maxPending)); disconnected.")
            drop(loop)
            return
        }
        let wantsWrite = output.unsent > 0
        if wantsWrite != polledForWrite {
            polledForWrite = wantsWrite
            loop.setEvents(fd: clientFD, wantsWrite ? [.readable, .writable] : .readable)
        }
    }

    private func drop(_ loop: PollLoop) {
        guard clientFD >= 0 else { return }
        loop.unregister(fd: clientFD)
        close(clientFD)
        clientFD = -1
        output = SocketOutput()
        polledForWrite = false
        node.connected = false
    }
}
