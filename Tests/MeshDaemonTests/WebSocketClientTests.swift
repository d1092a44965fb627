import MeshNet
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshAir
import MeshLink
import MeshOps

/// The client side of MQTT over WebSocket: the upgrade, the server's answer, frames both ways.
@Suite struct WebSocketClientTests {
    // RFC 6455 section 1.3: this key's accept value.
    let key = "dGhlIHNhbXBsZSBub25jZQ=="
    var answer: [UInt8] {
        Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n").utf8)
    }

    /// Unmasks a client frame: (opcode, payload).
    func unmask(_ f: [UInt8]) -> (UInt8, [UInt8]) {
        #expect(f[0] & 0x80 != 0 && f[1] & 0x80 != 0)
        var n = Int(f[1] & 0x7F)
        var at = 2
        if n == 126 { n = Int(f[2]) << 8 | Int(f[3]); at = 4 } else if n == 127 { n = 0; for i in 2..<10 { n = n << 8 | Int(f[i]) }; at = 10 }
        let mask = Array(f[at..<(at + 4)])
        #expect(f.count == at + 4 + n)
        return (f[0] & 0x0F, f[(at + 4)...].enumerated().map { $0.element ^ mask[$0.offset & 3] })
    }

    @Test func theUpgradeRequestAndAnswer() throws {
        var ws = WebSocketClient(key: key, sha1: SHA1.digest)
        let req = String(decoding: ws.request(host: "broker.example", port: 443, path: "/mqtt", defaultPort: 443), as: UTF8.self)
        #expect(req.hasPrefix("GET /mqtt HTTP/1.1\r\nHost: broker.example\r\n") && req.hasSuffix("\r\n\r\n"))
        #expect(req.contains("Sec-WebSocket-Key: \(key)\r\n") && req.contains("Sec-WebSocket-Protocol: mqtt\r\n") && req.contains("Sec-WebSocket-Version: 13\r\n"))
        let other = String(decoding: ws.request(host: "::1", port: 8080, path: "", defaultPort: 80), as: UTF8.self)
        #expect(other.hasPrefix("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n"))
        // The answer and a first binary frame (a CONNACK) in one read, split at every byte too.
        let connack: [UInt8] = [0x82, 0x04, 0x20, 0x02, 0x00, 0x00]
        #expect(try ws.receive(answer + connack) == [.message([0x20, 0x02, 0x00, 0x00])])
        #expect(ws.open)
        var slow = WebSocketClient(key: key, sha1: SHA1.digest)
        var events: [WebSocketClient.Event] = []
        for b in answer + connack { events += try slow.receive([b]) }
        #expect(events == [.message([0x20, 0x02, 0x00, 0x00])])
    }

    @Test func framesToTheServerAreMaskedAtEveryLength() {
        var ws = WebSocketClient(key: key, sha1: SHA1.digest)
        for n in [0, 1, 125, 126, 65_535, 65_536] {
            let payload = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let (op, got) = unmask(ws.frame(payload))
            #expect(op == 2 && got == payload, "\(n) bytes")
        }
    }

    @Test func fragmentsPingsAndClose() throws {
        var ws = WebSocketClient(key: key, sha1: SHA1.digest)
        _ = try ws.receive(answer)
        // A message in two fragments; a ping between them is answered at once (masked pong).
        let events = try ws.receive([0x02, 0x02, 1, 2, 0x89, 0x01, 9, 0x80, 0x01, 3])
        #expect(events.count == 2)
        if case .send(let pong) = events[0] { #expect(unmask(pong) == (0xA, [9])) } else { Issue.record("no pong: \(events)") }
        #expect(events[1] == .message([1, 2, 3]))
        #expect(try ws.receive([0x88, 0x04, 0x03, 0xE8, 0x6F, 0x6B]) == [.closed("the server closed the WebSocket (1000, ok)")])
    }

    @Test(arguments: [
        "HTTP/1.1 404 Not Found\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: wrong=\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
    ])
    func badAnswersSayWhy(head: String) {
        var ws = WebSocketClient(key: key, sha1: SHA1.digest)
        #expect(throws: MQTTError.self) { _ = try ws.receive(Array(head.utf8)) }
    }

    @Test func badFramesAreErrorsNotTraps() throws {
        for bad: [UInt8] in [[0x82, 0x81, 0, 0, 0, 0, 1], [0xC2, 0x00], [0x83, 0x00], [0x82, 0x7F, 0xFF, 0, 0, 0, 0, 0, 0, 0],
                             [0x02, 0x01, 1, 0x82, 0x01, 2], [0x89, 0x7E, 0x00, 0x80]] {
            var ws = WebSocketClient(key: key, sha1: SHA1.digest)
            _ = try ws.receive(answer)
            #expect(throws: MQTTError.self, "\(bad)") { _ = try ws.receive(bad) }
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var ws = WebSocketClient(key: key, sha1: SHA1.digest)
            _ = try ws.receive(answer)
            let junk = (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? ws.receive(junk)
        }
    }
}
