// DNS over UDP for broker host names (RFC 1035), without I/O: queries encoded, answers checked and
// read, /etc/resolv.conf and /etc/hosts parsed, and a lookup that says which datagram goes to which
// server and when a server has had long enough. The daemon owns the sockets and the clock, so a slow
// or unreachable resolver never blocks its poll loop, and the fully static binary does not depend on
// glibc's NSS modules.
//
// Addresses are raw bytes (4 for IPv4, 16 for IPv6); servers are the resolv.conf text, which the
// daemon turns into socket addresses.

public enum DNSType: UInt16, Sendable {
    case a = 1
    case cname = 5
    case aaaa = 28
}

public enum DNSMessage {
    /// A standard query with recursion desired for one name and type, class IN.
    public static func query(id: UInt16, name: String, type: DNSType) throws(MQTTError) -> [UInt8] {
        var out: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        out += try encodeName(name)
        out += [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), 0, 1]
        return out
    }

    /// A name in wire form: length-prefixed labels and the root's zero byte. Labels of 1...63 bytes,
    /// at most 255 bytes in all; a trailing dot is allowed.
    public static func encodeName(_ name: String) throws(MQTTError) -> [UInt8] {
        var text = Substring(name)
        if text.hasSuffix(".") { text = text.dropLast() }
        guard !text.isEmpty else { throw MQTTError("\"\(name)\": an empty host name") }
        var out: [UInt8] = []
        for label in text.split(separator: ".", omittingEmptySubsequences: false) {
            let bytes = Array(label.utf8)
            guard !bytes.isEmpty, bytes.count <= 63 else { throw MQTTError("\"\(name)\": not a valid host name (a label is empty or longer than 63 bytes)") }
            guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw MQTTError("\"\(name)\": not a valid host name") }
            out.append(UInt8(bytes.count))
            out += bytes
        }
        out.append(0)
        guard out.count <= 255 else { throw MQTTError("\"\(name)\": longer than 255 bytes") }
        return out
    }

    /// What an answer says about the question it answers.
    public enum Answer: Equatable, Sendable {
        /// NOERROR: the addresses of the asked type (following CNAMEs), possibly none.
        case addresses([[UInt8]])
        /// NXDOMAIN: the name does not exist.
        case noSuchName
        /// Any other response code (SERVFAIL, REFUSED, ...): ask another server.
        case failure(rcode: UInt8)
        /// TC set and no usable address in what fit: ask another server.
        case truncated
    }

    /// Reads a response to the query `id` for `name` and `type`; nil when it is not one (another id,
    /// another question, not a response, or malformed), which a lookup ignores.
    public static func answer(_ b: [UInt8], id: UInt16, name: String, type: DNSType) -> Answer? {
        guard b.count >= 12, UInt16(b[0]) << 8 | UInt16(b[1]) == id else { return nil }
        let flags = UInt16(b[2]) << 8 | UInt16(b[3])
        guard flags & 0x8000 != 0, (flags >> 11) & 0xF == 0 else { return nil }  // a response to a standard query
        let qd = Int(b[4]) << 8 | Int(b[5])
        let an = Int(b[6]) << 8 | Int(b[7])
        guard qd == 1 else { return nil }
        var at = 12
        guard let qname = readName(b, &at), at + 4 <= b.count,
              equalNames(qname, name),
              UInt16(b[at]) << 8 | UInt16(b[at + 1]) == type.rawValue,
              b[at + 2] == 0, b[at + 3] == 1 else { return nil }
        at += 4
        let rcode = UInt8(flags & 0xF)
        if rcode == 3 { return .noSuchName }
        if rcode != 0 { return .failure(rcode: rcode) }
        // The answer section: owner, type, class, TTL, and the data of each record.
        var records: [(owner: String, type: UInt16, data: Range<Int>)] = []
        for _ in 0..<an {
            guard let owner = readName(b, &at), at + 10 <= b.count else { return nil }
            let t = UInt16(b[at]) << 8 | UInt16(b[at + 1])
            let c = UInt16(b[at + 2]) << 8 | UInt16(b[at + 3])
            let length = Int(b[at + 8]) << 8 | Int(b[at + 9])
            at += 10
            guard at + length <= b.count else { return nil }
            if c == 1 { records.append((owner, t, at..<at + length)) }
            at += length
        }
        // Follow the CNAME chain from the asked name (at most 8 links, no loops).
        var names = [normalized(name)]
        var current = names[0]
        for _ in 0..<8 {
            guard let r = records.first(where: { $0.type == DNSType.cname.rawValue && normalized($0.owner) == current }) else { break }
            var p = r.data.lowerBound
            guard let target = readName(b, &p), p == r.data.upperBound else { return nil }
            current = normalized(target)
            if names.contains(current) { break }
            names.append(current)
        }
        let size = type == .a ? 4 : 16
        let found = records.filter { $0.type == type.rawValue && $0.data.count == size && names.contains(normalized($0.owner)) }
            .map { Array(b[$0.data]) }
        if found.isEmpty && flags & 0x0200 != 0 { return .truncated }
        return .addresses(found)
    }

    /// A name at `at` (labels and compression pointers, which may only point backwards), moving
    /// `at` past it; nil when malformed.
    static func readName(_ b: [UInt8], _ at: inout Int) -> String? {
        var labels: [String] = []
        var p = at
        var end: Int? = nil
        var total = 0
        while true {
            guard p < b.count else { return nil }
            let n = Int(b[p])
            if n == 0 { p += 1; break }
            if n & 0xC0 == 0xC0 {
                guard p + 1 < b.count else { return nil }
                let target = (n & 0x3F) << 8 | Int(b[p + 1])
                guard target < p else { return nil }  // backwards only: no loops
                if end == nil { end = p + 2 }
                p = target
                continue
            }
            guard n & 0xC0 == 0, p + 1 + n <= b.count else { return nil }
            total += n + 1
            guard total <= 255 else { return nil }
            labels.append(String(decoding: b[(p + 1)..<(p + 1 + n)], as: UTF8.self))
            p += 1 + n
        }
        at = end ?? p
        return labels.joined(separator: ".")
    }

    public static func normalized(_ name: String) -> String {
        var s = name.lowercased()
        if s.hasSuffix(".") { s.removeLast() }
        return s
    }

    static func equalNames(_ a: String, _ b: String) -> Bool { normalized(a) == normalized(b) }
}

