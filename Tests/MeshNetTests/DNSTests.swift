import Testing
@testable import MeshNet

/// A name in wire form, for building answers by hand.
private func wire(_ name: String) -> [UInt8] {
    var out: [UInt8] = []
    for label in name.split(separator: ".") { out.append(UInt8(label.utf8.count)); out += Array(label.utf8) }
    return out + [0]
}

/// An answer to `question` (the query's bytes) with the given flags and records.
private func response(to question: [UInt8], flags: UInt16 = 0x8180, records: [[UInt8]]) -> [UInt8] {
    var out = question
    out[2] = UInt8(flags >> 8)
    out[3] = UInt8(flags & 0xFF)
    out[6] = 0
    out[7] = UInt8(records.count)
    for r in records { out += r }
    return out
}

/// A record owned by the name at offset 12 (the question's name), with a compression pointer.
private func record(type: UInt16, data: [UInt8], owner: [UInt8] = [0xC0, 0x0C]) -> [UInt8] {
    owner + [UInt8(type >> 8), UInt8(type & 0xFF), 0, 1, 0, 0, 0x01, 0x2C, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
}

private func id(of query: [UInt8]) -> UInt16 { UInt16(query[0]) << 8 | UInt16(query[1]) }

@Suite struct DNSMessageTests {
    @Test func queryIsByteExact() throws {
        let q = try DNSMessage.query(id: 0xABCD, name: "broker.example.com", type: .a)
        let expected: [UInt8] = [0xAB, 0xCD, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                 6, 0x62, 0x72, 0x6F, 0x6B, 0x65, 0x72, 7, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65,
                                 3, 0x63, 0x6F, 0x6D, 0, 0x00, 0x01, 0x00, 0x01]
        #expect(q == expected)
        let aaaa = try DNSMessage.query(id: 1, name: "broker.example.com.", type: .aaaa)
        #expect(Array(aaaa.suffix(4)) == [0x00, 0x1C, 0x00, 0x01])
        #expect(aaaa.count == expected.count)
    }

    @Test func badNamesAreRefused() {
        for name in ["", ".", "a..b", String(repeating: "x", count: 64) + ".com",
                     (0..<60).map { _ in "abcd" }.joined(separator: "."), "sp ace.com"] {
            #expect(throws: MQTTError.self) { try DNSMessage.encodeName(name) }
        }
    }

    /// A CNAME to a name written with a pointer into the question, then that name's A record
    /// (owner written as a pointer to the CNAME's data): the address is found through the chain.
    @Test func answerFollowsCnameThroughCompression() throws {
        let q = try DNSMessage.query(id: 0xABCD, name: "broker.example.com", type: .a)
        let cname = record(type: 5, data: [4] + Array("mqtt".utf8) + [0xC0, 0x13])  // mqtt + example.com
        // The question's name ends at 12 + 20; its type and class take 4; the CNAME's owner, type,
        // class, TTL and length take 12: its data starts at 48 (0x30).
        let a = record(type: 1, data: [192, 0, 2, 7], owner: [0xC0, 0x30])
        let other = record(type: 1, data: [198, 51, 100, 1], owner: wire("elsewhere.example.com"))
        let r = response(to: q, records: [cname, a, other])
        #expect(DNSMessage.answer(r, id: 0xABCD, name: "BROKER.example.com.", type: .a) == .addresses([[192, 0, 2, 7]]))
        // The same bytes are no answer to another id, name or type.
        #expect(DNSMessage.answer(r, id: 0xABCE, name: "broker.example.com", type: .a) == nil)
        #expect(DNSMessage.answer(r, id: 0xABCD, name: "other.example.com", type: .a) == nil)
        #expect(DNSMessage.answer(r, id: 0xABCD, name: "broker.example.com", type: .aaaa) == nil)
        // A query (QR clear) is not an answer.
        #expect(DNSMessage.answer(q, id: 0xABCD, name: "broker.example.com", type: .a) == nil)
    }

    @Test func aaaaRecordsAndNoData() throws {
        let q = try DNSMessage.query(id: 7, name: "v6.example", type: .aaaa)
        let addr: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]
        #expect(DNSMessage.answer(response(to: q, records: [record(type: 28, data: addr)]), id: 7, name: "v6.example", type: .aaaa) == .addresses([addr]))
        // A 4-byte record of type AAAA is malformed and not taken.
        #expect(DNSMessage.answer(response(to: q, records: [record(type: 28, data: [1, 2, 3, 4])]), id: 7, name: "v6.example", type: .aaaa) == .addresses([]))
        #expect(DNSMessage.answer(response(to: q, records: []), id: 7, name: "v6.example", type: .aaaa) == .addresses([]))
    }

    @Test func responseCodesAndTruncation() throws {
        let q = try DNSMessage.query(id: 9, name: "x.example", type: .a)
        #expect(DNSMessage.answer(response(to: q, flags: 0x8183, records: []), id: 9, name: "x.example", type: .a) == .noSuchName)
        #expect(DNSMessage.answer(response(to: q, flags: 0x8182, records: []), id: 9, name: "x.example", type: .a) == .failure(rcode: 2))
        #expect(DNSMessage.answer(response(to: q, flags: 0x8385, records: []), id: 9, name: "x.example", type: .a) == .failure(rcode: 5))
        #expect(DNSMessage.answer(response(to: q, flags: 0x8380, records: []), id: 9, name: "x.example", type: .a) == .truncated)
        // Truncated, but with the address in what fit: taken.
        #expect(DNSMessage.answer(response(to: q, flags: 0x8380, records: [record(type: 1, data: [10, 0, 0, 1])]), id: 9, name: "x.example", type: .a) == .addresses([[10, 0, 0, 1]]))
    }

    @Test func malformedAnswersAreIgnored() throws {
        let q = try DNSMessage.query(id: 3, name: "x.example", type: .a)
        let good = response(to: q, records: [record(type: 1, data: [10, 0, 0, 1])])
        // Every cut of a good answer is either no answer or, if only trailing records were lost, a
        // shorter one; never a trap.
        for n in 0..<good.count { _ = DNSMessage.answer(Array(good.prefix(n)), id: 3, name: "x.example", type: .a) }
        // A pointer to itself, or forwards, is refused.
        var loop = good
        loop[q.count] = 0xC0
        loop[q.count + 1] = UInt8(q.count)
        #expect(DNSMessage.answer(loop, id: 3, name: "x.example", type: .a) == nil)
        // A record length past the end.
        var long = good
        long[long.count - 5] = 9
        #expect(DNSMessage.answer(long, id: 3, name: "x.example", type: .a) == nil)
        // A CNAME loop ends without an address.
        let a = record(type: 5, data: [0xC0, 0x0C])
        #expect(DNSMessage.answer(response(to: q, records: [a]), id: 3, name: "x.example", type: .a) == .addresses([]))
    }
}

