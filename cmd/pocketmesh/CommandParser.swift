import MeshOps
import MeshSession

// Reads the command line into a command, from the operation table: which words are commands,
// which options a command has and which take a value, its positional values, help and the
// version. The grammar (options anywhere, values that begin with "-", "--") is Grammar.swift's;
// its result (path, options, "--", values) is read here.

/// A usage error of the command line itself (an unknown option, a missing value): exit 2, "See --help".
struct UsageError: Error, CustomStringConvertible {
    /// What is wrong, without where.
    var message: String
    /// The config file and line of a value that came from the file (`ConfiguredArguments`).
    var file: String?
    var line: Int?
    init(_ d: String, file: String? = nil, line: Int? = nil) {
        message = d
        self.file = file
        self.line = line
    }
    var description: String {
        guard let file, let line else { return message }
        return "\(file) line \(line): \(message)"
    }
}

/// A parsed command line: what to run.
enum ParsedCommandLine {
    /// The command and its arguments' values, by the row's names.
    case run(ParsableCommand, OperationValues)
    case help(ParsableCommand.Type, [String])
    case version
}

enum CommandParser {
    /// The type a command path names (aliases too), and the canonical path.
    static func resolve(_ words: [String]) -> (ParsableCommand.Type, [String]) {
        var type: ParsableCommand.Type = PocketMesh.self
        var path: [String] = []
        for w in words {
            guard let (sub, name) = subcommand(of: type, at: path, named: w) else { break }
            type = sub
            path.append(name)
        }
        return (type, path)
    }

    /// The command path of a command type.
    static func path(of type: ParsableCommand.Type) -> [String] {
        func find(_ t: ParsableCommand.Type, _ p: [String]) -> [String]? {
            if ObjectIdentifier(t) == ObjectIdentifier(type) { return p }
            for s in t.configuration.subcommands {
                if let found = find(s, p + [s._commandName]) { return found }
            }
            return nil
        }
        return find(PocketMesh.self, []) ?? []
    }

    /// The words of the table under `path` (its groups and operations, in the rows' order),
    /// without `help` and, unless `hidden`, the hidden ones.
    static func children(of path: [String], hidden: Bool = false) -> [String] {
        OperationTable.children(of: path).filter { w in
            let p = path + [w]
            return p != ["help"] && (hidden || !(OperationTable.row(p)?.hidden ?? OperationTable.group(p)?.hidden ?? false))
        }
    }

    /// The command a word names under the command at `path` (its name or an alias, from the
    /// table): its type (the tree's, or `RequestCommand` for a row that runs its request and that
    /// no type declares) and its name.
    static func subcommand(of type: ParsableCommand.Type, at path: [String], named word: String) -> (ParsableCommand.Type, String)? {
        guard let name = children(of: path, hidden: true).first(where: { w in
            w == word || (OperationTable.row(path + [w])?.aliases.contains(word) ?? false)
        }) else { return nil }
        if let t = type.configuration.subcommands.first(where: { $0._commandName == name }) { return (t, name) }
        return OperationTable.row(path + [name])?.request != nil ? (RequestCommand.self, name) : nil
    }

    /// The subcommand a group runs when given alone or with options only (its table's).
    static func defaultSubcommand(of type: ParsableCommand.Type, at path: [String]) -> (ParsableCommand.Type, String)? {
        OperationTable.group(path)?.defaultSubcommand.flatMap { subcommand(of: type, at: path, named: $0) }
    }

    /// `--name` or `-x` as the table spells them, for messages.
    static func label(_ a: OperationArgument) -> String {
        switch a.kind {
        case .positional: return "<\(a.name)>" + (a.repeatable ? " ..." : "")
        case .option: return "--\(a.name) <\(a.valueName ?? "value")>"
        case .flag: return "--\(a.name)"
        }
    }

