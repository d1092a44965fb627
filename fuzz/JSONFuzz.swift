// libFuzzer target over the local API's request lines: JSONParser, DaemonRequest.parse, the
// response reader, and the companion-stream deframer of the tunnel. Built by fuzz/run.sh together
// with the MeshDaemon sources.
//
// Invariants: no trap on any input; parsed JSON re-serialises on one line and re-parses equal (and
// serialises the same again); a request that parses re-parses from its own line with the same id,
// op and name; the deframer yields frames within the size limit.

import Glibc
import MeshCompanion

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
        for key in ["name", "text", "to", "limit", "json", "since"] {
            fuzzSink &+= ((try? r.string(key))?.utf8.count ?? 0) &+ Int(truncatingIfNeeded: (try? r.optionalInt(key)) ?? 0)
            fuzzSink &+= ((try? r.flag(key)) ?? false) ? 1 : 0
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
    for (name, text) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(text, 1, text.utf8.count, f)
        fclose(f)
    }
    _exit(0)
}
