import Glibc
import Testing
@testable import MeshLink

// One at a time: two of these tests raise SIGUSR2, and a loop that restores its signals puts the
// process's disposition back while another may still raise it (seen killing the run with Swift 6.0.3).
@Suite(.serialized) struct PollLoopTests {
    @Test func timersFireInDeadlineOrder() {
        let loop = PollLoop()
        let start = monotonicMilliseconds()
        var fired: [Int] = []
        loop.addTimer(at: start + 30) { fired.append(3) }
        loop.addTimer(at: start + 10) { fired.append(1) }
        loop.addTimer(at: start + 20) { fired.append(2) }
        let cancelled = loop.addTimer(at: start + 15) { fired.append(99) }
        loop.cancelTimer(cancelled)
        #expect(loop.run() == .idle)
        #expect(fired == [1, 2, 3])
        #expect(monotonicMilliseconds() >= start + 30)
    }

    @Test func timerCanScheduleAndStop() {
        let loop = PollLoop()
        var ticks = 0
        func tick() {
            ticks += 1
            if ticks == 3 { loop.stop() } else { loop.addTimer(after: 1, tick) }
        }
        loop.addTimer(after: 1, tick)
        #expect(loop.run() == .stopped)
        #expect(ticks == 3)
    }

    @Test func runUntilDeadline() {
        let loop = PollLoop()
        var fired = false
        loop.addTimer(after: 10_000) { fired = true }
        let start = monotonicMilliseconds()
        #expect(loop.run(until: start + 20) == .deadline)
        #expect(!fired)
        #expect(loop.nextTimerDeadline != nil)
    }

