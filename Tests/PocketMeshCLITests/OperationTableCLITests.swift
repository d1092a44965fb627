@testable import MeshDaemon
import MeshOps
import MeshSession
import Testing
import MeshDaemonClient
@testable import pocketmesh
import MeshLink

extension CommandLineParsing {
/// The command line against the operation table: every command type has a row (or is a group of
/// the table) with the same path and aliases, and declares none of the row's arguments (a radio
/// command reads them by name) or each of them once by its name, of its kind; every row has a
/// command.
@Suite struct OperationTableCLITests {
    /// Every command of the tree, as the parser finds it in the table, with its type (the tree's,
    /// or `RequestCommand` for a row that runs its request).
    static func commands() -> [([String], ParsableCommand.Type)] {
        var out: [([String], ParsableCommand.Type)] = []
        func walk(_ t: ParsableCommand.Type, _ path: [String]) {
            out.append((path, t))
            for w in CommandParser.children(of: path, hidden: true) {
                if let (s, _) = CommandParser.subcommand(of: t, at: path, named: w) { walk(s, path + [w]) }
            }
        }
        walk(PocketMesh.self, [])
        return out
    }

    @Test func everyCommandHasARowAndEveryRowACommand() {
        // Every type of the tree is a row or a group of the table, at its path, named alike.
        func walkTypes(_ t: ParsableCommand.Type, _ path: [String]) {
            for s in t.configuration.subcommands {
                let p = path + [s._commandName]
                #expect(OperationTable.row(p) != nil || OperationTable.group(p) != nil, "\(p): neither a row nor a group")
                #expect((OperationTable.row(p)?.aliases ?? []) == s.configuration.aliases, "\(p)")
                #expect((OperationTable.row(p)?.hidden ?? OperationTable.group(p)?.hidden ?? false) == !s.configuration.shouldDisplay, "\(p)")
                walkTypes(s, p)
            }
        }
        walkTypes(PocketMesh.self, [])
        var rows = Swift.Set<[String]>()
        var groups = Swift.Set<[String]>()
        for (path, type) in Self.commands() where !path.isEmpty {
            if OperationTable.group(path) != nil { groups.insert(path) }
            guard let row = OperationTable.row(path) else {
                #expect(OperationTable.group(path) != nil, "no row for \(path.joined(separator: " "))")
                continue
            }
            rows.insert(path)
            // A row no type declares runs its request.
            #expect(type != RequestCommand.self || row.request != nil, "\(row.cli)")
        }
        #expect(Swift.Set(OperationTable.rows.map(\.path)).subtracting([["help"]]) == rows)
        #expect(Swift.Set(OperationTable.groups.map(\.path)) == groups)
    }

    /// A number is checked by its row alone: a command's property type once refused, in other
    /// words, values its row did not bound (`sim --air-port 70000`).
    @Test func aRangeIsTheRowsEvenWhereTheCommandHoldsTheValue() {
        func message(_ args: [String]) -> String {
            do { _ = try CommandParser.parse(args); return "" } catch { return "\(error)" }
        }
        #expect(message(["sim", "--air-port", "70000"]) == "--air-port must be 1 to 65535, not 70000.")
        #expect(message(["sim-bench", "--protocol", "300"]) == "--protocol must be 13 or 14, not 300.")
        #expect(message(["history", "x", "--before=-1"]) == "--before must be at least 0, not -1.")
        #expect(message(["daemon", "--tcp", "h:1", "--hook-concurrency", "65"]) == "--hook-concurrency must be 1 to 64, not 65.")
        // node's own checks of its numbers are the rows' now (and its role's, the row's choices).
        #expect(message(["node", "run", "--sf", "13", "--radio", "kiss:/dev/null"]) == "--sf must be 5 to 12, not 13.")
        #expect(message(["node", "run", "--lat", "91", "--radio", "kiss:/dev/null"]) == "--lat must be -90 to 90, not 91.")
        #expect(message(["node", "check", "--cr", "9"]) == "--cr must be 5 to 8, not 9.")
        #expect(message(["node", "run", "--role", "hub"]) == "--role takes repeater, room or companion, not \"hub\".")
    }

    /// The rows are in the order `pocketmesh --help` lists the commands.
    @Test func rowsInTheCommandLinesOrder() {
        let paths = Self.commands().map(\.0).filter { OperationTable.row($0) != nil }
        #expect(OperationTable.rows.map(\.path).filter { $0 != ["help"] } == paths)
    }

