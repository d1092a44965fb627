import Glibc
import MeshAir
import MeshLink
import MeshNet
import MeshOps

/// One broker, kept connected from the daemon's poll loop: find the host's addresses (an IP
/// literal, /etc/hosts, else DNS over UDP to the servers of /etc/resolv.conf through `DNSLookup`:
/// no blocking lookup, no NSS), connect (non-blocking), then TLS for
/// `mqtts://` and `wss://` (TLSSession: mbedTLS, certificates verified), the WebSocket upgrade for
/// `ws://` and `wss://` (WebSocketClient), then the MQTT session (`MQTTClient`). Any failure closes
/// the transport and tries again after a backoff (1 s doubling to 60 s, with jitter), which starts
/// again from 1 s only after a connection has stayed up for a minute (`ReconnectBackoff`); the MQTT
/// session keeps its in-flight PUBLISHes. Nothing happens before `begin` (the bridge waits for the
/// radio's key, which its client id and topics name).
///
/// A PUBLISH over the client's size limit is dropped without reconnecting (the session skips its
/// bytes and acknowledges it); the first is logged, the others counted (`oversized`).
///
/// A failure is logged once; the same failure again is not logged on every retry (a broker down
/// for a night would fill the log), only counted, until the connection comes up or fails otherwise.
public final class BrokerConnection {
    public struct Settings {
        public var url: BrokerURL
        public var caFile: String? = nil
        public var connectTimeoutMS: UInt64 = 15_000
        public var backoffMinMS: UInt64 = 1_000
        public var backoffMaxMS: UInt64 = 60_000
        /// A connection up this long resets the backoff.
        public var stableMS: UInt64 = 60_000
        public var hostsPath = "/etc/hosts"
        public var resolvConfPath = "/etc/resolv.conf"
        public var dnsPort: UInt16 = 53
        public init(url: BrokerURL) { self.url = url }
    }

    public let settings: Settings
    public let client: MQTTClient
    /// What the log calls this connection (e.g. "mqtt", "observer").
    public let name: String
    public var log: (String) -> Void = { _ in }
    public var onEvent: (MQTTClient.Event, UInt64) -> Void = { _, _ in }
    /// Called before each CONNECT: credentials that change (a JWT) are made fresh here.
    public var prepareConnect: (inout MQTTConnect) -> Void = { _ in }

    public enum Phase {
        /// Not started (`begin`), or closed for good (`close`).
        case idle
        case waiting(until: UInt64)
        /// Asking DNS servers (`lookup`: a `DNSQuery`, one UDP socket per server).
        case resolving
        case connecting(fd: Int32, addresses: [BrokerAddress], next: Int, deadline: UInt64)
        case open
    }
    public private(set) var phase: Phase = .idle
    private var fd: Int32 = -1
    /// Bytes for the socket (after TLS, WebSocket framing): written as the socket takes them.
    private var wire: [UInt8] = []
    private var backoff: ReconnectBackoff
    /// PUBLISHes dropped for their size (the first one is logged).
    public private(set) var oversized = 0
    private var lastFailure: String? = nil
    private var repeats = 0
    private var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    /// Buffers read per turn of the loop (see `readable`).
    static let maxChunksPerTurn = 4
    public private(set) var connectedSince: UInt64? = nil
    public private(set) var connections = 0
    /// The layers under MQTT, and which of them is still being set up.
    private enum Stage { case tls, webSocket, mqtt }
    private var stage: Stage = .mqtt
    private var stageDeadline: UInt64 = 0
    private var tls: TLSSession? = nil
    private var ws: WebSocketClient? = nil
    private var lastNow: UInt64 = 0
    private var lookup: DNSQuery? = nil

    public init(name: String, settings: Settings, options: MQTTClient.Options) {
        self.name = name
        self.settings = settings
        self.client = MQTTClient(options: options)
        backoff = ReconnectBackoff(minMS: settings.backoffMinMS, maxMS: settings.backoffMaxMS, stableMS: settings.stableMS)
    }

