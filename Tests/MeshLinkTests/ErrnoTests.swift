import Testing
import Glibc
@testable import MeshLink

// What the test's signal handler sees: a C handler captures nothing, so these are globals.
private nonisolated(unsafe) var interruptingWriteFD: Int32 = -1
private nonisolated(unsafe) var interruptingTicks = 0

/// SIGALRM's handler in the test: the third tick writes one byte to the pipe. Each tick that comes
/// while the test's thread is blocked in `read` ends that read with EINTR (no SA_RESTART); the
/// byte only ever comes from a tick, so a read that blocked at all is interrupted at least once.
private let tickWritesOnTheThird: @convention(c) (Int32) -> Void = { _ in
    interruptingTicks += 1
    if interruptingTicks == 3 {
        var byte: UInt8 = 0x2A
        _ = Glibc.write(interruptingWriteFD, &byte, 1)
    }
}

/// The one EINTR policy (`retryingOnInterrupt`, `sys`, the `FileDescriptor` methods; MeshStore's
/// file calls go through `sys`): a blocking call that a signal interrupts is made again, and the
/// caller gets its result, not the interruption.
@Suite(.serialized) struct ErrnoTests {
    /// This thread's kernel id, from /proc/thread-self -> "<pid>/task/<tid>" (Swift's Glibc has no `gettid`).
    func threadID() -> pid_t {
        var path = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &path, path.count - 1)
        #expect(n > 0)
        let text = String(decoding: path.prefix(max(n, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return pid_t(text.split(separator: "/").last.flatMap { Int32($0) } ?? 0)
    }

    /// Runs `read` on a blocking pipe with no data yet, while a timer aimed at this thread sends
    /// SIGALRM every 20 ms (a handler installed without SA_RESTART); the third tick writes a byte.
    /// Returns what `read` returned, the byte, and whether the byte was still to come when `read`
    /// began (if the thread was held up for all three ticks first, nothing interrupted the read).
    func readInterrupted(_ read: (_ fd: Int32, _ into: UnsafeMutableRawBufferPointer) -> Result<Int, Errno>)
        -> (result: Result<Int, Errno>, byte: UInt8, blocked: Bool) {
        var fds: [Int32] = [-1, -1]
        #expect(Glibc.pipe(&fds) == 0)
        defer { Glibc.close(fds[0]); Glibc.close(fds[1]) }
        interruptingWriteFD = fds[1]
        interruptingTicks = 0

        var action = sigaction()
        action.__sigaction_handler.sa_handler = tickWritesOnTheThird
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a blocked read fails with EINTR
        var previous = sigaction()
        #expect(sigaction(SIGALRM, &action, &previous) == 0)
        var unblock = sigset_t(), previousMask = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGALRM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)

        // The timer's signal goes to this thread alone (the test runner has others).
        var event = sigevent()
        event.sigev_notify = Int32(SIGEV_THREAD_ID)
        event.sigev_signo = SIGALRM
        event._sigev_un._tid = threadID()
        var timer: timer_t? = nil
        #expect(timer_create(CLOCK_MONOTONIC, &event, &timer) == 0)
        let tick = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        var period = itimerspec(it_interval: tick, it_value: tick)
        #expect(timer_settime(timer, 0, &period, nil) == 0)

        var byte: UInt8 = 0
        let blocked = interruptingTicks < 3
        let result = withUnsafeMutableBytes(of: &byte) { read(fds[0], $0) }

        timer_delete(timer)
        // Ignoring discards a tick still pending; then the previous disposition and mask come back.
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        sigaction(SIGALRM, &ignore, nil)
        sigaction(SIGALRM, &previous, nil)
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        return (result, byte, blocked)
    }

    /// `readInterrupted` until the read began before the byte came (at most five tries).
    func readBlocked(_ read: (_ fd: Int32, _ into: UnsafeMutableRawBufferPointer) -> Result<Int, Errno>)
        -> (result: Result<Int, Errno>, byte: UInt8) {
        var attempt = readInterrupted(read)
        for _ in 1..<5 where !attempt.blocked { attempt = readInterrupted(read) }
        #expect(attempt.blocked)
        return (attempt.result, attempt.byte)
    }

    @Test func anInterruptedReadIsMadeAgainAndReturnsTheData() {
        var calls = 0
        let (result, byte) = readBlocked { fd, buffer in
            calls = 0
            return retryingOnInterrupt { calls += 1; return Glibc.read(fd, buffer.baseAddress, buffer.count) }
        }
        #expect(result == .success(1))
        #expect(byte == 0x2A)
        #expect(calls >= 2)  // at least one EINTR was seen and retried
    }

    @Test func fileDescriptorReadRetriesThroughTheLayer() {
        let (result, byte) = readBlocked { fd, buffer in
            do throws(Errno) { return .success(try FileDescriptor(rawValue: fd).read(into: buffer)) } catch { return .failure(error) }
        }
        #expect(result == .success(1))
        #expect(byte == 0x2A)
    }

    /// The control: without the layer the same read fails with EINTR.
    @Test func withoutTheLayerTheSameReadIsInterrupted() {
        let (result, _) = readBlocked { fd, buffer in
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            return n < 0 ? .failure(.current) : .success(n)
        }
        #expect(result == .failure(.interrupted))
    }
}
