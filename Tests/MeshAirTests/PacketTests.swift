import MeshCompanion
import Testing
@testable import MeshAir

@Suite struct PacketTests {
    @Test func parsesFloodTextPacket() throws {
        let raw = hex("0900481e192fbe9a7f09431d92c06963d479b2be40e9")
        try raw.withUnsafeBytes { buf in
            let v = try PacketView(buf)
            #expect(v.routeType == .flood)
            #expect(v.payloadType == .txtMsg)
            #expect(v.header.version == 0)
            #expect(v.transportCodes == nil)
            #expect(v.pathLength.hopCount == 0)
            #expect(v.path.count == 0)
            #expect(hexOf(v.payload) == "481e192fbe9a7f09431d92c06963d479b2be40e9")
            #expect(v.hash.hex == "bc5a9c5e9de70640")
        }
        let p = try Packet(bytes: raw)
        #expect(p.bytes == raw)
        #expect(p.hash.hex == "bc5a9c5e9de70640")
    }

    @Test func directPacketAndRelayPop() throws {
        let raw = hex("0a025f33481e192fbe9a7f09431d92c06963d479b2be40e9")
        var p = try Packet(bytes: raw)
        #expect(p.routeType == .direct)
        #expect(p.path == [0x5f, 0x33])
        #expect(p.hops == [[0x5f], [0x33]])
        #expect(p.firstHopMatches([0x5f, 0x99]))
        #expect(!p.firstHopMatches([0x33]))
        // Same packet hash as the flood form: the path is not hashed.
        #expect(p.hash.hex == "bc5a9c5e9de70640")
        try p.removeFirstHop()
        #expect(hexOf(p.bytes) == "0a0133481e192fbe9a7f09431d92c06963d479b2be40e9")
        try p.removeFirstHop()
        #expect(hexOf(p.bytes) == "0a00481e192fbe9a7f09431d92c06963d479b2be40e9")
        #expect(throws: AirError.invalidPath) { try p.removeFirstHop() }
    }

    @Test func floodRelayAppendsHops() throws {
        var p = try Packet(routeType: .flood, payloadType: .txtMsg, payload: hex("481e192fbe9a7f09431d92c06963d479b2be40e9"))
        try p.appendHop(hex("5f0000"))
        try p.appendHop(hex("33"))
        #expect(p.routeType == .flood)
        #expect(hexOf(p.bytes) == "09025f33481e192fbe9a7f09431d92c06963d479b2be40e9")
        // 3-byte hashes
        var q = try Packet(routeType: .flood, payloadType: .grpTxt, hashSize: 3, payload: [1, 2, 3])
        try q.appendHop(hex("aabbccdd"))
        #expect(hexOf(q.bytes) == "1581aabbcc010203")
        #expect(throws: AirError.invalidField) { try q.appendHop([1, 2]) }
    }

    /// The relay's key forms (what the nodes use) do what the byte forms do, for every hash size,
    /// up to a full path.
    @Test func keyFormsOfHopsMatchByteForms() throws {
        let key = try #require(PublicKey((0..<32).map { UInt8(0xA0 &+ $0) }))
        for size in 1...3 {
            var a = try Packet(routeType: .flood, payloadType: .txtMsg, hashSize: size, payload: [1, 2, 3])
            var b = a
            while true {
                let byBytes = Result { () throws(AirError) -> Void in try a.appendHop(key.bytes) }
                let byKey = Result { () throws(AirError) -> Void in try b.appendHop(key: key) }
                #expect(a == b)
                if case .failure(let e) = byBytes {
                    guard case .failure(let f) = byKey else { Issue.record("appendHop(key:) went past a full path"); break }
                    #expect(e == f)
                    break
                }
            }
            #expect(a.pathLength.hopCount == 64 / size || a.pathLength.hopCount == AirLimits.maxHopCount)
            var d = try Packet(routeType: .direct, payloadType: .txtMsg, hashSize: size, path: key.bytes.prefix(size) + [9, 9, 9].prefix(size), payload: [1])
            #expect(d.firstHopMatches(key: key) && d.firstHopMatches(key.bytes))
            try d.removeFirstHop()
            #expect(!d.firstHopMatches(key: key) && !d.firstHopMatches(key.bytes))
            try d.removeFirstHop()
            #expect(!d.firstHopMatches(key: key) && !d.firstHopMatches(key.bytes))
        }
    }

