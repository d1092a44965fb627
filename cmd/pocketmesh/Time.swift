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
        func request() throws(ClientError) -> Request { .timeGet }
    }

    struct SyncTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "sync")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .timeSync }
    }

    struct SetTime: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "set")
        @OptionGroup var link: LinkOptions
        @Argument var epoch: String
        func request() throws(ClientError) -> Request {
            guard let e = UInt32(epoch), e >= 1_600_000_000 else {
                throw .usage("give the time as whole epoch seconds from 1600000000 (September 2020) to 4294967295, not \"\(epoch)\".")
            }
            return .timeSet(e)
        }
    }
}