    /// Starts connecting (at once), or starts again after `close`.
    public func begin(now: UInt64) {
        guard case .idle = phase else { return }
        phase = .waiting(until: now)
    }

    /// A topic (or other text from the broker) for the log: quoted, control characters escaped,
    /// at most 120 characters, so no one can forge log lines through it.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        var n = 0
        for u in text.unicodeScalars {
            if n == 120 { out += "..."; break }
            n += 1
            switch u {
            case "\"", "\\": out += "\\" + String(u)
            case _ where u.value < 0x20 || u.value == 0x7F || (u.value >= 0x80 && u.value < 0xA0) || u == "\u{2028}" || u == "\u{2029}":
                out += "\\u{" + String(u.value, radix: 16) + "}"
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// Whether `begin` was called (and no `close` since).
    public var isStarted: Bool { if case .idle = phase { return false }; return true }

    public var isUp: Bool { client.state == .connected }

    // MARK: poll loop

    public func pollDescriptors(into fds: inout [pollfd]) {
        switch phase {
        case .idle, .waiting: return
        case .resolving:
            for f in lookup?.descriptors ?? [] { fds.append(pollfd(fd: f, events: Int16(POLLIN), revents: 0)) }
        case .connecting(let f, _, _, _):
            fds.append(pollfd(fd: f, events: Int16(POLLOUT), revents: 0))
        case .open:
            flushClient(now: lastNow)
            var events = Int16(POLLIN)
            if !wire.isEmpty { events |= Int16(POLLOUT) }
            fds.append(pollfd(fd: fd, events: events, revents: 0))
        }
    }

    /// Handles a ready descriptor; false if it is not this connection's.
    public func handle(_ p: pollfd, now: UInt64) -> Bool {
        lastNow = now
        switch phase {
        case .idle, .waiting:
            return false
        case .resolving:
            guard let l = lookup, l.readable(p.fd, now: now) else { return false }
            dnsProgress(now: now)
            return true
        case .connecting(let f, let addresses, let next, _):
            guard p.fd == f else { return false }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(f, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 {
                Glibc.close(f)
                fd = -1
                tryConnect(addresses, from: next, now: now, failure: "\(addresses[next - 1]): \(String(cString: strerror(err)))")
            } else {
                transportConnected(now: now)
            }
            return true
        case .open:
            guard p.fd == fd else { return false }
            if p.revents & Int16(POLLOUT) != 0 { advance(now: now) }
            if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readable(now: now) }
            return true
        }
    }

    /// Runs what is due; returns the next deadline.
    public func tick(now: UInt64) -> UInt64? {
        lastNow = now
        switch phase {
        case .idle:
            return nil
        case .waiting(let until):
            if now >= until { start(now: now) } else { return until }
            return tick(now: now)
        case .resolving:
            lookup?.tick(now: now)
            dnsProgress(now: now)
            if case .resolving = phase { return lookup?.deadline }
            return tick(now: now)
        case .connecting(let f, let addresses, let next, let deadline):
            if now >= deadline {
                Glibc.close(f)
                fd = -1
                tryConnect(addresses, from: next, now: now, failure: "\(addresses[next - 1]): no answer within \(settings.connectTimeoutMS / 1000) s")
                return tick(now: now)
            }
            return deadline
        case .open:
            if stage != .mqtt {
                if now < stageDeadline { return stageDeadline }
                fail("\(stage == .tls ? "the TLS handshake" : "the WebSocket upgrade") did not finish within \(settings.connectTimeoutMS / 1000) s", now: now)
                return tick(now: now)
            }
            do throws(MQTTError) { try client.tick(now: now) } catch { fail(error.description, now: now); return tick(now: now) }
            flushClient(now: now)
            if !wire.isEmpty { advance(now: now) }
            return client.deadline
        }
    }

    /// Sends what the MQTT session has to say now (after `publish` and the like).
    public func flush(now: UInt64) {
        guard case .open = phase else { return }
        flushClient(now: now)
        advance(now: now)
    }

    /// A graceful end: what is queued and DISCONNECT written (waiting at most `graceMS` for the
    /// socket to take it), the write side shut, unread input drained (closing a socket with unread
    /// input sends a reset, which can make the broker drop what it had not read yet), then closed.
    public func close(now: UInt64, graceMS: Int32 = 500) {
        if case .open = phase, client.state == .connected {
            client.disconnect(now: now)
            flushClient(now: now)
            if let tls {
                tls.closeNotify()
                tls.drain(into: &wire)
            }
            var waited: Int32 = 0
            while !wire.isEmpty && fd >= 0 && waited < graceMS {
                advance(now: now)
                if wire.isEmpty || fd < 0 { break }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 50)
                waited += 50
            }
            if fd >= 0 {
                shutdown(fd, Int32(SHUT_WR))
                var sink = [UInt8](repeating: 0, count: 4096)
                while sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
            }
        }
        closeTransport()
        phase = .idle
    }

    // MARK: steps

    private func start(now: UInt64) {
        let host = settings.url.host
        if let known = BrokerAddress.known(host, hostsPath: settings.hostsPath) {
            tryConnect(known, from: 0, now: now, failure: nil)
            return
        }
        let config = ResolverConfig(parsing: StateFile.readString(settings.resolvConfPath) ?? "")
        let l = DNSQuery(name: host, config: config, port: settings.dnsPort, now: now)
        if case .failed(let why)? = l.outcome { fail(why, now: now); return }
        lookup = l
        phase = .resolving
        dnsProgress(now: now)
    }

    /// When the lookup has an outcome: connects to what it found, or fails.
    private func dnsProgress(now: UInt64) {
        guard case .resolving = phase, let outcome = lookup?.outcome else { return }
        closeDNS()
        switch outcome {
        case .failed(let why):
            fail(why, now: now)
        case .found(let raw):
            let addresses = raw.map { BrokerAddress(family: $0.count == 4 ? AF_INET : AF_INET6, bytes: $0) }
            tryConnect(addresses, from: 0, now: now, failure: nil)
        }
    }

    private func closeDNS() {
        lookup?.close()
        lookup = nil
    }

    private func tryConnect(_ addresses: [BrokerAddress], from index: Int, now: UInt64, failure: String?) {
        var i = index
        var last = failure
        while i < addresses.count {
            let a = addresses[i]
            i += 1
            var storage = sockaddr_storage()
            let length = a.socketAddress(port: settings.url.port, into: &storage)

            let f = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if f < 0 { last = "socket: \(String(cString: strerror(errno)))"; continue }
            do throws(Errno) {
                let connected = try FileDescriptor(rawValue: f).connect(to: storage, length: length)
                fd = f
                phase = .connecting(fd: f, addresses: addresses, next: i, deadline: now + settings.connectTimeoutMS)
                if connected { transportConnected(now: now) }
                return
            } catch {
                last = "\(a): \(error.message)"
                Glibc.close(f)
            }
        }
        fail("cannot connect to \(settings.url): \(last ?? "no address")", now: now)
    }

    private func transportConnected(now: UInt64) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        phase = .open
        stageDeadline = now + settings.connectTimeoutMS
        guard settings.url.usesTLS else { upperLayers(now: now); return }
        do throws(MQTTError) {
            let t = try TLSSession(host: settings.url.host, caFile: settings.caFile)
            tls = t
            stage = .tls
            _ = try t.handshake()  // the ClientHello
            t.drain(into: &wire)
            advance(now: now)
        } catch {
            fail(error.description, now: now)
        }
    }

