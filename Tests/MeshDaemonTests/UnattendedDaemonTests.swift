import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshNode
@testable import MeshSim

/// A TCP port whose accept queue is full and never drained: the kernel drops each further SYN, so
/// a connect to it hangs until the connecting side gives up (a radio that drops SYNs).
final class SYNDropPort {
    let fd: Int32
    let port: UInt16
    var fillers: [Int32] = []

    init() throws {
        let fd = socket(AF_INET, Int32(1) | SocketFlags.closeOnExec, 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 0) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { close(fd); throw SystemError("listen") }
        port = UInt16(bigEndian: addr.sin_port)
        for _ in 0..<3 {
            let f = socket(AF_INET, Int32(1) | SocketFlags.nonBlocking | SocketFlags.closeOnExec, 0)
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(f, $0, len) } }
            fillers.append(f)
        }
        usleep(50_000)
    }

    deinit {
        for f in fillers { close(f) }
        close(fd)
    }

    var link: String { "tcp:127.0.0.1:\(port)" }
}

/// An API client that waits for its answer by turning the daemon's own loop (as `run` does).
final class LoopClient {
    let client: LineClient
    init(_ d: Daemon) throws { client = try LineClient(d.api.path) }

    func send(_ text: String) { client.send(text + "\n") }

    /// The next line, turning the loop (and the radio port, if any) at most `turns` times.
    func answer(_ d: Daemon, _ r: RadioPort? = nil, turns: Int = 400) -> JSON? {
        for _ in 0..<turns {
            if let l = client.line(nil, rounds: 0) ?? take() { return try? JSONParser.parse(l) }
            if let r { step(d, r, maxWaitMS: 5) } else { _ = d.loop.turn(until: monotonicMilliseconds() + 5) }
        }
        return nil
    }

    private func take() -> String? {
        var p = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 0) > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { read(client.fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        client.buffer.append(contentsOf: chunk[0..<n])
        guard let nl = client.buffer.firstIndex(of: 0x0A) else { return nil }
        let l = String(decoding: client.buffer[..<nl], as: UTF8.self)
        client.buffer.removeSubrange(...nl)
        return l
    }
}

/// Item 6 and 7 of "unattended": the daemon's loop never blocks on the radio's connect, a request
/// that needs the radio waits for the handshake under way, the idle daemon asks for no wake-up,
/// READY=1 comes with the API whether the radio is there or not, and the API socket's classes
/// hold for each peer.
@Suite(.serialized) struct UnattendedDaemonTests {
    final class LogBox { var lines: [String] = [] }

    func daemon(_ dir: String, link: String, _ edit: (inout Daemon.Config) -> Void = { _ in }) throws -> (Daemon, LogBox) {
        var c = Daemon.Config(link: link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.socketPath = dir + "/d.sock"
        edit(&c)
        let d = try Daemon(config: c)
        let box = LogBox()
        d.log = { box.lines.append($0) }
        return (d, box)
    }

    func radio(seed: UInt64 = 9) throws -> RadioPort {
        var o = SimWorld.Options()
        o.seed = seed
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        return try RadioPort(world: w, node: w.companions[0])
    }

    // MARK: - item 6: the loop never blocks

    /// Against a radio that drops SYNs the loop goes on: a ping is answered at once while the
    /// connect is pending, and the attempt ends at its own deadline (virtual time) with one
    /// sentence, then waits out a backoff.
    @Test func theAPIAnswersWhileTheRadiosConnectHangs() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let syn = try SYNDropPort()
        let (d, log) = try daemon(dir, link: syn.link) { $0.connectTimeoutMS = 3_000 }
        defer { d.shutdown() }
        _ = d.loop.turn(until: monotonicMilliseconds() + 5)
        #expect(d.phase == .connecting && d.connector != nil, "\(log.lines)")
        let c = try LoopClient(d)
        c.send(#"{"id":1,"op":"ping"}"#)
        let r = c.answer(d)
        #expect(r?["state"]?.string == "connecting", "\(String(describing: r)) \(log.lines)")
        #expect(!log.lines.contains { $0.contains("cannot connect") }, "the ping waited for the connect: \(log.lines)")
        // The attempt's own deadline, in virtual time: a timeout, then the backoff, which the
        // same turn asks to be woken for.
        let later = monotonicMilliseconds() + 3_001
        let next = d.radioTimers(now: later)
        #expect(d.phase == .down && d.connector == nil)
        #expect(next != nil && next! == d.radio.reconnectAt && d.radio.reconnectAt > later, "\(String(describing: next)) \(d.radio.reconnectAt)")
        #expect(log.lines.contains { $0.contains("cannot connect to \(syn.link): 127.0.0.1:\(syn.port) did not answer within 3 s") }, "\(log.lines)")
    }

    /// SIGHUP while connecting starts the attempt over; SIGTERM while connecting stops at once.
    @Test func signalsWhileConnecting() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let syn = try SYNDropPort()
        let (d, log) = try daemon(dir, link: syn.link) { $0.connectTimeoutMS = 60_000 }
        defer { d.shutdown() }
        _ = d.loop.turn(until: monotonicMilliseconds() + 5)
        #expect(d.phase == .connecting && d.radio.connections == 1)
        d.signalled(SIGHUP)
        #expect(d.connector == nil && d.phase == .down, "\(log.lines)")
        _ = d.loop.turn(until: monotonicMilliseconds() + 5)
        #expect(d.phase == .connecting && d.radio.connections == 2, "\(log.lines)")
        d.signalled(SIGTERM)
        #expect(d.stopping)
    }

