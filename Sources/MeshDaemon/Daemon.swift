import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshBridge
import MeshHub

/// `pocketmesh daemon`: owns one radio for as long as it runs.
///
/// One thread, one `poll()` loop (MeshLink's `PollLoop`) running parts, each with its descriptors,
/// readiness handler and deadline (DaemonParts.swift): the radio owner, hotplug, the store, the
/// outbox, hooks, the API server, the operations, the hub and the MQTT connections. Each part
/// owns its state and is given what it needs of the others as closures; this class is the wiring
/// between them (`init`) and the order of their work (`pump`). Signals come through the
/// loop's self-pipe (SIGTERM/SIGINT stop, SIGHUP reconnects, SIGCHLD reaps hooks). The radio conversation is a
/// `MeshSession.Session` (sans-I/O); this class is its shell, and it orders the work so that
/// **every message drained from the radio is appended to the store (fsync) before the next
/// frame, and so the next SYNC_NEXT_MESSAGE, is written to the link**.
public final class Daemon {
    public struct Config {
        /// `serial:/dev/ttyUSB0` (or `serial:auto`), `tcp:host[:port]` or `ble:AA:BB:CC:DD:EE:FF[/random]`.
        public var link: String
        public var baud = 115_200
        public var stateDir: String? = nil
        public var socketPath: String? = nil
        public var name: String? = nil
        /// The hooks' settings (`--on-message` and its options): the hook part's own.
        public var hookSettings = HookSettings()
        /// Command-line operations running at once for API, hub and MQTT clients (in this
        /// process, DaemonOperations.swift); further requests are refused as busy.
        public var operationConcurrency = 16
        /// An operation not finished after this long is cancelled and answered with a timeout.
        public var operationTimeoutMS: UInt64 = 120_000
        /// Safety-net drain and link check interval.
        public var drainIntervalMS: UInt64 = 60_000
        public var reconnectMinMS: UInt64 = 1_000
        public var reconnectMaxMS: UInt64 = 60_000
        public var commandTimeoutMS: UInt64 = 5_000
        public var connectTimeoutMS = 5_000
        /// BLE links: smallest ATT MTU accepted (see `ATTClient.Configuration.minimumMTU`).
        public var bleMinimumMTU = 179
        /// Direct messages: total attempts (each round is the session's 3) before giving up.
        public var outboxMaxAttempts = 9
        public var outboxRetryBaseS: UInt32 = 30
        public var environment: [String: String] = [:]
        public var storeOptions = StoreOptions()
        /// `--companion-listen`: the companion hub's TCP listeners (none: no hub).
        public var companionListeners: [HubListener] = []
        public var companionMaxClients = 8
        /// `--companion-idle-timeout`: a hub client silent this long is disconnected.
        public var companionIdleTimeoutMS: UInt64 = 15 * 60_000
        /// A hub client that leaves a frame unfinished this long is disconnected.
        public var companionPartialFrameMS: UInt64 = 5_000
        /// `--low-battery MV`: a `low_battery` event when the radio's battery reads below this
        /// (checked every `batteryCheckMS`); `battery_ok` once it is 50 mV above it again.
        public var lowBatteryMV: Int? = nil
        public var batteryCheckMS: UInt64 = 300_000
        /// `--mqtt URL`: chat bridges, one per broker (MQTTBridge).
        public var mqtt: [MQTTSettings] = []
        /// `--mqtt-observer URL --mqtt-iata XXX`: packet uploaders, one per broker (MQTTObserver).
        public var mqttObservers: [ObserverSettings] = []
        /// `--mqtt-ca-file`: the CA certificates (PEM) that TLS brokers' certificates must chain to,
        /// instead of the system's bundle.
        public var mqttCAFile: String? = nil
        /// `--api-group GROUP[:CLASSES]`: the API socket (0660) and its folder (0750) belong to
        /// this group, whose members get its classes; root and the daemon's user keep every class.
        public var apiGroup: APIGroup? = nil
        /// `--web HOST:PORT[,...]`: the web console's listeners (none: no console).
        public var webListeners: [WebListener] = []
        /// `--web-password-file`: the console's login password (first line; mode 0600).
        public var webPasswordFile: String? = nil
        public init(link: String) { self.link = link }

