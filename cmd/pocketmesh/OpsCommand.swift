import MeshOps
import MeshSession

/// `pocketmesh ops [--json | --schema]`: the operation table, as the front ends read it, or the
/// JSON Schema of every command's `--json` output (docs/json-schema.json).
struct OpsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ops")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var json: Bool { args.flag("json") }
    var schema: Bool { args.flag("schema") }

    func run(_ args: OperationValues) {
        if schema {
            print(OperationTable.jsonSchema.prettyJSON, terminator: "")
        } else if json {
            emitLine(OperationTable.value.json)
        } else {
            print(OperationTable.text, terminator: "")
        }
    }
}

/// `pocketmesh completions bash|zsh|fish`: a shell completion script generated from the table.
struct CompletionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "completions")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var shell: String { args.string("shell") ?? "" }

    func run(_ args: OperationValues) throws {
        if shell == "radios" {
            // For the scripts' --radio: the names only; no file, no names.
            guard let c = try Config.load(Config.defaultPath()) else { return }
            for r in c.radios { emitLine(r.name) }
            return
        }
        guard let s = OperationTable.Shell(rawValue: shell) else {
            throw ClientError.usage("completions: give bash, zsh or fish, not \"\(shell)\".")
        }
        print(OperationTable.completions(s), terminator: "")
    }
}
