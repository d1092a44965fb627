import MeshCompanion
import Glibc
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink
import MeshOps

@Suite struct RegistryTests {
    @Test func linkSpecsAreCanonical() {
        #expect(DaemonRegistry.canonicalLink("tcp:Radio.local") == "tcp:radio.local:5000")
        #expect(DaemonRegistry.canonicalLink("tcp:localhost:5001") == "tcp:127.0.0.1:5001")
        #expect(DaemonRegistry.canonicalLink("serial:/nonexistent/tty") == "serial:/nonexistent/tty")
        #expect(DaemonRegistry.slug(forLink: "tcp:127.0.0.1:5000") == "tcp-127.0.0.1-5000")
        #expect(DaemonRegistry.slug(forLink: "serial:/dev/ttyUSB0") == "ttyUSB0")
        let fallback = DaemonRegistry.runtimeDirectory(environment: [:])
        #expect(fallback == "/tmp/pocketmesh-\(getuid())" || fallback == "/run/user/\(getuid())/pocketmesh")
    }

    @Test func findsOnlyLiveDaemons() throws {
        let dir = temporaryDirectory("pm-reg")
        defer { removeTree(dir) }
        try UnixSocket.makeDirectory(dir + "/pocketmesh")
        let server = try APIServer(path: dir + "/pocketmesh/a.sock")
        defer { server.shutdown() }
        let live = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:5000", socket: server.path, radio: "abcdef")
        try StateFile.write(dir + "/pocketmesh/a.json", live.json.text)
        let dead = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:6000", socket: dir + "/pocketmesh/gone.sock")
        try StateFile.write(dir + "/pocketmesh/b.json", dead.json.text)
        let env = ["XDG_RUNTIME_DIR": dir]
        #expect(DaemonRegistry.find(link: "tcp:localhost:5000", environment: env) == live)
        #expect(DaemonRegistry.find(link: "tcp:127.0.0.1:6000", environment: env) == nil)
        #expect(DaemonRegistry.find(radio: "abc", environment: env) == live)
    }

    /// A folder someone else could have written into is never trusted: the command line ignores
    /// the daemons registered there (with a warning) and the daemon refuses to put its socket there.
    @Test(arguments: ["open to others", "another owner", "symbolic link", "open parent"])
    func refusesARuntimeDirectoryOthersControl(how: String) throws {
        let xdg = temporaryDirectory("pm-run")
        defer { removeTree(xdg) }
        let dir = xdg + "/pocketmesh"
        let real = how == "symbolic link" ? temporaryDirectory("pm-run-target") : dir
        defer { if real != dir { removeTree(real) } }
        if real == dir { #expect(mkdir(dir, 0o700) == 0) }
        // What a stranger leaves there: a live socket and an entry claiming the radio.
        let server = try APIServer(path: real + "/radio.sock")
        defer { server.shutdown() }
        let entry = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:5000", socket: dir + "/radio.sock", radio: "abcdef")
        try StateFile.write(real + "/radio.json", entry.json.text)
        let env = ["XDG_RUNTIME_DIR": xdg]
        if real == dir {  // private: trusted
            #expect(DaemonRegistry.find(link: "tcp:127.0.0.1:5000", environment: env, warn: { _ in }) == entry)
        }
        switch how {
        case "open to others": chmod(dir, 0o777)
        case "another owner": #expect(chown(dir, 4242, 4242) == 0)
        case "symbolic link": #expect(symlink(real, dir) == 0)
        default: chmod(xdg, 0o777)
        }
        var warnings: [String] = []
        #expect(DaemonRegistry.find(link: "tcp:127.0.0.1:5000", environment: env, warn: { warnings.append($0) }) == nil)
        #expect(DaemonRegistry.find(radio: "abc", environment: env, warn: { warnings.append($0) }) == nil)
        #expect(warnings.count == 2 && warnings[0].hasPrefix("refusing the runtime directory \(dir): "))
        #expect(throws: DaemonError.self) { try RuntimeDirectory.prepare(dir) }
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.environment = env
        c.stateDir = xdg + "/state"
        do {
            _ = try Daemon(config: c)
            Issue.record("the daemon used \(dir) (\(how))")
        } catch let e as DaemonError {
            #expect(e.code == .usage && e.message.hasPrefix("refusing the runtime directory"))
        }
    }

    /// `su` leaves the other user's XDG_RUNTIME_DIR set: it is passed over, not used.
    @Test func anXdgRuntimeDirOfAnotherUserIsPassedOver() throws {
        let xdg = temporaryDirectory("pm-run")
        defer { removeTree(xdg) }
        #expect(DaemonRegistry.runtimeDirectory(environment: ["XDG_RUNTIME_DIR": xdg]) == xdg + "/pocketmesh")
        #expect(chown(xdg, 4242, 4242) == 0)
        let fallback = DaemonRegistry.runtimeDirectory(environment: ["XDG_RUNTIME_DIR": xdg])
        #expect(fallback == "/tmp/pocketmesh-\(getuid())" || fallback == "/run/user/\(getuid())/pocketmesh")
    }

    @Test func createsAPrivateRuntimeDirectoryAndTrustsOnlyItsOwnSockets() throws {
        let xdg = temporaryDirectory("pm-run")
        defer { removeTree(xdg) }
        let dir = xdg + "/sub/pocketmesh"
        let old = umask(0o022)
        defer { umask(old) }
        try RuntimeDirectory.prepare(dir)
        var st = stat()
        #expect(lstat(dir, &st) == 0 && st.st_mode & 0o7777 == 0o700 && st.st_uid == geteuid())
        try RuntimeDirectory.prepare(dir)  // again: fine
        // An entry in the private folder that points at a socket elsewhere is not followed.
        let elsewhere = temporaryDirectory("pm-run-else")
        defer { removeTree(elsewhere) }
        let server = try APIServer(path: elsewhere + "/x.sock")
        defer { server.shutdown() }
        let entry = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:5000", socket: server.path)
        try RuntimeDirectory.prepare(xdg + "/pocketmesh")
        try StateFile.write(xdg + "/pocketmesh/x.json", entry.json.text)
        #expect(DaemonRegistry.find(link: "tcp:127.0.0.1:5000", environment: ["XDG_RUNTIME_DIR": xdg], warn: { _ in }) == nil)
    }

    /// A state file has the mode it was written with, not that mode less the process's umask
    /// (which another thread may have narrowed for a while: a socket is bound under umask 0177, and
    /// a hook script written then lost its execute bits). The usual umask, 022, takes group and
    /// other write from 0666; so does any umask but 0.
    @Test func aStateFileHasExactlyItsMode() throws {
        let dir = temporaryDirectory("pm-mode")
        defer { removeTree(dir) }
        let current = umask(0o022)
        umask(current)  // read, and put back at once
        for mode: mode_t in [0o666, 0o700, 0o600, 0o644] {
            let path = dir + "/f\(mode)"
            try StateFile.write(path, "x\n", mode: mode)
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o7777 == mode, "mode \(String(mode, radix: 8)) under umask \(String(current, radix: 8))")
        }
    }

