import Glibc
import MeshLink
import MeshNet
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshOps

@Suite struct HookTests {
    func messages(_ n: Int) -> [HookMessage] {
        (1...n).map { i in
            HookMessage(id: UInt64(i * 10), json: .obj(("id", .int(Int64(i * 10))), ("kind", "direct"), ("from", "alice"),
                                                     ("text", .string("hi $(touch /tmp/pwned) ; `x` \(i)")), ("timestamp", .int(1_700_000_000))))
        }
    }

    /// Ticks the runner with real child processes until `done()`; virtual time advances 10 ms a round.
    /// Bounded by `rounds` when given, and always by 60 s of real time (child processes start slowly
    /// on a loaded machine, so a round count alone is not a fair limit).
    /// Ticks `r` every millisecond of real time until `done`, moving its clock `step` virtual ms per
    /// tick (10 by default: virtual time runs ahead of the real processes; 1 keeps pace with them).
    func drive(_ r: HookRunner, now: inout UInt64, rounds: Int? = nil, step: UInt64 = 10, until done: () -> Bool) {
        func seconds() -> Double {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
        let deadline = seconds() + 60
        var round = 0
        while !done(), round < (rounds ?? Int.max), seconds() < deadline {
            _ = r.tick(now: now)
            usleep(1000)
            now += step
            round += 1
        }
        _ = r.tick(now: now)
    }

    /// A hook config whose runs never time out in virtual time (the tests run real processes).
    func patientConfig(_ argv: [String], dir: String) -> HookRunner.Config {
        var config = HookRunner.Config(argv: argv, dir: dir, wrapper: nil)
        config.timeoutMS = 24 * 3_600_000
        return config
    }

    @Test func runsEachMessageOnceAcrossRestarts() throws {
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let out = dir + "/seen"
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\nread -r json\nprintf '%s|%s|%s\\n' \"$POCKETMESH_ID\" \"$POCKETMESH_TEXT\" \"$json\" >> \(out)\n", mode: 0o700)
        var store = messages(5)
        var now: UInt64 = 0
        do {
            let r = try HookRunner(config: patientConfig([script], dir: dir + "/hooks"))
            r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
            drive(r, now: &now) { r.delivered == 5 && r.cursor == 50 }
            #expect(r.cursor == 50)
        }
        let lines = readFile(out).split(separator: "\n")
        #expect(lines.count == 5)
        #expect(lines.sorted().first?.hasPrefix("10|hi $(touch /tmp/pwned) ; `x` 1|{\"id\":10") == true)
        // Restart: nothing old runs again; new messages do.
        store += [HookMessage(id: 60, json: .obj(("text", "six")))]
        let r2 = try HookRunner(config: patientConfig([script], dir: dir + "/hooks"))
        #expect(r2.cursor == 50)
        r2.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        drive(r2, now: &now) { r2.cursor == 60 }
        #expect(readFile(out).split(separator: "\n").count == 6)
    }

