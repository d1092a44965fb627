import MeshSession
import MeshOps

struct Sign: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sign")
    func text(_ v: Value, _ args: OperationValues) -> String { v["signature"]?.stringValue ?? v.text() }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "key", subcommands: [Export.self, Import.self])
    struct Export: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "export")
        func text(_ v: Value, _ args: OperationValues) -> String { v["private_key"]?.stringValue ?? v.text() }
    }
    struct Import: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "import")
    }
}

struct Reboot: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "reboot")
}

struct FactoryReset: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "factory-reset")
}

struct Raw: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw")
    func text(_ v: Value, _ args: OperationValues) -> String { v["reply"]?.stringValue ?? v.text() }
}
