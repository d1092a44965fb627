import MeshLink
import Glibc
import MeshNet
import MeshOps

/// Where daemons put their sockets, and the small registry entry (`<name>.json` next to
/// `<name>.sock`) that says which link each one owns, so the CLI can find the daemon that holds
/// a serial port or TCP radio and go through it instead of opening the link itself.
public enum DaemonRegistry {
    /// `$XDG_RUNTIME_DIR/pocketmesh`; without it (cron, su, system units) the login session's
    /// `/run/user/$UID/pocketmesh` when that folder is this user's and private, else
    /// `/tmp/pocketmesh-$UID`. Only a path: `RuntimeDirectory` decides whether it can be trusted.
    /// An `XDG_RUNTIME_DIR` that belongs to someone else (left set by `su`) is passed over.
    public static func runtimeDirectory(environment: [String: String]) -> String {
        var st = stat()
        if let xdg = environment["XDG_RUNTIME_DIR"], xdg.hasPrefix("/"), access(xdg, W_OK | X_OK) == 0,
           stat(xdg, &st) == 0, st.st_uid == geteuid() {
            return xdg + "/pocketmesh"
        }
        let session = "/run/user/\(getuid())"
        if RuntimeDirectory.inspect(session) == .safe, access(session, W_OK | X_OK) == 0 { return session + "/pocketmesh" }
        return "/tmp/pocketmesh-\(getuid())"
    }

    /// The system service's folder (systemd `RuntimeDirectory=pocketmesh`).
    public static let systemDirectory = "/run/pocketmesh"

    /// Prints a warning about a refused folder (the command line's default).
    public static func warnOnStderr(_ sentence: String) {
        fputs("pocketmesh: warning: \(sentence)\n", stderr)
    }

    /// The canonical form of a link spec: `serial:/dev/ttyUSB0` (symlinks such as
    /// /dev/serial/by-id/… resolved), `tcp:host:port`, `ble:AA:BB:…`.
    public static func canonicalLink(_ spec: String) -> String {
        if spec.hasPrefix("serial:") {
            let path = String(spec.dropFirst(7))
            if let real = realpath(path, nil) {
                defer { free(real) }
                return "serial:" + String(cString: real)
            }
            return spec
        }
        if spec.hasPrefix("tcp:") {
            var rest = String(spec.dropFirst(4)).lowercased()
            // (Character and suffix checks only: Foundation's String.contains(String) would pull in ICU.)
            let colons = rest.filter { $0 == ":" }.count
            let bracketedWithPort = rest.hasPrefix("[") && rest.split(separator: "]", maxSplits: 1).last?.first == ":"
            if colons == 0 || (rest.hasPrefix("[") && !bracketedWithPort) { rest += ":5000" }
            if rest.hasPrefix("localhost:") { rest = "127.0.0.1:" + rest.dropFirst(10) }
            return "tcp:" + rest
        }
        if spec.hasPrefix("ble:") { return "ble:" + spec.dropFirst(4).uppercased() }
        return spec
    }

