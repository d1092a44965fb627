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
        #expect(home.linkArguments == ["--serial", "/dev/ttyUSB0", "--baud", "9600"])
        #expect(c.radio("lab")?.linkArguments == ["--tcp", "[::1]:5001", "--timeout", "3.0"])
        let declared = ["--drain-interval": true, "--verbose": false, "--on-message": true]
        // The radio's own drain-interval wins over [daemon]'s; the command line's wins over both.
        #expect(try Config.daemonArguments(home, declared: declared, given: [], path: "c.toml")
                == ["--verbose", "--drain-interval", "30", "--on-message", "/a", "--on-message", "/b"])
        #expect(try Config.daemonArguments(home, declared: declared, given: ["--drain-interval"], path: "c.toml")
                == ["--verbose", "--on-message", "/a", "--on-message", "/b"])
        #expect(throws: ClientError.self) {
            try Config.daemonArguments(home, declared: ["--verbose": false], given: [], path: "c.toml")
        }
    }

    @Test(arguments: [
        ("default_radio = \"x\"", 1),
        ("[radio.a]\ntcp = \"h:1\"\nserial = \"/dev/x\"", 1),
        ("[radio.a]\ntimeout = 99999\ntcp = \"h:1\"", 2),
        ("[radio.a]\ntcp = \"h:1\"\nport = 5", 3),
        ("colour = \"red\"", 1),
        ("[radio.a]\ntcp = \"\"", 2),
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

