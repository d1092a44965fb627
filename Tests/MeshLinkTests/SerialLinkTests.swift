import Glibc
import Testing
@testable import MeshLink

@Suite struct SerialLinkTests {
    @Test func roundTripOverPseudoTerminal() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let link = try SerialLink(path: pty.path)
        defer { link.close() }
        #expect(link.framing == .stream)
        // Radio -> app.
        let reply: [UInt8] = [0x3E, 0x02, 0x00, 0x00, 0x01]
        pty.write(reply)
        #expect(try receive(from: link, count: reply.count) == reply)
        // App -> radio.
        let query: [UInt8] = [0x3C, 0x02, 0x00, 0x16, 0x03]
        try link.write(query)
        #expect(pty.read(count: query.count) == query)
        // Nothing pending: a read returns 0, not an error.
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try link.read(into: $0) } == 0)
    }

    @Test func largeWriteIsBufferedAndFlushed() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let link = try SerialLink(path: pty.path, outBufferCapacity: 64 * 1024)
        defer { link.close() }
        let payload = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try link.write(payload)
        // Drain the master side while the loop flushes the out-buffer.
        var received: [UInt8] = []
        let loop = PollLoop()
        loop.attach(link, onReceive: { _ in }, onError: { _ in loop.stop() })
        loop.register(fd: pty.master, events: .readable) { _ in
            var chunk = [UInt8](repeating: 0, count: 8192)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(pty.master, $0.baseAddress, $0.count) }
            if n > 0 { received += chunk[0..<n] }
            if received.count >= payload.count { loop.stop() }
        }
        loop.run(until: monotonicMilliseconds() + 5000)
        #expect(received == payload)
        #expect(!link.hasPendingOutput)
    }

    @Test func fullOutBufferIsStalled() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let link = try SerialLink(path: pty.path, outBufferCapacity: 16)
        defer { link.close() }
        let chunk = [UInt8](repeating: 0x55, count: 4096)
        #expect(throws: LinkError.stalled(pty.path)) {
            for _ in 0..<1000 { try link.write(chunk) }
        }
    }

    @Test func hangupIsLinkLost() throws {
        let pty = try PseudoTerminal()
        let link = try SerialLink(path: pty.path)
        defer { link.close() }
        pty.close()
        var failure: LinkError? = nil
        let loop = PollLoop()
        loop.attach(link, onReceive: { _ in }, onError: { failure = $0; loop.stop() })
        let reason = loop.run(until: monotonicMilliseconds() + 2000)
        #expect(reason == .stopped)
        guard case .lost(let path, _) = failure else {
            Issue.record("expected .lost, got \(String(describing: failure))")
            return
        }
        #expect(path == pty.path)
        #expect(!loop.isRegistered(fd: link.fd))
    }

    @Test(arguments: ModemLinePolicy.allCases)
    func pseudoTerminalHasNoModemLines(policy: ModemLinePolicy) throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let link = try SerialLink(path: pty.path, modemLines: policy)
        defer { link.close() }
        #expect(!link.hasModemLines)
        try link.setModemLines(set: Int32(TIOCM_DTR), clear: 0)  // ENOTTY is tolerated
    }

    /// Links opened and closed on several threads at once (as a test process does): the list of
    /// ports made exclusive, kept for the exit, is shared by every thread and survives it.
    @Test func linksOpenAndCloseOnSeveralThreadsAtOnce() throws {
        let workers = (0..<4).map { _ in OpenCloseCycles(times: 300) }
        for w in workers { w.join() }
        #expect(workers.allSatisfy { $0.exclusive == 300 }, "\(workers.map(\.exclusive))")
    }

    @Test func secondOpenIsBusy() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let first = try SerialLink(path: pty.path)
        defer { first.close() }
        #expect(throws: LinkError.busy(pty.path)) { _ = try SerialLink(path: pty.path) }
        #expect(LinkError.busy(pty.path).description.contains("in use by another program"))
        first.close()
        let again = try SerialLink(path: pty.path)
        again.close()
    }

    /// Exclusive mode is the tty's, not the descriptor's: a link that set it clears it on close
    /// (TIOCNXCL), or every later open of a pty by a non-root user is EBUSY. Root gets past
    /// TIOCEXCL, so the flag itself is read (TIOCGEXCL) through a descriptor held meanwhile.
    @Test func closeGivesUpExclusiveMode() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let watch = open(pty.path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        try #require(watch >= 0)
        defer { Glibc.close(watch) }
        try #require(SerialLink.isExclusive(watch) == false, "this kernel has no TIOCGEXCL")
        let link = try SerialLink(path: pty.path)
        #expect(SerialLink.isExclusive(watch) == true)
        link.close()
        #expect(SerialLink.isExclusive(watch) == false)
        // Opened again and dropped without `close` (deinit), the same.
        do { _ = try SerialLink(path: pty.path) }
        #expect(SerialLink.isExclusive(watch) == false)
        // A plain open of the same port succeeds after it.
        let plain = open(pty.path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        #expect(plain >= 0)
        if plain >= 0 { Glibc.close(plain) }
    }

    /// A port another program holds in exclusive mode (root got past it) stays exclusive when
    /// this link closes: only what the link set is cleared.
    @Test func exclusiveModeOfAnotherHolderIsLeftAlone() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        let other = open(pty.path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        try #require(other >= 0)
        defer { Glibc.close(other) }
        try #require(SerialLink.isExclusive(other) != nil, "this kernel has no TIOCGEXCL")
        try #require(ioctl(other, UInt(TIOCEXCL)) == 0)
        guard geteuid() == 0 else { return }  // only root opens an exclusive tty
        let link = try SerialLink(path: pty.path)
        link.close()
        #expect(SerialLink.isExclusive(other) == true)
    }

    @Test func missingDeviceIsNotFound() {
        #expect(throws: LinkError.notFound("/dev/pocketmesh-no-such-port")) {
            _ = try SerialLink(path: "/dev/pocketmesh-no-such-port")
        }
    }

    @Test func regularFileIsNotASerialPort() throws {
        var template = Array("/tmp/pocketmesh-serial-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        let path = String(cString: template)
        defer { Glibc.close(fd); unlink(path) }
        #expect(throws: LinkError.self) { _ = try SerialLink(path: path) }
    }

    @Test func speeds() {
        #expect(SerialSpeed(baud: 115_200)?.baud == 115_200)
        #expect(SerialSpeed(baud: 921_600) != nil)
        #expect(SerialSpeed(baud: 1200) == nil)  // nRF52 bootloader touch
        #expect(SerialSpeed(baud: 115_201) == nil)
        #expect(SerialSpeed.supportedBauds.contains(9600))
    }
}

/// A thread that opens a link on a pseudo-terminal of its own and closes it, `times` times,
/// counting the opens that set exclusive mode.
final class OpenCloseCycles: @unchecked Sendable {
    private var thread: pthread_t?
    let times: Int
    private(set) var exclusive = 0

    init(times: Int) {
        self.times = times
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        if pthread_create(&t, nil, { raw in
            let job = Unmanaged<OpenCloseCycles>.fromOpaque(raw!).takeRetainedValue()
            job.run()
            return nil
        }, box.toOpaque()) == 0 { thread = t } else { box.release() }
    }

    private func run() {
        guard let pty = try? PseudoTerminal() else { return }
        defer { pty.close() }
        for _ in 0..<times {
            guard let link = try? SerialLink(path: pty.path) else { continue }
            if SerialLink.isExclusive(link.fd) == true { exclusive += 1 }
            link.close()
        }
    }

    /// Waits for the thread (its counts are read after).
    func join() { if let thread { pthread_join(thread, nil); self.thread = nil } }
}
