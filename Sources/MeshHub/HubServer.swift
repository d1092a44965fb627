import MeshNet
import Glibc
import MeshCompanion
import MeshAir
import MeshLink
import MeshOps

/// One `--companion-listen` or `--companion-ws` listener: where, which operation classes its
/// clients may use, and who they are.
///
/// Syntax: `HOST:PORT[,read-only][,allow=CLASS+CLASS...][,app=NAME][,origin=URL...]` (IPv6 as
/// `[::1]:5000`). By default a listener allows `read`, `message` and `config`
/// (`AllowedClasses.hubDefault`); `read-only` allows `read` only; `allow=` widens either with more
/// classes (`admin`, `secret`, ...). The older command names are still read as the class they
/// belong to (`reboot` and `factory-reset`: admin; `export-key` and `import-key`: secret;
/// `radio-params`: config). `app=NAME` gives every client of the listener that app identity and
/// message cursor, whatever name it sends in APP_START (meshcore_py-based apps all send `mccli`).
/// `origin=URL` (WebSocket only; repeatable, or `+`-separated) is a web page origin whose scripts
/// may connect; a browser request from any other origin gets HTTP 403.
public struct HubListener: Equatable, Sendable {
    public var address: TCPAddress
    public var readOnly = false
    /// `--companion-ws`: the companion protocol over WebSocket, one binary message per frame.
    public var webSocket = false
    /// The operation classes this listener's clients may use.
    public var allowed = AllowedClasses.hubDefault
    /// `app=`: the app identity (and cursor) of every client on this listener.
    public var app: String? = nil
    /// `origin=`: the browser origins a WebSocket listener accepts.
    public var origins: [String] = []

    /// Command names `allow=` took before operation classes, and their class.
    public static let legacyNames: [String: OperationClass] = [
        "factory-reset": .admin, "reboot": .admin, "export-key": .secret, "import-key": .secret, "radio-params": .config,
    ]

    public init(parsing text: String, webSocket: Bool = false) throws(DaemonError) {
        self.webSocket = webSocket
        let option = webSocket ? "--companion-ws" : "--companion-listen"
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        do { address = try TCPAddress(parsing: parts[0]) } catch {
            throw DaemonError(.usage, "\(option) \(text): \(error).")
        }
        guard parts[0].contains(":") else { throw DaemonError(.usage, "\(option) \(text): give HOST:PORT.") }
        var widen: [OperationClass] = []
        for p in parts.dropFirst() {
            if p == "read-only" { readOnly = true; continue }
            if p.hasPrefix("allow=") {
                for name in p.dropFirst(6).split(separator: "+").map(String.init) {
                    if let c = OperationClass(rawValue: name) ?? Self.legacyNames[name] { widen.append(c); continue }
                    if name == "all" { widen += OperationClass.allCases; continue }
                    throw DaemonError(.usage, "\(option) \(text): unknown class \"\(name)\" in allow= (the classes are \(AllowedClasses.names), or all).")
                }
                continue
            }
            if p.hasPrefix("app=") {
                let name = String(p.dropFirst(4))
                guard (1...32).contains(name.utf8.count), name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw DaemonError(.usage, "\(option) \(text): app= takes a name of 1 to 32 printable characters without spaces.")
                }
                app = name
                continue
            }
            if p.hasPrefix("origin=") {
                guard webSocket else {
                    throw DaemonError(.usage, "\(option) \(text): origin= is for WebSocket listeners (--companion-ws).")
                }
                for o in p.dropFirst(7).split(separator: "+").map(String.init) {
                    guard Self.isOrigin(o) else {
                        throw DaemonError(.usage, "\(option) \(text): origin= takes a web page origin, scheme and host (and port), e.g. http://localhost:8080.")
                    }
                    origins.append(WebSocketServer.normalizedOrigin(o))
                }
                continue
            }
            throw DaemonError(.usage, "\(option) \(text): unknown option \"\(p)\" (read-only, allow=CLASS+CLASS, app=NAME" + (webSocket ? ", origin=URL)." : ")."))
        }
        if readOnly { allowed = AllowedClasses([.read]) }
        for c in widen { allowed.insert(c) }
    }

    /// `http://host[:port]` or `https://...`, no path.
    public static func isOrigin(_ o: String) -> Bool {
        let lower = WebSocketServer.normalizedOrigin(o)
        guard let rest = ["http://", "https://"].first(where: { lower.hasPrefix($0) }).map({ lower.dropFirst($0.count) }) else { return false }
        return !rest.isEmpty && !rest.contains("/") && rest.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// Why a client of this listener may not send this command frame, or nil when it may.
    public func refusal(_ frame: UnsafeRawBufferPointer) -> String? {
        let c = OperationClass(frame: frame)
        guard allowed.allows(c) else {
            return "a \(c.rawValue) operation, which this listener does not allow (it allows \(allowed); allow=\(c.rawValue) opens it)"
        }
        // Without `secret`, GET_CHANNEL answers with the secret zeroed: an app that writes such a
        // channel back (a new name, the secret it was shown) would wipe the channel's key.
        if !allowed.allows(.secret), frame.count >= 50, frame[0] == CommandCode.setChannel.rawValue, frame[2] != 0,
           frame[34..<50].allSatisfy({ $0 == 0 }) {
            return "a channel with a zero secret, which is what this listener's clients are shown instead of a channel's secret (allow=secret shows it); written back, it would wipe the channel's key"
        }
        return nil
    }

    public func refusal(_ frame: [UInt8]) -> String? { frame.withUnsafeBytes { refusal($0) } }

    /// Whether only this host can reach it: an IPv4 address in 127.0.0.0/8, or ::1 (a wildcard
    /// address, 0.0.0.0 or ::, is every interface).
    public var isLoopback: Bool { Self.isLoopbackHost(address.host) }

    /// Whether a host (an address, or `localhost`) is this host's loopback.
    public static func isLoopbackHost(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        let b = withUnsafeBytes(of: &v6) { Array($0) }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }
        // ::ffff:127.x.x.x
        return b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF && b[12] == 127
    }

    /// How the start-up log line describes it.
    public var summary: String {
        "companion protocol\(webSocket ? " over WebSocket" : "") on \(address) allows \(allowed)"
            + (app.map { ", app \($0)" } ?? "")
            + (webSocket ? (origins.isEmpty ? ", no browser origins" : ", origins \(origins.joined(separator: " "))") : "")
    }
}