    /// Parses `args` (the program's arguments, without its name).
    static func parse(_ args: [String]) throws -> ParsedCommandLine {
        if args.first == "--experimental-dump-help" { throw CleanExit.message(DumpHelp.json()) }
        // `help [COMMAND...]`
        if args.first == "help" {
            let (type, path) = resolve(Array(args.dropFirst()))
            return .help(type, path)
        }
        let (normalized, configured) = try normalizedArguments(args)
        var words = normalized[...]
        var type: ParsableCommand.Type = PocketMesh.self
        var path: [String] = []
        while let w = words.first, let (sub, name) = subcommand(of: type, at: path, named: w) {
            type = sub
            path.append(name)
            words = words.dropFirst()
        }
        let rest = Array(words)
        if rest.isEmpty, let (d, name) = defaultSubcommand(of: type, at: path) {
            type = d
            path.append(name)
        }
        // --help and --version before "--" win over everything else.
        let options = rest.prefix { $0 != "--" }
        if options.contains("-h") || options.contains("--help") { return .help(type, path) }
        if options.contains("--version") { return .version }
        guard let row = OperationTable.row(path) else {
            // A group: its subcommand is missing or unknown.
            if let first = rest.first(where: { !$0.hasPrefix("-") }) { throw UsageError(unknownCommand(first, in: type, path: path)) }
            if let first = rest.first { throw UsageError("Unknown option '\(first)'") }
            return .help(type, path)
        }
        if !row.args.contains(where: { $0.kind == .positional }), let word = firstValue(rest, path: path) {
            // A group's default command (`contacts` runs `contacts list`) takes no value: the word
            // is a mistyped subcommand of the group.
            let parent = Array(path.dropLast())
            if let d = OperationTable.group(parent)?.defaultSubcommand, d == path.last {
                throw UsageError(unknownCommand(word, in: resolve(parent).0, path: parent))
            }
        }
        let values = try fill(row: row, args: rest, configured: configured)
        var command = type.init(values)
        try validateLink(values)
        try command.validate()
        return .run(command, values)
    }

    /// Gives each wrapper of `command` its values from `args` (options, then "--" and values; for
    /// a command whose last argument takes the rest as it is, `daemon hook-exec`, everything from
    /// its first value on is a value). An option or flag the command line does not give takes its
    /// value from `configured` (the config file's), if it has one.
    /// A command that reaches a radio names one link (`LinkOptions.validate`).
    static func validateLink(_ values: OperationValues) throws {
        if OperationArgument.link.allSatisfy({ values.operation.args.contains($0) }) { try LinkOptions(values).validate() }
    }

