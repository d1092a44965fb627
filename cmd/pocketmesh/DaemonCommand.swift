import Glibc
import MeshDaemon
import MeshLink
import MeshOps
import MeshStore
import MeshSession
import MeshDaemonClient
import MeshHub
import MeshBridge

/// `pocketmesh daemon`: owns one radio in the foreground (for systemd or a terminal).
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "daemon", subcommands: [HookExecCommand.self])
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var radio: RadioLinkOptions { RadioLinkOptions(args) }

    var stateDir: String? { args.string("state-dir") }

    var socket: String? { args.string("socket") }

    var apiGroup: String? { args.string("api-group") }

    var name: String? { args.string("name") }

    var onMessage: String? { args.string("on-message") }

    var hookConcurrency: Int { args.whole("hook-concurrency") ?? 0 }

    var hookTimeout: Double { args.number("hook-timeout") ?? 0 }

    var hookAttempts: Int { args.whole("hook-attempts") ?? 0 }

    var hooksFromStart: Bool { args.flag("hooks-from-start") }

    var drainInterval: Double { args.number("drain-interval") ?? 0 }

    var timeout: Double { args.number("timeout") ?? 0 }

    var companionListen: [String] { args.strings("companion-listen") ?? [] }

    var companionWs: [String] { args.strings("companion-ws") ?? [] }

    var web: [String] { args.strings("web") ?? [] }

    var webPasswordFile: String? { args.string("web-password-file") }

    var companionMaxClients: Int { args.whole("companion-max-clients") ?? 0 }

    var companionIdleTimeout: Int { args.whole("companion-idle-timeout") ?? 0 }

    var lowBattery: Int? { args.whole("low-battery") }

    var batteryEvery: Double { args.number("battery-every") ?? 0 }

    var mqtt: [String] { args.strings("mqtt") ?? [] }

    var mqttPrefix: String { args.string("mqtt-prefix") ?? "" }

    var mqttUser: String? { args.string("mqtt-user") }

    var mqttPasswordFile: String? { args.string("mqtt-password-file") }

    var mqttAllow: String? { args.string("mqtt-allow") }

    var observer: ObserverOptions { ObserverOptions(args) }
    var mqttCaFile: String? { observer.mqttCaFile }

    /// The MQTT bridge's classes: the default (read, message) widened by --mqtt-allow.
    func mqttAllowed() throws -> AllowedClasses {
        var allowed = AllowedClasses.mqttDefault
        guard let mqttAllow else { return allowed }
        // `none`: no commands at all (the bridge subscribes to no command topic).
        let parts = mqttAllow.split(whereSeparator: { $0 == "," || $0 == "+" }).map { String($0.filter { $0 != " " }).lowercased() }
        if parts.contains("none") {
            guard parts.count == 1 else { throw ValidationError("--mqtt-allow: none goes alone (it turns commands off).") }
            return AllowedClasses([])
        }
        let extra: AllowedClasses
        do { extra = try AllowedClasses(parsing: mqttAllow) } catch { throw ValidationError("--mqtt-allow: \(error.message)") }
        if extra.allows(.secret) { throw ValidationError("--mqtt-allow: the secret class (the private key, signing with it) is never allowed over MQTT.") }
        for c in extra.classes { allowed.insert(c) }
        return allowed
    }

    // Checked in run(), not validate(): validate() also runs for the hook-exec subcommand.
    // `config check` runs the same checks on the config file's settings (DaemonSettings).
    func check() throws {
        try checkValues()
        try checkCombination()
    }

    /// Each option's value on its own: ranges, and what the daemon would otherwise find only later
    /// (a link address it cannot parse, a hook it cannot run). Every message names its option.
    func checkValues() throws {
        if let tcp = radio.tcp {
            do throws(LinkError) { _ = try TCPAddress(parsing: tcp) } catch { throw ValidationError("--tcp: \(error)") }
        }
        if let ble = radio.ble {
            do throws(LinkError) { _ = try BLEAddress(parsing: ble) } catch { throw ValidationError("--ble: \(error)") }
        }
        if radio.serial != nil, SerialSpeed(baud: radio.baud) == nil { throw ValidationError("--baud \(radio.baud) is not a serial speed this system supports.") }
        if let name, !RuntimeDirectory.isValidName(name) { throw ValidationError(RuntimeDirectory.nameRule) }
        for l in companionListen {
            do { _ = try HubListener(parsing: l) } catch { throw ValidationError(error.message) }
        }
        for l in companionWs {
            do { _ = try HubListener(parsing: l, webSocket: true) } catch { throw ValidationError(error.message) }
        }
        var webListeners: [WebListener] = []
        for l in web {
            do { webListeners.append(try WebListener(parsing: l)) } catch { throw ValidationError(error.message) }
        }
        if let f = webPasswordFile {
            do throws(DaemonError) { _ = try SecretFile.password(f, flag: "--web-password-file") } catch { throw ValidationError(error.message) }
        } else if let problem = webListeners.lazy.compactMap({ $0.loginProblem(password: false) }).first {
            throw ValidationError(problem)
        }
        _ = try mqttAllowed()
        if let g = apiGroup {
            do throws(DaemonError) { _ = try APIGroup(parsing: g) } catch { throw ValidationError(error.message) }
        }
        if let cmd = onMessage, (Spawn.splitCommand(cmd) ?? []).isEmpty {
            throw ValidationError("--on-message: cannot split \"\(cmd)\" into words (unbalanced quote?).")
        }
        if let cmd = onMessage, let program = Spawn.splitCommand(cmd)?.first,
           let problem = Spawn.problem(running: program, path: getenv("PATH").map { String(cString: $0) }) {
            throw ValidationError("--on-message: cannot run the hook: \(problem).")
        }
    }

    /// The options together: one link, and options that only mean something with another.
    func checkCombination() throws {
        if [radio.serial, radio.tcp, radio.ble].compactMap({ $0 }).count != 1 {
            throw ValidationError("give exactly one of --serial PATH (or auto), --tcp HOST[:PORT] and --ble ADDRESS.")
        }
        if mqtt.isEmpty && (mqttUser != nil || mqttPasswordFile != nil || mqttPrefix != "meshcore" || mqttAllow != nil) {
            throw ValidationError("--mqtt-user, --mqtt-password-file, --mqtt-prefix and --mqtt-allow go with --mqtt URL.")
        }
        if webPasswordFile != nil && web.isEmpty { throw ValidationError("--web-password-file goes with --web HOST:PORT.") }
        if hooksFromStart && onMessage == nil { throw ValidationError("--hooks-from-start goes with --on-message CMD.") }
        try observer.check()
    }

    func run(_ args: OperationValues) throws {
        do { try check() } catch let e as ValidationError {
            writeStderr("pocketmesh daemon: \(e.message)")
            throw ExitCode(2)
        }
        var env: [String: String] = [:]
        for entry in Spawn.currentEnvironment() {
            if let eq = entry.firstIndex(of: "=") { env[String(entry[..<eq])] = String(entry[entry.index(after: eq)...]) }
        }
        var config = Daemon.Config(link: radio.serial.map { "serial:" + $0 } ?? radio.tcp.map { "tcp:" + $0 } ?? "ble:" + (radio.ble ?? ""))
        config.baud = radio.baud
        config.bleMinimumMTU = radio.bleMinMtu
        config.stateDir = stateDir
        config.socketPath = socket
        config.apiGroup = apiGroup.flatMap { try? APIGroup(parsing: $0) }
        config.name = name
        config.environment = env
        config.hookConcurrency = hookConcurrency
        config.hookTimeoutMS = UInt64(hookTimeout * 1000)
        config.lowBatteryMV = lowBattery
        config.batteryCheckMS = UInt64(batteryEvery * 1000)
        config.hookMaxAttempts = hookAttempts
        config.hooksFromStart = hooksFromStart
        config.drainIntervalMS = UInt64(drainInterval * 1000)
        config.commandTimeoutMS = UInt64(timeout * 1000)
        config.companionListeners = companionListen.compactMap { try? HubListener(parsing: $0) }
            + companionWs.compactMap { try? HubListener(parsing: $0, webSocket: true) }
        config.companionMaxClients = companionMaxClients
        config.webListeners = web.compactMap { try? WebListener(parsing: $0) }
        config.webPasswordFile = webPasswordFile
        config.companionIdleTimeoutMS = UInt64(companionIdleTimeout) * 1000
        func broker(_ url: String) -> MQTTSettings {
            var m = MQTTSettings(url: url)
            m.prefix = mqttPrefix
            m.user = mqttUser
            m.passwordFile = mqttPasswordFile
            m.allowed = (try? mqttAllowed()) ?? .mqttDefault
            return m
        }
        config.mqtt = mqtt.map(broker)
        config.mqttCAFile = mqttCaFile
        config.mqttObservers = observer.settings
        if let cmd = onMessage {
            config.hook = Spawn.splitCommand(cmd)
            config.hookWrapper = [selfExecutable(), "daemon", "hook-exec"]
            config.adoptHookOrphans = true
        }
        let daemon: Daemon
        do {
            daemon = try Daemon(config: config)
        } catch {
            writeStderr("pocketmesh daemon: \(error)")
            throw ExitCode(startFailureCode(error))
        }
        // Log lines can carry what came from the mesh, a broker or a client (names, texts, hook
        // output): shown harmlessly, a newline as `\n`.
        let write = daemon.log
        daemon.log = { write(terminalSafeLine($0)) }  // one call, one line: nothing from outside forges a line
        // What start-up alone ran (the command line's table, option parsing, the settings) leaves
        // the resident set; what the daemon runs from here on faults back in (as in `pocketmesh node`).
        releaseStartupPages()
        let code = daemon.run()
        if code != 0 { throw ExitCode(code) }
    }
}