/// The companion hub's TCP side: listening sockets, and connections speaking the WiFi firmware's
/// framing ('<' + u16 LE length + frame from the app, '>' + length + frame back).
///
/// Non-blocking, driven by the daemon's poll loop like `APIServer`. Bounds:
/// - at most `maxClients` connections; when full, a new connection evicts a connection that never
///   sent a whole frame, else the client idle the longest (a few silent connections cannot lock
///   every new app out, and a storm of connections evicts its own before an app);
/// - a client's frames are taken only while the daemon has room for them (`room`): a client whose
///   request queue is full is not read at all (backpressure through poll), and each poll round
///   reads at most one chunk from each client, so one flooding client cannot starve the radio
///   link or the others;
/// - a client whose unread output exceeds `maxOutput` bytes is disconnected (overflow policy: drop
///   the client, never block the radio or the other clients);
/// - a client that sends nothing for `idleTimeoutMS` is disconnected, and one that leaves a frame
///   unfinished (a header, then silence) for `partialFrameTimeoutMS`;
/// - a frame longer than the companion maximum, bytes outside frames, or a WebSocket message that
///   is not exactly one frame close that client only.
public final class HubServer {
    public typealias ClientID = Int
    /// Hub client ids start here, so they never collide with the API server's.
    public static let firstID = 1 << 30
    /// Bytes read from one client per poll round.
    public static let readChunk = 4096

    public var maxClients = 8
    public var maxOutput = 256 * 1024
    public var idleTimeoutMS: UInt64 = 15 * 60_000
    public var partialFrameTimeoutMS: UInt64 = 5_000
    public var log: (String) -> Void = { _ in }
    /// The daemon: its room for frames, the frames, clients gone.
    public weak var host: HubHost? = nil
    /// How many more frames the daemon takes from a client now (0: leave its socket unread).
    func room(_ id: ClientID) -> Int { host?.hubRoom(id) ?? Int.max }