    @Test func failuresAreRetriedWithBackoffAndCursorWaits() throws {
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let out = dir + "/seen"
        let flag = dir + "/fail-once"
        try StateFile.write(flag, "x")
        let script = dir + "/hook.sh"
        // Message 20 fails the first time (while the flag file exists), then succeeds.
        try StateFile.write(script, """
            #!/bin/sh
            if [ "$POCKETMESH_ID" = 20 ] && [ -e \(flag) ]; then rm \(flag); exit 3; fi
            echo "$POCKETMESH_ID" >> \(out)

            """, mode: 0o700)
        let store = messages(3)
        var logs: [String] = []
        var config = patientConfig([script], dir: dir + "/hooks")
        config.retryBaseMS = 500
        let r = try HookRunner(config: config)
        r.log = { logs.append($0) }
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now) { r.cursor == 30 }
        #expect(r.cursor == 30)
        #expect(logs.contains { $0.contains("message 20: attempt 1 failed (exit status 3)") })
        #expect(readFile(out).split(separator: "\n").sorted() == ["10", "20", "30"])
    }

    @Test func timeoutKillsTheHook() throws {
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        var config = HookRunner.Config(argv: ["/bin/sleep", "30"], dir: dir + "/hooks", wrapper: nil)
        config.timeoutMS = 200
        config.killGraceMS = 100
        config.retryBaseMS = 1_000_000
        let r = try HookRunner(config: config)
        var logs: [String] = []
        r.log = { logs.append($0) }
        let store = messages(1)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now, rounds: 500) { logs.contains { $0.contains("failed") } }
        #expect(logs.contains { $0.contains("SIGTERM") })
        #expect(logs.contains { $0.contains("killed by signal 15") })
        #expect(r.runningCount == 0)
        #expect(r.cursor == 0)
    }

    /// The real wrapper: the pocketmesh binary built next to the test bundle.
    static var wrapper: [String]? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        let exe = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let bin = exe[..<exe.lastIndex(of: "/")!] + "/pocketmesh"
        return access(String(bin), X_OK) == 0 ? [String(bin), "daemon", "hook-exec"] : nil
    }

    /// A hook that ignores SIGTERM is ended with its whole process group before it is tried again:
    /// never two runs at once, no orphans left behind.
    @Test func aHookIgnoringSigtermLeavesNoOrphansAndNeverOverlaps() throws {
        let wrapper = try #require(Self.wrapper)
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let pids = dir + "/pids"
        let script = dir + "/hook.sh"
        // The shell and its sleep both ignore SIGTERM (an ignored signal stays ignored across exec).
        try StateFile.write(script, "#!/bin/sh\ntrap '' TERM\necho $$ >> \(pids)\nsleep 30\n", mode: 0o700)
        var config = HookRunner.Config(argv: [script], dir: dir + "/hooks", wrapper: wrapper)
        // The wrapper ends each run itself after 1.5 s of real time. The runner's clock keeps pace
        // with real time here (step 1), so its own SIGTERM never beats a wrapper that is still
        // starting under load (which would end that attempt before the hook ran); retries never
        // give up, however slow the machine.
        config.timeoutMS = 1_500
        config.killGraceMS = 300
        config.retryBaseMS = 100
        config.retryMaxMS = 100
        config.maxAttempts = 1_000
        let r = try HookRunner(config: config)
        let store = messages(1)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        var alivePeak = 0
        func alive() -> [Int32] {  // running (zombies waiting for init to reap them do not count)
            readFile(pids).split(separator: "\n").compactMap { Int32($0) }.filter { pid in
                let stat = readFile("/proc/\(pid)/stat")
                guard let close = stat.lastIndex(of: ")") else { return false }
                return stat[stat.index(close, offsetBy: 2)] != "Z"
            }
        }
        defer { for p in readFile(pids).split(separator: "\n").compactMap({ Int32($0) }) { kill(p, SIGKILL) } }
        drive(r, now: &now, step: 1) {
            alivePeak = max(alivePeak, alive().count)
            return readFile(pids).split(separator: "\n").count >= 3
        }
        #expect(readFile(pids).split(separator: "\n").count >= 3)
        #expect(alivePeak <= 1)
        #expect(alive().count <= 1)
        #expect(r.cursor == 0)
    }

    /// A hook that starts something in a session of its own, which ignores SIGTERM, and fails: that
    /// process is ended too before the message is tried again.
    @Test func whatAHookStartsInItsOwnSessionIsEndedBeforeARetry() throws {
        let wrapper = try #require(Self.wrapper)
        guard access("/usr/bin/setsid", X_OK) == 0 else { return }
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let pids = dir + "/pids"
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\n/usr/bin/setsid /bin/sh -c 'trap \"\" TERM; echo $$ >> \(pids); sleep 30' &\nsleep 0.2\nexit 1\n", mode: 0o700)
        var config = HookRunner.Config(argv: [script], dir: dir + "/hooks", wrapper: wrapper)
        config.timeoutMS = 24 * 3_600_000
        config.killGraceMS = 3_000  // virtual ms; the wrapper's own grace is 3 s of real time
        config.retryBaseMS = 10
        let r = try HookRunner(config: config)
        let store = messages(1)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        func alive() -> Int {
            readFile(pids).split(separator: "\n").compactMap { Int32($0) }.filter { pid in
                let stat = readFile("/proc/\(pid)/stat")
                guard let close = stat.lastIndex(of: ")") else { return false }
                return stat[stat.index(close, offsetBy: 2)] != "Z"
            }.count
        }
        defer { for p in readFile(pids).split(separator: "\n").compactMap({ Int32($0) }) { kill(p, SIGKILL) } }
        var peak = 0
        drive(r, now: &now) {
            peak = max(peak, alive())
            return readFile(pids).split(separator: "\n").count >= 2
        }
        #expect(readFile(pids).split(separator: "\n").count >= 2)
        #expect(peak <= 1)
    }

    /// A hook that ignores SIGTERM but then succeeds is delivered once, not run again beside itself.
    @Test func aHookThatOutlivesSigtermAndSucceedsRunsOnce() throws {
        let wrapper = try #require(Self.wrapper)
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let out = dir + "/runs"
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\ntrap '' TERM\necho start >> \(out)\nsleep 1.5\necho end >> \(out)\n", mode: 0o700)
        var config = HookRunner.Config(argv: [script], dir: dir + "/hooks", wrapper: wrapper)
        config.timeoutMS = 3_000        // virtual ms (about a tenth of it in real time): SIGTERM while it sleeps
        config.killGraceMS = 600_000    // virtual ms: far longer than the hook's 1.5 s of real time
        config.retryBaseMS = 10
        let r = try HookRunner(config: config)
        var logs: [String] = []
        r.log = { logs.append($0) }
        let store = messages(1)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now) { r.cursor == 10 }
        #expect(r.cursor == 10)
        #expect(logs.contains { $0.contains("SIGTERM") })
        #expect(readFile(out) == "start\nend\n")
    }

    /// A daemon dies while its hook hangs (ignoring SIGTERM). The next daemon's runs of that message
    /// find the marker busy and wait; the orphaned run's wrapper ends it at its timeout, and the
    /// message is then delivered, once.
    @Test func aHookLeftHangingByAnEarlierDaemonDoesNotBlockItsMessage() throws {
        let wrapper = try #require(Self.wrapper)
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let flag = dir + "/hang-once"
        try StateFile.write(flag, "x")
        let out = dir + "/delivered"
        let script = dir + "/hook.sh"
        try StateFile.write(script, """
            #!/bin/sh
            if [ -e \(flag) ]; then rm \(flag); trap '' TERM; echo $$ > \(dir)/hung; sleep 60; fi
            echo "$POCKETMESH_ID" >> \(out)

            """, mode: 0o700)
        let store = messages(2)
        var now: UInt64 = 0
        do {  // the first daemon: the hook for message 10 hangs; then the daemon is gone (SIGKILL)
            var config = HookRunner.Config(argv: [script], dir: dir + "/hooks", wrapper: wrapper)
            config.timeoutMS = 1_500  // also the wrapper's own limit, in real milliseconds
            config.killGraceMS = 300
            config.concurrency = 1
            let r = try HookRunner(config: config)
            r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
            drive(r, now: &now) { access(dir + "/hung", F_OK) == 0 }
            r.detachAll()
        }
        defer { if let p = Int32(readFile(dir + "/hung").filter(\.isNumber)) { kill(p, SIGKILL) } }
        var config = HookRunner.Config(argv: [script], dir: dir + "/hooks", wrapper: wrapper)
        config.timeoutMS = 24 * 3_600_000
        config.retryBaseMS = 50
        let r = try HookRunner(config: config)
        var logs: [String] = []
        r.log = { logs.append($0) }
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        drive(r, now: &now) { r.cursor == 20 }
        #expect(r.cursor == 20)
        #expect(readFile(out).split(separator: "\n").sorted() == ["10", "20"])
        #expect(logs.contains { $0.contains("message 10: a run started by an earlier daemon is still going") })
    }

    /// The hook succeeds but leaves the disk full: its delivery is still recorded (the marker was
    /// made with room for it), so it is not run again. Needs root (a small tmpfs); skipped otherwise.
    @Test func aSuccessfulHookIsNotRunAgainWhenTheDiskIsFull() throws {
        let wrapper = try #require(Self.wrapper)
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let hooks = dir + "/hooks"
        mkdir(hooks, 0o700)
        guard mount("tmpfs", hooks, "tmpfs", 0, "size=64k,mode=0700") == 0 else { return }
        defer { umount2(hooks, Int32(MNT_DETACH)) }
        let out = dir + "/runs"
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\necho run >> \(out)\ndd if=/dev/zero of=\(hooks)/fill bs=4096 count=64 2>/dev/null\nexit 0\n", mode: 0o700)
        var config = HookRunner.Config(argv: [script], dir: hooks, wrapper: wrapper)
        config.timeoutMS = 24 * 3_600_000
        config.retryBaseMS = 20
        let r = try HookRunner(config: config)
        let store = messages(1)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now) { r.delivered == 1 || readFile(out).split(separator: "\n").count > 1 }
        drive(r, now: &now, rounds: 300) { false }  // time for a (wrong) second run
        #expect(readFile(out) == "run\n")
        #expect(r.delivered == 1)
        // A restarted daemon (the disk still full, so the cursor could not move) finds it done too.
        r.detachAll()
        let r2 = try HookRunner(config: config)
        r2.fetch = r.fetch
        drive(r2, now: &now, rounds: 300) { false }
        #expect(readFile(out) == "run\n")
    }

    /// A message whose hook always fails is given up after `maxAttempts` runs, and meanwhile the
    /// messages after it (more than a window of them) keep flowing. It can then be retried or dropped.
    @Test func aMessageWhoseHookAlwaysFailsIsGivenUpWithoutStoppingTheOthers() throws {
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let out = dir + "/seen"
        let flag = dir + "/fail"
        try StateFile.write(flag, "x")
        let script = dir + "/hook.sh"
        try StateFile.write(script, """
            #!/bin/sh
            if { [ "$POCKETMESH_ID" = 20 ] || [ "$POCKETMESH_ID" = 30 ]; } && [ -e \(flag) ]; then exit 3; fi
            echo "$POCKETMESH_ID" >> \(out)

            """, mode: 0o700)
        let store = messages(100)
        var config = patientConfig([script], dir: dir + "/hooks")
        config.maxAttempts = 3
        config.retryBaseMS = 10
        config.retryMaxMS = 20
        config.concurrency = 4
        var logs: [String] = []
        var r = try HookRunner(config: config)
        r.log = { logs.append($0) }
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now) { r.cursor == 1000 }
        #expect(r.cursor == 1000)
        #expect(readFile(out).split(separator: "\n").count == 98)
        #expect(r.failed[20]?.attempts == 3 && r.failed[20]?.reason == "exit status 3" && r.failed[30] != nil)
        #expect(logs.contains { $0.contains("message 20: attempt 3 failed (exit status 3); given up after 3 attempts") })
        // The list survives a restart; retry runs it again (now it succeeds), drop forgets one.
        r = try HookRunner(config: config)
        r.log = { logs.append($0) }
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        #expect(Set(r.failed.keys) == [20, 30])
        #expect(!r.retry(40) && !r.drop(40))
        unlink(flag)
        #expect(r.retry(20))
        #expect(r.drop(30))
        drive(r, now: &now) { r.failed.isEmpty }
        drive(r, now: &now, rounds: 100) { false }
        #expect(r.failed.isEmpty)
        let seen = readFile(out).split(separator: "\n")
        #expect(seen.count == 99 && seen.contains("20") && !seen.contains("30"))
        #expect(try HookRunner(config: config).failed.isEmpty)
    }

    /// The hooks' ops are answered by the store part from its own hooks and store, with no daemon:
    /// the given-up list, a retry, a drop, an unknown message, and a daemon with no hook.
    @Test func theStorePartAnswersTheHooksOpsFromItsOwnState() throws {
        let part = StorePart()
        func values(_ op: DaemonOp, _ fields: [String: Value] = [:]) throws -> OperationValues {
            try OperationValues(daemonAPI: op.name, fields: fields)
        }
        #expect(throws: DaemonError.self) { try part.answerHooks(.hooksFailed, values(.hooksFailed)) }
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        let script = dir + "/hook.sh"
        try StateFile.write(script, "#!/bin/sh\nexit 3\n", mode: 0o700)
        var config = patientConfig([script], dir: dir + "/hooks")
        config.maxAttempts = 1
        let r = try HookRunner(config: config)
        let store = messages(2)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        drive(r, now: &now) { r.failed.count == 2 && r.runningCount == 0 }
        part.hooks = r
        let failed = try part.answerHooks(.hooksFailed, values(.hooksFailed))
        #expect(JSON.object(failed)["failed"]?.array?.compactMap { $0["id"]?.int } == [10, 20])
        #expect(JSON.object(failed)["failed"]?.array?.first?["attempts"]?.int == 1)
        let dropped = try part.answerHooks(.hooksDrop, values(.hooksDrop, ["message": .int(10)]))
        #expect(JSON.object(dropped).text == #"{"message":10,"dropped":true}"#)
        do {
            _ = try part.answerHooks(.hooksDrop, values(.hooksDrop, ["message": .int(10)]))
            Issue.record("a dropped message was dropped again")
        } catch let e as DaemonError { #expect(e.kind == .notFound) }
        let retrying = try part.answerHooks(.hooksRetry, values(.hooksRetry, ["message": .int(20)]))
        #expect(JSON.object(retrying).text == #"{"message":20,"retrying":true}"#)
        drive(r, now: &now) { r.failed[20]?.retrying == false && r.runningCount == 0 }
        #expect(r.failed[20]?.retrying == false && r.runningCount == 0)
    }

    @Test func concurrencyIsBounded() throws {
        let dir = temporaryDirectory("pm-hook")
        defer { removeTree(dir) }
        var config = patientConfig(["/bin/sleep", "0.2"], dir: dir + "/hooks")
        config.concurrency = 2
        let r = try HookRunner(config: config)
        let store = messages(6)
        r.fetch = { after, limit in Array(store.filter { $0.id > after }.prefix(limit)) }
        var now: UInt64 = 0
        var peak = 0
        for _ in 0..<30_000 where r.cursor < 60 {  // at most about 40 s of real time
            _ = r.tick(now: now)
            peak = max(peak, r.runningCount)
            usleep(1000)
            now += 10
        }
        #expect(r.cursor == 60)
        #expect(peak == 2)
    }
}

