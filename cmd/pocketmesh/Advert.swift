import ArgumentParser
import MeshSession
import MeshOps

struct Advert: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "advert", abstract: "Send this radio's advert (zero-hop, or flood).")
    @OptionGroup var link: LinkOptions
    @Flag(help: "Flood the advert through repeaters.") var flood = false
    func request() throws(ClientError) -> Request { .advert(flood: flood) }
    func text(_ v: Value) -> String { v["done"]?.stringValue ?? v.text() }
}
