import MeshCompanion
import MeshSession
import MeshOps

struct Channel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        subcommands: [List.self, SetChannel.self, Add.self, Remove.self, SendChannel.self, URI.self, Import.self, Rekey.self, DataCommand.self],
        defaultSubcommand: List.self)

    struct List: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "list")
        func text(_ value: Value, _ args: OperationValues) -> String {
            guard case .array(let items) = value else { return value.text() }
            return items.map { "\($0["index"]?.intValue ?? 0)  \($0["name"]?.stringValue ?? "")  \($0["secret"]?.stringValue ?? "")" }
                .joined(separator: "\n")
        }
    }

    struct SetChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set")
    }

    struct Add: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "add")
        func text(_ v: Value, _ args: OperationValues) -> String { let name = args.string("name") ?? ""; return "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? name)" }
    }

    struct URI: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "uri")
        func text(_ v: Value, _ args: OperationValues) -> String { v["uri"]?.stringValue ?? "" }
    }

    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import")
        func text(_ v: Value, _ args: OperationValues) -> String { "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? "")" }
    }

    struct Remove: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "remove")
    }

    struct SendChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "send")
        func run(_ args: OperationValues) throws {
            let link = LinkOptions(args)
            let split = args.flag("split")
            let channel = args.string("channel") ?? ""
            let text = args.strings("text") ?? []
            guard split else { return try runRadioCommand(args) }
            // Each part is the whole text's request with its own text (checked once, by the table).
            guard case .channelSend(let channel, let whole, let waitMs) = try request(args) else { return }
            // On air the radio sends "NAME: text" in at most 160 bytes: leave room for this radio's name.
            try runSplit(link: link, text: whole,
                         limit: { r in max(20, CompanionLimits.maxTextLength - (r.session.radioSelf?.name.utf8.count ?? 31) - 2) },
                         request: { .channelSend(channel, text: $0, repeatsWaitMs: waitMs) }, render: { self.text($0, args) })
        }
        func text(_ v: Value, _ args: OperationValues) -> String {
            let channel = args.string("channel") ?? ""
            let heard = v["heard_repeats"]?.intValue.map { ", heard \($0) repeat\($0 == 1 ? "" : "s")" } ?? ""
            return "sent to channel \(v["index"]?.intValue ?? v["channel"]?.intValue ?? 0) (\(v["name"]?.stringValue ?? ""))\(heard)"
        }
    }
}
