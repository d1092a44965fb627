import Glibc
import MeshNet

/// A parsed `HOST[:PORT]`: `radio.local`, `10.0.0.5:5000`, `[fe80::1]:5000`, `::1` (default port 5000).
public struct TCPAddress: Hashable, Sendable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 5000
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16 = TCPAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 literal.
    public init(parsing text: String) throws(LinkError) {
        var host = Substring(text)
        var portText: Substring? = nil
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                throw .invalidAddress(text, reason: "an IPv6 address in brackets needs a closing ]")
            }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else {
                    throw .invalidAddress(text, reason: "expected :PORT after ]")
                }
                portText = rest.dropFirst()
            }
        } else if let colon = host.firstIndex(of: ":") {
            if host[host.index(after: colon)...].contains(":") {
                // Several colons without brackets: a bare IPv6 literal, default port.
            } else {
                portText = host[host.index(after: colon)...]
                host = host[..<colon]
            }
        }
        guard !host.isEmpty else { throw .invalidAddress(text, reason: "the host is empty") }
        var port = TCPAddress.defaultPort
        if let portText {
            guard let value = UInt16(portText), value != 0 else {
                throw .invalidAddress(text, reason: "the port must be a number from 1 to 65535")
            }
            port = value
        }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around IPv6 literals.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Socket options that make a dead peer visible quickly.
public struct TCPLinkOptions: Sendable {
    /// Seconds of silence before the first keepalive probe.
    public var keepAliveIdleSeconds: Int32 = 5
    /// Seconds between probes.
    public var keepAliveIntervalSeconds: Int32 = 2
    /// Unanswered probes before the kernel declares the connection dead (ETIMEDOUT).
    public var keepAliveProbes: Int32 = 3
    /// Milliseconds that written data may stay unacknowledged before the connection is dropped.
    public var userTimeoutMilliseconds: UInt32 = 10_000
    /// Out-buffer capacity in bytes.
    public var outBufferCapacity = 4096

    public init() {}
}

/// A TCP link to a WiFi/Ethernet companion radio (or a companion peer on loopback).
public final class TCPLink: ByteLink {
    public let address: TCPAddress
    public private(set) var lastReceiveMs: UInt64
    public var framing: LinkFraming { .stream }
    public var fd: Int32 { descriptor.rawValue }
    public var hasPendingOutput: Bool { !writer.out.isEmpty }
    public var description: String { "tcp \(address)" }

    private let descriptor: FileDescriptor
    private var writer: StreamWriter
    private var closed = false

    /// Resolves `address` (getaddrinfo) and tries each result with a non-blocking connect until one
    /// succeeds or `timeoutMilliseconds` have passed in all. Then sets TCP_NODELAY, SO_KEEPALIVE
    /// with short probe times and TCP_USER_TIMEOUT. Blocks the caller for at most the timeout.
    public init(connectingTo address: TCPAddress, timeoutMilliseconds: Int = 5000,
                options: TCPLinkOptions = TCPLinkOptions()) throws(LinkError) {
        self.address = address
        let deadline = monotonicMilliseconds() + UInt64(max(0, timeoutMilliseconds))
        let candidates = try Self.resolve(address)
        var failures: [Errno] = []
        var connected: FileDescriptor? = nil
        for candidate in candidates {
            let now = monotonicMilliseconds()
            if now >= deadline { failures.append(.timedOut); break }
            do {
                connected = try Self.connect(candidate, remainingMilliseconds: Int(deadline - now))
                break
            } catch {
                failures.append(error)
            }
        }
        guard let descriptor = connected else {
            throw Self.connectError(failures, address: address, timeoutMilliseconds: timeoutMilliseconds)
        }
        self.descriptor = descriptor
        self.writer = StreamWriter(capacity: options.outBufferCapacity)
        self.lastReceiveMs = monotonicMilliseconds()
        Self.applyOptions(descriptor, options)
    }

    /// Wraps an already connected, non-blocking stream socket (e.g. one end of a socketpair).
    public init(adopting descriptor: FileDescriptor, address: TCPAddress,
                options: TCPLinkOptions = TCPLinkOptions()) {
        self.address = address
        self.descriptor = descriptor
        self.writer = StreamWriter(capacity: options.outBufferCapacity)
        self.lastReceiveMs = monotonicMilliseconds()
    }

    /// Wraps a socket whose non-blocking connect has just completed (`TCPConnector`), with the
    /// same socket options as `init(connectingTo:)`.
    public convenience init(connected descriptor: FileDescriptor, address: TCPAddress,
                            options: TCPLinkOptions = TCPLinkOptions()) {
        self.init(adopting: descriptor, address: address, options: options)
        Self.applyOptions(descriptor, options)
    }

