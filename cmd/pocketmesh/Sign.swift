import MeshSession
import MeshOps

struct Sign: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sign")
    @OptionGroup var link: LinkOptions
    @Argument var data: String
    func request() throws(ClientError) -> Request { .sign(data: data) }
    func text(_ v: Value) -> String { v["signature"]?.stringValue ?? v.text() }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key", subcommands: [Export.self, Import.self])
    struct Export: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "export")
        @OptionGroup var link: LinkOptions
        func request() throws(ClientError) -> Request { .keyExport }
        func text(_ v: Value) -> String { v["private_key"]?.stringValue ?? v.text() }
    }
    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import")
        @OptionGroup var link: LinkOptions
        @Argument var key: String
        func request() throws(ClientError) -> Request { .keyImport(key) }
    }
}

struct Reboot: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "reboot")
    @OptionGroup var link: LinkOptions
    func request() throws(ClientError) -> Request { .reboot }
}

struct FactoryReset: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "factory-reset")
    @OptionGroup var link: LinkOptions
    @Flag var confirmed = false
    func validate() throws {
        if !confirmed { throw ValidationError("factory-reset erases the radio: add --yes-erase-everything to confirm.") }
    }
    func request() throws(ClientError) -> Request { .factoryReset }
}

struct Raw: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw")
    @OptionGroup var link: LinkOptions
    @Argument var frame: String
    func request() throws(ClientError) -> Request { .raw(frame) }
    func text(_ v: Value) -> String { v["reply"]?.stringValue ?? v.text() }
}
