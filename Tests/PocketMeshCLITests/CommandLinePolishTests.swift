import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

extension CommandLineParsing {
/// What a newcomer meets first: a mistyped command gets the nearest one, `--radio` is in every
/// linked command's help, and `set` offers only the settings it can change.
@Suite struct CommandLinePolishTests {
    func message(_ args: [String]) -> String {
        do { _ = try CommandParser.parse(args); return "" } catch { return "\(error)" }
    }

    @Test func unknownCommandsGetTheNearestCommand() {
        #expect(message(["contcts"]) == "unknown command 'contcts'; did you mean 'contacts'?")
        #expect(message(["sned", "-t", "h"]) == "unknown command 'sned'; did you mean 'send'?")
        // A word of a deeper path, typed alone, is found under its group.
        #expect(message(["reset-path"]) == "unknown command 'reset-path'; did you mean 'contacts reset-path'?")
        // A mistyped subcommand: of a group, and of a group that runs a default command.
        #expect(message(["channel", "sedn", "-t", "h"]) == "unknown command 'channel sedn'; did you mean 'channel send'?")
        #expect(message(["contacts", "shwo", "-t", "h"]) == "unknown command 'contacts shwo'; did you mean 'contacts show'?")
        #expect(message(["contacts", "-t", "h", "--json", "shwo"]) == "unknown command 'contacts shwo'; did you mean 'contacts show'?")
        // Nothing near: the word alone. A command's extra value stays what it was.
        #expect(message(["xyzzy"]) == "unknown command 'xyzzy'")
        #expect(message(["info", "extra", "-t", "h"]) == "Unexpected argument 'extra'")
    }

    @Test func radioIsInTheHelpOfEveryLinkedCommandOnce() throws {
        let info = HelpText.render(RequestCommand.self, path: ["info"])
        #expect(info.contains("  --radio <name>"))
        // After the link options, before --json.
        let lines = info.split(separator: "\n").map { String($0) }
        func line(_ option: String) -> Int? { lines.firstIndex { $0.hasPrefix("  \(option)") || $0.hasPrefix("  -j, \(option)") } }
        let radio = try #require(line("--radio")), timeout = try #require(line("--timeout")), json = try #require(line("--json"))
        #expect(timeout < radio && radio < json)
        // `chats` has a --radio of its own (a stored radio's key): not a second one.
        let chats = OperationArgument.shown(OperationTable.row(["chats"]))
        #expect(chats.filter { $0.name == "radio" }.count == 1 && !chats.contains { $0.help == OperationArgument.radio.help })
        // Commands without a link have none.
        #expect(!OperationArgument.shown(OperationTable.row(["demo"])).contains { $0.name == "radio" })
        for r in OperationTable.rows where r.args.contains(where: { $0.name == "tcp" }) {
            #expect(OperationArgument.shown(r).filter { $0.name == "radio" }.count == 1, "\(r.cli)")
        }
    }

    @Test func setTakesOnlyTheSettingsItCanChange() throws {
        let set = try #require(OperationTable.row(["set"])?.args.first { $0.name == "setting" })
        #expect(set.choices.contains("name") && set.choices.contains("client-repeat"))
        for readOnly in ["public-key", "firmware", "model", "max-contacts", "max-channels", "repeat-freqs"] {
            #expect(!set.choices.contains(readOnly), "\(readOnly)")
        }
        let get = try #require(OperationTable.row(["get"])?.args.first { $0.name == "setting" })
        #expect(get.choices.contains("public-key") && get.choices.count == set.choices.count + 6)
    }
}
}