    public final class Client {
        let fd: Int32
        let listener: Int
        let peer: String
        let connectedAt: UInt64
        var deframer = StreamDeframer(marker: UInt8(ascii: "<"))
        /// WebSocket listeners: the connection's WebSocket state.
        var ws: WebSocketServer? = nil
        var output = SocketOutput()
        var lastHeard: UInt64
        /// Frames read but not yet taken by the daemon (at most one chunk's worth).
        var inbox: [[UInt8]] = []
        var inboxHead = 0
        /// Since when part of a frame has waited for the rest.
        var partialSince: UInt64? = nil
        /// It has sent a whole frame (connections that never did are evicted first).
        var spoke = false
        init(fd: Int32, listener: Int, peer: String, now: UInt64) {
            self.fd = fd; self.listener = listener; self.peer = peer; connectedAt = now; lastHeard = now
        }
        var unsent: Int { output.unsent }
        var inboxEmpty: Bool { inboxHead >= inbox.count }
    }

    public let listeners: [HubListener]
    private var listenFDs: [Int32] = []
    private var clients: [ClientID: Client] = [:]
    private var byFD: [Int32: ClientID] = [:]
    private var nextID = HubServer.firstID
    public private(set) var evictedCount = 0

    public var clientIDs: [ClientID] { Array(clients.keys) }
    public var clientCount: Int { clients.count }

    public static func isHubClient(_ id: Int) -> Bool { id >= firstID }

    /// A client's number as the log and `status` show it (1, 2, ...).
    public static func number(_ id: ClientID) -> Int { id - firstID + 1 }

