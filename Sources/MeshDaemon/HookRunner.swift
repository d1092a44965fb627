import Glibc
import CMeshLink
import MeshNet
import MeshDaemonClient
import MeshLink
import MeshOps

/// A stored message handed to the hook: its store id (ascending) and its JSON form.
public struct HookMessage: Sendable {
    public var id: UInt64
    public var json: JSON
    public init(id: UInt64, json: JSON) {
        self.id = id
        self.json = json
    }

    /// The message's top-level fields as POCKETMESH_<FIELD> variables (plus POCKETMESH_ID).
    /// Values are passed as data in the environment, never through a shell.
    public var environment: [String] {
        var out = ["POCKETMESH_ID=\(id)"]
        guard case .object(let pairs) = json else { return out }
        for (k, v) in pairs where k != "id" {
            let value: String
            switch v {
            case .string(let s): value = s
            case .integer(let i): value = String(i)
            case .double, .bool: value = v.text
            default: continue
            }
            let name = "POCKETMESH_" + String(k.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
            out.append(name + "=" + String(value.filter { $0 != "\0" }))
        }
        return out
    }
}

/// Runs `--on-message CMD` once per received message, exactly once across restarts.
///
/// Delivery state lives in `dir`:
/// - `cursor`: every message id ≤ cursor has been delivered (written durably after it advances);
/// - `<id>`: one marker per message past the cursor that is running or done. The run goes through a
///   small wrapper process (`pocketmesh daemon hook-exec MARKER -- CMD...`) that holds an exclusive
///   lock on the marker while the hook runs and writes "done" into it (fsync) when the hook exits 0.
///   The wrapper outlives a killed daemon, so a daemon restarted mid-run waits on the lock instead of
///   running the hook a second time, and a hook that finished is never repeated.
/// Without a wrapper (tests) the daemon writes the marker itself after reaping, which leaves a small
/// window where a killed daemon would run the hook again.
///
/// Bounded: at most `concurrency` hooks run at once, at most `window` messages past the cursor are
/// considered (a hook that keeps failing holds the cursor and is retried forever with backoff
/// `retryBaseMS` doubling to `retryMaxMS`, each failure logged); a run over `timeoutMS` gets SIGTERM
/// to its process group, then SIGKILL after `killGraceMS`, and a retry starts only after its whole
/// process group is gone (the wrapper, `HookExec`, holds the marker's lock until then, and ends the
/// run by itself when the daemon is gone).
public final class HookRunner {
    public struct Config: Sendable {
        public var argv: [String]
        public var dir: String
        public var wrapper: [String]?
        public var concurrency = 2
        public var window = 64
        public var timeoutMS: UInt64 = 30_000
        public var killGraceMS: UInt64 = 3_000
        /// Bytes of a run's output (stdout and stderr) copied to the log; the rest is counted.
        public var outputLimit = 4096
        public var retryBaseMS: UInt64 = 1_000
        public var retryMaxMS: UInt64 = 300_000
        /// Runs of one message before it is given up (listed by `failedMessages`; see `retry`, `drop`).
        public var maxAttempts = 10
        /// The daemon's own runner: this process becomes a child subreaper (PR_SET_CHILD_SUBREAPER,
        /// unprivileged, under a service manager too), so a process a hook left behind outside
        /// its process group and session (`setsid`) comes back to it when its run's wrapper is
        /// gone, instead of to PID 1; it is then ended (SIGKILL) and reaped. Off for runners in a
        /// process that has other children (tests): it reaps every child (`waitpid(-1)`).
        public var adoptOrphans = false
        public init(argv: [String], dir: String, wrapper: [String]?) {
            self.argv = argv
            self.dir = dir
            self.wrapper = wrapper
        }
    }

    struct Run {
        var id: UInt64
        var started: UInt64
        var termSent: UInt64?
        var killed = false
    }

