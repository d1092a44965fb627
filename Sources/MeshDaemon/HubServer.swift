import Glibc
import MeshCompanion
import MeshLink
import MeshOps

/// One `--companion-listen` listener: where, and which operation classes its clients may use.
///
/// Syntax: `HOST:PORT[,read-only][,allow=CLASS+CLASS...]` (IPv6 as `[::1]:5000`). By default a
/// listener allows `read`, `message` and `config` (`AllowedClasses.hubDefault`); `read-only` allows
/// `read` only; `allow=` widens either with more classes (`admin`, `secret`, ...). The older
/// command names are still read as the class they belong to (`reboot` and `factory-reset`: admin;
/// `export-key` and `import-key`: secret; `radio-params`: config).
public struct HubListener: Equatable, Sendable {
    public var address: TCPAddress
    public var readOnly = false
    /// `--companion-ws`: the companion protocol over WebSocket, one binary message per frame.
    public var webSocket = false
    /// The operation classes this listener's clients may use.
    public var allowed = AllowedClasses.hubDefault

    /// Command names `allow=` took before operation classes, and their class.
    static let legacyNames: [String: OperationClass] = [
        "factory-reset": .admin, "reboot": .admin, "export-key": .secret, "import-key": .secret, "radio-params": .config,
    ]

    public init(parsing text: String, webSocket: Bool) throws(DaemonError) {
        try self.init(parsing: text)
        self.webSocket = webSocket
    }

    public init(parsing text: String) throws(DaemonError) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        do { address = try TCPAddress(parsing: parts[0]) } catch {
            throw DaemonError(.usage, "--companion-listen \(text): \(error).")
        }
        guard parts[0].contains(":") else { throw DaemonError(.usage, "--companion-listen \(text): give HOST:PORT.") }
        var widen: [OperationClass] = []
        for p in parts.dropFirst() {
            if p == "read-only" { readOnly = true; continue }
            if p.hasPrefix("allow=") {
                for name in p.dropFirst(6).split(separator: "+").map(String.init) {
                    if let c = OperationClass(rawValue: name) ?? Self.legacyNames[name] { widen.append(c); continue }
                    if name == "all" { widen += OperationClass.allCases; continue }
                    throw DaemonError(.usage, "--companion-listen \(text): unknown class \"\(name)\" in allow= (the classes are \(AllowedClasses.names), or all).")
                }
                continue
            }
            throw DaemonError(.usage, "--companion-listen \(text): unknown option \"\(p)\" (read-only or allow=CLASS+CLASS).")
        }
        if readOnly { allowed = AllowedClasses([.read]) }
        for c in widen { allowed.insert(c) }
    }

    /// Why a client of this listener may not send this command frame, or nil when it may.
    public func refusal(_ frame: UnsafeRawBufferPointer) -> String? {
        let c = OperationClass(frame: frame)
        guard !allowed.allows(c) else { return nil }
        return "a \(c.rawValue) operation, which this listener does not allow (it allows \(allowed); allow=\(c.rawValue) opens it)"
    }

    public func refusal(_ frame: [UInt8]) -> String? { frame.withUnsafeBytes { refusal($0) } }
}

/// The companion hub's TCP side: listening sockets, and connections speaking the WiFi firmware's
/// framing ('<' + u16 LE length + frame from the app, '>' + length + frame back).
///
/// Non-blocking, driven by the daemon's poll loop like `APIServer`. Bounds:
/// - at most `maxClients` connections; one more is accepted and closed at once (nothing is evicted);
/// - a client whose unread output exceeds `maxOutput` bytes is disconnected (overflow policy: drop
///   the client, never block the radio or the other clients);
/// - a client that sends nothing for `idleTimeoutMS` is disconnected (apps poll; meshcore_py and
///   the official app send a command at least every few minutes);
/// - a frame longer than the companion maximum, or bytes outside frames, close that client only.
public final class HubServer {
    public typealias ClientID = Int
    /// Hub client ids start here, so they never collide with the API server's.
    public static let firstID = 1 << 30

    public var maxClients = 8
    public var maxOutput = 256 * 1024
    public var idleTimeoutMS: UInt64 = 15 * 60_000
    public var log: (String) -> Void = { _ in }
    public var onFrame: (ClientID, UnsafeRawBufferPointer) -> Void = { _, _ in }
    public var onDisconnect: (ClientID) -> Void = { _ in }