    static func applyOptions(_ descriptor: FileDescriptor, _ options: TCPLinkOptions) {
        // Best effort: a failure here does not stop the link from working.
        try? descriptor.setOption(Int32(IPPROTO_TCP), TCP_NODELAY, Int32(1))
        try? descriptor.setOption(SOL_SOCKET, SO_KEEPALIVE, Int32(1))
        try? descriptor.setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, options.keepAliveIdleSeconds)
        try? descriptor.setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, options.keepAliveIntervalSeconds)
        try? descriptor.setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, options.keepAliveProbes)
        try? descriptor.setOption(Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, options.userTimeoutMilliseconds)
    }

    deinit { close() }

    /// One address to try: a socket address and the socket's family, type and protocol.
    public struct Candidate {
        public internal(set) var family: Int32
        var socketType: Int32
        var proto: Int32
        public var storage: sockaddr_storage
        public internal(set) var length: socklen_t

        init(family: Int32, socketType: Int32, proto: Int32, storage: sockaddr_storage, length: socklen_t) {
            self.family = family
            self.socketType = socketType
            self.proto = proto
            self.storage = storage
            self.length = length
        }

        /// A stream socket address from an IP address's bytes (4 for IPv4, 16 for IPv6) and a port.
        public init?(ip bytes: [UInt8], port: UInt16) {
            var storage = sockaddr_storage()
            let family: Int32
            let length: Int
            switch bytes.count {
            case 4:
                family = AF_INET
                length = MemoryLayout<sockaddr_in>.size
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.storeBytes(of: sa_family_t(AF_INET), toByteOffset: 0, as: sa_family_t.self)
                    raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self)
                    let at = MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
                    UnsafeMutableRawBufferPointer(rebasing: raw[at..<(at + 4)]).copyBytes(from: bytes)
                }
            case 16:
                family = AF_INET6
                length = MemoryLayout<sockaddr_in6>.size
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.storeBytes(of: sa_family_t(AF_INET6), toByteOffset: 0, as: sa_family_t.self)
                    raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!, as: UInt16.self)
                    let at = MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
                    UnsafeMutableRawBufferPointer(rebasing: raw[at..<(at + 16)]).copyBytes(from: bytes)
                }
            default:
                return nil
            }
            self.init(family: family, socketType: Int32(1) /* SOCK_STREAM */, proto: 0, storage: storage, length: socklen_t(length))
        }

        /// The address as text (for the log).
        public var description: String {
            var buf = [CChar](repeating: 0, count: 64)
            var s = storage
            let offset = family == AF_INET ? MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)! : MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            _ = withUnsafeBytes(of: &s) { raw in inet_ntop(family, raw.baseAddress! + offset, &buf, 64) }
            return String(cString: buf)
        }
    }

    /// The addresses of an IP literal (`10.0.0.5`, `::1`), found without asking anyone; nil for a
    /// host name (which needs /etc/hosts or DNS: the daemon asks without blocking, `TCPConnector`).
    public static func literalCandidates(_ address: TCPAddress) -> [Candidate]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address.host, &v4) == 1 {
            return Candidate(ip: withUnsafeBytes(of: &v4) { Array($0) }, port: address.port).map { [$0] }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address.host, &v6) == 1 {
            return Candidate(ip: withUnsafeBytes(of: &v6) { Array($0) }, port: address.port).map { [$0] }
        }
        return nil
    }

    /// A host's addresses without glibc's resolver (getaddrinfo, which would bring its name-service
    /// switch, DNS and IDN code into the static binary): an IP literal; the names of /etc/hosts;
    /// else DNS over UDP to the servers of /etc/resolv.conf (MeshNet's `DNSLookup`, the same
    /// protocol the daemon runs without blocking), waiting no longer than that file's timeouts.
    static func resolve(_ address: TCPAddress, hostsPath: String = "/etc/hosts", resolvConf: String = "/etc/resolv.conf",
                        dnsPort: UInt16 = 53) throws(LinkError) -> [Candidate] {
        if let literal = literalCandidates(address) { return literal }
        let listed = HostsFile.addresses(of: address.host, in: StateFile.readString(hostsPath) ?? "")
            .compactMap { literalCandidates(TCPAddress(host: $0, port: address.port))?.first }
        if !listed.isEmpty { return listed }
        var lookup = DNSLookup(name: address.host, config: ResolverConfig(parsing: StateFile.readString(resolvConf) ?? ""),
                               now: monotonicMilliseconds())
        // One connected UDP socket per server: it takes that server's answers only, and reports
        // its ICMP "port unreachable" as ECONNREFUSED (the next server is asked at once).
        let sockets: [Int32] = lookup.config.servers.map { server in
            guard var c = literalCandidates(TCPAddress(host: server, port: dnsPort))?.first else { return -1 }
            let f = socket(c.family, SocketType.datagram | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
            guard f >= 0 else { return -1 }
            let r = withUnsafePointer(to: &c.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(f, $0, c.length) } }
            if r != 0 { Glibc.close(f); return -1 }
            return f
        }
        defer { for f in sockets where f >= 0 { Glibc.close(f) } }
        var buffer = [UInt8](repeating: 0, count: 1500)
        while lookup.outcome == nil {
            var now = monotonicMilliseconds()
            while !lookup.outgoing.isEmpty {
                let (index, bytes) = lookup.outgoing.removeFirst()
                let f = index < sockets.count ? sockets[index] : -1
                guard f >= 0 else { lookup.unreachable(index, reason: "not an IP address this host can reach", now: now); continue }
                let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { send(f, raw.baseAddress, raw.count, SocketFlags.noSignal) } }
                if case .failure(let e) = r, e != .wouldBlock { lookup.unreachable(index, reason: e.message, now: now) }
            }
            if lookup.outcome != nil { break }
            var fds = sockets.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let wait = lookup.deadline > now ? Int32(min(lookup.deadline - now, 60_000)) : 0
            _ = poll(&fds, nfds_t(fds.count), wait)
            now = monotonicMilliseconds()
            for p in fds where p.revents != 0 {
                guard let index = sockets.firstIndex(of: p.fd) else { continue }
                while lookup.outcome == nil {
                    let r = buffer.withUnsafeMutableBytes { raw in retryingOnInterrupt { recv(p.fd, raw.baseAddress, raw.count, 0) } }
                    guard case .success(let n) = r else {
                        if case .failure(let e) = r, e != .wouldBlock { lookup.unreachable(index, reason: e.message, now: now) }
                        break
                    }
                    lookup.receive(Array(buffer[..<n]), from: index, now: now)
                }
            }
            lookup.tick(now: now)
        }
        guard case .found(let ips)? = lookup.outcome else {
            if case .failed(let why)? = lookup.outcome {
                let prefix = "cannot resolve \(address.host): "
                throw .unresolved(address.host, reason: why.hasPrefix(prefix) ? String(why.dropFirst(prefix.count)) : why)
            }
            throw .unresolved(address.host, reason: "no answer")
        }
        let found = ips.compactMap { Candidate(ip: $0, port: address.port) }
        if found.isEmpty { throw .unresolved(address.host, reason: "it has no IPv4 or IPv6 address") }
        return found
    }

    /// Non-blocking connect and a poll for completion.
    static func connect(_ candidate: Candidate, remainingMilliseconds: Int) throws(Errno) -> FileDescriptor {
        let descriptor = try FileDescriptor.socket(candidate.family, candidate.socketType, candidate.proto)
        do throws(Errno) {
            if try descriptor.connect(to: candidate.storage, length: candidate.length) { return descriptor }
        } catch {
            descriptor.close()
            throw error
        }
        let deadline = monotonicMilliseconds() + UInt64(remainingMilliseconds)
        while true {
            let now = monotonicMilliseconds()
            if now >= deadline { descriptor.close(); throw .timedOut }
            do throws(Errno) {
                if try descriptor.poll(Int16(POLLOUT), timeout: Int32(clamping: deadline - now)) { break }
            } catch {
                descriptor.close()
                throw error
            }
        }
        if let failure = descriptor.pendingSocketError() {
            descriptor.close()
            throw failure
        }
        return descriptor
    }

    public static func connectError(_ failures: [Errno], address: TCPAddress, timeoutMilliseconds: Int) -> LinkError {
        let peer = address.description
        if failures.contains(.connectionRefused) { return .refused(peer) }
        if failures.contains(.timedOut) { return .timeout(peer, milliseconds: timeoutMilliseconds) }
        if let permission = failures.first(where: { $0 == .permissionDenied || $0 == .notPermitted }) {
            _ = permission
            return .permission(peer, hint: "a firewall or security policy blocks the connection")
        }
        if !failures.isEmpty && failures.allSatisfy({ $0 == .addressFamilyNotSupported }) {
            return .unsupported("TCP to \(peer)", reason: "this system does not support that address family")
        }
        let unreachable: [Errno] = [.networkUnreachable, .hostUnreachable, .hostDown, .networkDown, .addressNotAvailable]
        if let failure = failures.first(where: { unreachable.contains($0) }) { return .unreachable(peer, failure) }
        if let failure = failures.first { return .cannotOpen(peer, failure) }
        return .timeout(peer, milliseconds: timeoutMilliseconds)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(LinkError) -> Int {
        guard !closed else { throw .lost(description, reason: "the link is closed") }
        let n: Int
        do {
            n = try descriptor.read(into: buffer)
        } catch {
            if error == .wouldBlock { return 0 }
            throw readError(error)
        }
        if n == 0 && buffer.count > 0 {
            throw .lost(address.description, reason: "the radio closed the connection")
        }
        lastReceiveMs = monotonicMilliseconds()
        return n
    }

    private func readError(_ error: Errno) -> LinkError {
        switch error {
        case .connectionReset:
            return .lost(address.description, reason: "the connection was reset (another client may have taken the radio)")
        case .timedOut:
            return .lost(address.description, reason: "the radio stopped answering (keepalive timed out)")
        default:
            return .lost(address.description, reason: "read failed: \(error)")
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(LinkError) {
        guard !closed else { throw .lost(description, reason: "the link is closed") }
        let d = descriptor
        try writer.write(bytes, name: address.description) { (chunk) throws(Errno) -> Int in try d.send(chunk) }
    }

    public func flush() throws(LinkError) {
        let d = descriptor
        try writer.flush(name: address.description) { (chunk) throws(Errno) -> Int in try d.send(chunk) }
    }

    public func hangupError() -> LinkError {
        if let error = descriptor.pendingSocketError() { return readError(error) }
        return .lost(address.description, reason: "the radio closed the connection")
    }

    public func close() {
        guard !closed else { return }
        closed = true
        descriptor.close()
    }
}

/// A TCP connection being made without blocking the caller's loop: each address in turn gets a
/// non-blocking connect, and the caller polls `fd` for writability (`pollEvents`) and calls
/// `ready(now:)` when poll reports it, and `tick(now:)` at `deadline`. `timeoutMilliseconds` bounds
/// all the addresses together, as `TCPLink(connectingTo:)` does. The outcome is a connected
/// `TCPLink` (with its socket options) or the same error `TCPLink(connectingTo:)` would throw.
public final class TCPConnector {
    public enum State {
        case connecting
        case connected(TCPLink)
        case failed(LinkError)
    }

    public let address: TCPAddress
    public let timeoutMilliseconds: Int
    public let options: TCPLinkOptions
    public private(set) var state: State = .connecting
    /// When the whole attempt gives up (monotonic ms).
    public let deadline: UInt64
    private let candidates: [TCPLink.Candidate]
    private var next = 0
    private var failures: [Errno] = []
    private var pending: FileDescriptor? = nil

    /// Starts connecting to the first of `candidates` (resolved already: `TCPLink.literalCandidates`,
    /// /etc/hosts or DNS).
    public init(address: TCPAddress, candidates: [TCPLink.Candidate], timeoutMilliseconds: Int, now: UInt64,
                options: TCPLinkOptions = TCPLinkOptions()) {
        self.address = address
        self.candidates = candidates
        self.timeoutMilliseconds = timeoutMilliseconds
        self.options = options
        deadline = now + UInt64(max(0, timeoutMilliseconds))
        if candidates.isEmpty { state = .failed(.unresolved(address.host, reason: "no addresses")); return }
        startNext(now: now)
    }

    deinit { pending?.close() }

    /// The descriptor to poll while connecting (for `POLLOUT`), else nil.
    public var fd: Int32? { pending?.rawValue }

    /// Gives up (the caller no longer wants the connection).
    public func cancel() {
        pending?.close()
        pending = nil
        if case .connecting = state { state = .failed(.timeout(address.description, milliseconds: timeoutMilliseconds)) }
    }

    /// Poll reported the pending socket writable (or in error): the connect finished one way or
    /// the other.
    public func ready(now: UInt64) {
        guard case .connecting = state, let d = pending else { return }
        pending = nil
        if let failure = d.pendingSocketError() {
            d.close()
            failures.append(failure)
            startNext(now: now)
            return
        }
        state = .connected(TCPLink(connected: d, address: address, options: options))
    }

    /// At `deadline`: the attempt ends with a timeout.
    public func tick(now: UInt64) {
        guard case .connecting = state, now >= deadline else { return }
        pending?.close()
        pending = nil
        failures.append(.timedOut)
        state = .failed(TCPLink.connectError(failures, address: address, timeoutMilliseconds: timeoutMilliseconds))
    }

    private func startNext(now: UInt64) {
        while next < candidates.count {
            if now >= deadline { failures.append(.timedOut); break }
            let c = candidates[next]
            next += 1
            do throws(Errno) {
                let d = try FileDescriptor.socket(c.family, c.socketType, c.proto)
                do throws(Errno) {
                    if try d.connect(to: c.storage, length: c.length) {
                        state = .connected(TCPLink(connected: d, address: address, options: options))
                        return
                    }
                } catch {
                    d.close()
                    throw error
                }
                pending = d
                return
            } catch {
                failures.append(error)
            }
        }
        state = .failed(TCPLink.connectError(failures, address: address, timeoutMilliseconds: timeoutMilliseconds))
    }
}