    @Test func daemonNamesCannotLeaveTheRuntimeDirectory() throws {
        for bad in ["../../x", "a/b", "..", ".hidden", "", String(repeating: "n", count: 65), "x\0y"] {
            #expect(!RuntimeDirectory.isValidName(bad), "\(bad)")
        }
        for good in ["radio", "Radio-1_b.2"] { #expect(RuntimeDirectory.isValidName(good)) }
        let xdg = temporaryDirectory("pm-run")
        defer { removeTree(xdg) }
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.environment = ["XDG_RUNTIME_DIR": xdg]
        c.stateDir = xdg + "/state"
        c.name = "../../x"
        #expect(throws: DaemonError(.usage, RuntimeDirectory.nameRule)) { _ = try Daemon(config: c) }
        #expect(access(xdg + "/../x.sock", F_OK) != 0)
    }

    /// The daemon's radio deframer: a stray header from the radio (no body) does not swallow the
    /// replies after it, whether they come at once or later.
    @Test func deframerSkipsAStrayHeaderFromTheRadio() {
        var d = StreamDeframer(marker: UInt8(ascii: ">"))
        var frames: [[UInt8]] = []
        ([0x3E, 0x40, 0x00] as [UInt8]).withUnsafeBytes { d.feed($0, now: 10) { frames.append(Array($0)) } }
        let replies = StreamDeframer.frame([0x0D, 1, 2, 3], marker: 0x3E) + StreamDeframer.frame([0x83], marker: 0x3E)
        replies.withUnsafeBytes { d.feed($0, now: 20) { frames.append(Array($0)) } }
        #expect(frames == [[0x0D, 1, 2, 3], [0x83]])
    }

    @Test func deframerSkipsNoiseAndOversizedFrames() {
        var d = StreamDeframer(marker: UInt8(ascii: ">"))
        var frames: [[UInt8]] = []
        let bytes: [UInt8] = [0x00, 0x41] + StreamDeframer.frame([0x05, 1, 2], marker: 0x3E)
            + [0x3E, 0xFF, 0x00] + [UInt8](repeating: 7, count: 255)  // 255 > 176: dropped
            + StreamDeframer.frame([0x0A], marker: 0x3E)
        // Fed one byte at a time, as a slow serial port delivers it.
        for b in bytes { [b].withUnsafeBytes { d.feed($0) { frames.append(Array($0)) } } }
        #expect(frames == [[0x05, 1, 2], [0x0A]])
        // 2 noise bytes, then the rejected frame: its 3 header bytes and 255 payload bytes.
        #expect(d.skippedBytes == 2 + 3 + 255)
    }
}
