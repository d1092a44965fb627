import Glibc
import MeshLink
import MeshDaemonClient
import MeshOps

/// Starts programs with `posix_spawnp`: an argv array, never a shell string.
public enum Spawn {
    /// Starts `argv` with `environment`, stdin from `stdinFD` (or /dev/null when -1), stdout and
    /// stderr to this process's stderr. The child gets its own process group (so a timeout can
    /// signal the group), an empty signal mask and default dispositions.
    /// With `stdoutFD` ≥ 0, stdout goes there instead; with `outputFD` ≥ 0, stdout and stderr both.
    public static func start(argv: [String], environment: [String], stdinFD: Int32, stdoutFD: Int32 = -1, outputFD: Int32 = -1,
                             newProcessGroup: Bool = true) throws(SystemError) -> pid_t {
        guard let program = argv.first, !program.isEmpty else { throw SystemError("posix_spawn", "(empty command)", errno: EINVAL) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if stdinFD >= 0 {
            posix_spawn_file_actions_adddup2(&actions, stdinFD, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if outputFD >= 0 {
            posix_spawn_file_actions_adddup2(&actions, outputFD, 1)
            posix_spawn_file_actions_adddup2(&actions, outputFD, 2)
        } else {
            posix_spawn_file_actions_adddup2(&actions, stdoutFD >= 0 ? stdoutFD : 2, 1)
        }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (newProcessGroup ? POSIX_SPAWN_SETPGROUP : 0)))

        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup($0) } + [nil]
        defer {
            for p in cArgs { free(p) }
            for p in cEnv { free(p) }
        }
        var pid: pid_t = 0
        let rc = cArgs.withUnsafeBufferPointer { a in
            cEnv.withUnsafeBufferPointer { e in
                posix_spawnp(&pid, program, &actions, &attr,
                             UnsafePointer(a.baseAddress!).withMemoryRebound(to: UnsafeMutablePointer<CChar>?.self, capacity: a.count) { UnsafeMutablePointer(mutating: $0) },
                             UnsafePointer(e.baseAddress!).withMemoryRebound(to: UnsafeMutablePointer<CChar>?.self, capacity: e.count) { UnsafeMutablePointer(mutating: $0) })
            }
        }
        if rc != 0 { throw SystemError("posix_spawn", program, errno: rc) }
        return pid
    }

    /// Why `program` cannot be started, as the end of a sentence, or nil if it can: a path must be
    /// an executable regular file; a bare name must be one in `path` (a `PATH` value). The file
    /// found must be this user's or root's and closed to others' writes (`FileTrust`): the daemon
    /// runs it as its own user for every message.
    public static func problem(running program: String, path: String?) -> String? {
        func check(_ p: String) -> String? {
            var st = stat()
            guard stat(p, &st) == 0 else { return errno == ENOENT ? "\(p) does not exist" : "\(SystemError("stat", p))" }
            guard st.st_mode & S_IFMT == S_IFREG else { return "\(p) is not a regular file" }
            guard access(p, X_OK) == 0 else { return "\(p) is not executable (chmod +x it)" }
            return nil
        }
        if program.isEmpty { return "the command is empty" }
        if program.contains("/") { return check(program) ?? FileTrust.problem(program) }
        for dir in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false) {
            let d = dir.isEmpty ? "." : String(dir)
            // The first executable of that name is the one posix_spawnp runs.
            if check(d + "/" + program) == nil { return FileTrust.problem(d + "/" + program) }
        }
        return "\(program) is not an executable found in PATH"
    }

    /// The children of this process and their process groups, from /proc (a process re-parented
    /// to a subreaper is known only there).
    public static func children() -> [(pid: pid_t, pgrp: pid_t)] {
        guard let d = opendir("/proc") else { return [] }
        defer { closedir(d) }
        let me = getpid()
        var out: [(pid: pid_t, pgrp: pid_t)] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), let stat = StateFile.readString("/proc/\(name)/stat"),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After "(comm) ": state, ppid, pgrp.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, Int32(fields[1]) == me, let pgrp = Int32(fields[2]) else { continue }
            out.append((pid, pgrp))
        }
        return out
    }

    /// Decodes a `waitpid` status: the exit code, or 128 + the signal number.
    public static func exitCode(status: Int32) -> Int32 {
        let sig = status & 0x7f
        return sig == 0 ? (status >> 8) & 0xff : 128 + sig
    }

    /// Describes a `waitpid` status for a log line.
    public static func describe(status: Int32) -> String {
        let sig = status & 0x7f
        return sig == 0 ? "exit status \((status >> 8) & 0xff)" : "killed by signal \(sig)"
    }

    /// This process's environment as "KEY=value" strings.
    public static func currentEnvironment() -> [String] {
        var out: [String] = []
        var p = environ
        while let entry = p.pointee {
            out.append(String(cString: entry))
            p += 1
        }
        return out
    }

    /// Splits a command line into words the way a shell would for plain words and quotes
    /// (single quotes literal, double quotes with \" and \\ escapes, backslash outside quotes),
    /// with no expansion of any kind. Returns nil for an unterminated quote.
    public static func splitCommand(_ text: String) -> [String]? {
        var words: [String] = []
        var cur: [Character] = []
        var inWord = false
        var quote: Character? = nil
        var it = Array(text)
        var i = 0
        while i < it.count {
            let c = it[i]
            if let q = quote {
                if c == q { quote = nil }
                else if q == "\"" && c == "\\" && i + 1 < it.count && (it[i + 1] == "\"" || it[i + 1] == "\\") {
                    i += 1
                    cur.append(it[i])
                } else { cur.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c
                inWord = true
            } else if c == "\\" && i + 1 < it.count {
                i += 1
                cur.append(it[i])
                inWord = true
            } else if c == " " || c == "\t" || c == "\n" {
                if inWord { words.append(String(cur)); cur = []; inWord = false }
            } else {
                cur.append(c)
                inWord = true
            }
            i += 1
        }
        if quote != nil { return nil }
        if inWord { words.append(String(cur)) }
        it.removeAll()
        return words
    }
}
