import MeshCompanion
import MeshLink
import Glibc
import MeshNet
import MeshDaemonClient
import MeshOps

/// The local API: a Unix stream socket speaking newline-delimited JSON (see APIMessages.swift).
///
/// Non-blocking, driven by the daemon's poll loop: `pollDescriptors` says what to wait for,
/// `handle` consumes what poll reported. Every buffer has a bound:
/// - a request line longer than `maxLine` gets a `too_long` error and is skipped up to its newline;
/// - a client whose unread replies exceed `maxOutput` is disconnected (it is not reading);
/// - a subscriber whose unread events exceed `maxSubscriberBacklog` is disconnected, with one log
///   line, rather than letting a slow reader hold up the radio (overflow policy: drop the reader,
///   never the event for other readers, never block).
/// - a client that is not subscribed, not a tunnel and waits for no reply is closed after
///   `idleTimeoutMS` without a byte from it (a half-open or forgotten connection);
/// - at most `maxClients` connections: when full, a new connection evicts the one idle the longest
///   that waits for no reply (plain request clients first, then subscribers and tunnels), so a new
///   command always gets in; only when every client waits for a reply is it refused with an error line.
public final class APIServer {
    public struct Limits: Sendable {
        public var maxLine = 16 * 1024
        public var maxOutput = 256 * 1024
        public var maxSubscriberBacklog = 64 * 1024
        public var maxClients = 32
        public var idleTimeoutMS: UInt64 = 30_000
        /// Requests of one client waiting for their answer: past this its socket is not read until
        /// some are answered (backpressure: a pipelining client fills only its own buffers).
        public var maxPending = 64
        /// Reads of 4 KiB taken from one client per turn of the loop (the others get theirs between).
        public var maxReadsPerTurn = 8
        public init() {}
    }

    public typealias ClientID = Int

    /// Answers a request. Return nil to answer later with `reply(_:to:)` (e.g. a send waiting for its ACK).
    public var onRequest: (DaemonRequest, ClientID) -> DaemonResponse? = { req, _ in
        DaemonResponse(id: req.id, error: DaemonError(.unsupported, "no handler"))
    }
    /// After `{"op":"tunnel"}` the connection carries companion frames ('<' + u16 length + payload
    /// from the client, '>' frames back): each frame from the client comes here.
    public var onTunnelFrame: (ClientID, UnsafeRawBufferPointer) -> Void = { _, _ in }
    /// Answers a tunnel request: extra response fields, or an error to refuse it; nil answers it
    /// later (`completeTunnel`: the radio's first handshake is under way). Until then the
    /// client's further bytes wait, unread as requests.
    public var onTunnelOpen: (DaemonRequest, ClientID) -> Result<[(String, JSON)], DaemonError>? = { _, _ in .success([]) }
    /// Who may use the socket, by the peer's credentials (SO_PEERCRED and SO_PEERGROUPS): the
    /// operation classes it gets, or nil to refuse the connection (with one error line). The
    /// default lets everyone in with every class (the socket file's mode 0600 is the door).
    public var admit: (PeerCredentials) -> AllowedClasses? = { _ in .everything }
    /// Called when a client goes away (so deferred work for it can be dropped).
    public var onDisconnect: (ClientID) -> Void = { _ in }
    public var log: (String) -> Void = { _ in }
    /// Monotonic milliseconds (tests drive it).
    public var clock: () -> UInt64 = monotonicMilliseconds

    public let path: String
    public let limits: Limits
    /// How the refusal names the API group (", and members of group pocketmesh"), if there is one.
    public var groupNote = ""
    private(set) var listenFD: Int32

    final class Client {
        let fd: Int32
        var input: [UInt8] = []
        var discarding = false
        var output = SocketOutput()
        var subscribed = false
        /// Asked for LOG_RX_DATA events too (`subscribe` with `"log_rx": true`).
        var logRx = false
        var readClosed = false
        var pending = 0
        var tunnel: StreamDeframer? = nil
        /// A tunnel request waits for its answer (`completeTunnel`): bytes after it are kept.
        var tunnelPending = false
        /// The operation classes this client may use (`admit`).
        var allowed = AllowedClasses.everything
        var peer: PeerCredentials? = nil
        /// When the client last sent something (or connected).
        var lastHeard: UInt64
        init(fd: Int32, now: UInt64) { self.fd = fd; lastHeard = now }
        /// Long-lived by design: idle input is normal for them.
        var streaming: Bool { subscribed || tunnel != nil }
        var unsent: Int { output.unsent }
    }

    private var clients: [ClientID: Client] = [:]
    private var nextClient: ClientID = 1

    public var clientCount: Int { clients.count }

    /// The operation classes a client may use (nil: not a client of this socket).
    public func allowed(_ id: ClientID) -> AllowedClasses? { clients[id]?.allowed }

