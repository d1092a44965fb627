/// One HTTP/1.1 request as a client sent it: method, target (path and query apart), headers
/// (names lowercase) and body.
public struct HTTPRequest: Equatable, Sendable {
    public var method: String
    public var path: String
    /// What follows '?' in the target ("" without one).
    public var query: String
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: String = "", headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method; self.path = path; self.query = query; self.headers = headers; self.body = body
    }

    /// A header's value by its name in any case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The names in the query string (`a=1&b` gives a and b), lowercase.
    public var queryNames: [String] {
        query.split(separator: "&").map { p in String(p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").lowercased() }
    }
}

/// The server side of HTTP/1.1 requests, sans-I/O and bounded: bytes in, one request (or the
/// status that refuses it) out. Every limit is a 4xx, never a trap or an unbounded buffer: a
/// request line over `maxRequestLine` is 414, a head over `maxHead` or with more than
/// `maxHeaders` fields is 431, a body over `maxBody` is 413, a chunked body is 501 (it is not
/// read: no request smuggling between two length rules), anything malformed is 400, another HTTP
/// version 505. After a request the bytes that followed it (a WebSocket's first frames) are
/// `leftover`. One request per parser: the server answers it and closes (or upgrades).
public struct HTTPRequestParser {
    public struct Limits: Sendable {
        public var maxRequestLine = 2048
        public var maxHead = 8192
        public var maxHeaders = 64
        public var maxBody = 4096
        public init() {}
    }

    public enum Outcome: Equatable, Sendable {
        case needMore
        case request(HTTPRequest)
        /// The request is refused with this status; `reason` says why (for the log and the body).
        case error(status: Int, reason: String)
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    private var head: HTTPRequest? = nil
    private var bodyLength = 0
    private var done = false
    private var failed = false
    private var scanned = 0
    /// Bytes after the request (given once the request is).
    public private(set) var leftover: [UInt8] = []

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether a request has begun and is not complete yet (a slow client is timed on this).
    public var hasPartial: Bool { !done && !buffer.isEmpty }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard !done else {
            // After a refusal nothing more is kept (the connection is closing).
            if !failed { leftover.append(contentsOf: bytes) }
            return .needMore
        }
        buffer.append(contentsOf: bytes)
        if head == nil {
            // The same bytes give the same outcome however they are split: the request line's
            // length is judged by its end (or by what came so far, past the limit without one).
            // (A CR at the end of what came so far may be the start of the line's end.)
            if (Self.find([13, 10], in: buffer, from: 0) ?? (buffer.last == 13 ? buffer.count - 1 : buffer.count)) > limits.maxRequestLine {
                return fail(414, "a request line over \(limits.maxRequestLine) bytes")
            }
            // Searched from where the last search stopped: a client sending a byte at a time
            // costs each byte once.
            guard let end = Self.find([13, 10, 13, 10], in: buffer, from: max(0, scanned - 3)) else {
                scanned = buffer.count
                if buffer.count > limits.maxHead { return fail(431, "a request head over \(limits.maxHead) bytes") }
                return .needMore
            }
            if end + 4 > limits.maxHead { return fail(431, "a request head over \(limits.maxHead) bytes") }
            switch parseHead(buffer[0..<end]) {
            case .failure(let e): return fail(e.status, e.reason)
            case .success(let r): head = r
            }
            buffer.removeFirst(end + 4)
        }
        guard var r = head else { return .needMore }
        guard buffer.count >= bodyLength else { return .needMore }
        r.body = Array(buffer[0..<bodyLength])
        leftover = Array(buffer[bodyLength...])
        buffer = []
        done = true
        return .request(r)
    }

    private mutating func fail(_ status: Int, _ reason: String) -> Outcome {
        done = true
        failed = true
        buffer = []
        return .error(status: status, reason: reason)
    }

    struct Refusal: Error { var status: Int; var reason: String }

    /// The characters a header name (a token, RFC 9110 5.6.2) may not hold besides spaces and controls.
    static let separators = Array("\"(),/:;<=>?@[\\]{}".utf8)

    private mutating func parseHead(_ bytes: ArraySlice<UInt8>) -> Result<HTTPRequest, Refusal> {
        let lines = bytes.split(separator: 10, omittingEmptySubsequences: false)
        // Every line ends with CRLF (the last one's CRLF is the blank line's).
        var texts: [ArraySlice<UInt8>] = []
        for (i, l) in lines.enumerated() {
            if i < lines.count - 1 {
                guard l.last == 13 else { return .failure(Refusal(status: 400, reason: "a line ending without CR")) }
                texts.append(l.dropLast())
            } else {
                texts.append(l)
            }
        }
        let line = texts[0]
        guard line.count <= limits.maxRequestLine else { return .failure(Refusal(status: 414, reason: "a request line over \(limits.maxRequestLine) bytes")) }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(Refusal(status: 400, reason: "a request line that is not METHOD TARGET VERSION")) }
        let method = parts[0], target = parts[1], version = parts[2]
        guard (1...16).contains(method.count), method.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            return .failure(Refusal(status: 400, reason: "a method that is not an upper-case word"))
        }
        guard version.elementsEqual("HTTP/1.1".utf8) || version.elementsEqual("HTTP/1.0".utf8) else {
            if version.starts(with: "HTTP/".utf8) { return .failure(Refusal(status: 505, reason: "an HTTP version other than 1.1")) }
            return .failure(Refusal(status: 400, reason: "no HTTP version"))
        }
        guard target.first == 0x2F, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(Refusal(status: 400, reason: "a target that is not a path (/...) of printable characters"))
        }
        var headers: [String: String] = [:]
        var count = 0
        for l in texts.dropFirst() {
            count += 1
            guard count <= limits.maxHeaders else { return .failure(Refusal(status: 431, reason: "more than \(limits.maxHeaders) header fields")) }
            guard let colon = l.firstIndex(of: 0x3A), colon > l.startIndex else {
                return .failure(Refusal(status: 400, reason: "a header line without a name and a colon"))
            }
            let name = l[l.startIndex..<colon]
            // Token characters only: no space before the colon, no folded line (RFC 9112 5.1, 5.2).
            guard name.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !Self.separators.contains($0) }) else {
                return .failure(Refusal(status: 400, reason: "a header name that is not a token"))
            }
            var value = l[(colon + 1)...]
            while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
            while let b = value.last, b == 0x20 || b == 0x09 { value = value.dropLast() }
            guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(Refusal(status: 400, reason: "a control character in a header value"))
            }
            let key = String(decoding: name, as: UTF8.self).lowercased()
            let text = String(decoding: value, as: UTF8.self)
            if let old = headers[key] {
                // Repeated fields that must be single are refused; others are joined as a list.
                if key == "content-length" && old == text { continue }
                if ["host", "content-length", "origin", "cookie", "upgrade", "sec-websocket-key"].contains(key) {
                    return .failure(Refusal(status: 400, reason: "the header \(key) more than once"))
                }
                headers[key] = old.isEmpty ? text : text.isEmpty ? old : old + ", " + text
            } else {
                headers[key] = text
            }
        }
        if version.elementsEqual("HTTP/1.1".utf8) && headers["host"] == nil {
            return .failure(Refusal(status: 400, reason: "an HTTP/1.1 request without Host"))
        }
        if headers["transfer-encoding"] != nil {
            return .failure(Refusal(status: 501, reason: "a body with Transfer-Encoding (give Content-Length)"))
        }
        if let cl = headers["content-length"] {
            guard (1...9).contains(cl.utf8.count), cl.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(cl) else {
                return .failure(Refusal(status: 400, reason: "a Content-Length that is not a number"))
            }
            guard n <= limits.maxBody else { return .failure(Refusal(status: 413, reason: "a body over \(limits.maxBody) bytes")) }
            bodyLength = n
        }
        let t = String(decoding: target, as: UTF8.self)
        let q = t.firstIndex(of: "?")
        return .success(HTTPRequest(method: String(decoding: method, as: UTF8.self), path: String(t[..<(q ?? t.endIndex)]),
                                    query: q.map { String(t[t.index(after: $0)...]) } ?? "", headers: headers))
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from start: Int = 0) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = start
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

/// An HTTP/1.1 response's bytes: status line, headers, Content-Length, the body.
public enum HTTPResponse {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }

    /// A whole response that closes the connection after it.
    public static func bytes(_ status: Int, headers: [(String, String)] = [], body: [UInt8] = []) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (k, v) in headers { head += k + ": " + v + "\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}
