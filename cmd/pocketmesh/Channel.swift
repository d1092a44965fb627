import ArgumentParser
import MeshCompanion
import MeshSession
import MeshOps

struct Channel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "List, set, remove and send to channels.",
        subcommands: [List.self, SetChannel.self, Add.self, Remove.self, SendChannel.self, URI.self, Import.self, Rekey.self, DataCommand.self],
        defaultSubcommand: List.self)

    struct List: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the channels in use.")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .channels }
        func text(_ value: Value) -> String {
            guard case .array(let items) = value else { return value.text() }
            return items.map { "\($0["index"]?.intValue ?? 0)  \($0["name"]?.stringValue ?? "")  \($0["secret"]?.stringValue ?? "")" }
                .joined(separator: "\n")
        }
    }

    struct SetChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Set a channel slot (a #name makes a hashtag channel).")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Slot index.") var index: Int
        @Argument(help: "Channel name; #name derives the key from the name.") var name: String
        @Option(help: "Secret, 32 hex digits.") var secret: String?
        @Flag(help: "Hashtag channel: key = SHA-256(\"#name\")[0..16].") var hashtag = false
        func request() throws(ClientError) -> Request { .channelSet(index: index, name: name, secret: secret, hashtag: hashtag) }
    }

    struct Add: RadioCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a channel in the first free slot (a #name is a hashtag channel; otherwise give --secret).")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Channel name.") var name: String
        @Option(help: "Secret, 32 hex digits.") var secret: String?
        func request() throws(ClientError) -> Request {
            guard secret != nil || name.hasPrefix("#") else { throw .usage("give --secret HEX, or a #name for a hashtag channel.") }
            return .channelAdd(name: name, secret: secret)
        }
        func text(_ v: Value) -> String { "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? name)" }
    }

    struct URI: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "uri", abstract: "Print a channel's link: meshcore://channel/add?name=…&secret=….")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Slot index or channel name.") var channel: String
        func request() throws(ClientError) -> Request { .channelURI(channel) }
        func text(_ v: Value) -> String { v["uri"]?.stringValue ?? "" }
    }

    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(
            commandName: "import", abstract: "Add a channel from its meshcore://channel/add link (into the slot with its name, else the first free one).")
        @OptionGroup var link: LinkOptions
        @Argument(help: "meshcore://channel/add?name=…&secret=….") var uri: String
        func request() throws(ClientError) -> Request { .channelImport(uri) }
        func text(_ v: Value) -> String { "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? "")" }
    }

    struct Remove: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Clear a channel slot.")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Slot index or channel name.") var channel: String
        func request() throws(ClientError) -> Request { .channelRemove(channel) }
    }

    struct SendChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "send", abstract: "Send a text to a channel (no ACK).")
        @OptionGroup var link: LinkOptions
        @Flag(help: "Send a text longer than one message as numbered parts, \"(1/3) …\", cut at spaces.")
        var split = false
        @Option(help: ArgumentHelp("How long to listen for repeaters re-sending the message (heard repeats); 0: do not.", valueName: "seconds"))
        var repeatsWait: Double = 2
        @Argument(help: "Slot index or channel name.") var channel: String
        @Argument(help: "The text.") var text: [String]
        func request() throws(ClientError) -> Request { .channelSend(channel, text: joined(text), repeatsWaitMs: try waitMs()) }
        func waitMs() throws(ClientError) -> Int {
            guard repeatsWait >= 0, repeatsWait <= 60 else { throw .usage("--repeats-wait must be between 0 and 60 seconds.") }
            return Int(repeatsWait * 1000)
        }
        func run() throws {
            guard split else { return try runRadioCommand() }
            // On air the radio sends "NAME: text" in at most 160 bytes: leave room for this radio's name.
            try runSplit(link: link, text: joined(text),
                         limit: { r in max(20, CompanionLimits.maxTextLength - (r.session.radioSelf?.name.utf8.count ?? 31) - 2) },
                         request: { .channelSend(channel, text: $0, repeatsWaitMs: (try? waitMs()) ?? 0) }, render: text(_:))
        }
        func text(_ v: Value) -> String {
            let heard = v["heard_repeats"]?.intValue.map { ", heard \($0) repeat\($0 == 1 ? "" : "s")" } ?? ""
            return "sent to channel \(v["index"]?.intValue ?? v["channel"]?.intValue ?? 0) (\(v["name"]?.stringValue ?? ""))\(heard)"
        }
    }
}
