import Testing
import Glibc
import MeshLink
@testable import MeshStore

// What the tests' signal handlers see: a C handler captures nothing, so these are globals.
private nonisolated(unsafe) var ticks = 0
private nonisolated(unsafe) var pipeWriteEnd: Int32 = -1
private nonisolated(unsafe) var fifoPath: UnsafeMutablePointer<CChar>?
private nonisolated(unsafe) var fifoOtherEnd: Int32 = -1

/// The third tick writes one byte to the pipe.
private let thirdTickWritesAByte: @convention(c) (Int32) -> Void = { _ in
    ticks += 1
    if ticks == 3 {
        var byte: UInt8 = 0x2A
        _ = Glibc.write(pipeWriteEnd, &byte, 1)
    }
}

/// The third tick opens the FIFO read-write, which lets an open for reading that waits for a
/// writer go on.
private let thirdTickOpensTheFIFO: @convention(c) (Int32) -> Void = { _ in
    ticks += 1
    if ticks == 3, let path = fifoPath { fifoOtherEnd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
}

/// The one EINTR policy, MeshLink's (`retryingOnInterrupt`, `sys`, the `FileDescriptor` methods),
/// which the store's file calls go through: a call that a signal interrupts is made again, and the
/// caller gets its result, not the interruption. Each test blocks in a call that only a signal's
/// handler can let go on (the third tick of a timer aimed at the test's thread, a handler installed
/// without SA_RESTART), so a call that blocked at all was interrupted at least once; the controls
/// show that the same call without the layer fails with EINTR.
@Suite(.serialized) struct InterruptTests {
    /// This thread's kernel id, from /proc/thread-self -> "<pid>/task/<tid>" (Swift's Glibc has no `gettid`).
    func threadID() -> pid_t {
        var path = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &path, path.count - 1)
        #expect(n > 0)
        let text = String(decoding: path.prefix(max(n, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return pid_t(text.split(separator: "/").last.flatMap { Int32($0) } ?? 0)
    }

    /// Runs `call` while SIGALRM goes to `handler` (after 200 ms, then every 20 ms), aimed at this thread. Tried until
    /// the third tick was still to come when `call` began (five times at most: a thread held up
    /// for all three ticks first was never interrupted); `release` undoes what a try left behind.
    func interrupted<R>(by handler: @convention(c) (Int32) -> Void, setUp: () -> Void = {}, release: (R) -> Void = { _ in },
                        _ call: () -> R) -> R {
        var last: R?
        for _ in 0..<5 {
            if let last { release(last) }
            setUp()
            ticks = 0
            var action = sigaction()
            action.__sigaction_handler.sa_handler = handler
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // no SA_RESTART: a blocked call fails with EINTR
            var previous = sigaction()
            #expect(sigaction(SIGALRM, &action, &previous) == 0)
            var unblock = sigset_t(), previousMask = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGALRM)
            pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)

            var event = sigevent()  // the timer's signal goes to this thread alone (the runner has others)
            event.sigev_notify = Int32(SIGEV_THREAD_ID)
            event.sigev_signo = SIGALRM
            event._sigev_un._tid = threadID()
            var timer: timer_t? = nil
            #expect(timer_create(CLOCK_MONOTONIC, &event, &timer) == 0)
            // The first tick comes 200 ms after the check below, the next two 20 ms apart: for the
            // call to begin after the third, this thread would have to wait 240 ms for a core
            // between the check and the call (a busy machine's scheduler delays it a few ms).
            let tick = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            var period = itimerspec(it_interval: tick, it_value: timespec(tv_sec: 0, tv_nsec: 200_000_000))
            #expect(timer_settime(timer, 0, &period, nil) == 0)

            let blocked = ticks < 3
            let result = call()

            timer_delete(timer)
            var ignore = sigaction()  // discards a tick still pending
            ignore.__sigaction_handler.sa_handler = SIG_IGN
            sigaction(SIGALRM, &ignore, nil)
            sigaction(SIGALRM, &previous, nil)
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            last = result
            if blocked { return result }
        }
        Issue.record("the call never began before the third tick")
        return last!
    }

    /// `read` of a blocking pipe with no data yet: the third tick writes the byte.
    func readInterrupted(_ read: (_ fd: Int32, _ into: UnsafeMutableRawBufferPointer) -> Result<Int, Errno>)
        -> (result: Result<Int, Errno>, byte: UInt8) {
        var fds: [Int32] = [-1, -1]
        var byte: UInt8 = 0
        let result = interrupted(by: thirdTickWritesAByte, setUp: {
            #expect(Glibc.pipe(&fds) == 0)
            pipeWriteEnd = fds[1]
            byte = 0
        }, release: { _ in Glibc.close(fds[0]); Glibc.close(fds[1]) }) {
            withUnsafeMutableBytes(of: &byte) { read(fds[0], $0) }
        }
        Glibc.close(fds[0]); Glibc.close(fds[1])
        return (result, byte)
    }

    /// `open` for reading of a new FIFO, which waits for a writer: the third tick opens the other end.
    func openInterrupted(_ open: (String) -> Result<Int32, FileErrno>) -> Result<Int32, FileErrno> {
        let dir = TempDir()
        let path = dir.path + "/fifo"
        func cleanUp(_ result: Result<Int32, FileErrno>) {
            if case .success(let fd) = result, fd >= 0 { Glibc.close(fd) }
            if fifoOtherEnd >= 0 { Glibc.close(fifoOtherEnd) }
            fifoOtherEnd = -1
            free(fifoPath)
            fifoPath = nil
            unlink(path)
        }
        let result = interrupted(by: thirdTickOpensTheFIFO, setUp: {
            #expect(mkfifo(path, 0o600) == 0)
            fifoPath = strdup(path)
        }, release: cleanUp) { open(path) }
        cleanUp(result.map { _ in -1 })  // the caller closes the descriptor it got
        withExtendedLifetime(dir) {}
        return result
    }

    @Test func anInterruptedReadIsMadeAgainAndReturnsTheData() {
        var calls = 0
        let (result, byte) = readInterrupted { fd, buffer in
            calls = 0
            return retryingOnInterrupt { calls += 1; return Glibc.read(fd, buffer.baseAddress, buffer.count) }
        }
        #expect(result == .success(1))
        #expect(byte == 0x2A)
        #expect(calls >= 2)  // at least one EINTR was seen and retried
    }

    @Test func fileDescriptorReadRetriesThroughTheLayer() {
        let (result, byte) = readInterrupted { fd, buffer in
            do throws(Errno) { return .success(try FileDescriptor(rawValue: fd).read(into: buffer)) } catch { return .failure(error) }
        }
        #expect(result == .success(1))
        #expect(byte == 0x2A)
    }

    @Test func withoutTheLayerTheSameReadIsInterrupted() {
        let (result, _) = readInterrupted { fd, buffer in
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            return n < 0 ? .failure(.current) : .success(n)
        }
        #expect(result == .failure(.interrupted))
    }

    @Test func theStoresInterruptedOpenIsMadeAgain() {
        let result = openInterrupted { path in
            do throws(FileErrno) { return .success(try SystemFileOps().open(path, flags: O_RDONLY, mode: 0)) } catch { return .failure(error) }
        }
        #expect(result.map { _ in 0 } == .success(0))  // opened, not failed (with EINTR)
        if case .success(let fd) = result { Glibc.close(fd) }
    }

    @Test func withoutTheLayerTheSameOpenIsInterrupted() {
        let result = openInterrupted { path in
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            return fd < 0 ? .failure(FileErrno(errno)) : .success(fd)
        }
        #expect(result == .failure(FileErrno(EINTR)))
        if case .success(let fd) = result { Glibc.close(fd) }
    }
}
