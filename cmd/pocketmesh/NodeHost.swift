import Glibc
import MeshAir
import MeshBridge
import struct MeshCompanion.PublicKey
import MeshDaemonClient
import MeshLink
import MeshNode
import MeshSession
import MeshSim
import MeshOps

/// `--identity`: whose key the node is.
enum NodeIdentitySource: String {
    /// A key kept in the state folder (made on the first run).
    case host
    /// The KISS modem's own key: it signs and makes the shared secrets; no key in the state folder.
    case modem
}

/// One node on one radio, from one `poll()` loop: the radio's link, the local admin CLI socket,
/// and one timer at the node's next deadline (nothing wakes the loop while the node has nothing
/// to do).
final class NodeHost {
    let loop = PollLoop()
    let state: NodeState
    let air: RadioAir
    let node: Node
    /// The repeater or room server, or the companion.
    let server: ServerNode?
    let companion: CompanionNode?
    let radio: NodeRadio
    private var companionServer: NodeCompanionServer?
    private var timer: PollLoop.TimerID? = nil
    private var timerAt: UInt64 = .max
    private var cliFD: Int32 = -1
    private var cliClients: [Int32: CLIClient] = [:]
    private var failure: Error? = nil
    private var savedPrefs = ""
    /// The regions and ACL files as last written (or read): written again only when changed.
    private var savedRegions = ""
    private var savedACL = ""
    /// `clientsChanged` of the server when its ACL was last looked at, and the pending write.
    private var aclSeen: UInt64 = 0
    private var aclTimer: PollLoop.TimerID? = nil
    /// A changed ACL is written this long after the change (the firmware's lazy contacts write),
    /// so a burst of logins or path updates is one write; and at exit.
    static let aclWriteDelayMs: UInt64 = 5000
    private var liveness: NodeLiveness!
    /// `--mqtt-observer`: uploaders of every packet the node hears.
    private var observers: [MQTTObserver] = []

    init(state: NodeState, role: NodeRole, radio spec: NodeRadioSpec, firstRun: [String], companionListen: String? = nil,
         pins: SX1262Pins? = nil, identitySource: NodeIdentitySource = .host, sensors: HostSensors? = nil) throws {
        self.state = state
        var seed: UInt64 = 0
        withUnsafeMutableBytes(of: &seed) { raw in
            var rng = SecureRandom()
            for i in raw.indices { raw[i] = UInt8.random(in: 0...255, using: &rng) }
        }
        air = RadioAir(seed: seed, start: monotonicMilliseconds(), epochNow: UInt32(truncatingIfNeeded: time(nil)))
        switch spec {
        case let .air(host, port, name): radio = try AirSocketRadio(host: host, port: port, name: name, air: air)
        case let .kiss(path, speed): radio = try KISSRadio(path: path, speed: speed, air: air)
        case let .sx1262(spidev): radio = try SX1262Radio(spidev: spidev ?? "/dev/spidev0.0", pins: pins!)
        }
        // The roles are made with a key; with the modem's identity it is a stand-in, dropped at
        // `adopt` before anything is signed and never stored.
        let remote: KISSModemIdentity?
        let identity: LocalIdentity
        switch identitySource {
        case .host:
            remote = nil
            identity = try state.identity()
        case .modem:
            guard let kiss = radio as? KISSRadio else { throw ClientError.usage("--identity modem needs a KISS modem radio (--radio kiss:PATH).") }
            remote = try kiss.modemIdentity()
            identity = LocalIdentity.generate()
        }
        let publicKey = remote?.publicKey ?? identity.publicKey
        let defaultName = "pm-" + AirHex.encode(publicKey.bytes.prefix(4))
        switch role {
        case .room: server = RoomNode(mesh: air, name: defaultName, identity: identity, adminPassword: "password", guestPassword: "hello")
        case .companion: server = nil
        default: server = RepeaterNode(mesh: air, name: defaultName, identity: identity, adminPassword: "password", guestPassword: "")
        }
        if role == .companion {
            let c = CompanionNode(mesh: air, name: defaultName, identity: identity)
            c.board = "Linux (pocketmesh)"
            companion = c
            node = c
            if let l = companionListen { companionServer = try NodeCompanionServer(node: c, listen: l) }
        } else {
            companion = nil
            node = server!
            server!.board = "Linux (pocketmesh)"
        }
        if let remote { (node as! MeshNode).adopt(remote) }
        if let text = try state.prefs() {
            for bad in loadPrefs(text) { writeError("pocketmesh node: \(state.prefsPath): skipped `\(bad)`.") }
        } else {
            let refused = loadPrefs(firstRun.joined(separator: "\n"))
            if let bad = refused.first { throw ClientError.usage("the first-run setting `\(bad)` was refused; check its value.") }
        }
        if let server {
            // What `region save` and the ACL left, as the firmware reloads its region map and ClientACL.
            if let text = try state.regions() {
                for bad in server.loadRegions(text) { writeError("pocketmesh node: \(state.regionsPath): skipped `\(bad)`.") }
            }
            if let text = try state.acl() {
                for bad in server.loadACL(text) { writeError("pocketmesh node: \(state.aclPath): skipped `\(bad)`.") }
            }
            savedRegions = server.regionsText()
            savedACL = server.aclText()
            aclSeen = server.clientsChanged
        }
        // Telemetry and status report what this host measures, or nothing: never invented values.
        let measured = sensors ?? HostSensors()
        server?.sensorSource = { measured.read() }
        companion?.sensorSource = { measured.read() }
        try keepPrefs()
        server?.onSavePrefs = { [unowned self] in self.keepPrefsLater() }
        air.send = { [unowned self] packet in self.radio.send(packet) }
        if let sx = radio as? SX1262Radio, let server {
            sx.wantsCAD = { [unowned server] in server.channelActivityDetection }
            sx.wantsBoostedGain = { [unowned server] in server.rxBoostedGain }
        } else if let sx = radio as? SX1262Radio, let companion {
            sx.wantsCAD = { [unowned companion] in companion.channelActivityDetection }
            sx.wantsBoostedGain = { [unowned companion] in companion.rxBoostedGain }
        }
        radio.onRecovery = { [unowned self] kind, text in self.recovered(kind, text) }
        node.radio.driverRecoveries = { [unowned self] in self.radio.recoveries ?? RadioRecoveries() }
        liveness = NodeLiveness(radio: radio)
    }