    /// Over TCP or the finished TLS session: the WebSocket upgrade, or MQTT at once.
    private func upperLayers(now: UInt64) {
        guard settings.url.usesWebSocket else { mqttStart(now: now); return }
        let w = WebSocketClient(key: WebSocketClient.randomKey(), sha1: SHA1.digest)
        ws = w
        stage = .webSocket
        sendPlain(w.request(host: settings.url.host, port: settings.url.port, path: settings.url.path,
                            defaultPort: settings.url.usesTLS ? 443 : 80), now: now)
    }

    /// Bytes for the layer under the WebSocket or MQTT: encrypted when there is TLS.
    private func sendPlain(_ bytes: [UInt8], now: UInt64) {
        if let tls {
            do throws(MQTTError) { try tls.write(bytes) } catch { fail(error.description, now: now); return }
            tls.drain(into: &wire)
        } else {
            wire.append(contentsOf: bytes)
        }
        advance(now: now)
    }

    private func mqttStart(now: UInt64) {
        phase = .open
        stage = .mqtt
        var c = client.options.connect
        prepareConnect(&c)
        client.options.connect = c
        client.transportOpened(now: now)
        flushClient(now: now)
        advance(now: now)
    }

    /// Moves MQTT output into the wire buffer (framed for the WebSocket, encrypted for TLS).
    private func flushClient(now: UInt64) {
        guard case .open = phase, stage == .mqtt, client.hasOutput else { return }
        var out = client.takeOutput()
        if ws != nil { out = ws!.frame(out) }
        if tls == nil { wire.append(contentsOf: out); return }
        sendPlain(out, now: now)
    }

