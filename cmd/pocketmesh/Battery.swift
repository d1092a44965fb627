import MeshSession
import MeshOps

struct Battery: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "battery")
    @OptionGroup var link: LinkOptions
}

struct Stats: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "stats")
    @OptionGroup var link: LinkOptions
    @Argument var type: String?
}