    public let config: Config
    /// Returns stored messages with id > `after`, ascending, at most `limit`.
    public var fetch: (_ after: UInt64, _ limit: Int) -> [HookMessage] = { _, _ in [] }
    public var log: (String) -> Void = { _ in }
    public var environment: [String] = Spawn.currentEnvironment()

    public private(set) var cursor: UInt64 = 0
    /// What the delivery cursor file held when the runner started.
    public enum CursorState: Sendable { case saved, missing, damaged }
    public private(set) var cursorState = CursorState.missing
    /// The highest message id this runner has a record of (its cursor, or a marker past it): the
    /// store must never hand out an id at or below it again.
    public var highestKnownId: UInt64 { max(cursor, markerHigh) }
    private var markerHigh: UInt64 = 0
    private var done: Set<UInt64> = []
    private var running: [pid_t: Run] = [:]
    private var failures: [UInt64: (attempts: Int, due: UInt64)] = [:]
    /// When windows past the first may be read again (see `tick`).
    private var deepScanAt: UInt64 = 0
    public private(set) var delivered = 0
    public var runningCount: Int { running.count }
    /// Messages given up after `maxAttempts` failed runs (persisted in `failed`), or queued again
    /// by `retry`. The cursor moves past them, so the other messages keep flowing.
    public private(set) var failed: [UInt64: FailedHook] = [:]

    public struct FailedHook: Equatable, Sendable {
        public var attempts: Int
        public var reason: String
        /// True after `retry`: runs again (up to `maxAttempts` more times).
        public var retrying = false
    }

    /// Processes left behind by hooks that this runner ended (`adoptOrphans`).
    public private(set) var orphansEnded = 0