    /// A request that needs the radio, come during the first handshake, waits for it and then
    /// runs; a tunnel opened meanwhile opens once the radio answered (`pocketmesh daemon &
    /// pocketmesh send ...`).
    @Test func aRequestDuringTheFirstHandshakeWaitsForIt() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let r = try radio()
        var held: [[UInt8]] = []
        var hold = true
        r.onCommand = { _, f in
            if hold { held.append(f); return false }
            return true
        }
        let (d, log) = try daemon(dir, link: r.link)
        defer { d.shutdown() }
        #expect(drive(d, r, limitMS: 5_000) { d.phase == .handshaking && !held.isEmpty }, "\(log.lines)")
        let info = try LoopClient(d)
        info.send(#"{"id":2,"op":"info"}"#)
        let tunnel = try LoopClient(d)
        tunnel.send(#"{"id":3,"op":"tunnel"}"#)
        #expect(info.answer(d, r, turns: 20) == nil, "answered before the radio did")
        #expect(tunnel.answer(d, r, turns: 5) == nil)
        hold = false
        for f in held { r.node.receive(frame: f) }
        let i = info.answer(d, r)
        #expect(i?["ok"]?.bool == true && i?["public_key"]?.string?.count == 64, "\(String(describing: i)) \(log.lines)")
        let t = tunnel.answer(d, r)
        #expect(t?["tunnel"]?.bool == true && t?["radio"]?.string?.count == 64, "\(String(describing: t))")
    }

    /// A waiting request gets the link's error when the attempt fails (not only at its timeout).
    @Test func aFailedAttemptAnswersTheWaitingRequests() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let syn = try SYNDropPort()
        let (d, log) = try daemon(dir, link: syn.link) { $0.connectTimeoutMS = 3_000 }
        defer { d.shutdown() }
        _ = d.loop.turn(until: monotonicMilliseconds() + 5)
        let c = try LoopClient(d)
        c.send(#"{"id":4,"op":"info"}"#)
        #expect(c.answer(d, turns: 10) == nil)
        #expect(d.radio.radioWaits.count == 1)
        _ = d.radioTimers(now: monotonicMilliseconds() + 3_001)
        let a = c.answer(d)
        #expect(a?["error"]?["code"]?.string == "link", "\(String(describing: a)) \(log.lines)")
        #expect(a?["error"]?["message"]?.string?.contains("did not answer within 3 s") == true)
        #expect(d.radio.radioWaits.isEmpty)
    }

    /// The idle daemon sleeps until something is due: with the radio ready and nothing to do, no
    /// part asks to run sooner than the safety-net drain; an outbox item waiting for its retry
    /// asks for its own time, not a tick each second.
    @Test func theIdleDaemonAsksForNoWakeUpBeforeWorkIsDue() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let r = try radio()
        let (d, log) = try daemon(dir, link: r.link) { $0.drainIntervalMS = 60_000 }
        defer { d.shutdown() }
        #expect(drive(d, r) { d.phase == .ready }, "\(log.lines)")
        // Settle: whatever the handshake left (its last replies) is done.
        for _ in 0..<20 { step(d, r) }
        let now = monotonicMilliseconds()
        let parts = d.loop.allParts.filter { !($0 is RadioPortPart) }
        let next = parts.compactMap { $0.tick(now: now) }.min()
        #expect(next == nil || next! >= now + 50_000, "a part asks to run in \(next.map { $0 - now } ?? 0) ms")
        #expect(d.outboxPart.tick(now: now) == nil)

        // An outbox item that waits for its retry in 100 s: asked for then (with a 1 ms margin).
        let store = try #require(d.store)
        let wall = UInt32(truncatingIfNeeded: time(nil))
        var rec = StoredMessage(kind: .direct, direction: .outgoing, peer: KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6]),
                                senderTimestamp: wall, receivedAt: wall, text: Array("later".utf8))
        rec.status = .pending
        var item = try store.enqueue(rec, now: wall)
        item.nextAttemptAt = wall + 100
        try store.updateOutbox(item)
        let due = d.outboxPart.tick(now: now)
        #expect(due != nil && due! >= now + 98_000 && due! <= now + 101_000, "\(due.map { $0 - now } ?? 0)")
    }

    // MARK: - item 7: a system service

    /// READY=1 as soon as the API is served, with the radio absent; STATUS= says it is absent and
    /// why; the watchdog is fed while the loop runs.
    @Test func readyComesWithTheAPIEvenWithoutTheRadio() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let path = dir + "/notify"
        let (n, _, _) = try notificationSocket(path)
        defer { close(n) }
        let (d, log) = try daemon(dir, link: "serial:" + dir + "/ttyNOPE") {
            $0.environment["NOTIFY_SOCKET"] = path
            $0.environment["WATCHDOG_USEC"] = "200000"
        }
        defer { d.shutdown() }
        // WATCHDOG=1 every 100 ms: 1.5 s leave room for a loaded machine to send at least two. The
        // socket is read as the daemon runs, as a service manager does (its queue holds 10).
        var messages: [String] = []
        func drain() { messages += receivedDatagrams(n) }
        func drainEvery50ms() { d.loop.addTimer(after: 50) { drain(); drainEvery50ms() } }
        drainEvery50ms()
        d.loop.addTimer(after: 1500) { d.stopping = true }
        #expect(d.run() == 0)
        drain()
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=serving the API") == true, "\(messages) \(log.lines)")
        #expect(messages.contains { $0.hasPrefix("STATUS=") && $0.contains("not connected") && $0.contains("does not exist") }, "\(messages)")
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count >= 2, "\(messages)")
        #expect(messages.last == "STOPPING=1")
    }

    /// A signal the daemon did not ask for (another loop's, in this process) neither reaches nor
    /// stops it. (No SIGTERM here: every daemon of the test process would receive it.)
    @Test func aSignalTheDaemonDidNotAskForDoesNotStopIt() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let other = PollLoop()
        try other.handleSignals([SIGUSR1])
        defer { other.restoreSignals() }
        let (d, log) = try daemon(dir, link: "serial:" + dir + "/ttyNOPE")
        defer { d.shutdown() }
        var stoppedByTimer = false
        d.loop.addTimer(after: 10) { raise(SIGUSR1) }
        d.loop.addTimer(after: 300) { stoppedByTimer = true; d.stopping = true }
        #expect(d.run() == 0)
        #expect(stoppedByTimer, "\(log.lines)")
        #expect(!log.lines.contains { $0.contains("signal") }, "\(log.lines)")
        #expect(other.run(until: monotonicMilliseconds() + 5000) == .signal(SIGUSR1))
    }

    /// A notification socket whose queue is full (a service manager that is stuck) never holds the
    /// daemon's loop: the notification is lost, not the loop, and READY=1 comes once there is room.
    @Test func aNotifySocketThatIsNotReadNeverHoldsTheLoop() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let path = dir + "/notify"
        let (n, boundAddress, len) = try notificationSocket(path)
        var addr = boundAddress
        defer { close(n) }
        // Fill its queue from another socket until the kernel says it is full.
        let filler = socket(AF_UNIX, SocketType.datagram | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
        defer { close(filler) }
        var queued = 0
        while queued < 100_000 {
            let sent = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(filler, "x", 1, SocketFlags.dontWait, $0, len) }
            }
            if sent != 1 { break }
            queued += 1
        }
        #expect(queued > 0 && queued < 100_000)
        let (d, log) = try daemon(dir, link: "serial:" + dir + "/ttyNOPE") {
            $0.environment["NOTIFY_SOCKET"] = path
            $0.environment["WATCHDOG_USEC"] = "20000"
        }
        defer { d.shutdown() }
        // Without the fix the loop blocks in its first send: a thread beside it empties the queue
        // after 20 s, so that the test fails instead of hanging.
        let rescue = Rescue(fd: n, after: 20)
        defer { _ = rescue.fired() }
        var drained: [String] = []
        d.loop.addTimer(after: 300) { drained = receivedDatagrams(n) }
        d.loop.addTimer(after: 800) { d.stopping = true }
        #expect(d.run() == 0)
        #expect(!rescue.fired(), "the daemon's loop was held by a full notification socket")
        let later = receivedDatagrams(n)
        #expect(drained.count >= queued, "\(drained.count) of \(queued)")
        // Every queued datagram was the filler's; READY=1 came once there was room.
        #expect(later.contains { $0.hasPrefix("READY=1\nSTATUS=") }, "\(later) \(log.lines)")
    }

    @Test func apiGroupParsingAndWhoGetsWhat() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let groups = dir + "/group"
        try StateFile.write(groups, "root:x:0:\ndialout:x:20:pi\npocketmesh:x:998:pi,alice\n")
        let g = try APIGroup(parsing: "pocketmesh", groupFile: groups)
        #expect(g.group == SystemGroup(name: "pocketmesh", gid: 998) && g.allowed == AllowedClasses([.read, .message]))
        #expect(try APIGroup(parsing: "pocketmesh:read+message+config", groupFile: groups).allowed == AllowedClasses([.read, .message, .config]))
        #expect(try APIGroup(parsing: "998:read", groupFile: groups).group.name == "pocketmesh")
        #expect(try APIGroup(parsing: "4242", groupFile: groups).group == SystemGroup(name: "4242", gid: 4242))
        for bad in ["nosuchgroup", ":read", "pocketmesh:reed"] {
            #expect(throws: DaemonError.self) { _ = try APIGroup(parsing: bad, groupFile: groups) }
        }
        let owner: uid_t = 997
        func peer(_ uid: uid_t, _ gid: gid_t, _ groups: [gid_t] = []) -> PeerCredentials { PeerCredentials(pid: 1, uid: uid, gid: gid, groups: groups) }
        #expect(APIGroup.admit(peer(0, 0), owner: owner, group: g) == .everything)
        #expect(APIGroup.admit(peer(owner, 998), owner: owner, group: g) == .everything)
        #expect(APIGroup.admit(peer(1000, 1000, [20, 998]), owner: owner, group: g) == g.allowed)
        #expect(APIGroup.admit(peer(1000, 998), owner: owner, group: g) == g.allowed)
        #expect(APIGroup.admit(peer(1001, 1001, [20]), owner: owner, group: g) == nil)
        #expect(APIGroup.admit(peer(1000, 1000, [998]), owner: owner, group: nil) == nil)

        // The kernel's word for a socketpair's peer: this process, with its groups.
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, SocketType.stream, 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let me = try #require(PeerCredentials(socket: fds[0]))
        #expect(me.uid == geteuid() && me.gid == getegid() && me.pid == getpid())
        var mine = [gid_t](repeating: 0, count: 256)
        let count = Int(getgroups(256, &mine))
        #expect(Set(me.groups) == Set(mine.prefix(max(0, count))))
    }

    /// A folder shared with a group (750) is safe to trust; one others may write or enter is not.
    @Test func aRuntimeFolderSharedWithAGroupIsTrusted() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let run = dir + "/pocketmesh"
        #expect(mkdir(run, 0o700) == 0)
        chmod(run, 0o750)
        #expect(RuntimeDirectory.inspect(run) == .safe)
        chmod(run, 0o770)
        if case .unsafe(let why) = RuntimeDirectory.inspect(run) { #expect(why.contains("750")) } else { Issue.record("0770 trusted") }
        chmod(run, 0o751)
        #expect(RuntimeDirectory.inspect(run) != .safe)
    }

    /// The socket, its folder and the registry entry go to the group with --api-group.
    @Test func theSocketAndItsFolderGoToTheGroup() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let sockets = dir + "/run"
        #expect(mkdir(sockets, 0o700) == 0)
        let gid = getegid()
        let (d, _) = try daemon(dir, link: "serial:" + dir + "/ttyNOPE") {
            $0.socketPath = sockets + "/radio.sock"
            $0.apiGroup = APIGroup(group: SystemGroup(name: "g\(gid)", gid: gid))
        }
        defer { d.shutdown() }
        var st = stat()
        #expect(lstat(sockets + "/radio.sock", &st) == 0 && st.st_mode & 0o777 == 0o660 && st.st_gid == gid)
        #expect(lstat(sockets, &st) == 0 && st.st_mode & 0o777 == 0o750 && st.st_gid == gid)
        #expect(lstat(sockets + "/radio.json", &st) == 0 && st.st_mode & 0o777 == 0o640 && st.st_gid == gid)
    }

    /// Making the API socket never changes the process's umask, not even around its bind: a
    /// folder or file another thread makes meanwhile (in a test process, another daemon's) would
    /// lose its owner's execute bit to a umask of 0177.
    @Test func listeningLeavesTheUmaskAlone() throws {
        let dir = temporaryDirectory("pm-um")
        defer { removeTree(dir) }
        let job = ListenCycles(path: dir + "/s.sock", times: 3000)
        var seen: [String] = []
        while !job.isDone {
            if let u = processUmask(), !seen.contains(u) { seen.append(u) }
        }
        job.join()
        #expect(job.failures == 0)
        #expect(!seen.contains("0177"), "\(seen)")
    }

    /// A peer with the group's classes only: its tunnel frames, its operations and its
    /// subscription each by their class; anyone refused is told so and disconnected.
    @Test func aGroupMembersClassesHoldOnEveryDoor() throws {
        let dir = temporaryDirectory("pm-un")
        defer { removeTree(dir) }
        let r = try radio()
        let (d, log) = try daemon(dir, link: r.link)
        defer { d.shutdown() }
        #expect(drive(d, r) { d.phase == .ready }, "\(log.lines)")
        d.api.admit = { _ in AllowedClasses([.read]) }

        let t = try LoopClient(d)
        t.send(#"{"id":1,"op":"tunnel"}"#)
        let opened = t.answer(d, r)
        #expect(opened?["tunnel"]?.bool == true && opened?["allows"]?.string == "read", "\(String(describing: opened))")
        // SET_ADVERT_NAME (config): ERR, and the radio never sees it.
        let seen = r.connections.last?.count ?? 0
        let frame = try CommandFrame.setAdvertName("mallory").bytes
        let wire = StreamDeframer.frame(frame, marker: UInt8(ascii: "<"))
        _ = wire.withUnsafeBytes { Glibc.send(t.client.fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
        for _ in 0..<50 { step(d, r) }
        #expect(!(r.connections.last ?? []).dropFirst(seen).contains { $0.first == CommandCode.setAdvertName.rawValue })
        #expect(log.lines.contains { $0.contains("refused") && $0.contains("through the tunnel (config; allowed: read)") }, "\(log.lines)")

        let s = try LoopClient(d)
        s.send(#"{"id":2,"op":"subscribe"}"#)
        #expect(s.answer(d, r)?["error"]?["code"]?.string == "denied")
        let o = try LoopClient(d)
        o.send(#"{"id":3,"op":"contacts_remove","name":"nobody"}"#)
        #expect(o.answer(d, r)?["error"]?["code"]?.string == "denied")

        d.api.admit = { _ in nil }
        let x = try LoopClient(d)
        let refused = x.answer(d, r)
        #expect(refused?["error"]?["code"]?.string == "denied", "\(String(describing: refused))")
        #expect(log.lines.contains { $0.contains("api: refused uid \(geteuid())") })
    }
}

/// A service manager's notification socket: a bound, non-blocking datagram socket at `path`, and
/// its address for senders.
func notificationSocket(_ path: String) throws -> (fd: Int32, address: sockaddr_un, length: socklen_t) {
    let n = socket(AF_UNIX, SocketType.datagram | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
    var (addr, len) = try #require(UnixSocket.address(path))
    let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(n, $0, len) } }
    #expect(bound == 0)
    return (n, addr, len)
}

/// Every datagram waiting on a non-blocking socket.
func receivedDatagrams(_ fd: Int32) -> [String] {
    var messages: [String] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let k = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
        if k <= 0 { break }
        messages.append(String(decoding: buf[0..<k], as: UTF8.self))
    }
    return messages
}

/// A thread that empties a socket's queue after some seconds unless cancelled first (when the
/// object goes): a test of a loop that must not block fails instead of hanging.
final class Rescue: @unchecked Sendable {
    private var lock = pthread_mutex_t()
    private var done = false
    private var didFire = false
    private var thread: pthread_t?

    init(fd: Int32, after seconds: Int) {
        pthread_mutex_init(&lock, nil)
        let box = Unmanaged.passRetained(RescueJob(rescue: self, fd: fd, seconds: seconds))
        var t = pthread_t()
        if pthread_create(&t, nil, { raw in
            let job = Unmanaged<RescueJob>.fromOpaque(raw!).takeRetainedValue()
            job.run()
            return nil
        }, box.toOpaque()) == 0 { thread = t } else { box.release() }
    }

    fileprivate func finished() -> Bool { pthread_mutex_lock(&lock); defer { pthread_mutex_unlock(&lock) }; return done }
    fileprivate func fire() { pthread_mutex_lock(&lock); didFire = true; pthread_mutex_unlock(&lock) }

    func fired() -> Bool {
        pthread_mutex_lock(&lock); done = true; let f = didFire; pthread_mutex_unlock(&lock)
        if let thread { pthread_join(thread, nil); self.thread = nil }
        return f
    }
}

private final class RescueJob {
    let rescue: Rescue, fd: Int32, seconds: Int
    init(rescue: Rescue, fd: Int32, seconds: Int) { self.rescue = rescue; self.fd = fd; self.seconds = seconds }
    func run() {
        for _ in 0..<(seconds * 20) {
            if rescue.finished() { return }
            usleep(50_000)
        }
        rescue.fire()
        while !rescue.finished() {
            _ = receivedDatagrams(fd)
            usleep(10_000)
        }
    }
}

/// The process's umask as /proc/self/status shows it ("0022"), read without changing it.
func processUmask() -> String? {
    let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 4096)
    let n = read(fd, &buf, buf.count)
    guard n > 0 else { return nil }
    let text = String(decoding: buf[0..<n], as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }) else { return nil }
    return String(line.dropFirst(6).drop { $0 == " " || $0 == "\t" })
}

/// A thread that makes and closes a listening socket `times` times.
final class ListenCycles: @unchecked Sendable {
    private var lock = pthread_mutex_t()
    private var done = false
    private(set) var failures = 0
    private var thread: pthread_t?
    let path: String, times: Int

    init(path: String, times: Int) {
        self.path = path
        self.times = times
        pthread_mutex_init(&lock, nil)
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        if pthread_create(&t, nil, { raw in
            let job = Unmanaged<ListenCycles>.fromOpaque(raw!).takeRetainedValue()
            job.run()
            return nil
        }, box.toOpaque()) == 0 { thread = t } else { box.release(); done = true }
    }

    private func run() {
        var failed = 0
        for _ in 0..<times {
            if let fd = try? UnixSocket.listen(path: path) { close(fd); unlink(path) } else { failed += 1 }
        }
        pthread_mutex_lock(&lock); failures = failed; done = true; pthread_mutex_unlock(&lock)
    }

    var isDone: Bool { pthread_mutex_lock(&lock); defer { pthread_mutex_unlock(&lock) }; return done }

    func join() { if let thread { pthread_join(thread, nil); self.thread = nil } }
}
