// libFuzzer target over the config file (`config.toml`): the TOML reader and the config model.
// Built by fuzz/run.sh together with the MeshOps sources it needs.
//
// Invariants: no trap on any input; every error names a line of the input (1 ... lines + 1).

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    let lines = text.utf8.filter { $0 == 0x0A }.count + 1  // (bytes: "\r\n" is one Character)
    do {
        _ = try Config(parsing: text, path: "config.toml")
    } catch {
        fuzzCheck(error.line >= 1 && error.line <= lines + 1, "an error names a line of the input")
    }
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let seeds = [
        ("full", "# radios\ndefault_radio = \"home\"\n[radio.home]\ntcp = \"127.0.0.1:5001\" # sim\ntimeout = 7.5\n[radio.home.daemon]\non-message = '/usr/bin/x'\ndrain-interval = 30\nlisten = [\"a\", \"b\",]\n[daemon]\nverbose = true\n"),
        ("serial", "[radio.\"usb\"]\nserial = \"/dev/serial/by-id/usb-x\"\nbaud = 115_200\n"),
        ("escapes", "[radio.x]\nble = \"AA:BB:CC:DD:EE:FF\\u0041\\t\"\nx.y = [1, 2.5, -3, +4e2]\n"),
        // Around the depth limit (64): nested arrays, and dotted names in a header and a key.
        ("deep", "x = " + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "\n"),
        ("dotted", "[" + Array(repeating: "a", count: 40).joined(separator: ".") + "]\n"
            + Array(repeating: "b", count: 30).joined(separator: ".") + " = 1\n"),
        ("daemon", "[radio.h]\ntcp = \"h:1\"\n[radio.h.daemon]\ntcp = \"h:2\"\nhelp = true\n"),
    ]
    for (name, text) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(text, 1, text.utf8.count, f)
        fclose(f)
    }
    _exit(0)
}