    static func fill(row: Operation, args: [String], configured: ConfiguredArguments? = nil) throws -> OperationValues {
        var given = [[String]](repeating: [], count: row.args.count)
        var unknown: UsageError? = nil
        var typed = row.args.map { $0.kind == .positional ? "" : "--" + $0.name }  // the name as given, for messages
        var values: [String] = []
        var i = 0
        func index(ofOption name: String) -> Int? {
            if name.hasPrefix("--") {
                let n = name.dropFirst(2)
                return row.args.firstIndex { $0.kind != .positional && $0.name == n }
            }
            guard name.count == 2, let c = name.last else { return nil }
            return row.args.firstIndex { $0.kind != .positional && $0.short == c }
        }
        let positionals = row.args.indices.filter { row.args[$0].kind == .positional }
        let remainingIndex = positionals.first { row.args[$0].remaining }
        while i < args.count {
            let t = args[i]
            i += 1
            if t == "--" {
                values += args[i...]
                break
            }
            if remainingIndex != nil, !values.isEmpty || !t.hasPrefix("-") {
                // Everything from the first value on belongs to the command it runs.
                values.append(t)
                values += args[i...]
                break
            }
            guard t.hasPrefix("-"), t.count > 1, t != "-" else { values.append(t); continue }
            var name = t
            var inline: String? = nil
            if t.hasPrefix("--"), let eq = t.firstIndex(of: "=") {
                name = String(t[..<eq])
                inline = String(t[t.index(after: eq)...])
            }
            guard let k = index(ofOption: name) else {
                if looksLikeNumber(t) { values.append(t); continue }
                // Reported after the values are read, as ArgumentParser did.
                if unknown == nil { unknown = UsageError("Unknown option '\(name)'" + suggestion(for: name, in: row)) }
                continue
            }
            let a = row.args[k]
            if a.kind == .flag {
                if let inline { throw UsageError("The option '--\(a.name)' does not take any value, but '\(inline)' was specified") }
                given[k].append("")
                continue
            }
            typed[k] = name
            if let inline {
                given[k].append(inline)
            } else {
                // A value that starts with "-" is read as an option here, as ArgumentParser read it
                // (`--name=-x` gives one), unless it is a number: `--lon -0.12`, `--snr -7` (no
                // option is named like a number).
                guard i < args.count, !(args[i].hasPrefix("-") && args[i].count > 1 && !looksLikeNumber(args[i])) else {
                    throw UsageError("Missing value for '\(name) <\(a.valueName ?? "value")>'")
                }
                given[k].append(args[i])
                i += 1
            }
        }
        // Positional values in order; a repeatable one takes the rest.
        var v = 0
        for k in positionals {
            let a = row.args[k]
            if a.repeatable || a.remaining {
                given[k] = Array(values[v...])
                v = values.count
            } else if v < values.count {
                given[k] = [values[v]]
                v += 1
            }
        }
        var texts: [String: [String]] = [:]
        for (k, a) in row.args.enumerated() {
            var fromFile: ConfiguredValue? = nil
            if given[k].isEmpty, a.kind != .positional, let c = configured?.values[a.name] {
                given[k] = c.texts
                typed[k] = "--" + a.name
                fromFile = c
            }
            if given[k].isEmpty {
                if a.required { throw UsageError("Missing expected argument '\(label(a))'") }
                // The row's default, the one default there is.
                guard let d = a.defaultValue else { continue }
                given[k] = [d]
            } else if a.kind != .flag {
                // The row's type, choices and range: the one check of a value (the API's too).
                do throws(ClientError) {
                    _ = try OperationValues.commandLine(a, given[k], as: typed[k])
                } catch {
                    throw UsageError(error.message, file: fromFile.map { _ in configured?.path ?? "" }, line: fromFile?.line)
                }
                texts[a.name] = given[k]
            } else {
                texts[a.name] = given[k]
            }
        }
        if let unknown { throw unknown }
        if v < values.count {
            let extra = values[v...]
            if extra.count == 1 { throw UsageError("Unexpected argument '\(extra.first!)'") }
            throw UsageError("\(extra.count) unexpected arguments: " + extra.map { "'\($0)'" }.joined(separator: ", "))
        }
        do throws(ClientError) { return try OperationValues(commandLine: row, texts: texts) } catch { throw UsageError(error.message) }
    }

    /// The first value of a normalized command line (options first, each with its value; values
    /// that begin with "-" after "--").
    static func firstValue(_ rest: [String], path: [String]) -> String? {
        let declared = declaredOptions(of: path)
        var k = 0
        while k < rest.count {
            let t = rest[k]
            if t == "--" { return k + 1 < rest.count ? rest[k + 1] : nil }
            guard t.hasPrefix("-"), t.count > 1 else { return t }
            if declared[String(t.split(separator: "=", maxSplits: 1)[0])] == true, !t.contains("=") { k += 1 }
            k += 1
        }
        return nil
    }

    /// "unknown command 'contcts'; did you mean 'contacts'?": the visible command path nearest to
    /// the word (by edit distance), among the group's subcommands, or at the top among every
    /// command's last word (`reset-path` → `contacts reset-path`).
    static func unknownCommand(_ word: String, in type: ParsableCommand.Type, path: [String]) -> String {
        let given = path + [word]
        var best: (String, Int)? = nil  // the path and its distance; a shorter path wins a tie
        var bestWords = 0
        func consider(_ p: [String], _ name: String) {
            let d = typingDistance(Array(word), Array(name))
            guard d <= (word.count >= 4 ? 2 : 1) else { return }
            if best == nil || d < best!.1 || (d == best!.1 && p.count < bestWords) {
                best = (p.joined(separator: " "), d)
                bestWords = p.count
            }
        }
        func walk(_ p: [String]) {
            for w in children(of: p) {
                let q = p + [w]
                if p == path || path.isEmpty {
                    for name in [w] + (OperationTable.row(q)?.aliases ?? []) { consider(q, name) }
                }
                walk(q)
            }
        }
        walk(path)
        let shown = given.joined(separator: " ")
        guard let best else { return "unknown command '\(shown)'" }
        return "unknown command '\(shown)'; did you mean '\(best.0)'?"
    }

