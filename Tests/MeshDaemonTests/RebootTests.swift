import Glibc
import MeshCompanion
import MeshLink
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshNode
@testable import MeshSim
import MeshOps

/// A simulated companion radio (MeshSim, virtual time) served to a daemon over loopback TCP by the
/// test itself, one frame at a time, so a test can reboot it at an exact point of the conversation.
final class RadioPort {
    let world: SimWorld
    let node: CompanionNode
    let listenFD: Int32
    let port: UInt16
    var clientFD: Int32 = -1
    let decoder = FrameDecoder(side: .device)
    /// Command frames received, one list per accepted connection.
    var connections: [[[UInt8]]] = []
    /// Connections closed at once because the radio was off.
    var refused = 0
    var accepting = true
    /// Called with each command frame before the radio sees it; returns false to swallow it.
    var onCommand: ((RadioPort, [UInt8]) -> Bool)? = nil
    /// Called after the radio has answered a command frame.
    var afterCommand: ((RadioPort, [UInt8]) -> Void)? = nil

    init(world: SimWorld, node: CompanionNode) throws {
        self.world = world
        self.node = node
        let fd = socket(AF_INET, Int32(1) | SocketFlags.nonBlocking | SocketFlags.closeOnExec, 0)
        guard fd >= 0 else { throw SystemError("socket") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { close(fd); throw SystemError("listen") }
        listenFD = fd
        port = UInt16(bigEndian: addr.sin_port)
        node.onFrame = { [unowned self] f in self.write(f) }
    }

    deinit {
        if clientFD >= 0 { close(clientFD) }
        close(listenFD)
    }

    var link: String { "tcp:127.0.0.1:\(port)" }

    /// The radio's virtual time follows the real time spent in the daemon's loop (as `pocketmesh
    /// sim` does); a test may also jump it ahead.
    var lastTick = monotonicMilliseconds()
    func tick() {
        let now = monotonicMilliseconds()
        if now > lastTick { world.mesh.run(for: now - lastTick) }
        lastTick = now
    }

    func write(_ f: EncodedFrame) {
        guard clientFD >= 0 else { return }
        f.withWireBytes(.fromRadio) { wire in
            var off = 0
            while off < wire.count {
                let n = Glibc.send(clientFD, wire.baseAddress! + off, wire.count - off, SocketFlags.noSignal)
                if n > 0 { off += n } else if n < 0 && (errno == EINTR || errno == EAGAIN) { continue } else { break }
            }
        }
    }

    /// The radio's TCP server goes away (a WiFi radio rebooting): the connection drops.
    func dropClient() {
        if clientFD >= 0 { close(clientFD); clientFD = -1 }
        node.connected = false
        decoder.reset()
    }

    func pollDescriptors(into fds: inout [pollfd]) {
        fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
        if clientFD >= 0 { fds.append(pollfd(fd: clientFD, events: Int16(POLLIN), revents: 0)) }
    }

    func handle(_ p: pollfd) {
        if p.fd == listenFD {
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard accepting else { close(fd); refused += 1; return }
            dropClient()  // a new connection evicts the old one, as the firmware does
            clientFD = fd
            node.connected = true
            connections.append([])
            return
        }
        guard p.fd == clientFD else { return }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { read(clientFD, $0.baseAddress, $0.count) }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { dropClient(); return }
        guard n > 0 else { return }
        var frames: [[UInt8]] = []
        decoder.receive(Array(buf[0..<n])) { frames.append(Array($0)) }
        for f in frames {
            connections[connections.count - 1].append(f)
            if let hook = onCommand, !hook(self, f) { continue }
            node.receive(frame: f)
            afterCommand?(self, f)
        }
    }

    /// Command codes of connection `i`.
    func codes(_ i: Int) -> [UInt8] { connections[i].compactMap(\.first) }
}

/// The test's radio as one more part of the daemon's loop: the loop drives it like its own parts.
final class RadioPortPart: PollPart {
    let port: RadioPort
    init(_ port: RadioPort) { self.port = port }
    func pollDescriptors(into fds: inout [pollfd]) { port.pollDescriptors(into: &fds) }
    func handle(_ p: pollfd, now: UInt64) -> Bool { port.handle(p); return true }
    func tick(now: UInt64) -> UInt64? { port.tick(); return nil }
}

/// Runs one turn of the daemon's poll loop (the one `Daemon.run` runs) with the radio port as a
/// part of it, waiting at most `maxWaitMS`.
func step(_ d: Daemon, _ r: RadioPort, maxWaitMS: UInt64 = 5) {
    let part = RadioPortPart(r)
    d.loop.add(part)
    defer { d.loop.remove(part) }
    _ = d.loop.turn(until: monotonicMilliseconds() + maxWaitMS)
}

/// Steps until `done()` or `limitMS` of real time; returns `done()`.
@discardableResult
func drive(_ d: Daemon, _ r: RadioPort, limitMS: UInt64 = 15_000, until done: () -> Bool) -> Bool {
    let end = monotonicMilliseconds() + limitMS
    while !done() && monotonicMilliseconds() < end { step(d, r) }
    return done()
}

/// The radio reboots while the daemon drains its offline queue. The daemon must notice, handshake
/// again (clock, contacts, channels), keep draining, and keep every message it had stored exactly
/// once; hooks run once per stored message.
@Suite(.serialized) struct RebootTests {
    enum Link: String, CaseIterable, CustomStringConvertible {
        /// A TCP (WiFi) radio: the reboot drops the connection and refuses new ones until it is up.
        case drops
        /// A radio behind a USB-UART bridge: the port stays open, the radio just stops answering
        /// for a moment and comes back without the app's handshake.
        case stays
        var description: String { rawValue }
    }

