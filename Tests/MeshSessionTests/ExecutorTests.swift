import Glibc
import MeshCompanion
import Testing
@testable import MeshSession

/// The executor against a scripted radio: what it asks the radio and how it reads the answers.
@Suite struct ExecutorTests {
    func connected() throws -> (Radio, ScriptedRadio, Executor) {
        let (radio, peer) = makePair(oneShot: true)
        try radio.connect(timeoutMilliseconds: 2_000)
        peer.answers[0x04] = [[0x02] + le32(1), contactFrame(key: keyA, name: "rpt", lastmod: 1), [0x04] + le32(1)]
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
        let lpp: [UInt8] = [1, 116, 0x01, 0x9F, 1, 103, 0x00, 0xD7, 2, 136, 0x07, 0xEF, 0x40, 0xFF, 0xC5, 0x68, 0x00, 0x03, 0xE8]
        peer.answers[code] = [[0x8B, 0] + Array(keyA.prefix(6)) + lpp]
        let v = try exec.execute(.telemetry(nil)).value
        guard case .array(let records)? = v["records"] else { Issue.record("no records: \(v)"); return }
        #expect(records.map { $0["text"] } == [.string("voltage (channel 1): 4.15 V"), .string("temperature (channel 1): 21.5 °C"),
                                                .string("gps (channel 2): latitude 52.0000°, longitude -1.5000°, altitude 10.00 m")])
        #expect(records.first?["value"] == .double(4.15))
        #expect(records.first?["unit"] == .string("V"))
        #expect(records.last?["latitude"] == .double(52))
        for r in records {
            #expect(!r.json.contains("LPP") && !r.json.contains("MeshCompanion"), "debug text: \(r.json)")
        }
    }
}
