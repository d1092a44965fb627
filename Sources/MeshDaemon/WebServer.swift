import Glibc
import MeshAir
import MeshLink
import MeshNet
import MeshOps
import MeshHub

/// The web console's door (`--web`): HTTP/1.1 on a TCP port serving the page embedded in the
/// binary (`WebPage`), a login, and the daemon's JSON API over a WebSocket at `/api`: each text
/// message one request as a line on the Unix socket, each answer and event one text message, the
/// same JSON from the same handlers (`onRequest` is the daemon's `handle` with a `.web` caller,
/// whose classes are its listener's `allow=`).
///
/// Routes: `GET /` the page; `GET /whoami` what the listener allows and whether a login is
/// needed and done; `POST /login` (body `password=...` or {"password":...}) sets the session
/// cookie; `POST /logout`; `GET /api` the WebSocket. Anything else is 404, another method 405.
///
/// Bounds (each a status and a closed connection, never a trap): the request (`HTTPRequestParser`:
/// head 8 KiB, body 4 KiB) must be complete within `requestTimeoutMS`; one request per
/// connection (answered, then closed) unless it upgrades; at most `maxConnections` per listener (a
/// new one evicts the oldest that has not upgraded, else gets 503); a WebSocket message over
/// `maxMessage` closes with 1009; a client whose unread answers pass `maxOutput` is dropped, as a
/// subscriber `maxSubscriberBacklog` behind; past `maxPending` requests waiting for their answers
/// its socket is not read. Login attempts are counted per address (`WebLogins`).
public final class WebServer {
    public struct Limits: Sendable {
        public var maxConnections = 16
        public var requestTimeoutMS: UInt64 = 10_000
        public var lingerMS: UInt64 = 2_000
        public var maxMessage = 64 * 1024
        public var maxOutput = 512 * 1024
        public var maxSubscriberBacklog = 256 * 1024
        public var maxPending = 32
        /// A console silent this long is pinged (a browser answers by itself); silent three
        /// times as long, it is gone (a laptop shut, a network left) and its connection closed.
        public var pingEveryMS: UInt64 = 30_000
        public var http = HTTPRequestParser.Limits()
        public init() {}
    }

    public typealias ClientID = Int

    public var onRequest: (DaemonRequest, ClientID) -> DaemonResponse? = { req, _ in
        DaemonResponse(id: req.id, error: DaemonError(.unsupported, "no handler"))
    }
    public var onDisconnect: (ClientID) -> Void = { _ in }
    public var log: (String) -> Void = { _ in }
    public var clock: () -> UInt64 = monotonicMilliseconds

    public let listeners: [WebListener]
    public let limits: Limits
    var logins = WebLogins()
    var refusals = RefusalLog()
    /// Whether browsers must log in (a password was given).
    public var loginRequired: Bool { logins.password != nil }
    private var listenFDs: [Int32] = []

    final class Client {
        let fd: Int32
        let listener: Int
        /// The peer's address (its host alone counts login attempts) and where it reached us.
        let peer: String
        let peerHost: String
        let local: String
        let since: UInt64
        var http: HTTPRequestParser
        var ws: WebSocketServer? = nil
        var output = SocketOutput()
        /// Answered: closed once the answer is out and the peer's rest read, or at `lingerUntil`
        /// (a client that does not take its answer holds its connection no longer).
        var closing = false
        var shutDown = false
        /// The peer sent its end: nothing more is read (what is queued still goes out).
        var readClosed = false
        var lingerUntil: UInt64 = 0
        var subscribed = false
        var logRx = false
        var pending = 0
        /// When it last sent something (or connected), and whether it was pinged since.
        var lastHeard: UInt64
        var pinged = false
        init(fd: Int32, listener: Int, peer: String, local: String, now: UInt64, limits: HTTPRequestParser.Limits) {
            self.fd = fd; self.listener = listener; self.peer = peer; self.local = local; since = now; lastHeard = now
            http = HTTPRequestParser(limits: limits)
            if peer.hasPrefix("["), let end = peer.firstIndex(of: "]") {
                peerHost = String(peer[peer.index(after: peer.startIndex)..<end])
            } else {
                peerHost = String(peer.split(separator: ":").first ?? "")
            }
        }
    }

