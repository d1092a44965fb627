import Glibc
import MeshLink
@testable import MeshNet
import MeshOps
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshHub
@testable import MeshSim

/// A raw HTTP and WebSocket client of the web console, read without blocking between turns of
/// whatever serves it.
final class WebTestClient {
    let fd: Int32
    var buffer: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | SocketFlags.closeOnExec, 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw SystemError("connect") }
        UnixSocket.setNonBlocking(fd)
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// A masked text frame, as a browser sends one.
    func sendText(_ text: String) {
        let payload = Array(text.utf8)
        var f: [UInt8] = [0x81]
        if payload.count < 126 {
            f.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            f += [UInt8(0x80 | 126), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            f.append(UInt8(0x80 | 127))
            for s in stride(from: 56, through: 0, by: -8) { f.append(UInt8(truncatingIfNeeded: payload.count >> s)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        f += mask
        for (i, b) in payload.enumerated() { f.append(b ^ mask[i & 3]) }
        send(f)
    }

    /// Reads what arrived; true once the server closed.
    @discardableResult
    func poll() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
            buffer += chunk[0..<n]
        }
    }

    /// The HTTP response head and body once whole (the connection closes after it), or nil.
    var response: (status: Int, head: String, body: [UInt8])? {
        guard let end = HTTPRequestParser.find([13, 10, 13, 10], in: buffer) else { return nil }
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingSpaces) ?? 0
        }
        guard status == 101 || buffer.count >= end + 4 + length else { return nil }
        return (status, head, status == 101 ? [] : Array(buffer[(end + 4)..<(end + 4 + length)]))
    }

    /// The text frames after a 101 answer.
    var messages: [String] {
        guard let end = HTTPRequestParser.find([13, 10, 13, 10], in: buffer) else { return [] }
        var out: [String] = []
        var i = end + 4
        while i + 2 <= buffer.count {
            var n = Int(buffer[i + 1] & 0x7F), off = 2
            if n == 126 {
                guard i + 4 <= buffer.count else { break }
                n = Int(buffer[i + 2]) << 8 | Int(buffer[i + 3]); off = 4
            } else if n == 127 {
                guard i + 10 <= buffer.count else { break }
                n = 0
                for k in 2..<10 { n = n << 8 | Int(buffer[i + k]) }
                off = 10
            }
            guard i + off + n <= buffer.count else { break }
            if buffer[i] & 0x0F == 0x1 { out.append(String(decoding: buffer[(i + off)..<(i + off + n)], as: UTF8.self)) }
            if buffer[i] & 0x0F == 0x8 { out.append("close \(n >= 2 ? Int(buffer[i + off]) << 8 | Int(buffer[i + off + 1]) : 0)") }
            i += off + n
        }
        return out
    }

    static func upgrade(origin: String? = nil, cookie: String? = nil, port: UInt16) -> String {
        "GET /api HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + (origin.map { "Origin: \($0)\r\n" } ?? "") + (cookie.map { "Cookie: \($0)\r\n" } ?? "")
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    }
}

/// Polls a web server's descriptors once (no waiting) and handles what is ready.
func service(_ w: WebServer, rounds: Int = 3) {
    for _ in 0..<rounds {
        var fds: [pollfd] = []
        w.pollDescriptors(into: &fds)
        let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 5) }
        if n > 0 { for p in fds where p.revents != 0 { _ = w.handle(p, now: monotonicMilliseconds()) } }
        _ = w.tick(now: monotonicMilliseconds())
    }
}

@Suite struct HTTPParserTests {
    func parse(_ text: String, limits: HTTPRequestParser.Limits = .init(), step: Int = Int.max) -> HTTPRequestParser.Outcome {
        var p = HTTPRequestParser(limits: limits)
        let bytes = Array(text.utf8)
        var at = 0
        var last = HTTPRequestParser.Outcome.needMore
        while at < bytes.count {
            let end = min(bytes.count, at + min(step, bytes.count))
            last = bytes[at..<end].withUnsafeBytes { p.receive($0) }
            if last != .needMore { return last }
            at = end
        }
        return last
    }

    func status(_ o: HTTPRequestParser.Outcome) -> Int? {
        if case .error(let s, _) = o { return s }
        return nil
    }