    /// " Did you mean '--json'?" for the option nearest to an unknown one, as ArgumentParser said it.
    static func suggestion(for name: String, in row: Operation) -> String {
        guard name.hasPrefix("--") else { return "" }
        let given = Array(name.dropFirst(2))
        var best: (String, Int)? = nil
        for a in row.args where a.kind != .positional && !a.hidden {
            let d = editDistance(given, Array(a.name))
            if d < max(given.count, a.name.count), best == nil || d < best!.1 { best = (a.name, d) }
        }
        return best.map { ". Did you mean '--\($0.0)'?" } ?? ""
    }

    /// Edits from `a` to `b`, two neighbours swapped counting as one (`sned` is one from `send`).
    static func typingDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var prev = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let cur = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1))
                prev = cur
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }

    static func looksLikeNumber(_ t: String) -> Bool {
        Double(t) != nil
    }
}

extension ParsableCommand {
    /// The command parsed from `args` as given (options, then values) with the config file's
    /// values: what the config file's daemon settings are checked with.
    static func parse(_ args: [String], configured: ConfiguredArguments? = nil) throws -> Self {
        let path = CommandParser.path(of: Self.self)
        guard let row = OperationTable.row(path) else { throw UsageError("\(path.joined(separator: " ")) takes no arguments") }
        let values = try CommandParser.fill(row: row, args: args, configured: configured)
        var command = Self(values)
        try CommandParser.validateLink(values)
        try command.validate()
        return command
    }

    static func message(for error: Error) -> String { "\(error)" }
}

// MARK: help

enum HelpText {
    /// `pocketmesh help PATH` and `--help`: as ArgumentParser printed it.
    static func render(_ type: ParsableCommand.Type, path: [String]) -> String {
        let row = OperationTable.row(path)
        let (abstract, discussion) = texts(path)
        var out = ""
        if !abstract.isEmpty { out += wrap("OVERVIEW: \(abstract)", indent: 0, width: 80) + "\n\n" }
        if !discussion.isEmpty { out += wrap(discussion, indent: 0, width: 80) + "\n\n" }
        let name = (["pocketmesh"] + path).joined(separator: " ")
        let args = OperationArgument.shown(row)
        let subs = CommandParser.children(of: path)
        let isGroup = path.isEmpty || !CommandParser.children(of: path, hidden: true).isEmpty
        var usage = "USAGE: \(name)"
        if args.count > 12 {
            // As ArgumentParser shortened it: the required arguments only.
            usage += " <options>"
            for a in args where a.kind == .positional || a.required { usage += " " + synopsis(a) }
        } else {
            for a in args { usage += " " + synopsis(a) }
        }
        if isGroup { usage += " <subcommand>" }
        out += usage + "\n"
        let positionals = args.filter { $0.kind == .positional }
        if !positionals.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in positionals { out += entry("<\(a.name)>", a.help + defaultNote(a)) }
        }
        out += "\nOPTIONS:\n"
        for a in args where a.kind != .positional {
            var l = (a.short.map { "-\($0), " } ?? "") + "--\(a.name)"
            if a.kind == .option { l += " <\(a.valueName ?? "value")>" }
            out += entry(l, a.help + defaultNote(a))
        }
        out += entry("--version", "Show the version.")
        out += entry("-h, --help", "Show help information.")
        if !subs.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in subs {
                let p = path + [s]
                let help = texts(p).abstract
                let isDefault = OperationTable.group(path)?.defaultSubcommand == s
                let names = ([s] + (OperationTable.row(p)?.aliases ?? [])).joined(separator: ", ")
                out += entry(names + (isDefault ? " (default)" : ""), help)
            }
            out += "\n  See '\((["pocketmesh", "help"] + path).joined(separator: " ")) <subcommand>' for detailed help.\n"
        }
        return subs.isEmpty ? out + "\n" : out
    }

    /// A command's one line and its discussion, from the table (a group's own when it is no operation).
    static func texts(_ path: [String]) -> (abstract: String, discussion: String) {
        if path.isEmpty { return (OperationTable.summary, OperationTable.discussion) }
        if let row = OperationTable.row(path) { return (row.help, row.discussion) }
        let group = OperationTable.group(path)
        return (group?.help ?? "", group?.discussion ?? "")
    }

    static func defaultNote(_ a: OperationArgument) -> String {
        guard let d = a.defaultValue, a.kind != .flag else { return "" }
        return (a.help.isEmpty ? "" : " ") + "(default: \(d))"
    }

    static func synopsis(_ a: OperationArgument) -> String {
        switch a.kind {
        case .positional:
            let s = "<\(a.name)>" + (a.repeatable ? " ..." : "")
            return a.required ? s : "[\(s)]"
        case .option:
            let s = "--\(a.name) <\(a.valueName ?? "value")>" + (a.repeatable ? " ..." : "")
            return a.required ? s : "[\(s)]"
        case .flag:
            return "[--\(a.name)]"
        }
    }

    /// One entry: the label from column 2, its help from column 26 (on the next line when the
    /// label is longer), wrapped to 54 columns.
    static func entry(_ label: String, _ help: String) -> String {
        let head = "  " + label
        let body = wrap(help, indent: 0, width: 54).split(separator: "\n", omittingEmptySubsequences: false)
        let pad = String(repeating: " ", count: 26)
        var out = ""
        if head.count < 26 {
            let first = body.first.map(String.init) ?? ""
            out = (first.isEmpty ? head : head + String(repeating: " ", count: 26 - head.count) + first) + "\n"
        } else {
            out = head + "\n" + pad + (body.first.map(String.init) ?? "") + "\n"
        }
        for l in body.dropFirst() { out += pad + l + "\n" }
        return out
    }

    /// `text` wrapped at `width` columns as ArgumentParser wrapped it (a line that more words
    /// follow keeps a column free), every line indented by `indent`; a paragraph's own leading
    /// spaces are kept.
    static func wrap(_ text: String, indent: Int, width: Int) -> String {
        var lines: [String] = []
        for para in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let lead = String(para.prefix { $0 == " " })
            let words = para.split(separator: " ")
            var line = lead
            for (k, word) in words.enumerated() {
                let last = k == words.count - 1
                if line.count > lead.count, indent + line.count + 1 + word.count > (last ? width : width - 1) {
                    lines.append(String(repeating: " ", count: indent) + line)
                    line = lead
                }
                line += (line.count > lead.count ? " " : "") + word
            }
            lines.append(String(repeating: " ", count: indent) + line)
        }
        return lines.joined(separator: "\n")
    }
}