    public init(config: Config) throws(SystemError) {
        self.config = config
        // A hook that exits without reading its stdin must not kill the daemon with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        if config.adoptOrphans && cml_set_child_subreaper() != 0 {
            throw SystemError("prctl", "PR_SET_CHILD_SUBREAPER")
        }
        try UnixSocket.makeDirectory(config.dir)
        if let text = StateFile.readString(config.dir + "/cursor") {
            if let v = UInt64(text.filter { !$0.isWhitespace }) {
                cursor = v
                cursorState = .saved
            } else {
                cursorState = .damaged
            }
        }
        for line in (StateFile.readString(config.dir + "/failed") ?? "").split(separator: "\n") {
            let f = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard f.count >= 3, let id = UInt64(f[0]), let attempts = Int(f[2]) else { continue }
            failed[id] = FailedHook(attempts: attempts, reason: f.count > 3 ? f[3] : "", retrying: f[1] == "retrying")
        }
        // Markers left by an earlier run: done ones count, stale ones go (a message being retried
        // after the cursor passed it keeps its own).
        if let d = opendir(config.dir) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard let id = UInt64(name) else { continue }
                markerHigh = max(markerHigh, id)
                if id <= cursor {
                    if failed[id]?.retrying != true { unlink(config.dir + "/" + name) }
                } else if let body = StateFile.readString(config.dir + "/" + name), body.hasPrefix("done") {
                    done.insert(id)
                }
            }
            closedir(d)
        }
    }

    func markerPath(_ id: UInt64) -> String { config.dir + "/\(id)" }

    /// Sets the delivery cursor (a runner without one: see `cursorState`) and writes it: messages
    /// up to `id` are not handed to the hook.
    public func startAfter(_ id: UInt64) throws(SystemError) {
        try StateFile.write(config.dir + "/cursor", "\(id)\n")
        cursor = id
        cursorState = .saved
        for d in done where d <= id { done.remove(d); unlink(markerPath(d)) }
    }

    /// Starts due hooks, enforces timeouts; returns the next time it needs to be called.
    public func tick(now: UInt64) -> UInt64? {
        reap(now: now)
        var next: UInt64? = nil
        func soon(_ t: UInt64) { next = min(next ?? t, t) }

        for (pid, run) in running {
            if let term = run.termSent {
                if now >= term + config.killGraceMS {
                    if !run.killed {
                        log("hook: message \(run.id): still running \(config.killGraceMS) ms after SIGTERM; sending SIGKILL to its process group")
                        kill(-pid, SIGKILL)
                        running[pid]?.killed = true
                    }
                } else { soon(term + config.killGraceMS) }
            } else if now >= run.started + config.timeoutMS {
                log("hook: message \(run.id): still running after \(config.timeoutMS) ms; sending SIGTERM to its process group")
                kill(-pid, SIGTERM)
                running[pid]?.termSent = now
                soon(now + config.killGraceMS)
            } else {
                soon(run.started + config.timeoutMS)
            }
        }

        // Messages queued again by `retry` (they may lie behind the cursor).
        let busy = Set(running.values.map(\.id))
        for (id, f) in failed.sorted(by: { $0.key < $1.key }) where f.retrying && !busy.contains(id) {
            if let due = failures[id]?.due, due > now { soon(due); continue }
            if running.count >= config.concurrency { break }
            if let m = fetch(id &- 1, 1).first, m.id == id { start(m, now: now) } else { dropFailed(id) }
        }
        // New messages: the window after the cursor, and further windows while everything in one is
        // delivered, given up or waiting to be tried again (one stuck message does not hold the rest).
        // Windows past the first are read at most once a second while they yield nothing to start.
        var after = cursor
        let startedBefore = running.count
        for page in 0..<16 {
            if page == 1 && now < deepScanAt { soon(deepScanAt); break }
            let candidates = fetch(after, config.window)
            if page == 0 { advanceCursor(candidates) }
            for m in candidates where m.id > cursor && !done.contains(m.id) && !busy.contains(m.id) && failed[m.id] == nil {
                if let f = failures[m.id], f.due > now { soon(f.due); continue }
                if running.count >= config.concurrency { break }
                start(m, now: now)
            }
            guard candidates.count == config.window, running.count < config.concurrency, let last = candidates.last else { break }
            after = last.id
            if page == 15 || page >= 1 && running.count == startedBefore { deepScanAt = now + 1_000 }
        }
        return next
    }

    /// Collects finished hooks (call on SIGCHLD; `tick` also calls it). With `adoptOrphans`, every
    /// child is reaped, and what hooks left behind is ended.
    public func reap(now: UInt64) {
        var exited: [(pid: pid_t, status: Int32, r: pid_t)] = []
        var adopted = false
        if config.adoptOrphans {
            while true {
                var status: Int32 = 0
                let r = waitpid(-1, &status, WNOHANG)
                if r <= 0 { break }
                if running[r] != nil { exited.append((r, status, r)) } else { adopted = true }
            }
        } else {
            for pid in running.keys {
                var status: Int32 = 0
                let r = waitpid(pid, &status, WNOHANG)
                if r != 0 { exited.append((pid, status, r)) }
            }
        }
        for e in exited { finished(e.pid, status: e.status, r: e.r, now: now) }
        if config.adoptOrphans && (adopted || !exited.isEmpty) { endOrphans() }
    }

    /// SIGKILL to each child of this process that is not a running hook's wrapper: a process a
    /// finished run left outside its group (its wrapper, a subreaper itself, is gone, so it came
    /// back here), and its process group. Each one's end brings SIGCHLD, and its own children come
    /// back here in turn, so the sweep repeats until nothing is left.
    func endOrphans() {
        let mine = getpgrp()
        var ended = 0
        for c in Spawn.children() where running[c.pid] == nil {
            if c.pgrp != mine && c.pgrp > 1 { kill(-c.pgrp, SIGKILL) }
            kill(c.pid, SIGKILL)
            ended += 1
        }
        guard ended > 0 else { return }
        orphansEnded += ended
        log("hook: ended \(ended) process(es) a hook left running outside its process group (\(orphansEnded) so far)")
    }

    private func finished(_ pid: pid_t, status st: Int32, r: pid_t, now: UInt64) {
        var status = st
        guard let run = running[pid] else { return }
        running[pid] = nil
        deepScanAt = 0
        // The run is over only when its whole process group is: whatever it left there goes now,
        // before a retry could start the hook again next to it.
        if kill(-pid, 0) == 0 { kill(-pid, SIGKILL) }
        if r < 0 { status = 0x7f00 }  // lost child: treat as failure
        let unrecorded = r > 0 && config.wrapper != nil && Spawn.exitCode(status: status) == HookExec.unrecordedExit
        if r > 0 && (status == 0 || unrecorded) {
            // Delivered. If the wrapper could not write that down, remember it here (and try to
            // write it again): a successful hook is not run again.
            if config.wrapper == nil || unrecorded { markDone(run.id) }
            failures[run.id] = nil
            delivered += 1
            if failed[run.id] != nil {
                log("hook: message \(run.id): delivered on retry")
                if run.id <= cursor { unlink(markerPath(run.id)) } else { done.insert(run.id) }
                dropFailed(run.id)
            } else {
                done.insert(run.id)
            }
        } else if r > 0 && config.wrapper != nil && Spawn.exitCode(status: status) == HookExec.busyExit {
            // A run from an earlier daemon still holds the marker (its wrapper ends it within its timeout).
            if failures[run.id] == nil { log("hook: message \(run.id): a run started by an earlier daemon is still going; waiting for it") }
            failures[run.id] = (failures[run.id]?.attempts ?? 0, now + config.retryBaseMS)
        } else {
            let attempts = (failures[run.id]?.attempts ?? 0) + 1
            let reason = Spawn.describe(status: status)
            if attempts >= config.maxAttempts && giveUp(run.id, attempts: attempts, reason: reason) {
                failures[run.id] = nil
                log("hook: message \(run.id): attempt \(attempts) failed (\(reason)); given up after \(attempts) attempts "
                    + "(`pocketmesh hooks failed` lists it, `pocketmesh hooks retry \(run.id)` runs it again)")
                return
            }
            var delay = config.retryBaseMS
            for _ in 1..<min(attempts, 30) where delay < config.retryMaxMS { delay *= 2 }
            delay = min(delay, config.retryMaxMS)
            failures[run.id] = (attempts, now + delay)
            log("hook: message \(run.id): attempt \(attempts) failed (\(reason)); retrying in \(delay / 1000) s")
        }
    }

    // MARK: - given-up messages

    /// Records `id` as given up; false (keep retrying) if that cannot be saved.
    private func giveUp(_ id: UInt64, attempts: Int, reason: String) -> Bool {
        let before = failed[id]
        failed[id] = FailedHook(attempts: attempts, reason: reason)
        if saveFailed() { return true }
        failed[id] = before
        return false
    }

    private func dropFailed(_ id: UInt64) {
        failed[id] = nil
        _ = saveFailed()
    }

    private func saveFailed() -> Bool {
        let text = failed.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value.retrying ? "retrying" : "failed") \($0.value.attempts) \($0.value.reason)\n" }.joined()
        do { try StateFile.write(config.dir + "/failed", text) } catch {
            log("hook: could not save the list of given-up messages: \(error)")
            return false
        }
        return true
    }

    /// Runs a given-up message again (up to `maxAttempts` more times). False if it is not given up.
    public func retry(_ id: UInt64) -> Bool {
        guard var f = failed[id] else { return false }
        f.retrying = true
        failed[id] = f
        failures[id] = nil
        _ = saveFailed()
        log("hook: message \(id): retrying on request")
        return true
    }

    /// Forgets a given-up message (it is not run again). False if it is not given up.
    public func drop(_ id: UInt64) -> Bool {
        guard failed[id] != nil, !running.values.contains(where: { $0.id == id }) else { return false }
        if id <= cursor {
            unlink(markerPath(id))
        } else {
            if access(markerPath(id), F_OK) == 0 { markDone(id) }  // so a restart does not run it either
            done.insert(id)
        }
        dropFailed(id)
        log("hook: message \(id): dropped on request")
        return true
    }

    /// Stops waiting for running hooks (on daemon shutdown they keep running; a wrapper records the result).
    public func detachAll() { running.removeAll() }

    /// Creates the marker of `id` holding "todo\n" (unless it already holds something). Returns the
    /// problem, if any.
    private func prepareMarker(_ id: UInt64) -> SystemError? {
        let path = markerPath(id)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { return SystemError("open", path) }
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) == 0 && st.st_size >= 5 { return nil }
        let text = Array("todo\n".utf8)
        if text.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) != text.count || fsync(fd) != 0 {
            let e = SystemError("write", path)
            unlink(path)
            return e
        }
        StateFile.syncDirectory(of: path)
        return nil
    }

    /// Writes "done" over the marker's placeholder, in place.
    private func markDone(_ id: UInt64) {
        let path = markerPath(id)
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        let text = Array("done\n".utf8)
        if fd < 0 || text.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) != text.count || fsync(fd) != 0 {
            log("hook: message \(id): could not record delivery: \(SystemError("write", path)); it is not run again while this daemon runs")
        }
        if fd >= 0 { close(fd) }
    }

    private func advanceCursor(_ candidates: [HookMessage]) {
        var newCursor = cursor
        for m in candidates {
            if m.id <= newCursor { continue }
            guard done.contains(m.id) || failed[m.id] != nil else { break }
            newCursor = m.id
        }
        guard newCursor != cursor else { return }
        do {
            try StateFile.write(config.dir + "/cursor", "\(newCursor)\n")
        } catch {
            log("hook: could not save the delivery cursor: \(error)")
            return
        }
        for id in done where id <= newCursor {
            done.remove(id)
            unlink(markerPath(id))
        }
        cursor = newCursor
    }

    private func start(_ m: HookMessage, now: UInt64) {
        guard let pair = UnixSocket.makePipe(nonBlocking: false) else {
            log("hook: message \(m.id): pipe: \(SystemError("pipe"))")
            return
        }
        let fds = [pair.read, pair.write]
        var body: [UInt8] = []
        m.json.write(into: &body)
        body.append(0x0A)
        let argv = config.wrapper.map {
            $0 + ["--timeout-ms", "\(config.timeoutMS)", "--grace-ms", "\(config.killGraceMS)", "--output-limit", "\(config.outputLimit)",
                  markerPath(m.id), "--"] + config.argv
        } ?? config.argv
        // The daemon creates the marker; the wrapper never does. A wrapper that finds no marker
        // knows its message was delivered and cleaned up past the cursor (by a later daemon).
        // It is created holding "todo", as long as "done": recording a delivery then overwrites
        // bytes the file already has, which works on a full disk. If even that cannot be written,
        // the hook does not run (it could not be recorded): it is tried again later.
        if let problem = prepareMarker(m.id) {
            close(fds[0])
            close(fds[1])
            failures[m.id] = (failures[m.id]?.attempts ?? 0, now + max(config.retryBaseMS, 5_000))
            log("hook: message \(m.id): not started: cannot prepare its delivery marker: \(problem); trying again in 5 s")
            return
        }
        var env = environment.filter { !$0.hasPrefix("POCKETMESH_") }
        env += m.environment
        do {
            let pid = try Spawn.start(argv: argv, environment: env, stdinFD: fds[0])
            close(fds[0])
            // The JSON is far below the pipe's capacity (64 KiB), so this write does not block;
            // a hook that does not read stdin is fine.
            _ = body.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
            close(fds[1])
            running[pid] = Run(id: m.id, started: now)
        } catch {
            close(fds[0])
            close(fds[1])
            let attempts = (failures[m.id]?.attempts ?? 0) + 1
            failures[m.id] = (attempts, now + config.retryBaseMS * UInt64(min(attempts, 60)))
            log("hook: message \(m.id): cannot start \(config.argv[0]): \(error)")
        }
    }
}