    private var clients: [ClientID: Client] = [:]
    private var byFD: [Int32: ClientID] = [:]
    private var nextID = 1

    public var clientCount: Int { clients.count }
    public var subscriberCount: Int { clients.values.filter(\.subscribed).count }

    /// `password`: the login's (nil: none). A listener beyond loopback without one is refused.
    public init(listeners: [WebListener], password: [UInt8]?, limits: Limits = Limits()) throws(DaemonError) {
        self.listeners = listeners
        self.limits = limits
        if let password, password.isEmpty { throw DaemonError(.usage, "--web-password-file: the file's first line is empty; put the password there.") }
        logins.password = password
        for l in listeners {
            if let problem = l.loginProblem(password: password != nil) { throw DaemonError(.usage, problem) }
        }
        for l in listeners {
            do { listenFDs.append(try HubServer.listen(l.address)) } catch {
                for fd in listenFDs { close(fd) }
                listenFDs = []
                throw DaemonError(.usage, "--web \(l.address): \(error).")
            }
        }
    }

    deinit { shutdown() }

    public func shutdown() {
        for id in Array(clients.keys) { drop(id, reason: nil) }
        for fd in listenFDs { close(fd) }
        listenFDs = []
    }

    /// The classes a client may use (nil: not a client).
    public func allowed(_ id: ClientID) -> AllowedClasses? { clients[id].map { listeners[$0.listener].allowed } }

    /// How the log names a client.
    public func name(_ id: ClientID) -> String { "web client \(id)" + (clients[id].map { " (\($0.peer))" } ?? "") }

    // MARK: poll integration

    public func pollDescriptors(into fds: inout [pollfd]) {
        for fd in listenFDs { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        for c in clients.values {
            let reading = !c.readClosed && c.pending < limits.maxPending
            fds.append(pollfd(fd: c.fd, events: (reading ? Int16(POLLIN) : 0) | (c.output.unsent > 0 ? Int16(POLLOUT) : 0), revents: 0))
        }
    }

    public func handle(_ p: pollfd, now: UInt64) -> Bool {
        if let i = listenFDs.firstIndex(of: p.fd) {
            acceptAll(i, now: now)
            return true
        }
        guard let id = byFD[p.fd], let c = clients[id] else { return false }
        if p.revents & Int16(POLLOUT) != 0 { flush(id, c, now: now) }
        guard clients[id] != nil else { return true }
        if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readFrom(id, c, now: now) }
        return true
    }

    /// Closes requests not complete in time (408) and lingering answered connections.
    public func tick(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        for (id, c) in clients {
            if c.closing {
                // Its answer not taken in time, or its lingering over.
                if now >= c.lingerUntil { drop(id, reason: nil); continue }
                next = min(next ?? c.lingerUntil, c.lingerUntil)
                continue
            }
            if c.ws != nil {
                if now >= c.lastHeard + 3 * limits.pingEveryMS {
                    drop(id, reason: "silent for \((now - c.lastHeard) / 1000) s, not answering pings; disconnected")
                    continue
                }
                if !c.pinged && now >= c.lastHeard + limits.pingEveryMS {
                    c.pinged = true
                    c.output.append(contentsOf: WebSocketServer.frame([], opcode: 0x9))
                    flush(id, c, now: now)
                    if clients[id] == nil { continue }
                }
                let due = c.lastHeard + (c.pinged ? 3 * limits.pingEveryMS : limits.pingEveryMS)
                next = min(next ?? due, due)
                continue
            }
            let due = c.since + limits.requestTimeoutMS
            if now >= due {
                refusal(c, "408", "web: \(name(id)): no whole request in \(limits.requestTimeoutMS / 1000) s; closed")
                refuse(id, c, 408, "no whole request within \(limits.requestTimeoutMS / 1000) s", now: now)
            } else {
                next = min(next ?? due, due)
            }
        }
        return next
    }

