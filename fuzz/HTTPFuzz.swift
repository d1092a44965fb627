// libFuzzer target over what a browser (or anyone) sends to the web console's door (`--web`):
// MeshNet's HTTPRequestParser, then, for a request that upgrades, the WebSocket frames after it in
// the JSON door's text mode. Built by fuzz/run.sh together with the MeshNet sources.
//
// Byte 0 picks the read size (1 ... 64 bytes at a time); bit 7 of byte 1 puts a valid request head
// before the rest (so the body and the frames are reached), bit 6 makes it a POST with a body length.
// Invariants: no trap on any input; the same bytes give the same outcome at once or in pieces; a
// request's head is within the limits and its body is exactly its Content-Length; a request written
// out again parses to the same request; nothing is parsed after an outcome.

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

func fakeSHA1(_ bytes: [UInt8]) -> [UInt8] { [UInt8](repeating: 7, count: 20) }

var limits: HTTPRequestParser.Limits {
    var l = HTTPRequestParser.Limits()
    l.maxHead = 1024
    l.maxRequestLine = 256
    l.maxBody = 300
    return l
}

func run(_ input: [UInt8], step: Int) -> (HTTPRequestParser.Outcome, [UInt8]) {
    var p = HTTPRequestParser(limits: limits)
    var at = 0
    var outcome = HTTPRequestParser.Outcome.needMore
    while at < input.count {
        let end = min(at + step, input.count)
        let got = input[at..<end].withUnsafeBytes { p.receive($0) }
        if outcome != .needMore { fuzzCheck(got == .needMore, "nothing is parsed after an outcome") } else { outcome = got }
        at = end
    }
    return (outcome, p.leftover)
}

func written(_ r: HTTPRequest) -> [UInt8] {
    var head = "\(r.method) \(r.path)\(r.query.isEmpty ? "" : "?" + r.query) HTTP/1.1\r\n"
    for (k, v) in r.headers.sorted(by: { $0.key < $1.key }) { head += "\(k): \(v)\r\n" }
    return Array((head + "\r\n").utf8) + r.body
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let step = Int(bytes[0] & 0x3F) + 1
    var input: [UInt8] = []
    if bytes[1] & 0x80 != 0 {
        input += Array((bytes[1] & 0x40 != 0 ? "POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: \(Int(bytes[1] & 0x3F) * 5)\r\n\r\n"
                                                : "GET /api HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n").utf8)
    }
    input += bytes[2...]
    let (whole, rest) = run(input, step: input.count)
    let (pieces, restPieces) = run(input, step: step)
    fuzzCheck(whole == pieces, "the same bytes give the same outcome, at once or in pieces")
    fuzzCheck(rest == restPieces, "the same bytes are left over")
    if case .request(let r) = whole {
        fuzzCheck(r.body.count == Int(r.header("content-length") ?? "0") ?? -1, "the body is its Content-Length")
        fuzzCheck(r.body.count <= limits.maxBody, "the body is within its limit")
        fuzzCheck(r.path.hasPrefix("/"), "the target is a path")
        // Written out again (a repeated field was joined into one), it parses the same.
        let again = run(written(r), step: step).0
        if case .request(let r2) = again { fuzzCheck(r2 == r, "a request written again parses the same") }
        // The frames after an upgrade, in the JSON door's text mode.
        var ws = WebSocketServer(maxMessage: 200, textMessages: true, open: true, sha1: fakeSHA1)
        let events = rest.withUnsafeBytes { ws.receive($0) }
        for e in events { if case .message(let m) = e { fuzzCheck(m.count <= 200, "no message is over the limit") } }
    }
    return 0
}

// Seeds: written when the binary runs with FUZZ_WRITE_SEEDS=DIR (fuzz/run.sh does).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInit(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let seeds: [(String, [UInt8])] = [
        ("get-page", [0x3F, 0x00] + Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip\r\n\r\n".utf8)),
        ("login-form", [0x05, 0x42] + Array("password=x".utf8)),
        ("upgrade-frame", [0x02, 0x80] + Array("Connection: Upgrade\r\n\r\n".utf8) + [0x81, 0x82, 1, 2, 3, 4, 0x7A, 0x7D]),
        ("chunked", [0x07, 0x00] + Array("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)),
        ("http10", [0x01, 0x00] + Array("GET /whoami?a=1 HTTP/1.0\r\nCookie: pm_session=ab\r\n\r\n".utf8)),
    ]
    for (name, seed) in seeds {
        guard let f = fopen(dir + "/" + name, "wb") else { continue }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
    _exit(0)
}