    @Test func readableAndUnregister() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.close(); pipe.write.close() }
        let loop = PollLoop()
        var seen: PollEvents = []
        loop.register(fd: pipe.read.rawValue, events: .readable) { events in
            seen = events
            loop.unregister(fd: pipe.read.rawValue)
        }
        _ = try [UInt8]([1]).withUnsafeBytes { try pipe.write.write($0) }
        #expect(loop.run(until: monotonicMilliseconds() + 2000) == .idle)
        #expect(seen.contains(.readable))
    }

    @Test func hangupReported() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.close() }
        let loop = PollLoop()
        var seen: PollEvents = []
        loop.register(fd: pipe.read.rawValue, events: .readable) { events in
            seen = events
            loop.stop()
        }
        pipe.write.close()
        #expect(loop.run(until: monotonicMilliseconds() + 2000) == .stopped)
        #expect(seen.contains(.hangup))
    }

    @Test func signalStopsTheLoop() throws {
        let loop = PollLoop()
        try loop.handleSignals([SIGUSR2])
        defer { loop.restoreSignals() }
        loop.addTimer(after: 5) { raise(SIGUSR2) }
        #expect(loop.run(until: monotonicMilliseconds() + 5000) == .signal(SIGUSR2))
    }

    /// Each loop receives the signals it asked for and no other, whichever asked last: a test
    /// process runs several daemons and loops at once, and one's SIGUSR1 is not another's stop.
    @Test func aSignalAnotherLoopAskedForIsPassedOver() throws {
        let other = PollLoop()
        try other.handleSignals([SIGUSR1])
        defer { other.restoreSignals() }
        let loop = PollLoop()
        try loop.handleSignals([SIGUSR2])
        defer { loop.restoreSignals() }
        raise(SIGUSR1)  // handled before raise returns: the byte is in the other loop's pipe
        loop.addTimer(after: 30) { raise(SIGUSR2) }
        #expect(loop.run(until: monotonicMilliseconds() + 5000) == .signal(SIGUSR2))
        // The other loop got its SIGUSR1 meanwhile (it waits in its pipe).
        #expect(other.run(until: monotonicMilliseconds() + 5000) == .signal(SIGUSR1))
    }

    /// Two loops that ask for the same signal both receive it, and the first to give it back
    /// leaves the other's handler in place; the last restores the signal's old disposition.
    @Test func twoLoopsAskingForOneSignalBothReceiveIt() throws {
        let first = PollLoop()
        try first.handleSignals([SIGUSR1])
        let second = PollLoop()
        try second.handleSignals([SIGUSR1])
        defer { second.restoreSignals() }
        var seen: [Int32] = []
        second.onSignal = { seen.append($0); second.stop() }
        raise(SIGUSR1)
        #expect(first.run(until: monotonicMilliseconds() + 5000) == .signal(SIGUSR1))
        #expect(second.run(until: monotonicMilliseconds() + 5000) == .stopped)
        #expect(seen == [SIGUSR1])
        first.restoreSignals()
        // The second still owns a handler: a SIGUSR1 now does not kill the process.
        seen = []
        raise(SIGUSR1)
        #expect(second.run(until: monotonicMilliseconds() + 5000) == .stopped)
        #expect(seen == [SIGUSR1])
    }

    final class PipePart: PollPart {
        let fds: (read: FileDescriptor, write: FileDescriptor)
        var due: UInt64?
        weak var loop: PollLoop?
        init(due: UInt64?) throws {
            fds = try FileDescriptor.pipe()
            self.due = due
        }
        deinit { fds.read.close(); fds.write.close() }
        var log: [String] = []
        func pollDescriptors(into out: inout [pollfd]) { out.append(pollfd(fd: fds.read.rawValue, events: Int16(POLLIN), revents: 0)) }
        func handle(_ p: pollfd, now: UInt64) -> Bool {
            guard p.fd == fds.read.rawValue else { return false }
            var b = (UInt64(0), UInt64(0))
            _ = withUnsafeMutableBytes(of: &b) { try? fds.read.read(into: $0) }
            log.append("read")
            return true
        }
        func tick(now: UInt64) -> UInt64? {
            guard let d = due else { return nil }
            if now >= d { log.append("due"); due = nil; loop?.stop(); return nil }
            return d
        }
    }

    @Test func partsGetTheirDescriptorsAndDeadlines() throws {
        let loop = PollLoop()
        let a = try PipePart(due: monotonicMilliseconds() + 20)
        let b = try PipePart(due: nil)
        loop.add(a)
        loop.add(b)
        #expect(loop.allParts.count == 2)
        // a's deadline bounds the wait (it stops the loop then); b's byte reaches b alone.
        var one: UInt8 = 1
        _ = withUnsafeBytes(of: &one) { try? b.fds.write.write($0) }
        a.loop = loop
        #expect(loop.run(until: monotonicMilliseconds() + 60_000) == .stopped)
        #expect(a.log == ["due"])
        #expect(b.log == ["read"])
        loop.remove(a)
        loop.remove(b)
        #expect(loop.allParts.isEmpty)
    }

    /// A part that looks its clients up by descriptor number, as the hub and the API server do.
    final class ClientsPart: PollPart {
        var fd: Int32
        var told: [Int16] = []
        init(fd: Int32) { self.fd = fd }
        func pollDescriptors(into fds: inout [pollfd]) { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        func handle(_ p: pollfd, now: UInt64) -> Bool {
            guard p.fd == fd else { return false }
            told.append(p.revents)
            return true
        }
        func tick(now: UInt64) -> UInt64? { nil }
    }

    /// A handler earlier in the turn closes a client that hung up and a new client takes its
    /// descriptor number: the part is not told the old client's hangup (it would drop the new one).
    @Test func aReportForAClosedDescriptorIsNotToldToItsNewFile() throws {
        var old: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &old) == 0)
        let part = ClientsPart(fd: old[0])
        let loop = PollLoop()
        loop.add(part)
        close(old[1])  // the client hangs up: old[0] reports POLLHUP
        // Something polled before the part (a registration) closes it and accepts anew.
        var trigger: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &trigger) == 0)
        defer { close(trigger[0]); close(trigger[1]) }
        _ = write(trigger[1], "x", 1)
        var fresh: [Int32] = [-1, -1]
        loop.register(fd: trigger[0], events: .readable) { _ in
            var b: UInt8 = 0
            _ = read(trigger[0], &b, 1)
            // Closed, and its number given to a new socket (dup2 does both at once, whatever
            // else this process opens meanwhile).
            _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fresh)
            _ = dup2(fresh[0], old[0])
            close(fresh[0])
            fresh[0] = old[0]
            loop.unregister(fd: trigger[0])
        }
        loop.pollOnce(timeout: 1000)
        defer { close(fresh[0]); close(fresh[1]) }
        #expect(part.told.isEmpty, "told \(part.told) about a file that was closed")
        // The new file's own reports are told.
        _ = write(fresh[1], "y", 1)
        loop.pollOnce(timeout: 1000)
        #expect(part.told.count == 1 && part.told[0] & Int16(POLLIN) != 0)
    }
}
