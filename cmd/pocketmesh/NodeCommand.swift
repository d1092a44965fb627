import Glibc
import MeshAir
import MeshBridge
import MeshDaemonClient
import MeshLink
import MeshNode
import MeshOps
import MeshSession

/// `pocketmesh node`: this host as a MeshCore node (repeater, room server, companion) on a radio;
/// `pocketmesh node cli`: one admin CLI command to the node running in a state folder.
struct NodeCommand: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "node", subcommands: [Run.self, CLI.self, Check.self])

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run")
        let args: OperationValues
        init(_ args: OperationValues) { self.args = args }
        var node: String? { args.string("node") }
        var role: String? { args.string("role") }
        var radio: String? { args.string("radio") }
        var identity: String? { args.string("identity") }
        var stateDir: String? { args.string("state-dir") }
        var name: String? { args.string("name") }
        var password: String? { args.string("password") }
        var guestPassword: String? { args.string("guest-password") }
        var passwordFile: String? { args.string("password-file") }
        var guestPasswordFile: String? { args.string("guest-password-file") }
        var lat: Double? { args.number("lat") }
        var lon: Double? { args.number("lon") }
        var freq: Double? { args.number("freq") }
        var bw: Double? { args.number("bw") }
        var sf: Int? { args.whole("sf") }
        var cr: Int? { args.whole("cr") }
        var txPower: Int? { args.whole("tx-power") }
        var companionListen: String? { args.string("companion-listen") }
        var batterySensor: String? { args.string("battery-sensor") }
        var temperatureSensor: String? { args.string("temperature-sensor") }
        var hat: String? { args.string("hat") }
        var seconds: Double? { args.number("for") }
        var observer: ObserverOptions { ObserverOptions(args) }

        /// The options of the config file's `[node.NAME]` table, as values by option name (typed
        /// as the table's row says; the parser takes those the command line does not give).
        static func configured(_ node: String) throws(ClientError) -> ConfiguredArguments {
            guard let config = try Config.load() else {
                throw ClientError.notFound("there is no config file at \(Config.defaultPath()) for [node.\(node)].")
            }
            guard let table = config.node(node) else {
                throw ClientError.notFound("\(config.path) has no [node.\(node)] table; see `pocketmesh config show`.")
            }
            let args = OperationTable.row(["node", "run"])?.args ?? []
            var values: [String: ConfiguredValue] = [:]
            for (key, value, line) in table {
                guard let a = args.first(where: { $0.name == key && $0.kind != .positional }) else { continue }
                let what: String?
                switch (a.type, value) {
                case (.string, .string), (.integer, .integer), (.number, .integer), (.number, .float), (.bool, .bool): what = nil
                case (.string, _): what = "a string in quotes"
                case (.integer, _): what = "a whole number"
                case (.number, _): what = "a number"
                case (.bool, _): what = "true or false"
                }
                if let what { throw .usage("\(config.path) line \(line): \(key) must be \(what).") }
                values[key] = ConfiguredValue(value, line: line)
            }
            return ConfiguredArguments(path: config.path, values: values)
        }

        func check() throws {
            // The role's and the identity's values, and the numbers' ranges, are the row's (checked
            // as they are parsed, from the command line or the [node.NAME] table).
            let role = self.role ?? "repeater"
            if companionListen != nil && role != "companion" { throw ValidationError("--companion-listen is for --role companion") }
            if role == "companion" && (password != nil || guestPassword != nil || passwordFile != nil || guestPasswordFile != nil) {
                throw ValidationError("--password and --guest-password (and their -file options) are for repeaters and room servers")
            }
            if password != nil && passwordFile != nil { throw ValidationError("give --password or --password-file, not both") }
            if guestPassword != nil && guestPasswordFile != nil { throw ValidationError("give --guest-password or --guest-password-file, not both") }
            for (option, value) in [("--password", password), ("--guest-password", guestPassword)] {
                if let value, value.contains(where: { $0 == "\n" || $0 == "\r" }) { throw ValidationError("\(option) must be one line") }
            }
            guard radio != nil else { throw ValidationError("--radio is required (or radio in [node.NAME]): kiss:PATH[@BAUD], sx1262[:SPIDEV] or air:HOST:PORT/NAME") }
            guard stateDir != nil else { throw ValidationError("--state-dir is required (or state-dir in [node.NAME]): the folder that keeps the node's key and settings") }
            if let identity {
                guard let source = NodeIdentitySource(rawValue: identity) else { throw ValidationError("--identity must be host or modem") }
                if source == .modem && !(radio!.hasPrefix("kiss:")) { throw ValidationError("--identity modem needs --radio kiss:PATH (the KISS modem holds the key)") }
            }
            try observer.check()
            if observer.mqttObserverNeighbors != nil { throw ValidationError("--mqtt-observer-neighbors is for the daemon: a node keeps its own neighbour table.") }
        }

        func run(_ args: OperationValues) throws {
            try check()
            let role = self.role ?? "repeater"
            let dir = stateDir!
            let state = try NodeState(dir: dir)
            let adminPassword = try passwordFile.map { try readPasswordFile($0, option: "--password-file", allowEmpty: false) } ?? password
            let guest = try guestPasswordFile.map { try readPasswordFile($0, option: "--guest-password-file", allowEmpty: true) } ?? guestPassword
            let sensors = try HostSensors(battery: batterySensor, temperature: temperatureSensor)
            var spec = try NodeRadioSpec(parsing: radio!)
            var pins: SX1262Pins? = nil
            if case let .sx1262(bus) = spec {
                let r = try SX1262Pins.resolve(spidev: bus, args)
                spec = .sx1262(spidev: r.spidev)
                pins = r.pins
            }
            // The command line's code is done with: its pages leave before the node's come in, so
            // the peak resident set is the larger of the two, not both.
            releaseStartupPages()
            let host = try NodeHost(state: state, role: NodeRole(rawValue: role)!, radio: spec,
                                    firstRun: firstRunLines(password: adminPassword, guestPassword: guest), companionListen: companionListen,
                                    pins: pins, identitySource: NodeIdentitySource(rawValue: identity ?? "host")!, sensors: sensors)
            try host.observe(observer.settings, caFile: observer.mqttCaFile)
            for line in host.announcement { print(line) }
            fflush(stdout)
            try host.run(seconds: seconds)
        }

        /// The settings the options give, as `prefs` lines: used only when the state folder has none.
        /// The passwords: given, or read from their files.
        func firstRunLines(password: String? = nil, guestPassword: String? = nil) -> [String] {
            let password = password ?? self.password, guestPassword = guestPassword ?? self.guestPassword
            var lines: [String] = []
            if let name { lines.append("name " + name) }
            if let password { lines.append("password " + password) }
            if let guestPassword { lines.append("guest.password " + guestPassword) }
            if let lat { lines.append("lat \(lat)") }
            if let lon { lines.append("lon \(lon)") }
            if freq != nil || bw != nil || sf != nil || cr != nil {
                let d = RadioParams()
                let f = freq ?? Double(d.freqKHz) / 1000, b = bw ?? Double(d.bwHz) / 1000
                lines.append("radio \(f),\(b),\(sf ?? Int(d.sf)),\(cr ?? Int(d.cr))")
            }
            if let txPower { lines.append("tx \(txPower)") }
            return lines
        }
    }

    struct CLI: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cli")
        let args: OperationValues
        init(_ args: OperationValues) { self.args = args }
        var stateDir: String? { args.string("state-dir") }
        var command: [String] { args.strings("command") ?? [] }

        func run(_ args: OperationValues) throws {
            guard let dir = stateDir else { throw ValidationError("--state-dir is required: the folder of the running node") }
            let path = NodeState.socketPath(dir)
            let fd: Int32
            do { fd = try UnixSocket.connect(path: path) } catch {
                throw ClientError.link("no node is running in \(dir) (\(error)); start it with `pocketmesh node --state-dir \(dir)`.")
            }
            defer { close(fd) }
            let line = Array((command.joined(separator: " ") + "\n").utf8)
            _ = line.withUnsafeBytes { raw in retryingOnInterrupt { send(fd, raw.baseAddress, raw.count, SocketFlags.noSignal) } }
            var reply: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let r = buf.withUnsafeMutableBytes { raw in retryingOnInterrupt { read(fd, raw.baseAddress, raw.count) } }
                guard case .success(let n) = r, n > 0 else { break }
                reply += buf[0..<n]
            }
            emitLine(String(decoding: reply, as: UTF8.self))
        }
    }
}

/// `--password-file` and `--guest-password-file`: the password is the file's first line, without
/// its line end, read as the daemon reads its secret files (`SecretFile`: a plain file no one
/// else can read, 0600 or stricter); the file must also belong to this user or root. Anything
/// else is refused with one sentence (exit 2): a password others can read or change is no secret.
func readPasswordFile(_ path: String, option: String, allowEmpty: Bool) throws -> String {
    var st = stat()
    if stat(path, &st) == 0 && st.st_uid != geteuid() && st.st_uid != 0 {
        throw ClientError.usage("\(option) \(path): it belongs to uid \(st.st_uid), not to you (uid \(geteuid())) or root; a password file must be yours.")
    }
    let bytes = try SecretFile.password(path, flag: option)
    guard !bytes.contains(0) else { throw ClientError.usage("\(option) \(path): the password holds a NUL byte.") }
    guard bytes.count <= 15 else {
        throw ClientError.usage("\(option) \(path): the password is \(bytes.count) bytes; MeshCore's passwords are at most 15.")
    }
    guard allowEmpty || !bytes.isEmpty else {
        throw ClientError.usage("\(option) \(path): its first line is empty; an empty admin password would let anyone in.")
    }
    return String(decoding: bytes, as: UTF8.self)
}
