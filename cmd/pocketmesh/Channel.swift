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
        @OptionGroup var link: LinkOptions
        func text(_ value: Value) -> String {
            guard case .array(let items) = value else { return value.text() }
            return items.map { "\($0["index"]?.intValue ?? 0)  \($0["name"]?.stringValue ?? "")  \($0["secret"]?.stringValue ?? "")" }
                .joined(separator: "\n")
        }
    }

    struct SetChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set")
        @OptionGroup var link: LinkOptions
        @Argument var index: Int
        @Argument var name: String
        @Option var secret: String?
        @Flag var hashtag = false
    }

    struct Add: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "add")
        @OptionGroup var link: LinkOptions
        @Argument var name: String
        @Option var secret: String?
        func text(_ v: Value) -> String { "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? name)" }
    }

    struct URI: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "uri")
        @OptionGroup var link: LinkOptions
        @Argument var channel: String
        func text(_ v: Value) -> String { v["uri"]?.stringValue ?? "" }
    }

    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import")
        @OptionGroup var link: LinkOptions
        @Argument var uri: String
        func text(_ v: Value) -> String { "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? "")" }
    }

    struct Remove: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "remove")
        @OptionGroup var link: LinkOptions
        @Argument var channel: String
    }

    struct SendChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "send")
        @OptionGroup var link: LinkOptions
        @Flag var split = false
        @Option var repeatsWait: Double
        @Argument var channel: String
        @Argument var text: [String]
        func run(_ args: OperationValues) throws {
            guard split else { return try runRadioCommand(args) }
            // Each part is the whole text's request with its own text (checked once, by the table).
            guard case .channelSend(let channel, let whole, let waitMs) = try request(args) else { return }
            // On air the radio sends "NAME: text" in at most 160 bytes: leave room for this radio's name.
            try runSplit(link: link, text: whole,
                         limit: { r in max(20, CompanionLimits.maxTextLength - (r.session.radioSelf?.name.utf8.count ?? 31) - 2) },
                         request: { .channelSend(channel, text: $0, repeatsWaitMs: waitMs) }, render: text(_:))
        }
        func text(_ v: Value) -> String {
            let heard = v["heard_repeats"]?.intValue.map { ", heard \($0) repeat\($0 == 1 ? "" : "s")" } ?? ""
            return "sent to channel \(v["index"]?.intValue ?? v["channel"]?.intValue ?? 0) (\(v["name"]?.stringValue ?? ""))\(heard)"
        }
    }
}
