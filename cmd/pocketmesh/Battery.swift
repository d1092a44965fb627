import ArgumentParser
import MeshSession
import MeshOps

struct Battery: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "battery", abstract: "Battery voltage and storage use.")
    @OptionGroup var link: LinkOptions
    func request() throws(ClientError) -> Request { .battery }
}

struct Stats: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Device statistics (core, radio, packets; all by default).")
    @OptionGroup var link: LinkOptions
    @Argument(help: "core, radio or packets.") var type: String?
    func request() throws(ClientError) -> Request { .stats(type) }
}
