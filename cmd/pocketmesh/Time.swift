import MeshSession
import MeshOps

struct Time: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "time",
        subcommands: [GetTime.self, SyncTime.self, SetTime.self],
        defaultSubcommand: GetTime.self)

    struct GetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "get")
        @OptionGroup var link: LinkOptions
    }

    struct SyncTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "sync")
        @OptionGroup var link: LinkOptions
    }

    struct SetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set")
        @OptionGroup var link: LinkOptions
        @Argument var epoch: String
    }
}