    enum Moment: String, CaseIterable, CustomStringConvertible {
        /// The daemon asks for the next message (so the previous one is on disk) and the radio
        /// reboots before answering.
        case betweenSyncs
        /// The radio hands a message over (and forgets it) and reboots before the daemon has
        /// stored it.
        case beforeFsync
        var description: String { rawValue }
    }

    static let queued = 24
    static let rebootAfter = 9  // messages handed over before the reboot

    /// A channel text from `sim1` into `sim0`'s offline queue (through the simulated air).
    func sendChannel(_ w: SimWorld, _ text: String) {
        let b = w.companions[1]
        b.receive(frame: try! CommandFrame.sendChannelTextMessage(channel: 0, text: text, timestamp: b.epochNow).bytes)
        w.mesh.run(for: 4_000)
    }

    @Test(arguments: Link.allCases, Moment.allCases)
    func rebootMidDrain(link: Link, moment: Moment) throws {
        let dir = temporaryDirectory("pm-rb")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.seed = 7
        o.companion.offlineQueueSize = 64
        // The host clock is ahead of the radio's, so SET_DEVICE_TIME is accepted.
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        let a = w.companions[0], b = w.companions[1]
        // sim0 learns sim1 as a contact (a flood advert), then sim1 fills sim0's queue.
        b.receive(frame: CommandFrame.sendSelfAdvert(flood: true).bytes)
        w.mesh.run(for: 10_000)
        #expect(a.contact(key: b.publicKey) != nil)
        for i in 0..<Self.queued { sendChannel(w, "before-\(i)") }
        #expect(a.queue.count == Self.queued)

        let r = try RadioPort(world: w, node: a)
        let out = dir + "/hooked"
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\nread -r json\nprintf '%s|%s\\n' \"$POCKETMESH_ID\" \"$POCKETMESH_TEXT\" >> \(out)\n", mode: 0o700)
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.hook = [script]
        c.commandTimeoutMS = 800  // how long a silent reboot goes unnoticed
        c.reconnectMinMS = 20
        c.reconnectMaxMS = 100
        c.connectTimeoutMS = 1_000
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        var log: [String] = []
        d.log = { log.append($0) }

        // The reboot, at the chosen moment of the drain.
        var syncs = 0
        var swallowed = 0
        var storedAtReboot: Int? = nil
        var rebooted = false
        func reboot(_ port: RadioPort) {
            rebooted = true
            port.node.reboot(downtime: 1_000)
            if link == .drops { port.dropClient(); port.accepting = false }
        }
        r.onCommand = { port, f in
            if rebooted && !port.node.powered { swallowed += 1 }
            guard !rebooted, f.first == 0x0A else { return true }
            syncs += 1
            if moment == .betweenSyncs && syncs == Self.rebootAfter + 1 {
                // Asked for the next message: the previous ones must be on disk already.
                storedAtReboot = d.store?.messageCount
                reboot(port)
                swallowed = 1  // the radio is off: the frame goes nowhere
                return true
            }
            return true
        }
        var clockSet: [Int64] = []  // radio clock minus host clock right after each SET_DEVICE_TIME
        r.afterCommand = { port, f in
            if f.first == 0x06 { clockSet.append(Int64(port.node.epochNow) - Int64(time(nil))) }
            guard !rebooted, f.first == 0x0A, moment == .beforeFsync, syncs == Self.rebootAfter else { return }
            // The answer (message 9) is on its way; the daemon has not read it, let alone stored it.
            storedAtReboot = d.store?.messageCount
            reboot(port)
        }

