import Testing
@testable import MeshCompanion

@Suite struct DecodeTests {
    @Test func randomBytesNeverTrap() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20000 {
            let n = Int.random(in: 0...180, using: &rng)
            var b = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if n > 0 && Bool.random() { b[0] = UInt8.random(in: 0...0x1C) }
            if n > 0 && Bool.random() { b[0] = UInt8.random(in: 0x80...0x90) }
            b.withUnsafeBytes { raw in
                if let f = try? CompanionFrame.decode(raw) { touch(f) }
                if let c = try? CompanionCommand.decode(raw) { _ = c.code }
            }
        }
    }

    @Test func contactRecordLayout() throws {
        var c = Contact(publicKey: keyA, type: .repeater, flags: 1, name: "rpt-1", lastAdvertTimestamp: 1_700_000_000,
                        latitude: 52_000_000, longitude: -1_500_000, lastModified: 1_700_000_100)
        try c.setOutPath(PathLength(hopCount: 2, hashSize: 1)!, [0x5F, 0x33])
        let f = try ResponseFrame.contact(c)
        #expect(f.count == 148)
        let b = f.bytes
        #expect(b[0] == 0x03)
        #expect(Array(b[1..<33]) == keyA.bytes)
        #expect(b[33] == 2 && b[34] == 1 && b[35] == 2 && b[36] == 0x5F && b[37] == 0x33)
        #expect(Array(b[100..<106]) == Array("rpt-1\0".utf8))
        #expect(Array(b[132..<136]) == hex("00f15365"))
        try decoded(f) { frame in
            guard case .contact(let r) = frame else { throw Unexpected(what: "\(frame)") }
            #expect(r.contact == c)
            #expect(Array(r.outPath) == [0x5F, 0x33])
        }
    }
}

func touch(_ f: CompanionFrame) {
    switch f {
    case .contact(let r), .newAdvert(let r): _ = r.name; _ = r.outPath.count; _ = r.contact
    case .selfInfo(let s): _ = s.name; _ = s.radio; _ = s.publicKey
    case .deviceInfo(let d): _ = d.model; _ = d.version; _ = d.buildDate; _ = d.pathHashMode; _ = d.maxContacts
    case .contactMessage(let m): _ = m.text; _ = m.authorPrefix; _ = m.senderPrefix; _ = m.snr
    case .channelMessage(let m): _ = m.text; _ = m.sender; _ = m.message
    case .channelInfo(let c): _ = c.name; _ = c.isEmpty
    case .channelData(let c): _ = c.data.count
    case .advertPath(let a): _ = a.path.count
    case .allowedRepeatFrequencies(let r): for x in r { _ = x }
    case .defaultFloodScope(let s): _ = s?.name; _ = s?.key.count
    case .cliReply(let t): _ = t.count
    case .rawData(let r): _ = r.payload.count
    case .statusResponse(let s): _ = s.stats; _ = s.prefix
    case .logRxData(let l): _ = l.packet.count
    case .traceData(let t): _ = t.pathHashes.count; _ = t.pathSNRs.count; _ = t.finalSNRQuarterDb
    case .telemetryResponse(let t):
        var r = t.lpp
        while let x = try? r.next() { _ = x }
    case .binaryResponse(let b): _ = b.data.count
    case .pathDiscoveryResponse(let p): _ = p.outPath.count; _ = p.inPath.count
    case .controlData(let c): _ = c.payload.count
    default: _ = f.code
    }
}
