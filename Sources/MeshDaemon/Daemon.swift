import Glibc
import MeshCompanion
import MeshLink
import MeshSession
import MeshStore

/// `pocketmesh daemon`: owns one radio for as long as it runs.
///
/// One thread, one `poll()` loop over the radio link, the API socket and its clients, and a
/// signal pipe (SIGTERM/SIGINT stop, SIGCHLD reaps hooks). The radio conversation is a
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
        public var hookTimeoutMS: UInt64 = 30_000
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
        public init(link: String) { self.link = link }
    }

    public enum Phase: String { case down, handshaking, syncing, ready }

    public let config: Config
    public var log: (String) -> Void = { line in
        var l = line + "\n"
        l.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, stderr) }
        fflush(stderr)
    }

    public private(set) var phase: Phase = .down
    public private(set) var store: RadioStore? = nil
    let api: APIServer
    let signals: SignalPipe
    let notify: SystemdNotify
    var hooks: HookRunner? = nil
    let startedAt = monotonicNow()
    var stopping = false

    // link and session
    var link: ByteLink? = nil
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
    var syncedOnce = false
    var connections = 0
    var readBuffer = [UInt8](repeating: 0, count: 4096)
    // serial hotplug (DaemonHotplug.swift)
    var hotplug: HotplugMonitor? = nil
    var radioIdentity: SerialRadioIdentity? = nil

    // sync bookkeeping
    var contactsTicket: Ticket? = nil
    var contactsResyncAt: UInt64? = nil
    var channelTickets: [Ticket: UInt8] = [:]
    var channelsFound: [StoredChannel] = []
    var nextDrainAt: UInt64 = 0
    var keepaliveTicket: Ticket? = nil
    var pendingLinkLoss: String? = nil
    /// A SYNC_NEXT_MESSAGE was held back while the store fails (`pump`): its timeout is expected.
    var syncWithheld = false
    var isShutDown = false
    /// Damaged records found while reading the store that have been logged.
    var readDamageLogged = 0
    var unsaved: [StoredMessage] = []
    var unsavedRetryAt: UInt64 = 0
    let unsavedCapacity = 256
    public private(set) var storedCount = 0
    public private(set) var duplicateCount = 0

    // outbox and API work in flight
    let outbox: OutboxSender
    var sendWaiters: [UInt64: [(APIServer.ClientID, Int64)]] = [:]
    var replyTickets: [Ticket: (client: APIServer.ClientID, id: Int64, what: String, record: StoredMessage?)] = [:]
    var tunnelTickets: [Ticket: (client: APIServer.ClientID, frame: [UInt8])] = [:]
    /// The radio's message queue as tunnel clients see it: answered from the store (TunnelQueue.swift).
    var tunnelQueue = TunnelQueue(cursor: 0)
    /// ACK tags of direct messages sent through a tunnel, to mark them acked in the store.
    var tunnelAckTags: [(tag: UInt32, id: UInt64)] = []

    public init(config: Config) throws {
        self.config = config
        var policy = OutboxSender.Policy()
        policy.maxAttempts = config.outboxMaxAttempts
        policy.retryBaseS = config.outboxRetryBaseS
        outbox = OutboxSender(policy: policy, sessionConfig: Self.sessionConfig(config))
        if let name = config.name, !RuntimeDirectory.isValidName(name) { throw DaemonError(.usage, RuntimeDirectory.nameRule) }
        if let program = config.hook?.first,
           let problem = Spawn.problem(running: program, path: config.environment["PATH"] ?? getenv("PATH").map { String(cString: $0) }) {
            throw DaemonError(.usage, "--on-message: cannot run the hook: \(problem).")
        }
        let runtime = DaemonRegistry.runtimeDirectory(environment: config.environment)
        let socket = config.socketPath ?? (runtime + "/" + (config.name ?? DaemonRegistry.slug(forLink: config.link)) + ".sock")
        if config.socketPath == nil { try RuntimeDirectory.prepare(runtime) }
        // One daemon per radio: a serial port cannot be shared and a TCP radio takes one client.
        if let other = DaemonRegistry.find(link: config.link, environment: config.environment), other.pid != getpid() {
            throw DaemonError(.busy, "pocketmesh daemon (pid \(other.pid)) already owns \(config.link); its socket is \(other.socket).")
        }
        signals = try SignalPipe(signals: [SIGTERM, SIGINT, SIGHUP, SIGCHLD])
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (RLIMIT_FSIZE) must give EFBIG on write, not kill the daemon.
        signal(SIGXFSZ, SIG_IGN)
        api = try APIServer(path: socket)
        notify = SystemdNotify(environment: config.environment)
        api.log = { [unowned self] in self.log($0) }
        api.onRequest = { [unowned self] req, client in self.handle(req, client) }
        api.onDisconnect = { [unowned self] client in self.clientGone(client) }
        api.onTunnelOpen = { [unowned self] _, _ in
            guard self.phase == .ready || self.phase == .syncing, !self.selfInfo.isEmpty else {
                return .failure(DaemonError(.link, "the daemon's radio link (\(self.config.link)) is down; it is reconnecting."))
            }
            return .success([("radio", .string(self.radioKeyHex ?? ""))])
        }
        api.onTunnelFrame = { [unowned self] client, frame in self.tunnelFrame(client, frame) }
        try DaemonRegistry.write(.init(pid: getpid(), link: DaemonRegistry.canonicalLink(config.link), socket: socket, name: config.name))
        log("daemon: pid \(getpid()), link \(config.link), API socket \(socket)")
        try openKnownStore()
    }

    deinit { shutdown() }

    var radioKeyHex: String? { selfInfo.count >= 36 ? hexString(selfInfo[4..<36]) : nil }

    // MARK: - main loop

    /// Runs until SIGTERM or SIGINT. Returns the process exit code.
    public func run() -> Int32 {
        notify.status("starting; connecting to \(config.link)")
        startHotplug()
        var fds: [pollfd] = []
        while !stopping {
            let now = monotonicNow()
            let deadline = timers(now: now)
            if stopping { break }
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: signals.readFD, events: Int16(POLLIN), revents: 0))
            if let link {
                fds.append(pollfd(fd: link.fd, events: Int16(POLLIN) | (link.hasPendingOutput ? Int16(POLLOUT) : 0), revents: 0))
            }
            if let h = hotplug { fds.append(pollfd(fd: h.fd, events: Int16(POLLIN), revents: 0)) }
            api.pollDescriptors(into: &fds)
            let wait: Int32 = deadline.map { $0 > now ? Int32(clamping: $0 - now) : 0 } ?? 60_000
            let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), wait) }
            if n <= 0 { continue }
            for p in fds where p.revents != 0 {
                if p.fd == signals.readFD {
                    handleSignals()
                } else if let l = link, p.fd == l.fd {
                    linkReady(p.revents)
                } else if let h = hotplug, p.fd == h.fd {
                    hotplugReady(now: monotonicNow())
                } else {
                    api.handle(p)
                }
                if stopping { break }
            }
        }
        shutdown()
        return 0
    }

    func handleSignals() {
        for s in signals.drain() {
            switch s {
            case SIGCHLD:
                hooks?.reap(now: monotonicNow())
            case SIGHUP:
                log("daemon: SIGHUP: reconnecting to the radio")
                linkLost("reconnect requested (SIGHUP)")
                reconnectAt = 0
            default:
                log("daemon: signal \(s): stopping")
                stopping = true
            }
        }
    }

    /// Runs whatever is due; returns the next deadline.
    func timers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func soon(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }

        if link == nil {
            if now >= reconnectAt { connect(now: now) }
            if link == nil { soon(reconnectAt) }
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
                if now >= nextDrainAt && unsaved.isEmpty {
                    // Safety net: drain even without MSG_WAITING, and check the radio still answers.
                    nextDrainAt = now + config.drainIntervalMS
                    s.drain(now: now)
                    if keepaliveTicket == nil {
                        keepaliveTicket = try? s.submit(frame: CommandFrame.getDeviceTime().bytes, expecting: .answering([CommandCode.getDeviceTime.rawValue]), now: now)
                    }
                    pump(now: now)
                }
                soon(nextDrainAt)
                if let at = contactsResyncAt {
                    if now >= at, contactsTicket == nil {
                        contactsResyncAt = nil
                        syncContacts(now: now)
                    } else { soon(at) }
                }
                sendOutbox(now: now)
                soon(now + 1_000)  // outbox retry times are in wall-clock seconds
            }
        }
        if !unsaved.isEmpty {
            if now >= unsavedRetryAt { retryUnsaved(now: now) }
            soon(unsavedRetryAt)
        }
        if let h = hooks { soon(h.tick(now: now)) }
        soon(api.tick(now: now))
        soon(notify.tick(now: now))
        return next
    }

    // MARK: - link lifecycle

    func connect(now: UInt64) {
        connections += 1
        log("link: connecting to \(config.link) (attempt \(connections))")
        do {
            let l = try openLink()
            link = l
            deframer.reset()
            syncWithheld = false
            var sc = Self.sessionConfig(config)
            sc.clockEpoch = UInt32(truncatingIfNeeded: time(nil))
            let s = Session(config: sc)
            session = s
            phase = .handshaking
            s.start(now: now)
            pump(now: now)
        } catch {
            log("link: cannot connect to \(config.link): \(error)")
            scheduleReconnect(now: now)
        }
    }

    static func sessionConfig(_ config: Config) -> SessionConfig {
        var sc = SessionConfig()
        sc.appName = "pocketmesh-daemon"
        sc.commandTimeout = config.commandTimeoutMS
        sc.drainOnStart = true
        sc.drainOnWaiting = true
        // LOG_RX_DATA pushes go on to tunnel clients (`listen --log-rx` through the daemon).
        sc.forwardLogRx = true
        return sc
    }

    func openLink() throws -> ByteLink {
        let spec = config.link
        if spec.hasPrefix("serial:") {
            guard let speed = SerialSpeed(baud: config.baud) else { throw DaemonError(.usage, "unsupported baud rate \(config.baud)") }
            return try SerialLink(path: serialPath(String(spec.dropFirst(7))), speed: speed)
        }
        if spec.hasPrefix("tcp:") {
            let address = try TCPAddress(parsing: String(spec.dropFirst(4)))
            return try TCPLink(connectingTo: address, timeoutMilliseconds: config.connectTimeoutMS)
        }
        if spec.hasPrefix("ble:") {
            var att = ATTClient.Configuration()
            att.minimumMTU = UInt16(clamping: max(23, config.bleMinimumMTU))
            return try BLELink(connectingTo: BLEAddress(parsing: String(spec.dropFirst(4))),
                               timeoutMilliseconds: max(config.connectTimeoutMS, 10_000), configuration: att)
        }
        throw DaemonError(.usage, "unknown link \(spec): use serial:PATH, tcp:HOST[:PORT] or ble:ADDRESS")
    }

    func scheduleReconnect(now: UInt64) {
        backoffMS = backoffMS == 0 ? config.reconnectMinMS : min(backoffMS * 2, config.reconnectMaxMS)
        // Jitter: 75–125 % of the backoff.
        let jitter = UInt64.random(in: 0...(backoffMS / 2))
        let delay = backoffMS - backoffMS / 4 + jitter
        reconnectAt = now + delay
        log("link: reconnecting in \(delay / 1000).\((delay % 1000) / 100) s")
        notify.status("link down; reconnecting in \(delay / 1000) s")
    }

    /// Tears down the link and session; the outbox and everything stored stay.
    func linkLost(_ reason: String) {
        guard link != nil || session != nil else { return }
        log("link: lost \(config.link): \(reason)")
        // The contacts and channels sync end here: their cancelled replies must not finish it.
        contactsTicket = nil
        channelTickets.removeAll()
        if let s = session {
            s.close()
            processEvents(now: monotonicNow())
            if let si = s.selfInfo { lastSelfInfo = si }
            if let di = s.deviceInfo { lastDeviceInfo = di }
        }
        session = nil
        link?.close()
        link = nil
        phase = .down
        keepaliveTicket = nil
        outbox.sessionClosed()
        for (t, r) in replyTickets {
            _ = t
            api.reply(DaemonResponse(id: r.id, error: DaemonError(.link, "the link to the radio was lost during \(r.what); try again.")), to: r.client)
        }
        replyTickets.removeAll()
        tunnelTickets.removeAll()
        api.publish(.obj(("event", "link"), ("state", "down"), ("reason", .string(reason))))
        scheduleReconnect(now: monotonicNow())
    }

    func linkReady(_ revents: Int16) {
        guard let l = link else { return }
        let now = monotonicNow()
        do throws(LinkError) {
            if revents & Int16(POLLOUT) != 0 { try l.flush() }
            if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                var any = false
                for _ in 0..<16 {
                    let n = try readChunk(l)
                    if n == 0 { break }
                    any = true
                    readBuffer.withUnsafeBytes { raw in
                        if l.framing == .datagram {  // BLE: one whole frame per read
                            received(UnsafeRawBufferPointer(rebasing: raw[0..<n]), now: now)
                        } else {
                            deframer.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n]), now: now) { frame in
                                received(frame, now: now)
                            }
                        }
                    }
                    if link == nil { return }
                }
                if !any && revents & Int16(POLLHUP | POLLERR) != 0 { throw l.hangupError() }
            }
            pump(now: now)
        } catch {
            linkLost(error.description)
        }
    }

    func readChunk(_ l: ByteLink) throws(LinkError) -> Int {
        var result: Result<Int, LinkError> = .success(0)
        readBuffer.withUnsafeMutableBytes { raw in
            do throws(LinkError) { result = .success(try l.read(into: raw)) } catch { result = .failure(error) }
        }
        return try result.get()
    }

    /// One frame from the radio: to the session, then its events are handled (messages stored)
    /// before anything the session wants to send is written.
    func received(_ frame: UnsafeRawBufferPointer, now: UInt64) {
        guard let s = session else { return }
        s.receive(frame: frame, now: now)
        processEvents(now: now)
    }

    /// Handles the session's events, then writes its frames. The order is the durability rule.
    func pump(now: UInt64) {
        processEvents(now: now)
        guard let s = session, let l = link else { return }
        while let payload = s.nextFrame() {
            if payload.first == CommandCode.syncNextMessage.rawValue && !unsaved.isEmpty {
                // The store is failing: leave the rest of the queue on the radio (where a restart
                // finds it) instead of taking messages we cannot keep. The session gives up on this
                // SYNC_NEXT_MESSAGE after its timeout; draining resumes once writing works again.
                syncWithheld = true
                continue
            }
            do throws(LinkError) {
                try l.write(l.framing == .datagram ? payload : StreamDeframer.frame(payload, marker: UInt8(ascii: "<")))
            } catch {
                linkLost(error.description)
                return
            }
        }
    }

    // MARK: - session events

    func processEvents(now: UInt64) {
        guard let s = session else { return }
        while let e = s.nextEvent() {
            switch e {
            case .ready(let di, let si):
                lastDeviceInfo = di
                lastSelfInfo = si
                radioReady(now: now)
            case .handshakeFailed(let r):
                log("link: handshake with \(config.link) failed (\(r)); is it a MeshCore companion radio?")
                pendingLinkLoss = "handshake failed"
            case .clock(let c):
                switch c {
                case .set: log("radio: clock set")
                case .radioAhead: log("radio: clock is ahead of this host's; left as is")
                case .failed(let r): log("radio: clock sync failed (\(r))")
                }
            case .message(let m):
                received(message: m, now: now)
            case .malformedMessage(let f):
                log("radio: a queued message frame could not be parsed (code 0x\(String(f.first ?? 0, radix: 16)), \(f.count) bytes); skipped")
            case .drainFailed(let r):
                if syncWithheld {
                    syncWithheld = false
                } else if case .timeout = r {
                    // The radio went quiet mid-drain: it may have rebooted (queue, clock and
                    // handshake lost) behind a link that stayed open. Handshake again.
                    pendingLinkLoss = "the radio did not answer SYNC_NEXT_MESSAGE (it may have rebooted)"
                } else {
                    log("radio: draining stopped (\(r))")
                }
            case .push(let p):
                handlePush(p, now: now)
            case .reply(let t, let r):
                handleReply(t, r, now: now)
            case .delivery(let t, let d):
                handleDelivery(t, d, now: now)
            case .request, .unexpected:
                break
            }
        }
        if let reason = pendingLinkLoss {
            pendingLinkLoss = nil
            linkLost(reason)
        }
    }

    func radioReady(now: UInt64) {
        guard let key = radioKeyHex else { return }
        let name = selfInfo.count > 58 ? String(decoding: selfInfo[58...].prefix(while: { $0 != 0 }), as: UTF8.self) : ""
        log("radio: handshake done: \(name.isEmpty ? "(unnamed)" : name) \(key.prefix(12)), firmware v\(deviceInfo.count > 1 ? deviceInfo[1] : 0)")
        do {
            try openStore(publicKey: Array(selfInfo[4..<36]))
        } catch {
            log("store: \(error)")
            if case StoreError.locked = error {
                log("daemon: another daemon owns radio \(key.prefix(12)); stopping")
                stopping = true
                return
            }
        }
        try? DaemonRegistry.write(.init(pid: getpid(), link: DaemonRegistry.canonicalLink(registryLink), socket: api.path,
                                        radio: key, name: config.name ?? (name.isEmpty ? nil : name)))
        phase = .syncing
        backoffMS = 0
        nextDrainAt = now + config.drainIntervalMS
        syncContacts(now: now)
        syncChannels(now: now)
        api.publish(.obj(("event", "link"), ("state", "up"), ("radio", .string(key))))
    }

    func syncContacts(now: UInt64) {
        guard let s = session, contactsTicket == nil else { return }
        let since = (try? store?.contactsWatermark()) ?? 0
        log("radio: syncing contacts" + (since > 0 ? " changed since \(since)" : ""))
        contactsTicket = try? s.listContacts(since: since == 0 ? nil : since, now: now)
    }

    func syncChannels(now: UInt64) {
        guard let s = session else { return }
        let count = deviceInfo.count > 3 ? Int(deviceInfo[3]) : 8
        channelsFound = []
        for i in 0..<max(1, min(count, 64)) {
            if let t = try? s.submit(frame: CommandFrame.getChannel(UInt8(i)).bytes, expecting: .codes(CodeSet(ResponseCode.channelInfo.rawValue)), now: now) {
                channelTickets[t] = UInt8(i)
            }
        }
    }

    func syncDone(now: UInt64) {
        guard phase == .syncing, contactsTicket == nil, channelTickets.isEmpty else { return }
        phase = .ready
        let status = "connected to \(config.link); radio \(radioKeyHex?.prefix(12) ?? ""); \(store?.contacts.count ?? 0) contacts"
        log("radio: synced; " + status)
        notify.ready(status: status)
        syncedOnce = true
    }

    func handleReply(_ t: Ticket, _ r: Reply, now: UInt64) {
        if t == contactsTicket {
            contactsTicket = nil
            if case .contacts(let listing) = r {
                var cs: [StoredContact] = []
                for rec in listing.records { if let c = try? StoredContact(frame: rec) { cs.append(c) } }
                do {
                    if let store {
                        if !cs.isEmpty { try store.saveContacts(cs) }
                        try store.setContactsWatermark(listing.lastmod)
                    }
                    log("radio: \(cs.count) contact(s) updated (radio has \(listing.total))")
                } catch {
                    log("store: saving contacts failed: \(error)")
                }
            } else {
                log("radio: contacts sync failed (\(r))")
                if case .timeout = r { linkLostLater("contacts sync timed out") }
            }
            syncDone(now: now)
            return
        }
        if let idx = channelTickets.removeValue(forKey: t) {
            if case .frame(let f) = r, f.count >= 50 {
                let name = String(decoding: f[2..<34].prefix(while: { $0 != 0 }), as: UTF8.self)
                channelsFound.append(StoredChannel(index: idx, name: name, secret: Array(f[34..<50])))
            }
            if channelTickets.isEmpty {
                do { try store?.saveChannels(channelsFound) } catch { log("store: saving channels failed: \(error)") }
                log("radio: \(channelsFound.filter { !$0.name.isEmpty }.count) channel(s)")
                syncDone(now: now)
            }
            return
        }
        if t == keepaliveTicket {
            keepaliveTicket = nil
            if case .timeout = r { linkLostLater("the radio stopped answering") }
            return
        }
        if let w = tunnelTickets.removeValue(forKey: t) {
            tunnelReply(w.client, frame: w.frame, r)
            return
        }
        if let w = replyTickets.removeValue(forKey: t) {
            switch r {
            case .ok, .frame:
                var fields: [(String, JSON)] = []
                if var rec = w.record, let store {
                    rec.status = .sent
                    if let res = try? store.append(rec), let m = try? store.message(id: res.id) {
                        fields.append(("message", MessageJSON.message(m, store: store)))
                    }
                }
                api.reply(DaemonResponse(id: w.id, ok: fields), to: w.client)
            case .error(let code):
                api.reply(DaemonResponse(id: w.id, error: DaemonError(code == 2 ? .notFound : .refused, "the radio refused \(w.what) with ERR \(code)")), to: w.client)
            case .timeout:
                api.reply(DaemonResponse(id: w.id, error: DaemonError(.timeout, "the radio did not answer \(w.what) in time")), to: w.client)
            default:
                api.reply(DaemonResponse(id: w.id, error: DaemonError(.link, "\(w.what) did not complete (\(r))")), to: w.client)
            }
        }
    }

    /// Tears the link down after the current event walk (not in the middle of it).
    func linkLostLater(_ reason: String) { pendingLinkLoss = reason }

    func handlePush(_ p: [UInt8], now: UInt64) {
        guard let code = p.first else { return }
        // Pushes the session did not take as a reply go on to tunnel clients, except MSG_WAITING:
        // the daemon drains the radio itself and tells them once each message is stored (`save`).
        if code != PushCode.messageWaiting.rawValue {
            for c in api.tunnelClients { api.sendFrame(p, to: c) }
        }
        // The decoded frame's views borrow `p`: take what is needed inside the closure.
        enum Action { case contactChanged, confirmed(SendConfirmed), none }
        let action: Action = p.withUnsafeBytes { b in
            switch try? CompanionFrame.decode(b) {
            case .advert?, .newAdvert?, .contactDeleted?: return .contactChanged
            case .sendConfirmed(let c)?: return .confirmed(c)
            default: return .none
            }
        }
        switch action {
        case .contactChanged:
            // A contact changed on the radio: resync incrementally, debounced.
            if contactsResyncAt == nil { contactsResyncAt = now + 2_000 }
        case .confirmed(let c):
            // SEND_CONFIRMED the session did not match: a tunnel client's send, or an attempt sent
            // before a restart or a lost link.
            guard let store else { return }
            tunnelAcked(c.ack)
            if let events = outbox.confirmed(ack: c.ack, roundTripMs: c.roundTripMs, store: store, wall: UInt32(truncatingIfNeeded: time(nil))) {
                outboxEvents(events)
            }
        case .none:
            break
        }
    }

    // MARK: - messages

    func received(message m: ReceivedMessage, now: UInt64) {
        let rec = MessageJSON.stored(m, receivedAt: UInt32(truncatingIfNeeded: time(nil)))
        if !unsaved.isEmpty || store == nil {
            hold(rec)
            return
        }
        save(rec)
    }

    /// Appends one received message durably; on failure keeps it in memory and retries.
    @discardableResult
    func save(_ rec: StoredMessage) -> Bool {
        guard let store else { hold(rec); return false }
        do {
            let result = try store.append(rec)
            switch result {
            case .stored(let id):
                storedCount += 1
                notifyTunnels()
                if let m = try? store.message(id: id) {
                    api.publish(.obj(("event", "message"), ("message", MessageJSON.message(m, store: store))))
                }
                _ = hooks?.tick(now: monotonicNow())
            case .duplicate:
                duplicateCount += 1
            }
            return true
        } catch {
            log("store: cannot store a received message: \(error); keeping it in memory, leaving the rest on the radio, retrying")
            hold(rec)
            return false
        }
    }

    /// A message was stored: tells every tunnel client with MSG_WAITING, as the radio would.
    func notifyTunnels() {
        for c in api.tunnelClients { api.sendFrame(PushFrame.messageWaiting().bytes, to: c) }
    }

    func hold(_ rec: StoredMessage) {
        if unsaved.count >= unsavedCapacity {
            log("store: \(unsavedCapacity) messages waiting in memory; dropping the oldest held message")
            unsaved.removeFirst()
        }
        unsaved.append(rec)
        if unsavedRetryAt == 0 || unsavedRetryAt < monotonicNow() { unsavedRetryAt = monotonicNow() + 1_000 }
    }

    func retryUnsaved(now: UInt64) {
        guard store != nil else { unsavedRetryAt = now + 1_000; return }
        let pending = unsaved
        unsaved.removeAll()
        for (i, rec) in pending.enumerated() {
            if !save(rec) {
                unsaved = Array(pending[(i + 1)...]) + unsaved
                break
            }
        }
        if unsaved.isEmpty {
            log("store: writing works again; \(pending.count) held message(s) stored; draining the radio")
            unsavedRetryAt = 0
            if let s = session, phase == .ready { s.drain(now: now); pump(now: now) }
        } else {
            unsavedRetryAt = now + 5_000
        }
    }

    // MARK: - store

    /// Opens the store of the radio this link had last time, so the API works before the radio answers.
    func openKnownStore() throws {
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        if let hex = StateFile.readString(root + "/links/" + DaemonRegistry.slug(forLink: config.link)),
           let key = bytesFromHex(hex.filter { !$0.isWhitespace }), key.count == 32 {
            try openStore(publicKey: key)
        }
    }

    func openStore(publicKey: [UInt8]) throws {
        let root = try StoreLocation.stateRoot(stateDir: config.stateDir)
        let dir = StoreLocation.radioDirectory(stateRoot: root, publicKey: publicKey)
        if let s = store {
            if s.directory == dir { return }
            log("store: the radio on \(config.link) is now \(hexString(publicKey).prefix(12)); switching stores")
            s.close()
            store = nil
            hooks = nil
        }
        let s = try RadioStore(publicKey: publicKey, stateDir: config.stateDir, options: config.storeOptions)
        store = s
        readDamageLogged = 0
        openTunnelQueue(s)
        let r = s.recovery
        log("store: \(dir): \(s.messageCount) messages" + (r.truncatedBytes > 0 ? ", torn tail of \(r.truncatedBytes) bytes cut" : "")
            + (r.damage.isEmpty ? "" : ", \(r.damage.count) damaged record(s) skipped"))
        for d in r.damage.prefix(5) { log("store: \(d)") }
        if r.idsRaised > 0 { log("store: the message log holds fewer ids than were issued (lost or cut short); new messages continue from id \(s.nextMessageId)") }
        let wall = UInt32(truncatingIfNeeded: time(nil))
        let awaiting = s.outbox.filter { $0.ackTag != 0 && $0.nextAttemptAt > wall }
        if !s.outbox.isEmpty {
            log("outbox: \(s.outbox.count) message(s) waiting" + (awaiting.isEmpty ? "" :
                "; \(awaiting.count) sent before, awaiting its ACK for up to \(awaiting.map { $0.nextAttemptAt - wall }.max()!) s before another attempt"))
        }
        try? UnixSocket.makeDirectory(root + "/links")
        try? StateFile.write(root + "/links/" + DaemonRegistry.slug(forLink: config.link), hexString(publicKey) + "\n")
        if let argv = config.hook {
            var hc = HookRunner.Config(argv: argv, dir: dir + "/hooks", wrapper: config.hookWrapper)
            hc.concurrency = config.hookConcurrency
            hc.timeoutMS = config.hookTimeoutMS
            let h = try HookRunner(config: hc)
            h.log = { [unowned self] in self.log($0) }
            h.fetch = { [unowned self] after, limit in
                guard let store = self.store, let ms = try? store.messages(after: after, limit: limit, incomingOnly: true) else { return [] }
                self.reportReadDamage()
                return ms.map { HookMessage(id: $0.id, json: MessageJSON.message($0, store: store)) }
            }
            hooks = h
            if h.highestKnownId >= s.nextMessageId {
                s.ensureNextId(atLeast: h.highestKnownId + 1)
                log("store: the hook has seen ids up to \(h.highestKnownId), past the message log; new messages continue from id \(s.nextMessageId)")
            }
            log("hook: \(argv[0]) for each received message (delivered up to id \(h.cursor))")
        }
    }

    /// Logs each damaged record found while reading messages (hooks, API), once: it is skipped.
    func reportReadDamage() {
        guard let store else { return }
        let found = store.readDamage
        while readDamageLogged < found.count {
            log("store: \(found[readDamageLogged]) (a damaged record: its message cannot be shown or handed to a hook)")
            readDamageLogged += 1
        }
    }

    /// The tunnel's delivery cursor ("sync"). The first time a store is used, it starts at the
    /// newest stored message: tunnel clients get what arrives from then on, not the whole history.
    func openTunnelQueue(_ s: RadioStore) {
        do {
            if let c = try s.storedCursor("sync") {
                tunnelQueue = TunnelQueue(cursor: c)
            } else {
                let c = s.nextMessageId > 0 ? s.nextMessageId - 1 : 0
                try s.setCursor("sync", c)
                tunnelQueue = TunnelQueue(cursor: c)
                log("store: sync cursor starts after message \(c)")
            }
        } catch {
            // Deliver again rather than skip.
            log("store: cannot read the sync cursor: \(error); starting from the oldest message")
            tunnelQueue = TunnelQueue(cursor: 0)
        }
    }

    // MARK: - outbox

    func sendOutbox(now: UInt64) {
        guard phase == .ready, let s = session, let store else { return }
        outboxEvents(outbox.send(session: s, store: store, now: now, wall: UInt32(truncatingIfNeeded: time(nil))))
        pump(now: now)
    }

    func handleDelivery(_ t: Ticket, _ d: Delivery, now: UInt64) {
        guard let store, let events = outbox.delivery(t, d, store: store, wall: UInt32(truncatingIfNeeded: time(nil))) else { return }
        outboxEvents(events)
    }

    /// Logs, publishes and answers waiting `send --wait` clients.
    func outboxEvents(_ events: [OutboxSender.Event]) {
        for e in events {
            switch e {
            case .sent(let id, _, _, _):
                publishDelivery(id, "sent")
            case .acked(let id, let rtt):
                log("outbox: message \(id) acknowledged (round trip \(rtt) ms)")
                publishDelivery(id, "acked")
                for w in sendWaiters.removeValue(forKey: id) ?? [] {
                    let m = store.flatMap { try? $0.message(id: id) }
                    api.reply(DaemonResponse(id: w.1, ok: m.map { [("message", MessageJSON.message($0, store: store!))] } ?? []), to: w.0)
                }
            case .retrying(let id, let attempts, let delay):
                log("outbox: message \(id): no ACK after \(attempts) attempt(s); next try in \(delay) s")
                publishDelivery(id, "retrying")
            case .failed(let id, let error):
                log("outbox: message \(id) failed: \(error.message)")
                publishDelivery(id, "failed")
                for w in sendWaiters.removeValue(forKey: id) ?? [] {
                    api.reply(DaemonResponse(id: w.1, error: error), to: w.0)
                }
            case .storeFailed(let id, let error):
                log("store: outbox message \(id): \(error)")
            }
        }
    }

    func publishDelivery(_ id: UInt64, _ status: String) {
        api.publish(.obj(("event", "delivery"), ("id", .int(Int64(id))), ("status", .string(status))))
    }

    // MARK: - shutdown

    public func shutdown() {
        if isShutDown { return }
        isShutDown = true
        notify.stopping()
        hooks?.detachAll()
        if let s = session { s.close() }
        session = nil
        link?.close()
        link = nil
        store?.close()
        store = nil
        DaemonRegistry.remove(socket: api.path)
        api.shutdown()
    }
}
