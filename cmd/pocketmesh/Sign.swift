import MeshSession
import MeshOps

struct Sign: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sign")
    @OptionGroup var link: LinkOptions
    @Argument var data: String
    func text(_ v: Value) -> String { v["signature"]?.stringValue ?? v.text() }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key", subcommands: [Export.self, Import.self])
    struct Export: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "export")
        @OptionGroup var link: LinkOptions
        func text(_ v: Value) -> String { v["private_key"]?.stringValue ?? v.text() }
    }
    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import")
        @OptionGroup var link: LinkOptions
        @Argument var key: String
    }
}

struct Reboot: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "reboot")
    @OptionGroup var link: LinkOptions
}

struct FactoryReset: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "factory-reset")
    @OptionGroup var link: LinkOptions
    @Flag var confirmed = false
}

struct Raw: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw")
    @OptionGroup var link: LinkOptions
    @Argument var frame: String
    func text(_ v: Value) -> String { v["reply"]?.stringValue ?? v.text() }
}