/// The exit code of a daemon that could not start: its own error's, 3 when another process holds
/// the radio's store, else 7 (the store, a file or a socket could not be opened).
func startFailureCode(_ error: any Error) -> Int32 {
    if let e = error as? DaemonError { return e.exitCode }
    if case .locked? = error as? StoreError { return ErrorKind.busy.exitCode }
    return ErrorKind.storage.exitCode
}

/// The wrapper each hook runs under (internal; see HookRunner).
struct HookExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hook-exec", shouldDisplay: false)
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var timeoutMs: UInt64 { args.whole("timeout-ms") ?? 0 }
    var graceMs: UInt64 { args.whole("grace-ms") ?? 0 }
    var outputLimit: Int { args.whole("output-limit") ?? 0 }
    var marker: String { args.string("marker") ?? "" }
    var command: [String] { args.strings("command") ?? [] }

    func run(_ args: OperationValues) throws {
        var argv = command
        if argv.first == "--" { argv.removeFirst() }
        guard !argv.isEmpty else { throw ValidationError("no command given after the marker.") }
        var options = HookExec.Options()
        options.timeoutMS = timeoutMs
        options.graceMS = graceMs
        options.outputLimit = max(0, outputLimit)
        let code = HookExec.run(marker: marker, argv: argv, options: options)
        if code != 0 { throw ExitCode(code) }
    }
}

