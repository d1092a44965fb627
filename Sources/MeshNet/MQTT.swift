// MQTT 3.1.1 control packets (OASIS standard, 2014): what a client sends and what it receives.
// Encoding and incremental decoding only; the session rules live in MQTTClient.

public enum MQTTQoS: UInt8, Sendable {
    case atMostOnce = 0
    case atLeastOnce = 1
}

/// A PUBLISH in either direction. `packetId` is 0 at QoS 0.
public struct MQTTPublish: Equatable, Sendable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool
    public var dup: Bool
    public var packetId: UInt16
    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false, dup: Bool = false, packetId: UInt16 = 0) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packetId = packetId
    }
}

/// The message a broker publishes for a client that goes away without DISCONNECT.
public struct MQTTWill: Equatable, Sendable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool
    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}

public struct MQTTConnect: Equatable, Sendable {
    public var clientId: String
    public var username: String?
    public var password: [UInt8]?
    public var keepAliveS: UInt16
    public var cleanSession: Bool
    public var will: MQTTWill?
    public init(clientId: String, username: String? = nil, password: [UInt8]? = nil, keepAliveS: UInt16 = 60, cleanSession: Bool = true, will: MQTTWill? = nil) {
        self.clientId = clientId
        self.username = username
        self.password = password
        self.keepAliveS = keepAliveS
        self.cleanSession = cleanSession
        self.will = will
    }
}

public enum MQTTPacket: Sendable {
    case connect(MQTTConnect)
    case connack(sessionPresent: Bool, returnCode: UInt8)
    case publish(MQTTPublish)
    case puback(UInt16)
    case subscribe(packetId: UInt16, filters: [(String, MQTTQoS)])
    case suback(packetId: UInt16, granted: [UInt8])
    case pingreq
    case pingresp
    case disconnect
    /// A PUBLISH larger than the decoder's limit: what its header says. Its payload was skipped as
    /// it arrived, never buffered (MQTTDecoder); the session acknowledges it at QoS 1 and drops it.
    /// Only decoded, never encoded.
    case oversized(topic: String, qos: MQTTQoS, packetId: UInt16, length: Int)

    /// CONNACK return codes (3.2.2.3), as a reason a user can act on.
    public static func connackReason(_ code: UInt8) -> String {
        switch code {
        case 0: return "accepted"
        case 1: return "the broker refuses protocol version 3.1.1"
        case 2: return "the broker refuses the client id"
        case 3: return "the broker is unavailable"
        case 4: return "bad user name or password"
        case 5: return "not authorized (check the user name and the password)"
        default: return "refused with return code \(code)"
        }
    }

    // MARK: encoding

    public func encode(into out: inout [UInt8]) {
        var body: [UInt8] = []
        let header: UInt8
        switch self {
        case .connect(let c):
            header = 0x10
            Self.string("MQTT", into: &body)
            body.append(4)  // protocol level 3.1.1
            var flags: UInt8 = c.cleanSession ? 0x02 : 0
            if let w = c.will { flags |= 0x04 | (w.qos.rawValue << 3) | (w.retain ? 0x20 : 0) }
            if c.password != nil { flags |= 0x40 }
            if c.username != nil { flags |= 0x80 }
            body.append(flags)
            body.append(UInt8(c.keepAliveS >> 8)); body.append(UInt8(c.keepAliveS & 0xFF))
            Self.string(c.clientId, into: &body)
            if let w = c.will {
                Self.string(w.topic, into: &body)
                Self.binary(w.payload, into: &body)
            }
            if let u = c.username { Self.string(u, into: &body) }
            if let p = c.password { Self.binary(p, into: &body) }
        case .connack(let present, let code):
            header = 0x20
            body = [present ? 1 : 0, code]
        case .publish(let p):
            header = 0x30 | (p.dup ? 0x08 : 0) | (p.qos.rawValue << 1) | (p.retain ? 0x01 : 0)
            Self.string(p.topic, into: &body)
            if p.qos != .atMostOnce { body.append(UInt8(p.packetId >> 8)); body.append(UInt8(p.packetId & 0xFF)) }
            body.append(contentsOf: p.payload)
        case .puback(let id):
            header = 0x40
            body = [UInt8(id >> 8), UInt8(id & 0xFF)]
        case .subscribe(let id, let filters):
            header = 0x82
            body = [UInt8(id >> 8), UInt8(id & 0xFF)]
            for (f, q) in filters { Self.string(f, into: &body); body.append(q.rawValue) }
        case .suback(let id, let granted):
            header = 0x90
            body = [UInt8(id >> 8), UInt8(id & 0xFF)] + granted
        case .pingreq: header = 0xC0
        case .pingresp: header = 0xD0
        case .disconnect: header = 0xE0
        case .oversized: return  // a report of the decoder, not a packet to send
        }
        out.append(header)
        Self.remainingLength(body.count, into: &out)
        out.append(contentsOf: body)
    }

