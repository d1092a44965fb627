/// A broker address: `mqtt://host[:port]` (TCP, 1883), `mqtts://` (TLS, 8883), `ws://host[:port][/path]`
/// (WebSocket, 80) and `wss://` (WebSocket over TLS, 443). A user name may come before the host
/// (`mqtt://user@host`); a password never does: it belongs in a file, not in a process listing.
public struct BrokerURL: Equatable, Sendable, CustomStringConvertible {
    public enum Scheme: String, Sendable { case mqtt, mqtts, ws, wss }
    public var scheme: Scheme
    public var host: String
    public var port: UInt16
    /// The WebSocket request path (default `/mqtt`, what most brokers serve); empty for TCP.
    public var path: String
    public var user: String?

    public var usesTLS: Bool { scheme == .mqtts || scheme == .wss }
    public var usesWebSocket: Bool { scheme == .ws || scheme == .wss }

    public init(parsing given: String) throws(MQTTError) {
        // Every error names the URL as given, less a password (which is refused): an error goes
        // to the log and the terminal.
        let text = Self.withoutPassword(given)
        guard let colon = given.firstIndex(of: ":"), given[colon...].hasPrefix("://") else {
            throw MQTTError("\(text): not a broker URL (expected mqtt://, mqtts://, ws:// or wss:// and a host)")
        }
        guard let scheme = Scheme(rawValue: String(given[..<colon]).lowercased()) else {
            throw MQTTError("\(text): unknown scheme \"\(given[..<colon])\" (mqtt, mqtts, ws or wss)")
        }
        self.scheme = scheme
        var rest = given[given.index(colon, offsetBy: 3)...]
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let u = rest[..<at]
            if u.contains(":") { throw MQTTError("\(text): a password does not go in the URL; use --mqtt-password-file") }
            user = u.isEmpty ? nil : String(u)
            rest = rest[rest.index(after: at)...]
        }
        var host = rest
        var portText: Substring? = nil
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw MQTTError("\(text): unclosed [ in the host") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw MQTTError("\(text): unexpected \"\(after)\" after the host") }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else { throw MQTTError("\(text): no host") }
        self.host = String(host)
        if let p = portText {
            guard let n = UInt16(p), n > 0 else { throw MQTTError("\(text): bad port \"\(p)\"") }
            port = n
        } else {
            switch scheme {
            case .mqtt: port = 1883
            case .mqtts: port = 8883
            case .ws: port = 80
            case .wss: port = 443
            }
        }
        if scheme == .ws || scheme == .wss {
            self.path = path.isEmpty ? "/mqtt" : path
        } else {
            guard path.isEmpty || path == "/" else { throw MQTTError("\(text): a path is for ws:// and wss:// only") }
            self.path = ""
        }
    }

    /// `text` with the password of a `user:password@` part shown as `***` (the same text when it
    /// has none).
    public static func withoutPassword(_ text: String) -> String {
        var start = text.startIndex
        if let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") { start = text.index(colon, offsetBy: 3) }
        let end = text[start...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[start..<end].lastIndex(of: "@"), let colon = text[start..<at].firstIndex(of: ":") else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }

    /// The URL without user name, for logs.
    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme.rawValue)://\(h):\(port)\(path)"
    }
}
