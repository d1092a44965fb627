import MeshNet
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshAir
@testable import MeshHub
import MeshLink
import MeshOps

@Suite struct WebSocketTests {
    func feed(_ ws: inout WebSocketServer, _ bytes: [UInt8]) -> [WebSocketServer.Event] {
        bytes.withUnsafeBytes { ws.receive($0) }
    }

    @Test func theRFCHandshakeVector() {
        // RFC 6455 section 1.3.
        #expect(WebSocketServer.accept(key: "dGhlIHNhbXBsZSBub25jZQ==", sha1: SHA1.digest) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocketServer.base64(Array("f".utf8)) == "Zg==" && WebSocketServer.base64(Array("fo".utf8)) == "Zm8=")
    }

    @Test func upgradeThenMaskedMessagesPingAndClose() {
        var ws = WebSocketServer(sha1: SHA1.digest)
        let request = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        // The RFC's masked "Hello" (section 5.7), in the same read as the request's end.
        let hello: [UInt8] = [0x82, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        let events = feed(&ws, Array(request.utf8) + hello)
        guard case .write(let answer) = events.first else { Issue.record("no answer"); return }
        #expect(String(decoding: answer, as: UTF8.self).contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        #expect(events.dropFirst().first == .message(Array("Hello".utf8)))
        // A fragmented message, split across reads at every byte.
        let part1: [UInt8] = [0x02, 0x83, 1, 2, 3, 4, 0x48 ^ 1, 0x65 ^ 2, 0x6c ^ 3]  // header, mask, masked "Hel"
        let part2: [UInt8] = [0x80, 0x82, 0, 0, 0, 0, 0x6c, 0x6f]
        var got: [WebSocketServer.Event] = []
        for b in part1 + part2 { got += feed(&ws, [b]) }
        #expect(got == [.message(Array("Hello".utf8))])
        // A ping is answered with a pong carrying the same bytes.
        #expect(feed(&ws, [0x89, 0x81, 0, 0, 0, 0, 7]) == [.write([0x8A, 0x01, 7])])
        // A close frame is echoed, then the connection is over.
        let close = feed(&ws, [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE8])
        #expect(close.first == .write([0x88, 0x02, 0x03, 0xE8]))
        if case .close = close.last {} else { Issue.record("not closed") }
    }

    @Test(arguments: [
        [UInt8](arrayLiteral: 0x82, 0x05, 1, 2, 3, 4, 5),                      // not masked
        [UInt8](arrayLiteral: 0x81, 0x81, 0, 0, 0, 0, 0x41),                   // text
        [UInt8](arrayLiteral: 0xC2, 0x81, 0, 0, 0, 0, 1),                      // reserved bit
        [UInt8](arrayLiteral: 0x82, 0xFE, 0x10, 0x00, 0, 0, 0, 0),             // 4096 bytes: over the limit
    ])
    func protocolErrorsClose(frame: [UInt8]) {
        var ws = WebSocketServer(sha1: SHA1.digest)
        _ = feed(&ws, Array("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let events = feed(&ws, frame)
        if case .close = events.last {} else { Issue.record("not closed: \(events)") }
    }

    @Test func notAnUpgradeIsA400() {
        var ws = WebSocketServer(sha1: SHA1.digest)
        let events = feed(&ws, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        guard case .write(let answer) = events.first else { Issue.record("no answer"); return }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 400"))
    }

    static func upgrade(origin: String?) -> [UInt8] {
        Array(("GET / HTTP/1.1\r\nHost: 127.0.0.1:5001\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + (origin.map { "Origin: \($0)\r\n" } ?? "")
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    @Test func anOriginNotAllowedIsA403AndNoOriginIsAccepted() {
        // A page in a local browser: refused unless its origin was named.
        var page = WebSocketServer(sha1: SHA1.digest)
        let refused = feed(&page, Self.upgrade(origin: "http://evil.example"))
        guard case .write(let answer) = refused.first else { Issue.record("no answer"); return }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 403"))
        if case .close = refused.last {} else { Issue.record("not closed: \(refused)") }
        #expect(!page.open)
        // The origin named (case and a trailing slash aside) is accepted; others still are not.
        var allowed = WebSocketServer(allowedOrigins: ["http://localhost:8080/"], sha1: SHA1.digest)
        guard case .write(let ok) = feed(&allowed, Self.upgrade(origin: "HTTP://localhost:8080")).first else { Issue.record("no answer"); return }
        #expect(String(decoding: ok, as: UTF8.self).hasPrefix("HTTP/1.1 101") && allowed.open)
        var other = WebSocketServer(allowedOrigins: ["http://localhost:8080"], sha1: SHA1.digest)
        guard case .write(let no) = feed(&other, Self.upgrade(origin: "http://localhost:8081")).first else { Issue.record("no answer"); return }
        #expect(String(decoding: no, as: UTF8.self).hasPrefix("HTTP/1.1 403"))
        // No Origin header: not a browser page.
        var tool = WebSocketServer(sha1: SHA1.digest)
        _ = feed(&tool, Self.upgrade(origin: nil))
        #expect(tool.open)
    }

    @Test func aMessageIsExactlyOneCompanionFrame() {
        // With its header (length matching) or bare.
        #expect(HubServer.frame(inWebSocketMessage: [0x3C, 0x01, 0x00, 0x05]) == [0x05])
        #expect(HubServer.frame(inWebSocketMessage: [0x05]) == [0x05])
        // GET_ALLOWED_REPEAT_FREQ (0x3C) bare is a frame too.
        #expect(HubServer.frame(inWebSocketMessage: [0x3C]) == [0x3C])
        // Two frames in one message: refused (it ran as a command 0x3C).
        #expect(HubServer.frame(inWebSocketMessage: [0x3C, 0x01, 0x00, 0x05, 0x3C, 0x01, 0x00, 0x0A]) == nil)
        // A header whose length does not match, empty, or over the companion maximum.
        #expect(HubServer.frame(inWebSocketMessage: [0x3C, 0x05, 0x00, 0x05]) == nil)
        #expect(HubServer.frame(inWebSocketMessage: []) == nil)
        #expect(HubServer.frame(inWebSocketMessage: [UInt8](repeating: 1, count: 177)) == nil)
    }

    @Test func aPartialRequestOrFrameIsSeen() {
        var ws = WebSocketServer(sha1: SHA1.digest)
        #expect(!ws.hasPartial)
        _ = feed(&ws, Array("GET / HTTP/1.1\r\n".utf8))
        #expect(ws.hasPartial)
        _ = feed(&ws, Array(Self.upgrade(origin: nil).dropFirst(16)))
        #expect(ws.open && !ws.hasPartial)
        _ = feed(&ws, [0x82, 0x85, 0, 0])
        #expect(ws.hasPartial)
    }
}
