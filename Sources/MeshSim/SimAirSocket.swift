import MeshNode
import Glibc
import MeshLink

/// The air socket of `pocketmesh sim --air-port PORT`: programs of other implementations attach
/// to the simulated air as the topology's `external` nodes, one TCP connection each (127.0.0.1
/// only), speaking `AirFrame`s: a hello naming the node first, then packets both ways.
final class AirSocket {
    let port: UInt16
    let listenFD: Int32
    final class Client {
        let fd: Int32
        var inBuffer: [UInt8] = []
        /// Sent with MSG_NOSIGNAL: a program that hangs up with packets pending is dropped.
        var out = SocketOutput()
        var polledForWrite = false
        var node: ExternalNode?
        init(fd: Int32) { self.fd = fd }
    }
    var clients: [Int32: Client] = [:]
    /// Unread bytes a client may leave before it is disconnected (and logged).
    static let maxPending = 256 * 1024
    /// Connections at once; one more is closed at once (and logged).
    static let maxClients = 64

    init(port: UInt16) throws { self.port = port; listenFD = try listenLoopback(port: port) }

    func closeAll() {
        for c in clients.values { close(c.fd) }
        clients.removeAll()
        close(listenFD)
    }
}

extension SimHost {
    func attachAir(_ a: AirSocket) {
        loop.register(fd: a.listenFD, events: .readable) { [unowned self, unowned a] _ in
            guard case .success(let fd) = retryingOnInterrupt({ accept(a.listenFD, nil, nil) }) else { return }
            guard a.clients.count < AirSocket.maxClients else {
                close(fd)
                self.log("air socket: \(AirSocket.maxClients) programs are attached; a new connection was closed.")
                return
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let c = AirSocket.Client(fd: fd)
            a.clients[fd] = c
            self.loop.register(fd: fd, events: .readable) { [unowned self, unowned a] ev in self.airReady(a, c, ev) }
        }
    }

    private func airReady(_ a: AirSocket, _ c: AirSocket.Client, _ ev: PollEvents) {
        guard a.clients[c.fd] === c else { return }
        if ev.contains(.writable) {
            airFlush(c)
            guard a.clients[c.fd] === c else { return }
        }
        var buf = [UInt8](repeating: 0, count: 4096)
        let input = SocketInput.read(c.fd, into: &buf)
        guard case .bytes(let n) = input else {
            if input != .wouldBlock { airDrop(a, c) }  // end of stream, or a failed socket
            return
        }
        c.inBuffer += buf[0..<n]
        guard let frames = AirFrame.take(&c.inBuffer) else { airRefuse(a, c, "malformed frame"); return }
        pump()
        for f in frames {
            guard a.clients[c.fd] === c else { break }  // dropped meanwhile
            switch f {
            case .hello(let name):
                guard c.node == nil else { airRefuse(a, c, "hello twice"); return }
                guard let node = world.externals.first(where: { $0.name == name }) else {
                    airRefuse(a, c, "no external node named \(name) in the topology"); return
                }
                if let other = a.clients.values.first(where: { $0.node === node }) { airDrop(a, other) }  // a new connection replaces the old
                c.node = node
                node.onHeard = { [unowned self, unowned c] bytes, snr, rssi in
                    let q = Int8(clamping: Int((snr * 4).rounded()))
                    self.airWrite(c, AirFrame.heard(snrQuarterDb: q, rssi: Int8(clamping: rssi), packet: bytes).encoded)
                }
            case .send(let packet):
                guard let node = c.node else { airRefuse(a, c, "send before hello"); return }
                node.transmit(packet)
            case .heard, .error:
                airRefuse(a, c, "unexpected frame"); return
            }
        }
        pump()
    }

    private func airWrite(_ c: AirSocket.Client, _ bytes: [UInt8]) {
        guard let a = air, a.clients[c.fd] === c else { return }
        c.out.append(contentsOf: bytes)
        airFlush(c)
    }

    /// Sends what the program takes now; drops one that is gone or has too much unread.
    private func airFlush(_ c: AirSocket.Client) {
        guard let a = air, a.clients[c.fd] === c else { return }
        guard c.out.flush(to: c.fd) else { airDrop(a, c); return }  // hung up with packets pending
        if c.out.unsent > AirSocket.maxPending {
            log("air socket: \(c.node?.name ?? "a program") left \(c.out.unsent) bytes unread (limit \(AirSocket.maxPending)); disconnected.")
            airDrop(a, c)
            return
        }
        let wantsWrite = c.out.unsent > 0
        if wantsWrite != c.polledForWrite {
            c.polledForWrite = wantsWrite
            loop.setEvents(fd: c.fd, wantsWrite ? [.readable, .writable] : .readable)
        }
    }

    private func airRefuse(_ a: AirSocket, _ c: AirSocket.Client, _ why: String) {
        let f = AirFrame.error(why).encoded
        _ = f.withUnsafeBytes { raw in retryingOnInterrupt { send(c.fd, raw.baseAddress!, raw.count, SocketFlags.noSignal | SocketFlags.dontWait) } }
        airDrop(a, c)
    }

    private func airDrop(_ a: AirSocket, _ c: AirSocket.Client) {
        guard a.clients[c.fd] === c else { return }
        loop.unregister(fd: c.fd)
        close(c.fd)
        a.clients[c.fd] = nil
        c.node?.onHeard = nil
        c.node = nil
    }
}
