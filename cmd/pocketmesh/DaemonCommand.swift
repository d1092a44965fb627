import ArgumentParser
import Glibc
import MeshDaemon
import MeshLink
import MeshOps
import MeshStore
import MeshSession

/// `pocketmesh daemon`: owns one radio in the foreground (for systemd or a terminal).
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Own one radio: keep the link up, store every message, send the outbox, run hooks, serve the local API.",
        discussion: """
            Runs in the foreground and logs one line per step to stderr. Every message drained from the radio \
            is appended to the store (fsync) before the next one is requested. While it runs, other pocketmesh \
            commands for the same radio go through its socket.

            API: newline-delimited JSON on a Unix socket (default $XDG_RUNTIME_DIR/pocketmesh/NAME.sock, \
            mode 0600), e.g. {"id":1,"op":"send","to":"alice","text":"hi"}; {"op":"subscribe"} streams events.

            Hook: --on-message CMD runs CMD (split into words, no shell) once per received message, with the \
            message as JSON on stdin and POCKETMESH_ID, POCKETMESH_KIND, POCKETMESH_FROM, POCKETMESH_TEXT, \
            POCKETMESH_CHANNEL, POCKETMESH_TIMESTAMP, ... in the environment. Exit 0 marks it delivered; \
            anything else is retried with backoff. Delivery survives restarts.

            systemd: with NOTIFY_SOCKET set it sends READY=1 after the first handshake and sync, STATUS= lines, \
            and WATCHDOG=1 at half of WatchdogSec. See contrib/pocketmesh.service.
            """,
        subcommands: [HookExecCommand.self, OpExecCommand.self]
    )

    @OptionGroup var radio: RadioLinkOptions

    @Option(help: ArgumentHelp("State folder (default $XDG_STATE_HOME/pocketmesh).", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("API socket path (default $XDG_RUNTIME_DIR/pocketmesh/NAME.sock).", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("Name of this daemon's socket and registry entry (default: from the link).", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("Program to run for each received message (no shell; words split like a shell would, without expansion).", valueName: "cmd"))
    var onMessage: String?

    @Option(help: ArgumentHelp("Hooks running at once.", valueName: "n"))
    var hookConcurrency: Int = 2

    @Option(help: ArgumentHelp("Seconds a hook may run before SIGTERM (then SIGKILL).", valueName: "seconds"))
    var hookTimeout: Double = 30

    @Option(help: ArgumentHelp("Runs of a message's hook before it is given up (see `pocketmesh hooks`).", valueName: "n"))
    var hookAttempts: Int = 10

    @Flag(help: "A hook with no delivery cursor in the store (new, or its cursor lost) gets every stored message, oldest first (default: it starts after the newest, and the log says so).")
    var hooksFromStart = false

    @Option(help: ArgumentHelp("Seconds between safety-net drains of the radio's queue.", valueName: "seconds"))
    var drainInterval: Double = 60

    @Option(help: ArgumentHelp("Seconds to wait for each radio response.", valueName: "seconds"))
    var timeout: Double = 5

    @Option(help: ArgumentHelp("Serve the companion protocol (WiFi framing) to apps on this address; repeatable. Its clients may use the operation classes read, message and config; options after commas: read-only (read only), allow=CLASS+CLASS (adds admin, secret, ...), app=NAME (every client on it is app NAME, with its own message cursor: one listener per meshcore_py-based app, which all send the name mccli).", valueName: "host:port[,opts]"))
    var companionListen: [String] = []

    @Option(help: ArgumentHelp("Serve the companion protocol over WebSocket on this address (one binary message per frame, '<'/'>' header included), for browser apps; repeatable; the same options as --companion-listen, and origin=URL (repeatable or '+'-separated): a web page origin allowed to connect (a browser page from any other origin gets HTTP 403; clients that send no Origin are accepted).", valueName: "host:port[,opts]"))
    var companionWs: [String] = []

    @Option(help: ArgumentHelp("Companion hub clients connected at once; a new one beyond this evicts the client idle the longest.", valueName: "n"))
    var companionMaxClients: Int = 8

    @Option(help: ArgumentHelp("Disconnect a companion hub client that sends nothing for this many seconds (1 to 86400).", valueName: "seconds"))
    var companionIdleTimeout: Int = 900

    @Option(help: ArgumentHelp("Publish a low_battery event (API subscribers) when the radio's battery reads below this many millivolts, and battery_ok when it is 50 mV above again.", valueName: "mv"))
    var lowBattery: Int?

    @Option(help: ArgumentHelp("Seconds between battery readings for --low-battery.", valueName: "seconds"))
    var batteryEvery: Double = 300

    @Option(help: ArgumentHelp("Bridge messages, adverts, deliveries and commands to this MQTT broker (mqtt://, mqtts:// (TLS), ws:// or wss:// (WebSocket, path /mqtt by default), [USER@]HOST[:PORT]); repeatable.", valueName: "url"))
    var mqtt: [String] = []

    @Option(help: ArgumentHelp("Topic prefix of the MQTT bridge. Commands on PREFIX/command/OP reach every radio bridged with this prefix, PREFIX/radio/KEY/command/OP (KEY: 12 hex of the radio's key) this radio only.", valueName: "prefix"))
    var mqttPrefix: String = "meshcore"

    @Option(help: ArgumentHelp("User name for the MQTT brokers (or mqtt://USER@HOST).", valueName: "user"))
    var mqttUser: String?

    @Option(help: ArgumentHelp("File holding the MQTT password (first line; mode 0600). Never the password itself.", valueName: "file"))
    var mqttPasswordFile: String?

    @Option(help: ArgumentHelp("Operation classes MQTT commands may use besides read and message: config, admin (comma-separated); secret is never allowed over MQTT.", valueName: "classes"))
    var mqttAllow: String?

    @Option(help: ArgumentHelp("CA certificates (PEM) that mqtts:// and wss:// brokers must chain to (default: the system's CA bundle).", valueName: "file"))
    var mqttCaFile: String?

    @Option(help: ArgumentHelp("Upload every packet the radio hears to this MQTT broker in the observer networks' format (meshcore/IATA/KEY/packets, retained status); repeatable.", valueName: "url"))
    var mqttObserver: [String] = []

    @Option(help: ArgumentHelp("Region (airport code, e.g. SEA) of the observer topics.", valueName: "code"))
    var mqttIata: String?

    @Option(help: ArgumentHelp("The node's private key (hex, as `pocketmesh key export` prints; mode 0600): sign in to the observer brokers as v1_KEY with a JWT.", valueName: "file"))
    var mqttObserverKey: String?

    @Option(help: ArgumentHelp("File holding the observer broker's password, for the user in its URL (mode 0600).", valueName: "file"))
    var mqttObserverPasswordFile: String?

    @Option(help: ArgumentHelp("The JWT's audience (default: the broker's host name).", valueName: "name"))
    var mqttObserverAudience: String?

    /// The MQTT bridge's classes: the default (read, message) widened by --mqtt-allow.
    func mqttAllowed() throws -> AllowedClasses {
        var allowed = AllowedClasses.mqttDefault
        guard let mqttAllow else { return allowed }
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
        if !(23...517).contains(radio.bleMinMtu) { throw ValidationError("--ble-min-mtu must be between 23 and 517.") }
        if let tcp = radio.tcp {
            do throws(LinkError) { _ = try TCPAddress(parsing: tcp) } catch { throw ValidationError("--tcp: \(error)") }
        }
        if let ble = radio.ble {
            do throws(LinkError) { _ = try BLEAddress(parsing: ble) } catch { throw ValidationError("--ble: \(error)") }
        }
        if radio.serial != nil, SerialSpeed(baud: radio.baud) == nil { throw ValidationError("--baud \(radio.baud) is not a serial speed this system supports.") }
        if let name, !RuntimeDirectory.isValidName(name) { throw ValidationError(RuntimeDirectory.nameRule) }
        if companionMaxClients < 1 || companionMaxClients > 256 { throw ValidationError("--companion-max-clients must be 1 to 256.") }
        for l in companionListen {
            do { _ = try HubListener(parsing: l) } catch { throw ValidationError(error.message) }
        }
        for l in companionWs {
            do { _ = try HubListener(parsing: l, webSocket: true) } catch { throw ValidationError(error.message) }
        }
        if !(1...86_400).contains(companionIdleTimeout) { throw ValidationError("--companion-idle-timeout must be 1 to 86400 seconds.") }
        if let mv = lowBattery, !(1...20_000).contains(mv) { throw ValidationError("--low-battery must be 1 to 20000 millivolts.") }
        if !(batteryEvery >= 1 && batteryEvery <= 86_400) { throw ValidationError("--battery-every must be 1 to 86400 seconds.") }
        _ = try mqttAllowed()
        if hookConcurrency < 1 || hookConcurrency > 64 { throw ValidationError("--hook-concurrency must be 1 to 64.") }
        if hookAttempts < 1 || hookAttempts > 1000 { throw ValidationError("--hook-attempts must be 1 to 1000.") }
        if !(hookTimeout > 0) { throw ValidationError("--hook-timeout must be a positive number of seconds.") }
        if !(drainInterval >= 1) { throw ValidationError("--drain-interval must be at least 1 second.") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds.") }
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
        if hooksFromStart && onMessage == nil { throw ValidationError("--hooks-from-start goes with --on-message CMD.") }
        if mqttObserver.isEmpty && (mqttIata != nil || mqttObserverKey != nil || mqttObserverPasswordFile != nil || mqttObserverAudience != nil) {
            throw ValidationError("--mqtt-iata, --mqtt-observer-key, --mqtt-observer-password-file and --mqtt-observer-audience go with --mqtt-observer URL.")
        }
        if !mqttObserver.isEmpty && mqttIata == nil { throw ValidationError("--mqtt-observer needs --mqtt-iata (the airport code of your region, e.g. SEA).") }
    }

    func run() throws {
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
        config.mqttObservers = mqttObserver.map { url in
            var o = ObserverSettings(url: url)
            o.iata = mqttIata
            o.keyFile = mqttObserverKey
            o.passwordFile = mqttObserverPasswordFile
            o.audience = mqttObserverAudience
            return o
        }
        if let cmd = onMessage {
            config.hook = Spawn.splitCommand(cmd)
            config.hookWrapper = [selfExecutable(), "daemon", "hook-exec"]
        }
        config.operationWorker = [selfExecutable(), "daemon", "op-exec"]
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
    static let configuration = CommandConfiguration(commandName: "hook-exec", abstract: "Run one hook under its delivery marker (internal).",
                                                    shouldDisplay: false)

    @Option var timeoutMs: UInt64 = 30_000
    @Option var graceMs: UInt64 = 3_000
    @Option var outputLimit: Int = 4096
    @Argument var marker: String
    @Argument(parsing: .captureForPassthrough) var command: [String] = []

    func run() throws {
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