    /// Writes what is waiting, as far as the socket takes it.
    private func advance(now: UInt64) {
        while !wire.isEmpty && fd >= 0 {
            let r = wire.withUnsafeBytes { raw in retryingOnInterrupt { send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) } }
            guard case .success(let n) = r else {
                if case .failure(let e) = r, e != .wouldBlock { fail("writing to \(settings.url): \(e.message)", now: now) }
                return
            }
            wire.removeFirst(n)
        }
    }

    /// Reads what the socket has, at most `maxChunksPerTurn` buffers per turn of the loop: a broker
    /// that keeps the socket full (a client flooding a command topic) must not hold the loop, so
    /// the radio, the API and the other parts get their turns between reads (the rest stays in the
    /// socket, and poll reports it again at once).
    private func readable(now: UInt64) {
        var chunks = 0
        while fd >= 0 && chunks < Self.maxChunksPerTurn {
            chunks += 1
            let r = readBuffer.withUnsafeMutableBytes { raw in retryingOnInterrupt { recv(fd, raw.baseAddress, raw.count, 0) } }
            guard case .success(let n) = r else {
                if case .failure(let e) = r, e != .wouldBlock { fail("reading from \(settings.url): \(e.message)", now: now) }
                return
            }
            if n == 0 { fail("the broker closed the connection", now: now); return }
            received(readBuffer[..<n], now: now)
            if n < readBuffer.count { return }
        }
    }

    /// Bytes from the socket, through TLS and the WebSocket when there are.
    private func received(_ bytes: ArraySlice<UInt8>, now: UInt64) {
        guard case .open = phase, !bytes.isEmpty else { return }
        guard let t = tls else { plainReceived(Array(bytes), now: now); return }
        var plain: [UInt8] = []
        do throws(MQTTError) {
            try t.feed(bytes)
            if stage == .tls {
                let done = try t.handshake()
                t.drain(into: &wire)
                advance(now: now)
                guard done, tls === t else { return }
                upperLayers(now: now)
            }
            try t.read(into: &plain)
            t.drain(into: &wire)
        } catch {
            fail(error.description, now: now)
            return
        }
        if !plain.isEmpty { plainReceived(plain, now: now) }
    }

    private func plainReceived(_ bytes: [UInt8], now: UInt64) {
        guard ws != nil else { mqttReceived(bytes[...], now: now); return }
        let events: [WebSocketClient.Event]
        do throws(MQTTError) { events = try ws!.receive(bytes) } catch { fail(error.description, now: now); return }
        if stage == .webSocket, ws?.open == true { mqttStart(now: now) }
        for e in events {
            guard case .open = phase, ws != nil else { return }
            switch e {
            case .message(let m): mqttReceived(m[...], now: now)
            case .send(let b): sendPlain(b, now: now)
            case .closed(let why): fail(why, now: now)
            }
        }
    }

    private func mqttReceived(_ data: ArraySlice<UInt8>, now: UInt64) {
        guard case .open = phase, stage == .mqtt, !data.isEmpty else { return }
        let events: [MQTTClient.Event]
        do throws(MQTTError) {
            events = try client.receive(data, now: now)
        } catch {
            fail(error.description, now: now)
            return
        }
        for e in events {
            if case .oversized(let topic, let bytes) = e {
                oversized += 1
                if oversized == 1 {
                    log("\(name): \(settings.url): dropped a \(bytes)-byte message on \(Self.quoted(topic)) (the limit is \(client.options.maxPacketSize) bytes); later ones are dropped without a word and counted in status")
                }
            }
            if case .connected = e {
                connectedSince = now
                connections += 1
                backoff.connected(now: now)
                if lastFailure != nil {
                    log("\(name): connected to \(settings.url) again" + (repeats > 0 ? " (after \(repeats + 1) failed attempts)" : ""))
                } else {
                    log("\(name): connected to \(settings.url)")
                }
                lastFailure = nil
                repeats = 0
            }
            onEvent(e, now)
        }
        flushClient(now: now)
        advance(now: now)
    }

    private func fail(_ reason: String, now: UInt64) {
        let wasUp = client.state == .connected
        closeTransport()
        if reason == lastFailure {
            repeats += 1
        } else {
            log("\(name): \(settings.url): \(reason)" + (wasUp ? "" : "; retrying with backoff"))
            lastFailure = reason
            repeats = 0
        }
        let delay = backoff.failed(now: now)
        var rng = SystemRandomNumberGenerator()
        let jitter = UInt64.random(in: 0...(delay / 4), using: &rng)
        phase = .waiting(until: now + delay + jitter)
    }

    private func closeTransport() {
        if client.state != .closed { client.transportClosed() }
        connectedSince = nil
        wire.removeAll()
        tls = nil
        ws = nil
        stage = .mqtt
        if fd >= 0 { Glibc.close(fd); fd = -1 }
        closeDNS()
    }
}

