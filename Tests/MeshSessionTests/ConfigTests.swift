import Glibc
import MeshSession
import Testing
@testable import MeshOps

@Suite struct TOMLTests {
    @Test func theSubsetAConfigUses() throws {
        let t = try TOML.parse("""
            # comment
            default_radio = "home"   # trailing comment
            [radio.home]
            tcp = "127.0.0.1:5001"
            n = -1_000
            f = 7.5
            on = true
            list = [ "a", 'b\\c',
                     "\\u00e9\\t", ]
            "quoted key".x = 1
            """)
        #expect(t["default_radio"] == .string("home"))
        let home = try #require(t["radio"]?.table?["home"]?.table)
        #expect(home.keys == ["tcp", "n", "f", "on", "list", "quoted key"])
        #expect(home["n"] == .integer(-1000) && home["f"] == .float(7.5) && home["on"] == .bool(true))
        #expect(home["list"] == .array([.string("a"), .string("b\\c"), .string("é\t")]))
        #expect(home["quoted key"]?.table?["x"] == .integer(1))
        #expect(home.lines["tcp"] == 4)
    }

    @Test(arguments: [
        ("x = home", 1, "strings need quotes"),
        ("a = 1\na = 2", 2, "set twice"),
        ("[t]\n[t]", 2, "defined twice"),
        ("s = \"open", 1, "not closed"),
        ("x = {a = 1}", 1, "inline tables"),
        ("[[t]]", 1, "arrays of tables"),
        ("x = inf", 1, "not a usable number"),
        ("x = nan", 1, "not a usable number"),
        ("x = 1e999", 1, "not a value"),
        ("x = 99999999999999999999", 1, "too large"),
        ("\n\nx = [1, 2", 3, "not closed"),
        ("x = 1 y", 1, "after the value"),
        ("a = 1\n[a]", 2, "already a value"),
        ("x = \"\\q\"", 1, "unknown escape"),
        ("x = 'a\u{1}b'", 1, "control character"),
        ("x = \"a\u{7F}\"", 1, "control character"),
    ])
    func errorsNameTheLine(text: String, line: Int, says: String) {
        do {
            _ = try TOML.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line, "\(text)")
            #expect(error.message.contains(says), "\(error.message)")
        }
    }
}

/// Hostile files: nesting and dotted keys that used to overflow the stack (SIGSEGV in every
/// command that reads the config) are errors naming their line; nothing recurses with them.
@Suite struct TOMLDepthTests {
    func expectError(_ text: String, line: Int, says: String) {
        do {
            _ = try TOML.parse(text)
            Issue.record("parsed")
        } catch {
            #expect(error.line == line)
            #expect(error.message.contains(says), "\(error.message)")
        }
    }

    @Test func deeplyNestedArrays() {
        expectError("a = 1\nx = " + String(repeating: "[", count: 200_000), line: 2, says: "nested more than 64 levels")
        expectError("x = " + String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000), line: 1, says: "nested more than 64")
        // Up to the limit is fine.
        let ok = "x = " + String(repeating: "[", count: TOML.maxDepth) + String(repeating: "]", count: TOML.maxDepth)
        #expect((try? TOML.parse(ok)) != nil)
    }

    @Test func tableHeadersAndKeysWithManyDottedParts() {
        let parts = Array(repeating: "a", count: 100_000).joined(separator: ".")
        expectError("\n[" + parts + "]", line: 2, says: "more than 64 dotted parts")
        expectError(parts + " = 1", line: 1, says: "more than 64 dotted parts")
        // A header and a key each within the limit, but deeper together.
        let half = Array(repeating: "b", count: 40).joined(separator: ".")
        expectError("[" + half + "]\n" + half + " = 1", line: 2, says: "more than 64 levels deep")
        // At the limit: the tables are made, and the value is where the key says.
        let path = (0..<TOML.maxDepth).map { "k\($0)" }
        let t = try? TOML.parse("[" + path.dropLast().joined(separator: ".") + "]\n" + path.last! + " = 7")
        var table = t
        for k in path.dropLast() { table = table?[k]?.table }
        #expect(table?[path.last!] == .integer(7))
    }
}

