import Glibc
import MeshLink
import MeshNode

/// A simulated KISS modem's pseudo-terminal: the host opens the slave (announced as
/// `kiss NAME pubkey=HEX pty=PATH`) as it would the modem's USB serial port. The slave stays open here too,
/// so the master never reports a hangup between hosts (no polling while nobody is attached).
final class KISSPort {
    let node: KISSModemNode
    let pty: SimPty
    var master: Int32 { pty.master }
    var path: String { pty.path }
    var link: String? { pty.link }
    var out: [UInt8] = []
    static let maxPending = 64 * 1024

    init(node: KISSModemNode, linkDir: String?) throws {
        self.node = node
        pty = try SimPty(linkPath: linkDir.map { $0 + "/" + node.name }, keepSlave: true)
    }

    func closeAll() { pty.close() }
}

extension SimHost {
    func attachKISS(_ p: KISSPort) {
        p.node.onWrite = { [unowned self, unowned p] bytes in
            if p.out.count + bytes.count > KISSPort.maxPending { return }  // a host that does not read misses frames
            p.out += bytes
            self.kissFlush(p)
        }
        loop.register(fd: p.master, events: .readable) { [unowned self, unowned p] ev in
            if ev.contains(.writable) { self.kissFlush(p) }
            var buf = [UInt8](repeating: 0, count: 1024)
            let n = buf.withUnsafeMutableBytes { raw in (try? FileDescriptor(rawValue: p.master).read(into: raw)) ?? 0 }
            guard n > 0 else { return }
            self.pump()
            p.node.receive(buf[0..<n])
            self.pump()
        }
    }

    private func kissFlush(_ p: KISSPort) {
        while !p.out.isEmpty {
            let n = p.out.withUnsafeBytes { raw in (try? FileDescriptor(rawValue: p.master).write(raw)) ?? 0 }
            guard n > 0 else { break }
            p.out.removeFirst(n)
        }
        loop.setEvents(fd: p.master, p.out.isEmpty ? .readable : [.readable, .writable])
    }
}
