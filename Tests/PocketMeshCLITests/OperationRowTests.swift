import Glibc
@testable import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

extension CommandLineParsing {
/// Every row against what the front ends do with it: each argument's range and default as the
/// parser and the API check them (one check, one message), help and the completions listing
/// exactly the row's arguments, and each API op name and command path written once, in the row.
@Suite struct OperationRowTests {
    /// The words a row needs besides `extra` to parse: its required positionals and options, and a link.
    static func words(_ row: Operation, except name: String) -> [String] {
        var out: [String] = []
        for a in row.args where a.name != name && a.required {
            let w = Self.sample(a)
            if a.kind == .option { out += ["--\(a.name)", w] } else { out.append(w) }
        }
        if row.args.contains(where: { $0.name == "tcp" }) { out += ["-t", "127.0.0.1:1"] }
        return out
    }

    /// A value the argument takes.
    static func sample(_ a: OperationArgument) -> String {
        if let r = a.range { return Value.formatDouble(r.lowerBound) }
        return a.type == .integer || a.type == .number ? "1" : (a.choices.first ?? "x")
    }

    /// The usage message of parsing `args`, "" when it parses.
    static func message(_ args: [String]) -> String {
        do { _ = try CommandParser.parse(args); return "" } catch let e as UsageError { return e.message } catch let e as ClientError {
            return e.message
        } catch { return "\(error)" }
    }

    /// Each number's range: its edges parse, the values beyond them are refused in the row's
    /// words, by the command line and by the API alike; each default is the value an argument
    /// not given has, on both doors.
    @Test func rangesAndDefaultsAreTheRowsOnBothDoors() throws {
        var checked = 0
        for row in OperationTable.rows where !row.hidden {
            for a in row.args where a.kind != .flag && !a.repeatable {
                if let r = a.range {
                    let whole = a.type == .integer
                    let step = whole ? 1.0 : 0.001
                    func shown(_ d: Double) -> String { whole ? String(Int64(d)) : Value.formatDouble(d) }
                    let head = a.kind == .positional ? [String]() : ["--\(a.name)"]
                    let rest = Self.words(row, except: a.name)
                    for edge in [r.lowerBound, r.upperBound.isInfinite ? r.lowerBound : r.upperBound] {
                        let m = Self.message(row.path + head + [shown(edge)] + rest)
                        #expect(!m.contains("must be"), "\(row.cli) \(a.display) \(shown(edge)): \(m)")
                    }
                    let below = r.lowerBound - step
                    let pair = a.type == .integer && r.upperBound == r.lowerBound + 1
                    let limits = r.upperBound.isInfinite ? "at least \(Value.formatDouble(r.lowerBound))"
                        : "\(Value.formatDouble(r.lowerBound)) \(pair ? "or" : "to") \(Value.formatDouble(r.upperBound))"
                    let name = a.kind == .positional ? "<\(a.name)>" : "--\(a.name)"
                    // A value below the range: `--x=-1` so that it is not read as an option.
                    let given = a.kind == .positional ? ["--", shown(below)] : ["--\(a.name)=\(shown(below))"]
                    let args = a.kind == .positional ? row.path + rest + given : row.path + given + rest
                    if a.kind == .positional {
                        // The value's place among the positionals is the row's order.
                        let positionals = row.args.filter { $0.kind == .positional && $0.required }
                        var values = positionals.map { p in p.name == a.name ? shown(below) : Self.sample(p) }
                        if !positionals.contains(where: { $0.name == a.name }) { values.append(shown(below)) }
                        let link = row.args.contains(where: { $0.name == "tcp" }) ? ["-t", "127.0.0.1:1"] : []
                        #expect(Self.message(row.path + link + ["--"] + values) == "\(name) must be \(limits), not \(shown(below)).", "\(row.cli)")
                    } else {
                        #expect(Self.message(args) == "\(name) must be \(limits), not \(shown(below)).", "\(row.cli)")
                    }
                    if let api = row.api, !row.daemon, !a.commandLineOnly, !OperationArgument.link.contains(a) {
                        do throws(ClientError) {
                            _ = try OperationValues(api: api, fields: [a.apiField: whole ? .integer(Int64(below)) : .double(below)])
                            Issue.record("\(api): \(a.apiField) \(below) was taken")
                        } catch {
                            #expect(error.message == "\(api): \"\(a.apiField)\" must be \(limits), not \(shown(below)).")
                        }
                    }
                    checked += 1
                }
                if let d = a.defaultValue, a.kind == .option {
                    // The default, typed by the row, is what the values hold when it is not given.
                    let v = try OperationValues(commandLine: row, texts: Dictionary(uniqueKeysWithValues: row.args.filter(\.required).map {
                        ($0.name, [Self.sample($0)])
                    }))
                    let typed = try OperationValues.commandLine(a, [d], as: "--\(a.name)")
                    #expect(v[a.name] == typed, "\(row.cli) --\(a.name)")
                    if let api = row.api, !row.daemon, !a.commandLineOnly, a.apiDefault == nil, !OperationArgument.link.contains(a),
                       let fromAPI = try? OperationValues(api: api, fields: Dictionary(uniqueKeysWithValues: row.apiArguments.filter(\.required).map {
                           ($0.apiField, Value.string(Self.sample($0)))
                       })) {
                        #expect(fromAPI[a.name] == typed, "\(api) \(a.apiField)")
                    }
                }
            }
        }
        #expect(checked > 30)
    }

