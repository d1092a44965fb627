import MeshOps
import MeshDaemonClient
import MeshSession

/// The daemon's settings in the config file (`[daemon]` and `[radio.NAME.daemon]`), checked the
/// way the daemon checks its command line: the same parser and the same `check()`, so a file that
/// `config check` accepts starts a daemon that uses every setting in it, and a setting the daemon
/// would refuse, ignore or misuse is an error naming its line (exit 2) in both.
enum DaemonSettings {
    /// The daemon's options: name → takes a value.
    static var declared: [String: Bool] { declaredOptions(of: ["daemon"]) }

    /// The daemon's options that may be given more than once (the only ones a list can set).
    static var repeatable: Swift.Set<String> {
        Swift.Set((OperationTable.row(["daemon"])?.args ?? []).filter { $0.kind == .option && $0.repeatable }.map { "--" + $0.name })
    }

    /// The names only: every key of every daemon table is one of the daemon's options (what every
    /// command that reads the radio checks; the values are the daemon's to check).
    static func checkNames(_ config: Config, radio: Config.Radio) throws(ClientError) {
        let (declared, repeatable) = (Self.declared, Self.repeatable)
        _ = try Config.daemonValues(radio, declared: declared, repeatable: repeatable, path: config.path)
        var shared = radio
        shared.daemon = config.sharedDaemon
        _ = try Config.daemonValues(shared, declared: declared, repeatable: repeatable, path: config.path)
    }

    /// The whole file: every radio's daemon settings as that radio's daemon would start with them,
    /// and the `[daemon]` table's values on their own (also where no radio uses them).
    static func check(_ config: Config) throws(ClientError) {
        for r in config.radios { try check(r, config: config) }
        try checkShared(config)
    }

    /// The `[daemon]` table's values on their own (a radio may complete them, so not together).
    static func checkShared(_ config: Config) throws(ClientError) {
        guard !config.sharedDaemon.isEmpty else { return }
        try validate(config.sharedDaemonOnly, path: config.path, combination: false)
    }

    /// One radio's daemon settings (its own and those of `[daemon]` it does not override).
    static func check(_ radio: Config.Radio, config: Config) throws(ClientError) {
        try checkNames(config, radio: radio)
        try validate(radio, path: config.path, combination: true)
    }

    /// Parses the radio's link and daemon settings as the daemon's arguments (values from the
    /// file, no command line) and runs the daemon's checks; an error names the line of the setting
    /// it is about.
    static func validate(_ radio: Config.Radio, path: String, combination: Bool) throws(ClientError) {
        var values = radio.linkValues
        values.merge(try Config.daemonValues(radio, declared: declared, repeatable: repeatable, path: path)) { _, setting in setting }
        var message: String? = nil
        var knownLine: Int? = nil
        do {
            let command = try DaemonCommand.parse([], configured: ConfiguredArguments(path: path, values: values))
            try command.checkValues()
            if combination { try command.checkCombination() }
        } catch let e as UsageError {
            message = e.message
            knownLine = e.line
        } catch let e as ClientError {
            message = e.message
        } catch let e as ValidationError {
            message = e.message
        } catch {
            message = DaemonCommand.message(for: error)
        }
        guard var m = message else { return }
        if m.hasPrefix("Error: ") { m.removeFirst(7) }
        m = m.split(separator: "\n").first.map(String.init) ?? m
        while m.last == "." { m.removeLast() }
        let scope = radio.name.isEmpty ? "[daemon]" : "radio \(radio.name)"
        throw .usage("\(path) line \(knownLine ?? line(of: m, in: radio)): \(m) (\(scope)); see `pocketmesh config check`.")
    }

    /// The line of the setting `message` is about (a check of the daemon's that saw only values):
    /// the first option it names that the file sets, else the radio's table.
    static func line(of message: String, in radio: Config.Radio) -> Int {
        var candidates: [(String, Int)] = radio.daemon.map { ("--" + $0.0, $0.2) }
        for (name, line) in radio.lines { candidates.append(("--" + name, line)) }
        var best: (position: Int, line: Int)? = nil
        let chars = Array(message)
        for (option, line) in candidates {
            let o = Array(option)
            var i = 0
            while i + o.count <= chars.count {
                if Array(chars[i..<(i + o.count)]) == o {
                    let next = i + o.count < chars.count ? chars[i + o.count] : " "
                    if !(next.isLetter || next.isNumber || next == "-") {
                        if best == nil || i < best!.position { best = (i, line) }
                        break
                    }
                }
                i += 1
            }
        }
        return best?.line ?? radio.line
    }
}
