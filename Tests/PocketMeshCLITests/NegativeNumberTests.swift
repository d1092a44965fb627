import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

extension CommandLineParsing {
/// A value that looks like a negative number is a value, given as its own word after any option
/// that takes one (`--lon -0.12`, the README's own example), in every command.
@Suite struct NegativeNumberTests {
    func parse(_ args: [String]) throws -> ParsableCommand {
        guard case .run(let c, _) = try CommandParser.parse(args) else { throw UsageError("not a command") }
        return c
    }

    func message(_ args: [String]) -> String {
        do { _ = try CommandParser.parse(args); return "" } catch { return "\(error)" }
    }

    @Test func theNodesCoordinatesAsSeparateWords() throws {
        let run = try #require(try parse(["node", "--radio", "air:127.0.0.1:1/x", "--state-dir", "/tmp/s",
                                          "--lat", "-33.45", "--lon", "-0.12"]) as? NodeCommand.Run)
        #expect(run.lat == -33.45 && run.lon == -0.12)
        #expect(run.firstRunLines().contains("lon -0.12"))
        // Before the command's name, and between the words of its path, as well.
        let before = try #require(try parse(["node", "run", "--lon", "-70", "--radio", "air:127.0.0.1:1/x", "--state-dir", "/tmp/s"]) as? NodeCommand.Run)
        #expect(before.lon == -70)
        // `-` alone and an option name are still not values.
        #expect(message(["sim", "--snr", "--nodes", "2"]).hasPrefix("Missing value for '--snr"))
        #expect(message(["login", "n", "-p", "-secret", "-t", "h"]) == "Missing value for '-p <password>'")
    }

    @Test func otherCommandsNumbers() throws {
        let sim = try #require(try parse(["sim", "--snr", "-7.5"]) as? SimCommand)
        #expect(sim.snr == -7.5)
        let ints = try #require(try parse(["node", "--radio", "air:127.0.0.1:1/x", "--state-dir", "/tmp/s", "--tx-power", "-9"]) as? NodeCommand.Run)
        #expect(ints.txPower == -9)
    }

    /// Every number option of every command takes `-1` as its value: never "Missing value" (the
    /// value may still be out of range for it, which is another, later error).
    @Test func everyNumberOptionOfEveryCommand() {
        var checked = 0
        for row in OperationTable.rows where !row.hidden {
            for a in row.args where a.kind == .option && (a.type == .number || a.type == .integer) {
                for value in ["-1", "-0.5", "-1e3"] {
                    let m = message(row.path + ["--" + a.name, value])
                    #expect(!m.contains("Missing value"), "\(row.cli) --\(a.name) \(value): \(m)")
                }
                checked += 1
            }
        }
        #expect(checked > 10)
    }
}
}