    final class Client {
        let fd: Int32
        let listener: Int
        var deframer = StreamDeframer(marker: UInt8(ascii: "<"))
        /// WebSocket listeners: the connection's WebSocket state.
        var ws: WebSocketServer? = nil
        var closing = false
        var output: [UInt8] = []
        var outputStart = 0
        var lastHeard: UInt64
        init(fd: Int32, listener: Int, now: UInt64) { self.fd = fd; self.listener = listener; lastHeard = now }
        var unsent: Int { output.count - outputStart }
    }

    public let listeners: [HubListener]
    private var listenFDs: [Int32] = []
    private var clients: [ClientID: Client] = [:]
    private var byFD: [Int32: ClientID] = [:]
    private var nextID = HubServer.firstID
    public private(set) var refusedCount = 0

    public var clientIDs: [ClientID] { Array(clients.keys) }
    public var clientCount: Int { clients.count }

    public static func isHubClient(_ id: Int) -> Bool { id >= firstID }

    public init(listeners: [HubListener]) throws(DaemonError) {
        self.listeners = listeners
        for l in listeners {
            do { listenFDs.append(try Self.listen(l.address)) } catch {
                for fd in listenFDs { close(fd) }
                throw DaemonError(.usage, "--companion-listen \(l.address): \(error).")
            }
        }
    }

    deinit { shutdown() }

    public func shutdown() {
        for id in Array(clients.keys) { drop(id, reason: nil) }
        for fd in listenFDs { close(fd) }
        listenFDs = []
    }

    /// The listener a client came in on.
    public func listener(of id: ClientID) -> HubListener? { clients[id].map { listeners[$0.listener] } }