    @Test func goodRequestsInAnyPieces() {
        for step in [1, 3, 7, 1000] {
            let o = parse("POST /login?x=1 HTTP/1.1\r\nHost: h:1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\npassword=ab", step: step)
            #expect(o == .request(HTTPRequest(method: "POST", path: "/login", query: "x=1",
                                              headers: ["host": "h:1", "content-type": "application/x-www-form-urlencoded", "content-length": "11"],
                                              body: Array("password=ab".utf8))))
        }
        // HTTP/1.0 needs no Host; a header value's spaces around it go.
        #expect(parse("GET / HTTP/1.0\r\nX-A:  b \r\n\r\n") == .request(HTTPRequest(method: "GET", path: "/", headers: ["x-a": "b"])))
        // Bytes after the request stay for the WebSocket.
        var p = HTTPRequestParser()
        let o = Array("GET /api HTTP/1.1\r\nHost: x\r\n\r\nABC".utf8).withUnsafeBytes { p.receive($0) }
        #expect(o == .request(HTTPRequest(method: "GET", path: "/api", headers: ["host": "x"])))
        #expect(p.leftover == Array("ABC".utf8))
    }

    @Test func badRequestsGetTheirStatus() {
        #expect(status(parse("GET / HTTP/1.1\r\n\r\n")) == 400)  // no Host
        #expect(status(parse("GET / HTTP/1.1\r\nHost : x\r\n\r\n")) == 400)  // space before the colon
        #expect(status(parse("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\nHost: x\n\n\r\n\r\n")) == 400)  // bare LF
        #expect(status(parse("get / HTTP/1.1\r\nHost: x\r\n\r\n")) == 400)
        #expect(status(parse("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/2.0\r\nHost: x\r\n\r\n")) == 505)
        #expect(status(parse("GET /\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n")) == 400)
        #expect(status(parse("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{01}b\r\n\r\n")) == 400)
        #expect(status(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")) == 400)
        #expect(status(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")) == 400)
        #expect(status(parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")) == 501)
        #expect(status(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4097\r\n\r\n")) == 413)
        // Oversized: a request line never ended, a head never ended, too many fields.
        #expect(status(parse("GET /" + String(repeating: "a", count: 3000), step: 100)) == 414)
        #expect(status(parse("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 9000), step: 500)) == 431)
        #expect(status(parse("GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "A: b\r\n", count: 70) + "\r\n")) == 431)
        // A request line over the limit whose end comes later: 414 however the bytes are split,
        // and nothing after a refusal is kept (the fuzzer found both).
        let long = "POST / HTTP/1.1\r" + String(repeating: "x", count: 2100) + "\nHost: x\r\n"
        #expect(status(parse(long, step: 1000)) == 414 && status(parse(long)) == 414)
        // A request line exactly at the limit, its CR and LF in separate reads.
        let atLimit = "GET /" + String(repeating: "a", count: 2048 - 14) + " HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(status(parse(atLimit, step: 1)) == nil && status(parse(atLimit)) == nil)
        var refused = HTTPRequestParser()
        _ = Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { refused.receive($0) }
        _ = Array("more".utf8).withUnsafeBytes { refused.receive($0) }
        #expect(refused.leftover.isEmpty)
        // An empty repeated field adds nothing to the list.
        #expect(parse("GET / HTTP/1.1\r\nHost: x\r\nA:\r\nA: b\r\nA:\r\n\r\n") == .request(HTTPRequest(method: "GET", path: "/", headers: ["host": "x", "a": "b"])))
        // A whole request whose line is over the limit.
        #expect(status(parse("GET /" + String(repeating: "a", count: 2100) + " HTTP/1.1\r\nHost: x\r\n\r\n")) == 414)
    }
}