    @Test func pathLengthEncoding() throws {
        #expect(try PathLength(encoded: 0x00).byteCount == 0)
        let a = try PathLength(encoded: 0x05)
        #expect(a.hashSize == 1 && a.hopCount == 5 && a.byteCount == 5)
        let b = try PathLength(encoded: 0x45)
        #expect(b.hashSize == 2 && b.hopCount == 5 && b.byteCount == 10)
        let c = try PathLength(encoded: 0x83)
        #expect(c.hashSize == 3 && c.hopCount == 3 && c.byteCount == 9)
        #expect(throws: AirError.reservedHashSize) { try PathLength(encoded: 0xC1) }
        #expect(throws: AirError.invalidPath) { try PathLength(encoded: 0x40 | 33) } // 66 bytes
        #expect(throws: AirError.invalidPath) { try PathLength(encoded: 0x80 | 22) } // 66 bytes
        #expect(try PathLength(encoded: 0x80 | 21).byteCount == 63)
        #expect(try PathLength(encoded: 0x40 | 32).byteCount == 64)
        #expect(try PathLength(encoded: 63).byteCount == 63)
        for size in 1 ... 3 {
            for count in 0 ... 63 where size * count <= 64 {
                let l = try PathLength(hashSize: size, hopCount: count)
                #expect(try PathLength(encoded: l.encoded) == l)
            }
        }
        #expect(throws: AirError.invalidPath) { try PathLength(hashSize: 4, hopCount: 1) }
        #expect(throws: AirError.invalidPath) { try PathLength(hashSize: 1, hopCount: 64) }
        #expect(throws: AirError.invalidPath) { try PathLength(hashSize: 2, hopCount: 33) }
    }

    @Test func headerBits() {
        for r in RouteType.allCases {
            for t in PayloadType.allCases {
                let h = PacketHeader(routeType: r, payloadType: t)
                #expect(PacketHeader(byte: h.byte) == h)
            }
        }
        #expect(PacketHeader(byte: 0x15).routeType == .flood)
        #expect(PacketHeader(byte: 0x15).payloadType == .grpTxt)
        #expect(PacketHeader(byte: 0x14).routeType == .transportFlood)
    }

    @Test func malformedInput() {
        func parse(_ h: String) throws(AirError) {
            _ = try Packet(bytes: hex(h))
        }
        #expect(throws: AirError.truncated) { try parse("") }
        #expect(throws: AirError.truncated) { try parse("09") }
        #expect(throws: AirError.unsupportedVersion(1)) { try parse("490000") }
        #expect(throws: AirError.reservedHashSize) { try parse("09c1aa00") }
        #expect(throws: AirError.truncated) { try parse("0905aabb") }
        #expect(throws: AirError.truncated) { try parse("080000") }       // transport codes cut short
        #expect(throws: AirError.invalidPath) { try parse("0961" + String(repeating: "00", count: 80)) }
        // payload of 185 bytes
        #expect(throws: AirError.payloadTooLong) { try parse("0900" + String(repeating: "00", count: 185)) }
        // raw above 255
        #expect(throws: AirError.packetTooLong) { try parse("0900" + String(repeating: "00", count: 254)) }
        // empty payload is accepted, like Dispatcher::tryParsePacket
        #expect((try? parse("0900")) != nil)
        // 184-byte payload with a 64-byte path and transport codes: 254 bytes
        #expect((try? parse("08" + "00000000" + "60" + String(repeating: "ab", count: 64) + String(repeating: "00", count: 184))) != nil)
        // fuzz: random bytes never trap
        var rng = SplitMix(seed: 7)
        for _ in 0 ..< 5000 {
            let n = Int.random(in: 0 ... 300, using: &rng)
            let bytes = (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            if let p = try? Packet(bytes: bytes) {
                #expect(p.bytes == bytes)
            }
        }
    }

    @Test func buildLimits() throws {
        #expect(throws: AirError.payloadTooLong) {
            try Packet(routeType: .flood, payloadType: .txtMsg, payload: [UInt8](repeating: 0, count: 185))
        }
        // The largest legal packet: transport codes, 64 path bytes, 184 payload bytes = 254 bytes.
        let big = try Packet(routeType: .transportFlood, payloadType: .txtMsg, hashSize: 2,
                             path: [UInt8](repeating: 1, count: 64), payload: [UInt8](repeating: 0, count: 184))
        #expect(big.encodedCount == 254)
        #expect(try Packet(bytes: big.bytes).bytes == big.bytes)
        #expect(throws: AirError.invalidPath) {
            try Packet(routeType: .flood, payloadType: .txtMsg, hashSize: 2, path: [1, 2, 3], payload: [0])
        }
        let p = try Packet(routeType: .transportDirect, payloadType: .grpTxt, transportCodes: TransportCodes(0xE80C, 0x1234),
                           hashSize: 2, path: [1, 2, 3, 4], payload: [9])
        #expect(hexOf(p.bytes) == "170ce83412420102030409")
        var buf = [UInt8](repeating: 0, count: 5)
        #expect(throws: AirError.truncated) { try buf.withUnsafeMutableBytes { b in _ = try p.encode(into: b) } }
        // path room: 1-byte hashes stop at 63 hops
        var q = try Packet(routeType: .flood, payloadType: .ack, path: [UInt8](repeating: 7, count: 63), payload: [1, 2, 3, 4])
        #expect(throws: AirError.invalidPath) { try q.appendHop([8]) }
    }
}

/// Small deterministic generator for tests.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}

@Suite struct PacketEqualityTests {
    @Test func equalityFollowsBytes() throws {
        let raw = hex("0a025f33481e192fbe9a7f09431d92c06963d479b2be40e9")
        let a = try Packet(bytes: raw), b = try Packet(bytes: raw)
        #expect(a == b)
        var c = b
        try c.removeFirstHop()
        #expect(a != c)
        #expect(a.description.contains("direct"))
    }
}