    /// A file-name-safe name for a link (used for the socket until the radio's key is known).
    public static func slug(forLink spec: String) -> String {
        var s = canonicalLink(spec)
        if s.hasPrefix("serial:") { s = String(s.dropFirst(7).split(separator: "/").last ?? "serial") }
        return String(s.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "-" })
    }

    public struct Entry: Equatable, Sendable {
        public var pid: Int32
        public var link: String
        public var socket: String
        public var radio: String?
        public var name: String?

        public init(pid: Int32, link: String, socket: String, radio: String? = nil, name: String? = nil) {
            self.pid = pid
            self.link = link
            self.socket = socket
            self.radio = radio
            self.name = name
        }

        public var json: JSON {
            .obj(("pid", .int(Int64(pid))), ("link", .string(link)), ("socket", .string(socket)),
                 ("radio", radio.map(JSON.string)), ("name", name.map(JSON.string)))
        }

        public init?(json: JSON) {
            guard let pid = json["pid"]?.int, let link = json["link"]?.string, let socket = json["socket"]?.string else { return nil }
            self.pid = Int32(truncatingIfNeeded: pid)
            self.link = link
            self.socket = socket
            radio = json["radio"]?.string
            name = json["name"]?.string
        }

        /// The daemon process exists and its socket accepts connections.
        public var isLive: Bool { liveDaemonUID != nil }

        /// The uid of the process listening on the socket, if the daemon is live.
        var liveDaemonUID: uid_t? {
            guard kill(pid, 0) == 0 || errno == EPERM else { return nil }
            guard let fd = try? UnixSocket.connect(path: socket) else { return nil }
            defer { close(fd) }
            return RuntimeDirectory.peerUID(fd)
        }
    }

    /// Writes the entry beside its socket; `group`: a daemon shared with a group (`--api-group`)
    /// lets its members read the entry (0640), so their commands find it.
    public static func write(_ entry: Entry, group: gid_t? = nil) throws(SystemError) {
        try StateFile.write(registryPath(forSocket: entry.socket), entry.json.text + "\n", mode: group == nil ? 0o600 : 0o640, group: group)
    }

    public static func remove(socket: String) {
        unlink(registryPath(forSocket: socket))
    }

    static func registryPath(forSocket socket: String) -> String {
        (socket.hasSuffix(".sock") ? String(socket.dropLast(5)) : socket) + ".json"
    }

    /// Every registry entry in `directory` (live or not).
    public static func entries(in directory: String) -> [Entry] {
        guard let d = opendir(directory) else { return [] }
        defer { closedir(d) }
        var out: [Entry] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name.hasSuffix(".json"), let text = StateFile.readString(directory + "/" + name),
                  let json = try? JSONParser.parse(text), let entry = Entry(json: json) else { continue }
            out.append(entry)
        }
        return out
    }

    /// Where to look for daemons: this user's runtime folder, then the system service's
    /// (/run/pocketmesh). A folder that is not safe to trust is left out, with a warning.
    public static func searchDirectories(environment: [String: String], warn: (String) -> Void = warnOnStderr) -> [String] {
        var out: [String] = []
        let mine = runtimeDirectory(environment: environment)
        let system = mine == systemDirectory
        switch RuntimeDirectory.inspect(mine, owner: system ? nil : geteuid()) {
        case .safe: out.append(mine)
        case .missing: break
        case .unsafe(let why): warn(RuntimeDirectory.refusal(mine, why) + " Daemons registered there are ignored.")
        }
        if !system && RuntimeDirectory.inspect(systemDirectory, owner: nil) == .safe { out.append(systemDirectory) }
        return out
    }

    /// Live entries of `dir` that can be trusted: the socket is in `dir` itself and the process
    /// listening on it runs as this user, as root, or as the owner of `dir`.
    static func trusted(in dir: String, _ match: (Entry) -> Bool) -> Entry? {
        var st = stat()
        let dirOwner: uid_t? = lstat(dir, &st) == 0 ? st.st_uid : nil
        for e in entries(in: dir) where match(e) {
            guard let slash = e.socket.lastIndex(of: "/"), e.socket[..<slash] == dir[...],
                  let uid = e.liveDaemonUID, uid == geteuid() || uid == 0 || uid == dirOwner else { continue }
            return e
        }
        return nil
    }

    /// Every live daemon that can be trusted, in search order.
    public static func live(environment: [String: String], warn: (String) -> Void = warnOnStderr) -> [Entry] {
        var out: [Entry] = []
        for dir in searchDirectories(environment: environment, warn: warn) {
            var seen: Set<String> = []
            while let e = trusted(in: dir, { !seen.contains($0.socket) }) {
                seen.insert(e.socket)
                out.append(e)
            }
        }
        return out
    }

    /// The live daemon that owns `link` (any spec form), if any.
    public static func find(link: String, environment: [String: String], warn: (String) -> Void = warnOnStderr) -> Entry? {
        if case .found(let e) = lookup(link: link, environment: environment, warn: warn) { return e }
        return nil
    }

    /// What a command finds about the daemon that owns its radio.
    public enum Lookup: Equatable, Sendable {
        /// No daemon owns it: the command may open the radio itself.
        case none
        /// This daemon owns it, and its socket lets this user in.
        case found(Entry)
        /// A daemon owns it (or may: its folder cannot be read) that this user cannot reach: the
        /// sentence to say. The command must not open the radio under it (a TCP radio takes one
        /// client: opening it would evict the daemon's link).
        case unreachable(String)
    }

    /// The daemon that owns `link`: found in this user's runtime folder or the system service's
    /// (/run/pocketmesh). A daemon registered there whose socket refuses this user (permission
    /// denied), or a system folder this user may not read while the link is a TCP or BLE radio
    /// (one the service may hold: its entry cannot be seen), is `unreachable`.
    public static func lookup(link: String, environment: [String: String], warn: (String) -> Void = warnOnStderr) -> Lookup {
        let want = canonicalLink(link)
        var blocked: String? = nil
        for dir in searchDirectories(environment: environment, warn: warn) {
            if let e = trusted(in: dir, { canonicalLink($0.link) == want }) { return .found(e) }
            if blocked != nil { continue }
            if let why = unreadable(dir) {
                // A serial port needs no guess: the daemon's lock on it refuses a second opener.
                if !want.hasPrefix("serial:") {
                    blocked = "a pocketmesh daemon runs as another user in \(dir), which you may not read (\(why)), so it may own \(link): "
                        + "ask to be added to its group (`ls -ld \(dir)` names it; the service is started with --api-group), "
                        + "or set POCKETMESH_NO_DAEMON=1 if that daemon does not own this radio."
                }
                continue
            }
            for e in entries(in: dir) where canonicalLink(e.link) == want && (kill(e.pid, 0) == 0 || errno == EPERM) {
                if let why = socketRefusal(e.socket) {
                    blocked = "the pocketmesh daemon (pid \(e.pid)) that owns \(link) does not let you in: its socket \(e.socket) refuses you (\(why)); "
                        + "ask to be added to its group (the daemon shares its socket with --api-group GROUP)."
                    break
                }
            }
            // An entry this user may not read (a daemon not shared with this user's group): it
            // may be the one that owns a TCP or BLE radio.
            if blocked == nil, !want.hasPrefix("serial:"), let name = unreadableEntries(in: dir).first {
                blocked = "a pocketmesh daemon registered as \(dir)/\(name) runs as another user and does not let you read its entry, so it may own \(link): "
                    + "ask to be added to its group (the daemon shares its socket with --api-group GROUP), "
                    + "or set POCKETMESH_NO_DAEMON=1 if that daemon does not own this radio."
            }
        }
        return blocked.map(Lookup.unreachable) ?? .none
    }

    /// The registry entries (`NAME.json`) in `dir` that this user may not read.
    static func unreadableEntries(in directory: String) -> [String] {
        guard let d = opendir(directory) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name.hasSuffix(".json") else { continue }
            let path = directory + "/" + name
            var st = stat()
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, access(path, R_OK) != 0, errno == EACCES { out.append(name) }
        }
        return out.sorted()
    }

    /// Why `dir` cannot be listed (permission denied), or nil when it can.
    static func unreadable(_ dir: String) -> String? {
        guard let d = opendir(dir) else {
            return errno == EACCES || errno == EPERM ? String(cString: strerror(errno)).lowercased() : nil
        }
        closedir(d)
        return nil
    }

    /// Why connecting to `socket` is refused by its permissions, or nil (it connects, or fails
    /// for another reason: nobody listens).
    static func socketRefusal(_ socket: String) -> String? {
        do throws(SystemError) {
            let fd = try UnixSocket.connect(path: socket)
            close(fd)
            return nil
        } catch {
            return error.errno == EACCES || error.errno == EPERM ? String(cString: strerror(error.errno)).lowercased() : nil
        }
    }

    /// The search folders this user may not read (a system service's, run by another user).
    public static func unreadableDirectories(environment: [String: String]) -> [String] {
        searchDirectories(environment: environment, warn: { _ in }).filter { unreadable($0) != nil }
    }

    /// The live daemon whose radio key starts with `radio` (hex) or whose name is `radio`.
    public static func find(radio: String, environment: [String: String], warn: (String) -> Void = warnOnStderr) -> Entry? {
        let q = radio.lowercased()
        for dir in searchDirectories(environment: environment, warn: warn) {
            if let e = trusted(in: dir, { $0.radio?.hasPrefix(q) == true || $0.name == radio }) { return e }
        }
        return nil
    }
}