/// What /etc/resolv.conf says: up to three name servers, the search list, and the options
/// `timeout:`, `attempts:` and `ndots:` (with glibc's defaults and limits).
public struct ResolverConfig: Equatable, Sendable {
    public var servers: [String] = []
    public var search: [String] = []
    public var ndots = 1
    public var timeoutMS: UInt64 = 5_000
    public var attempts = 2

    public init() {}

    public init(parsing text: String) {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let words = line.prefix { $0 != "#" && $0 != ";" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let key = words.first else { continue }
            let values = words.dropFirst().map(String.init)
            switch key {
            case "nameserver":
                if let v = values.first, servers.count < 3 { servers.append(v) }
            case "search":
                search = Array(values.prefix(6))
            case "domain":
                search = values.first.map { [$0] } ?? []
            case "options":
                for o in values {
                    let parts = o.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, let n = Int(parts[1]), n >= 0 else { continue }
                    switch parts[0] {
                    case "timeout": timeoutMS = UInt64(min(max(n, 1), 30)) * 1000
                    case "attempts": attempts = min(max(n, 1), 5)
                    case "ndots": ndots = min(n, 15)
                    default: break
                    }
                }
            default: continue
            }
        }
    }

    /// The names to ask for, in order: a name ending in a dot as it is; a name with at least
    /// `ndots` dots as it is, then with each search domain; a shorter one the other way round.
    public func candidates(for name: String) -> [String] {
        if name.hasSuffix(".") { return [String(name.dropLast())] }
        let searched = search.map { name + "." + ($0.hasSuffix(".") ? String($0.dropLast()) : $0) }
        let dots = name.reduce(0) { $0 + ($1 == "." ? 1 : 0) }
        return dots >= ndots ? [name] + searched : searched + [name]
    }
}

/// Lines of /etc/hosts: the address texts given for `name` (any of a line's names, any case).
public enum HostsFile {
    public static func addresses(of name: String, in text: String) -> [String] {
        let wanted = DNSMessage.normalized(name)
        var found: [String] = []
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let words = line.prefix { $0 != "#" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words.dropFirst().contains(where: { DNSMessage.normalized(String($0)) == wanted }) else { continue }
            found.append(String(words[0]))
        }
        return found
    }
}

/// One host name's lookup over UDP, as glibc's stub resolver does it: A and AAAA asked together of
/// one server; no answer within the timeout, a failure code or an unreachable server moves on to
/// the next server, `attempts` rounds over all of them; NXDOMAIN or no address moves on to the next
/// candidate name of the search list. The daemon sends `outgoing` datagrams, feeds answers and
/// unreachable errors in, and calls `tick` at `deadline`.
public struct DNSLookup {
    public enum Outcome: Equatable, Sendable {
        /// IPv4 addresses first, then IPv6.
        case found([[UInt8]])
        case failed(String)
    }