    /// Who a client is, as the kernel told at connect time.
    public func peer(_ id: ClientID) -> PeerCredentials? { clients[id]?.peer }

    /// Answers a tunnel request that `onTunnelOpen` left for later: the connection carries
    /// frames from here on (success), or goes on as a request connection (failure).
    public func completeTunnel(_ id: ClientID, requestID: Int64, _ result: Result<[(String, JSON)], DaemonError>) {
        guard let c = clients[id], c.tunnelPending else { return }
        c.tunnelPending = false
        c.pending = max(0, c.pending - 1)
        c.lastHeard = clock()
        let held = c.input
        c.input.removeAll(keepingCapacity: true)
        switch result {
        case .success(let fields):
            enqueue(DaemonResponse(id: requestID, ok: [("tunnel", .bool(true))] + fields).json, to: id, c)
            guard clients[id] != nil else { return }
            c.tunnel = StreamDeframer(marker: UInt8(ascii: "<"))
        case .failure(let e):
            enqueue(DaemonResponse(id: requestID, error: e).json, to: id, c)
            guard clients[id] != nil else { return }
        }
        if !held.isEmpty { consume(held[...], id, c) }
        if clients[id] != nil { closeIfDone(id, c) }
    }
    public var subscriberCount: Int { clients.values.filter(\.subscribed).count }
    public var tunnelClients: [ClientID] { clients.filter { $0.value.tunnel != nil }.map(\.key) }

    /// Sends one companion frame ('>' + length + payload) to a tunnel client.
    public func sendFrame(_ payload: [UInt8], to id: ClientID) {
        guard let c = clients[id], c.tunnel != nil else { return }
        c.output.append(contentsOf: StreamDeframer.frame(payload, marker: UInt8(ascii: ">")))
        if c.unsent > limits.maxOutput {
            drop(id, reason: "tunnel client has \(c.unsent) unread bytes (limit \(limits.maxOutput)); disconnected")
            return
        }
        flush(id, c)
    }

    public init(path: String, limits: Limits = Limits()) throws(SystemError) {
        self.path = path
        self.limits = limits
        listenFD = try UnixSocket.listen(path: path)
    }

    deinit { shutdown() }

    /// Closes every connection and the listening socket, and removes the socket file.
    public func shutdown() {
        for id in Array(clients.keys) { drop(id, reason: nil) }
        if listenFD >= 0 {
            close(listenFD)
            listenFD = -1
            unlink(path)
        }
    }

    // MARK: timers

    /// Closes idle request clients; returns when it next needs to be called.
    public func tick(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (id, c) in clients where !c.streaming && c.pending == 0 {
            let due = c.lastHeard + limits.idleTimeoutMS
            if now >= due {
                drop(id, reason: "idle for \((now - c.lastHeard) / 1000) s without a request; disconnected")
            } else {
                next = min(next ?? due, due)
            }
        }
        return next
    }

    /// The client to make room with: waiting for no reply, plain clients before streaming ones,
    /// then the one heard from longest ago.
    private func evictionCandidate() -> ClientID? {
        clients.filter { $0.value.pending == 0 }
            .min { a, b in
                a.value.streaming != b.value.streaming ? !a.value.streaming : a.value.lastHeard < b.value.lastHeard
            }?.key
    }

    // MARK: poll integration