/// This program's own path (for re-running itself as the hook wrapper).
func selfExecutable() -> String {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    if n > 0 { return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    return CommandLine.arguments[0]
}

func writeStderr(_ s: String) { writeError(s) }

/// The observer uploader's options (`--mqtt-observer URL --mqtt-iata CODE` and what goes with
/// them): the same for the daemon and `pocketmesh node`.
struct ObserverOptions {
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var mqttCaFile: String? { args.string("mqtt-ca-file") }
    var mqttObserver: [String] { args.strings("mqtt-observer") ?? [] }
    var mqttIata: String? { args.string("mqtt-iata") }
    var mqttObserverKey: String? { args.string("mqtt-observer-key") }
    var mqttObserverPasswordFile: String? { args.string("mqtt-observer-password-file") }
    var mqttObserverAudience: String? { args.string("mqtt-observer-audience") }
    var mqttObserverOwner: String? { args.string("mqtt-observer-owner") }
    var mqttObserverEmail: String? { args.string("mqtt-observer-email") }
    var mqttObserverDecode: String? { args.string("mqtt-observer-decode") }
    var mqttObserverNeighbors: Int? { args.whole("mqtt-observer-neighbors") }

    func check() throws {
        if mqttObserver.isEmpty && ([mqttIata, mqttObserverKey, mqttObserverPasswordFile, mqttObserverAudience, mqttObserverOwner, mqttObserverEmail, mqttObserverDecode].contains(where: { $0 != nil }) || mqttObserverNeighbors != nil) {
            throw ValidationError("--mqtt-iata and the other --mqtt-observer-… options go with --mqtt-observer URL.")
        }
        guard !mqttObserver.isEmpty else { return }
        guard let mqttIata else { throw ValidationError("--mqtt-observer needs --mqtt-iata (the airport code of your region, e.g. SEA).") }
        if ObserverFormat.iata(mqttIata) == nil { throw ValidationError(ObserverFormat.iataRefusal(mqttIata)) }
        if let o = mqttObserverOwner, ObserverFormat.owner(o) == nil { throw ValidationError("--mqtt-observer-owner: give the owner's public key as 64 hex digits.") }
        if let d = mqttObserverDecode, ObserverFormat.channels(d) == nil { throw ValidationError(ObserverFormat.channelsRefusal(d)) }
        if let e = mqttObserverEmail, ObserverFormat.email(e) == nil { throw ValidationError("--mqtt-observer-email \"\(e)\": not an email address.") }
    }

    var settings: [ObserverSettings] {
        mqttObserver.map { url in
            var o = ObserverSettings(url: url)
            o.iata = mqttIata
            o.keyFile = mqttObserverKey
            o.passwordFile = mqttObserverPasswordFile
            o.audience = mqttObserverAudience
            o.owner = mqttObserverOwner
            o.email = mqttObserverEmail
            o.decode = mqttObserverDecode
            o.neighbors = mqttObserverNeighbors
            return o
        }
    }
}