        // The hooks' settings by their flags' names (the command line sets them so).
        public var hook: [String]? {
            get { hookSettings.command }
            set { hookSettings.command = newValue }
        }
        public var hookWrapper: [String]? {
            get { hookSettings.wrapper }
            set { hookSettings.wrapper = newValue }
        }
        public var hookConcurrency: Int {
            get { hookSettings.concurrency }
            set { hookSettings.concurrency = newValue }
        }
        public var hookTimeoutMS: UInt64 {
            get { hookSettings.timeoutMS }
            set { hookSettings.timeoutMS = newValue }
        }
        public var adoptHookOrphans: Bool {
            get { hookSettings.adoptOrphans }
            set { hookSettings.adoptOrphans = newValue }
        }
        public var hookMaxAttempts: Int {
            get { hookSettings.maxAttempts }
            set { hookSettings.maxAttempts = newValue }
        }
        public var hooksFromStart: Bool {
            get { hookSettings.fromStart }
            set { hookSettings.fromStart = newValue }
        }
    }

    /// `--on-message` and its options.
    public struct HookSettings {
        /// The hook's command line (nil: no hook).
        public var command: [String]? = nil
        /// The wrapper hooks run under (`[self-exe, "daemon", "hook-exec"]`); nil runs them directly.
        public var wrapper: [String]? = nil
        public var concurrency = 2
        public var timeoutMS: UInt64 = 30_000
        /// The daemon is a child subreaper: what a hook leaves behind outside its process group
        /// comes back to it and is ended (HookRunner.Config.adoptOrphans; the command sets it).
        public var adoptOrphans = false
        /// Runs of one message's hook before it is given up.
        public var maxAttempts = 10
        /// `--hooks-from-start`: a hook without a delivery cursor gets every stored message (by
        /// default it starts after the newest).
        public var fromStart = false
        public init() {}
    }

    /// `connecting`: the link is being made (a TCP radio's host looked up and connected, a BLE
    /// radio's connect and GATT setup) on the loop, which goes on serving everything else.
    public enum Phase: String { case down, connecting, handshaking, syncing, ready }