@Suite struct WebLoginTests {
    @Test func listenerSyntax() throws {
        let l = try WebListener(parsing: "127.0.0.1:8080")
        #expect(l.allowed == AllowedClasses([.read, .message]) && l.isLoopback)
        #expect(try WebListener(parsing: "[::1]:8080,allow=read").allowed == AllowedClasses([.read]))
        #expect(try WebListener(parsing: "0.0.0.0:80,allow=all").allowed == .everything)
        let o = try WebListener(parsing: "127.0.0.1:1,origin=https://Radio.example.org/+http://x:8")
        #expect(o.origins == ["https://radio.example.org", "http://x:8"])
        #expect(o.acceptedOrigins(local: nil).contains("http://127.0.0.1:1") && o.acceptedOrigins(local: nil).contains("http://localhost:1"))
        for bad in ["127.0.0.1", "127.0.0.1:1,allow=root", "127.0.0.1:1,read-only", "127.0.0.1:1,origin=ftp://x", "127.0.0.1:1,allow="] {
            #expect(throws: DaemonError.self) { try WebListener(parsing: bad) }
        }
    }

    @Test func attemptsPerAddressAreLimitedAndSessionsBounded() {
        var l = WebLogins()
        l.password = Array("secret".utf8)
        var n = 0
        func token() -> String { n += 1; return String(repeating: "0", count: 60) + String(1000 + n) }
        #expect(l.login(Array("nope".utf8), address: "a", now: 0, newToken: token) == .wrong)
        guard case .ok(let t) = l.login(Array("secret".utf8), address: "a", now: 1, newToken: token) else { Issue.record("no session"); return }
        let good = l.valid(t, now: 2), longer = l.valid(t + "0", now: 2), none = l.valid(nil, now: 2)
        #expect(good && !longer && !none)
        for i in 0..<3 { #expect(l.login(Array("x".utf8), address: "a", now: 10 + UInt64(i), newToken: token) == .wrong) }
        // Five in a minute from one address: the sixth, right or wrong, waits; another address does not.
        #expect(l.login(Array("secret".utf8), address: "a", now: 20_000, newToken: token) == .limited(seconds: 40))
        #expect(l.login(Array("x".utf8), address: "b", now: 20_000, newToken: token) == .wrong)
        if case .ok = l.login(Array("secret".utf8), address: "a", now: 60_001, newToken: token) {} else { Issue.record("not allowed again after the minute") }
        l.logout(t)
        let after = l.valid(t, now: 60_002)
        #expect(!after)
        for i in 0..<100 { _ = l.login(Array("secret".utf8), address: "c\(i)", now: 70_000 + UInt64(i), newToken: token) }
        #expect(l.sessions.count == WebLogins.maxSessions)
        #expect(WebLogins.same(Array("abc".utf8), Array("abc".utf8)) && !WebLogins.same(Array("abc".utf8), Array("abd".utf8))
                && !WebLogins.same(Array("abc".utf8), Array("abcd".utf8)) && !WebLogins.same([], Array("a".utf8)))
    }

    @Test func passwordBodies() {
        #expect(WebLogins.password(body: Array("a=1&password=p%41ss+word".utf8), contentType: "application/x-www-form-urlencoded") == Array("pAss word".utf8))
        #expect(WebLogins.password(body: Array(#"{"password":"sécret"}"#.utf8), contentType: "application/json; charset=utf-8") == Array("sécret".utf8))
        #expect(WebLogins.password(body: Array("password=%4".utf8), contentType: nil) == nil)
        // An escape is exactly two hex digits, either case: not a space, a colon or "0x" inside it.
        #expect(WebLogins.password(body: Array("password=%e9%C3%zz".utf8), contentType: nil) == nil)
        #expect(WebLogins.password(body: Array("password=%e9%C3".utf8), contentType: nil) == [0xE9, 0xC3])
        for bad in ["% 4", "%:4", "%0x", "%4 "] {
            #expect(WebLogins.password(body: Array("password=\(bad)".utf8), contentType: nil) == nil, "\(bad)")
        }
        #expect(WebLogins.password(body: Array("pw=x".utf8), contentType: nil) == nil)
        #expect(WebLogins.cookie("a=b; pm_session=abc ;c=d") == "abc")
    }
}

@Suite(.serialized) struct WebServerTests {
    func server(_ spec: String = "127.0.0.1", password: String? = nil, origin: String? = nil, limits: WebServer.Limits = .init()) throws -> (WebServer, UInt16) {
        let port = HubContactsTests.freePort()
        let w = try WebServer(listeners: [try WebListener(parsing: "\(spec):\(port)" + (origin.map { ",origin=" + $0 } ?? ""))],
                              password: password.map { Array($0.utf8) }, limits: limits)
        w.onRequest = { req, _ in DaemonResponse(id: req.id, ok: [("echo", .string(req.name))]) }
        return (w, port)
    }

