import MeshSession
import MeshOps

struct Time: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "time",
        subcommands: [GetTime.self, SyncTime.self, SetTime.self],
        defaultSubcommand: GetTime.self)

    struct GetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "get")
    }

    struct SyncTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "sync")
    }

    struct SetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set")
    }
}