@Suite struct ResolverConfigTests {
    @Test func parsesServersSearchAndOptions() {
        let c = ResolverConfig(parsing: """
            # comment
            nameserver 10.0.0.53
            nameserver ::1 ; trailing
            nameserver 10.0.0.54
            nameserver 10.0.0.55
            domain old.example
            search lan example.org
            options ndots:2 timeout:3 attempts:9 rotate
            """)
        #expect(c.servers == ["10.0.0.53", "::1", "10.0.0.54"])  // three at most, as glibc
        #expect(c.search == ["lan", "example.org"])  // the last of domain/search wins
        #expect(c.ndots == 2)
        #expect(c.timeoutMS == 3_000)
        #expect(c.attempts == 5)
        let d = ResolverConfig(parsing: "")
        #expect(d.servers.isEmpty && d.timeoutMS == 5_000 && d.attempts == 2 && d.ndots == 1)
        #expect(ResolverConfig(parsing: "options timeout:0 attempts:0").timeoutMS == 1_000)
    }

    @Test func candidateNamesFollowNdots() {
        var c = ResolverConfig()
        c.search = ["lan", "corp.example."]
        #expect(c.candidates(for: "broker") == ["broker.lan", "broker.corp.example", "broker"])
        #expect(c.candidates(for: "mqtt.example.com") == ["mqtt.example.com", "mqtt.example.com.lan", "mqtt.example.com.corp.example"])
        #expect(c.candidates(for: "mqtt.example.com.") == ["mqtt.example.com"])
        c.ndots = 3
        #expect(c.candidates(for: "mqtt.example.com").last == "mqtt.example.com")
    }

