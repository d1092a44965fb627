import Glibc
import MeshNet
import MeshLink
import MeshOps

/// `--mqtt URL` and what goes with it.
public struct MQTTSettings: Sendable {
    public var url: String
    public var prefix = "meshcore"
    public var user: String? = nil
    /// A file holding the password (its first line); never the password itself on the command line.
    public var passwordFile: String? = nil
    public var clientId: String? = nil
    /// `--mqtt-allow`: the operation classes commands from the broker may use, besides the
    /// default `read` and `message`. `secret` is never allowed over MQTT.
    public var allowed = AllowedClasses.mqttDefault
    public init(url: String) { self.url = url }
}

/// `--mqtt-observer URL` and what goes with it.
public struct ObserverSettings: Sendable {
    public var url: String
    /// `--mqtt-iata`: the airport code of the observer's region (required).
    public var iata: String? = nil
    /// `--mqtt-observer-key FILE`: the node's private key (0600) for the `v1_{KEY}` user and a JWT.
    public var keyFile: String? = nil
    /// `--mqtt-observer-password-file FILE`: a password for the user in the URL.
    public var passwordFile: String? = nil
    /// `--mqtt-observer-audience`: the JWT's `aud` (default: the broker's host name).
    public var audience: String? = nil
    /// `--mqtt-observer-owner`, `--mqtt-observer-email`: the JWT's `owner` and `email` claims.
    public var owner: String? = nil
    public var email: String? = nil
    /// `--mqtt-observer-decode CHANNELS`: the packets' `decoded` object.
    public var decode: String? = nil
    /// `--mqtt-observer-neighbors HOURS`: the neighbours snapshot, every 12 to 336 hours.
    public var neighbors: Int? = nil
    public init(url: String) { self.url = url }

    /// The observer's settings, each bad option refused with one sentence. Without a key file, a
    /// password file or a user in the URL, the token is signed by the radio (or the node).
    public func observer(_ connection: BrokerConnection.Settings) throws(DaemonError) -> MQTTObserver.Settings {
        guard let raw = iata else { throw DaemonError(.usage, "--mqtt-observer needs --mqtt-iata (the airport code of your region, e.g. SEA).") }
        guard let code = ObserverFormat.iata(raw) else { throw DaemonError(.usage, ObserverFormat.iataRefusal(raw)) }
        var s = MQTTObserver.Settings(connection: connection, iata: code)
        if let f = keyFile {
            s.identity = try ObserverFormat.readIdentity(f, flag: "--mqtt-observer-key")
            if connection.url.user != nil { throw DaemonError(.usage, "--mqtt-observer-key signs in as v1_{PUBLIC KEY}: leave the user out of the URL.") }
        }
        if let f = passwordFile {
            guard s.identity == nil else { throw DaemonError(.usage, "--mqtt-observer-password-file and --mqtt-observer-key exclude each other.") }
            guard connection.url.user != nil else { throw DaemonError(.usage, "--mqtt-observer-password-file needs a user name in the URL (mqtt://USER@host).") }
            s.password = try SecretFile.password(f, flag: "--mqtt-observer-password-file")
        }
        s.signedByRadio = s.identity == nil && connection.url.user == nil
        s.claims.audience = audience
        if let o = owner {
            guard let v = ObserverFormat.owner(o) else { throw DaemonError(.usage, "--mqtt-observer-owner: give the owner's public key as 64 hex digits.") }
            s.claims.owner = v
        }
        if let e = email {
            guard let v = ObserverFormat.email(e) else { throw DaemonError(.usage, "--mqtt-observer-email \"\(e)\": not an email address.") }
            s.claims.email = v
        }
        if let h = neighbors {
            guard (12...336).contains(h) else { throw DaemonError(.usage, ObserverFormat.neighborsRefusal) }
            s.neighborsIntervalS = UInt64(h) * 3600
        }
        if let d = decode {
            guard let c = ObserverFormat.channels(d) else { throw DaemonError(.usage, ObserverFormat.channelsRefusal(d)) }
            s.channels = c
        }
        if (owner != nil || email != nil || audience != nil) && s.identity == nil && !s.signedByRadio {
            throw DaemonError(.usage, "--mqtt-observer-owner, --mqtt-observer-email and --mqtt-observer-audience go in the token, which a user in the URL replaces.")
        }
        return s
    }
}

extension BrokerConnection.Settings {
    /// A broker's URL and the options that go with it (`--mqtt-ca-file`, the environment's
    /// POCKETMESH_HOSTS, POCKETMESH_RESOLV_CONF and POCKETMESH_DNS_PORT).
    public static func parse(_ text: String, flag: String, caFile: String?, connectTimeoutMS: Int,
                             environment: [String: String]) throws(DaemonError) -> BrokerConnection.Settings {
        let url: BrokerURL
        do throws(MQTTError) { url = try BrokerURL(parsing: text) } catch { throw DaemonError(.usage, "\(flag): \(error).") }
        if let ca = caFile, url.usesTLS {
            guard access(ca, R_OK) == 0 else { throw DaemonError(.usage, "--mqtt-ca-file \(ca): \(String(cString: strerror(errno))).") }
            // The certificates a broker must chain to: whoever can write them can be the broker.
            if let problem = FileTrust.problem(ca) { throw DaemonError(.usage, "--mqtt-ca-file: \(problem).") }
        }
        var s = BrokerConnection.Settings(url: url)
        s.caFile = caFile
        s.connectTimeoutMS = UInt64(max(1_000, connectTimeoutMS * 2))
        // Where names are looked up: the system's files unless the environment says otherwise
        // (tests, and systems that keep them elsewhere).
        if let h = environment["POCKETMESH_HOSTS"], !h.isEmpty { s.hostsPath = h }
        if let r = environment["POCKETMESH_RESOLV_CONF"], !r.isEmpty { s.resolvConfPath = r }
        if let p = environment["POCKETMESH_DNS_PORT"] {
            guard let n = UInt16(p), n > 0 else { throw DaemonError(.usage, "POCKETMESH_DNS_PORT=\(p): not a port number.") }
            s.dnsPort = n
        }
        return s
    }
}

/// Secret files (passwords, the observer's private key): read only when no one else can read them.
public enum SecretFile {
    /// Reads a password file: its first line, without the line end. Refuses what others can read.
    public static func password(_ path: String, flag: String = "--mqtt-password-file") throws(DaemonError) -> [UInt8] {
        let bytes = try read(path, flag: flag)
        let line = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        return Array(line.last == 0x0D ? line.dropLast() : line)
    }

    /// A secret file's bytes; refuses one others can read (it must be 0600 or stricter).
    public static func read(_ path: String, flag: String) throws(DaemonError) -> [UInt8] {
        var st = stat()
        guard stat(path, &st) == 0 else { throw DaemonError(.usage, "\(flag) \(path): \(String(cString: strerror(errno))).") }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw DaemonError(.usage, "\(flag) \(path): not a regular file.") }
        if let problem = FileTrust.problem(path, st) { throw DaemonError(.usage, "\(flag): \(problem).") }
        guard st.st_mode & 0o077 == 0 else {
            throw DaemonError(.usage, "\(flag) \(path): readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it.")
        }
        guard let bytes = StateFile.read(path) else { throw DaemonError(.usage, "\(flag) \(path): cannot read it.") }
        return bytes
    }
}
