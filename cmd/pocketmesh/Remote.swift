import MeshCompanion
import MeshSession
import MeshOps

struct Login: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "login")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
    @Option var password: String?
    @Flag var noSave = false
    @Flag var forget = false

    func run(_ args: OperationValues) throws {
        let radio = try link.connect(drain: false)
        let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
        let c = try executor.resolve(node)
        let key = HexCodec.encode(c.publicKey)
        if forget {
            let had = try SavedPasswords.forget(key: key)
            if link.json {
                emitLine(Value.object([.init("name", .string(c.name)), .init("forgotten", .bool(had))]).json)
            } else {
                emitHuman(had ? "forgot the saved password of \(terminalSafeLine(c.name))" : "no password of \(terminalSafeLine(c.name)) was saved")
            }
            return
        }
        let saved = password == nil ? SavedPasswords.load()[key] : nil
        let outcome = try executor.execute(.login(key, password: password ?? saved ?? ""))
        var value = outcome.value
        if case .object(var fields) = value {
            fields.append(.init("saved_password", .bool(saved != nil)))
            value = .object(fields)
        }
        if outcome.error == nil, let p = password, !p.isEmpty, !noSave { try SavedPasswords.save(key: key, password: p) }
        if link.json { emitLine(value.json) } else { emitHuman(text(outcome.value.oneLine)) }
        if let e = outcome.error { throw e }
    }
}

struct Logout: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "logout")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
    @Flag var forget = false

    func run(_ args: OperationValues) throws {
        let radio = try link.connect(drain: false)
        let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
        let c = try executor.resolve(node)
        let outcome = try executor.execute(.logout(HexCodec.encode(c.publicKey)))
        if forget { try SavedPasswords.forget(key: HexCodec.encode(c.publicKey)) }
        if link.json { emitLine(outcome.value.json) } else { emitHuman(text(outcome.value.oneLine)) }
        if let e = outcome.error { throw e }
    }
}

struct Status: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "status")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
}

struct Scope: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "scope")
    @OptionGroup var link: LinkOptions
    @Argument var scope: String
}

struct Regions: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "regions")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
    func text(_ v: Value) -> String {
        guard case .array(let names)? = v["regions"] else { return v.text() }
        return names.isEmpty ? "no regions" : names.compactMap(\.stringValue).joined(separator: "\n")
    }
}

struct Owner: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "owner")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
}

struct Clock: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "clock")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
}

struct Telemetry: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "telemetry")
    @OptionGroup var link: LinkOptions
    @Argument var node: String?
    /// One record a line, e.g. "voltage (channel 1): 4.15 V".
    func text(_ v: Value) -> String {
        guard case .array(let records)? = v["records"] else { return v.text() }
        let head = v["name"]?.stringValue.map { "telemetry of \($0):" } ?? "telemetry of this radio:"
        var lines = [head] + records.map { "  " + ($0["text"]?.stringValue ?? $0.text()) }
        if records.isEmpty { lines = [head + " no records (raw LPP: \(v["lpp"]?.stringValue ?? ""))"] }
        if let rest = v["undecoded"]?.stringValue {
            lines.append("  not decoded (an LPP type this version does not know): \(rest)")
        }
        return lines.joined(separator: "\n")
    }
}

struct Neighbours: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "neighbours", aliases: ["neighbors"])
    @OptionGroup var link: LinkOptions
    @Argument var node: String
    func text(_ v: Value) -> String {
        guard case .array(let items)? = v["neighbours"] else { return v.text() }
        let name = v["name"]?.stringValue ?? node
        if items.isEmpty { return "\(name) has no neighbours (it lists repeaters whose zero-hop adverts it heard)." }
        return items.map { n -> String in
            let prefix = n["prefix"]?.stringValue ?? ""
            let who = n["name"]?.stringValue.map { "\($0) (\(prefix))" } ?? prefix
            let snr = n["snr"]?.scalarText ?? "-"
            return "\(who): heard \(n["heard_s_ago"]?.intValue ?? 0) s ago, SNR \(snr) dB"
        }.joined(separator: "\n")
    }
}

struct ACL: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "acl")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
}

struct Cmd: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "cmd")
    @OptionGroup var link: LinkOptions
    @Argument var node: String
    @Argument var command: [String]
    /// The reply, then any other messages taken off the radio's queue while waiting for it.
    func text(_ v: Value) -> String {
        var lines: [String] = []
        if let r = v["reply"]?.stringValue { lines.append(r) }
        if case .array(let ms)? = v["messages"] { lines += ms.map(messageLine) }
        return lines.joined(separator: "\n")
    }
}

struct Trace: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "trace")
    @OptionGroup var link: LinkOptions
    @Argument var path: String
}