    @Test func hostsFileLines() {
        let text = "127.0.0.1 localhost\n# 10.9.9.9 broker\n10.1.1.1\tBroker broker.lan # note\nfe80::1 other broker\n"
        #expect(HostsFile.addresses(of: "broker", in: text) == ["10.1.1.1", "fe80::1"])
        #expect(HostsFile.addresses(of: "BROKER.lan.", in: text) == ["10.1.1.1"])
        #expect(HostsFile.addresses(of: "nothere", in: text).isEmpty)
    }
}

/// The lookup in virtual time: what goes to which server, when it moves on, what it concludes.
@Suite struct DNSLookupTests {
    func config(_ servers: [String], search: [String] = [], timeout: UInt64 = 2_000, attempts: Int = 2) -> ResolverConfig {
        var c = ResolverConfig()
        c.servers = servers
        c.search = search
        c.timeoutMS = timeout
        c.attempts = attempts
        return c
    }

    func counter() -> () -> UInt16 {
        var n: UInt16 = 100
        return { n += 1; return n }
    }

    /// Answers the lookup's outgoing queries to `server` (A and AAAA) with these addresses.
    func answer(_ l: inout DNSLookup, server: Int, v4: [[UInt8]], v6: [[UInt8]], rcode: UInt16 = 0, now: UInt64) {
        let out = l.outgoing.filter { $0.server == server }
        l.outgoing.removeAll()
        for (_, q) in out {
            let isA = q[q.count - 3] == 1
            let recs = (isA ? v4 : v6).map { record(type: isA ? 1 : 28, data: $0) }
            l.receive(response(to: q, flags: 0x8180 | rcode, records: recs), from: server, now: now)
        }
    }

