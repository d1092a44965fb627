import MeshLink
import Glibc
import MeshSession

/// The config file, `$XDG_CONFIG_HOME/pocketmesh/config.toml` (default `~/.config/…`): named
/// radios, the default one, and each radio's daemon settings.
///
///     default_radio = "home"
///     [radio.home]
///     tcp = "127.0.0.1:5001"          # or serial = "/dev/serial/by-id/…" (and baud), or ble = "…"
///     timeout = 10                    # optional: seconds per response
///     [radio.home.daemon]             # the daemon's long options, by name (see `pocketmesh daemon --help`)
///     on-message = "/usr/local/bin/notify-me"
///     [daemon]                        # daemon options for every radio (a radio's own win)
///     [node.mast]                     # `pocketmesh node mast`: this host as a node (its options by name)
///     role = "repeater"
///     radio = "kiss:/dev/meshcore-A1B2"
///
/// Precedence: the command line, then `POCKETMESH_RADIO`, then `default_radio`.
public struct Config: Sendable {
    public struct Radio: Sendable, Equatable {
        public var name: String
        public var tcp: String?
        public var serial: String?
        public var baud: Int64?
        public var ble: String?
        public var bleMinMtu: Int64?
        public var timeout: Double?
        /// Daemon options: (name as in `--name`, value, line).
        public var daemon: [(String, TOMLValue, Int)]
        /// The line of the radio's `[radio.NAME]` table, and of each of its link settings (by option name).
        public var line = 1
        public var lines: [String: Int] = [:]

        public static func == (a: Radio, b: Radio) -> Bool {
            a.name == b.name && a.tcp == b.tcp && a.serial == b.serial && a.baud == b.baud && a.ble == b.ble
                && a.bleMinMtu == b.bleMinMtu && a.timeout == b.timeout && a.daemon.map(\.0) == b.daemon.map(\.0)
        }

        /// The radio's link settings as the config file gives them (typed, with their lines), by
        /// the name of the command line's option they set.
        public var linkValues: [String: ConfiguredValue] {
            var out: [String: ConfiguredValue] = [:]
            func put(_ name: String, _ v: TOMLValue?) { if let v { out[name] = ConfiguredValue(v, line: lines[name] ?? line) } }
            put("tcp", tcp.map(TOMLValue.string))
            put("serial", serial.map(TOMLValue.string))
            put("baud", baud.map(TOMLValue.integer))
            put("ble", ble.map(TOMLValue.string))
            put("ble-min-mtu", bleMinMtu.map(TOMLValue.integer))
            put("timeout", timeout.map(TOMLValue.float))
            return out
        }
    }

    public var path: String
    public var defaultRadio: String?
    /// In file order.
    public var radios: [Radio]
    /// The `[daemon]` table as written (every radio's daemon settings start from it).
    public var sharedDaemon: [(String, TOMLValue, Int)] = []
    /// `[node.NAME]` tables, in file order: `pocketmesh node NAME`'s options (name, value, line).
    public var nodes: [(name: String, options: [(String, TOMLValue, Int)])] = []
    /// The options a `[node.NAME]` table may set.
    public static let nodeSettings = ["role", "radio", "identity", "state-dir", "name", "password", "guest-password",
                                      "password-file", "guest-password-file", "lat", "lon",
                                      "freq", "bw", "sf", "cr", "tx-power", "companion-listen", "battery-sensor", "temperature-sensor",
                                      "gpiochip", "irq", "reset", "busy", "rxen", "txen", "tcxo", "dio2-rf-switch", "hat", "cs"]

    public func node(_ name: String) -> [(String, TOMLValue, Int)]? { nodes.first { $0.name == name }?.options }

    public func radio(_ name: String) -> Radio? { radios.first { $0.name == name } }

    /// The `[daemon]` table on its own, as a radio without a name (on a loopback link) that has
    /// only those settings: for checking their values where no radio uses them.
    public var sharedDaemonOnly: Radio {
        var r = Radio(name: "", tcp: "127.0.0.1", daemon: sharedDaemon)
        r.line = sharedDaemon.first?.2 ?? 1
        return r
    }

    /// Where the file is: `$XDG_CONFIG_HOME/pocketmesh/config.toml`, else `$HOME/.config/…`.
    public static func defaultPath() -> String {
        if let x = getenv("POCKETMESH_CONFIG"), x[0] != 0 { return String(cString: x) }
        if let x = getenv("XDG_CONFIG_HOME"), x[0] != 0 { return String(cString: x) + "/pocketmesh/config.toml" }
        let home = getenv("HOME").map { String(cString: $0) } ?? ""
        return home + "/.config/pocketmesh/config.toml"
    }

    /// The largest config file read (a config is a few hundred bytes; anything near this is a mistake).
    public static let maxBytes = 1 << 20

    /// Reads the file at `path`; nil when there is none. Errors name the file and the line: a file
    /// that cannot be read, is larger than `maxBytes` or is not UTF-8 is an error, never used in part.
    public static func load(_ path: String = defaultPath()) throws(ClientError) -> Config? {
        guard let text = try readText(path) else { return nil }
        do {
            return try Config(parsing: text, path: path)
        } catch {
            throw .usage("\(path) \(error.description); see `pocketmesh config check`.")
        }
    }