    public var bytes: [UInt8] { var out: [UInt8] = []; encode(into: &out); return out }

    static func string(_ s: String, into out: inout [UInt8]) { binary(Array(s.utf8), into: &out) }

    static func binary(_ b: [UInt8], into out: inout [UInt8]) {
        let n = min(b.count, 65_535)
        out.append(UInt8(n >> 8)); out.append(UInt8(n & 0xFF))
        out.append(contentsOf: b.prefix(n))
    }

    static func remainingLength(_ length: Int, into out: inout [UInt8]) {
        var n = length
        repeat {
            var byte = UInt8(n % 128)
            n /= 128
            if n > 0 { byte |= 0x80 }
            out.append(byte)
        } while n > 0
    }

    /// Largest remaining length MQTT can express (4 length bytes).
    public static let maxRemainingLength = 268_435_455
}

public struct MQTTError: Error, Equatable, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Splits a byte stream into MQTT packets. Bytes are appended as they arrive; `next()` returns one
/// whole packet at a time, nil while the next one is incomplete.
///
/// A PUBLISH larger than `maxPacketSize` is not buffered: once its topic and packet id are in,
/// `next()` reports it as `.oversized` and the rest of its bytes are dropped as they arrive, so a
/// broker holding a huge retained message costs neither the memory nor the connection. Any other
/// packet over the limit is a protocol error (no broker sends one).
public struct MQTTDecoder: Sendable {
    var buffer: [UInt8] = []
    var start = 0
    /// Bytes of an oversized PUBLISH still to come, dropped by `append` as they arrive.
    public private(set) var skipping = 0
    /// Packets larger than this are not buffered (PUBLISH: skipped; others: an error).
    public var maxPacketSize: Int
    public init(maxPacketSize: Int = 256 * 1024) { self.maxPacketSize = maxPacketSize }

