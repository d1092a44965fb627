/// The server side of a WebSocket (RFC 6455), sans-I/O: bytes in, events out. It answers the
/// HTTP upgrade, then reassembles the client's (masked) messages, answers pings, and closes on a
/// close frame, a protocol error or a message over `maxMessage` bytes.
///
/// A browser sends the page's `Origin` with the upgrade; one that is not in `allowedOrigins`
/// gets HTTP 403, so a web page open in a local browser cannot reach a loopback listener. A
/// request without `Origin` does not come from a browser page and is accepted.
///
/// SHA-1 (for the handshake's accept key) comes from the caller: this module has no crypto.
public struct WebSocketServer {
    public enum Event: Equatable {
        /// Bytes to write to the client (the handshake answer, a pong, a close).
        case write([UInt8])
        /// One complete binary message.
        case message([UInt8])
        /// The connection is over (after any `write` before it): why.
        case close(String)
    }

    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    public let maxMessage: Int
    /// Origins accepted (lowercase, no trailing '/'); any other one is refused with 403.
    public let allowedOrigins: [String]
    /// The web console's JSON door: its messages are text (the hub's companion frames are binary).
    public let textMessages: Bool
    let sha1: ([UInt8]) -> [UInt8]
    public private(set) var open = false
    private var closed = false
    private var buffer: [UInt8] = []
    private var fragments: [UInt8] = []
    private var fragmented = false

    /// `open`: the upgrade was answered by the caller (the web console's HTTP server); frames only.
    public init(maxMessage: Int = 1024, allowedOrigins: [String] = [], textMessages: Bool = false, open: Bool = false,
                sha1: @escaping ([UInt8]) -> [UInt8]) {
        self.maxMessage = maxMessage
        self.textMessages = textMessages
        self.open = open
        self.allowedOrigins = allowedOrigins.map(Self.normalizedOrigin)
        self.sha1 = sha1
    }

    /// An origin as compared: lowercase, without a trailing '/'.
    public static func normalizedOrigin(_ origin: String) -> String {
        var o = origin.lowercased()
        while o.hasSuffix("/") { o.removeLast() }
        return o
    }

    /// Bytes of a request or message received in part, waiting for the rest.
    public var hasPartial: Bool { !closed && (!buffer.isEmpty || fragmented) }

