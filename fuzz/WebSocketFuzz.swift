// libFuzzer target over what a client sends to the hub's WebSocket door (`--companion-ws`): the
// server side of RFC 6455 (MeshNet's WebSocketServer), its HTTP upgrade and its frames. Built by
// fuzz/run.sh together with the MeshNet sources.
//
// Byte 0 picks the read size (1 ... 64 bytes at a time); bit 7 of byte 1 puts a valid upgrade
// request (with an allowed Origin) before the rest, so that the frame decoder is reached, and its
// bit 6 adds an Origin the listener does not allow. Invariants: no trap on any input; the same bytes
// give the same events whether they come at once or in pieces; nothing follows a close; no message
// is over the limit; every message re-sent as a masked client frame to a fresh server comes out as
// the same message.

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

/// SHA-1 is the caller's in MeshNet; any 20 bytes make a handshake here (only its shape matters).
func fakeSHA1(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 20)
    for (i, b) in bytes.enumerated() { out[i % 20] = out[i % 20] &* 31 &+ b }
    return out
}

let maxMessage = 300
let upgrade = Array(("GET /companion HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://allowed.example\r\n\r\n").utf8)
let foreignOrigin = Array(("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
    + "Sec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\nOrigin: http://other.example\r\n\r\n").utf8)

func run(_ input: [UInt8], step: Int) -> [WebSocketServer.Event] {
    var server = WebSocketServer(maxMessage: maxMessage, allowedOrigins: ["http://allowed.example/"], sha1: fakeSHA1)
    var events: [WebSocketServer.Event] = []
    var at = 0
    var closed = false
    while at < input.count {
        let end = min(at + step, input.count)
        let got = input[at..<end].withUnsafeBytes { server.receive($0) }
        fuzzCheck(!closed || got.isEmpty, "nothing follows a close")
        for e in got {
            if case .close = e { closed = true }
            if case .message(let m) = e { fuzzCheck(m.count <= maxMessage, "no message is over the limit") }
        }
        events += got
        at = end
    }
    return events
}

/// A client's frame of `payload`: masked, as a browser sends it.
func clientFrame(_ payload: [UInt8], mask: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x82]
    if payload.count < 126 {
        out.append(0x80 | UInt8(payload.count))
    } else {
        out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    }
    out += mask
    for (i, b) in payload.enumerated() { out.append(b ^ mask[i & 3]) }
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let step = Int(bytes[0] & 0x3F) + 1
    var input: [UInt8] = []
    if bytes[1] & 0x40 != 0 { input += foreignOrigin }
    if bytes[1] & 0x80 != 0 { input += upgrade }
    input += bytes[2...]

    let whole = run(input, step: input.count)
    let pieces = run(input, step: step)
    fuzzCheck(whole == pieces, "the same bytes give the same events, at once or in pieces")

    // The messages, sent again by a well-behaved client, come out the same.
    let messages = whole.compactMap { e -> [UInt8]? in if case .message(let m) = e { return m } else { return nil } }
    if !messages.isEmpty {
        var again = upgrade
        for (i, m) in messages.enumerated() { again += clientFrame(m, mask: [UInt8(i & 0xFF), 0x5A, 0xA5, bytes[0]]) }
        let echoed = run(again, step: step).compactMap { e -> [UInt8]? in if case .message(let m) = e { return m } else { return nil } }
        fuzzCheck(echoed == messages, "a message sent again comes out the same")
    }
    return 0
}

// Seeds: written when the binary runs with FUZZ_WRITE_SEEDS=DIR (fuzz/run.sh does).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInit(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let mask: [UInt8] = [1, 2, 3, 4]
    let seeds: [(String, [UInt8])] = [
        ("upgrade-only", [0x3F, 0x80]),
        ("one-message", [0x07, 0x80] + clientFrame(Array("\u{16}\u{03}".utf8), mask: mask)),
        ("two-messages", [0x00, 0x80] + clientFrame([0x01, 0x03] + Array("mccli".utf8), mask: mask) + clientFrame([0x04], mask: mask)),
        ("ping-close", [0x05, 0x80, 0x89, 0x82] + mask + [0x61 ^ 1, 0x62 ^ 2, 0x88, 0x82] + mask + [0x03 ^ 1, 0xE8 ^ 2]),
        ("fragmented", [0x02, 0x80, 0x02, 0x82] + mask + [9 ^ 1, 8 ^ 2, 0x80, 0x81] + mask + [7 ^ 1]),
        ("long-length", [0x10, 0x80, 0x82, 0xFE, 0x01, 0x00] + mask + [UInt8](repeating: 0, count: 256)),
        ("foreign-origin", [0x3F, 0xC0]),
        ("not-http", [0x01, 0x00] + Array("POST / HTTP/1.0\r\n\r\n".utf8)),
    ]
    for (name, seed) in seeds {
        guard let f = fopen(dir + "/" + name, "wb") else { continue }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
    _exit(0)
}