// MARK: the command tree as ArgumentParser's --experimental-dump-help gave it

/// `--experimental-dump-help`: the command tree in the format of ArgumentParser's ToolInfo (v0),
/// made from the table, for tools that read it.
enum DumpHelp {
    static func json() -> String {
        var out = "{\"command\":"
        command(PocketMesh.self, path: [], into: &out)
        out += ",\"serializationVersion\":0}"
        return out
    }

    static func string(_ s: String) -> String { Value.string(s).json }

    static func command(_ type: ParsableCommand.Type, path: [String], into out: inout String) {
        let row = OperationTable.row(path)
        var fields: [String] = []
        let (abstract, discussion) = HelpText.texts(path)
        let aliases = row?.aliases ?? []
        if !abstract.isEmpty { fields.append("\"abstract\":\(string(abstract))") }
        if !aliases.isEmpty { fields.append("\"aliases\":[\(aliases.map(string).joined(separator: ","))]") }
        var args: [String] = []
        for a in row?.args ?? [] { args.append(argument(a)) }
        if let row, let at = OperationArgument.shown(row).firstIndex(where: { $0.name == "radio" }), !row.args.contains(where: { $0.name == "radio" }) {
            // --radio, where help shows it (after the link options; hidden arguments are not counted).
            let before = OperationArgument.shown(row)[..<at].last.map { b in row.args.firstIndex { $0.name == b.name }! + 1 } ?? 0
            args.insert(argument(OperationArgument.radio), at: before)
        }
        args.append(versionFlag)
        args.append(helpFlag)
        fields.append("\"arguments\":[\(args.joined(separator: ","))]")
        fields.append("\"commandName\":\(string(path.last ?? "pocketmesh"))")
        if let d = OperationTable.group(path)?.defaultSubcommand { fields.append("\"defaultSubcommand\":\(string(d))") }
        if !discussion.isEmpty { fields.append("\"discussion\":\(string(discussion))") }
        let hidden = OperationTable.row(path)?.hidden ?? OperationTable.group(path)?.hidden ?? false
        fields.append("\"shouldDisplay\":\(hidden ? "false" : "true")")
        let children = CommandParser.children(of: path, hidden: true)
        if !children.isEmpty {
            var subs: [String] = []
            for s in children {
                guard let (t, _) = CommandParser.subcommand(of: type, at: path, named: s) else { continue }
                var o = ""
                command(t, path: path + [s], into: &o)
                subs.append(o)
            }
            if path.isEmpty { subs.append(helpCommand) }
            fields.append("\"subcommands\":[\(subs.joined(separator: ","))]")
        }
        if !path.isEmpty {
            fields.append("\"superCommands\":[\((["pocketmesh"] + path.dropLast()).map(string).joined(separator: ","))]")
        }
        out += "{" + fields.joined(separator: ",") + "}"
    }

