import Glibc
import MeshCompanion
@testable import MeshDaemonClient
import Testing
@testable import MeshOps
@testable import MeshSession

/// The executor against a scripted radio: what it asks the radio and how it reads the answers.
@Suite struct ExecutorTests {
    func connected() throws -> (Radio, ScriptedRadio, Executor) {
        let (radio, peer) = makePair(oneShot: true)
        try radio.connect(timeoutMilliseconds: 2_000)
        var rpt = contactFrame(key: keyA, name: "rpt", lastmod: 1)
        rpt[33] = 2  // a repeater: `cmd` sends it text type 1 (a companion gets type 3, protocol 14)
        peer.answers[0x04] = [[0x02] + le32(1), rpt, [0x04] + le32(1)]
        return (radio, peer, Executor(radio: radio, timeout: 500))
    }

    func close(_ radio: Radio, _ peer: ScriptedRadio) {
        radio.loop.unregister(fd: peer.fd)
        Glibc.close(peer.fd)
    }

    @Test(arguments: [Request.send(to: "rpt", text: "", wait: true), .send(to: "rpt", text: "", wait: false), .channelSend("0", text: "")])
    func emptyTextIsAUsageErrorAndNothingIsSent(_ request: Request) throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        let before = peer.received.count
        do { _ = try exec.execute(request); Issue.record("expected a usage error") } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.hasSuffix("."))
        }
        #expect(peer.received.count == before, "a frame went to the radio: \(peer.received.dropFirst(before))")
    }

    @Test func neighboursAskForKeyPrefixesAndReadEveryPage() throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        // 13 neighbours: a firmware page carries at most 130 bytes of entries (11 of 6 + 5 bytes).
        let keys: [[UInt8]] = (0..<13).map { i in [0xC0, UInt8(i), 1, 2, 3, 4] }
        var requests: [[UInt8]] = []
        peer.respond = { f in
            guard f.first == 0x32, f.count > 33 else { return nil }
            let data = Array(f[33...])
            requests.append(data)
            let count = Int(data[2]), offset = Int(data[3]) | Int(data[4]) << 8, prefixLength = Int(data[6])
            var entries: [UInt8] = []
            var n = 0
            for k in keys.dropFirst(offset).prefix(count) where entries.count + prefixLength + 5 <= 130 {
                entries += Array((k + [UInt8](repeating: 0xEE, count: 32)).prefix(prefixLength)) + le32(UInt32(10 + n)) + [UInt8(bitPattern: -6)]
                n += 1
            }
            let tag = le32(0x1234_5678 + UInt32(offset))
            return [[0x06, 0] + tag + le32(1_000),
                    [0x8C, 0] + tag + [UInt8(keys.count), 0, UInt8(n), 0] + entries]
        }
        let v = try exec.execute(.neighbours("rpt")).value
        #expect(requests.count == 2)
        for r in requests {
            #expect(r.count == 11)
            #expect(Array(r[0..<2]) == [0x06, 0x00])
            #expect(r[2] > 0, "asks for no neighbours")
            #expect(r[6] >= 4, "key prefixes of \(r[6]) bytes")
        }
        #expect(requests.map { Int($0[3]) | Int($0[4]) << 8 } == [0, 11])
        #expect(v["name"] == .string("rpt"))
        #expect(v["total"] == .int(13))
        guard case .array(let list)? = v["neighbours"] else { Issue.record("no neighbour list: \(v)"); return }
        #expect(list.count == 13)
        #expect(list.first?["prefix"] == .hex(keys[0]))
        #expect(list.last?["prefix"] == .hex(keys[12]))
        #expect(list.first?["heard_s_ago"] == .int(10))
        #expect(list.first?["snr"] == .double(-1.5))
    }

    /// A radio whose queue holds `queue` (answered one by one to SYNC_NEXT_MESSAGE); a text
    /// command gets SENT (est 100 ms) and, when `announce`, MSG_WAITING.
    func scriptQueue(_ peer: ScriptedRadio, _ queue: [[UInt8]], announce: Bool) -> () -> Int {
        var q = queue
        var syncs = 0
        peer.respond = { f in
            switch f.first {
            case 0x02: return [[0x06, 0] + le32(77) + le32(100)] + (announce ? [[0x83]] : [])
            case 0x0A:
                syncs += 1
                return q.isEmpty ? [[0x0A]] : [q.removeFirst()]
            default: return nil
            }
        }
        return { syncs }
    }

    func textFrame(from key: [UInt8], _ text: String, type: TextType) throws -> [UInt8] {
        try ResponseFrame.contactMessage(senderPrefix: KeyPrefix(Array(key.prefix(6)))!, pathLength: PathLength(rawValue: 0),
                                         textType: type, senderTimestamp: 1_700_000_000, text: Array(text.utf8)).bytes
    }

    @Test(arguments: [true, false])
    func repeaterCommandTakesItsReplyFromTheQueue(announced: Bool) throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        radio.onEvent = { if case .message(let m) = $0 { exec.collect(m) } }
        let other = try textFrame(from: keyB, "hello", type: .plain)
        let reply = try textFrame(from: keyA, "v1.17.1", type: .cliData)
        let syncs = scriptQueue(peer, [other, reply], announce: announced)
        let out = try exec.execute(.command("rpt", text: "ver"))
        #expect(out.error == nil)
        #expect(out.value["reply"] == .string("v1.17.1"))
        // The message ahead of the reply left the radio too: it is in the result, not lost.
        guard case .array(let ms)? = out.value["messages"] else { Issue.record("no messages field: \(out.value)"); return }
        #expect(ms.count == 1)
        #expect(ms.first?["text"] == .string("hello"))
        #expect(syncs() == 3, "the drain did not run to NO_MORE_MESSAGES")
        #expect(exec.collected.isEmpty)
    }

    @Test func repeaterCommandWithoutReplyTimesOut() throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        radio.onEvent = { if case .message(let m) = $0 { exec.collect(m) } }
        _ = scriptQueue(peer, [], announce: false)
        let out = try exec.execute(.command("rpt", text: "ver"))
        #expect(out.error?.exitCode == 4)
        #expect(out.value["reply"] == .null)
    }

    @Test func telemetryReadsAsUnitsNotDebugText() throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        let code = CommandFrame.sendTelemetryRequest(nil).bytes[0]
        // voltage 4.15 V and temperature 21.5 °C on channel 1, a GPS fix on channel 2.
        // Then a type this version does not know (0xF0): the rest is kept, not dropped.
        let lpp: [UInt8] = [1, 116, 0x01, 0x9F, 1, 103, 0x00, 0xD7, 2, 136, 0x07, 0xEF, 0x40, 0xFF, 0xC5, 0x68, 0x00, 0x03, 0xE8,
                            3, 0xF0, 1, 2, 3]
        peer.answers[code] = [[0x8B, 0] + Array(keyA.prefix(6)) + lpp]
        let v = try exec.execute(.telemetry(nil)).value
        guard case .array(let records)? = v["records"] else { Issue.record("no records: \(v)"); return }
        #expect(records.map { $0["text"] } == [.string("voltage (channel 1): 4.15 V"), .string("temperature (channel 1): 21.5 °C"),
                                                .string("gps (channel 2): latitude 52.0000°, longitude -1.5000°, altitude 10.00 m")])
        #expect(records.first?["value"] == .double(4.15))
        #expect(records.first?["unit"] == .string("V"))
        #expect(records.last?["latitude"] == .double(52))
        #expect(v["undecoded"] == .hex([3, 0xF0, 1, 2, 3]))
        for r in records {
            #expect(!r.json.contains("LPP") && !r.json.contains("MeshCompanion"), "debug text: \(r.json)")
        }
    }

    /// The contact listing holds keyA as a favourite repeater with a location, a 2-hop path and an
    /// advert time; ADD_UPDATE_CONTACT frames are recorded.
    func contactsScript(_ peer: ScriptedRadio) -> () -> [[UInt8]] {
        var rec = contactFrame(key: keyA, name: "rpt", lastmod: 1)
        rec[33] = 2; rec[34] = 0x01; rec[35] = 2; rec[36] = 0x5F; rec[37] = 0x33
        rec.replaceSubrange(132..<144, with: le32(1_650_000_000) + le32(UInt32(bitPattern: 52_370_000)) + le32(UInt32(bitPattern: -4_890_000)))
        peer.answers[0x04] = [[0x02] + le32(1), rec, [0x04] + le32(1)]
        var adds: [[UInt8]] = []
        peer.respond = { f in
            guard f.first == 0x09 else { return nil }
            adds.append(f)
            return [[0x00]]
        }
        return { adds }
    }

    @Test func readdingAContactKeepsWhatTheRadioKnows() throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        let adds = contactsScript(peer)
        _ = try exec.execute(.contactAdd(publicKey: Hex.encode(keyA), name: "rpt-new", type: nil, path: nil))
        let f = try #require(adds().last)
        #expect(Array(f[1..<33]) == keyA)
        #expect(f[33] == 2, "type")
        #expect(f[34] == 0x01, "flags")
        #expect(Array(f[35..<38]) == [2, 0x5F, 0x33], "path")
        #expect(String(decoding: f[100..<132].prefix { $0 != 0 }, as: UTF8.self) == "rpt-new")
        #expect(readLE32(f, 132) == 1_650_000_000, "last advert")
        #expect(Int32(bitPattern: readLE32(f, 136)) == 52_370_000 && Int32(bitPattern: readLE32(f, 140)) == -4_890_000, "location")
        // What the user gives replaces it: an empty path floods, a type is set.
        _ = try exec.execute(.contactAdd(publicKey: Hex.encode(keyA), name: "rpt", type: 3, path: ""))
        let g = try #require(adds().last)
        #expect(g[33] == 3 && g[34] == 0x01 && g[35] == 0xFF && readLE32(g, 132) == 1_650_000_000)
    }

    @Test func aNewContactHasNoAdvertTimeFromThisHost() throws {
        let (radio, peer, exec) = try connected()
        defer { close(radio, peer) }
        let adds = contactsScript(peer)
        _ = try exec.execute(.contactAdd(publicKey: Hex.encode(keyB), name: "bob", type: nil, path: "a1b2"))
        let f = try #require(adds().last)
        #expect(Array(f[1..<33]) == keyB)
        #expect(f[33] == 1 && f[34] == 0)
        #expect(Array(f[35..<38]) == [2, 0xA1, 0xB2])
        #expect(readLE32(f, 132) == 0, "last_advert ahead of the node's clock makes the radio drop its adverts as replays")
        #expect(readLE32(f, 136) == 0 && readLE32(f, 140) == 0)
    }
}
