// The `--json` result of each operation that has one, named for the row that uses it
// (OperationRows.swift: `result: .json(.info)`). Shapes that several operations share are in
// SharedShapes.swift; the model and the JSON Schema made from it in ResultShape.swift.

private func f(_ name: String, _ shape: ResultShape, _ about: String? = nil) -> ResultField {
    ResultField(name, shape, about: about)
}
private func opt(_ name: String, _ shape: ResultShape, _ about: String? = nil) -> ResultField {
    .optional(name, shape, about: about)
}

extension ResultShape {
    // MARK: the radio

    public static let info: ResultShape = .object(
        f("name", .string), f("public_key", .hex), f("type", .contactType),
        f("tx_power_dbm", .integer), f("max_tx_power_dbm", .integer),
        f("latitude", .number), f("longitude", .number),
        f("frequency_mhz", .number), f("bandwidth_khz", .number), f("spreading_factor", .integer), f("coding_rate", .integer),
        f("multi_acks", .integer), f("advert_location_policy", .integer),
        f("telemetry_modes", .shared(.telemetryModes)), f("manual_add_contacts", .bool),
        // From DEVICE_INFO, as far as the firmware reports it.
        opt("protocol_version", .integer), opt("max_contacts", .integer), opt("max_channels", .integer),
        opt("firmware_version", .string), opt("firmware_build_date", .string), opt("model", .string),
        opt("client_repeat", .bool), opt("path_hash_mode", .integer))

    public static let scan: ResultShape = .object(
        f("serial", .array(.object(
            f("path", .string), f("by_id", .nullable(.string)), f("usb_id", .nullable(.string)),
            f("manufacturer", .nullable(.string)), f("product", .nullable(.string)), f("serial", .nullable(.string)),
            f("bridge", .nullable(.string)), f("known_bridge", .bool), f("use", .string)))),
        opt("ble", .array(.object(
            f("address", .string), f("address_type", .string), f("name", .nullable(.string)), f("rssi", .integer),
            f("use", .string)))),
        opt("ble_error", .string))

    /// `get` (every setting the radio answers) and `get NAME` (that one): one field per setting.
    public static let settings: ResultShape = .object(
        opt("name", .string),
        opt("coords", .object(f("latitude", .number), f("longitude", .number))),
        opt("radio", .object(f("frequency_mhz", .number), f("bandwidth_khz", .number), f("spreading_factor", .integer),
                             f("coding_rate", .integer))),
        opt("tx", .integer),
        opt("tuning", .object(f("rx_delay_base", .number), f("airtime_factor", .number))),
        opt("manual-add", .bool),
        opt("telemetry", .shared(.telemetryModes)),
        opt("advert-loc-policy", .integer),
        opt("multi-acks", .integer),
        opt("pin", .nullable(.integer)),
        opt("auto-add", .object(f("flags", .integer), f("max_hops", .integer))),
        opt("path-hash-mode", .nullable(.integer)),
        opt("flood-scope", .nullable(.string)),
        opt("custom", .map(.string)),
        opt("public-key", .hex),
        opt("firmware", .nullable(.string)),
        opt("model", .nullable(.string)),
        opt("max-contacts", .nullable(.integer)),
        opt("max-channels", .nullable(.integer)),
        opt("client-repeat", .nullable(.bool)),
        opt("repeat-freqs", .array(.object(f("from_mhz", .number), f("to_mhz", .number)))))

