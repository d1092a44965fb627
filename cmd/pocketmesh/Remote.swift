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
                emitLine(Value.object([("name", .string(c.name)), ("forgotten", .bool(had))]).json)
            } else {
                emitHuman(had ? "forgot the saved password of \(terminalSafeLine(c.name))" : "no password of \(terminalSafeLine(c.name)) was saved")
            }
            return
        }
        let saved = password == nil ? SavedPasswords.load()[key] : nil
        let outcome = try executor.execute(.login(key, password: password ?? saved ?? ""))
        var value = outcome.value
        if case .object(var fields) = value {
            fields.append(("saved_password", .bool(saved != nil)))
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










