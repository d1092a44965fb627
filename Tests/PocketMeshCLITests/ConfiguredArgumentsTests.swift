import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

extension CommandLineParsing {
/// The config file's settings reach the parser as typed values by argument name, merged with the
/// command line's (which win); an error about one names its line.
@Suite struct ConfiguredArgumentsTests {
    static let file = ConfiguredArguments(path: "c.toml", values: [
        "tcp": ConfiguredValue(.string("127.0.0.1:5001"), line: 2),
        "drain-interval": ConfiguredValue(.integer(30), line: 4),
        "hooks-from-start": ConfiguredValue(.bool(true), line: 5),
        "mqtt": ConfiguredValue(.array([.string("mqtt://a"), .string("mqtt://b")]), line: 6),
        "timeout": ConfiguredValue(.float(2.5), line: 7),
    ])

    @Test func theFilesValuesFillWhatTheCommandLineLeaves() throws {
        let d = try DaemonCommand.parse([], configured: Self.file)
        #expect(d.radio.tcp == "127.0.0.1:5001" && d.drainInterval == 30 && d.hooksFromStart && d.timeout == 2.5)
        #expect(d.mqtt == ["mqtt://a", "mqtt://b"])
        // The command line wins, argument by argument (a repeatable one as a whole).
        let c = try DaemonCommand.parse(["--drain-interval", "10", "--mqtt", "mqtt://c"], configured: Self.file)
        #expect(c.drainInterval == 10 && c.mqtt == ["mqtt://c"] && c.radio.tcp == "127.0.0.1:5001" && c.hooksFromStart)
        // A flag set false in the file is not given.
        var off = Self.file
        off.values["hooks-from-start"] = ConfiguredValue(.bool(false), line: 5)
        #expect(try !DaemonCommand.parse([], configured: off).hooksFromStart)
    }

    @Test func aBadValueFromTheFileNamesItsLine() {
        var bad = Self.file
        bad.values["hook-concurrency"] = ConfiguredValue(.string("many"), line: 9)
        do {
            _ = try DaemonCommand.parse([], configured: bad)
            Issue.record("accepted hook-concurrency = \"many\"")
        } catch let e as UsageError {
            #expect(e.line == 9 && e.description == "c.toml line 9: The value 'many' is invalid for '--hook-concurrency <n>'")
        } catch {
            Issue.record("\(error)")
        }
        // The same word on the command line is the command line's mistake (no file, no line).
        do {
            _ = try DaemonCommand.parse(["--hook-concurrency", "many"], configured: Self.file)
        } catch let e as UsageError {
            #expect(e.line == nil && e.description == "The value 'many' is invalid for '--hook-concurrency <n>'")
        } catch {
            Issue.record("\(error)")
        }
    }
}
}
