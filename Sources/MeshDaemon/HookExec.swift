import MeshLink
import CMeshLink
import Glibc
import MeshSession
import MeshDaemonClient
import MeshOps

/// The wrapper a hook runs under (`pocketmesh daemon hook-exec [--timeout-ms N] [--grace-ms N]
/// [--output-limit N] MARKER -- CMD...`), started by the daemon as the leader of a new process group.
///
/// - Takes the marker's lock without waiting: a lock held by someone else means a run of the same
///   message (from an earlier daemon) is still going, and this one exits `busyExit` at once.
/// - Skips the run if the marker already says "done" or no longer exists.
/// - Runs CMD in its own process group (the wrapper's), and is a child subreaper, so it sees every
///   process the hook leaves behind. It holds the lock until all of them are gone, so a retry can never overlap an
///   earlier run: SIGTERM, SIGINT and SIGHUP do not end it, they end the hook.
/// - Ends the run itself after `timeoutMS` (it does not rely on the daemon, which may be gone):
///   SIGTERM to the group, then SIGKILL to the whole group, this wrapper included, `graceMS` later.
///   When the hook exits, whatever it left running in its group gets the same treatment.
/// - Records "done" durably when CMD exits 0, and copies at most `outputLimit` bytes of the hook's
///   output (stdout and stderr together) to its stderr, the daemon's log.
public enum HookExec {
    public struct Options: Sendable {
        public var timeoutMS: UInt64 = 30_000
        public var graceMS: UInt64 = 3_000
        public var outputLimit = 4096
        public init() {}
    }

    /// Another run of this message holds the marker: not an attempt, try again later.
    public static let busyExit: Int32 = 75
    /// The hook succeeded but "done" could not be written into the marker.
    public static let unrecordedExit: Int32 = 74

