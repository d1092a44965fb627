import ArgumentParser
import MeshSession
import MeshOps

struct Sign: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sign", abstract: "Sign data (hex) with the radio's private key.")
    @OptionGroup var link: LinkOptions
    @Argument(help: "Data as hex (at most 8192 bytes).") var data: String
    func request() throws(ClientError) -> Request { .sign(data: data) }
    func text(_ v: Value) -> String { v["signature"]?.stringValue ?? v.text() }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key", abstract: "Export or import the radio's private key.",
                                                    subcommands: [Export.self, Import.self])
    struct Export: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "export", abstract: "Print the private key as hex.")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .keyExport }
        func text(_ v: Value) -> String { v["private_key"]?.stringValue ?? v.text() }
    }
    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import", abstract: "Replace the private key (128 hex digits).")
        @OptionGroup var link: LinkOptions
        @Argument(help: "The 64-byte private key as hex.") var key: String
        func request() throws(ClientError) -> Request { .keyImport(key) }
    }
}

struct Reboot: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "reboot", abstract: "Reboot the radio.")
    @OptionGroup var link: LinkOptions
    func request() throws(ClientError) -> Request { .reboot }
}

struct FactoryReset: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "factory-reset", abstract: "Erase the radio (identity, contacts, channels).")
    @OptionGroup var link: LinkOptions
    @Flag(name: .customLong("yes-erase-everything"), help: "Required: confirms that everything on the radio is erased.")
    var confirmed = false
    func validate() throws {
        if !confirmed { throw ValidationError("factory-reset erases the radio: add --yes-erase-everything to confirm.") }
    }
    func request() throws(ClientError) -> Request { .factoryReset }
}

struct Raw: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw", abstract: "Send one frame (hex) and print the reply frame (hex).")
    @OptionGroup var link: LinkOptions
    @Argument(help: "The frame payload as hex, e.g. 1603.") var frame: String
    func request() throws(ClientError) -> Request { .raw(frame) }
    func text(_ v: Value) -> String { v["reply"]?.stringValue ?? v.text() }
}
