import Glibc
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
    public init(url: String) { self.url = url }
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
