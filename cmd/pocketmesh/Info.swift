import ArgumentParser
import MeshSession
import MeshOps

struct Info: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "info", abstract: "Show the radio's identity, radio settings and firmware.")
    @OptionGroup var link: LinkOptions
    func request() throws(ClientError) -> Request { .info }
}