/// A blocking client of a daemon's local API, for the command line: one request at a time,
/// each with a deadline; events only after `subscribe`.
public final class DaemonClient {
    public let socketPath: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID: Int64 = 1
    /// Events that arrived while waiting for a response (after `subscribe`).
    public private(set) var pendingEvents: [JSON] = []

    public init(socketPath: String) throws(DaemonError) {
        self.socketPath = socketPath
        do {
            fd = try UnixSocket.connect(path: socketPath)
        } catch {
            throw DaemonError(.link, "cannot reach the daemon at \(socketPath): \(error); is `pocketmesh daemon` running?")
        }
    }

    deinit { close(fd) }

    /// Sends one request and waits for its response. A failed response throws its error
    /// (whose `exitCode` is the CLI's exit code).
    @discardableResult
    public func call(_ op: DaemonOp, _ fields: [(String, JSON)] = [], timeoutMS: UInt64 = 30_000) throws(DaemonError) -> DaemonResponse {
        let id = nextID
        nextID += 1
        let request = DaemonRequest(id: id, op: op, args: .object(fields))
        try send(request.line + "\n")
        let deadline = monotonicMilliseconds() + timeoutMS
        while true {
            guard let value = try readJSON(deadline: deadline) else {
                throw DaemonError(.timeout, "the daemon did not answer \(op.name) within \(timeoutMS / 1000) s.")
            }
            if let response = DaemonResponse(json: value) {
                if response.id != id && response.id != 0 { continue }
                if case .failure(let e) = response.result { throw e }
                return response
            }
            pendingEvents.append(value)
        }
    }