    /// `--mqtt-observer`: every packet the radio hears goes to these brokers as the daemon's
    /// observer sends a companion radio's, under the node's key, with a token the node signs (with
    /// its key, or its modem's).
    func observe(_ list: [ObserverSettings], caFile: String?) throws {
        var env: [String: String] = [:]
        for k in ["POCKETMESH_HOSTS", "POCKETMESH_RESOLV_CONF", "POCKETMESH_DNS_PORT"] { if let v = getenv(k) { env[k] = String(cString: v) } }
        for (i, m) in list.enumerated() {
            var s: MQTTObserver.Settings
            do throws(DaemonError) {
                s = try m.observer(try BrokerConnection.Settings.parse(m.url, flag: "--mqtt-observer", caFile: caFile, connectTimeoutMS: 5_000, environment: env))
            } catch { throw ClientError.usage(error.message) }
            s.firmware = ("Linux (pocketmesh)", "v" + PocketMeshVersion.string)
            let o = MQTTObserver(settings: s, clientIdSuffix: list.count > 1 ? "-\(i + 1)" : "", index: i)
            o.log = { writeError("pocketmesh node: " + $0) }
            o.signer = { [unowned self] message, done in (self.node as! MeshNode).sign(message, done) }
            observers.append(o)
        }
        guard !observers.isEmpty else { return }
        air.onHeard = { [unowned self] bytes, snr, rssi in
            let now = monotonicMilliseconds()
            for o in self.observers { o.packet(raw: bytes, snrQuarterDb: Int8(clamping: Int((snr * 4).rounded())), rssi: Int8(clamping: rssi), now: now) }
        }
    }

    /// The observers' origin: the node's name, key and radio settings (again after a CLI command).
    private func observersReady() {
        guard !observers.isEmpty else { return }
        let p = node.radio.params
        let radio = ObserverFormat.radio(frequencyKHz: p.freqKHz, bandwidthHz: p.bwHz, spreadingFactor: p.sf, codingRate: p.cr)
        let key = server?.publicKey ?? companion!.publicKey
        for o in observers { o.ready(name: node.name, publicKey: key, radio: radio, now: monotonicMilliseconds()) }
    }

    /// The radio's driver got past some trouble: one line in the log, the node's error count
    /// (the firmware's err_events, in its status) and the systemd status line. Listen-before-talk
    /// deferrals are only counted.
    private func recovered(_ kind: RadioRecovery, _ text: String) {
        guard kind != .lbtDeferral else { return }
        node.radio.errEvents &+= 1
        writeError("pocketmesh node: \(radio.description): \(text) (\(kind.rawValue): \(radio.recoveries?[kind] ?? 0)).")
        liveness.recovered()
    }

    var announcement: [String] {
        let key = (server?.publicKey ?? companion!.publicKey).hex
        return ["\(node.role.rawValue) \(node.name) pubkey=\(key) radio=\(radio.description) cli=\(state.socketPath)"
            + (companionServer.map { " companion=\($0.address)" } ?? "")]
    }

