import MeshCompanion
import MeshSession
import MeshOps

struct Login: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "login")

    func run(_ args: OperationValues) throws {
        let link = LinkOptions(args)
        let node = args.string("node") ?? ""
        let password = args.string("password")
        let noSave = args.flag("no-save")
        let forget = args.flag("forget")
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
        if link.json { emitLine(value.json) } else { emitHuman(text(outcome.value.oneLine, args)) }
        if let e = outcome.error { throw e }
    }
}

struct Logout: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "logout")

    func run(_ args: OperationValues) throws {
        let link = LinkOptions(args)
        let node = args.string("node") ?? ""
        let forget = args.flag("forget")
        let radio = try link.connect(drain: false)
        let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
        let c = try executor.resolve(node)
        let outcome = try executor.execute(.logout(HexCodec.encode(c.publicKey)))
        if forget { try SavedPasswords.forget(key: HexCodec.encode(c.publicKey)) }
        if link.json { emitLine(outcome.value.json) } else { emitHuman(text(outcome.value.oneLine, args)) }
        if let e = outcome.error { throw e }
    }
}

struct Status: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "status")
}

struct Scope: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "scope")
}

struct Regions: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "regions")
    func text(_ v: Value, _ args: OperationValues) -> String {
        guard case .array(let names)? = v["regions"] else { return v.text() }
        return names.isEmpty ? "no regions" : names.compactMap(\.stringValue).joined(separator: "\n")
    }
}

struct Owner: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "owner")
}

struct Clock: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "clock")
}

struct Telemetry: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "telemetry")
    /// One record a line, e.g. "voltage (channel 1): 4.15 V".
    func text(_ v: Value, _ args: OperationValues) -> String {
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
    func text(_ v: Value, _ args: OperationValues) -> String {
        let node = args.string("node") ?? ""
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
}

struct Cmd: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "cmd")
    /// The reply, then any other messages taken off the radio's queue while waiting for it.
    func text(_ v: Value, _ args: OperationValues) -> String {
        var lines: [String] = []
        if let r = v["reply"]?.stringValue { lines.append(r) }
        if case .array(let ms)? = v["messages"] { lines += ms.map(messageLine) }
        return lines.joined(separator: "\n")
    }
}

struct Trace: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "trace")
}
