import Testing
import Glibc
@testable import MeshStore

// What the test's signal handler sees: a C handler captures nothing, so these are globals.
private nonisolated(unsafe) var fifoPath: UnsafeMutablePointer<CChar>?
private nonisolated(unsafe) var fifoWriter: Int32 = -1
private nonisolated(unsafe) var alarmTicks = 0

/// SIGVTALRM's handler in the test: the third tick opens the FIFO read-write, which lets an open
/// for reading that waits for a writer go on. Each tick that comes while the test's thread waits
/// in `open` ends that open with EINTR (no SA_RESTART). (Not SIGALRM: MeshLinkTests' ErrnoTests,
/// in the same test process, may run at the same time with a handler of their own for that one.)
private let thirdTickOpensTheFIFO: @convention(c) (Int32) -> Void = { _ in
    alarmTicks += 1
    if alarmTicks == 3, let path = fifoPath { fifoWriter = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
}

/// The store's file calls go through MeshLink's one EINTR policy: `SystemFileOps.open` of a FIFO,
/// which waits for a writer, is made again when a signal interrupts it.
@Suite(.serialized) struct InterruptTests {
    func threadID() -> pid_t {
        var path = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &path, path.count - 1)  // "<pid>/task/<tid>"
        #expect(n > 0)
        let text = String(decoding: path.prefix(max(n, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return pid_t(text.split(separator: "/").last.flatMap { Int32($0) } ?? 0)
    }

    /// Opens a new FIFO for reading with `open` while a timer aimed at this thread sends SIGVTALRM
    /// every 20 ms; the third tick opens its other end. `blocked`: the writer was still to come
    /// when `open` began (tried up to five times).
    func openInterrupted(_ open: (String) -> Result<Int32, FileErrno>) -> (result: Result<Int32, FileErrno>, blocked: Bool) {
        var attempt: (result: Result<Int32, FileErrno>, blocked: Bool) = (.failure(FileErrno(0)), false)
        for _ in 0..<5 where !attempt.blocked {
            if case .success(let fd) = attempt.result { Glibc.close(fd) }
            let dir = TempDir()
            let path = dir.path + "/fifo"
            #expect(mkfifo(path, 0o600) == 0)
            fifoPath = strdup(path)
            fifoWriter = -1
            alarmTicks = 0

            var action = sigaction()
            action.__sigaction_handler.sa_handler = thirdTickOpensTheFIFO
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // no SA_RESTART: a waiting open fails with EINTR
            var previous = sigaction()
            #expect(sigaction(SIGVTALRM, &action, &previous) == 0)
            var unblock = sigset_t(), previousMask = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGVTALRM)
            pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)

            var event = sigevent()  // the timer's signal goes to this thread alone
            event.sigev_notify = Int32(SIGEV_THREAD_ID)
            event.sigev_signo = SIGVTALRM
            event._sigev_un._tid = threadID()
            var timer: timer_t? = nil
            #expect(timer_create(CLOCK_MONOTONIC, &event, &timer) == 0)
            let tick = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            var period = itimerspec(it_interval: tick, it_value: tick)
            #expect(timer_settime(timer, 0, &period, nil) == 0)

            let blocked = alarmTicks < 3
            let result = open(path)

            timer_delete(timer)
            var ignore = sigaction()  // discards a tick still pending
            ignore.__sigaction_handler.sa_handler = SIG_IGN
            sigaction(SIGVTALRM, &ignore, nil)
            sigaction(SIGVTALRM, &previous, nil)
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            if fifoWriter >= 0 { Glibc.close(fifoWriter) }
            free(fifoPath)
            fifoPath = nil
            attempt = (result, blocked)
            withExtendedLifetime(dir) {}  // the FIFO stays until the open is done
        }
        #expect(attempt.blocked)
        return attempt
    }

    @Test func anInterruptedOpenIsMadeAgain() {
        let (result, _) = openInterrupted { path in
            do throws(FileErrno) { return .success(try SystemFileOps().open(path, flags: O_RDONLY, mode: 0)) } catch { return .failure(error) }
        }
        #expect(result.map { _ in 0 } == .success(0))  // opened, not failed (with EINTR)
        if case .success(let fd) = result { Glibc.close(fd) }
    }

    /// The control: without the layer the same open fails with EINTR.
    @Test func withoutTheLayerTheSameOpenIsInterrupted() {
        let (result, _) = openInterrupted { path in
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            return fd < 0 ? .failure(FileErrno(errno)) : .success(fd)
        }
        #expect(result == .failure(FileErrno(EINTR)))
        if case .success(let fd) = result { Glibc.close(fd) }
    }
}