    private func loadPrefs(_ text: String) -> [String] {
        if let server { return server.loadPrefs(text) }
        return companion!.loadPrefs(text)
    }

    private var prefsText: String { server?.prefsText() ?? companion!.prefsText() }

    /// Writes what changed of the prefs, the saved regions and the ACL.
    private func keepPrefs() throws {
        let text = prefsText
        if text != savedPrefs {
            try state.savePrefs(text)
            savedPrefs = text
        }
        if let server {
            let regions = server.regionsText()
            if regions != savedRegions {
                try state.saveRegions(regions)
                savedRegions = regions
            }
            try keepACL()
        }
    }

    private func keepACL() throws {
        guard let server else { return }
        aclSeen = server.clientsChanged
        let text = server.aclText()
        guard text != savedACL else { return }
        try state.saveACL(text)
        savedACL = text
    }

    /// After a CLI command: `savePrefs` runs in the middle of a `set`, before its value is in place.
    private func keepPrefsLater() {
        loop.addTimer(after: 0) { [unowned self] in
            do { try self.keepPrefs() } catch { writeError("pocketmesh node: \(error)") }
        }
    }

    func pump() {
        air.run(until: monotonicMilliseconds())
        if companion != nil { do { try keepPrefs() } catch { writeError("pocketmesh node: \(error)") } }
        if let server, server.clientsChanged != aclSeen, aclTimer == nil {
            aclTimer = loop.addTimer(after: Self.aclWriteDelayMs) { [unowned self] in
                self.aclTimer = nil
                do { try self.keepACL() } catch { writeError("pocketmesh node: \(error)") }
            }
        }
        guard let d = air.nextDeadline else { return }
        if d == timerAt { return }
        if let t = timer { loop.cancelTimer(t) }
        timerAt = d
        timer = loop.addTimer(at: d) { [unowned self] in
            self.timer = nil; self.timerAt = .max
            self.pump()
        }
    }

    private func fail(_ e: Error) {
        failure = e
        loop.stop()
    }

    func run(seconds: Double?) throws {
        do { cliFD = try UnixSocket.listen(path: state.socketPath) } catch {
            throw ClientError.storage("cannot serve the node's CLI at \(state.socketPath): \(error).")
        }
        defer {
            for c in Array(cliClients.values) { closeCLI(c) }
            close(cliFD)
            unlink(state.socketPath)
        }
        loop.register(fd: cliFD, events: .readable) { [unowned self] _ in self.acceptCLI() }
        companionServer?.attach(to: loop) { [unowned self] in self.pump() }
        try radio.attach(to: loop, air: air, params: node.radio.params, pump: { [unowned self] in self.pump() },
                         fail: { [unowned self] e in self.fail(e) })
        try loop.handleSignals()
        for o in observers { loop.add(o) }
        observersReady()
        pump()
        liveness.start(loop: loop, clock: { [unowned self] in
            let now = monotonicMilliseconds()
            self.air.run(until: now)
            return now
        }, pump: { [unowned self] in self.pump() })
        releaseStartupPages()
        let deadline = seconds.map { monotonicMilliseconds() &+ UInt64($0 * 1000) }
        _ = loop.run(until: deadline)
        for o in observers { o.stop(now: monotonicMilliseconds()) }
        loop.restoreSignals()
        radio.close()
        try keepPrefs()
        if let failure { throw failure }
    }

    /// One connection of `pocketmesh node cli` (or any client of `node.sock`): a line in, the
    /// reply out, then closed. Nothing a client does stops the node: the reply goes out without
    /// blocking and with MSG_NOSIGNAL (a client that hangs up before it is dropped quietly), a
    /// client that stays silent is closed after `cliTimeoutMs`, and at most `maxCLIClients` are
    /// open at once (one more is closed at once, and logged).
    final class CLIClient {
        let fd: Int32
        var line: [UInt8] = []
        var output = SocketOutput()
        var answered = false
        var timer: PollLoop.TimerID? = nil
        init(fd: Int32) { self.fd = fd }
    }
    static let maxCLIClients = 16
    static let cliTimeoutMs: UInt64 = 10_000

