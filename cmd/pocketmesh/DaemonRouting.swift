import Glibc
import MeshLink
import MeshSession
import MeshDaemonClient
import MeshOps

extension MeshDaemonClient.LinkTarget {
    /// The link spec a daemon registers (`serial:PATH`, `tcp:HOST:PORT`, `ble:ADDRESS`).
    /// `--serial auto` names the device it would choose (so a daemon holding it is found).
    var daemonLinkSpec: String? {
        switch self {
        case .serial(let path, _):
            if path == "auto" {
                guard let radio = try? RadioCandidate.choose(from: SerialDiscovery.candidates()) else { return nil }
                return "serial:" + radio.path
            }
            return "serial:" + path
        case .tcp(let host, let port): return "tcp:\(host):\(port)"
        case .ble(let address, _): return "ble:" + address
        }
    }

    /// Opens the radio link, or, while a `pocketmesh daemon` owns this radio (a serial port cannot
    /// be shared, a TCP radio takes one client), a tunnel through the daemon's socket: the command
    /// then runs exactly as it would on the link. POCKETMESH_NO_DAEMON=1 skips the lookup.
    func openDirectOrThroughDaemon(timeoutMilliseconds: Int) throws(ClientError) -> ByteLink {
        if getenv("POCKETMESH_NO_DAEMON") == nil, let spec = daemonLinkSpec {
            var env: [String: String] = [:]
            if let x = getenv("XDG_RUNTIME_DIR") { env["XDG_RUNTIME_DIR"] = String(cString: x) }
            switch DaemonRegistry.lookup(link: spec, environment: env) {
            case .found(let entry):
                do {
                    return try DaemonTunnelLink(socketPath: entry.socket, timeoutMS: timeoutMilliseconds)
                } catch {
                    switch error.code {
                    case .timeout: throw .timeout(error.message)
                    case .usage, .tooLong, .unsupported: throw .usage(error.message)
                    case .denied: throw .link("the daemon that owns \(spec) does not let you in: \(error.message)")
                    default: throw .link("the daemon that owns \(spec) cannot reach the radio now: \(error.message)")
                    }
                }
            case .unreachable(let why):
                // Never the radio itself under its daemon: a TCP radio would drop the daemon's link.
                throw .link(why)
            case .none:
                break
            }
        }
        return try open(timeoutMilliseconds: timeoutMilliseconds)
    }
}