@Suite struct ConfigFileTests {
    @Test func radiosAndDaemonSettings() throws {
        let c = try Config(parsing: """
            default_radio = "home"
            [daemon]
            drain-interval = 60
            verbose = true
            [radio.home]
            serial = "/dev/ttyUSB0"
            baud = 9600
            [radio.home.daemon]
            drain_interval = 30
            on-message = ["/a", "/b"]
            [radio.lab]
            tcp = "[::1]:5001"
            timeout = 3
            """, path: "c.toml")
        #expect(c.defaultRadio == "home" && c.radios.map(\.name) == ["home", "lab"])
        let home = try #require(c.radio("home"))
        #expect(home.linkValues == ["serial": ConfiguredValue(.string("/dev/ttyUSB0"), line: 6), "baud": ConfiguredValue(.integer(9600), line: 7)])
        #expect(c.radio("lab")?.linkValues == ["tcp": ConfiguredValue(.string("[::1]:5001"), line: 12), "timeout": ConfiguredValue(.float(3), line: 13)])
        let declared = ["--drain-interval": true, "--verbose": false, "--on-message": true]
        // The radio's own drain-interval wins over [daemon]'s (the command line's wins over both
        // where the parser merges them); each keeps its type and its line.
        #expect(try Config.daemonValues(home, declared: declared, repeatable: ["--on-message"], path: "c.toml")
                == ["verbose": ConfiguredValue(.bool(true), line: 4), "drain-interval": ConfiguredValue(.integer(30), line: 9),
                    "on-message": ConfiguredValue(.array([.string("/a"), .string("/b")]), line: 10)])
        #expect(ConfiguredValue(.array([.string("/a"), .string("/b")]), line: 10).texts == ["/a", "/b"])
        #expect(ConfiguredValue(.bool(true), line: 1).texts == [""] && ConfiguredValue(.bool(false), line: 1).texts == [])
        #expect(ConfiguredValue(.float(2.5), line: 1).texts == ["2.5"])
        #expect(throws: ClientError.self) {
            try Config.daemonValues(home, declared: ["--verbose": false], repeatable: [], path: "c.toml")
        }
        // A list sets only an option that may be given more than once (else all but one would be ignored).
        #expect(throws: ClientError.usage("c.toml line 10: on-message takes one value, not a list.")) {
            try Config.daemonValues(home, declared: declared, repeatable: [], path: "c.toml")
        }
    }

    @Test(arguments: [
        ("default_radio = \"x\"", 1),
        ("[radio.a]\ntcp = \"h:1\"\nserial = \"/dev/x\"", 1),
        ("[radio.a]\ntimeout = 99999\ntcp = \"h:1\"", 2),
        ("[radio.a]\ntcp = \"h:1\"\nport = 5", 3),
        ("colour = \"red\"", 1),
        ("[radio.a]\ntcp = \"\"", 2),
        // A daemon table takes daemon settings only: not the link (the daemon talked to the
        // wrong address), not what is no setting (help printed the help and exited 0).
        ("[radio.h]\ntcp = \"127.0.0.1:5001\"\n[radio.h.daemon]\ntcp = \"127.0.0.1:9\"", 4),
        ("[radio.h]\ntcp = \"h:1\"\n[radio.h.daemon]\nserial = \"/dev/x\"", 4),
        ("[radio.h]\ntcp = \"h:1\"\n[radio.h.daemon]\nname = \"x\"\nhelp = true", 5),
        ("[radio.h]\ntcp = \"h:1\"\n[radio.h.daemon]\nversion = false", 4),
        ("[radio.h]\ntcp = \"h:1\"\n[radio.h.daemon]\ntimeout = 3", 4),
        ("[daemon]\nbaud = 9600", 2),
        ("[daemon]\nradio = \"h\"", 2),
        ("[daemon]\nble_min_mtu = 100", 2),
    ])
    func badFilesNameTheLine(text: String, line: Int) {
        do {
            _ = try Config(parsing: text, path: "c.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.line == line, "\(text): \(error)")
        }
    }
}

/// The file itself: read whole or refused, never used in part.
@Suite struct ConfigReadTests {
    func write(_ bytes: [UInt8]) -> String {
        var template = Array("/tmp/pm-config-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        precondition(fd >= 0)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            precondition(n > 0)
            off += n
        }
        close(fd)
        return String(cString: template)
    }

    @Test func aFileOverTheLimitIsAnErrorNotCutShort() throws {
        // The first MiB is a good file; what follows used to be dropped without a word.
        var text = Array("[radio.a]\ntcp = \"127.0.0.1:5001\"\n".utf8)
        text += Array(repeating: UInt8(ascii: "#"), count: Config.maxBytes - text.count - 1) + [0x0A]
        let good = write(text)
        defer { unlink(good) }
        #expect(try Config.load(good)?.radios.count == 1)
        let big = write(text + Array("colour = \"red\"\n".utf8))
        defer { unlink(big) }
        #expect(throws: ClientError.self) { try Config.load(big) }
        do { _ = try Config.load(big) } catch { #expect(error.exitCode == 2 && error.message.contains("larger than 1024 KiB")) }
    }

    @Test func notUTF8NamesTheLine() {
        let path = write(Array("a = 1\nb = \"".utf8) + [0xFF] + Array("\"\n".utf8))
        defer { unlink(path) }
        #expect(throws: ClientError.usage("\(path) line 2: the text is not UTF-8; see `pocketmesh config check`.")) { try Config.load(path) }
    }

    @Test func missingIsNoFileButUnreadableIsAnError() throws {
        #expect(try Config.load("/nonexistent-pm/config.toml") == nil)
        #expect(throws: ClientError.self) { try Config.load("/") }  // a folder: EISDIR
    }
}