    public let config: Config
    public var log: (String) -> Void = { line in
        var l = line + "\n"
        l.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, stderr) }
        fflush(stderr)
    }
    /// The one loop everything runs on.
    let loop = PollLoop()
    var life = Lifecycle()

    // The parts (DaemonParts.swift), each with its own state; the daemon wires them.
    let radio = RadioPart()
    let sync = RadioSync()
    let storage = StorePart()
    let outboxPart: OutboxPart
    let api: APIServer
    let requests = APIWork()
    let ops: OperationsPart
    let hubPart = HubPart()
    let mqtt = MQTTPart()
    let hotplug = HotplugPart()
    let notify: SystemdNotify

    // What the daemon's own code and its users read of the parts.
    public internal(set) var phase: Phase {
        get { radio.phase }
        set { radio.phase = newValue }
    }
    public internal(set) var store: RadioStore? {
        get { storage.store }
        set { storage.store = newValue }
    }
    public var exitCode: Int32 { life.exitCode }
    public var storedCount: Int { storage.storedCount }
    public var duplicateCount: Int { storage.duplicateCount }
    var link: ByteLink? {
        get { radio.link }
        set { radio.link = newValue }
    }
    var connector: RadioConnector? {
        get { radio.connector }
        set { radio.connector = newValue }
    }
    var session: Session? {
        get { radio.session }
        set { radio.session = newValue }
    }
    var hub: HubServer? { hubPart.server }
    var outbox: OutboxSender { outboxPart.sender }
    /// The hook runner is a part of the loop while there is one (one per store).
    var hooks: HookRunner? {
        get { storage.hooks }
        set {
            if let old = storage.hooks, old !== newValue { loop.remove(old) }
            storage.hooks = newValue
            if let h = newValue { loop.add(h) }
        }
    }
    /// Set once the daemon is to stop: the loop returns after the handler that set it.
    var stopping: Bool {
        get { life.stopping }
        set {
            life.stopping = newValue
            if newValue { loop.stop() }
        }
    }
    var deviceInfo: [UInt8] { radio.deviceInfo }
    var selfInfo: [UInt8] { radio.selfInfo }
    /// The same, decoded.
    var radioSelf: RadioSelf? { session?.radioSelf ?? RadioSelf(frame: radio.lastSelfInfo) }
    var radioDevice: RadioDevice? { session?.radioDevice ?? RadioDevice(frame: radio.lastDeviceInfo) }
    enum Settle { case reconnect, stop }

    public init(config: Config) throws {
        self.config = config
        ops = OperationsPart(timeoutMS: config.operationTimeoutMS, commandTimeoutMS: config.commandTimeoutMS)
        var policy = OutboxSender.Policy()
        policy.maxAttempts = config.outboxMaxAttempts
        policy.retryBaseS = config.outboxRetryBaseS
        outboxPart = OutboxPart(OutboxSender(policy: policy, sessionConfig: Self.sessionConfig(config), wallClock: { UInt32(truncatingIfNeeded: time(nil)) }))
        if let name = config.name, !RuntimeDirectory.isValidName(name) { throw DaemonError(.usage, RuntimeDirectory.nameRule) }
        if let program = config.hook?.first,
           let problem = Spawn.problem(running: program, path: config.environment["PATH"] ?? getenv("PATH").map { String(cString: $0) }) {
            throw DaemonError(.usage, "--on-message: cannot run the hook: \(problem).")
        }
        let runtime = DaemonRegistry.runtimeDirectory(environment: config.environment)
        let socket = config.socketPath ?? (runtime + "/" + (config.name ?? DaemonRegistry.slug(forLink: config.link)) + ".sock")
        if config.socketPath == nil { try RuntimeDirectory.prepare(runtime) }
        // One daemon per radio: a serial port cannot be shared and a TCP radio takes one client.
        switch DaemonRegistry.lookup(link: config.link, environment: config.environment) {
        case .found(let other) where other.pid != getpid():
            throw DaemonError(.busy, "pocketmesh daemon (pid \(other.pid)) already owns \(config.link); its socket is \(other.socket).")
        case .unreachable(let why) where config.environment["POCKETMESH_NO_DAEMON"] == nil:
            // Another user's daemon may hold it: connecting would evict its link.
            throw DaemonError(.busy, why)
        default:
            break
        }
        do throws(Errno) { try loop.handleSignals([SIGTERM, SIGINT, SIGHUP, SIGCHLD]) } catch {
            throw SystemError("pipe", "the signal pipe", errno: error.rawValue)
        }
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (RLIMIT_FSIZE) must give EFBIG on write, not kill the daemon.
        signal(SIGXFSZ, SIG_IGN)
        api = try APIServer(path: socket)
        notify = SystemdNotify(environment: config.environment)
        api.log = { [unowned self] in self.log($0) }
        api.onRequest = { [unowned self] req, client in self.handle(req, .api(client)) }
        api.onDisconnect = { [unowned self] client in self.clientGone(client) }
        api.admit = { [unowned self] peer in APIGroup.admit(peer, owner: geteuid(), group: self.config.apiGroup) }
        api.onTunnelOpen = { [unowned self] req, client in
            if self.radioPending {
                self.waitForRadio(.tunnel(req), .api(client), now: monotonicMilliseconds())
                return nil
            }
            return self.tunnelOpenResult(client)
        }
        api.onTunnelFrame = { [unowned self] client, frame in self.tunnelFrame(client, frame) }
        if !config.companionListeners.isEmpty {
            let h = try HubServer(listeners: config.companionListeners)
            h.maxClients = config.companionMaxClients
            h.idleTimeoutMS = config.companionIdleTimeoutMS
            h.partialFrameTimeoutMS = config.companionPartialFrameMS
            h.log = { [unowned self] in self.log($0) }
            h.host = self
            hubPart.server = h
        }
        if !config.webListeners.isEmpty {
            var password: [UInt8]? = nil
            if let f = config.webPasswordFile { password = try SecretFile.password(f, flag: "--web-password-file") }
            let w = try WebServer(listeners: config.webListeners, password: password)
            w.log = { [unowned self] in self.log($0) }
            w.onRequest = { [unowned self] req, client in self.handle(req, .web(client)) }
            w.onDisconnect = { [unowned self] client in self.callerGone(.web(client)) }
            requests.web = w
        }
        if let g = config.apiGroup {
            api.groupNote = " and members of group \(g.group.name)"
            try Self.share(socket: socket, with: g, log: log)
        }
        try setUpMQTT()
        try DaemonRegistry.write(.init(pid: getpid(), link: DaemonRegistry.canonicalLink(config.link), socket: socket, name: config.name),
                                 group: config.apiGroup?.group.gid)
        log("daemon: pid \(getpid()), link \(config.link), API socket \(socket)")
        if let g = config.apiGroup {
            log("api: \(socket) (mode 0660, group \(g.group.name)) allows root and uid \(geteuid()) \(AllowedClasses.everything), members of group \(g.group.name) \(g.allowed)")
        } else {
            log("api: \(socket) (mode 0600) allows root and uid \(geteuid()) \(AllowedClasses.everything)")
        }
        for l in config.companionListeners { log("hub: \(l.summary)") }
        for l in config.webListeners { log("web: \(l.summary)" + (requests.web?.loginRequired == true ? ", login required" : ", no login (loopback)")) }
        warnOpenDoors()
        loop.onSignal = { [unowned self] s in self.signalled(s) }
        outbox.emit = { [unowned self] in self.outboxEvents($0) }
        // What each part needs of the others.
        radio.linkReady = { [unowned self] in self.linkReady($0) }
        radio.connectorProgress = { [unowned self] in self.connectorProgress(now: $0) }
        radio.turn = { [unowned self] now in
            self.pump(now: now)
            return self.radioTimers(now: now)
        }
        storage.retry = { [unowned self] in self.retryStore(now: $0) }
        storage.log = { [unowned self] in self.log($0) }
        storage.samples.log = { [unowned self] in self.log($0) }
        storage.samples.fileOps = config.storeOptions.fileOps
        storage.samples.batteryIntervalMS = max(60_000, config.batteryCheckMS)
        outboxPart.readyStore = { [unowned self] in self.phase == .ready && self.session != nil ? self.store : nil }
        outboxPart.send = { [unowned self] in self.sendOutbox(now: $0) }
        hotplug.linkDown = { [unowned self] in self.link == nil }
        hotplug.reconnect = { [unowned self] at in
            self.radio.backoffMS = 0
            self.radio.reconnectAt = at
        }
        hotplug.log = { [unowned self] in self.log($0) }
        ops.turn = { [unowned self] in self.operationsTimers(now: $0) }
        ops.reply = { [unowned self] r, client in self.reply(r, to: client) }
        // The parts, in the order the loop runs them; the hooks join when a store opens.
        for part in [radio, outboxPart, storage, hotplug] as [PollPart] { loop.add(part) }
        loop.add(api)
        if let w = requests.web { loop.add(w) }
        if let h = hub { loop.add(h) }
        for b in mqtt.bridges { loop.add(b) }
        for o in mqtt.observers { loop.add(o) }
        loop.add(ops)
        loop.add(notify)
        try openKnownStore()
    }

    deinit { shutdown() }

    /// Whether a message taken off the radio now would be on disk whatever the log does
    /// (`StorePart.takesMessages`); while it is not, the radio is asked for nothing.
    var storeTakesMessages: Bool { storage.takesMessages }

    var radioKeyHex: String? { radioSelf?.publicKey.hex }

    // MARK: - main loop

    /// Runs until SIGTERM or SIGINT. Returns the process exit code.
    public func run() -> Int32 {
        // Ready as soon as the API is served (the socket listens since `init`), radio or not: a
        // radio unplugged at boot must not hold `systemctl start` for its timeout and make the
        // unit restart in a loop; STATUS= says whether the radio is there.
        notify.ready(status: "serving the API; connecting to \(config.link)")
        hotplug.start(link: config.link)
        if !stopping { loop.run() }
        shutdown()
        return exitCode
    }

    /// A signal, through the loop's self-pipe.
    func signalled(_ s: Int32) {
        switch s {
        case SIGCHLD:
            hooks?.reap(now: monotonicMilliseconds())
        case SIGHUP:
            log("daemon: SIGHUP: reconnecting to the radio")
            settle(.reconnect, now: monotonicMilliseconds())
        case SIGTERM, SIGINT:
            if radio.settling == .stop {
                log("daemon: signal \(s) again: stopping now")
                stopping = true
            } else {
                log("daemon: signal \(s): stopping")
                settle(.stop, now: monotonicMilliseconds())
            }
        default:
            break  // not one the daemon asked for
        }
    }

    /// Stops or reconnects once no message is in flight from the radio: a SYNC_NEXT_MESSAGE
    /// already sent is answered and its message stored first, for at most the command timeout.
    func settle(_ what: Settle, now: UInt64) {
        if radio.settling != .stop { radio.settling = what }
        if let s = session, s.awaitsMessage {
            if radio.settleDeadline == 0 {
                radio.settleDeadline = now + config.commandTimeoutMS + 500
                log("radio: waiting for the message in flight before \(what == .stop ? "stopping" : "reconnecting")")
            }
            s.stopDraining()
            pump(now: now)
        }
        settled(now: now)
    }

    /// Finishes a pending stop or reconnect once nothing is in flight (or its time is up).
    func settled(now: UInt64) {
        guard let what = radio.settling else { return }
        if let s = session, s.awaitsMessage, now < radio.settleDeadline { return }
        if let s = session, s.awaitsMessage { log("radio: no answer to SYNC_NEXT_MESSAGE in time; it stays on the radio if not yet sent") }
        radio.settling = nil
        radio.settleDeadline = 0
        switch what {
        case .stop:
            stopping = true
        case .reconnect:
            linkLost("reconnect requested (SIGHUP)")
            radio.reconnectAt = 0
        }
    }

    /// The radio owner's turn (`RadioPart`): runs whatever is due; returns the next deadline
    /// (at most a minute away: the link and the session are looked at again then).
    func radioTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func soon(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }
        // Operations whose wait ended outside a pump (a lost link): their next steps.
        if ops.jobs.hasReady { pump(now: now) }
        if radio.settling != nil {
            settled(now: now)
            if stopping { return nil }
            if radio.settling != nil { soon(radio.settleDeadline) }
        }

        if let c = connector {  // the link being made: its deadlines (DNS, connect, GATT setup)
            soon(c.tick(now: now))
            connectorProgress(now: now)
        }
        if connector != nil {
            // still connecting
        } else if link == nil {  // down: the next attempt (after a failed one, at its backoff)
            if now >= radio.reconnectAt { connect(now: now) }
            if let c = connector { soon(c.tick(now: now)) } else if link == nil { soon(radio.reconnectAt) }
        } else if let l = link, let d = l.deadline {  // a link's own protocol timeout (BLE: ATT request)
            if now >= d {
                do throws(LinkError) { try l.handleDeadline(now: now) } catch { linkLost(error.description) }
            }
            soon(link?.deadline)
        }
        if let s = session {
            if let d = s.nextDeadline, now >= d { s.tick(now: now); pump(now: now) }
            soon(s.nextDeadline)
            if phase == .ready {
                if now >= sync.nextDrainAt && storeTakesMessages {
                    // Safety net: drain even without MSG_WAITING, and check the radio still answers.
                    sync.nextDrainAt = now + config.drainIntervalMS
                    s.drain(now: now)
                    if sync.keepaliveTicket == nil {
                        sync.keepaliveTicket = try? s.submit(frame: CommandFrame.getDeviceTime().bytes, expecting: .answering([CommandCode.getDeviceTime.rawValue]), now: now)
                    }
                    pump(now: now)
                }
                soon(sync.nextDrainAt)
                soon(checkBattery(s, now: now))
                if let at = sync.contactsResyncAt {
                    if now >= at, sync.contactsTicket == nil {
                        sync.contactsResyncAt = nil
                        syncContacts(now: now)
                    } else { soon(at) }
                }
            }
        }
        soon(radioWaitTimers(now: now))
        return next
    }

    /// The operations' turn (`OperationsPart`), after the API server, the hub and the MQTT
    /// connections had theirs: operations timed out or whose client left, and the hub clients
    /// waiting on their request rate; what they freed goes to the radio.
    func operationsTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func soon(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }
        if hub != nil { soon(hubTimers(now: now)) }
        if !ops.runs.isEmpty || ops.port?.nextDeadline != nil {
            soon(ops.timers(now: now))
            if ops.jobs.hasReady { pump(now: now) }
        }
        return next
    }

    // MARK: - shutdown

    public func shutdown() {
        if life.isShutDown { return }
        life.isShutDown = true
        notify.stopping()
        hooks?.detachAll()
        ops.stop()
        stopMQTT()
        connector?.cancel()
        connector = nil
        if let s = session { s.close() }
        session = nil
        link?.close()
        link = nil
        store?.close()
        store = nil
        DaemonRegistry.remove(socket: api.path)
        hub?.shutdown()
        requests.web?.shutdown()
        api.shutdown()
    }
}