    public static let settingChanged: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("setting", .string), f("value", .array(.string)))

    /// `stats`: the kinds asked for; one the firmware encodes differently is its frame as hex.
    public static let stats: ResultShape = .object(
        opt("core", .anyOf([.object(f("battery_mv", .integer), f("uptime_s", .integer), f("error_flags", .integer),
                                    f("queue_length", .integer)), .hex])),
        opt("radio", .anyOf([.object(f("noise_floor", .integer), f("last_rssi", .integer), f("last_snr", .number),
                                     f("tx_air_s", .integer), f("rx_air_s", .integer)), .hex])),
        opt("packets", .anyOf([.object(f("received", .integer), f("sent", .integer), f("sent_flood", .integer),
                                       f("sent_direct", .integer), f("received_flood", .integer),
                                       f("received_direct", .integer), f("receive_errors", .nullable(.integer))), .hex])))

    public static let battery: ResultShape = .object(
        f("millivolts", .integer), opt("storage_used_kb", .integer, "Absent when the firmware does not report storage."),
        opt("storage_total_kb", .integer))

    public static let timeGet: ResultShape = .object(
        f("epoch", .integer, "The radio's clock (epoch seconds)."), f("host_epoch", .integer, "This host's clock."),
        f("offset_s", .integer, "The radio's clock minus this host's, in seconds."))
    public static let timeSet: ResultShape = .object(f("status", .oneOf(["ok"])), f("epoch", .integer))

    public static let telemetry: ResultShape = .object(
        opt("name", .string), f("lpp", .hex), f("records", .arrayOf(.lppRecord)), opt("undecoded", .hex))

    public static let signature: ResultShape = .object(f("signature", .hex))
    public static let privateKey: ResultShape = .object(f("private_key", .hex))
    /// `raw`: the reply frame (null when the radio sent none that counts as one).
    public static let rawReply: ResultShape = .nullable(.object(f("reply", .hex)))
    public static let rawData: ResultShape = .object(
        f("status", .oneOf(["sent"])), f("path", .hex), f("hops", .integer), f("bytes", .integer))
    public static let rawPacket: ResultShape = .object(f("status", .oneOf(["sent"])), f("bytes", .integer))
    public static let localCLI: ResultShape = .object(f("reply", .string))
    public static let scope: ResultShape = .object(f("status", .oneOf(["ok"])), f("scope", .string))

    // MARK: contacts

    /// `contacts`, or with --geojson a GeoJSON FeatureCollection of those with a position.
    public static let contactList: ResultShape = .anyOf([.arrayOf(.contact), .object(
        f("type", .oneOf(["FeatureCollection"])),
        f("features", .array(.object(
            f("type", .oneOf(["Feature"])),
            f("geometry", .object(f("type", .oneOf(["Point"])), f("coordinates", .array(.number)))),
            f("properties", .object(
                f("name", .nullable(.string)), f("type", .nullable(.contactType)), f("key_prefix", .hex),
                f("last_heard", .integer), opt("last_heard_utc", .string), f("path_length", .nullable(.integer)))))))),
    ])

    public static let contactExport: ResultShape = .object(f("advert", .hex))
    public static let contactAdvertTime: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("name", .string), f("last_advert", .integer))
    public static let contactFavourite: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("name", .string), f("favourite", .bool))
    public static let contactURI: ResultShape = .object(f("name", .string), f("uri", .string), f("contact_uri", .string))
    /// `contacts pending`, or with --clear how many were forgotten.
    public static let contactsPending: ResultShape = .anyOf([.arrayOf(.pendingContact), .object(f("dropped", .integer))])
    public static let contactAddPending: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("name", .string), f("public_key", .hex))
    /// `out_path_length`: the hop count, -1 when the path is unknown (messages flood), as a contact's `path_length`.
    public static let contactPath: ResultShape = .object(
        f("name", .string), f("out_path_length", .integer, "Hops of the stored path; -1: unknown (messages flood)."),
        f("out_path", .hex, "The stored path's hop hashes."),
        opt("advert_received", .integer, "When its last advert was heard (epoch seconds), if the radio knows."),
        opt("advert_path", .hex, "The path its last advert came by."))
    public static let contactDiscoverPath: ResultShape = .object(f("name", .string), f("out_path", .hex), f("in_path", .hex))
    public static let contactSetPath: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("name", .string), f("path", .hex), f("hops", .integer))
    public static let contactPermissions: ResultShape = .object(
        f("status", .oneOf(["ok"])), f("name", .string), f("base", .bool), f("location", .bool),
        f("environment", .bool), f("cli", .bool), f("flags", .integer))
    public static let contactConnected: ResultShape = .object(f("name", .string), f("connected", .bool))

    // MARK: messages and channels

    /// `send`, or with --split one entry per part (a part that failed has only part, of and error).
    public static let send: ResultShape = .anyOf([.shared(.sendResult), .array(splitPart(.shared(.sendResult)))])
    public static let channelSend: ResultShape = .anyOf([.shared(.channelSendResult),
                                                        .array(splitPart(.shared(.channelSendResult)))])

    static func splitPart(_ result: ResultShape) -> ResultShape {
        guard case .object(let fields, let closed) = result.allOptional else { return result }
        return .object([f("part", .integer), f("of", .integer)] + fields + [opt("error", .string)], closed: closed)
    }

    public static let channelAdded: ResultShape = .object(f("status", .oneOf(["ok"])), f("index", .integer), f("name", .string))
    public static let channelURI: ResultShape = .object(f("index", .integer), f("name", .string), f("uri", .string))
    public static let channelRekey: ResultShape = .object(
        f("channel", .integer), f("name", .string), f("uri", .string),
        f("members", .array(.object(f("name", .string), f("acked", .bool), f("attempts", .nullable(.integer))))))
    public static let channelData: ResultShape = .object(
        f("status", .oneOf(["sent"])), f("channel", .integer), f("name", .string), f("data_type", .integer), f("bytes", .integer))

    /// `listen`: one event per line, a message, a push of the radio, or a frame it could not decode.
    public static let listenEvent: ResultShape = .anyOf([
        .object([f("event", .oneOf(["message"]))], then: .shared(.message)),
        .object([f("event", .oneOf(["new_advert"]))], then: .shared(.contact)),
        .object(f("event", .string), opt("public_key", .hex), opt("name", .string), opt("ack", .hex),
                opt("snr", .number), opt("rssi", .integer), opt("packet", .hex), opt("frame", .hex)),
    ])

    // MARK: remote nodes

    /// `login`, or with --forget whether a saved password was removed.
    public static let login: ResultShape = .anyOf([
        .object(f("status", .oneOf(["ok", "failed"])), f("name", .string), opt("admin", .bool),
                opt("acl_permissions", .integer), opt("firmware_level", .integer), f("saved_password", .bool)),
        .object(f("name", .string), f("forgotten", .bool)),
    ])

    /// `status`: the node's statistics; a reply it cannot decode is hex.
    public static let status: ResultShape = .object(f("name", .string), f("stats", .anyOf([.object(
        f("battery_mv", .integer), f("tx_queue", .integer), f("noise_floor", .integer), f("last_rssi", .integer),
        f("last_snr", .number), f("packets_received", .integer), f("packets_sent", .integer), f("air_time_s", .integer),
        f("uptime_s", .integer), f("sent_flood", .integer), f("sent_direct", .integer), f("received_flood", .integer),
        f("received_direct", .integer), f("error_events", .integer), f("direct_duplicates", .integer),
        f("flood_duplicates", .integer),
        // Newer firmware: repeaters' receive air time and errors, room servers' posts.
        opt("rx_air_s", .integer), opt("receive_errors", .integer), opt("posted", .integer), opt("post_pushes", .integer)),
        .hex])))

    public static let regions: ResultShape = .object(f("name", .string), f("clock", .integer), f("regions", .array(.string)))
    public static let owner: ResultShape = .object(
        f("name", .string), f("clock", .integer), f("node_name", .string), f("owner", .string))
    public static let clock: ResultShape = .object(
        f("name", .string), f("clock", .integer), f("offset_s", .integer), opt("repeating", .bool))
    public static let neighbours: ResultShape = .object(
        f("name", .string), f("total", .integer),
        f("neighbours", .array(.object(f("prefix", .hex), opt("name", .string), f("heard_s_ago", .integer), f("snr", .number)))))
    public static let acl: ResultShape = .array(.object(f("prefix", .hex), f("permissions", .integer)))
    /// `cmd`: the reply (null when none came: exit 4) and the messages taken off the radio meanwhile.
    public static let command: ResultShape = .object(
        f("name", .string), f("reply", .nullable(.string), "The command's reply; null when none came (exit 4)."),
        f("messages", .arrayOf(.message), "Other messages taken off the radio's queue while waiting."))
    /// `trace`: each hop's SNR; a reply it cannot decode is `raw` hex.
    public static let trace: ResultShape = .anyOf([
        .object(f("tag", .integer), f("hops", .array(.object(f("hash", .hex), f("snr", .number)))), f("final_snr", .number)),
        .object(f("raw", .hex)),
    ])
    /// `tag`: the request's random tag, an integer as `trace`'s and the daemon's trace and binary events'.
    public static let discover: ResultShape = .object(
        f("tag", .integer, "The request's random tag."),
        f("nodes", .array(.object(
            f("name", .nullable(.string), "Its name when it is a contact."), f("public_key", .hex), f("type", .contactType),
            f("snr", .number, "SNR of its answer here (dB)."), f("rssi", .integer, "RSSI of its answer here (dBm)."),
            f("snr_there", .number, "SNR it heard the request with (dB).")))))
    public static let binaryReply: ResultShape = .object(f("name", .string), f("data", .hex))
    public static let mma: ResultShape = .object(
        f("name", .string), f("from_s_ago", .integer), f("to_s_ago", .integer),
        f("records", .array(.object(
            f("channel", .integer), f("type", .string),
            f("min", .anyOf([.number, .string])), f("max", .anyOf([.number, .string])), f("avg", .anyOf([.number, .string]))))))

    // MARK: the daemon and its store

    public static let hooksFailed: ResultShape = .object(f("failed", .array(.object(
        f("id", .integer, "The message's id in the store."), f("attempts", .integer, "Runs of its hook so far."),
        f("reason", .string, "How its last run ended."), f("retrying", .bool),
        opt("message", .shared(.storedMessage), "Absent when the store no longer has it.")))))
    public static let hooksRetry: ResultShape = .object(f("message", .integer), f("retrying", .bool))
    public static let hooksDrop: ResultShape = .object(f("message", .integer), f("dropped", .bool))
    public static let chats: ResultShape = .array(.object(
        f("thread", .string, "\"contact KEYPREFIX\", \"room KEYPREFIX\" or \"channel N\"."), f("name", .string),
        f("unread", .integer), f("messages", .integer, "How many the store has."),
        f("last", .shared(.storedMessage))))
    /// `history`: oldest first; `before` is the id to page back from (absent when there is none).
    public static let history: ResultShape = .object(
        f("thread", .string), f("messages", .arrayOf(.storedMessage)),
        opt("before", .integer, "Give it as --before to page further back; absent when there is nothing before."))

    /// `samples signal`: oldest first.
    public static let samplesSignal: ResultShape = .object(
        f("samples", .array(.object(
            f("time", .integer, "When it was heard (epoch seconds, this host's clock)."),
            f("kind", .oneOf(["packet", "message", "raw", "control"]),
              "packet: a packet the radio heard (LOG_RX_DATA); message: a message received; raw: RAW_DATA; control: CONTROL_DATA."),
            f("snr", .number, "dB, in quarters."), f("rssi", .nullable(.integer), "dBm; null when the radio gave none (messages)."),
            opt("route", .oneOf(["transport_flood", "flood", "direct", "transport_direct"]), "Packets only."),
            opt("payload_type", .integer, "Packets only: the payload type (4 advert, 2 text message, 5 group text ...)."),
            opt("hops", .integer, "The path's hop count, when known."),
            opt("from", .hex, "The hash of the hop it was heard from (a flood packet), an advert's key prefix or a message sender's key prefix.")))),
        f("capacity", .integer, "How many samples the daemon keeps."))
    /// `samples battery`: oldest first.
    public static let samplesBattery: ResultShape = .object(
        f("samples", .array(.object(
            f("time", .integer, "When it was read (epoch seconds)."), f("millivolts", .integer),
            opt("storage_used_kb", .integer, "Absent when the firmware does not report storage."), opt("storage_total_kb", .integer)))),
        f("capacity", .integer, "How many samples the daemon keeps."))

    // MARK: this host

    public static let configShow: ResultShape = .object(
        f("path", .string), f("default_radio", .nullable(.string)),
        f("radios", .array(.object(
            f("name", .string), f("default", .bool), opt("tcp", .string), opt("serial", .string), opt("baud", .integer),
            opt("ble", .string), opt("ble_min_mtu", .integer), opt("timeout", .number),
            // The radio's daemon settings as the file gives them (passwords and secrets as "(hidden)").
            opt("daemon", .map(.any))))))

    public static let ops: ResultShape = .object(f("operations", .array(opsEntry)),
                                                 f("api_ops", .array(opsEntry), "The ops of the local API that no command runs (cli null)."))

    static let opsEntry: ResultShape = .object(
        f("cli", .nullable(.string)), f("api", .nullable(.string)),
        f("class", .nullable(.oneOf(OperationClass.allCases.map(\.rawValue)))), f("daemon", .bool),
        opt("aliases", .array(.string)), opt("hidden", .bool), f("help", .string), opt("discussion", .string),
        f("args", .array(.object(
            f("name", .string), f("kind", .oneOf(["positional", "option", "flag"])),
            f("type", .oneOf(["string", "integer", "number", "bool"])), f("required", .bool), opt("short", .string),
            opt("value_name", .string), f("default", .nullable(.string)), opt("choices", .array(.string)),
            f("repeatable", .bool), opt("hidden", .bool), opt("api", .string), opt("api_aliases", .array(.string)),
            opt("command_line_only", .bool), opt("api_default", .string), opt("api_required", .bool), opt("api_only", .bool),
            f("help", .string)))),
        f("result", .object(f("format", .oneOf(["json", "json-lines", "none"])), opt("schema", .string))))
}
