import ArgumentParser
@testable import MeshDaemon
import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

/// The operation table against the command line as ArgumentParser declares it: every command has a
/// row with the same path, help, options and arguments (names, kinds, value names, defaults,
/// help), and every row a command, so the two cannot drift.
@Suite struct OperationTableCLITests {
    /// The command tree as ArgumentParser describes it (`--experimental-dump-help`).
    static func dump() throws -> JSONValue {
        do {
            _ = try PocketMesh.parseAsRoot(["--experimental-dump-help"])
        } catch {
            return try JSONValue.parse(PocketMesh.fullMessage(for: error))
        }
        throw TableError("--experimental-dump-help printed nothing")
    }

    struct TableError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// Every command of the tree: (path, its dump entry, its type).
    static func commands() throws -> [([String], JSONValue, ParsableCommand.Type)] {
        var out: [([String], JSONValue, ParsableCommand.Type)] = []
        func walk(_ info: JSONValue, _ type: ParsableCommand.Type, _ path: [String]) {
            out.append((path, info, type))
            for sub in info["subcommands"]?.array ?? [] {
                let name = sub["commandName"]?.string ?? ""
                guard let t = type.configuration.subcommands.first(where: { $0._commandName == name }) else {
                    if name != "help" { Issue.record("no type for \(path + [name])") }
                    // ArgumentParser's own help command.
                    out.append((path + [name], sub, HelpCommandStandIn.self))
                    continue
                }
                walk(sub, t, path + [name])
            }
        }
        walk(try dump()["command"]!, PocketMesh.self, [])
        return out
    }

    struct HelpCommandStandIn: ParsableCommand {}

    /// An argument of the dump as a table argument would be.
    static func argument(_ a: JSONValue) -> OperationArgument {
        let kind = OperationArgument.Kind(rawValue: a["kind"]?.string ?? "") ?? .flag
        let names = a["names"]?.array ?? []
        let long = names.first { $0["kind"]?.string != "short" }?["name"]?.string
        let short = names.first { $0["kind"]?.string == "short" }?["name"]?.string?.first
        var arg = OperationArgument(
            kind: kind, name: kind == .positional ? a["valueName"]?.string ?? "" : long ?? "", short: short,
            valueName: kind == .flag ? nil : a["valueName"]?.string, type: .string,
            required: !(a["isOptional"]?.bool ?? false), defaultValue: a["defaultValue"]?.string, choices: [],
            repeatable: a["isRepeating"]?.bool ?? false, hidden: !(a["shouldDisplay"]?.bool ?? true),
            remaining: a["parsingStrategy"]?.string == "allRemainingInput", help: a["abstract"]?.string ?? "")
        if kind == .flag { arg.required = false }
        return arg
    }

    /// The table's argument with what the dump does not carry (type, choices) set as the dump's.
    static func comparable(_ a: OperationArgument) -> OperationArgument {
        var a = a
        a.type = .string
        a.choices = []
        if a.kind == .positional, a.defaultValue != nil { a.required = false }
        return a
    }

    @Test func everyCommandHasARowAndEveryRowACommand() throws {
        var seenRows = Swift.Set<[String]>()
        var seenGroups = Swift.Set<[String]>()
        for (path, info, type) in try Self.commands() where !path.isEmpty {
            let subs = (info["subcommands"]?.array ?? []).filter { $0["commandName"]?.string != "help" || !path.isEmpty }
            let args = (info["arguments"]?.array ?? []).filter {
                let n = $0["preferredName"]?["name"]?.string
                return !($0["kind"]?.string == "flag" && (n == "help" || n == "version"))
            }
            let help = info["abstract"]?.string ?? ""
            let hidden = !(info["shouldDisplay"]?.bool ?? true)
            if !subs.isEmpty {
                seenGroups.insert(path)
                guard let g = OperationTable.group(path) else { Issue.record("no group \(path.joined(separator: " "))"); continue }
                #expect(g.help == help, "\(path)")
                #expect(g.defaultSubcommand == info["defaultSubcommand"]?.string, "\(path)")
                #expect(g.hidden == hidden, "\(path)")
                if args.isEmpty { continue }
            }
            seenRows.insert(path)
            guard let row = OperationTable.row(path) else { Issue.record("no row for \(path.joined(separator: " "))"); continue }
            #expect(row.help == help, "\(path)")
            #expect(row.discussion == info["discussion"]?.string ?? "", "\(path)")
            #expect(row.hidden == hidden, "\(path)")
            #expect(row.aliases == type.configuration.aliases, "\(path)")
            let mine = row.args.map(Self.comparable)
            let theirs = args.map(Self.argument)
            #expect(mine.map(\.display) == theirs.map(\.display), "\(path): arguments")
            for (m, t) in zip(mine, theirs) where m != t {
                Issue.record("\(path.joined(separator: " ")) \(m.display): table \(m), command line \(t)")
            }
        }
        #expect(Swift.Set(OperationTable.rows.map(\.path)) == seenRows)
        #expect(Swift.Set(OperationTable.groups.map(\.path)) == seenGroups)
        #expect(OperationTable.rows.count == seenRows.count, "one row per path")
    }