    /// Help and the shell completions list exactly the row's visible arguments.
    @Test func helpAndCompletionsListTheRowsArguments() {
        let bash = OperationTable.completions(.bash)
        for row in OperationTable.rows where !row.hidden && row.cli != "help" {
            let help = HelpText.render(CommandParser.resolve(row.path).0, path: row.path)
            for a in row.args where !a.hidden {
                #expect(help.contains(a.kind == .positional ? "<\(a.name)>" : "--\(a.name)"), "\(row.cli): \(a.display) not in help")
                if a.kind != .positional { #expect(bash.contains("--\(a.name)"), "\(row.cli): \(a.display) not in completions") }
            }
            for line in help.split(separator: "\n") where line.hasPrefix("  --") || line.hasPrefix("  -") {
                let name = line.split(separator: " ").first(where: { $0.hasPrefix("--") }).map { String($0.dropFirst(2)).trimmingCharacters(",") } ?? ""
                if ["help", "version"].contains(name) { continue }
                #expect(OperationArgument.shown(row).contains { $0.name == name }, "\(row.cli): help shows --\(name)")
            }
        }
    }

    /// A command reads a number only from an argument every row types as one: a row that typed
    /// it as a string gave the command no number (hook-exec's --timeout-ms ran hooks with no time
    /// to run, sim --seed took any word).
    @Test func commandsReadNumbersOnlyFromNumberArguments() {
        var checked = 0
        for (path, text) in Self.sources("cmd") {
            for reader in ["args.whole(\"", "args.wholes(\"", "args.number(\""] {
                var rest = text[...]
                while let r = rest.firstRange(of: reader) {
                    rest = rest[r.upperBound...]
                    let name = String(rest.prefix { $0 != "\"" })
                    let args = OperationTable.rows.flatMap(\.args).filter { $0.name == name }
                    #expect(!args.isEmpty, "\(path): \(name) is no argument")
                    for a in args {
                        let ok = reader.contains("number") ? (a.type == .number || a.type == .integer) : a.type == .integer
                        #expect(ok, "\(path): \(name) is read as a number, its row types it \(a.type)")
                    }
                    checked += 1
                }
            }
        }
        #expect(checked > 40)
    }

    // MARK: written once

    static let root = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")

    /// The Swift files under a folder of the package.
    static func sources(_ folder: String) -> [(String, String)] {
        var out: [(String, String)] = []
        func walk(_ dir: String) {
            guard let d = opendir(dir) else { return }
            defer { closedir(d) }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix(".") { continue }
                let path = dir + "/" + name
                if e.pointee.d_type == UInt8(DT_DIR) { walk(path) } else if name.hasSuffix(".swift") { out.append((path, read(path))) }
            }
        }
        walk(root + "/" + folder)
        return out
    }

    static func read(_ path: String) -> String {
        guard let f = fopen(path, "r") else { return "" }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func count(_ needle: String, in text: String) -> Int {
        var n = 0
        var rest = text[...]
        while let r = rest.firstRange(of: needle) {
            n += 1
            rest = rest[r.upperBound...]
        }
        return n
    }

    /// Each API op name (of more than one word: one word is also a field's or an event's name)
    /// and each command path of more than one word is written once in the sources, in its row (an
    /// API name the rule makes from the path is not written at all). The names still written
    /// twice are listed here, with where; the list only shrinks.
    @Test func eachOpNameAndCommandPathIsWrittenOnce() {
        let files = Self.sources("Sources") + Self.sources("cmd")
        #expect(files.count > 100)
        let known: [String: Int] = [
            // The daemon's own ops (`DaemonOp`, MeshDaemonClient) are its enum's raw values.
            "hooks_failed": 2, "hooks_retry": 1, "hooks_drop": 1, "contacts_pending": 1, "contacts_add_pending": 1,
            "contacts_flush_pending": 1, "samples_signal": 1, "samples_battery": 1,
            // Secrets.swift: which result fields of an op are secret.
            "channel_add": 1, "channel_import": 1, "channel_uri": 2,
            // Not the op: a message's type and an event of the same name.
            "channel_data": 3, "raw_data": 2,
        ]
        for row in OperationTable.rows + OperationTable.apiOnly {
            if let api = row.api, api.contains("_") {
                let written = files.reduce(0) { $0 + Self.count("\"\(api)\"", in: $1.1) }
                let inRow = api == Operation.apiName(row.path) ? 0 : 1
                #expect(written == inRow + (known[api] ?? 0), "\"\(api)\" is written \(written) times")
            }
            if row.path.count > 1 {
                let written = files.filter { Self.count("\"\(row.cli)\"", in: $0.1) > 0 }.map(\.0)
                #expect(written.count == 1 && written[0].hasSuffix("OperationRows.swift"), "\"\(row.cli)\" is written in \(written)")
            }
        }
    }
}
}

extension String {
    func trimmingCharacters(_ chars: String) -> String { String(filter { !chars.contains($0) }) }
}