    // MARK: answers and events

    public func reply(_ response: DaemonResponse, to id: ClientID) {
        guard let c = clients[id] else { return }
        c.pending = max(0, c.pending - 1)
        send(response.json, id, c, limit: limits.maxOutput)
    }

    public func publish(_ event: JSON, logRx: Bool = false) {
        for (id, c) in clients where c.subscribed && (!logRx || c.logRx) {
            send(event, id, c, limit: limits.maxSubscriberBacklog)
        }
    }

    private func send(_ value: JSON, _ id: ClientID, _ c: Client, limit: Int) {
        guard c.ws != nil, !c.closing else { return }
        var text: [UInt8] = []
        value.write(into: &text)
        c.output.append(contentsOf: WebSocketServer.frame(text, opcode: 0x1))
        if c.output.unsent > limit {
            drop(id, reason: "\(c.output.unsent) unread bytes (limit \(limit)); disconnected")
            return
        }
        flush(id, c, now: clock())
    }

    // MARK: connections

    private func acceptAll(_ listener: Int, now: UInt64) {
        while true {
            guard let fd = HubServer.acceptTCP(listenFDs[listener]) else { return }
            let mine = clients.filter { $0.value.listener == listener }
            if mine.count >= limits.maxConnections {
                // The oldest connection that is not a console's WebSocket makes room; if all are, 503.
                if let victim = mine.filter({ $0.value.ws == nil }).min(by: { $0.value.since < $1.value.since }) {
                    drop(victim.key, reason: "evicted for a new connection (\(limits.maxConnections) on \(listeners[listener].address))")
                } else {
                    let bytes = HTTPResponse.bytes(503, headers: [("Content-Type", "application/json")],
                                                   body: Self.errorBody(503, "too many connections to this listener (\(limits.maxConnections))"))
                    _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
                    close(fd)
                    refusal(nil, "503", "web: refused a connection: \(limits.maxConnections) open consoles on \(listeners[listener].address)")
                    continue
                }
            }
            let id = nextID
            nextID += 1
            let c = Client(fd: fd, listener: listener, peer: HubServer.peerAddress(fd), local: HubServer.peerAddress(fd, local: true), now: now, limits: limits.http)
            clients[id] = c
            byFD[fd] = id
        }
    }