    public func pollDescriptors(into fds: inout [pollfd]) {
        if listenFD >= 0 { fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)) }
        for c in clients.values {
            var ev = Int16(0)
            if !c.readClosed && c.pending < limits.maxPending { ev |= Int16(POLLIN) }
            if c.unsent > 0 { ev |= Int16(POLLOUT) }
            fds.append(pollfd(fd: c.fd, events: ev, revents: 0))
        }
    }

    /// Handles one poll result; returns false if the descriptor is not ours.
    @discardableResult
    public func handle(_ p: pollfd) -> Bool {
        if p.fd == listenFD {
            if p.revents & Int16(POLLIN) != 0 { acceptAll() }
            return true
        }
        guard let (id, c) = clients.first(where: { $0.value.fd == p.fd }) else { return false }
        if p.revents & Int16(POLLOUT) != 0 { flush(id, c) }
        guard clients[id] != nil else { return true }
        if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readFrom(id, c) }
        // Peer closed both directions: nothing more can be delivered.
        if p.revents & Int16(POLLHUP | POLLERR) != 0 { drop(id, reason: nil) }
        return true
    }

    /// `PollPart`'s form of `handle(_:)`.
    public func handle(_ p: pollfd, now: UInt64) -> Bool { handle(p) }

    // MARK: replies and events

    /// Sends a deferred response. Ignored if the client has gone.
    public func reply(_ response: DaemonResponse, to id: ClientID) {
        guard let c = clients[id] else { return }
        c.pending = max(0, c.pending - 1)
        c.lastHeard = clock()  // the idle time counts from the answer
        enqueue(response.json, to: id, c)
        closeIfDone(id, c)
    }

    /// Sends an event to every subscriber (`logRx`: only to those that asked for LOG_RX_DATA).
    public func publish(_ event: JSON, logRx: Bool = false) {
        var line: [UInt8] = []
        event.write(into: &line)
        line.append(0x0A)
        for (id, c) in clients where c.subscribed && (!logRx || c.logRx) {
            if c.unsent + line.count > limits.maxSubscriberBacklog {
                drop(id, reason: "subscriber fell \(c.unsent) bytes behind (limit \(limits.maxSubscriberBacklog)); disconnected")
                continue
            }
            c.output.append(contentsOf: line)
            flush(id, c)
        }
    }

    // MARK: internals

    private func acceptAll() {
        while true {
            // EAGAIN, or a transient error (EMFILE...): try again on the next poll.
            guard case .success(let fd) = retryingOnInterrupt({ accept(listenFD, nil, nil) }) else { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            UnixSocket.setNonBlocking(fd)
            let now = clock()
            if clients.count >= limits.maxClients, let victim = evictionCandidate() {
                drop(victim, reason: "evicted to make room for a new client (\(limits.maxClients) connected, this one idle \((now - clients[victim]!.lastHeard) / 1000) s)")
            }
            if clients.count >= limits.maxClients {
                let msg = DaemonResponse(id: 0, error: DaemonError(.busy, "too many API clients (limit \(limits.maxClients))")).json.text + "\n"
                _ = msg.withCString { send(fd, $0, strlen($0), SocketFlags.noSignal) }
                close(fd)
                log("api: refused a client: \(limits.maxClients) already connected")
                continue
            }
            let peer = PeerCredentials(socket: fd)
            guard let allowed = peer.flatMap(admit) else {
                let who = peer.map { "uid \($0.uid)" } ?? "a peer whose credentials are unknown"
                let msg = DaemonResponse(id: 0, error: DaemonError(.denied, "\(who) may not use this daemon's API socket \(path) (it serves root, its own user\(groupNote)).")).json.text + "\n"
                _ = msg.withCString { send(fd, $0, strlen($0), SocketFlags.noSignal) }
                close(fd)
                log("api: refused \(who)\(peer.map { " (gid \($0.gid), pid \($0.pid))" } ?? ""): not root, the daemon's user or a member of its API group")
                continue
            }
            let id = nextClient
            nextClient += 1
            let c = Client(fd: fd, now: now)
            c.allowed = allowed
            c.peer = peer
            clients[id] = c
        }
    }

    private func readFrom(_ id: ClientID, _ c: Client) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        var reads = 0
        while clients[id] != nil && reads < limits.maxReadsPerTurn && c.pending < limits.maxPending {
            reads += 1
            let n: Int
            switch SocketInput.read(c.fd, into: &chunk) {
            case .bytes(let count): n = count
            case .wouldBlock: return
            case .endOfStream:
                c.readClosed = true
                closeIfDone(id, c)
                return
            case .failed:
                drop(id, reason: nil)
                return
            }
            c.lastHeard = clock()
            consume(chunk[0..<n], id, c)
            if n < chunk.count { return }
        }
    }

    private func consume(_ bytes: ArraySlice<UInt8>, _ id: ClientID, _ c: Client) {
        var rest = bytes[...]
        if c.tunnel != nil {
            feedTunnel(rest, id, c)
            return
        }
        if c.tunnelPending {
            holdWhileTunnelPending(rest, id, c)
            return
        }
        while let nl = rest.firstIndex(of: 0x0A) {
            let part = rest[rest.startIndex..<nl]
            rest = rest[(nl + 1)...]
            if c.discarding {
                c.discarding = false
                c.input.removeAll(keepingCapacity: false)
                continue
            }
            if c.input.count + part.count > limits.maxLine {
                c.input.removeAll(keepingCapacity: false)
                tooLong(id, c)
                continue
            }
            c.input.append(contentsOf: part)
            let line = c.input
            c.input.removeAll(keepingCapacity: true)
            handleLine(line, id, c)
            if clients[id] == nil { return }
            if c.tunnel != nil {
                feedTunnel(rest, id, c)
                return
            }
            if c.tunnelPending {
                holdWhileTunnelPending(rest, id, c)
                return
            }
        }
        if c.discarding { return }
        if c.input.count + rest.count > limits.maxLine {
            c.input.removeAll(keepingCapacity: false)
            c.discarding = true
            tooLong(id, c)
        } else {
            c.input.append(contentsOf: rest)
        }
    }

    /// Bytes after a tunnel request that waits for its answer: kept (bounded) until it comes.
    private func holdWhileTunnelPending(_ bytes: ArraySlice<UInt8>, _ id: ClientID, _ c: Client) {
        if c.input.count + bytes.count > limits.maxLine {
            drop(id, reason: "sent \(c.input.count + bytes.count) bytes before its tunnel was open (limit \(limits.maxLine)); disconnected")
            return
        }
        c.input.append(contentsOf: bytes)
    }

    private func feedTunnel(_ bytes: ArraySlice<UInt8>, _ id: ClientID, _ c: Client) {
        guard var deframer = c.tunnel else { return }
        bytes.withUnsafeBytes { raw in
            deframer.feed(raw) { frame in onTunnelFrame(id, frame) }
        }
        if clients[id] != nil { c.tunnel = deframer }
    }

    private func tooLong(_ id: ClientID, _ c: Client) {
        enqueue(DaemonResponse(id: 0, error: DaemonError(.tooLong, "request line longer than \(limits.maxLine) bytes; skipped")).json, to: id, c)
    }

    private func handleLine(_ line: [UInt8], _ id: ClientID, _ c: Client) {
        // Blank lines (and a CR before the newline) are tolerated.
        var end = line.count
        if end > 0 && line[end - 1] == 0x0D { end -= 1 }
        if line[0..<end].allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        let parsed = line.withUnsafeBytes { DaemonRequest.parse(line: UnsafeRawBufferPointer(rebasing: $0[0..<end])) }
        switch parsed {
        case .failure(let f):
            enqueue(DaemonResponse(id: f.id, error: f.error).json, to: id, c)
        case .success(let req):
            let streamValues: OperationValues?
            if req.op == .tunnel || req.op == .subscribe {
                // Their fields, by their rows of the operation table, as for every op.
                do throws(DaemonError) { streamValues = try req.values() } catch {
                    enqueue(DaemonResponse(id: req.id, error: error).json, to: id, c)
                    return
                }
            } else {
                streamValues = nil
            }
            if req.op == .tunnel || req.op == .subscribe, let needed = req.op.operationClass, !c.allowed.allows(needed) {
                log("permission: api client \(id)\(c.peer.map { " (uid \($0.uid))" } ?? ""): refused \(req.name) (\(needed.rawValue); allowed: \(c.allowed))")
                enqueue(DaemonResponse(id: req.id, error: DaemonError(.denied, "\(req.name) is a \(needed.rawValue) operation, which this socket does not allow your user (it allows \(c.allowed)).")).json, to: id, c)
                return
            }
            if req.op == .tunnel {
                switch onTunnelOpen(req, id) {
                case .success(let fields)?:
                    enqueue(DaemonResponse(id: req.id, ok: [("tunnel", .bool(true))] + fields).json, to: id, c)
                    c.tunnel = StreamDeframer(marker: UInt8(ascii: "<"))
                case .failure(let e)?:
                    enqueue(DaemonResponse(id: req.id, error: e).json, to: id, c)
                case nil:
                    c.tunnelPending = true
                    c.pending += 1
                }
                return
            }
            if req.op == .subscribe {
                c.subscribed = true
                c.logRx = streamValues?.flag("log-rx") == true
                enqueue(DaemonResponse(id: req.id, ok: [("subscribed", .bool(true))]).json, to: id, c)
                return
            }
            c.pending += 1
            if let resp = onRequest(req, id) {
                reply(resp, to: id)
            }
        }
    }

    private func enqueue(_ value: JSON, to id: ClientID, _ c: Client) {
        value.write(into: &c.output.bytes)
        c.output.bytes.append(0x0A)
        if c.unsent > limits.maxOutput {
            drop(id, reason: "client has \(c.unsent) unread reply bytes (limit \(limits.maxOutput)); disconnected")
            return
        }
        flush(id, c)
    }

    private func flush(_ id: ClientID, _ c: Client) {
        guard c.output.flush(to: c.fd) else {
            drop(id, reason: nil)
            return
        }
        closeIfDone(id, c)
    }

    private func closeIfDone(_ id: ClientID, _ c: Client) {
        // A half-closed subscriber keeps receiving events; it goes when the peer closes fully (POLLHUP).
        if c.readClosed && c.pending == 0 && c.unsent == 0 && !c.subscribed { drop(id, reason: nil) }
    }

    private func drop(_ id: ClientID, reason: String?) {
        guard let c = clients.removeValue(forKey: id) else { return }
        close(c.fd)
        if let reason { log("api: client \(id): \(reason)") }
        onDisconnect(id)
    }
}

/// The local API server is a part of the daemon's poll loop.
extension APIServer: PollPart {}
