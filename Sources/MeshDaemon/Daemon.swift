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
/// outbox, hooks, the API server, the hub and the MQTT connections; signals come through the
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
        public var hook: [String]? = nil
        /// The wrapper hooks run under (`[self-exe, "daemon", "hook-exec"]`); nil runs them directly.
        public var hookWrapper: [String]? = nil
        public var hookConcurrency = 2
        /// Command-line operations running at once for API, hub and MQTT clients (in this
        /// process, DaemonOperations.swift); further requests are refused as busy.
        public var operationConcurrency = 16
        /// An operation not finished after this long is answered with a timeout.
        public var operationTimeoutMS: UInt64 = 120_000
        public var hookTimeoutMS: UInt64 = 30_000
        /// The daemon is a child subreaper: what a hook leaves behind outside its process group
        /// comes back to it and is ended (HookRunner.Config.adoptOrphans; the command sets it).
        public var adoptHookOrphans = false
        /// Runs of one message's hook before it is given up.
        public var hookMaxAttempts = 10
        /// `--hooks-from-start`: a hook without a delivery cursor gets every stored message (by
        /// default it starts after the newest).
        public var hooksFromStart = false
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
        public init(link: String) { self.link = link }
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

    public internal(set) var phase: Phase = .down
    public internal(set) var store: RadioStore? = nil
    let api: APIServer
    /// The one loop everything runs on.
    let loop = PollLoop()
    let notify: SystemdNotify
    /// The hook runner is a part of the loop while there is one (one per store).
    var hooks: HookRunner? = nil {
        didSet {
            if let old = oldValue, old !== hooks { loop.remove(old) }
            if let h = hooks { loop.add(h) }
        }
    }
    let startedAt = monotonicMilliseconds()
    /// Set once the daemon is to stop: the loop returns after the handler that set it.
    var stopping = false {
        didSet { if stopping { loop.stop() } }
    }
    /// A stop or reconnect asked for by a signal, waiting for the answer to a SYNC_NEXT_MESSAGE
    /// already sent (the radio forgets a message once it hands it over), until `settleDeadline`.
    enum Settle { case reconnect, stop }
    var settling: Settle? = nil
    var settleDeadline: UInt64 = 0

    // link and session
    var link: ByteLink? = nil
    /// The link being made (`DaemonConnect.swift`), while `phase` is `connecting`.
    var connector: RadioConnector? = nil
    /// Requests that need the radio, waiting for the connect and handshake under way
    /// (DaemonRadioWait.swift).
    var radioWaits: [RadioWait] = []
    /// Why the last attempt to reach the radio failed (nil once it answered): `status` and STATUS=.
    var radioProblem: String? = nil
    var session: Session? = nil
    var deframer = StreamDeframer(marker: UInt8(ascii: ">"))
    var reconnectAt: UInt64 = 0
    var backoffMS: UInt64 = 0
    /// DEVICE_INFO and SELF_INFO as the radio last reported them: the session's copies, which it
    /// reads again whenever a command changes a setting, and the last ones kept while the link is down.
    var lastDeviceInfo: [UInt8] = []
    var lastSelfInfo: [UInt8] = []
    var deviceInfo: [UInt8] { session?.deviceInfo ?? lastDeviceInfo }
    var selfInfo: [UInt8] { session?.selfInfo ?? lastSelfInfo }
    /// The same, decoded.
    var radioSelf: RadioSelf? { session?.radioSelf ?? RadioSelf(frame: lastSelfInfo) }
    var radioDevice: RadioDevice? { session?.radioDevice ?? RadioDevice(frame: lastDeviceInfo) }
    var syncedOnce = false
    var connections = 0
    var readBuffer = [UInt8](repeating: 0, count: 4096)
    // the daemon's own parts of the loop (DaemonParts.swift)
    lazy var radioPart = RadioPart(self)
    lazy var hotplugPart = HotplugPart(self)
    lazy var storePart = StorePart(self)
    lazy var outboxPart = OutboxPart(self)
    lazy var operationsPart = OperationsPart(self)
    // serial hotplug (DaemonHotplug.swift)
    var radioIdentity: SerialRadioIdentity? = nil

    // sync bookkeeping
    var contactsTicket: Ticket? = nil
    /// Whether the contacts listing in flight is a full one (not `since` the watermark).
    var contactsListingFull = false
    /// The next contacts sync lists every contact: the radio has fewer than the store (one was
    /// removed behind the daemon's back), so the store finds out which.
    var contactsFullSyncWanted = false
    var contactsResyncAt: UInt64? = nil
    var channelTickets: [Ticket: UInt8] = [:]
    var channelsFound: [StoredChannel] = []
    var nextDrainAt: UInt64 = 0
    var keepaliveTicket: Ticket? = nil
    var batteryTicket: Ticket? = nil
    var batteryCheckAt: UInt64 = 0
    var batteryLow = false
    /// The last SET_FLOOD_SCOPE_KEY a client set (`scope`): the radio forgets it with the
    /// connection, so it is sent again after each reconnect.
    var floodScopeFrame: [UInt8]? = nil
    var pendingLinkLoss: String? = nil
    var isShutDown = false
    /// Damaged records found while reading the store that have been logged.
    var readDamageLogged = 0
    /// Received messages with no place on disk (store not open and its inbox failing): a last
    /// resort; the radio is asked for nothing more meanwhile (DaemonMessages.swift).
    var unsaved: [StoredMessage] = []
    let unsavedCapacity = 256
    var inboxProblemLogged = false
    /// The exit code when the daemon stops on its own (a state folder it will not use: 2).
    public internal(set) var exitCode: Int32 = 0
    public internal(set) var storedCount = 0
    public internal(set) var duplicateCount = 0

    // outbox and API work in flight
    let outbox: OutboxSender
    var sendWaiters: [UInt64: [(APIServer.ClientID, Int64)]] = [:]
    var replyTickets: [Ticket: (client: APIServer.ClientID, id: Int64, what: String, record: StoredMessage?)] = [:]
    /// After an OK to a `replyTickets` command: what else to do, and the fields of the answer.
    var replyAfterOK: [Ticket: () -> [(String, JSON)]] = [:]
    var tunnelTickets: [Ticket: (client: APIServer.ClientID, frame: [UInt8])] = [:]
    /// The radio's message queue as tunnel clients see it: answered from the store (TunnelQueue.swift).
    var tunnelQueue = TunnelQueue(cursor: 0)
    /// Command-line operations running for API, hub and MQTT clients, in this process
    /// (DaemonOperations.swift): their steps, the session's port they wait on, and who asked.
    let operationJobs = OperationJobs()
    var operationPort: SessionPort? = nil
    var operations: [Int: OperationRun] = [:]
    var nextOperation = 0
    /// ACK tags of direct messages sent through a tunnel, to mark them acked in the store.
    var tunnelAckTags: [(tag: UInt32, id: UInt64)] = []
    /// The companion hub (DaemonHub.swift), its clients' sessions, and whose send each ACK code confirms.
    var hub: HubServer? = nil
    var hubSessions: [Int: HubSession] = [:]
    /// The hub clients' requests, in order per client, and their turns at the radio (HubQueue.swift).
    var hubQueue = HubQueue()
    /// The hub request at the radio: its client and frame.
    var hubTickets: [Ticket: (client: Int, frame: [UInt8])] = [:]
    /// When this daemon last wrote each app cursor (wall-clock seconds): it marks the app seen.
    var hubCursorTouched: [String: Int] = [:]
    var hubAckOwners: [(ack: UInt32, client: Int)] = []
    /// The radio's contact table as last listed whole, while current: hub clients' GET_CONTACTS is answered from it.
    var hubContacts = HubContacts()
    /// Refusals logged per door (DaemonPermissions.swift).
    var refusalLog = RefusalLog()
    /// MQTT (DaemonMQTT.swift).
    var bridges: [MQTTBridge] = []
    var observers: [MQTTObserver] = []

    public init(config: Config) throws {
        self.config = config
        var policy = OutboxSender.Policy()
        policy.maxAttempts = config.outboxMaxAttempts
        policy.retryBaseS = config.outboxRetryBaseS
        outbox = OutboxSender(policy: policy, sessionConfig: Self.sessionConfig(config), wallClock: { UInt32(truncatingIfNeeded: time(nil)) })
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
        api.onRequest = { [unowned self] req, client in self.handle(req, client) }
        api.onDisconnect = { [unowned self] client in self.clientGone(client) }
        api.admit = { [unowned self] peer in APIGroup.admit(peer, owner: geteuid(), group: self.config.apiGroup) }
        api.onTunnelOpen = { [unowned self] req, client in
            if self.radioPending {
                self.waitForRadio(.tunnel(req), client, now: monotonicMilliseconds())
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
            hub = h
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
        warnOpenDoors()
        loop.onSignal = { [unowned self] s in self.signalled(s) }
        outbox.emit = { [unowned self] in self.outboxEvents($0) }
        // The parts, in the order the loop runs them; the hooks join when a store opens.
        for part in [radioPart, outboxPart, storePart, hotplugPart] as [PollPart] { loop.add(part) }
        loop.add(api)
        if let h = hub { loop.add(h) }
        for b in bridges { loop.add(b) }
        for o in observers { loop.add(o) }
        loop.add(operationsPart)
        loop.add(notify)
        try openKnownStore()
    }

    deinit { shutdown() }

    var radioKeyHex: String? { radioSelf?.publicKey.hex }

    // MARK: - main loop

    /// Runs until SIGTERM or SIGINT. Returns the process exit code.
    public func run() -> Int32 {
        // Ready as soon as the API is served (the socket listens since `init`), radio or not: a
        // radio unplugged at boot must not hold `systemctl start` for its timeout and make the
        // unit restart in a loop; STATUS= says whether the radio is there.
        notify.ready(status: "serving the API; connecting to \(config.link)")
        startHotplug()
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
        default:
            if settling == .stop {
                log("daemon: signal \(s) again: stopping now")
                stopping = true
            } else {
                log("daemon: signal \(s): stopping")
                settle(.stop, now: monotonicMilliseconds())
            }
        }
    }

    /// Stops or reconnects once no message is in flight from the radio: a SYNC_NEXT_MESSAGE
    /// already sent is answered and its message stored first, for at most the command timeout.
    func settle(_ what: Settle, now: UInt64) {
        if settling != .stop { settling = what }
        if let s = session, s.awaitsMessage {
            if settleDeadline == 0 {
                settleDeadline = now + config.commandTimeoutMS + 500
                log("radio: waiting for the message in flight before \(what == .stop ? "stopping" : "reconnecting")")
            }
            s.stopDraining()
            pump(now: now)
        }
        settled(now: now)
    }

    /// Finishes a pending stop or reconnect once nothing is in flight (or its time is up).
    func settled(now: UInt64) {
        guard let what = settling else { return }
        if let s = session, s.awaitsMessage, now < settleDeadline { return }
        if let s = session, s.awaitsMessage { log("radio: no answer to SYNC_NEXT_MESSAGE in time; it stays on the radio if not yet sent") }
        settling = nil
        settleDeadline = 0
        switch what {
        case .stop:
            stopping = true
        case .reconnect:
            linkLost("reconnect requested (SIGHUP)")
            reconnectAt = 0
        }
    }

    /// The radio owner's turn (`RadioPart`): runs whatever is due; returns the next deadline
    /// (at most a minute away: the link and the session are looked at again then).
    func radioTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func soon(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }
        // Operations whose wait ended outside a pump (a lost link): their next steps.
        if operationJobs.hasReady { pump(now: now) }
        if settling != nil {
            settled(now: now)
            if stopping { return nil }
            if settling != nil { soon(settleDeadline) }
        }

        if let c = connector {  // the link being made: its deadlines (DNS, connect, GATT setup)
            soon(c.tick(now: now))
            connectorProgress(now: now)
        }
        if connector != nil {
            // still connecting
        } else if link == nil {  // down: the next attempt (after a failed one, at its backoff)
            if now >= reconnectAt { connect(now: now) }
            if let c = connector { soon(c.tick(now: now)) } else if link == nil { soon(reconnectAt) }
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
                if now >= nextDrainAt && storeTakesMessages {
                    // Safety net: drain even without MSG_WAITING, and check the radio still answers.
                    nextDrainAt = now + config.drainIntervalMS
                    s.drain(now: now)
                    if keepaliveTicket == nil {
                        keepaliveTicket = try? s.submit(frame: CommandFrame.getDeviceTime().bytes, expecting: .answering([CommandCode.getDeviceTime.rawValue]), now: now)
                    }
                    pump(now: now)
                }
                soon(nextDrainAt)
                if config.lowBatteryMV != nil { soon(checkBattery(s, now: now)) }
                if let at = contactsResyncAt {
                    if now >= at, contactsTicket == nil {
                        contactsResyncAt = nil
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
        if !operations.isEmpty || operationPort?.nextDeadline != nil {
            soon(operationTimers(now: now))
            if operationJobs.hasReady { pump(now: now) }
        }
        return next
    }

    // MARK: - shutdown

    public func shutdown() {
        if isShutDown { return }
        isShutDown = true
        notify.stopping()
        hooks?.detachAll()
        stopOperations()
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
        api.shutdown()
    }
}