    private func readFrom(_ id: ClientID, _ c: Client, now: UInt64) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<8 {
            guard clients[id] != nil, c.pending < limits.maxPending else { return }
            let n: Int
            switch SocketInput.read(c.fd, into: &chunk) {
            case .bytes(let k): n = k
            case .wouldBlock: return
            case .endOfStream:
                // A client that half-closed after its request still gets the answer.
                if c.closing && c.output.unsent > 0 && !c.readClosed { c.readClosed = true } else { drop(id, reason: nil) }
                return
            case .failed:
                drop(id, reason: nil)
                return
            }
            c.lastHeard = now
            c.pinged = false
            if c.closing { continue }  // the rest of a refused request: read and dropped
            chunk.withUnsafeBytes { consume(UnsafeRawBufferPointer(rebasing: $0[0..<n]), id, c, now: now) }
            if n < chunk.count { return }
        }
    }

    private func consume(_ bytes: UnsafeRawBufferPointer, _ id: ClientID, _ c: Client, now: UInt64) {
        if c.ws != nil {
            frames(bytes, id, c, now: now)
            return
        }
        switch c.http.receive(bytes) {
        case .needMore: return
        case .error(let status, let reason):
            refusal(c, String(status), "web: \(name(id)): \(status) for \(reason)")
            refuse(id, c, status, reason, now: now)
        case .request(let r):
            answer(r, id, c, now: now)
            if clients[id] != nil, c.ws != nil, !c.http.leftover.isEmpty {
                let rest = c.http.leftover
                rest.withUnsafeBytes { frames($0, id, c, now: now) }
            }
        }
    }

    private func frames(_ bytes: UnsafeRawBufferPointer, _ id: ClientID, _ c: Client, now: UInt64) {
        guard var ws = c.ws else { return }
        let events = ws.receive(bytes)
        c.ws = ws
        for e in events {
            guard clients[id] != nil else { return }
            switch e {
            case .write(let b):
                c.output.append(contentsOf: b)
                flush(id, c, now: now)
            case .message(let m):
                request(m, id, c)
            case .close(let why):
                flush(id, c, now: now)
                if clients[id] != nil { log("web: \(name(id)): WebSocket closed: \(why)") }
                finish(id, c, now: now)
                return
            }
        }
    }

    /// One JSON request from the console, as a line on the Unix socket is.
    private func request(_ m: [UInt8], _ id: ClientID, _ c: Client) {
        let parsed = m.withUnsafeBytes { DaemonRequest.parse(line: $0) }
        switch parsed {
        case .failure(let f):
            send(DaemonResponse(id: f.id, error: f.error).json, id, c, limit: limits.maxOutput)
        case .success(let req):
            let allowed = listeners[c.listener].allowed
            if req.op == .subscribe || req.op == .tunnel {
                let values: OperationValues
                do throws(DaemonError) { values = try req.values() } catch {
                    send(DaemonResponse(id: req.id, error: error).json, id, c, limit: limits.maxOutput)
                    return
                }
                if req.op == .tunnel {
                    send(DaemonResponse(id: req.id, error: DaemonError(.unsupported, "tunnel carries companion frames on the Unix socket only; the web console's socket takes JSON requests.")).json, id, c, limit: limits.maxOutput)
                    return
                }
                if let needed = req.op.operationClass, !allowed.allows(needed) {
                    refusal(c, req.name, "permission: \(name(id)): refused \(req.name) (\(needed.rawValue); allowed: \(allowed))")
                    send(DaemonResponse(id: req.id, error: DaemonError(.denied, "\(req.name) is a \(needed.rawValue) operation, which \(name(id)) does not allow (it allows \(allowed)).")).json, id, c, limit: limits.maxOutput)
                    return
                }
                c.subscribed = true
                c.logRx = values.flag("log-rx") == true
                send(DaemonResponse(id: req.id, ok: [("subscribed", .bool(true))]).json, id, c, limit: limits.maxOutput)
                return
            }
            c.pending += 1
            if let r = onRequest(req, id) { reply(r, to: id) }
        }
    }

    // MARK: HTTP

    /// The page's security headers: scripts and styles of the page itself (their hashes,
    /// `WebPage.scriptSources`), images from it and OpenStreetMap's tiles, connections to itself.
    static var securityHeaders: [(String, String)] {
        [("Content-Security-Policy", "default-src 'none'; script-src 'self' \(WebPage.scriptSources); style-src 'self' 'unsafe-inline'; "
            + "img-src 'self' data: https://tile.openstreetmap.org https://*.tile.openstreetmap.org; connect-src 'self'; "
            + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
         ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]
    }

    static func errorBody(_ status: Int, _ message: String) -> [UInt8] {
        let kind: DaemonErrorCode
        switch status {
        case 401, 403: kind = .denied
        case 404: kind = .notFound
        case 405, 501, 505: kind = .unsupported
        case 408: kind = .timeout
        case 413, 414, 431: kind = .tooLong
        case 429, 503: kind = .busy
        default: kind = .usage
        }
        var out: [UInt8] = []
        JSON.obj(("ok", .bool(false)), ("error", DaemonError(kind, message).json)).write(into: &out)
        return out
    }

    /// Answers with an error status and closes.
    private func refuse(_ id: ClientID, _ c: Client, _ status: Int, _ why: String, headers: [(String, String)] = [], now: UInt64) {
        respond(id, c, status, headers: headers + [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                body: Self.errorBody(status, why), now: now)
    }

    private func respond(_ id: ClientID, _ c: Client, _ status: Int, headers: [(String, String)], body: [UInt8], now: UInt64) {
        c.output.append(contentsOf: HTTPResponse.bytes(status, headers: headers + Self.securityHeaders, body: body))
        finish(id, c, now: now)
    }

    /// No more requests on this connection: out goes what is queued, then it closes.
    private func finish(_ id: ClientID, _ c: Client, now: UInt64) {
        c.closing = true
        c.lingerUntil = now + limits.requestTimeoutMS
        c.subscribed = false
        flush(id, c, now: now)
    }

    private func answer(_ r: HTTPRequest, _ id: ClientID, _ c: Client, now: UInt64) {
        let l = listeners[c.listener]
        // Never a secret in the URL (it would be in logs, history and Referer).
        if r.queryNames.contains(where: { ["password", "token", "session", WebLogins.cookieName].contains($0) }) {
            refusal(c, "url", "web: \(name(id)): refused a request with a secret in its URL")
            refuse(id, c, 400, "a password or token goes in the body of POST /login, never in the URL", now: now)
            return
        }
        if let origin = r.header("origin"), !l.acceptedOrigins(local: c.local).contains(WebSocketServer.normalizedOrigin(origin)) {
            let printable = String(origin.unicodeScalars.prefix(100).map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
            refusal(c, "origin", "web: \(name(id)): refused a request from a page of origin \(printable) (origin=\(printable) accepts it)")
            refuse(id, c, 403, "a page from origin \(printable), which this listener does not accept", now: now)
            return
        }
        let session = WebLogins.cookie(r.header("cookie"))
        switch (r.path, r.method) {
        case ("/", "GET"), ("/", "HEAD"), ("/index.html", "GET"):
            respond(id, c, 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip"), ("Cache-Control", "no-cache")],
                    body: r.method == "HEAD" ? [] : WebPage.gzipped, now: now)
        case ("/favicon.ico", "GET"):
            // Browsers ask for it by themselves: no icon, and no error in the page's console.
            respond(id, c, 204, headers: [("Cache-Control", "max-age=86400")], body: [], now: now)
        case ("/whoami", "GET"):
            let loggedIn = loginRequired && logins.valid(session, now: now)
            var body: [UInt8] = []
            JSON.obj(("allow", .array(l.allowed.classes.sorted().map { .string($0.rawValue) })), ("login", .bool(loginRequired)),
                     ("loggedIn", .bool(loggedIn))).write(into: &body)
            respond(id, c, 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: body, now: now)
        case ("/login", "POST"):
            login(r, id, c, now: now)
        case ("/logout", "POST"):
            logins.logout(session)
            respond(id, c, 204, headers: [("Set-Cookie", "\(WebLogins.cookieName)=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"), ("Cache-Control", "no-store")],
                    body: [], now: now)
        case ("/api", "GET"):
            if loginRequired && !logins.valid(session, now: now) {
                refuse(id, c, 401, "log in first (POST /login)", now: now)
                return
            }
            upgrade(r, id, c, now: now)
        case ("/", _), ("/whoami", _), ("/api", _), ("/index.html", _):
            refuse(id, c, 405, "\(r.method) is not a method of \(r.path)", headers: [("Allow", r.path == "/" ? "GET, HEAD" : "GET")], now: now)
        case ("/login", _), ("/logout", _):
            refuse(id, c, 405, "\(r.method) is not a method of \(r.path)", headers: [("Allow", "POST")], now: now)
        default:
            refuse(id, c, 404, "no such page", now: now)
        }
    }

    private func login(_ r: HTTPRequest, _ id: ClientID, _ c: Client, now: UInt64) {
        guard loginRequired else {
            respond(id, c, 204, headers: [("Cache-Control", "no-store")], body: [], now: now)
            return
        }
        guard let given = WebLogins.password(body: r.body, contentType: r.header("content-type")) else {
            refuse(id, c, 400, "give the password as password=... (form) or {\"password\":\"...\"} (JSON)", now: now)
            return
        }
        switch logins.login(given, address: c.peerHost, now: now, newToken: { Hex.encode(SecureRandom.bytes(count: 32)) }) {
        case .ok(let token):
            log("web: \(name(id)): logged in")
            // A page served over https (a reverse proxy with TLS): the cookie never goes over plain http.
            let secure = r.header("origin")?.lowercased().hasPrefix("https://") == true ? "; Secure" : ""
            respond(id, c, 204, headers: [("Set-Cookie", "\(WebLogins.cookieName)=\(token); HttpOnly; SameSite=Strict; Path=/\(secure)"), ("Cache-Control", "no-store")],
                    body: [], now: now)
        case .wrong:
            refusal(c, "password", "web: \(name(id)): a wrong password")
            refuse(id, c, 401, "wrong password", now: now)
        case .limited(let s):
            refusal(c, "429", "web: \(name(id)): login refused: \(WebLogins.attemptsPerWindow) attempts from \(c.peerHost) within a minute")
            refuse(id, c, 429, "too many login attempts; try again in \(s) s", headers: [("Retry-After", String(s))], now: now)
        }
    }

    private func upgrade(_ r: HTTPRequest, _ id: ClientID, _ c: Client, now: UInt64) {
        guard r.header("upgrade")?.lowercased() == "websocket",
              r.header("connection")?.lowercased().split(separator: ",").contains(where: { $0.trimmingSpaces == "upgrade" }) == true,
              r.header("sec-websocket-version") == "13",
              let key = r.header("sec-websocket-key"), !key.isEmpty, r.body.isEmpty else {
            refuse(id, c, 400, "/api is a WebSocket (version 13): send the upgrade", headers: [("Sec-WebSocket-Version", "13")], now: now)
            return
        }
        c.output.append(contentsOf: Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(WebSocketServer.accept(key: key, sha1: SHA1.digest))\r\n\r\n").utf8))
        c.ws = WebSocketServer(maxMessage: limits.maxMessage, textMessages: true, open: true, sha1: SHA1.digest)
        log("web: \(name(id)) opened the console's API on \(listeners[c.listener].address) (\(listeners[c.listener].allowed))")
        flush(id, c, now: now)
    }

    // MARK: internals

    /// Logs a refusal: per client address the first ones one by one and the first of each kind,
    /// then a line a minute with the count (`RefusalLog`), so junk sent fast cannot fill the log.
    private func refusal(_ c: Client?, _ what: String, _ line: String) {
        let from = c?.peerHost ?? "new connections"
        switch refusals.note("web " + from, what: what, now: clock()) {
        case .log: log(line)
        case .summary(let n): log("web: \(n) more refusal(s) of \(from) in the last minute, not logged one by one; the last: " + line)
        case .quiet: break
        }
    }

    private func flush(_ id: ClientID, _ c: Client, now: UInt64) {
        guard c.output.flush(to: c.fd) else {
            drop(id, reason: nil)
            return
        }
        if c.closing && c.output.unsent == 0 && c.readClosed {
            drop(id, reason: nil)
            return
        }
        if c.closing && c.output.unsent == 0 && !c.shutDown {
            // The answer is out: no more from us; what the peer still sends is read and dropped
            // (closing at once could reset the connection before it read the answer).
            c.shutDown = true
            _ = Glibc.shutdown(c.fd, Int32(SHUT_WR))
            c.lingerUntil = now + limits.lingerMS
        }
    }

    private func drop(_ id: ClientID, reason: String?) {
        guard let c = clients.removeValue(forKey: id) else { return }
        byFD[c.fd] = nil
        close(c.fd)
        if let reason { log("web: client \(id): \(reason)") }
        onDisconnect(id)
    }
}

/// The web console's door is a part of the daemon's poll loop.
extension WebServer: PollPart {}
