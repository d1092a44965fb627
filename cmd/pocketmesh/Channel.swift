import ArgumentParser
import MeshCompanion
import MeshSession
import MeshOps

struct Channel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "List, set, remove and send to channels.",
        subcommands: [List.self, SetChannel.self, Remove.self, SendChannel.self, Rekey.self],
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
        @Argument(help: "Slot index or channel name.") var channel: String
        @Argument(help: "The text.") var text: [String]
        func request() throws(ClientError) -> Request { .channelSend(channel, text: joined(text)) }
        func run() throws {
            guard split else { return try runRadioCommand() }
            // On air the radio sends "NAME: text" in at most 160 bytes: leave room for this radio's name.
            try runSplit(link: link, text: joined(text),
                         limit: { r in max(20, CompanionLimits.maxTextLength - (r.session.radioSelf?.name.utf8.count ?? 31) - 2) },
                         request: { .channelSend(channel, text: $0) }, render: text(_:))
        }
        func text(_ v: Value) -> String { "sent to channel \(v["index"]?.intValue ?? v["channel"]?.intValue ?? 0) (\(v["name"]?.stringValue ?? ""))" }
    }
}