    private func acceptCLI() {
        guard case .success(let fd) = retryingOnInterrupt({ accept(cliFD, nil, nil) }) else { return }
        guard cliClients.count < Self.maxCLIClients else {
            close(fd)
            writeError("pocketmesh node: \(Self.maxCLIClients) CLI connections are open; a new one was closed.")
            return
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let c = CLIClient(fd: fd)
        cliClients[fd] = c
        c.timer = loop.addTimer(after: Self.cliTimeoutMs) { [unowned self, unowned c] in
            c.timer = nil
            self.closeCLI(c)
        }
        loop.register(fd: fd, events: .readable) { [unowned self, unowned c] _ in self.cliReady(c) }
    }

    private func cliReady(_ c: CLIClient) {
        guard cliClients[c.fd] === c else { return }
        if c.answered {  // the rest of the reply, as the client takes it
            if !c.output.flush(to: c.fd) || c.output.unsent == 0 { closeCLI(c) }
            return
        }
        var buf = [UInt8](repeating: 0, count: 512)
        let input = SocketInput.read(c.fd, into: &buf)
        switch input {
        case .wouldBlock: return
        case .failed: closeCLI(c); return  // reset by the client: nobody to answer
        case .bytes(let n):
            c.line += buf[0..<n]
            guard c.line.contains(0x0A) || c.line.count > 1024 else { return }
        case .endOfStream: break
        }
        let text = String(decoding: c.line.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
        guard !text.isEmpty else { closeCLI(c); return }
        air.run(until: monotonicMilliseconds())
        let reply = server?.command(text, senderTimestamp: 0) ?? companion!.cliCommand(text)
        observersReady()
        pump()
        c.answered = true
        c.output.append(contentsOf: reply.utf8)
        if !c.output.flush(to: c.fd) || c.output.unsent == 0 { closeCLI(c); return }
        loop.setEvents(fd: c.fd, .writable)
    }

    private func closeCLI(_ c: CLIClient) {
        guard cliClients[c.fd] === c else { return }
        cliClients[c.fd] = nil
        if let t = c.timer { loop.cancelTimer(t) }
        c.timer = nil
        loop.unregister(fd: c.fd)
        close(c.fd)
    }
}

/// After start-up, drops this process's mapping of the binary's pages that are still the file's
/// (clean, kept in the page cache): code and read-only data that start-up alone used (the command
/// line's table, option parsing, the first-run settings) leave the resident set, and what runs
/// from then on faults back in as it is used. Code (r-x) is dropped whole; read-only data only
/// where /proc/self/pagemap says a page is still the file's (relocated pages were written before
/// they were made read-only, and are the process's own). Writable segments are never touched: a
/// write between the look and the drop would be lost. The kernel drops such clean pages itself
/// under memory pressure; this does it at once.
func releaseStartupPages() {
    guard let f = fopen("/proc/self/maps", "r") else { return }
    var exe = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &exe, exe.count - 1)
    guard n > 0 else { fclose(f); return }
    let path = String(decoding: exe[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var line = [CChar](repeating: 0, count: 4096)
    var ranges: [(lo: UInt, hi: UInt, relocatable: Bool)] = []
    while fgets(&line, Int32(line.count), f) != nil {
        let text = String(cString: line)
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, fields[5].hasPrefix(path) || fields[5].dropLast() == path else { continue }
        let bounds = fields[0].split(separator: "-")
        guard bounds.count == 2, let lo = UInt(bounds[0], radix: 16), let hi = UInt(bounds[1], radix: 16) else { continue }
        // Only code (r-xp) is never written; read-only data may have been, before it was made
        // read-only (relocations). Nothing writable.
        guard !fields[1].contains("w") else { continue }
        ranges.append((lo, hi, !fields[1].hasPrefix("r-x")))
    }
    fclose(f)
    let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
    let pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
    defer { if pagemap >= 0 { close(pagemap) } }
    for r in ranges {
        guard r.relocatable else {
            _ = madvise(UnsafeMutableRawPointer(bitPattern: r.lo), Int(r.hi - r.lo), MADV_DONTNEED)
            continue
        }
        guard pagemap >= 0 else { continue }
        let count = Int((r.hi - r.lo) / page)
        var entries = [UInt64](repeating: 0, count: count)
        let want = count * 8
        let got = entries.withUnsafeMutableBytes { pread(pagemap, $0.baseAddress, want, off_t(r.lo / page * 8)) }
        guard got == want else { continue }
        // Runs of present pages that are still the file's (bit 63 present, bit 61 file page).
        let clean: (UInt64) -> Bool = { $0 & (1 << 63) != 0 && $0 & (1 << 61) != 0 }
        var i = 0
        while i < count {
            guard clean(entries[i]) else { i += 1; continue }
            var j = i
            while j < count && clean(entries[j]) { j += 1 }
            _ = madvise(UnsafeMutableRawPointer(bitPattern: r.lo + UInt(i) * page), (j - i) * Int(page), MADV_DONTNEED)
            i = j
        }
    }
}
