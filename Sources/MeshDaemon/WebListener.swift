import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshHub

/// One `--web` listener: where, which operation classes its browsers may use, and which other
/// web page origins (a reverse proxy's) may script it.
///
/// Syntax: `HOST:PORT[,allow=CLASS+CLASS][,origin=URL]` (IPv6 as `[::1]:8080`). Its classes are
/// exactly those of `allow=` (`all` for every one); by default `read` and `message`.
public struct WebListener: Equatable, Sendable {
    public var address: TCPAddress
    public var allowed = AllowedClasses.mqttDefault
    /// `origin=`: origins accepted besides the listener's own (lowercase, no trailing '/').
    public var origins: [String] = []

    public init(parsing text: String) throws(DaemonError) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        do { address = try TCPAddress(parsing: parts[0]) } catch {
            throw DaemonError(.usage, "--web \(text): \(error).")
        }
        guard parts[0].contains(":"), !parts[0].hasSuffix("]") else { throw DaemonError(.usage, "--web \(text): give HOST:PORT, e.g. 127.0.0.1:8080.") }
        for p in parts.dropFirst() {
            if p.hasPrefix("allow=") {
                var set = Set<OperationClass>()
                for name in p.dropFirst(6).split(separator: "+").map(String.init) {
                    if name == "all" { set.formUnion(OperationClass.allCases); continue }
                    guard let c = OperationClass(rawValue: name) else {
                        throw DaemonError(.usage, "--web \(text): unknown class \"\(name)\" in allow= (the classes are \(AllowedClasses.names), or all; '+' between them).")
                    }
                    set.insert(c)
                }
                guard !set.isEmpty else { throw DaemonError(.usage, "--web \(text): allow= needs at least one class.") }
                allowed = AllowedClasses(set)
            } else if p.hasPrefix("origin=") {
                for o in p.dropFirst(7).split(separator: "+").map(String.init) {
                    guard HubListener.isOrigin(o) else {
                        throw DaemonError(.usage, "--web \(text): origin= takes a web page origin, scheme and host (and port), e.g. https://radio.example.org.")
                    }
                    origins.append(WebSocketServer.normalizedOrigin(o))
                }
            } else {
                throw DaemonError(.usage, "--web \(text): unknown option \"\(p)\" (allow=CLASS+CLASS, origin=URL).")
            }
        }
    }

    /// Only this host can reach it (127.0.0.0/8, ::1, localhost).
    public var isLoopback: Bool { HubListener.isLoopbackHost(address.host) }

    /// Browsers beyond this host reach it: its address is not loopback, or it accepts a page of
    /// another host (`origin=`: a reverse proxy's). Such a listener needs a login.
    public var reachedFromElsewhere: Bool {
        !isLoopback || origins.contains { o in
            var h = Substring(o.drop(while: { $0 != "/" }).dropFirst(2))
            if h.hasPrefix("["), let end = h.firstIndex(of: "]") { h = h[h.index(after: h.startIndex)..<end] } else if let c = h.lastIndex(of: ":") { h = h[..<c] }
            return !HubListener.isLoopbackHost(String(h))
        }
    }

    /// Why it cannot start without a password, or nil.
    public func loginProblem(password: Bool) -> String? {
        guard reachedFromElsewhere, !password else { return nil }
        return "--web \(address)" + (isLoopback ? " with origin= of another host (a reverse proxy)" : "")
            + ": browsers beyond this host reach it, so they must log in: give --web-password-file FILE (mode 0600, the password on its first line)"
            + (isLoopback ? "." : ", or listen on 127.0.0.1 and put a reverse proxy with TLS in front.")
    }

    /// The origins of the listener's own page: `http://` and its address (and `localhost` with
    /// its port on loopback), and the address a connection reached it on (`local`, for a
    /// wildcard address), and `origin=`'s.
    public func acceptedOrigins(local: String?) -> [String] {
        var out = ["http://" + WebSocketServer.normalizedOrigin(address.description)] + origins
        if isLoopback { out.append("http://localhost:\(address.port)") }
        if let local { out.append("http://" + local.lowercased()) }
        return out
    }

    public var summary: String {
        "web console on http://\(address) allows \(allowed)" + (origins.isEmpty ? "" : ", origins \(origins.joined(separator: " "))")
    }
}

/// The web console's logins: the password, the sessions of browsers that gave it (a cookie
/// each), and the attempts per client address. Sans-I/O (the time is given); bounded: at most
/// `maxSessions` sessions (the one used least recently goes), `maxAddresses` addresses counted.
struct WebLogins {
    static let maxSessions = 64
    static let sessionIdleMS: UInt64 = 7 * 86_400_000
    static let attemptsPerWindow = 5
    static let windowMS: UInt64 = 60_000
    static let maxAddresses = 256
    static let cookieName = "pm_session"

