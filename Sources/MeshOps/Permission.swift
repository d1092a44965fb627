import MeshCompanion
import MeshSession

/// Who may do what: every operation belongs to one class, and every front end (the API socket, each
/// hub listener, each MQTT bridge) has a set of classes it allows. One table, here, for every door.
///
/// - `read`: queries that change nothing (info, contacts, channels, settings, battery, stats,
///   remote status and telemetry).
/// - `message`: sending direct and channel messages, and fetching received ones.
/// - `config`: settings, contacts, channels, time, adverts.
/// - `admin`: reboot, factory reset, raw frames and packets, the BLE PIN, remote login and
///   remote or local CLI commands.
/// - `secret`: the private key (export, import) and signing with the node's key.
public enum OperationClass: String, Sendable, CaseIterable, Comparable {
    case read, message, config, admin, secret

    public static func < (a: OperationClass, b: OperationClass) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// What the class covers, for help texts and refusals.
    public var summary: String {
        switch self {
        case .read: return "queries that change nothing"
        case .message: return "sending and fetching messages"
        case .config: return "settings, contacts, channels, time and adverts"
        case .admin: return "reboot, factory reset, raw frames, the PIN, remote login and CLI commands"
        case .secret: return "the private key and signing with it"
        }
    }

    /// The class of a companion command frame as an app sends it (the hub, the daemon's tunnel).
    /// A text message of the CLI type is a remote command (`admin`), not a message.
    public init(frame: UnsafeRawBufferPointer) {
        guard let first = frame.first, let code = CommandCode(rawValue: first) else {
            // Any code this build does not know: the strictest class short of secret, so nothing
            // unknown passes a default front end.
            self = .admin
            return
        }
        if code == .sendTextMessage, case .sendTextMessage(let m)? = try? CompanionCommand.decode(frame), m.textType != .plain {
            self = .admin
            return
        }
        self.init(command: code)
    }

    public init(frame: [UInt8]) {
        self = frame.withUnsafeBytes { OperationClass(frame: $0) }
    }

    /// The class of a companion command by its code alone.
    public init(command code: CommandCode) {
        switch code {
        case .appStart, .deviceQuery, .getContacts, .getDeviceTime, .getBatteryAndStorage, .exportContact,
             .getContactByKey, .getChannel, .getCustomVars, .getAdvertPath, .getTuningParams, .getStats,
             .getAutoAddConfig, .getAllowedRepeatFrequencies, .getDefaultFloodScope, .hasConnection,
             .sendStatusRequest, .sendTelemetryRequest, .sendAnonRequest, .sendTracePath:
            self = .read
        case .sendTextMessage, .sendChannelTextMessage, .syncNextMessage, .sendChannelData:
            self = .message
        case .setDeviceTime, .sendSelfAdvert, .setAdvertName, .addUpdateContact, .setRadioParams, .setRadioTxPower,
             .resetPath, .setAdvertLatLon, .removeContact, .shareContact, .importContact, .setTuningParams,
             .setChannel, .setOtherParams, .setCustomVar, .sendPathDiscoveryRequest, .setFloodScopeKey,
             .sendControlData, .setAutoAddConfig, .setPathHashMode, .setDefaultFloodScope:
            self = .config
        case .reboot, .factoryReset, .sendRawData, .sendRawPacket, .sendLogin, .logout, .setDevicePin, .sendBinaryRequest,
             .runCLICommand:
            self = .admin
        case .exportPrivateKey, .importPrivateKey, .signStart, .signData, .signFinish:
            self = .secret
        }
    }
}

/// A set of operation classes: what one front end allows.
public struct AllowedClasses: Sendable, Equatable, CustomStringConvertible {
    public private(set) var classes: Set<OperationClass>

    public init(_ classes: Set<OperationClass>) { self.classes = classes }

    public static let everything = AllowedClasses(Set(OperationClass.allCases))
    /// A hub listener's default: apps may read, message and configure, not administer or touch the key.
    public static let hubDefault = AllowedClasses([.read, .message, .config])
    /// The MQTT bridge's default: anyone who can publish to the broker may read and message.
    public static let mqttDefault = AllowedClasses([.read, .message])

    public func allows(_ c: OperationClass) -> Bool { classes.contains(c) }

    public mutating func insert(_ c: OperationClass) { classes.insert(c) }

    /// Classes separated by `,` or `+` (`read,message`, `read+config`); `all` is every class,
    /// `none` no class.
    public init(parsing text: String) throws(ClientError) {
        var set = Set<OperationClass>()
        let parts = text.split(whereSeparator: { $0 == "," || $0 == "+" }).map { String($0).trimmingSpaces }
        guard !parts.isEmpty else { throw .usage("give operation classes: \(Self.names) (comma-separated), all or none.") }
        for p in parts {
            switch p.lowercased() {
            case "all": set.formUnion(OperationClass.allCases)
            case "none": break
            default:
                guard let c = OperationClass(rawValue: p.lowercased()) else {
                    throw .usage("unknown operation class \"\(p)\": the classes are \(Self.names) (or all, none).")
                }
                set.insert(c)
            }
        }
        classes = set
    }

    public static var names: String { OperationClass.allCases.map(\.rawValue).joined(separator: ", ") }

    /// `read,message,config` (in the classes' order), or `none`.
    public var description: String {
        classes.isEmpty ? "none" : classes.sorted().map(\.rawValue).joined(separator: ",")
    }
}

extension Operation {
    /// The permission class of a request of this row (see `OperationClass`): the row's, except
    /// that `set` of the BLE PIN is `admin` and of the private key `secret`, and that an op carrying
    /// a companion frame (`raw`) is at least the class of the frame it carries: `raw 17` exports
    /// the private key, so it is `secret`, not the row's `admin`.
    public func operationClass(of request: Request) -> OperationClass {
        let row = opClass ?? .admin
        switch request {
        case .set(let key, _):
            // The BLE PIN guards the radio itself; the private key is not a setting.
            switch key {
            case "pin": return max(row, .admin)
            case "private-key", "private_key": return .secret
            default: return row
            }
        case .raw(let hex):
            // Hex that does not decode is refused by the op itself; its class is the row's.
            guard let frame = Hex.decode(hex), !frame.isEmpty else { return row }
            return max(row, OperationClass(frame: frame))
        default:
            return row
        }
    }
}

extension Request {
    /// The class an API op has by its name alone (its row's class: the least it can be, as `set`
    /// is config, or admin for the PIN, secret for the key), so that a door refuses an op it does
    /// not allow before its arguments are even read. nil: no operation of that name.
    public static func operationClass(apiOp op: String) -> OperationClass? {
        OperationTable.row(api: op)?.opClass
    }

    /// The class of the request an API op's fields make (a bad request is the usage error it
    /// would be anyway).
    public static func operationClass(apiOp op: String, fields: [String: Value]) throws(ClientError) -> OperationClass {
        let v = try OperationValues(api: op, fields: fields)
        return v.operation.operationClass(of: try Request(v))
    }
}