    public init(listeners: [HubListener]) throws(DaemonError) {
        self.listeners = listeners
        for l in listeners {
            do { listenFDs.append(try Self.listen(l.address)) } catch {
                for fd in listenFDs { close(fd) }
                throw DaemonError(.usage, "\(l.webSocket ? "--companion-ws" : "--companion-listen") \(l.address): \(error).")
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

    /// What `status` shows of a client's connection.
    public struct ClientInfo {
        public var listener: HubListener
        public var peer: String
        public var connectedAt: UInt64
        public var lastHeard: UInt64
    }

    public func info(_ id: ClientID) -> ClientInfo? {
        clients[id].map { ClientInfo(listener: listeners[$0.listener], peer: $0.peer, connectedAt: $0.connectedAt, lastHeard: $0.lastHeard) }
    }

    /// A TCP listening socket (non-blocking, close-on-exec, SO_REUSEADDR; IPv6 sockets IPv6 only).
    public static func listen(_ a: TCPAddress) throws(SystemError) -> Int32 {
        // A numeric address only (no name lookup for a listener).
        guard var ai = TCPLink.literalCandidates(a)?.first else {
            throw SystemError("listen", a.description + " (give a numeric IPv4 or IPv6 address)", errno: EINVAL)
        }
        let fd = socket(ai.family, SocketType.stream | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
        if fd < 0 { throw SystemError("socket", a.description) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if ai.family == AF_INET6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let length = ai.length
        if withUnsafePointer(to: &ai.storage, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }) != 0 {
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

    /// One waiting TCP connection, close-on-exec and non-blocking, without Nagle's delay (answers
    /// go out as they are written, many as several small frames); nil when none waits.
    public static func acceptTCP(_ listenFD: Int32) -> Int32? {
        guard case .success(let fd) = retryingOnInterrupt({ accept(listenFD, nil, nil) }) else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        UnixSocket.setNonBlocking(fd)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// The peer of a connected socket as `host:port` (`[v6]:port`); `local`: its own end.
    public static func peerAddress(_ fd: Int32, local: Bool = false) -> String {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &ss) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (local ? getsockname(fd, $0, &len) : getpeername(fd, $0, &len)) == 0 }
        }
        guard ok else { return "?" }
        let family = Int32(ss.ss_family)
        var host = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if family == AF_INET {
            var a = withUnsafeBytes(of: ss) { $0.load(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &a.sin_addr, &host, socklen_t(host.count))
            return String(cString: host) + ":" + String(UInt16(bigEndian: a.sin_port))
        }
        if family == AF_INET6 {
            var a = withUnsafeBytes(of: ss) { $0.load(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &a.sin6_addr, &host, socklen_t(host.count))
            return "[" + String(cString: host) + "]:" + String(UInt16(bigEndian: a.sin6_port))
        }
        return "?"
    }

    // MARK: poll integration

    public func pollDescriptors(into fds: inout [pollfd]) {
        for fd in listenFDs { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        for (id, c) in clients {
            // Not read while the daemon has no room for its frames: the client's own socket
            // buffers fill and its writes block, nobody else's.
            let reading = c.inboxEmpty && room(id) > 0
            fds.append(pollfd(fd: c.fd, events: (reading ? Int16(POLLIN) : 0) | (c.unsent > 0 ? Int16(POLLOUT) : 0), revents: 0))
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
        if p.revents & Int16(POLLIN) != 0 {
            readFrom(id, c, now: now)
        } else if p.revents & Int16(POLLHUP | POLLERR) != 0 {
            drop(id, reason: nil)  // gone while not being read
        }
        return true
    }

    /// Hands frames already read to the daemon as far as it has room; true if any went.
    @discardableResult
    public func resume() -> Bool {
        var any = false
        for (id, c) in clients where !c.inboxEmpty {
            if deliver(id, c) { any = true }
        }
        return any
    }

    /// Closes idle clients and unfinished frames; returns when it next needs to be called.
    public func tick(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (id, c) in clients {
            // A client whose frames wait for the daemon is busy, not idle, and a frame it left
            // unfinished waits on the daemon too (its socket is not being read).
            if !c.inboxEmpty || room(id) <= 0 {
                c.lastHeard = now
                if c.partialSince != nil { c.partialSince = now }
            }
            let due = c.lastHeard + idleTimeoutMS
            if now >= due {
                drop(id, reason: "idle for \((now - c.lastHeard) / 1000) s; disconnected")
                continue
            }
            next = min(next ?? due, due)
            if let since = c.partialSince {
                let d = since + partialFrameTimeoutMS
                if now >= d {
                    drop(id, reason: "left a frame unfinished for \((now - since) / 1000) s; disconnected")
                    continue
                }
                next = min(next ?? d, d)
            }
        }
        return next
    }

    /// Sends one frame ('>' + length + payload) to a client; `flush: false` only queues it (the
    /// caller sends several answers in one write, then calls `flush(_:)`).
    public func send(_ payload: [UInt8], to id: ClientID, flush now: Bool = true) {
        guard let c = clients[id] else { return }
        let framed = StreamDeframer.frame(payload, marker: UInt8(ascii: ">"))
        // Over WebSocket, one binary message carries one frame, header included.
        c.output.append(contentsOf: c.ws == nil ? framed : WebSocketServer.frame(framed))
        if c.unsent > maxOutput {
            drop(id, reason: "\(c.unsent) unread bytes (limit \(maxOutput)); disconnected")
            return
        }
        if now { flush(id, c) }
    }

    /// Writes what `send(_:to:flush: false)` queued.
    public func flush(_ id: ClientID) {
        if let c = clients[id] { flush(id, c) }
    }

    /// Closes a client (a malformed frame, a policy decision).
    public func disconnect(_ id: ClientID, reason: String) { drop(id, reason: reason) }

    // MARK: internals

    private func acceptAll(_ listener: Int, now: UInt64) {
        while true {
            guard let fd = Self.acceptTCP(listenFDs[listener]) else { return }
            if clients.count >= maxClients, let victim = evictionCandidate() {
                evictedCount += 1
                let idle = (now - victim.value.lastHeard) / 1000
                // Every eviction is logged at first; then one line per 100, so churn cannot flood the log.
                if evictedCount <= 10 || evictedCount % 100 == 0 {
                    drop(victim.key, reason: "evicted for a new client (\(maxClients) connected; it was idle the longest, \(idle) s"
                         + (victim.value.spoke ? "" : ", without a whole frame") + "; \(evictedCount) evicted so far)")
                } else {
                    drop(victim.key, reason: "")
                }
            }
            let id = nextID
            nextID += 1
            let client = Client(fd: fd, listener: listener, peer: Self.peerAddress(fd), now: now)
            let l = listeners[listener]
            if l.webSocket { client.ws = WebSocketServer(allowedOrigins: l.origins, sha1: SHA1.digest) }
            clients[id] = client
            byFD[fd] = id
            log("hub: client \(Self.number(id)) connected on \(l.address) from \(client.peer)")
        }
    }

    /// The client a new connection replaces when the hub is full: one that never sent a whole
    /// frame (a connection storm's own, a stalled one) before an app's, then the one idle longest.
    private func evictionCandidate() -> (key: ClientID, value: Client)? {
        clients.min { a, b in
            a.value.spoke != b.value.spoke ? !a.value.spoke : a.value.lastHeard < b.value.lastHeard
        }.map { (key: $0.key, value: $0.value) }
    }

    /// One chunk from a client (only when its earlier frames were all taken and the daemon has
    /// room): its frames go to the inbox, then to the daemon as far as it takes them.
    private func readFrom(_ id: ClientID, _ c: Client, now: UInt64) {
        guard c.inboxEmpty, room(id) > 0 else { return }
        var chunk = [UInt8](repeating: 0, count: Self.readChunk)
        let input = SocketInput.read(c.fd, into: &chunk)
        guard case .bytes(let n) = input else {
            if input != .wouldBlock { drop(id, reason: nil) }  // end of stream, or a failed socket
            return
        }
        c.lastHeard = now
        c.inbox.removeAll(keepingCapacity: true)
        c.inboxHead = 0
        var partial = false
        if c.ws != nil {
            var events: [WebSocketServer.Event] = []
            chunk.withUnsafeBytes { raw in events = c.ws!.receive(UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
            for e in events {
                switch e {
                case .write(let bytes):
                    c.output.append(contentsOf: bytes)
                    flush(id, c)
                case .message(let m):
                    guard let f = Self.frame(inWebSocketMessage: m) else {
                        drop(id, reason: "sent a WebSocket message of \(m.count) bytes that is not one companion frame; disconnected")
                        return
                    }
                    c.inbox.append(f)
                case .close(let why):
                    guard clients[id] != nil else { return }
                    flush(id, c)
                    drop(id, reason: "WebSocket: \(why)")
                    return
                }
                guard clients[id] != nil else { return }
            }
            partial = c.ws!.hasPartial
        } else {
            chunk.withUnsafeBytes { raw in
                c.deframer.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { c.inbox.append(Array($0)) }
            }
            if c.deframer.skippedBytes > 0 || c.deframer.oversizedFrames > 0 {
                drop(id, reason: "sent \(c.deframer.skippedBytes) byte(s) outside companion frames (or an oversized frame); disconnected")
                return
            }
            partial = c.deframer.bufferedCount > 0
        }
        // The time a frame may take counts from the last one completed: a client streaming frames
        // whose reads end mid-frame is not stalled.
        c.partialSince = partial ? (c.inbox.isEmpty ? (c.partialSince ?? now) : now) : nil
        if !c.inbox.isEmpty { c.spoke = true }
        deliver(id, c)
    }

    /// The companion frame a WebSocket message holds: the frame with its '<' header (the length
    /// must match the message exactly: one message, one frame) or the bare frame. A message that
    /// starts with '<' and is longer than a bare GET_ALLOWED_REPEAT_FREQ (0x3C) must be one framed
    /// frame; anything else (two frames in one message) is nil.
    public static func frame(inWebSocketMessage m: [UInt8]) -> [UInt8]? {
        if m.count >= 3, m[0] == UInt8(ascii: "<") {
            let n = Int(m[1]) | Int(m[2]) << 8
            guard n == m.count - 3, (1...CompanionLimits.maxFrameSize).contains(n) else { return nil }
            return Array(m[3...])
        }
        guard (1...CompanionLimits.maxFrameSize).contains(m.count) else { return nil }
        return m
    }

    /// Gives the daemon the client's read frames while it has room; true if any went.
    @discardableResult
    private func deliver(_ id: ClientID, _ c: Client) -> Bool {
        var any = false
        while !c.inboxEmpty, clients[id] != nil, room(id) > 0 {
            let f = c.inbox[c.inboxHead]
            c.inboxHead += 1
            any = true
            f.withUnsafeBytes { host?.hubFrame(id, $0) }
        }
        if c.inboxEmpty {
            c.inbox.removeAll(keepingCapacity: true)
            c.inboxHead = 0
        }
        return any
    }

    private func flush(_ id: ClientID, _ c: Client) {
        guard c.output.flush(to: c.fd) else {
            drop(id, reason: nil)
            return
        }
    }

    /// Closes a client; `reason` "" closes it without a log line.
    private func drop(_ id: ClientID, reason: String?) {
        guard let c = clients.removeValue(forKey: id) else { return }
        byFD[c.fd] = nil
        close(c.fd)
        if reason != "" { log("hub: client \(Self.number(id)) " + (reason ?? "disconnected")) }
        host?.hubGone(id)
    }
}

/// The companion hub is a part of the daemon's poll loop.
extension HubServer: PollPart {}