    /// Subscribes to events and calls `onEvent` for each until it returns false, the daemon
    /// goes away (throws `.link`) or `timeoutMS` passes without an event (returns).
    public func subscribe(timeoutMS: UInt64? = nil, _ onEvent: (JSON) -> Bool) throws(DaemonError) {
        try call(.subscribe)
        for e in pendingEvents { if !onEvent(e) { pendingEvents.removeAll(); return } }
        pendingEvents.removeAll()
        while true {
            let deadline = timeoutMS.map { monotonicMilliseconds() + $0 }
            guard let value = try readJSON(deadline: deadline) else { return }
            if DaemonResponse(json: value) != nil { continue }
            if !onEvent(value) { return }
        }
    }

    private func send(_ text: String) throws(DaemonError) {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let r = bytes.withUnsafeBytes { raw in retryingOnInterrupt { Glibc.send(fd, raw.baseAddress! + off, bytes.count - off, SocketFlags.noSignal) } }
            switch r {
            case .success(let n): off += n
            case .failure(let e): throw DaemonError(.link, "lost the connection to the daemon at \(socketPath): \(SystemError("send", errno: e.rawValue))")
            }
        }
    }

    /// One JSON line, or nil when the deadline passed.
    private func readJSON(deadline: UInt64?) throws(DaemonError) -> JSON? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                if line.isEmpty { continue }
                do {
                    return try line.withUnsafeBytes { raw throws(JSONError) in try JSONParser.parse(raw) }
                } catch {
                    throw DaemonError(.internal, "the daemon sent a line that is not JSON: \(error)")
                }
            }
            var timeout: Int32 = -1
            if let deadline {
                let now = monotonicMilliseconds()
                if now >= deadline { return nil }
                timeout = Int32(clamping: deadline - now)
            }
            // Not ready (the time passed, or a signal ended the wait early): the deadline is looked at again.
            guard (try? FileDescriptor(rawValue: fd).poll(Int16(POLLIN), timeout: timeout)) == true else { continue }
            var chunk = [UInt8](repeating: 0, count: 8192)
            let r = chunk.withUnsafeMutableBytes { raw in retryingOnInterrupt { read(fd, raw.baseAddress, raw.count) } }
            guard case .success(let n) = r, n > 0 else { throw DaemonError(.link, "the daemon at \(socketPath) closed the connection.") }
            buffer.append(contentsOf: chunk[0..<n])
            if buffer.count > 4 << 20 { throw DaemonError(.internal, "the daemon sent an over-long line.") }
        }
    }
}