    static func argument(_ a: OperationArgument) -> String {
        var f: [String] = []
        if !a.help.isEmpty { f.append("\"abstract\":\(string(a.help))") }
        if let d = a.defaultValue { f.append("\"defaultValue\":\(string(d))") }
        f.append("\"isOptional\":\(a.required ? "false" : "true")")
        f.append("\"isRepeating\":\(a.repeatable || a.remaining ? "true" : "false")")
        f.append("\"kind\":\(string(a.kind.rawValue))")
        if a.kind != .positional {
            var names: [String] = []
            if let s = a.short { names.append("{\"kind\":\"short\",\"name\":\(string(String(s)))}") }
            names.append("{\"kind\":\"long\",\"name\":\(string(a.name))}")
            f.append("\"names\":[\(names.joined(separator: ","))]")
        }
        f.append("\"parsingStrategy\":\(string(a.remaining ? "allRemainingInput" : "default"))")
        if a.kind != .positional { f.append("\"preferredName\":{\"kind\":\"long\",\"name\":\(string(a.name))}") }
        f.append("\"shouldDisplay\":\(a.hidden ? "false" : "true")")
        f.append("\"valueName\":\(string(a.valueName ?? a.name))")
        return "{" + f.joined(separator: ",") + "}"
    }

    static let versionFlag = "{\"abstract\":\"Show the version.\",\"isOptional\":true,\"isRepeating\":false,\"kind\":\"flag\",\"names\":[{\"kind\":\"long\",\"name\":\"version\"}],\"parsingStrategy\":\"default\",\"preferredName\":{\"kind\":\"long\",\"name\":\"version\"},\"shouldDisplay\":true,\"valueName\":\"version\"}"
    static let helpFlag = "{\"abstract\":\"Show help information.\",\"isOptional\":true,\"isRepeating\":false,\"kind\":\"flag\",\"names\":[{\"kind\":\"short\",\"name\":\"h\"},{\"kind\":\"long\",\"name\":\"help\"}],\"parsingStrategy\":\"default\",\"preferredName\":{\"kind\":\"long\",\"name\":\"help\"},\"shouldDisplay\":true,\"valueName\":\"help\"}"
    static let helpCommand = "{\"abstract\":\"Show subcommand help information.\",\"arguments\":[{\"isOptional\":true,\"isRepeating\":true,\"kind\":\"positional\",\"parsingStrategy\":\"default\",\"shouldDisplay\":true,\"valueName\":\"subcommands\"},{\"isOptional\":true,\"isRepeating\":false,\"kind\":\"flag\",\"names\":[{\"kind\":\"short\",\"name\":\"h\"},{\"kind\":\"long\",\"name\":\"help\"},{\"kind\":\"longWithSingleDash\",\"name\":\"help\"}],\"parsingStrategy\":\"default\",\"preferredName\":{\"kind\":\"long\",\"name\":\"help\"},\"shouldDisplay\":false,\"valueName\":\"help\"},{\"abstract\":\"Show the version.\",\"isOptional\":true,\"isRepeating\":false,\"kind\":\"flag\",\"names\":[{\"kind\":\"long\",\"name\":\"version\"}],\"parsingStrategy\":\"default\",\"preferredName\":{\"kind\":\"long\",\"name\":\"version\"},\"shouldDisplay\":true,\"valueName\":\"version\"}],\"commandName\":\"help\",\"shouldDisplay\":true,\"superCommands\":[\"pocketmesh\"]}"
}