    public static func run(marker: String, argv: [String], options: Options = Options()) -> Int32 {
        let name = "hook: message \(marker.split(separator: "/").last.map(String.init) ?? marker)"
        func say(_ s: String) { fputs("\(name): \(s)\n", stderr) }
        // The daemon created the marker before starting this wrapper. If it is gone, a later daemon
        // saw the message delivered (by an earlier run) and moved its cursor past it: nothing to do.
        // The descriptor stays open (and locked) until this process ends.
        let fd = open(marker, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return 0 }
            say("\(SystemError("open", marker))")
            return 70
        }
        if case .failure(let e) = retryingOnInterrupt({ flock(fd, LOCK_EX | LOCK_NB) }) {
            if e == .wouldBlock { return busyExit }
            say("\(SystemError("flock", marker, errno: e.rawValue))")
            return 70
        }
        if isDone(fd) { return 0 }
        // The daemon starts this wrapper as a process group leader; run by hand it becomes one, so
        // that signalling "its group" never reaches the shell that started it.
        if getpgrp() != getpid() { setpgid(0, 0) }
        _ = cml_set_child_subreaper()
        signal(SIGPIPE, SIG_IGN)
        signal(SIGXFSZ, SIG_IGN)  // a file size limit must fail a write, not kill the wrapper
        // Signals come through the loop's self-pipe: they end the hook, not this wrapper.
        let loop = PollLoop()
        do throws(Errno) { try loop.handleSignals([SIGTERM, SIGINT, SIGHUP, SIGCHLD]) } catch {
            say("\(SystemError("pipe", "the signal pipe", errno: error.rawValue))")
            return 70
        }
        guard let out = UnixSocket.makePipe(nonBlocking: false) else { say("\(SystemError("pipe"))"); return 70 }
        UnixSocket.setNonBlocking(out.read)
        let pid: pid_t
        do {
            pid = try Spawn.start(argv: argv, environment: Spawn.currentEnvironment(), stdinFD: 0, outputFD: out.write, newProcessGroup: false)
        } catch {
            close(out.read)
            close(out.write)
            say("\(error)")
            return 127
        }
        close(out.write)
        var output = OutputCopy(limit: options.outputLimit, prefix: name + ": output: ")
        var outFD = out.read
        let started = monotonicMilliseconds()
        var termAt: UInt64? = nil
        var status: Int32? = nil
        var recorded = false
        func terminate(_ why: String?) {
            guard termAt == nil else { return }
            termAt = monotonicMilliseconds()
            if let why { say("\(why); sending SIGTERM to its process group, SIGKILL in \(options.graceMS) ms") }
            kill(0, SIGTERM)  // this wrapper's group: the hook and all it started there (we only take note)
        }
        loop.onSignal = { s in if s != SIGCHLD { terminate("signal \(s)") } }
        loop.register(fd: outFD, events: .readable) { _ in
            if outFD >= 0 && !output.pump(outFD) {
                loop.unregister(fd: outFD)
                close(outFD)
                outFD = -1
            }
        }
        while true {
            var noneLeft = false
            while true {
                var st: Int32 = 0
                let r = retryingOnInterrupt { waitpid(-1, &st, WNOHANG) }
                if case .success(let child) = r, child > 0 {
                    if child == pid {
                        status = st
                        if st == 0 { recorded = record(fd, marker, say) }
                    }
                    continue
                }
                if case .failure = r { noneLeft = true }  // ECHILD: the hook and everything it started are gone
                break
            }
            if noneLeft { break }
            if status != nil { terminate(nil) }  // the hook is done; what it left behind goes
            let now = monotonicMilliseconds()
            if termAt == nil && now >= started + options.timeoutMS { terminate("still running after \(options.timeoutMS) ms") }
            if let t = termAt, now >= t + options.graceMS {
                // Whatever ignored SIGTERM, also what left the group for a session of its own (as a
                // subreaper this wrapper is its parent now), and this wrapper with them: the lock
                // goes with the last of them.
                killChildren()
                kill(0, SIGKILL)
            }
            let deadline = termAt.map { $0 + options.graceMS } ?? started + options.timeoutMS
            // One turn: the hook's output, signals (SIGCHLD wakes it to reap), or the deadline.
            _ = loop.turn(until: deadline)
        }
        loop.unregister(fd: outFD)
        if outFD >= 0 { _ = output.pump(outFD); close(outFD) }
        output.finish()
        if output.dropped > 0 { say("\(output.dropped) more byte(s) of output not logged (at most \(options.outputLimit) per run)") }
        guard let status else { return 70 }
        if status == 0 { return recorded ? 0 : unrecordedExit }
        let code = Spawn.exitCode(status: status)
        return code == busyExit || code == unrecordedExit ? 1 : code
    }

    /// SIGKILL to every child of this process and to its process group when that is not ours
    /// (read from /proc: children re-parented to a subreaper are known only there).
    static func killChildren() {
        let group = getpgrp()
        for c in Spawn.children() {
            if c.pgrp != group && c.pgrp > 1 { kill(-c.pgrp, SIGKILL) }
            kill(c.pid, SIGKILL)
        }
    }

    static func isDone(_ fd: Int32) -> Bool {
        var head = [UInt8](repeating: 0, count: 4)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 4, 0) }
        return n == 4 && head == Array("done".utf8)
    }

    /// Writes "done" over the start of the marker, durably.
    static func record(_ fd: Int32, _ marker: String, _ say: (String) -> Void) -> Bool {
        let text = Array("done\n".utf8)
        let w = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        if w != text.count || fsync(fd) != 0 {
            say("could not record the delivery: \(SystemError("write", marker))")
            return false
        }
        StateFile.syncDirectory(of: marker)
        return true
    }

    /// Copies the first `limit` bytes read to stderr and counts the rest, line by line: each line
    /// gets `prefix` (the message it belongs to) and goes through the same escaping as mesh text
    /// (`terminalSafe`: control characters such as ESC and CR as visible escapes), so a hook's
    /// output cannot pass for the daemon's own log lines or rewrite them on a terminal.
    struct OutputCopy {
        let limit: Int
        let prefix: String
        var copied = 0
        var dropped = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        /// The part of a line read so far.
        var line: [UInt8] = []

        init(limit: Int, prefix: String = "") {
            self.limit = limit
            self.prefix = prefix
        }

        /// Reads what is available; false at end of file or on an error.
        mutating func pump(_ fd: Int32) -> Bool {
            while true {
                let r = buffer.withUnsafeMutableBytes { raw in retryingOnInterrupt { read(fd, raw.baseAddress, raw.count) } }
                guard case .success(let n) = r else { return r == .failure(.wouldBlock) }
                if n == 0 { return false }
                let keep = max(0, min(n, limit - copied))
                for b in buffer[0..<keep] {
                    if b == 0x0A { emit() } else { line.append(b) }
                }
                copied += keep
                dropped += n - keep
            }
        }

        /// Writes out a last line without its newline.
        mutating func finish() {
            if !line.isEmpty { emit() }
        }

        mutating func emit() {
            let text = prefix + terminalSafe(String(decoding: line, as: UTF8.self)) + "\n"
            line.removeAll(keepingCapacity: true)
            let bytes = Array(text.utf8)
            var off = 0
            while off < bytes.count {
                let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { write(2, raw.baseAddress! + off, bytes.count - off) } }
                guard case .success(let w) = r, w > 0 else { break }
                off += w
            }
        }
    }
}
