import MeshSession
import MeshOps

struct Battery: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "battery")
}

struct Stats: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "stats")
}