    public mutating func append<C: Collection<UInt8>>(_ bytes: C) {
        if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: buffer.capacity <= 16 * 1024); start = 0 }
        guard skipping > 0 else { buffer.append(contentsOf: bytes); return }
        let n = min(skipping, bytes.count)
        skipping -= n
        buffer.append(contentsOf: bytes.dropFirst(n))
    }

    /// How many received bytes wait in the buffer (at most a packet's worth).
    public var buffered: Int { buffer.count - start }

    public mutating func reset() { buffer.removeAll(); start = 0; skipping = 0 }

    public mutating func next() throws(MQTTError) -> MQTTPacket? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        var length = 0
        var multiplier = 1
        var i = start + 1
        while true {
            guard i < buffer.count else { return nil }
            let b = buffer[i]
            length += Int(b & 0x7F) * multiplier
            i += 1
            if b & 0x80 == 0 { break }
            multiplier *= 128
            if i - start - 1 >= 4 { throw MQTTError("malformed remaining length") }
        }
        let header = buffer[start]
        if length > maxPacketSize {
            guard header >> 4 == 3 else { throw MQTTError("a \(length)-byte packet of type \(header >> 4) (limit \(maxPacketSize))") }
            return try oversized(header: header, body: i, length: length)
        }
        guard buffer.count - i >= length else { return nil }
        let body = buffer[i..<(i + length)]
        start = i + length
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return try Self.parse(header: header, body: body)
    }

    /// An oversized PUBLISH whose body starts at `body`: waits for its topic and packet id (at most
    /// 65,539 bytes), reports it, and skips the rest, buffered or still to come.
    private mutating func oversized(header: UInt8, body: Int, length: Int) throws(MQTTError) -> MQTTPacket? {
        let qosBits = (header >> 1) & 3
        guard let qos = MQTTQoS(rawValue: qosBits) else { throw MQTTError("PUBLISH with QoS bits \(qosBits)") }
        guard buffer.count - body >= 2 else { return nil }
        let topicLength = Int(buffer[body]) << 8 | Int(buffer[body + 1])
        let head = 2 + topicLength + (qos == .atMostOnce ? 0 : 2)
        guard head <= length else { throw MQTTError("packet cut short") }
        guard buffer.count - body >= head else { return nil }
        var r = Reader(buffer[body..<(body + head)])
        let topic = try r.string()
        let id = qos == .atMostOnce ? 0 : try r.u16()
        if qos != .atMostOnce && id == 0 { throw MQTTError("a QoS 1 PUBLISH with packet id 0") }
        guard MQTTTopic.isValidName(topic) else { throw MQTTError("a PUBLISH to the invalid topic name \"\(topic)\"") }
        let end = body + length
        if buffer.count >= end {
            start = end
            if start == buffer.count { buffer.removeAll(keepingCapacity: buffer.capacity <= 16 * 1024); start = 0 }
        } else {
            skipping = end - buffer.count
            buffer.removeAll(keepingCapacity: buffer.capacity <= 16 * 1024)
            start = 0
        }
        return .oversized(topic: topic, qos: qos, packetId: id, length: length)
    }

    static func parse(header: UInt8, body: ArraySlice<UInt8>) throws(MQTTError) -> MQTTPacket {
        var r = Reader(body)
        switch header >> 4 {
        case 2:
            guard body.count == 2 else { throw MQTTError("CONNACK of \(body.count) bytes") }
            return .connack(sessionPresent: body[body.startIndex] & 1 != 0, returnCode: body[body.startIndex + 1])
        case 3:
            let qosBits = (header >> 1) & 3
            guard let qos = MQTTQoS(rawValue: qosBits) else {
                if qosBits == 2 { throw MQTTError("PUBLISH at QoS 2, which this client never subscribes with") }
                throw MQTTError("PUBLISH with QoS bits 3")
            }
            let topic = try r.string()
            let id = qos == .atMostOnce ? 0 : try r.u16()
            // (2.3.1-1: a QoS 1 PUBLISH carries a non-zero packet id; 4.7.1: a name holds no wildcard.)
            if qos != .atMostOnce && id == 0 { throw MQTTError("a QoS 1 PUBLISH with packet id 0") }
            guard MQTTTopic.isValidName(topic) else { throw MQTTError("a PUBLISH to the invalid topic name \"\(topic)\"") }
            return .publish(MQTTPublish(topic: topic, payload: Array(r.rest()), qos: qos, retain: header & 1 != 0, dup: header & 0x08 != 0, packetId: id))
        case 4:
            return .puback(try r.u16())
        case 9:
            let id = try r.u16()
            return .suback(packetId: id, granted: Array(r.rest()))
        case 12: return .pingreq
        case 13: return .pingresp
        case 5, 6, 7:
            throw MQTTError("a QoS 2 acknowledgement (this client publishes at QoS 0 and 1 only)")
        default:
            // CONNECT, SUBSCRIBE, DISCONNECT...: what a client sends, never what it receives.
            throw MQTTError("packet type \(header >> 4)")
        }
    }

    struct Reader {
        var bytes: ArraySlice<UInt8>
        init(_ b: ArraySlice<UInt8>) { bytes = b }
        var atEnd: Bool { bytes.isEmpty }
        mutating func byte() throws(MQTTError) -> UInt8 {
            guard let b = bytes.popFirst() else { throw MQTTError("packet cut short") }
            return b
        }
        mutating func u16() throws(MQTTError) -> UInt16 { UInt16(try byte()) << 8 | UInt16(try byte()) }
        mutating func binary() throws(MQTTError) -> ArraySlice<UInt8> {
            let n = Int(try u16())
            guard bytes.count >= n else { throw MQTTError("packet cut short") }
            defer { bytes = bytes.dropFirst(n) }
            return bytes.prefix(n)
        }
        mutating func string() throws(MQTTError) -> String {
            let b = try binary()
            guard let s = String(validating: b, as: UTF8.self) else { throw MQTTError("a string that is not UTF-8") }
            return s
        }
        mutating func rest() -> ArraySlice<UInt8> { defer { bytes = [] }; return bytes }
    }
}

/// Topic names and filters (4.7).
public enum MQTTTopic {
    /// Whether `topic` matches `filter` (`+` one level, `#` the rest). Topics starting with `$`
    /// match no filter starting with a wildcard.
    public static func matches(_ topic: String, filter: String) -> Bool {
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$") && (filter.hasPrefix("+") || filter.hasPrefix("#")) { return false }
        var i = 0
        while i < f.count {
            if f[i] == "#" { return true }
            guard i < t.count else { return false }
            if f[i] != "+" && f[i] != t[i] { return false }
            i += 1
        }
        return i == t.count
    }

    /// A valid topic name to publish to: not empty, no wildcards, no NUL, at most 65,535 bytes.
    public static func isValidName(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= 65_535 && !topic.utf8.contains(where: { $0 == 0x23 || $0 == 0x2B || $0 == 0 })
    }
}
