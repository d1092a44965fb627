// libFuzzer target over simulator topology files (`sim --topology FILE`): JSON decoding and
// validation. Built by fuzz/run.sh together with the MeshSim sources.
//
// Invariants: no trap on any input; a topology that decodes and validates encodes to JSON that
// decodes and validates again, equal.

import Glibc
import MeshNet

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: size))
    guard let t = try? Topology.decode(json: bytes) else { return 0 }
    let again = try? Topology.decode(json: Array(t.json.text.utf8))
    fuzzCheck(again == t, "a valid topology re-decodes equal")
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let doc = ##"{ "nodes": [ {"name": "alice", "role": "companion"}, {"name": "r1", "role": "repeater", "password": "secret", "guest_password": "guest", "regions": ["#north"], "volatile_clock": true} ], "links": [ {"a": "alice", "b": "r1", "snr": 7.5, "loss": 0.1}, {"a": "r1", "b": "alice", "oneway": true} ] }"##
    var seeds: [(String, [UInt8])] = [("doc", Array(doc.utf8))]
    for shape in [Topology.Shape.line, .star, .grid] {
        let t = Topology.builtIn(shape, companions: 2, repeaters: 3, rooms: 1)
        seeds.append(("\(shape)", Array(t.json.text.utf8)))
    }
    for (name, bytes) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    _exit(0)
}
