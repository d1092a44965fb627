import MeshSession
import MeshOps

struct Advert: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "advert")
    @OptionGroup var link: LinkOptions
    @Flag var flood = false
    func text(_ v: Value) -> String { v["done"]?.stringValue ?? v.text() }
}