    @Test func asksAAndAaaaAndPutsIPv4First() {
        var l = DNSLookup(name: "broker.example", config: config(["10.0.0.53"]), now: 0, newId: counter())
        #expect(l.outgoing.count == 2 && l.outgoing.allSatisfy { $0.server == 0 })
        #expect(Set(l.outgoing.map { id(of: $0.bytes) }).count == 2)
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12)
        answer(&l, server: 0, v4: [[10, 1, 2, 3]], v6: [v6], now: 10)
        #expect(l.outcome == .found([[10, 1, 2, 3], v6]))
    }

    @Test func silentServersAreLeftAfterTheTimeoutThenItGivesUp() {
        var l = DNSLookup(name: "broker.example", config: config(["10.0.0.1", "10.0.0.2"]), now: 0, newId: counter())
        l.outgoing.removeAll()
        #expect(l.deadline == 2_000)
        l.tick(now: 1_999)
        #expect(l.outcome == nil && l.outgoing.isEmpty)
        l.tick(now: 2_000)
        #expect(l.server == 1 && l.outgoing.count == 2 && l.outgoing.allSatisfy { $0.server == 1 })
        l.outgoing.removeAll()
        // A late answer from the first server is not taken: it is no longer asked.
        l.tick(now: 4_000)  // second server silent: the next round starts with the first again
        #expect(l.server == 0 && l.outcome == nil)
        l.outgoing.removeAll()
        l.tick(now: 6_000)
        l.outgoing.removeAll()
        l.tick(now: 8_000)
        guard case .failed(let why)? = l.outcome else { Issue.record("no failure"); return }
        #expect(why.contains("broker.example") && why.contains("no answer") && why.contains("4 tries"))
    }

    @Test func refusedOrUnreachableServerMovesOnAtOnce() {
        var l = DNSLookup(name: "broker.example", config: config(["10.0.0.1", "10.0.0.2"]), now: 0, newId: counter())
        l.outgoing.removeAll()
        l.unreachable(0, reason: "Connection refused", now: 5)
        #expect(l.server == 1 && l.deadline == 2_005)
        answer(&l, server: 1, v4: [], v6: [], rcode: 5, now: 6)  // REFUSED
        #expect(l.server == 0)
        answer(&l, server: 0, v4: [[10, 0, 0, 9]], v6: [], now: 7)
        #expect(l.outcome == .found([[10, 0, 0, 9]]))
    }

    @Test func answersFromTheWrongServerOrWithTheWrongIdAreIgnored() throws {
        var l = DNSLookup(name: "broker.example", config: config(["10.0.0.1", "10.0.0.2"]), now: 0, newId: counter())
        let q = l.outgoing[0].bytes
        l.receive(response(to: q, records: [record(type: 1, data: [6, 6, 6, 6])]), from: 1, now: 1)
        var forged = response(to: q, records: [record(type: 1, data: [6, 6, 6, 6])])
        forged[1] ^= 0xFF
        l.receive(forged, from: 0, now: 1)
        #expect(l.outcome == nil)
        answer(&l, server: 0, v4: [[10, 0, 0, 1]], v6: [], now: 2)
        #expect(l.outcome == .found([[10, 0, 0, 1]]))
    }

    @Test func noSuchNameTriesTheSearchListThenSaysSo() {
        var l = DNSLookup(name: "broker", config: config(["10.0.0.1"], search: ["lan"]), now: 0, newId: counter())
        #expect(l.outgoing.allSatisfy { $0.bytes.count == 12 + 12 + 4 })  // broker.lan first (ndots 1)
        answer(&l, server: 0, v4: [], v6: [], rcode: 3, now: 1)
        #expect(l.outcome == nil && l.outgoing.count == 2)  // then "broker" as it is
        answer(&l, server: 0, v4: [], v6: [], rcode: 3, now: 2)
        guard case .failed(let why)? = l.outcome else { Issue.record("no failure"); return }
        #expect(why == "cannot resolve broker: no such host (NXDOMAIN from 10.0.0.1)")
    }

    @Test func oneTypeAnsweredAndTheOtherLostIsEnoughAtTheTimeout() {
        var l = DNSLookup(name: "broker.example", config: config(["10.0.0.1"]), now: 0, newId: counter())
        let a = l.outgoing.first { $0.bytes[$0.bytes.count - 3] == 1 }!.bytes
        l.outgoing.removeAll()
        l.receive(response(to: a, records: [record(type: 1, data: [10, 0, 0, 1])]), from: 0, now: 1)
        #expect(l.outcome == nil)
        l.tick(now: 2_000)
        #expect(l.outcome == .found([[10, 0, 0, 1]]))
    }

    @Test func noAddressAndBadNames() {
        var l = DNSLookup(name: "mail.example", config: config(["10.0.0.1"]), now: 0, newId: counter())
        answer(&l, server: 0, v4: [], v6: [], now: 1)
        #expect(l.outcome == .failed("cannot resolve mail.example: it has no IPv4 or IPv6 address"))
        let bad = DNSLookup(name: "a..b", config: config([]), now: 0)
        #expect(bad.outcome != nil && bad.outgoing.isEmpty)
        // No nameserver line: 127.0.0.1, as glibc.
        #expect(DNSLookup(name: "x.example", config: config([]), now: 0).config.servers == ["127.0.0.1"])
    }
}