    /// A TCP listening socket (non-blocking, close-on-exec, SO_REUSEADDR; IPv6 sockets IPv6 only).
    static func listen(_ a: TCPAddress) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = SocketType.stream
        var res: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(a.host, String(a.port), &hints, &res)
        guard rc == 0, let ai = res else { throw SystemError("getaddrinfo", a.description + " (give a numeric IPv4 or IPv6 address)", errno: EINVAL) }
        defer { freeaddrinfo(res) }
        let fd = socket(ai.pointee.ai_family, SocketType.stream | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
        if fd < 0 { throw SystemError("socket", a.description) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if ai.pointee.ai_family == AF_INET6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if bind(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 {
            let e = SystemError("bind", a.description)
            close(fd)
            throw e
        }
        if Glibc.listen(fd, 64) != 0 {
            let e = SystemError("listen", a.description)
            close(fd)
            throw e
        }
        return fd
    }

    // MARK: poll integration

    public func pollDescriptors(into fds: inout [pollfd]) {
        for fd in listenFDs { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        for c in clients.values {
            fds.append(pollfd(fd: c.fd, events: Int16(POLLIN) | (c.unsent > 0 ? Int16(POLLOUT) : 0), revents: 0))
        }
    }

    /// Handles one poll result; false if the descriptor is not the hub's.
    public func handle(_ p: pollfd, now: UInt64) -> Bool {
        if let i = listenFDs.firstIndex(of: p.fd) {
            acceptAll(i, now: now)
            return true
        }
        guard let id = byFD[p.fd], let c = clients[id] else { return false }
        if p.revents & Int16(POLLOUT) != 0 { flush(id, c) }
        guard clients[id] != nil else { return true }
        if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readFrom(id, c, now: now) }
        return true
    }

    /// Closes idle clients; returns when it next needs to be called.
    public func tick(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (id, c) in clients {
            let due = c.lastHeard + idleTimeoutMS
            if now >= due { drop(id, reason: "idle for \((now - c.lastHeard) / 1000) s; disconnected") } else { next = min(next ?? due, due) }
        }
        return next
    }

    /// Sends one frame ('>' + length + payload) to a client.
    public func send(_ payload: [UInt8], to id: ClientID) {
        guard let c = clients[id] else { return }
        let framed = StreamDeframer.frame(payload, marker: UInt8(ascii: ">"))
        // Over WebSocket, one binary message carries one frame, header included.
        c.output.append(contentsOf: c.ws == nil ? framed : WebSocketServer.frame(framed))
        if c.unsent > maxOutput {
            drop(id, reason: "\(c.unsent) unread bytes (limit \(maxOutput)); disconnected")
            return
        }
        flush(id, c)
    }

    /// Closes a client (a malformed frame, a policy decision).
    public func disconnect(_ id: ClientID, reason: String) { drop(id, reason: reason) }

    // MARK: internals

    private func acceptAll(_ listener: Int, now: UInt64) {
        while true {
            let fd = accept(listenFDs[listener], nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            UnixSocket.setNonBlocking(fd)
            if clients.count >= maxClients {
                close(fd)
                refusedCount += 1
                // One line per 100 refusals: a flood of connections cannot flood the log.
                if refusedCount % 100 == 1 { log("hub: refused a client: \(maxClients) connected (\(refusedCount) refused so far)") }
                continue
            }
            let id = nextID
            nextID += 1
            let client = Client(fd: fd, listener: listener, now: now)
            if listeners[listener].webSocket { client.ws = WebSocketServer() }
            clients[id] = client
            byFD[fd] = id
            log("hub: client \(id - Self.firstID + 1) connected on \(listeners[listener].address)")
        }
    }

    private func readFrom(_ id: ClientID, _ c: Client, now: UInt64) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while clients[id] != nil {
            let n = chunk.withUnsafeMutableBytes { read(c.fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                drop(id, reason: nil)
                return
            }
            if n == 0 {
                drop(id, reason: nil)
                return
            }
            c.lastHeard = now
            var frames: [[UInt8]] = []
            if c.ws != nil {
                var events: [WebSocketServer.Event] = []
                chunk.withUnsafeBytes { raw in events = c.ws!.receive(UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
                for e in events {
                    switch e {
                    case .write(let bytes):
                        c.output.append(contentsOf: bytes)
                        flush(id, c)
                    case .message(let m):
                        // A frame with its '<' header, or the bare payload.
                        var f = m[...]
                        if f.count >= 3, f.first == UInt8(ascii: "<"), Int(f[f.startIndex + 1]) | Int(f[f.startIndex + 2]) << 8 == f.count - 3 {
                            f = f.dropFirst(3)
                        }
                        guard (1...CompanionLimits.maxFrameSize).contains(f.count) else {
                            drop(id, reason: "sent a WebSocket message of \(m.count) bytes, not a companion frame; disconnected")
                            return
                        }
                        frames.append(Array(f))
                    case .close(let why):
                        guard clients[id] != nil else { return }
                        flush(id, c)
                        drop(id, reason: "WebSocket: \(why)")
                        return
                    }
                }
            } else {
                chunk.withUnsafeBytes { raw in
                    c.deframer.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { frames.append(Array($0)) }
                }
            }
            if c.deframer.skippedBytes > 0 || c.deframer.oversizedFrames > 0 {
                drop(id, reason: "sent \(c.deframer.skippedBytes) byte(s) outside companion frames (or an oversized frame); disconnected")
                return
            }
            for f in frames {
                guard clients[id] != nil else { return }
                f.withUnsafeBytes { onFrame(id, $0) }
            }
            if n < chunk.count { return }
        }
    }

    private func flush(_ id: ClientID, _ c: Client) {
        while c.unsent > 0 {
            let n = c.output.withUnsafeBytes { raw in Glibc.send(c.fd, raw.baseAddress! + c.outputStart, c.unsent, SocketFlags.noSignal) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                drop(id, reason: nil)
                return
            }
            c.outputStart += n
        }
        if c.unsent == 0 {
            c.output.removeAll(keepingCapacity: c.output.capacity <= 4096)
            c.outputStart = 0
        } else if c.outputStart > 16 * 1024 {
            c.output.removeFirst(c.outputStart)
            c.outputStart = 0
        }
    }

    private func drop(_ id: ClientID, reason: String?) {
        guard let c = clients.removeValue(forKey: id) else { return }
        byFD[c.fd] = nil
        close(c.fd)
        log("hub: client \(id - Self.firstID + 1) " + (reason ?? "disconnected"))
        onDisconnect(id)
    }
}
