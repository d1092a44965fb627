import Glibc
import MeshCompanion
import MeshLink
import MeshMQTT
import MeshSession
import MeshStore

/// `--mqtt URL` and what goes with it.
public struct MQTTSettings: Sendable {
    public var url: String
    public var prefix = "meshcore"
    public var user: String? = nil
    /// A file holding the password (its first line); never the password itself on the command line.
    public var passwordFile: String? = nil
    public var clientId: String? = nil
    public init(url: String) { self.url = url }
}

extension Daemon {
    /// Answers an API request: to its socket client, or to the MQTT bridge it came from.
    func reply(_ r: DaemonResponse, to client: APIServer.ClientID) {
        if client >= MQTTBridge.firstClientID && client <= MQTTBridge.lastClientID {
            for b in bridges where b.owns(client: client) { b.answer(r, client: client, now: monotonicNow()) }
            return
        }
        api.reply(r, to: client)
    }

    /// Reads a password file: its first line, without the line end. Refuses what others can read.
    static func readPassword(_ path: String) throws(DaemonError) -> [UInt8] {
        var st = stat()
        guard stat(path, &st) == 0 else { throw DaemonError(.usage, "--mqtt-password-file \(path): \(String(cString: strerror(errno))).") }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw DaemonError(.usage, "--mqtt-password-file \(path): not a regular file.") }
        guard st.st_mode & 0o077 == 0 else {
            throw DaemonError(.usage, "--mqtt-password-file \(path): readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it.")
        }
        guard let bytes = StateFile.read(path) else { throw DaemonError(.usage, "--mqtt-password-file \(path): cannot read it.") }
        let line = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        return Array(line.last == 0x0D ? line.dropLast() : line)
    }

    func brokerSettings(_ m: MQTTSettings, flag: String) throws(DaemonError) -> BrokerConnection.Settings {
        let url: BrokerURL
        do throws(MQTTError) { url = try BrokerURL(parsing: m.url) } catch { throw DaemonError(.usage, "\(flag): \(error).") }
        if url.usesTLS || url.usesWebSocket {
            throw DaemonError(.usage, "\(flag) \(m.url): only mqtt:// (TCP) is supported in this version; TLS and WebSocket transports are not built yet.")
        }
        var s = BrokerConnection.Settings(url: url)
        s.connectTimeoutMS = UInt64(max(1_000, config.connectTimeoutMS * 2))
        return s
    }

    /// The client id brokers see: stable per radio link, different for the bridge and the observer
    /// (a broker drops the older of two connections with one id).
    func mqttClientId(_ role: String) -> String {
        let slug = DaemonRegistry.slug(forLink: config.link)
        let name = config.name ?? String(slug.prefix(40))
        return "pocketmesh-\(role)-\(name)"
    }

    func setUpMQTT() throws(DaemonError) {
        for m in config.mqtt {
            var s = MQTTBridge.Settings(connection: try brokerSettings(m, flag: "--mqtt"))
            s.prefix = m.prefix
            guard !s.prefix.isEmpty, MQTTTopic.isValidName(s.prefix) else {
                throw DaemonError(.usage, "--mqtt-prefix \"\(m.prefix)\": a topic prefix must be non-empty, without + or #.")
            }
            s.user = m.user
            if let f = m.passwordFile { s.password = try Self.readPassword(f) }
            if s.password != nil && (s.user ?? s.connection.url.user) == nil {
                throw DaemonError(.usage, "--mqtt-password-file needs a user name (--mqtt-user or mqtt://USER@host).")
            }
            s.clientId = m.clientId
            let b = MQTTBridge(settings: s, defaultClientId: mqttClientId("bridge"))
            b.log = { [unowned self] in self.log($0) }
            b.execute = { [unowned self] req, client in self.handle(req, client) }
            bridges.append(b)
            log("mqtt: bridge to \(s.connection.url), prefix \(s.prefix)")
        }
    }

    func mqttDescriptors(into fds: inout [pollfd]) {
        for b in bridges { b.connection.pollDescriptors(into: &fds) }
    }

    func mqttHandle(_ p: pollfd) -> Bool {
        let now = monotonicNow()
        for b in bridges where b.connection.handle(p, now: now) { return true }
        return false
    }

    func mqttTimers(now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func soon(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }
        for b in bridges { soon(b.connection.tick(now: now)) }
        return next
    }

    func stopMQTT() {
        let now = monotonicNow()
        for b in bridges { b.stop(now: now) }
    }

    var mqttStatus: [(String, JSON)] {
        var f: [(String, JSON)] = []
        if !bridges.isEmpty { f.append(("mqtt", .array(bridges.map(\.statusFields)))) }
        return f
    }
}
