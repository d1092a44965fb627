import Glibc

/// Which radio link the command line asked for (`--serial`, `--tcp`, `--ble`), and how to open it.
public enum LinkEndpoint: Equatable, Sendable, CustomStringConvertible {
    case serial(path: String, speed: SerialSpeed, modemLines: ModemLinePolicy)
    /// `--serial auto`: the only USB serial candidate (see `RadioCandidate.choose`).
    case serialAuto(speed: SerialSpeed, modemLines: ModemLinePolicy)
    case tcp(TCPAddress)
    case ble(BLEAddress, security: BLESecurity)

    /// From the option values; exactly one of `serial`, `tcp`, `ble` must be given.
    public init(serial: String?, baud: Int?, modemLines: ModemLinePolicy = .deassert,
                tcp: String?, ble: String?, security: BLESecurity = .medium) throws(LinkError) {
        let given = [serial, tcp, ble].compactMap { $0 }
        guard given.count == 1 else {
            throw .invalidAddress(given.isEmpty ? "(none)" : given.joined(separator: ", "),
                                  reason: "give exactly one of --serial PATH (or auto), --tcp HOST[:PORT] or --ble ADDRESS")
        }
        var speed = SerialSpeed.default
        if let baud {
            guard let valid = SerialSpeed(baud: baud) else {
                throw .invalidAddress("--baud \(baud)", reason: "supported rates are \(SerialSpeed.supportedBauds.map(String.init).joined(separator: ", "))")
            }
            speed = valid
        }
        if let serial {
            self = serial == "auto" ? .serialAuto(speed: speed, modemLines: modemLines)
                : .serial(path: serial, speed: speed, modemLines: modemLines)
        } else if let tcp {
            self = .tcp(try TCPAddress(parsing: tcp))
        } else {
            self = .ble(try BLEAddress(parsing: ble ?? ""), security: security)
        }
    }

    /// Opens the link, blocking for at most `timeoutMilliseconds` (TCP connect, BLE connect + GATT setup).
    /// `bleConfiguration` tunes the GATT client (e.g. `minimumMTU` 176 for ESP32 radios).
    public func open(timeoutMilliseconds: Int = 5000,
                     discovery: SerialDiscovery.Source = .automatic,
                     bleConfiguration: ATTClient.Configuration = ATTClient.Configuration()) throws(LinkError) -> ByteLink {
        switch self {
        case .serial(let path, let speed, let modemLines):
            return try SerialLink(path: path, speed: speed, modemLines: modemLines)
        case .serialAuto(let speed, let modemLines):
            let radio = try RadioCandidate.choose(from: SerialDiscovery.candidates(source: discovery))
            // The by-id link when udev created it (it names the same device), else the node.
            let path = radio.byIdPath.flatMap { access($0, F_OK) == 0 ? $0 : nil } ?? radio.path
            return try SerialLink(path: path, speed: speed, modemLines: modemLines)
        case .tcp(let address):
            return try TCPLink(connectingTo: address, timeoutMilliseconds: timeoutMilliseconds)
        case .ble(let address, let security):
            return try BLELink(connectingTo: address, security: security, timeoutMilliseconds: max(timeoutMilliseconds, 10_000),
                               configuration: bleConfiguration)
        }
    }

    public var description: String {
        switch self {
        case .serial(let path, let speed, _): return "serial \(path) at \(speed.baud) baud"
        case .serialAuto(let speed, _): return "serial auto at \(speed.baud) baud"
        case .tcp(let address): return "tcp \(address)"
        case .ble(let address, _): return "ble \(address)"
        }
    }
}
