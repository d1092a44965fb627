import MeshCompanion
import MeshSession
import MeshOps

struct Channel: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        subcommands: [SendChannel.self, Rekey.self])







    struct SendChannel: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "send")
        func run(_ args: OperationValues) throws {
            let link = LinkOptions(args)
            let split = args.flag("split")
            guard split else { return try runRadioCommand(args) }
            // Each part is the whole text's request with its own text (checked once, by the table).
            guard case .channelSend(let channel, let whole, let waitMs) = try request(args) else { return }
            // On air the radio sends "NAME: text" in at most 160 bytes: leave room for this radio's name.
            try runSplit(link: link, text: whole,
                         limit: { r in max(20, CompanionLimits.maxTextLength - (r.session.radioSelf?.name.utf8.count ?? 31) - 2) },
                         request: { .channelSend(channel, text: $0, repeatsWaitMs: waitMs) }, render: { self.text($0, args) })
        }
        func text(_ v: Value, _ args: OperationValues) -> String {
            let heard = v["heard_repeats"]?.intValue.map { ", heard \($0) repeat\($0 == 1 ? "" : "s")" } ?? ""
            return "sent to channel \(v["index"]?.intValue ?? v["channel"]?.intValue ?? 0) (\(v["name"]?.stringValue ?? ""))\(heard)"
        }
    }
}