    /// The rows are in the order `pocketmesh --help` lists the commands.
    @Test func rowsInTheCommandLinesOrder() throws {
        let paths = try Self.commands().map(\.0).filter { OperationTable.row($0) != nil }
        #expect(OperationTable.rows.map(\.path) == paths)
    }

    /// Every op the daemon answers itself has a row marked so, with the class the daemon checks.
    @Test func everyDaemonOpHasARow() {
        let notCommands: [DaemonOp] = [.ping, .status, .channels, .outbox, .subscribe, .tunnel, .contactsFlushPending, .operation]
        for op in DaemonOp.allCases where !notCommands.contains(op) {
            guard let row = OperationTable.row(api: op.rawValue) else { Issue.record("no row for \(op.rawValue)"); continue }
            #expect(row.daemon, "\(op.rawValue)")
            #expect(row.opClass == op.operationClass, "\(op.rawValue)")
        }
        for row in OperationTable.rows where row.daemon {
            #expect(DaemonOp(rawValue: row.api ?? "") != nil, "\(row.cli)")
        }
    }
}

/// Just enough JSON for ArgumentParser's help dump.
enum JSONValue: Equatable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    subscript(key: String) -> JSONValue? { if case .object(let o) = self { return o[key] }; return nil }
    var string: String? { if case .string(let s) = self { return s }; return nil }
    var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    var array: [JSONValue]? { if case .array(let a) = self { return a }; return nil }

    struct Bad: Error {}

    static func parse(_ text: String) throws -> JSONValue {
        var p = Parser(bytes: Array(text.utf8))
        let v = try p.value()
        p.space()
        guard p.i == p.bytes.count else { throw Bad() }
        return v
    }

    struct Parser {
        var bytes: [UInt8]
        var i = 0

        mutating func space() { while i < bytes.count, [9, 10, 13, 32].contains(bytes[i]) { i += 1 } }

        mutating func literal(_ s: String) throws { for b in s.utf8 { guard i < bytes.count, bytes[i] == b else { throw Bad() }; i += 1 } }

        mutating func value() throws -> JSONValue {
            space()
            guard i < bytes.count else { throw Bad() }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var o: [String: JSONValue] = [:]
                space()
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
                while true {
                    space()
                    guard case .string(let k) = try value() else { throw Bad() }
                    space(); try literal(":")
                    o[k] = try value()
                    space()
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    try literal("}")
                    return .object(o)
                }
            case UInt8(ascii: "["):
                i += 1
                var a: [JSONValue] = []
                space()
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                while true {
                    a.append(try value())
                    space()
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    try literal("]")
                    return .array(a)
                }
            case UInt8(ascii: "\""):
                i += 1
                var out: [UInt8] = []
                while bytes[i] != UInt8(ascii: "\"") {
                    if bytes[i] == UInt8(ascii: "\\") {
                        i += 1
                        switch bytes[i] {
                        case UInt8(ascii: "n"): out.append(10)
                        case UInt8(ascii: "t"): out.append(9)
                        case UInt8(ascii: "r"): out.append(13)
                        case UInt8(ascii: "b"): out.append(8)
                        case UInt8(ascii: "f"): out.append(12)
                        case UInt8(ascii: "u"):
                            let hex = String(decoding: bytes[(i + 1)...(i + 4)], as: UTF8.self)
                            guard var code = UInt32(hex, radix: 16) else { throw Bad() }
                            i += 4
                            if code >= 0xD800, code < 0xDC00, bytes[i + 1] == UInt8(ascii: "\\") {
                                let low = UInt32(String(decoding: bytes[(i + 3)...(i + 6)], as: UTF8.self), radix: 16) ?? 0
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                                i += 6
                            }
                            out += Array(String(Character(Unicode.Scalar(code) ?? "?")).utf8)
                        default: out.append(bytes[i])
                        }
                        i += 1
                    } else {
                        out.append(bytes[i])
                        i += 1
                    }
                }
                i += 1
                return .string(String(decoding: out, as: UTF8.self))
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                let start = i
                while i < bytes.count, "+-0123456789.eE".utf8.contains(bytes[i]) { i += 1 }
                guard let d = Double(String(decoding: bytes[start ..< i], as: UTF8.self)) else { throw Bad() }
                return .number(d)
            }
        }
    }
}