    /// Every op the daemon answers itself has a row marked so (a command's, or one of the API's
    /// own ops), and the daemon checks the row's class.
    @Test func everyDaemonOpHasARow() {
        for op in DaemonOp.allCases where op != .operation {
            guard let row = OperationTable.daemonRow(api: op.name) else { Issue.record("no row for \(op.name)"); continue }
            #expect(row.daemon, "\(op.name)")
            #expect(row.opClass != nil && row.opClass == op.operationClass, "\(op.name)")
            // One row points at it, and its name is that row's API name.
            #expect((OperationTable.rows + OperationTable.apiOnly).filter { $0.daemonOp == op }.count == 1, "\(op.name)")
            #expect(row.daemonOp == op && DaemonOp(name: op.name) == op && op.name == row.api, "\(op.name)")
        }
        #expect(DaemonOp.operation.name == "operation" && DaemonOp(name: "operation") == nil)
        for row in OperationTable.rows where row.daemon {
            #expect(row.daemonOp != nil && DaemonOp(name: row.api ?? "") == row.daemonOp, "\(row.cli)")
        }
        // The API's own ops are not commands; the daemon's `status` is not the node's.
        #expect(OperationTable.apiOnly.allSatisfy { $0.path.isEmpty && OperationTable.row($0.path) == nil })
        #expect(OperationTable.daemonRow(api: "status")?.apiArguments.isEmpty == true)
        #expect(OperationTable.row(api: "status")?.daemon == false)
        #expect(OperationTable.daemonRow(api: "channel_list") == nil)
    }

    /// The parser reads the table: options anywhere, values that start with "-", "--", and the
    /// usage errors in ArgumentParser's words.
    @Test func parsing() throws {
        func parse(_ args: [String]) throws -> OperationValues {
            guard case .run(_, let v) = try CommandParser.parse(args) else { throw UsageError("not a command") }
            return v
        }
        let remove = try parse(["contacts", "remove", "--tcp", "h:1", "-j", "alice"])
        #expect(remove.operation.cli == "contacts remove")
        #expect(remove.string("contact") == "alice" && LinkOptions(remove).tcp == "h:1" && LinkOptions(remove).json)
        let set = try parse(["--tcp=h:1", "set", "coords", "45.42", "-75.70"])
        #expect(set.string("setting") == "coords" && set.strings("values") == ["45.42", "-75.70"])
        let send = try parse(["send", "--tcp", "h:1", "--", "bob", "--json"])
        #expect(send.strings("text") == ["--json"] && !LinkOptions(send).json)
        let fav = try parse(["contacts", "favorite", "a", "on", "-t", "h"])
        #expect(fav.operation.cli == "contacts favourite" && fav.flag("state"))
        func message(_ args: [String]) -> String {
            do { _ = try CommandParser.parse(args); return "" } catch { return "\(error)" }
        }
        #expect(message(["info", "--bogus", "-t", "h"]) == "Unknown option '--bogus'. Did you mean '--baud'?")
        #expect(message(["info", "--zzzzzzzz", "-t", "h"]) == "Unknown option '--zzzzzzzz'")
        // A missing argument is reported before an unknown option, and that before an extra value.
        #expect(message(["contacts", "remove", "--bogus", "-t", "h"]) == "Missing expected argument '<contact>'")
        #expect(message(["info", "extra", "--bogus", "-t", "h"]) == "Unknown option '--bogus'. Did you mean '--baud'?")
        // An option's value that starts with "-" is read as an option (`--name=-x` gives one).
        #expect(message(["login", "n", "-p", "-secret", "-t", "h"]) == "Missing value for '-p <password>'")
        #expect(try parse(["login", "n", "--password=-secret", "-t", "h"]).string("password") == "-secret")
        #expect(message(["contacts", "remove", "-t", "h"]) == "Missing expected argument '<contact>'")
        #expect(message(["info", "extra", "-t", "h"]) == "Unexpected argument 'extra'")
        #expect(message(["scan", "--for", "x"]) == "The value 'x' is invalid for '--for <seconds>'")
        #expect(message(["info", "-t", "h", "--timeout"]) == "Missing value for '--timeout <seconds>'")
        #expect(message(["send", "alice", "-t", "h"]) == "Missing expected argument '<text> ...'")
    }
}
}
