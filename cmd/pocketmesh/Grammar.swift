import Glibc
import MeshOps
import MeshDaemonClient
import MeshSession

// One grammar for every command: its options may come before or after its name (and between the
// words of its path), and a value that starts with "-" is a value where the command takes one
// (`set coords 45.42 -75.70`, `channel send '#status' "-3 C outside"`).
//
// The arguments are put in one order that the parser (CommandParser) reads without guessing: the
// command path, then every option the command declares (with its value, taken as it is, even when
// it starts with "-"), then "--" and the positional values. Which options a command has, and which
// take a value, is read from its row of the operation table, so a new option needs nothing here.

/// Options that take a value wherever they appear before the command path is known (they mean
/// the same in every command that has them).
private let valuedEverywhere: Swift.Set<String> = [
    "-s", "--serial", "--baud", "-t", "--tcp", "--ble", "--ble-min-mtu", "--timeout", "--radio", "--state-dir",
]

/// The options of the command at `path`: name → whether it takes a value, from its row of the table.
func declaredOptions(of path: [String]) -> [String: Bool] {
    var out: [String: Bool] = ["-h": false, "--help": false, "--version": false]
    for a in OperationTable.row(path)?.args ?? [] where a.kind != .positional {
        out["--" + a.name] = a.kind == .option
        if let c = a.short { out["-" + String(c)] = a.kind == .option }
    }
    return out
}

/// True for a token that can only be meant as an option: `--name` or a one-letter `-x`. Anything
/// else that starts with "-" (`-75.70`, `-0`, `-3 C outside`, `-hello`) is a value.
private func looksLikeOption(_ t: String) -> Bool {
    if t.contains(" ") { return false }
    if t.hasPrefix("--") { return t.count > 2 && t.dropFirst(2).first?.isLetter == true }
    return t.count == 2 && t.dropFirst().first?.isLetter == true
}

/// The arguments in the order the parser reads: path, options, "--", values; and the values the
/// config file gives the command's arguments (its radio's link, the daemon's settings).
func normalizedArguments(_ args: [String]) throws(ClientError) -> ([String], ConfiguredArguments?) {
    var command: ParsableCommand.Type = PocketMesh.self
    var path: [String] = []
    var rest: [String] = []
    var i = 0
    // The command path: its words, with any options found between them set aside.
    while i < args.count {
        let a = args[i]
        if a == "--" { break }
        if a.hasPrefix("-"), looksLikeOption(a) {
            rest.append(a)
            if valuedEverywhere.contains(a), i + 1 < args.count { rest.append(args[i + 1]); i += 1 }
            i += 1
            continue
        }
        guard let (sub, name) = CommandParser.subcommand(of: command, at: path, named: a) else { break }
        command = sub
        path.append(name)
        i += 1
    }
    rest += args[i...]
    if let (d, name) = CommandParser.defaultSubcommand(of: command, at: path), !rest.isEmpty {
        // A group run with options or values only: they are its default subcommand's.
        command = d
        path.append(name)
    }
    // Internal commands that pass their arguments on (hook-exec) keep them as they are.
    if !command.configuration.shouldDisplay { return (path + rest, nil) }
    let options = declaredOptions(of: path)
    let configured: ConfiguredArguments?
    (rest, configured) = try withConfiguredRadio(rest, options: options, daemon: command == DaemonCommand.self)
    var leading: [String] = []
    var values: [String] = []
    var j = 0
    while j < rest.count {
        let t = rest[j]
        if t == "--" {
            values += rest[(j + 1)...]
            break
        }
        let name = t.hasPrefix("--") ? String(t.split(separator: "=", maxSplits: 1)[0]) : t
        if let takesValue = options[name] {
            leading.append(t)
            if takesValue, !t.contains("="), j + 1 < rest.count {
                leading.append(rest[j + 1])
                j += 1
            }
        } else if t.hasPrefix("-"), looksLikeOption(t) {
            leading.append(t)  // not an option of this command: the parser says so
        } else {
            values.append(t)
        }
        j += 1
    }
    var fromFile = configured
    if command == NodeCommand.Run.self, let node = values.first, !leading.contains("-h"), !leading.contains("--help") {
        fromFile = try NodeCommand.Run.configured(node)  // `node NAME`: its [node.NAME] table
    }
    return (path + leading + (values.contains { $0.hasPrefix("-") } ? ["--"] : []) + values, fromFile)
}