    static func readText(_ path: String) throws(ClientError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .usage("cannot read the config file \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(fd) }
        // The file can set a hook (a program the daemon runs) and where the radio is: only this
        // user's or root's, and closed to others' writes (checked on the file as opened).
        if let problem = FileTrust.problem(path, fd: fd) { throw .usage("the config file \(problem).") }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int
            switch buf.withUnsafeMutableBytes({ raw in retryingOnInterrupt { read(fd, raw.baseAddress, raw.count) } }) {
            case .success(let count): n = count
            case .failure(let e): throw .usage("cannot read the config file \(path): \(e.message).")
            }
            if n == 0 { break }
            bytes += buf[0..<n]
            if bytes.count > maxBytes {
                throw .usage("\(path) is larger than \(maxBytes / 1024) KiB: this is not a config file (see `pocketmesh config check`).")
            }
        }
        return try text(bytes, path: path)
    }

    /// The file's bytes as text; bytes that are not UTF-8 are an error naming their line.
    static func text(_ bytes: [UInt8], path: String) throws(ClientError) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        var line = 1
        var start = 0
        for (k, b) in bytes.enumerated() where b == 0x0A {
            if String(validating: bytes[start..<k], as: UTF8.self) == nil { break }
            line += 1
            start = k + 1
        }
        throw .usage("\(path) line \(line): the text is not UTF-8; see `pocketmesh config check`.")
    }

    public init(parsing text: String, path: String) throws(TOMLError) {
        self.path = path
        let doc = try TOML.parse(text)
        radios = []
        var shared: [(String, TOMLValue, Int)] = []
        for key in doc.keys {
            let line = doc.lines[key] ?? 1
            switch key {
            case "default_radio":
                guard let s = doc[key]?.string, !s.isEmpty else { throw TOMLError(line: line, message: "default_radio must be a radio's name in quotes") }
                defaultRadio = s
            case "radio":
                guard let t = doc[key]?.table else { throw TOMLError(line: line, message: "radio must be a table: [radio.NAME]") }
                for name in t.keys {
                    guard let r = t[name]?.table else { throw TOMLError(line: t.lines[name] ?? line, message: "radio.\(name) must be a table") }
                    radios.append(try Config.radio(name, r, line: t.lines[name] ?? line))
                }
            case "daemon":
                guard let t = doc[key]?.table else { throw TOMLError(line: line, message: "daemon must be a table: [daemon]") }
                shared = try Config.options(t, table: "[daemon]")
            case "node":
                guard let t = doc[key]?.table else { throw TOMLError(line: line, message: "node must be a table: [node.NAME]") }
                for name in t.keys {
                    guard let n = t[name]?.table else { throw TOMLError(line: t.lines[name] ?? line, message: "node.\(name) must be a table") }
                    var options: [(String, TOMLValue, Int)] = []
                    for k in n.keys {
                        let option = k.replacingCharacter("_", with: "-")
                        guard Config.nodeSettings.contains(option) else {
                            throw TOMLError(line: n.lines[k] ?? line, message: "\(k) is not a setting of [node.\(name)] (see `pocketmesh node --help`)")
                        }
                        options.append((option, n[k]!, n.lines[k] ?? line))
                    }
                    nodes.append((name, options))
                }
            default:
                throw TOMLError(line: line, message: "unknown setting \"\(key)\": use default_radio, [radio.NAME], [node.NAME] or [daemon]")
            }
        }
        sharedDaemon = shared
        for i in radios.indices {
            let own = Set(radios[i].daemon.map(\.0))
            radios[i].daemon = shared.filter { !own.contains($0.0) } + radios[i].daemon
        }
        if let d = defaultRadio, radio(d) == nil {
            throw TOMLError(line: doc.lines["default_radio"] ?? 1, message: "default_radio \"\(d)\" is not a [radio.\(d)] in this file")
        }
    }

    /// A daemon table's settings, each by its option's name. The radio's link and options that are
    /// not settings (`help`, `version`) are errors naming their line: the link belongs to
    /// `[radio.NAME]` (in a daemon table it would fight the radio's own), and `help = true` would
    /// make the daemon print its help and exit instead of running.
    static func options(_ t: TOMLTable, table: String) throws(TOMLError) -> [(String, TOMLValue, Int)] {
        var out: [(String, TOMLValue, Int)] = []
        for key in t.keys {
            let name = key.replacingCharacter("_", with: "-")
            let line = t.lines[key] ?? 1
            if let why = notADaemonSetting(name, table: table) { throw TOMLError(line: line, message: why) }
            out.append((name, t[key]!, line))
        }
        return out
    }

    /// Why `name` cannot be set in a daemon table, or nil.
    static func notADaemonSetting(_ name: String, table: String) -> String? {
        switch name {
        case "tcp", "serial", "ble", "baud", "ble-min-mtu", "timeout", "s", "t":
            return "\(name) is a setting of the radio's link: set it in [radio.NAME], not in \(table)"
        case "radio":
            return "radio cannot be set in \(table): a radio's daemon table is [radio.NAME.daemon]"
        case "help", "h", "version", "json", "j":
            return "\(name) is not a daemon setting (\(table) takes the daemon's options: see `pocketmesh daemon --help`)"
        default:
            return nil
        }
    }

    static func radio(_ name: String, _ t: TOMLTable, line: Int) throws(TOMLError) -> Radio {
        var r = Radio(name: name, daemon: [])
        r.line = line
        for key in t.keys {
            let l = t.lines[key] ?? line
            let v = t[key]!
            r.lines[key.replacingCharacter("_", with: "-")] = l
            func string() throws(TOMLError) -> String {
                guard let s = v.string, !s.isEmpty else { throw TOMLError(line: l, message: "\(key) must be a string in quotes") }
                return s
            }
            func integer(_ range: ClosedRange<Int64>) throws(TOMLError) -> Int64 {
                guard case .integer(let n) = v, range.contains(n) else {
                    throw TOMLError(line: l, message: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
                }
                return n
            }
            switch key.replacingCharacter("-", with: "_") {
            case "tcp": r.tcp = try string()
            case "serial": r.serial = try string()
            case "ble": r.ble = try string()
            case "baud": r.baud = try integer(1...10_000_000)
            case "ble_min_mtu": r.bleMinMtu = try integer(23...517)
            case "timeout":
                switch v {
                case .integer(let n) where n > 0 && n <= 86_400: r.timeout = Double(n)
                case .float(let d) where d > 0 && d <= 86_400: r.timeout = d
                default: throw TOMLError(line: l, message: "timeout must be a number of seconds from 0 to 86400")
                }
            case "daemon":
                guard let d = v.table else { throw TOMLError(line: l, message: "daemon must be a table: [radio.\(name).daemon]") }
                r.daemon = try options(d, table: "[radio.\(name).daemon]")
            default:
                throw TOMLError(line: l, message: "unknown setting \"\(key)\" of radio \(name): use tcp, serial, baud, ble, ble_min_mtu, timeout or [radio.\(name).daemon]")
            }
        }
        let links = [r.tcp, r.serial, r.ble].compactMap { $0 }.count
        guard links == 1 else { throw TOMLError(line: line, message: "radio \(name) needs exactly one of tcp, serial and ble") }
        return r
    }

    /// The daemon's options for `radio` as values by option name (`drain-interval`), checked
    /// against what the daemon declares (name → takes a value; `repeatable`: the options that may
    /// be given more than once, the only ones that take a list). The command line's values win
    /// over them where the parser merges the two (`ConfiguredArguments`).
    public static func daemonValues(_ radio: Radio, declared: [String: Bool], repeatable: Set<String>,
                                    path: String) throws(ClientError) -> [String: ConfiguredValue] {
        var out: [String: ConfiguredValue] = [:]
        for (name, value, line) in radio.daemon {
            let option = "--" + name
            guard let takesValue = declared[option] else {
                throw .usage("\(path) line \(line): the daemon has no option \(option) (see `pocketmesh daemon --help`).")
            }
            func scalar(_ v: TOMLValue) throws(ClientError) {
                switch v {
                case .string, .integer, .float: return
                default: throw .usage("\(path) line \(line): \(name) takes a string or a number.")
                }
            }
            if !takesValue {
                guard case .bool = value else { throw .usage("\(path) line \(line): \(name) is a flag: true or false.") }
            } else if case .array(let items) = value {
                guard repeatable.contains(option) else {
                    throw .usage("\(path) line \(line): \(name) takes one value, not a list.")
                }
                for item in items { try scalar(item) }
            } else {
                try scalar(value)
            }
            out[name] = ConfiguredValue(value, line: line)
        }
        return out
    }
}

/// A value the config file gives one argument of a command: as TOML typed it, and its line.
public struct ConfiguredValue: Sendable, Equatable {
    public var value: TOMLValue
    public var line: Int

    public init(_ value: TOMLValue, line: Int) {
        self.value = value
        self.line = line
    }

    /// What the argument is given, as the command line's words would give it: a flag's `true` is
    /// one occurrence (`false`, none), a list one value per item.
    public var texts: [String] {
        func text(_ v: TOMLValue) -> String {
            switch v {
            case .string(let s): return s
            case .integer(let n): return String(n)
            case .float(let d): return String(d)
            case .bool(let b): return b ? "true" : "false"
            case .array, .table: return ""
            }
        }
        switch value {
        case .bool(let on): return on ? [""] : []
        case .array(let items): return items.map(text)
        default: return [text(value)]
        }
    }
}

/// A command's arguments from the config file, by the names of its row's arguments: the parser
/// takes each one the command line does not give (the command line wins), and an error about one
/// names its line of `path`.
public struct ConfiguredArguments: Sendable {
    public var path: String
    public var values: [String: ConfiguredValue]

    public init(path: String, values: [String: ConfiguredValue]) {
        self.path = path
        self.values = values
    }
}
