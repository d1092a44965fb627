import ArgumentParser
import MeshSession
import MeshOps

struct Time: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "time", abstract: "Read or set the radio's clock.",
                                                    subcommands: [GetTime.self, SyncTime.self], defaultSubcommand: GetTime.self)

    struct GetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print the radio's clock (epoch seconds).")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .timeGet }
    }

    struct SyncTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "sync", abstract: "Set the radio's clock from this host's.")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .timeSync }
    }
}