    /// A binary message to the client (servers do not mask).
    public static func frame(_ payload: [UInt8], opcode: UInt8 = 0x2) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            out.append(UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(127)
            for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(s))) }
        }
        return out + payload
    }

    /// `Sec-WebSocket-Accept` for a client's key: base64(SHA-1(key + GUID)).
    public static func accept(key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
        base64(sha1(Array((key + guid).utf8)))
    }

    public static func base64(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = bytes[i], b1 = n > 1 ? bytes[i + 1] : 0, b2 = n > 2 ? bytes[i + 2] : 0
            out.append(table[Int(b0 >> 2)])
            out.append(table[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(n > 1 ? table[Int((b1 & 15) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(n > 2 ? table[Int(b2 & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        guard !closed else { return [] }
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        if !open {
            guard let end = headerEnd() else {
                if buffer.count > 8192 { return fail(&events, http: "431 Request Header Fields Too Large", "an HTTP request over 8 KiB") }
                return events
            }
            let head = String(decoding: buffer[..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            handshake(head, &events)
            if closed { return events }
        }
        while let e = nextFrame(&events) {
            if !e { break }
        }
        return events
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private mutating func fail(_ events: inout [Event], http status: String, _ why: String) -> [Event] {
        events.append(.write(Array("HTTP/1.1 \(status)\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8)))
        events.append(.close(why))
        closed = true
        return events
    }

    private mutating func handshake(_ head: String, _ events: inout [Event]) {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let request = lines.first, request.hasPrefix("GET "), request.hasSuffix(" HTTP/1.1") else {
            _ = fail(&events, http: "400 Bad Request", "not an HTTP GET request")
            return
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            var value = line[line.index(after: colon)...]
            while value.first == " " { value = value.dropFirst() }
            headers[name] = String(value)
        }
        guard headers["upgrade"]?.lowercased() == "websocket",
              // Connection is a token list ("keep-alive, Upgrade").
              headers["connection"]?.lowercased().split(separator: ",").contains(where: { $0.filter { $0 != " " && $0 != "\t" } == "upgrade" }) == true,
              headers["sec-websocket-version"] == "13",
              let key = headers["sec-websocket-key"], !key.isEmpty else {
            _ = fail(&events, http: "400 Bad Request", "not a WebSocket upgrade (version 13)")
            return
        }
        if let origin = headers["origin"], !allowedOrigins.contains(Self.normalizedOrigin(origin)) {
            let printable = String(origin.unicodeScalars.prefix(100).map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
            _ = fail(&events, http: "403 Forbidden", "a page from origin \(printable), which this listener does not accept (origin=\(printable) accepts it)")
            return
        }
        events.append(.write(Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(Self.accept(key: key, sha1: sha1))\r\n\r\n").utf8)))
        open = true
    }

    /// Takes one frame off the buffer; nil when more bytes are needed, false when closed.
    private mutating func nextFrame(_ events: inout [Event]) -> Bool? {
        guard buffer.count >= 2 else { return nil }
        let fin = buffer[0] & 0x80 != 0, opcode = buffer[0] & 0x0F
        guard buffer[0] & 0x70 == 0 else { return protocolError(&events, 1002, "reserved bits set") }
        guard buffer[1] & 0x80 != 0 else { return protocolError(&events, 1002, "an unmasked client frame") }
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            var v: UInt64 = 0
            for i in 2..<10 { v = v << 8 | UInt64(buffer[i]) }
            guard v <= UInt64(maxMessage) else { return protocolError(&events, 1009, "a message over \(maxMessage) bytes") }
            length = Int(v)
            offset = 10
        }
        guard length <= maxMessage else { return protocolError(&events, 1009, "a message over \(maxMessage) bytes") }
        guard buffer.count >= offset + 4 + length else { return nil }
        let mask = Array(buffer[offset..<(offset + 4)])
        var payload = Array(buffer[(offset + 4)..<(offset + 4 + length)])
        for i in payload.indices { payload[i] ^= mask[i & 3] }
        buffer.removeFirst(offset + 4 + length)
        switch opcode {
        case 0x8:
            events.append(.write(Self.frame(Array(payload.prefix(2)), opcode: 0x8)))
            events.append(.close("closed by the client"))
            closed = true
            return false
        case 0x9:
            guard fin, length <= 125 else { return protocolError(&events, 1002, "a fragmented or long ping") }
            events.append(.write(Self.frame(payload, opcode: 0xA)))
        case 0xA:
            break
        case 0x1, 0x2, 0x0:
            if opcode != 0x0 && (opcode == 0x1) != textMessages {
                return protocolError(&events, 1003, textMessages ? "a binary message (the API's messages are JSON text)" : "a text message (companion frames are binary)")
            }
            if opcode != 0x0 {
                guard !fragmented else { return protocolError(&events, 1002, "a new message inside a fragmented one") }
                fragments = payload
            } else {
                guard fragmented else { return protocolError(&events, 1002, "a continuation without a message") }
                fragments += payload
                guard fragments.count <= maxMessage else { return protocolError(&events, 1009, "a message over \(maxMessage) bytes") }
            }
            fragmented = !fin
            if fin { events.append(.message(fragments)); fragments = [] }
        default:
            return protocolError(&events, 1002, "unknown opcode \(opcode)")
        }
        return true
    }

    private mutating func protocolError(_ events: inout [Event], _ code: UInt16, _ why: String) -> Bool {
        events.append(.write(Self.frame([UInt8(code >> 8), UInt8(code & 0xFF)], opcode: 0x8)))
        events.append(.close(why))
        closed = true
        return false
    }
}