    var password: [UInt8]? = nil
    /// Session tokens (64 hex) and when each was last used.
    private(set) var sessions: [(token: [UInt8], used: UInt64)] = []
    private var attempts: [String: (start: UInt64, count: Int)] = [:]

    enum Outcome: Equatable { case ok(String), wrong, limited(seconds: UInt64) }

    /// Whether a client address may try now: nil, or the seconds until it may.
    mutating func retryAfter(_ address: String, now: UInt64) -> UInt64? {
        guard let a = attempts[address], now < a.start + Self.windowMS else { return nil }
        return a.count >= Self.attemptsPerWindow ? (a.start + Self.windowMS - now + 999) / 1000 : nil
    }

    /// One attempt: counted against its address, compared in constant time.
    mutating func login(_ given: [UInt8], address: String, now: UInt64, newToken: () -> String) -> Outcome {
        if let s = retryAfter(address, now: now) { return .limited(seconds: s) }
        if let a = attempts[address], now < a.start + Self.windowMS {
            attempts[address] = (a.start, a.count + 1)
        } else {
            if attempts.count >= Self.maxAddresses {
                attempts = attempts.filter { now < $0.value.start + Self.windowMS }
                if attempts.count >= Self.maxAddresses, let oldest = attempts.min(by: { $0.value.start < $1.value.start }) { attempts[oldest.key] = nil }
            }
            attempts[address] = (now, 1)
        }
        guard let password, !password.isEmpty, Self.same(given, password) else { return .wrong }
        let token = newToken()
        sessions.removeAll { now >= $0.used + Self.sessionIdleMS }
        if sessions.count >= Self.maxSessions, let i = sessions.indices.min(by: { sessions[$0].used < sessions[$1].used }) { sessions.remove(at: i) }
        sessions.append((Array(token.utf8), now))
        return .ok(token)
    }

    /// Whether a cookie's token is a live session (it counts as used now).
    mutating func valid(_ token: String?, now: UInt64) -> Bool {
        guard let token else { return false }
        let t = Array(token.utf8)
        var found: Int? = nil
        // Every session compared in full: the time taken says nothing about which one matched.
        for i in sessions.indices where Self.same(t, sessions[i].token) && now < sessions[i].used + Self.sessionIdleMS { found = i }
        guard let i = found else { return false }
        sessions[i].used = now
        return true
    }

    mutating func logout(_ token: String?) {
        guard let token else { return }
        let t = Array(token.utf8)
        sessions.removeAll { Self.same(t, $0.token) }
    }

    /// Constant-time equality (for equal lengths; a length difference is no secret of a token,
    /// and for a password it is folded into the result without an early return).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(truncatingIfNeeded: a.count ^ b.count) | UInt8(a.count == b.count ? 0 : 1)
        let n = max(a.count, b.count)
        for i in 0..<n {
            let x = i < a.count ? a[i] : 0, y = i < b.count ? b[i] : 0
            diff |= x ^ y
        }
        return diff == 0
    }

    /// The session cookie's value in a Cookie header.
    static func cookie(_ header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if kv.count == 2, kv[0].trimmingSpaces == cookieName { return String(kv[1].trimmingSpaces) }
        }
        return nil
    }

    /// The password of a login request's body: form-encoded `password=...` or JSON {"password":...}.
    static func password(body: [UInt8], contentType: String?) -> [UInt8]? {
        let type = (contentType ?? "").lowercased()
        if type.hasPrefix("application/json") {
            guard let v = try? body.withUnsafeBytes({ try JSONParser.parse($0) }), let p = v["password"]?.string else { return nil }
            return Array(p.utf8)
        }
        guard type.isEmpty || type.hasPrefix("application/x-www-form-urlencoded") || type.hasPrefix("text/plain") else { return nil }
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            if kv.count == 2, kv[0].elementsEqual("password".utf8) { return percentDecoded(kv[1]) }
        }
        return nil
    }

    /// application/x-www-form-urlencoded: '+' is a space, %XX a byte; nil for a broken escape.
    static func percentDecoded(_ s: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let b = s[i]
            if b == UInt8(ascii: "+") { out.append(0x20); i += 1; continue }
            if b == UInt8(ascii: "%") {
                // Exactly two hex digits (the project's one hex codec: one byte, or nil).
                guard i + 2 < s.endIndex, let byte = HexCodec.decode(String(decoding: s[(i + 1)...(i + 2)], as: UTF8.self)),
                      byte.count == 1 else { return nil }
                out.append(byte[0])
                i += 3
                continue
            }
            out.append(b)
            i += 1
        }
        return out
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
