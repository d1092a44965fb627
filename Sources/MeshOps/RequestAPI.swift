import MeshSession

/// The local API's name for each operation of the command line: its command path joined with
/// "_" (`contacts remove` is `contacts_remove`), with its arguments as named fields: the names of the
/// command's own arguments, dashes as "_", or the API name their row gives them
/// (`{"op":"contacts_remove","name":"alice"}`). One table, used by the daemon to run any
/// command-line operation for an API client, with the result fields of `--json`.
extension Request {
    /// Every operation reachable this way: the rows of `OperationTable` with an API name that the
    /// daemon does not answer itself. (`info`, `contacts`, `send` (through its outbox, kept across
    /// restarts), `sync` and the daemon's `status` are answered by the daemon itself, with the same
    /// fields.)
    public static let apiOps: Set<String> = Set(OperationTable.rows.filter { !$0.daemon }.compactMap(\.api))

    /// The request an API op names, from the request's fields (`OperationValues(api:fields:)`).
    public init(apiOp op: String, fields: [String: Value]) throws(ClientError) {
        self = try Request(OperationValues(api: op, fields: fields))
    }

    /// The request of an operation with its arguments' values: the one place both doors (the
    /// command line after parsing, the API after decoding its fields) turn an operation into a
    /// request. Values are by the table's names; the checks that are not the table's (ranges,
    /// cross-argument rules) are here, once.
    public init(_ v: OperationValues) throws(ClientError) {
        func s(_ name: String) throws(ClientError) -> String { try v.required(name) }
        switch v.operation.cli {
        case "info": self = .info
        case "contacts list": self = .contacts
        case "contacts show": self = .contactShow(try s("contact"))
        case "contacts add":
            self = .contactAdd(publicKey: try s("public-key"), name: try s("name"),
                               type: try Request.contactType(v.string("type")), path: v.string("path"))
        case "contacts remove": self = .contactRemove(try s("contact"))
        case "contacts reset-path": self = .contactResetPath(try s("contact"))
        case "contacts reset-advert-time": self = .contactResetAdvertTime(try s("contact"))
        case "contacts share": self = .contactShare(try s("contact"))
        case "contacts export": self = .contactExport(v.string("contact"))
        case "contacts import": self = .contactImportLink(try s("advert"))
        case "contacts favourite": self = .contactFavourite(try s("contact"), on: v.flag("state"))
        case "contacts uri": self = .contactURI(try s("contact"))
        case "contacts path": self = .contactPath(try s("contact"))
        case "contacts discover-path": self = .contactDiscoverPath(try s("contact"))
        case "contacts set-path": self = .contactSetPath(try s("contact"), path: try s("path"))
        case "contacts permissions": self = .contactPermissions(try s("contact"), grant: try s("grant"))
        case "contacts connected": self = .hasConnection(try s("contact"))
        case "send": self = .send(to: try s("to"), text: v.words("text") ?? "", wait: !v.flag("no-wait"))
        case "channel list": self = .channels
        case "channel set":
            let index: Int = try v.integer("index", Int.self, 0...255, "a slot number (0 to 255)") ?? 0
            self = .channelSet(index: index, name: try s("name"), secret: v.string("secret"), hashtag: v.flag("hashtag"))
        case "channel add":
            let name = try s("name")
            guard v.string("secret") != nil || name.hasPrefix("#") else {
                throw .usage("\(v.door == .api ? v.subject + ": " : "")give \(v.label("secret")) (32 hex digits), or a #name for a hashtag channel.")
            }
            self = .channelAdd(name: name, secret: v.string("secret"))
        case "channel remove": self = .channelRemove(try s("channel"))
        case "channel send":
            let wait = v.number("repeats-wait") ?? 0
            guard wait >= 0, wait <= 60 else { throw v.usage("repeats-wait", "must be between 0 and 60 seconds.") }
            self = .channelSend(try s("channel"), text: v.words("text") ?? "", repeatsWaitMs: Int(wait * 1000))
        case "channel uri": self = .channelURI(try s("channel"))
        case "channel import": self = .channelImport(try s("uri"))
        case "channel data":
            let type: UInt16 = try v.integer("data-type", UInt16.self, 1...65535, "1 to 65535") ?? 0
            self = .channelData(try s("channel"), dataType: type, hex: try s("data"))
        case "sync": self = .sync
        case "advert": self = .advert(flood: v.flag("flood"))
        case "time get": self = .timeGet
        case "time sync": self = .timeSync
        case "time set":
            let epoch: UInt32 = try v.integer("epoch", UInt32.self, 1_600_000_000...4_294_967_295,
                                              "whole epoch seconds from 1600000000 (September 2020) to 4294967295") ?? 0
            self = .timeSet(epoch)
        case "get": self = .get(v.string("setting"))
        case "set": self = .set(try s("setting"), v.strings("values") ?? [])
        case "battery": self = .battery
        case "stats": self = .stats(v.string("type"))
        case "login": self = .login(try s("node"), password: v.string("password") ?? "")
        case "logout": self = .logout(try s("node"))
        case "status": self = .status(try s("node"))
        case "regions": self = .regions(try s("node"))
        case "owner": self = .owner(try s("node"))
        case "clock": self = .clock(try s("node"))
        case "scope": self = .scope(try s("scope"))
        case "telemetry": self = .telemetry(v.string("node"))
        case "neighbours": self = .neighbours(try s("node"))
        case "acl": self = .acl(try s("node"))
        case "cmd": self = .command(try s("node"), text: v.words("command") ?? "")
        case "trace": self = .trace(path: try s("path"))
        case "sign": self = .sign(data: try s("data"))
        case "key export": self = .keyExport
        case "key import": self = .keyImport(try s("key"))
        case "reboot": self = .reboot
        case "factory-reset":
            guard v.flag("yes-erase-everything") else {
                throw .usage("\(v.subject) erases the radio: add \(v.label("yes-erase-everything"))\(v.door == .api ? ": true" : "") to confirm.")
            }
            self = .factoryReset
        case "raw": self = .raw(try s("frame"))
        case "raw-data": self = .rawData(path: try s("path"), hex: try s("data"))
        case "raw-packet":
            self = .rawPacket(try s("packet"), priority: try v.integer("priority", UInt8.self, 0...255, "0 to 255") ?? 0)
        case "discover":
            let seconds = v.number("for") ?? 8
            guard seconds > 0, seconds <= 600 else { throw v.usage("for", "must be between 0 and 600 seconds.") }
            guard let types = DiscoverTypes.filter(v.string("type") ?? "all") else {
                throw v.usage("type", "takes repeater, room, chat, sensor or all (comma-separated).")
            }
            self = .discover(waitMs: Int(seconds * 1000), types: types)
        case "request": self = .binaryRequest(try s("node"), hex: try s("data"))
        case "mma":
            let window: ClosedRange<Int64> = 0...Int64(UInt32.max)
            self = .mma(try s("node"), from: try v.integer("from", UInt32.self, window, "whole seconds ago") ?? 3600,
                        to: try v.integer("to", UInt32.self, window, "whole seconds ago") ?? 0)
        case "cli": self = .localCommand(v.words("command") ?? "")
        default:
            throw .usage("\(v.subject) is not an operation that runs as a request.")
        }
    }

    /// A contact type by name (`contacts add --type`); nil keeps what the radio has.
    public static func contactType(_ name: String?) throws(ClientError) -> UInt8? {
        switch name {
        case nil: return nil
        case "chat": return 1
        case "repeater": return 2
        case "room": return 3
        case "sensor": return 4
        default: throw .usage("the contact type must be chat, repeater, room or sensor.")
        }
    }
}