    /// One request on a new connection; the response once whole.
    func ask(_ w: WebServer, _ port: UInt16, _ request: String) throws -> (status: Int, head: String, body: [UInt8]) {
        let c = try WebTestClient(port: port)
        c.send(request)
        for _ in 0..<400 {
            service(w, rounds: 1)
            c.poll()
            if let r = c.response { return r }
        }
        return (0, "", [])
    }

    @Test func thePageWhoamiAndTheRoutes() throws {
        let (w, port) = try server()
        let page = try ask(w, port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(page.status == 200)
        #expect(page.body.prefix(2) == [0x1F, 0x8B] && page.body == WebPage.gzipped)
        for h in ["Content-Encoding: gzip", "Content-Type: text/html; charset=utf-8", "Cache-Control: no-cache", "X-Content-Type-Options: nosniff",
                  "Referrer-Policy: no-referrer", "X-Frame-Options: DENY", "https://tile.openstreetmap.org", WebPage.scriptSources, "Connection: close"] {
            #expect(page.head.contains(h), "\(h)")
        }
        let who = try ask(w, port, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(String(decoding: who.body, as: UTF8.self) == #"{"allow":["read","message"],"login":false,"loggedIn":false}"#)
        #expect(try ask(w, port, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n").status == 404)
        #expect(try ask(w, port, "GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n").status == 204)
        let put = try ask(w, port, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(put.status == 405 && put.head.contains("Allow: GET, HEAD"))
        #expect(try ask(w, port, "GET /login HTTP/1.1\r\nHost: x\r\n\r\n").status == 405)
        // No secret in a URL, whatever the route.
        let secret = try ask(w, port, "GET /whoami?token=abc HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(secret.status == 400 && String(decoding: secret.body, as: UTF8.self).contains(#""code":"usage""#))
        #expect(try ask(w, port, "POST /login?Password=x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").status == 400)
        // A bad request gets its status as JSON, and the connection closes.
        let bad = try ask(w, port, "GET / HTTP/1.1\r\n\r\n")
        #expect(bad.status == 400 && bad.head.contains("application/json"))
        #expect(w.clientCount <= 9)
    }

    @Test func theAPIOverTheWebSocket() throws {
        let (w, port) = try server()
        let c = try WebTestClient(port: port)
        c.send(WebTestClient.upgrade(origin: "http://127.0.0.1:\(port)", port: port))
        c.sendText(#"{"id":1,"op":"contacts"}"#)
        c.sendText(#"{"op":"subscribe"}"#)
        c.sendText("not json")
        c.sendText(#"{"id":4,"op":"tunnel"}"#)
        for _ in 0..<400 where c.messages.count < 4 { service(w, rounds: 1); c.poll() }
        #expect(c.response?.status == 101)
        #expect(c.messages.count == 4)
        #expect(c.messages.first == #"{"id":1,"ok":true,"echo":"contacts"}"#)
        #expect(c.messages.dropFirst().first == #"{"id":0,"ok":true,"subscribed":true}"#)
        #expect(c.messages.dropFirst(2).first?.contains(#""ok":false,"error":{"code":"usage""#) == true)
        #expect(c.messages.dropFirst(3).first?.contains(#""code":"unsupported""#) == true)
        w.publish(.obj(("event", "link"), ("state", "up")))
        for _ in 0..<100 where c.messages.count < 5 { service(w, rounds: 1); c.poll() }
        #expect(c.messages.last == #"{"event":"link","state":"up"}"#)
        // A message over 64 KiB closes with 1009.
        c.sendText(String(repeating: "x", count: 65 * 1024))
        var closed = false
        for _ in 0..<400 where !closed { service(w, rounds: 1); closed = c.poll() }
        #expect(c.messages.last == "close 1009")
    }

    @Test func anotherOriginIsRefused() throws {
        let (w, port) = try server()
        let ws = try ask(w, port, WebTestClient.upgrade(origin: "http://evil.example", port: port))
        #expect(ws.status == 403)
        let post = try ask(w, port, "POST /login HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n")
        #expect(post.status == 403)
        #expect(try ask(w, port, WebTestClient.upgrade(origin: "http://localhost:\(port)", port: port)).status == 101)
        #expect(try ask(w, port, WebTestClient.upgrade(port: port)).status == 101)
    }

    @Test func theLoginFlowAndItsLimit() throws {
        let (w, port) = try server(password: "hunter2")
        #expect(try ask(w, port, WebTestClient.upgrade(port: port)).status == 401)
        let who = try ask(w, port, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(String(decoding: who.body, as: UTF8.self) == #"{"allow":["read","message"],"login":true,"loggedIn":false}"#)
        func login(_ body: String, json: Bool = false) throws -> (status: Int, head: String, body: [UInt8]) {
            try ask(w, port, "POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: \(json ? "application/json" : "application/x-www-form-urlencoded")\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        }
        #expect(try login("password=wrong").status == 401)
        let ok = try login(#"{"password":"hunter2"}"#, json: true)
        #expect(ok.status == 204)
        guard let line = ok.head.split(separator: "\r\n").first(where: { $0.hasPrefix("Set-Cookie: pm_session=") }) else { Issue.record("no cookie"); return }
        #expect(line.hasSuffix("; HttpOnly; SameSite=Strict; Path=/"))
        let cookie = String(line.dropFirst("Set-Cookie: ".count).split(separator: ";")[0])
        #expect(cookie.count == "pm_session=".count + 64)
        #expect(try ask(w, port, WebTestClient.upgrade(cookie: cookie, port: port)).status == 101)
        // A page served over https (through a proxy named by origin=) gets a Secure cookie.
        let (wp, pp) = try server(password: "hunter2", origin: "https://radio.example.org")
        let body = "password=hunter2"
        let proxied = try ask(wp, pp, "POST /login HTTP/1.1\r\nHost: x\r\nOrigin: https://radio.example.org\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(proxied.status == 204 && proxied.head.contains("; Path=/; Secure\r\n"))
        #expect(String(decoding: try ask(w, port, "GET /whoami HTTP/1.1\r\nHost: x\r\nCookie: \(cookie)\r\n\r\n").body, as: UTF8.self).hasSuffix(#""loggedIn":true}"#))
        #expect(try ask(w, port, WebTestClient.upgrade(cookie: "pm_session=" + String(repeating: "0", count: 64), port: port)).status == 401)
        // Five attempts a minute per address: then 429 with Retry-After, even for the right password.
        for _ in 0..<3 { #expect(try login("password=wrong").status == 401) }
        let limited = try login("password=hunter2")
        #expect(limited.status == 429 && limited.head.contains("Retry-After: "))
        // Logging out ends the session.
        #expect(try ask(w, port, "POST /logout HTTP/1.1\r\nHost: x\r\nCookie: \(cookie)\r\nContent-Length: 0\r\n\r\n").status == 204)
        #expect(try ask(w, port, WebTestClient.upgrade(cookie: cookie, port: port)).status == 401)
    }

    @Test func aSlowRequestTimesOutAndConnectionsAreBounded() throws {
        var limits = WebServer.Limits()
        limits.maxConnections = 3
        let (w, port) = try server(limits: limits)
        let slow = try WebTestClient(port: port)
        slow.send("GET / HTTP/1.1\r\nHo")
        for _ in 0..<20 { service(w, rounds: 1) }
        #expect(w.clientCount == 1)
        // Virtual time: the request's time is up.
        _ = w.tick(now: monotonicMilliseconds() + limits.requestTimeoutMS + 1)
        for _ in 0..<100 where slow.response == nil { service(w, rounds: 1); slow.poll() }
        #expect(slow.response?.status == 408)
        // Three consoles open (WebSockets): a fourth connection gets 503.
        var open: [WebTestClient] = []
        for _ in 0..<3 {
            let c = try WebTestClient(port: port)
            c.send(WebTestClient.upgrade(port: port))
            for _ in 0..<200 where c.response == nil { service(w, rounds: 1); c.poll() }
            open.append(c)
        }
        #expect(open.allSatisfy { $0.response?.status == 101 })
        #expect(try ask(w, port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").status == 503)
    }

    @Test func aSilentConsoleIsPingedThenClosed() throws {
        let (w, port) = try server()
        let c = try WebTestClient(port: port)
        c.send(WebTestClient.upgrade(port: port))
        for _ in 0..<200 where c.response == nil { service(w, rounds: 1); c.poll() }
        #expect(c.response?.status == 101 && w.clientCount == 1)
        let start = monotonicMilliseconds()
        // Virtual time: silent past the ping interval, it is pinged (an empty ping frame) ...
        _ = w.tick(now: start + w.limits.pingEveryMS + 10)
        for _ in 0..<100 where !c.buffer.suffix(2).elementsEqual([0x89, 0x00]) { c.poll(); usleep(1000) }
        #expect(c.buffer.suffix(2).elementsEqual([0x89, 0x00]))
        #expect(w.clientCount == 1)
        // ... and silent three times as long, closed.
        _ = w.tick(now: start + 3 * w.limits.pingEveryMS + 10)
        #expect(w.clientCount == 0)
    }

    @Test func badRequestsSentFastDoNotFillTheLog() throws {
        let (w, port) = try server()
        var lines: [String] = []
        w.log = { lines.append($0) }
        for _ in 0..<30 { #expect(try ask(w, port, "GET / HTTP/1.1\r\n\r\n").status == 400) }
        #expect(lines.filter { $0.contains("400 for") }.count == RefusalLog.perDoor)
    }

    @Test func beyondLoopbackWithoutAPasswordDoesNotStart() throws {
        #expect(throws: DaemonError.self) { try WebServer(listeners: [try WebListener(parsing: "192.0.2.1:8080")], password: nil) }
        #expect(throws: DaemonError.self) { try WebServer(listeners: [try WebListener(parsing: "127.0.0.1:0")], password: []) }
        // Behind a reverse proxy (an origin of another host) browsers come from elsewhere too.
        #expect(throws: DaemonError.self) { try WebServer(listeners: [try WebListener(parsing: "127.0.0.1:1,origin=https://radio.example.org")], password: nil) }
        #expect(try !WebListener(parsing: "127.0.0.1:1,origin=http://localhost:8080+http://[::1]:80").reachedFromElsewhere)
        #expect(try WebListener(parsing: "[::1]:1,origin=http://10.0.0.1:80").reachedFromElsewhere)
    }
}

/// The console's API in the daemon: the same answers as the Unix socket, and a listener's classes
/// enforced as the socket's are.
@Suite(.serialized) struct WebDaemonTests {
    @Test func aReadOnlyListenerRefusesSendAsTheSocketDoes() throws {
        let dir = temporaryDirectory("pm-web")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: Topology(nodes: [NodeSpec(name: "a", role: .companion)], links: []), options: o)
        let r = try RadioPort(world: w, node: w.companions[0])
        let port = HubContactsTests.freePort()
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.webListeners = [try WebListener(parsing: "127.0.0.1:\(port),allow=read")]
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        var log: [String] = []
        d.log = { log.append($0) }
        #expect(drive(d, r) { d.phase == .ready })
        let web = try WebTestClient(port: port)
        web.send(WebTestClient.upgrade(port: port))
        web.sendText(#"{"id":1,"op":"send","to":"nobody","text":"hi"}"#)
        web.sendText(#"{"id":2,"op":"contacts"}"#)
        web.sendText(#"{"id":3,"op":"subscribe"}"#)
        #expect(drive(d, r) { web.poll(); return web.messages.count >= 3 }, "\(log)")
        let sock = try LineClient(d.api.path)
        sock.send(#"{"id":2,"op":"contacts"}"# + "\n")
        var line: String? = nil
        #expect(drive(d, r) { line = line ?? sock.line(nil, rounds: 1); return line != nil })
        let m = web.messages
        #expect(m.first?.hasPrefix(#"{"id":1,"ok":false,"error":{"code":"denied","exit":"#) == true)
        #expect(m.first?.contains("send is a message operation, which web client 1 (127.0.0.1:") == true)
        #expect(m.first?.hasSuffix("does not allow (it allows read).\"}}") == true)
        #expect(m.dropFirst().first == line)
        // subscribe is a message operation (its row's class), as on the socket.
        #expect(m.dropFirst(2).first?.hasPrefix(#"{"id":3,"ok":false,"error":{"code":"denied""#) == true)
        #expect(log.contains { $0.contains("permission: web client 1") && $0.contains("refused send") })
    }
}
