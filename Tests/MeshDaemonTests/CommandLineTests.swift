import MeshCompanion
import Glibc
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink
import MeshOps

/// The built `pocketmesh` binary, run as a user would, for what only shows at the command line.
@Suite struct CommandLineTests {
    static var binary: String? { HookTests.wrapper?.first }

    /// Runs the binary (stdin from /dev/null); returns its exit code and its stdout and stderr together.
    func run(_ args: [String], environment: [String] = Spawn.currentEnvironment(), timeoutS: Double = 30) throws -> (Int32, String) {
        let bin = try #require(Self.binary)
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        let outPath = dir + "/out"
        let fd = open(outPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(fd) }
        let pid = try Spawn.start(argv: [bin] + args, environment: environment, stdinFD: -1, outputFD: fd)
        var status: Int32 = 0
        var waited = 0.0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if waited > timeoutS { kill(-pid, SIGKILL); waitpid(pid, &status, 0); Issue.record("timed out: \(args)"); break }
            usleep(20_000)
            waited += 0.02
        }
        return (Spawn.exitCode(status: status), readFile(outPath))
    }

    @Test func aDamagedRecordIsReportedWhenHistoryAndChatsSkipIt() throws {
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        let key = [UInt8](repeating: 0x5A, count: 32)
        let peer = KeyPrefix(sixOf: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6])
        let s = try RadioStore(publicKey: key, stateDir: dir)
        for i in 0..<5 {
            try s.append(StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: UInt32(1_700_000_000 + i),
                                       receivedAt: 1_700_000_100, text: Array("message number \(i)".utf8)))
        }
        s.close()
        // Damage the middle of the third record; the index (checkpointed on close) still lists it.
        let log = dir + "/" + HexCodec.encode(Array(key)) + "/messages.log"
        var st = stat()
        #expect(stat(log, &st) == 0)
        let record = (Int(st.st_size) - 64) / 5
        let fd = open(log, O_RDWR)
        var b: UInt8 = 0
        _ = pread(fd, &b, 1, off_t(64 + 2 * record + record / 2))
        b ^= 0x40
        _ = pwrite(fd, &b, 1, off_t(64 + 2 * record + record / 2))
        close(fd)
        let (code, out) = try run(["history", "a1a2a3", "--state-dir", dir])
        #expect(code == 0)
        #expect(out.contains("message number 1") && !out.contains("message number 2") && out.contains("message number 4"))
        #expect(out.contains("pocketmesh: warning: messages.log at offset \(64 + 2 * record): message 3 is damaged; skipped"))
    }

    @Test func hookOutputIsBoundedInTheLog() throws {
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        try StateFile.write(dir + "/7", "todo\n")
        let (code, out) = try run(["daemon", "hook-exec", "--output-limit", "100", dir + "/7", "--",
                                   "/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo; exit 0"])
        #expect(code == 0)
        #expect(out.count < 300)
        #expect(out.hasPrefix("hook: message 7: output: " + String(repeating: "x", count: 100)
                              + "\nhook: message 7: 199901 more byte(s) of output not logged (at most 100 per run)"))
        #expect(readFile(dir + "/7") == "done\n")
    }

    /// A hook's output goes to the daemon's log line by line, each line marked as the hook's and
    /// escaped like mesh text: it cannot forge the daemon's own lines or drive the terminal.
    @Test func hookOutputCannotForgeLogLines() throws {
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        try StateFile.write(dir + "/7", "todo\n")
        let (code, out) = try run(["daemon", "hook-exec", dir + "/7", "--", "/bin/sh", "-c",
                                   "printf 'ok\\033[2J\\rdaemon: signal 15: stopping\\nradio: clock set\\n\\033]0;title\\007'"])
        #expect(code == 0)
        let lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines == ["hook: message 7: output: ok\\x1b[2J\\x0ddaemon: signal 15: stopping",
                          "hook: message 7: output: radio: clock set",
                          "hook: message 7: output: \\x1b]0;title\\x07", ""], "\(lines)")
        #expect(!out.utf8.contains(0x1B) && !out.utf8.contains(0x0D))
    }

    @Test func aMissingOrNonExecutableHookIsRefusedAtStart() throws {
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        try StateFile.write(dir + "/not-exec.sh", "#!/bin/sh\n", mode: 0o600)
        let env = Spawn.currentEnvironment().filter { !$0.hasPrefix("XDG_RUNTIME_DIR=") } + ["XDG_RUNTIME_DIR=\(dir)"]
        for (hook, why) in [(dir + "/missing.sh", "does not exist"), (dir + "/not-exec.sh", "is not executable"),
                            ("no-such-program-anywhere", "is not an executable found in PATH"), (dir, "is not a regular file")] {
            let (code, out) = try run(["daemon", "-t", "127.0.0.1:1", "--state-dir", dir + "/state", "--on-message", hook], environment: env)
            #expect(code == 2, "\(hook)")
            #expect(out.contains("--on-message: cannot run the hook: ") && out.contains(why), "\(out)")
        }
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.stateDir = dir + "/state"
        c.hook = [dir + "/not-exec.sh"]
        #expect(throws: DaemonError.self) { _ = try Daemon(config: c) }
    }

    @Test func aDaemonNameMustStayInTheRuntimeDirectory() throws {
        let dir = temporaryDirectory("pm-cli")
        defer { removeTree(dir) }
        let env = Spawn.currentEnvironment().filter { !$0.hasPrefix("XDG_RUNTIME_DIR=") } + ["XDG_RUNTIME_DIR=\(dir)/run"]
        let (code, out) = try run(["daemon", "-t", "127.0.0.1:1", "--state-dir", dir + "/state", "--name", "../../x"], environment: env)
        #expect(code == 2)
        #expect(out.contains("--name must be"))
        #expect(access(dir + "/x.sock", F_OK) != 0)
    }

    @Test func simRefusesTcpPortsPast65535() throws {
        let (code, out) = try run(["sim", "--nodes", "2", "--tcp-base", "65535", "--for", "0.1"])
        #expect(code == 2)
        #expect(out.contains("past 65535"))
        let (zero, _) = try run(["sim", "--nodes", "1", "--tcp-base", "0", "--for", "0.1"])
        #expect(zero == 2)
    }
}