/// A broker's IP address: an IPv4 or IPv6 literal, a name in /etc/hosts or `localhost` (`known`),
/// else what DNS answers (BrokerConnection asks through `DNSLookup`).
public struct BrokerAddress: CustomStringConvertible {
    public var family: Int32
    public var bytes: [UInt8]

    public static func literal(_ text: String) -> BrokerAddress? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return BrokerAddress(family: AF_INET, bytes: withUnsafeBytes(of: &v4) { Array($0) }) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return BrokerAddress(family: AF_INET6, bytes: withUnsafeBytes(of: &v6) { Array($0) }) }
        return nil
    }

    /// The addresses known without asking DNS: a literal, /etc/hosts lines, `localhost`; IPv4 first.
    public static func known(_ host: String, hostsPath: String) -> [BrokerAddress]? {
        if let a = literal(host) { return [a] }
        var found = HostsFile.addresses(of: host, in: StateFile.readString(hostsPath) ?? "").compactMap(literal)
        if found.isEmpty && DNSMessage.normalized(host) == "localhost" { found = [literal("127.0.0.1")!, literal("::1")!] }
        if found.isEmpty { return nil }
        return found.filter { $0.family == AF_INET } + found.filter { $0.family == AF_INET6 }
    }

    /// The socket address of this address and `port`, written to `storage`; returns its length.
    /// `sockaddr_in` and `sockaddr_in6` differ only in their size and where the address goes (the
    /// family and the port lead both).
    public func socketAddress(port: UInt16, into storage: inout sockaddr_storage) -> socklen_t {
        let (length, addressOffset) = family == AF_INET
            ? (MemoryLayout<sockaddr_in>.size, MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!)
            : (MemoryLayout<sockaddr_in6>.size, MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!)
        storage = sockaddr_storage()
        storage.ss_family = sa_family_t(family)
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self)
            UnsafeMutableRawBufferPointer(rebasing: raw[addressOffset...]).copyBytes(from: bytes)
        }
        return socklen_t(length)
    }

    public var description: String {
        var buf = [CChar](repeating: 0, count: 64)
        var b = bytes
        _ = b.withUnsafeMutableBytes { inet_ntop(family, $0.baseAddress, &buf, 64) }
        return String(cString: buf)
    }
}