    public let name: String
    public let config: ResolverConfig
    let candidates: [String]
    var candidate = 0
    var attempt = 0
    /// The server asked now (an index into config.servers).
    public private(set) var server = 0
    var pending: [(id: UInt16, type: DNSType)] = []
    var v4: [[UInt8]] = []
    var v6: [[UInt8]] = []
    var answered = 0
    var problem: String? = nil
    public private(set) var deadline: UInt64 = 0
    public private(set) var outcome: Outcome? = nil
    /// Datagrams to send: (server index, bytes).
    public var outgoing: [(server: Int, bytes: [UInt8])] = []
    /// Query ids: random, so that an answer cannot easily be forged by someone who does not see
    /// the query.
    let newId: () -> UInt16

    public init(name: String, config: ResolverConfig, now: UInt64,
                newId: @escaping () -> UInt16 = { UInt16.random(in: 0...UInt16.max) }) {
        self.name = name
        var c = config
        if c.servers.isEmpty { c.servers = ["127.0.0.1"] }  // glibc's default too
        self.config = c
        self.candidates = c.candidates(for: name)
        self.newId = newId
        do throws(MQTTError) {
            for n in candidates { _ = try DNSMessage.encodeName(n) }
            _ = try DNSMessage.encodeName(name)
        } catch {
            outcome = .failed(error.description)
            return
        }
        ask(now: now)
    }

    private mutating func ask(now: UInt64) {
        pending = []
        v4 = []
        v6 = []
        answered = 0
        for type in [DNSType.a, .aaaa] {
            var id = newId()
            while pending.contains(where: { $0.id == id }) { id &+= 1 }
            guard let q = try? DNSMessage.query(id: id, name: candidates[candidate], type: type) else { continue }
            pending.append((id, type))
            outgoing.append((server, q))
        }
        deadline = now + config.timeoutMS
    }

    /// A datagram from server `from`.
    public mutating func receive(_ bytes: [UInt8], from: Int, now: UInt64) {
        guard outcome == nil, from == server else { return }
        for (i, q) in pending.enumerated() {
            guard let answer = DNSMessage.answer(bytes, id: q.id, name: candidates[candidate], type: q.type) else { continue }
            pending.remove(at: i)
            switch answer {
            case .addresses(let found):
                if q.type == .a { v4 = found } else { v6 = found }
                answered += 1
                if pending.isEmpty { candidateAnswered(now: now) }
            case .noSuchName:
                problem = "no such host (NXDOMAIN from \(config.servers[server]))"
                nextCandidate(now: now)
            case .failure(let rcode):
                serverFailed("\(config.servers[server]) answered \(Self.rcodeName(rcode))", now: now)
            case .truncated:
                serverFailed("\(config.servers[server]) sent a truncated answer", now: now)
            }
            return
        }
    }

    /// The socket to server `index` reported an error (ICMP port or host unreachable).
    public mutating func unreachable(_ index: Int, reason: String, now: UInt64) {
        guard outcome == nil, index == server else { return }
        serverFailed("\(config.servers[index]): \(reason)", now: now)
    }

    public mutating func tick(now: UInt64) {
        guard outcome == nil, now >= deadline else { return }
        if answered > 0 && !(v4.isEmpty && v6.isEmpty) {  // one type answered, the other never will
            outcome = .found(v4 + v6)
            return
        }
        serverFailed("no answer from \(config.servers[server]) within \(config.timeoutMS / 1000) s", now: now)
    }

    private mutating func candidateAnswered(now: UInt64) {
        if !(v4.isEmpty && v6.isEmpty) {
            outcome = .found(v4 + v6)
        } else {
            problem = "it has no IPv4 or IPv6 address"
            nextCandidate(now: now)
        }
    }

    private mutating func serverFailed(_ why: String, now: UInt64) {
        problem = why
        server += 1
        if server >= config.servers.count {
            server = 0
            attempt += 1
        }
        if attempt >= config.attempts {
            let tries = config.attempts * config.servers.count
            outcome = .failed("cannot resolve \(name): \(why)" + (tries > 1 ? " (\(tries) tries, every server)" : ""))
            return
        }
        ask(now: now)
    }

    private mutating func nextCandidate(now: UInt64) {
        candidate += 1
        attempt = 0
        server = 0
        if candidate >= candidates.count {
            outcome = .failed("cannot resolve \(name): \(problem ?? "no such host")")
            return
        }
        ask(now: now)
    }

    static func rcodeName(_ rcode: UInt8) -> String {
        switch rcode {
        case 1: return "FORMERR"
        case 2: return "SERVFAIL"
        case 4: return "NOTIMP"
        case 5: return "REFUSED"
        default: return "rcode \(rcode)"
        }
    }
}
