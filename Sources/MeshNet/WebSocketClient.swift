
/// The client side of a WebSocket (RFC 6455) without I/O, for MQTT over WebSocket (subprotocol
/// `mqtt`): the upgrade request, the server's answer checked (101, the accept key, the
/// subprotocol), frames from the server read (fragmented, ping, close), frames to it masked.
public struct WebSocketClient {
    public enum Event: Equatable {
        /// Data of a binary (or text) message.
        case message([UInt8])
        /// Bytes to send (a pong or the answer to a close).
        case send([UInt8])
        /// The server closed the connection (its code and reason).
        case closed(String)
    }

    public let key: String
    let sha1: ([UInt8]) -> [UInt8]
    public private(set) var open = false
    private var buffer: [UInt8] = []
    private var fragments: [UInt8] = []
    private var maskSource = SystemRandomNumberGenerator()
    public static let maxMessage = 1 << 20

    /// `sha1`: for the check of the server's accept key (this module has no crypto).
    public init(key: String, sha1: @escaping ([UInt8]) -> [UInt8]) {
        self.key = key
        self.sha1 = sha1
    }

    /// A fresh random key (16 bytes, base64).
    public static func randomKey() -> String {
        var rng = SystemRandomNumberGenerator()
        return WebSocketServer.base64((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }

    /// The upgrade request for `path` on `host:port`.
    public func request(host: String, port: UInt16, path: String, defaultPort: UInt16) -> [UInt8] {
        let h = host.contains(":") ? "[\(host)]" : host
        let hostHeader = port == defaultPort ? h : "\(h):\(port)"
        let text = "GET \(path.isEmpty ? "/" : path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"
        return Array(text.utf8)
    }

    /// One frame to the server: FIN set, masked with a random key.
    public mutating func frame(_ payload: [UInt8], opcode: UInt8 = 0x2) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        let n = payload.count
        if n < 126 {
            out.append(0x80 | UInt8(n))
        } else if n <= 0xFFFF {
            let header: [UInt8] = [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]  // typed: Swift 6.0 cannot infer it
            out += header
        } else {
            out.append(0x80 | 127)
            for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(n) >> UInt64(s)) & 0xFF)) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255, using: &maskSource) }
        out += mask
        out.reserveCapacity(out.count + n)
        for (i, b) in payload.enumerated() { out.append(b ^ mask[i & 3]) }
        return out
    }

    /// Bytes from the server: first the HTTP answer to the upgrade, then frames.
    public mutating func receive(_ bytes: [UInt8]) throws(MQTTError) -> [Event] {
        buffer += bytes
        var events: [Event] = []
        if !open {
            guard let end = headerEnd() else {
                if buffer.count > 16 * 1024 { throw MQTTError("WebSocket: no end to the server's HTTP answer") }
                return []
            }
            let head = String(decoding: buffer[..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            try checkAnswer(head)
            open = true
        }
        while let e = try nextFrame() { if let e { events.append(e) } }
        return events
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
        return nil
    }

    private func checkAnswer(_ head: String) throws(MQTTError) {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.map(String.init) ?? ""
        let parts = status.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "101" else {
            throw MQTTError("WebSocket: the server answered \"\(status.prefix(80))\" instead of switching protocols (is the path right?)")
        }
        var headers: [String: String] = [:]
        for l in lines.dropFirst() {
            guard let c = l.firstIndex(of: ":") else { continue }
            headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingSpaces
        }
        guard headers["upgrade"]?.lowercased() == "websocket" else { throw MQTTError("WebSocket: the server's answer has no Upgrade: websocket") }
        guard headers["sec-websocket-accept"] == WebSocketServer.accept(key: key, sha1: sha1) else {
            throw MQTTError("WebSocket: the server's Sec-WebSocket-Accept does not match the key")
        }
        if let p = headers["sec-websocket-protocol"], p.lowercased() != "mqtt" {
            throw MQTTError("WebSocket: the server chose the subprotocol \"\(p)\", not mqtt")
        }
    }

    /// The next frame: nil when incomplete; .some(nil) for a frame that makes no event.
    private mutating func nextFrame() throws(MQTTError) -> Event?? {
        guard buffer.count >= 2 else { return nil }
        let fin = buffer[0] & 0x80 != 0
        let opcode = buffer[0] & 0x0F
        guard buffer[0] & 0x70 == 0 else { throw MQTTError("WebSocket: a frame with reserved bits set") }
        guard buffer[1] & 0x80 == 0 else { throw MQTTError("WebSocket: the server masked a frame") }
        var length = Int(buffer[1] & 0x7F)
        if opcode >= 0x8 && (!fin || length > 125) { throw MQTTError("WebSocket: a control frame fragmented or over 125 bytes") }
        var at = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            at = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            var v: UInt64 = 0
            for i in 2..<10 { v = v << 8 | UInt64(buffer[i]) }
            guard v <= UInt64(Self.maxMessage) else { throw MQTTError("WebSocket: a \(v)-byte frame") }
            length = Int(v)
            at = 10
        }
        guard length <= Self.maxMessage else { throw MQTTError("WebSocket: a \(length)-byte frame") }
        guard buffer.count - at >= length else { return nil }
        let payload = Array(buffer[at..<(at + length)])
        buffer.removeFirst(at + length)
        switch opcode {
        case 0x0, 0x1, 0x2:
            if opcode != 0 && !fragments.isEmpty { throw MQTTError("WebSocket: a new message inside a fragmented one") }
            fragments += payload
            guard fragments.count <= Self.maxMessage else { throw MQTTError("WebSocket: a message over \(Self.maxMessage) bytes") }
            guard fin else { return .some(nil) }
            defer { fragments.removeAll() }
            return .some(.message(fragments))
        case 0x8:
            let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
            let reason = payload.count > 2 ? String(decoding: payload[2...], as: UTF8.self) : ""
            return .some(.closed("the server closed the WebSocket (\(code)\(reason.isEmpty ? "" : ", " + reason))"))
        case 0x9:
            return .some(.send(frame(payload, opcode: 0xA)))
        case 0xA:
            return .some(nil)
        default:
            throw MQTTError("WebSocket: opcode \(opcode)")
        }
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
