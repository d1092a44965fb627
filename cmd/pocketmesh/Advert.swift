import MeshSession
import MeshOps

struct Advert: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "advert")
    func text(_ v: Value, _ args: OperationValues) -> String { v["done"]?.stringValue ?? v.text() }
}
