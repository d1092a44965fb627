import MeshSession
import MeshOps

struct Info: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "info")
}
