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

extension Request {
    /// The request's permission class (see `OperationClass`).
    public var operationClass: OperationClass {
        switch self {
        case .info, .contacts, .contactShow, .contactExport, .contactURI, .contactPath, .channels, .channelURI,
             .timeGet, .get, .battery, .stats, .status, .regions, .owner, .clock, .telemetry, .neighbours, .acl,
             .trace, .contactByKey, .hasConnection, .mma:
            return .read
        case .send, .channelSend, .sync, .channelData:
            return .message
        case .contactAdd, .contactRemove, .contactResetPath, .contactResetAdvertTime, .contactShare, .contactImport, .contactFavourite,
             .contactImportLink, .contactDiscoverPath, .channelSet, .channelRemove, .channelImport, .channelAdd,
             .advert, .timeSync, .timeSet, .scope, .discover, .contactSetPath, .contactPermissions:
            return .config
        case .set(let key, _):
            // The BLE PIN guards the radio itself; the private key is not a setting.
            switch key {
            case "pin": return .admin
            case "private-key", "private_key": return .secret
            default: return .config
            }
        case .login, .logout, .command, .binaryRequest, .reboot, .factoryReset, .raw, .rawData, .rawPacket, .localCommand:
            return .admin
        case .sign, .keyExport, .keyImport:
            return .secret
        }
    }
}

extension Request {
    /// The class an API op has by its name alone (the least it can be: `set` is config, or admin
    /// for the PIN, secret for the key), so that a door refuses an op it does not allow before its
    /// arguments are even read. nil: not an op of the command line.
    public static func operationClass(apiOp op: String) -> OperationClass? {
        switch op {
        case "contacts_show", "contacts_export", "contacts_path", "contacts_uri", "contacts_connected", "channel_list",
             "channel_uri", "time_get", "get", "battery", "stats", "status", "regions", "owner", "clock", "telemetry",
             "neighbours", "acl", "trace", "mma":
            return .read
        case "channel_send", "channel_data":
            return .message
        case "contacts_add", "contacts_remove", "contacts_reset_path", "contacts_reset_advert_time", "contacts_share", "contacts_import",
             "contacts_discover_path", "contacts_favourite", "contacts_set_path", "contacts_permissions",
             "channel_set", "channel_remove", "channel_import", "channel_add", "time_sync", "time_set", "scope",
             "discover", "set":
            return .config
        case "login", "logout", "cmd", "reboot", "factory_reset", "raw", "raw_data", "raw_packet", "cli", "request":
            return .admin
        case "sign", "key_export", "key_import":
            return .secret
        default:
            return nil
        }
    }
}
