import MeshSession

/// The local API's name for each operation of the command line: its command path joined with
/// "_" (`contacts remove` is `contacts_remove`), with its arguments as named fields named after the
/// command's own (`{"op":"contacts_remove","name":"alice"}`). One table, used by the daemon to
/// run any command-line operation for an API client, with the result fields of `--json`.
extension Request {
    /// Every operation reachable this way: the rows of `OperationTable` with an API name that the
    /// daemon does not answer itself. (`info`, `contacts`, `send` (through its outbox, kept across
    /// restarts), `sync` and the daemon's `status` are answered by the daemon itself, with the same
    /// fields.)
    public static let apiOps: Set<String> = Set(OperationTable.rows.filter { !$0.daemon }.compactMap(\.api))

    /// The request an API op names, from the request's fields.
    public init(apiOp op: String, fields f: [String: Value]) throws(ClientError) {
        func string(_ key: String) throws(ClientError) -> String {
            guard let v = f[key] else { throw .usage("\(op): missing \"\(key)\".") }
            switch v {
            case .string(let s): return s
            case .integer(let i): return String(i)
            default: throw .usage("\(op): \"\(key)\" must be a string.")
            }
        }
        func optional(_ key: String) throws(ClientError) -> String? {
            guard let v = f[key], v != .null else { return nil }
            return try string(key)
        }
        func flag(_ key: String) throws(ClientError) -> Bool {
            guard let v = f[key], v != .null else { return false }
            guard case .bool(let b) = v else { throw .usage("\(op): \"\(key)\" must be true or false.") }
            return b
        }
        switch op {
        case "contacts_show": self = .contactShow(try string("name"))
        case "contacts_add":
            self = .contactAdd(publicKey: try string("public_key"), name: try string("name"),
                               type: try Request.contactType(try optional("type")), path: try optional("path"))
        case "contacts_remove": self = .contactRemove(try string("name"))
        case "contacts_reset_path": self = .contactResetPath(try string("name"))
        case "contacts_reset_advert_time": self = .contactResetAdvertTime(try string("name"))
        case "contacts_share": self = .contactShare(try string("name"))
        case "contacts_export": self = .contactExport(try optional("name"))
        case "contacts_import":
            if let uri = try optional("uri") { self = .contactImportLink(uri) } else { self = .contactImportLink(try string("advert")) }
        case "contacts_favourite":
            guard case .bool(let on)? = f["on"] else { throw .usage("\(op): \"on\" must be true or false.") }
            self = .contactFavourite(try string("name"), on: on)
        case "contacts_uri": self = .contactURI(try string("name"))
        case "channel_uri": self = .channelURI(try string("channel"))
        case "channel_import": self = .channelImport(try string("uri"))
        case "channel_add": self = .channelAdd(name: try string("name"), secret: try optional("secret"))
        case "time_set":
            guard let e = f["epoch"]?.intValue, let epoch = UInt32(exactly: e) else { throw .usage("\(op): \"epoch\" must be a whole number of seconds.") }
            self = .timeSet(epoch)
        case "contacts_path": self = .contactPath(try string("name"))
        case "contacts_discover_path": self = .contactDiscoverPath(try string("name"))
        case "channel_list": self = .channels
        case "channel_set":
            guard let i = f["index"]?.intValue, let index = Int(exactly: i) else { throw .usage("\(op): \"index\" must be a slot number.") }
            self = .channelSet(index: index, name: try string("name"), secret: try optional("secret"), hashtag: try flag("hashtag"))
        case "channel_remove": self = .channelRemove(try string("channel"))
        case "time_get": self = .timeGet
        case "time_sync": self = .timeSync
        case "get": self = .get(try optional("setting"))
        case "set":
            let values: [String]
            switch f["values"] {
            case .array(let items)?:
                var out: [String] = []
                for v in items {
                    switch v {
                    case .string(let s): out.append(s)
                    case .integer(let i): out.append(String(i))
                    case .double(let d): out.append(Value.formatDouble(d))
                    case .bool(let b): out.append(b ? "on" : "off")
                    default: throw .usage("set: \"values\" must be strings or numbers.")
                    }
                }
                values = out
            case nil, .null?: values = (try optional("value")).map { [$0] } ?? []
            default: throw .usage("set: \"values\" must be a list.")
            }
            self = .set(try string("setting"), values)
        case "battery": self = .battery
        case "stats": self = .stats(try optional("type"))
        case "login": self = .login(try string("name"), password: try string("password"))
        case "logout": self = .logout(try string("name"))
        case "status": self = .status(try string("name"))
        case "regions": self = .regions(try string("name"))
        case "scope": self = .scope(try string("scope"))
        case "owner": self = .owner(try string("name"))
        case "clock": self = .clock(try string("name"))
        case "telemetry": self = .telemetry(try optional("name"))
        case "neighbours": self = .neighbours(try string("name"))
        case "acl": self = .acl(try string("name"))
        case "cmd": self = .command(try string("name"), text: try string("text"))
        case "trace": self = .trace(path: try string("path"))
        case "sign": self = .sign(data: try string("data"))
        case "key_export": self = .keyExport
        case "key_import": self = .keyImport(try string("key"))
        case "reboot": self = .reboot
        case "factory_reset":
            guard try flag("yes_erase_everything") else {
                throw .usage("factory_reset erases the radio: add \"yes_erase_everything\": true to confirm.")
            }
            self = .factoryReset
        case "raw": self = .raw(try string("hex"))
        case "discover":
            let seconds = f["for"]?.doubleValue ?? 8
            guard seconds > 0, seconds <= 600 else { throw .usage("discover: \"for\" must be 0 to 600 seconds.") }
            guard let types = DiscoverTypes.filter(try optional("type") ?? "all") else {
                throw .usage("discover: \"type\" takes repeater, room, chat, sensor or all (comma-separated).")
            }
            self = .discover(waitMs: Int(seconds * 1000), types: types)
        case "contacts_set_path": self = .contactSetPath(try string("name"), path: try string("path"))
        case "contacts_permissions": self = .contactPermissions(try string("name"), grant: try string("grant"))
        case "contacts_connected": self = .hasConnection(try string("name"))
        case "request": self = .binaryRequest(try string("name"), hex: try string("data"))
        case "mma":
            func secs(_ k: String, _ d: UInt32) throws(ClientError) -> UInt32 {
                guard let v = f[k], v != .null else { return d }
                guard let i = v.intValue, let u = UInt32(exactly: i) else { throw .usage("mma: \"\(k)\" must be whole seconds ago.") }
                return u
            }
            self = .mma(try string("name"), from: try secs("from", 3600), to: try secs("to", 0))
        case "channel_data":
            guard let t = f["data_type"]?.intValue, let type = UInt16(exactly: t) else { throw .usage("channel_data: \"data_type\" must be 1 to 65535.") }
            self = .channelData(try string("channel"), dataType: type, hex: try string("data"))
        case "raw_data": self = .rawData(path: try string("path"), hex: try string("data"))
        case "raw_packet":
            let p = f["priority"]?.intValue ?? 0
            guard let pr = UInt8(exactly: p) else { throw .usage("raw_packet: \"priority\" must be 0 to 255.") }
            self = .rawPacket(try string("packet"), priority: pr)
        case "cli": self = .localCommand(try string("command"))
        case "advert": self = .advert(flood: try flag("flood"))
        case "channel_send":  // repeats_wait (seconds): listen that long for repeaters sending it on
            let wait = f["repeats_wait"]?.doubleValue ?? 0
            guard wait >= 0, wait <= 30 else { throw .usage("channel_send: \"repeats_wait\" must be 0 to 30 seconds.") }
            self = .channelSend(try string("channel"), text: try string("text"), repeatsWaitMs: Int(wait * 1000))
        default:
            throw .usage("unknown operation \"\(op)\".")
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