/// Fills in the radio from the config file when the command line names none: `--radio NAME`,
/// else `POCKETMESH_RADIO`, else the file's `default_radio` (the command line wins over the
/// environment, which wins over the file). For the daemon, the radio's daemon settings too. They
/// are values by argument name, typed as the file wrote them, that the parser merges with the
/// command line's (which wins); `rest` loses its `--radio NAME`.
func withConfiguredRadio(_ rest: [String], options: [String: Bool],
                         daemon: Bool) throws(ClientError) -> ([String], ConfiguredArguments?) {
    guard options["--tcp"] != nil else { return (rest, nil) }
    let links: Swift.Set<String> = ["-s", "--serial", "-t", "--tcp", "--ble"]
    func name(_ t: String) -> String { t.hasPrefix("--") ? String(t.split(separator: "=", maxSplits: 1)[0]) : t }
    var hasLink = false  // the command line names its link: the file's radio is not used
    var radioFlag: (index: Int, count: Int, value: String)? = nil
    var j = 0
    while j < rest.count {
        let t = rest[j]
        if t == "--" { break }
        let n = name(t)
        if n == "--radio" {
            if t.contains("=") { radioFlag = (j, 1, String(t.split(separator: "=", maxSplits: 1)[1])) }
            else if j + 1 < rest.count { radioFlag = (j, 2, rest[j + 1]); j += 1 }
        } else if t.hasPrefix("-"), options[n] != nil {
            if links.contains(n) { hasLink = true }
            if options[n] == true, !t.contains("="), j + 1 < rest.count { j += 1 }
        }
        j += 1
    }
    if hasLink && radioFlag == nil { return (rest, nil) }
    let path = Config.defaultPath()
    var out = rest
    let chosen: Config.Radio
    let config = try Config.load(path)
    if let flag = radioFlag {
        guard let r = config?.radio(flag.value) else {
            if options["--radio"] != nil { return (rest, nil) }  // a stored radio's key prefix (chats, history)
            throw .usage("no radio named \"\(flag.value)\" in \(path): add a [radio.\(flag.value)] table, or give --tcp, --serial or --ble.")
        }
        out.removeSubrange(flag.index ..< flag.index + flag.count)
        if hasLink { return (out, nil) }
        chosen = r
    } else if let env = getenv("POCKETMESH_RADIO"), env[0] != 0 {
        let n = String(cString: env)
        guard let r = config?.radio(n) else {
            throw .usage("POCKETMESH_RADIO=\(n) names no radio in \(path): add a [radio.\(n)] table, or unset it.")
        }
        chosen = r
    } else if let config, let d = config.defaultRadio, let r = config.radio(d) {
        chosen = r
    } else {
        return (rest, nil)
    }
    var values = chosen.linkValues.filter { options["--" + $0.key] != nil }
    guard let config else { return (out, ConfiguredArguments(path: path, values: values)) }
    if daemon {
        // What `config check` says about this radio's daemon, the daemon says too, naming the line.
        try DaemonSettings.check(chosen, config: config)
        try DaemonSettings.checkShared(config)
        let settings = try Config.daemonValues(chosen, declared: options, repeatable: DaemonSettings.repeatable, path: path)
        values.merge(settings) { _, setting in setting }
    } else {  // a mistake in the daemon's settings' names is reported by every command that reads the radio
        try DaemonSettings.checkNames(config, radio: chosen)
    }
    return (out, ConfiguredArguments(path: path, values: values))
}
