import Glibc
import MeshLink
import MeshNet
import MeshOps

/// One name asked of the servers of /etc/resolv.conf, on a poll loop: MeshNet's `DNSLookup` (the
/// protocol: queries, answers, retries, the next server) with the I/O it needs, one connected,
/// non-blocking UDP socket per server. The broker connections and the daemon's radio connect both
/// resolve through it, so neither ever blocks its loop on a lookup.
public final class DNSQuery {
    private var lookup: DNSLookup
    /// One socket per server of the lookup's config (-1: a server this host cannot ask).
    private var sockets: [Int32]
    private var buffer = [UInt8](repeating: 0, count: 1500)

    /// Starts asking: opens the sockets and sends the first datagram. `port` is the servers'
    /// (53; tests point it at their own server).
    public init(name: String, config: ResolverConfig, port: UInt16, now: UInt64) {
        let l = DNSLookup(name: name, config: config, now: now)
        lookup = l
        sockets = l.config.servers.map { text in
            guard let a = BrokerAddress.literal(text) else { return -1 }
            var storage = sockaddr_storage()
            let length = a.socketAddress(port: port, into: &storage)
            let f = socket(Int32(storage.ss_family), SocketType.datagram | SocketFlags.nonBlocking | SocketFlags.closeOnExec, 0)
            guard f >= 0 else { return -1 }
            // A connected UDP socket takes datagrams from that server only, and reports its ICMP
            // "port unreachable" as ECONNREFUSED: the next server is asked at once.
            let r = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(f, $0, length) } }
            if r != 0 { Glibc.close(f); return -1 }
            return f
        }
        flush(now: now)
    }

    deinit { close() }

    /// The addresses found (IPv4 first), or why there are none; nil while asking.
    public var outcome: DNSLookup.Outcome? { lookup.outcome }
    /// When `tick` is next due.
    public var deadline: UInt64 { lookup.deadline }
    /// The sockets to poll for reading.
    public var descriptors: [Int32] { sockets.filter { $0 >= 0 } }

    /// Reads every datagram waiting on `fd`; false when `fd` is not one of this query's.
    public func readable(_ fd: Int32, now: UInt64) -> Bool {
        guard fd >= 0, let index = sockets.firstIndex(of: fd) else { return false }
        while lookup.outcome == nil {
            let r = buffer.withUnsafeMutableBytes { raw in retryingOnInterrupt { recv(fd, raw.baseAddress, raw.count, 0) } }
            guard case .success(let n) = r else {
                if case .failure(let e) = r, e != .wouldBlock { lookup.unreachable(index, reason: e.message, now: now) }
                break
            }
            lookup.receive(Array(buffer[..<n]), from: index, now: now)
        }
        flush(now: now)
        return true
    }

    /// Retries and gives up on time.
    public func tick(now: UInt64) {
        lookup.tick(now: now)
        flush(now: now)
    }

    /// Closes the sockets (also done once there is an outcome).
    public func close() {
        for f in sockets where f >= 0 { Glibc.close(f) }
        sockets = []
    }

    /// Sends the lookup's datagrams; a server that cannot be asked is passed over.
    private func flush(now: UInt64) {
        while !lookup.outgoing.isEmpty {
            let (index, bytes) = lookup.outgoing.removeFirst()
            let f = index < sockets.count ? sockets[index] : -1
            if f < 0 {
                lookup.unreachable(index, reason: "not an IP address this host can reach", now: now)
                continue
            }
            let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { send(f, raw.baseAddress, raw.count, SocketFlags.noSignal) } }
            if case .failure(let e) = r, e != .wouldBlock {
                lookup.unreachable(index, reason: e.message, now: now)
            }
        }
        if lookup.outcome != nil { close() }
    }
}
