import MeshOps
import MeshSession

/// `pocketmesh config path|show|check`: where the config file is, what it says, whether it is right.
struct ConfigCommand: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "config", subcommands: [Path.self, Show.self, Check.self])

    struct Path: ParsableCommand, Stateless {
        static let configuration = CommandConfiguration(commandName: "path")
        func run(_ args: OperationValues) { emitLine(Config.defaultPath()) }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show")
        let args: OperationValues
        init(_ args: OperationValues) { self.args = args }
        var json: Bool { args.flag("json") }
        func run(_ args: OperationValues) throws {
            let c = try ConfigCommand.loadChecked()
            var radios: [Value] = []
            for r in c.radios {
                var fields: [Value.Field] = [("name", .string(r.name)), ("default", .bool(r.name == c.defaultRadio))]
                if let v = r.tcp { fields.append(("tcp", .string(v))) }
                if let v = r.serial { fields.append(("serial", .string(v))) }
                if let v = r.baud { fields.append(("baud", .int(v))) }
                if let v = r.ble { fields.append(("ble", .string(v))) }
                if let v = r.bleMinMtu { fields.append(("ble_min_mtu", .int(v))) }
                if let v = r.timeout { fields.append(("timeout", .double(v))) }
                let daemon = r.daemon.map { (name, value, _) -> Value.Field in
                    // Never print a secret that was written into the file itself.
                    let secret = name.containsText("password") && !name.hasSuffix("-file") || name.containsText("secret") || name.containsText("token")
                    return (name, secret ? .string("(hidden)") : ConfigCommand.value(value))
                }
                if !daemon.isEmpty { fields.append(("daemon", .object(daemon))) }
                radios.append(.object(fields))
            }
            let v: Value = .object([("path", .string(c.path)), ("default_radio", c.defaultRadio.map { .string($0) } ?? .null),
                                    ("radios", .array(radios))])
            if json { emitLine(v.json) } else { emitHuman(v.text()) }
        }
    }

    struct Check: ParsableCommand, Stateless {
        static let configuration = CommandConfiguration(commandName: "check")
        func run(_ args: OperationValues) throws {
            let c = try ConfigCommand.loadChecked()
            emitLine("\(c.path): ok (\(c.radios.count) radio(s)\(c.defaultRadio.map { ", default \($0)" } ?? ""))")
        }
    }

    /// The file, read and checked (the daemon settings as the daemon checks them); exit 6 without one.
    static func loadChecked() throws(ClientError) -> Config {
        let path = Config.defaultPath()
        guard let c = try Config.load(path) else { throw .notFound("there is no config file at \(path).") }
        try DaemonSettings.check(c)
        return c
    }

    static func value(_ v: TOMLValue) -> Value {
        switch v {
        case .string(let s): return .string(s)
        case .integer(let n): return .int(n)
        case .float(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .array(let a): return .array(a.map(value))
        case .table(let t): return .object(t.keys.map { ($0, value(t[$0]!)) })
        }
    }
}