        #expect(drive(d, r) { rebooted }, "the daemon never drained up to the reboot: \(log)")
        #expect(storedAtReboot == Self.rebootAfter - (moment == .beforeFsync ? 1 : 0))
        if link == .drops {
            // Away for a while: the daemon finds nobody there at least once.
            #expect(drive(d, r) { r.refused >= 1 }, "no reconnect attempt while the radio was down: \(log)")
        } else {
            // Away for a while: something the daemon sends goes unanswered.
            #expect(drive(d, r) { swallowed >= 1 }, "the daemon sent nothing while the radio was down: \(log)")
        }
        // Back up: the RAM queue is gone, contacts and channels are not. A radio without an RTC
        // also lost its clock.
        w.mesh.run(for: 1_000)
        #expect(a.powered && a.queue.isEmpty && a.appTargetVersion == 0)
        a.setClock(o.epochBase)
        for i in 0..<3 { sendChannel(w, "while-down-\(i)") }
        r.accepting = true

        let expectedBefore = (0..<Self.rebootAfter).map { "before-\($0)" }
        func texts() -> [String] {
            ((try? d.store?.messages(after: 0, limit: 1000, incomingOnly: true)) ?? []).map { m in
                let t = m.textString
                return t.hasPrefix("sim1: ") ? String(t.dropFirst(6)) : t
            }
        }
        #expect(drive(d, r) { d.phase == .ready && texts().count >= Self.rebootAfter + 3 },
                "the daemon did not come back and drain after the reboot: \(texts()) \(log)")
        // Sent after the daemon is back: drained on MSG_WAITING.
        for i in 0..<3 { sendChannel(w, "after-\(i)") }
        #expect(drive(d, r) { texts().count >= Self.rebootAfter + 6 }, "\(texts())")
        let lines = { readFile(out).split(separator: "\n").map(String.init) }
        #expect(drive(d, r) { lines().count >= Self.rebootAfter + 6 }, "hooks: \(lines())")
        for _ in 0..<50 { step(d, r, maxWaitMS: 2) }  // nothing more arrives

        // Every message the daemon had before the reboot, then the ones sent after it, once each.
        let expected = expectedBefore + (0..<3).map { "while-down-\($0)" } + (0..<3).map { "after-\($0)" }
        #expect(texts() == expected)
        let stored = (try? d.store?.messages(after: 0, limit: 1000, incomingOnly: true)) ?? []
        #expect(stored.allSatisfy { $0.kind == .channel && $0.channelIndex == 0 })
        // Handshaken again: messages queued after the new DEVICE_QUERY come as V3 frames, with SNR
        // (the radio formats each one when it arrives, so those queued before it have none).
        #expect(stored.suffix(3).allSatisfy { $0.snr != 0 }, "\(stored.map { ($0.textString, $0.snr) })")
        #expect(a.appTargetVersion >= 3)
        // Hooks: once per stored message.
        let hooked = lines()
        #expect(hooked.count == expected.count)
        #expect(Set(hooked.map { $0.split(separator: "|")[0] }).count == hooked.count)
        #expect(hooked.map { String($0.split(separator: "|", maxSplits: 1)[1]) }.sorted() == expected.sorted())

        // The reconnect: a second connection with the whole handshake, clock, contacts and channels.
        #expect(r.connections.count >= 2)
        let again = r.codes(r.connections.count - 1)
        for code: UInt8 in [0x16, 0x01, 0x06, 0x04, 0x1F, 0x0A] { #expect(again.contains(code), "no 0x\(String(code, radix: 16)) in \(again)") }
        #expect(clockSet.count >= 2 && abs(clockSet.last!) <= 2, "the radio clock was not set again: \(clockSet)")
        #expect(d.store?.contact(prefix: KeyPrefix(sixOf: b.publicKey.bytes)) != nil)
        #expect(log.contains { $0.hasPrefix("link: lost") })
        #expect(log.filter { $0.hasPrefix("radio: handshake done") }.count >= 2)
        #expect(log.contains { $0.hasPrefix("link: connecting") && $0.hasSuffix("(attempt 2)") })
        #expect(log.last { $0.hasPrefix("radio: synced") } != nil)
        // "synced" only after a handshake on a link that is still up.
        var handshaken = false
        for l in log {
            if l.hasPrefix("link: lost") { handshaken = false }
            if l.hasPrefix("radio: handshake done") { handshaken = true }
            if l.hasPrefix("radio: synced") { #expect(handshaken, "synced without a live handshake: \(log)") }
        }

        // On disk: the same messages, nothing torn or damaged.
        d.shutdown()
        let reopened = try RadioStore(publicKey: a.publicKey.bytes, stateDir: c.stateDir)
        defer { reopened.close() }
        #expect(reopened.recovery.truncatedBytes == 0 && reopened.recovery.damage.isEmpty)
        #expect(try reopened.messages(after: 0, limit: 1000, incomingOnly: true) == stored)
    }
}