@Suite struct NotifyTests {
    @Test func sendsReadyStatusAndWatchdog() throws {
        let dir = temporaryDirectory("pm-notify")
        defer { removeTree(dir) }
        let path = dir + "/notify"
        let fd = socket(AF_UNIX, SocketType.datagram, 0)
        defer { close(fd) }
        var (addr, len) = UnixSocket.address(path)!
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        #expect(rc == 0)
        let n = SystemdNotify(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000"])
        #expect(n.watchdogIntervalMS == 2000)
        n.ready(status: "connected to tcp:127.0.0.1:5000")
        #expect(n.tick(now: 10) == 2010)
        func receive() -> String {
            var buf = [UInt8](repeating: 0, count: 512)
            let k = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            return k > 0 ? String(decoding: buf[0..<k], as: UTF8.self) : ""
        }
        #expect(receive() == "READY=1\nSTATUS=connected to tcp:127.0.0.1:5000")
        #expect(receive() == "WATCHDOG=1")
        #expect(n.tick(now: 20) == 2010)
        #expect(receive() == "")
        let off = SystemdNotify(environment: [:])
        #expect(!off.enabled && off.tick(now: 0) == nil)
        #expect(UnixSocket.address("@abstract")?.1 == socklen_t(2 + 9))
    }
}

@Suite struct BatteryEventTests {
    @Test func lowThenOkWithoutFlapping() {
        var low = false
        #expect(Daemon.batteryEvent(mv: 3700, limit: 3600, low: &low) == nil)
        #expect(Daemon.batteryEvent(mv: 3590, limit: 3600, low: &low) == "low_battery")
        #expect(Daemon.batteryEvent(mv: 3580, limit: 3600, low: &low) == "low_battery")  // each reading while low
        #expect(Daemon.batteryEvent(mv: 3620, limit: 3600, low: &low) == nil)     // above, but within 50 mV
        #expect(Daemon.batteryEvent(mv: 3650, limit: 3600, low: &low) == "battery_ok")
        #expect(Daemon.batteryEvent(mv: 3640, limit: 3600, low: &low) == nil)
    }
}
