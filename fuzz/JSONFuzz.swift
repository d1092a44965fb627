// libFuzzer target over the local API's request lines: JSONParser, DaemonRequest.parse, the
// response reader, and the companion-stream deframer of the tunnel; and over what a broker sends
// through the WebSocket client. Built by fuzz/run.sh together
// with the MeshDaemon sources.
//
// Invariants: no trap on any input; parsed JSON re-serialises on one line and re-parses equal (and
// serialises the same again); a request that parses re-parses from its own line with the same id,
// op and name; an operation's fields decode by the operation table (OperationValues) into a request
// of at least its op's class, or into a usage error; the deframer yields frames within the size limit; the WebSocket client opens on a
// valid upgrade answer and yields messages within its limit and control answers of one small frame.

import Glibc
import MeshAir
import MeshCompanion
import MeshDaemonClient
import MeshNet
import MeshOps
import MeshSession

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

var fuzzSink = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let line = UnsafeRawBufferPointer(start: data, count: size)

    if let v = try? JSONParser.parse(line) {
        let text = v.text
        fuzzCheck(!text.utf8.contains(0x0A), "serialised JSON is one line")
        guard let again = try? JSONParser.parse(text) else { fuzzCheck(false, "serialised JSON re-parses"); return 0 }
        fuzzCheck(again == v, "serialised JSON re-parses equal")
        fuzzCheck(again.text == text, "serialisation is stable")
        fuzzSink &+= Int(truncatingIfNeeded: v.int ?? 0) &+ (v.array?.count ?? 0) &+ (v["op"]?.string?.utf8.count ?? 0)
        if let r = DaemonResponse(json: v) { fuzzSink &+= Int(truncatingIfNeeded: r.id) &+ (r["x"] == nil ? 0 : 1) }
    }

    switch DaemonRequest.parse(line: line) {
    case .success(let r):
        var copy = Array(r.line.utf8)
        let again = copy.withUnsafeMutableBytes { DaemonRequest.parse(line: UnsafeRawBufferPointer($0)) }
        guard case .success(let a) = again else { fuzzCheck(false, "a request re-parses from its line"); return 0 }
        fuzzCheck(a.id == r.id && a.op == r.op && a.name == r.name, "a request re-parses the same")
        if r.op != .operation {
            // A daemon-answered op's fields by its row: values, or a usage error.
            do throws(ClientError) {
                let v = try r.values()
                fuzzSink &+= v.values.count &+ (v.string("to")?.utf8.count ?? 0) &+ Int(truncatingIfNeeded: v["limit"]?.intValue ?? 0)
            } catch {
                fuzzCheck(error.kind == .usage, "bad fields of a daemon op are a usage error")
            }
        }
        if r.op == .operation, case .object(let pairs) = r.args {
            var fields: [String: Value] = [:]
            for (k, v) in pairs { fields[k] = v }
            do throws(ClientError) {
                let request = try Request(apiOp: r.name, fields: fields)
                if let row = OperationTable.row(api: r.name), let least = row.opClass {
                    fuzzCheck(least <= row.operationClass(of: request), "a request's class is at least its op's")
                }
            } catch {
                fuzzCheck(error.kind == .usage, "bad fields are a usage error")
            }
        }
    case .failure(let f):
        fuzzSink &+= Int(truncatingIfNeeded: f.id) &+ f.error.json.text.utf8.count
    }

    // The same bytes as a companion stream through the tunnel's deframer.
    var deframer = StreamDeframer(marker: 0x3E)
    deframer.feed(line) { frame in
        fuzzCheck(frame.count >= 1 && frame.count <= StreamDeframer.maxFrame, "deframed frame size")
        fuzzSink &+= frame.count
    }

    // The same bytes as what a broker sends over ws:// or wss:// (WebSocketClient): frames after a
    // valid upgrade answer, from byte 1 on in pieces of 1...31 bytes (byte 0 picks the size), and the server's
    // HTTP answer itself.
    let bytes = Array(line)
    let key = "dGhlIHNhbXBsZSBub25jZQ=="
    let answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Accept: \(WebSocketServer.accept(key: key, sha1: SHA1.digest))\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"
    var ws = WebSocketClient(key: key, sha1: SHA1.digest)
    do throws(MQTTError) {
        let first = try ws.receive(Array(answer.utf8))
        fuzzCheck(ws.open && first.isEmpty, "a valid upgrade answer opens the client")
        let step = max(1, Int(bytes.first ?? 1) & 0x1F)
        var at = min(1, bytes.count)
        while at < bytes.count {
            let end = min(at + step, bytes.count)
            for e in try ws.receive(Array(bytes[at..<end])) {
                switch e {
                case .message(let m): fuzzCheck(m.count <= WebSocketClient.maxMessage, "a message within the limit")
                case .send(let b): fuzzCheck(b.count <= 2 + 4 + 125, "a control answer is one small frame")
                case .closed: break
                }
            }
            at = end
        }
    } catch {
        fuzzSink &+= error.description.utf8.count
    }
    var raw = WebSocketClient(key: key, sha1: SHA1.digest)
    if let events = try? raw.receive(bytes) { fuzzSink &+= events.count }
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let seeds: [(String, String)] = [
        ("ping", #"{"id":1,"op":"ping"}"#),
        ("status", #"{"id":2,"op":"status"}"#),
        ("send", #"{"id":3,"op":"send","to":"Alice","text":"Hi \"there\"\n\u00e9\ud83d\ude00"}"#),
        ("history", #"{"id":4,"op":"history","name":"Public","limit":20,"before":null}"#),
        ("subscribe", #"{"id":5,"op":"subscribe","since":12345678901}"#),
        ("operation", #"{"id":6,"op":"contacts_remove","name":"Bob","json":true}"#),
        ("numbers", #"{"id":-7.0,"op":"ping","x":[1,-2.5e-3,1E+20,0.1,-0,123456789012345678]}"#),
        ("nested", #" {"id":8,"op":"ping","a":{"b":[{"c":[[[true,false,null]]]}]}} "#),
        ("bad", #"{"id":9,"op":"nope"}"#),
        ("tunnel", ">\u{3}\u{0}\u{5}\u{1}\u{2}"),
    ]
    var all = seeds.map { ($0.0, Array($0.1.utf8)) }
    // WebSocket frames from a server: a binary message, one in two fragments with a ping between,
    // a 126-byte message (16-bit length), and a close with code 1000.
    var ws: [UInt8] = [0x01, 0x82, 0x02, 0x20, 0x00]
    ws += [0x02, 0x02, 0x30, 0x01, 0x89, 0x01, 0x70, 0x80, 0x01, 0x31]
    ws += [0x82, 126, 0x00, 126] + [UInt8](repeating: 0x41, count: 126)
    ws += [0x88, 0x02, 0x03, 0xE8]
    all.append(("websocket", ws))
    for (name, bytes) in all {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    _exit(0)
}
