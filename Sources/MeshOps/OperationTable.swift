/// The operation table: every operation of the command line described once, in one row (its
/// command path, arguments with their help, permission class and API op name), as git's
/// `commands[]` array describes git's commands. Front ends read the rows: the local API's op names
/// (`Request.apiOps`) and the class of an op by name (`Request.operationClass(apiOp:)`),
/// `pocketmesh ops --json`, `pocketmesh completions` and the man page; a test checks the command
/// line against it, so the two cannot drift.

/// One argument of an operation: a positional value, an option that takes a value, or a flag.
public struct OperationArgument: Sendable, Equatable {
    public enum Kind: String, Sendable { case positional, option, flag }
    /// What a value is: `number` is decimal (`5.0`, `-75.70`); `integer` a whole number.
    public enum ValueType: String, Sendable { case string, integer, number, bool }

    public var kind: Kind
    /// The long name without dashes (`serial`, `ble-min-mtu`), or a positional value's name (`contact`).
    public var name: String
    /// The one-letter name, if any (`s` for `-s`).
    public var short: Character?
    /// The placeholder of the value in usage lines (`path`, `seconds`); nil for a flag.
    public var valueName: String?
    public var type: ValueType
    public var required: Bool
    /// The default as the help shows it (`5.0`), nil when there is none.
    public var defaultValue: String?
    /// The values it takes, when they are a fixed few (offered by the shell completions).
    public var choices: [String]
    /// Given more than once (an option), or taking every remaining value (a positional).
    public var repeatable: Bool
    /// Not shown in help (internal or deprecated).
    public var hidden: Bool
    /// Takes every argument after it as they are (the internal `daemon hook-exec`).
    public var remaining: Bool
    public var help: String

    public init(kind: Kind, name: String, short: Character?, valueName: String?, type: ValueType, required: Bool,
                defaultValue: String?, choices: [String], repeatable: Bool, hidden: Bool, remaining: Bool, help: String) {
        self.kind = kind
        self.name = name
        self.short = short
        self.valueName = valueName
        self.type = type
        self.required = required
        self.defaultValue = defaultValue
        self.choices = choices
        self.repeatable = repeatable
        self.hidden = hidden
        self.remaining = remaining
        self.help = help
    }

    /// The spelling on the command line: `--serial`, `<contact>`.
    public var display: String { kind == .positional ? "<\(name)>" : "--\(name)" }

    public static func positional(_ name: String, type: ValueType = .string, optional: Bool = false, choices: [String] = [],
                                  default value: String? = nil, repeatable: Bool = false, hidden: Bool = false,
                                  remaining: Bool = false, help: String) -> OperationArgument {
        OperationArgument(kind: .positional, name: name, short: nil, valueName: name, type: type, required: !optional && value == nil,
                          defaultValue: value, choices: choices, repeatable: repeatable, hidden: hidden, remaining: remaining, help: help)
    }

    public static func option(_ name: String, short: Character? = nil, value valueName: String, type: ValueType = .string,
                              required: Bool = false, choices: [String] = [], default value: String? = nil,
                              repeatable: Bool = false, hidden: Bool = false, help: String) -> OperationArgument {
        OperationArgument(kind: .option, name: name, short: short, valueName: valueName, type: type, required: required,
                          defaultValue: value, choices: choices, repeatable: repeatable, hidden: hidden, remaining: false, help: help)
    }

    public static func flag(_ name: String, short: Character? = nil, repeatable: Bool = false, hidden: Bool = false,
                            help: String) -> OperationArgument {
        OperationArgument(kind: .flag, name: name, short: short, valueName: nil, type: .bool, required: false,
                          defaultValue: nil, choices: [], repeatable: repeatable, hidden: hidden, remaining: false, help: help)
    }
}

/// One operation: a command the command line runs (a leaf of its command tree).
public struct Operation: Sendable {
    /// The command path (`["contacts", "remove"]`).
    public var path: [String]
    /// Other names of its last word (`favorite` for `favourite`).
    public var aliases: [String]
    /// Its permission class (see `OperationClass`); nil for a command that only runs on this host
    /// and that no door serves (`scan`, `config check`, `sim`).
    public var opClass: OperationClass?
    /// Its name in the daemon's local API (and MQTT commands): the command path joined with "_",
    /// dashes as "_" (`contacts_remove`, `factory_reset`); nil when the API does not serve it.
    public var api: String?
    /// Answered by the daemon itself (from its store or its own session) rather than run as a
    /// request (`Request(apiOp:fields:)`).
    public var daemon: Bool
    public var hidden: Bool
    /// One line: what it does.
    public var help: String
    /// More, after the line (exit codes, formats).
    public var discussion: String
    public var args: [OperationArgument]
    /// The fields of its `--json` result, where listed.
    public var results: [String]

    public var cli: String { path.joined(separator: " ") }

    public init(_ path: String, _ opClass: OperationClass?, api: String? = nil, daemon: Bool = false, aliases: [String] = [],
                hidden: Bool = false, help: String, discussion: String = "", args: [OperationArgument] = [], results: [String] = []) {
        self.path = path.split(separator: " ").map(String.init)
        self.opClass = opClass
        self.api = api
        self.daemon = daemon
        self.aliases = aliases
        self.hidden = hidden
        self.help = help
        self.discussion = discussion
        self.args = args
        self.results = results
    }

    /// The API name a command path has: its words joined with "_", dashes as "_".
    public static func apiName(_ path: [String]) -> String {
        String(path.joined(separator: "_").map { $0 == "-" ? "_" : $0 })
    }
}

/// A word of the command tree that only groups operations (`contacts`, `channel`).
public struct OperationGroup: Sendable {
    public var path: [String]
    public var help: String
    public var discussion: String
    /// The subcommand run when the group is given alone or with options only (`contacts` lists).
    public var defaultSubcommand: String?
    public var hidden: Bool

    public init(_ path: String, help: String, discussion: String = "", default d: String? = nil, hidden: Bool = false) {
        self.path = path.split(separator: " ").map(String.init)
        self.help = help
        self.discussion = discussion
        defaultSubcommand = d
        self.hidden = hidden
    }
}

public enum OperationTable {
    /// The root command's one-line description.
    public static let summary = "Talk to a MeshCore companion radio over USB serial, TCP or BLE."

    /// What `pocketmesh --help` says after the summary: the exit codes.
    public static let discussion = "Exit codes: 0 success, 2 usage error, 3 link failure (cannot open or connect, or the link was lost), 4 timeout (no response, no ACK), 5 the radio refused (its error code is named), 6 not found (unknown contact or channel; `scan` found no radio), 7 storage or system failure (the store, a file or a socket could not be read, written or opened; an internal error), 130 interrupted (Ctrl-C or SIGTERM)."

    /// The row of a command path, nil if it is no operation.
    public static func row(_ path: [String]) -> Operation? { byPath[path] }

    /// The row of an API op name.
    public static func row(api: String) -> Operation? { byAPI[api] }

    private static let byPath: [[String]: Operation] = Dictionary(uniqueKeysWithValues: rows.map { ($0.path, $0) })
    private static let byAPI: [String: Operation] = {
        var out: [String: Operation] = [:]
        for r in rows { if let a = r.api { out[a] = r } }
        return out
    }()

    /// The words that may follow `path` (groups and operations), in the order of the table's rows.
    public static func children(of path: [String]) -> [String] {
        var out: [String] = []
        for p in rows.map(\.path) where p.count > path.count && Array(p.prefix(path.count)) == path {
            if !out.contains(p[path.count]) { out.append(p[path.count]) }
        }
        return out
    }

    public static func group(_ path: [String]) -> OperationGroup? { groups.first { $0.path == path } }

    /// The groups of the command tree.
    public static let groups: [OperationGroup] = [
        OperationGroup("contacts", help: "List and manage contacts.", default: "list"),
        OperationGroup("channel", help: "List, set, remove and send to channels.", default: "list"),
        OperationGroup("time", help: "Read or set the radio's clock.", default: "get"),
        OperationGroup("key", help: "Export or import the radio's private key."),
        OperationGroup("daemon", help: "Own one radio: keep the link up, store every message, send the outbox, run hooks, serve the local API."),
        OperationGroup("hooks", help: "List, retry or drop the messages whose hook the daemon gave up on.",
                       discussion: "The daemon runs a message's hook up to 10 times (with backoff), then gives up on it, logs it and goes on with the other messages. These commands ask the running daemon (its socket API: hooks_failed, hooks_retry, hooks_drop)."),
        OperationGroup("config", help: "Show or check the config file (named radios, the default radio, daemon settings).",
                       discussion: "The file is $XDG_CONFIG_HOME/pocketmesh/config.toml (~/.config/pocketmesh/config.toml; POCKETMESH_CONFIG names another). A command without --serial, --tcp or --ble uses --radio NAME, else POCKETMESH_RADIO, else default_radio; `pocketmesh daemon --radio NAME` also takes the radio's daemon settings."),
    ]

    /// Every operation, in the order `pocketmesh --help` lists them.
    public static let rows: [Operation] = [
        Operation("info", .read, api: "info", daemon: true,
                  help: "Show the radio's identity, radio settings and firmware.",
                  args: OperationArgument.link),
        Operation("scan", nil,
                  help: "List candidate radios: USB serial devices, and with --ble, BLE advertisers named MeshCore-*.",
                  discussion: "USB serial devices come from udev (or sysfs when udev is unavailable) with their stable /dev/serial/by-id name, USB vendor:product ids and names; bridges that MeshCore boards use (CP210x, CH340, CH9102, ESP32-S3 native USB, nRF52840 ...) are named. --ble runs an active LE scan for --for seconds; it needs CAP_NET_RAW and CAP_NET_ADMIN (root, or setcap on the binary). Exit codes: 0 at least one candidate, 6 none found, 3 Bluetooth unavailable (with --ble).",
                  args: [
                      .flag("ble", help: "Also scan for BLE radios advertising as MeshCore-*."),
                      .option("for", value: "seconds", type: .number, default: "5.0", help: "Seconds the BLE scan lasts."),
                      .flag("all", help: "With --ble, list every advertiser, not only MeshCore-* ones."),
                      .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
                  ]),
        Operation("contacts list", .read, api: "contacts", daemon: true,
                  help: "List contacts.",
                  args: OperationArgument.link + [
                      .flag("geojson", help: "A GeoJSON FeatureCollection of the contacts that have a position (for geojson.io, QGIS, uMap)."),
                  ]),
        Operation("contacts show", .read, api: "contacts_show",
                  help: "Show one contact.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix (a whole 64-digit key also finds contacts the list leaves out)."),
                  ]),
        Operation("contacts add", .config, api: "contacts_add",
                  help: "Add or update a contact by public key.",
                  args: OperationArgument.link + [
                      .positional("public-key", help: "Public key, 64 hex digits."),
                      .positional("name", help: "Name (at most 31 bytes)."),
                      .option("type", value: "type", choices: ["chat", "repeater", "room", "sensor"], help: "chat, repeater, room or sensor (default: chat, or what the radio has for a known contact)."),
                      .option("path", value: "path", help: "Out path as hex hop hashes; empty: send flood (default: unknown, or the known contact's path)."),
                  ]),
        Operation("contacts remove", .config, api: "contacts_remove",
                  help: "Remove a contact.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts reset-path", .config, api: "contacts_reset_path",
                  help: "Forget a contact's path (next message floods).",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts reset-advert-time", .config, api: "contacts_reset_advert_time",
                  help: "Set a contact's last advert time to 0, so the radio takes its next advert whatever its timestamp (meshcore-cli's reset_advert_time).",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts share", .config, api: "contacts_share",
                  help: "Re-send a contact's advert zero-hop.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts export", .read, api: "contacts_export",
                  help: "Print a contact's advert as hex (no contact: this radio's own).",
                  args: OperationArgument.link + [
                      .positional("contact", optional: true, help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts import", .config, api: "contacts_import",
                  help: "Import a contact from a meshcore:// link (a card or contact/add) or an exported advert (hex).",
                  args: OperationArgument.link + [
                      .positional("advert", help: "meshcore://HEX, meshcore://contact/add?name=…&public_key=…&type=…, or the advert as hex."),
                  ]),
        Operation("contacts favourite", .config, api: "contacts_favourite", aliases: ["favorite"],
                  help: "Mark a contact a favourite (kept when the radio's table is full and auto-add overwrites), or not.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                      .positional("state", choices: ["on", "off"], help: "on or off."),
                  ]),
        Operation("contacts uri", .read, api: "contacts_uri",
                  help: "Print a contact's share links (meshcore://), as the phone apps make them.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts pending", .read, api: "contacts_pending", daemon: true,
                  help: "List the adverts of nodes that are not contacts (with manual-add on), as the daemon heard them.",
                  discussion: "Needs the radio's daemon (`pocketmesh daemon`): it collects them while nobody looks.",
                  args: OperationArgument.store + [
                      .flag("clear", help: "Forget every pending advert (meshcore-cli's flush_pending)."),
                  ]),
        Operation("contacts add-pending", .config, api: "contacts_add_pending", daemon: true,
                  help: "Add a pending node as a contact, with its advert's data (type, name, location, advert time, path).",
                  args: [
                      .positional("prefix", help: "Hex key prefix or name, from `contacts pending`."),
                  ] + OperationArgument.store),
        Operation("contacts path", .read, api: "contacts_path",
                  help: "Show a contact's stored path and the path of its last advert.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts discover-path", .config, api: "contacts_discover_path",
                  help: "Ask a contact for the paths to and from it.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                  ]),
        Operation("contacts set-path", .config, api: "contacts_set_path",
                  help: "Set a contact's path by hand: hex hop hashes (\"\" for a neighbour heard directly); reset-path forgets it.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                      .positional("path", help: "Hop hashes as hex (e.g. 5f33, or 5f,33), in the radio's path hash size."),
                  ]),
        Operation("contacts permissions", .config, api: "contacts_permissions",
                  help: "Set what the radio grants a contact (the whole set): telemetry (used when the telemetry modes are `flags`) and, on protocol 14 radios, remote CLI.",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Contact name or hex key prefix."),
                      .positional("grant", help: "Comma-separated: base, location, environment (all: the three), cli (remote CLI, protocol 14); or none."),
                  ]),
        Operation("contacts connected", .read, api: "contacts_connected",
                  help: "Whether the radio is logged in to a repeater or room (HAS_CONNECTION).",
                  args: OperationArgument.link + [
                      .positional("contact", help: "Node name or hex key prefix."),
                  ]),
        Operation("send", .message, api: "send", daemon: true,
                  help: "Send a direct message and wait for its ACK (retrying, then flooding).",
                  discussion: "Exit code 4 when no ACK arrived after every attempt.",
                  args: OperationArgument.link + [
                      .flag("no-wait", help: "Return once the radio took the message; do not wait for the ACK."),
                      .flag("split", help: "Send a text longer than one message (160 bytes) as numbered parts, \"(1/3) …\", cut at spaces."),
                      .option("ack-timeout", value: "seconds", type: .number, help: "Seconds to wait for each attempt's ACK (default: the radio's estimate for the path × 1.2)."),
                      .positional("to", help: "Contact name or hex key prefix."),
                      .positional("text", repeatable: true, help: "The text (at most 160 bytes, or any length with --split)."),
                  ]),
        Operation("channel list", .read, api: "channel_list",
                  help: "List the channels in use.",
                  args: OperationArgument.link),
        Operation("channel set", .config, api: "channel_set",
                  help: "Set a channel slot (a #name makes a hashtag channel).",
                  args: OperationArgument.link + [
                      .positional("index", type: .integer, help: "Slot index."),
                      .positional("name", help: "Channel name; #name derives the key from the name."),
                      .option("secret", value: "secret", help: "Secret, 32 hex digits."),
                      .flag("hashtag", help: "Hashtag channel: key = SHA-256(\"#name\")[0..16]."),
                  ]),
        Operation("channel add", .config, api: "channel_add",
                  help: "Add a channel in the first free slot (a #name is a hashtag channel; otherwise give --secret).",
                  args: OperationArgument.link + [
                      .positional("name", help: "Channel name."),
                      .option("secret", value: "secret", help: "Secret, 32 hex digits."),
                  ]),
        Operation("channel remove", .config, api: "channel_remove",
                  help: "Clear a channel slot.",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                  ]),
        Operation("channel send", .message, api: "channel_send", daemon: true,
                  help: "Send a text to a channel (no ACK).",
                  args: OperationArgument.link + [
                      .flag("split", help: "Send a text longer than one message as numbered parts, \"(1/3) …\", cut at spaces."),
                      .option("repeats-wait", value: "seconds", type: .number, default: "2.0", help: "How long to listen for repeaters re-sending the message (heard repeats); 0: do not."),
                      .positional("channel", help: "Slot index or channel name."),
                      .positional("text", repeatable: true, help: "The text."),
                  ]),
        Operation("channel uri", .read, api: "channel_uri",
                  help: "Print a channel's link: meshcore://channel/add?name=…&secret=….",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                  ]),
        Operation("channel import", .config, api: "channel_import",
                  help: "Add a channel from its meshcore://channel/add link (into the slot with its name, else the first free one).",
                  args: OperationArgument.link + [
                      .positional("uri", help: "meshcore://channel/add?name=…&secret=…."),
                  ]),
        Operation("channel rekey", .config,
                  help: "Give a channel a new random secret and send it to its members by direct message.",
                  discussion: "Every member is checked first (an unknown one changes nothing, exit 6). Then the slot gets the new secret and each member gets meshcore://channel/add?name=…&secret=… with the usual retries. Exit 4 when a member did not acknowledge (the channel has the new secret anyway: send them the link again with `pocketmesh send`).",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                      .option("members", value: "members", required: true, help: "Who gets the new secret: contact names or key prefixes, comma-separated."),
                  ]),
        Operation("channel data", .message, api: "channel_data",
                  help: "Send a datagram to a channel (SEND_CHANNEL_DATA): a 16-bit data type and hex data.",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Channel index or name."),
                      .positional("data-type", type: .integer, help: "Data type 1–65535 (65280–65535 for development)."),
                      .positional("data", help: "The data as hex."),
                  ]),
        Operation("sync", .message, api: "sync", daemon: true,
                  help: "Fetch and print the messages waiting in the radio.",
                  args: OperationArgument.link),
        Operation("listen", .message,
                  help: "Print messages and pushes as they arrive, until interrupted (or --for SECONDS).",
                  discussion: "With --json, one JSON object per line (JSON Lines) with an \"event\" field.",
                  args: OperationArgument.link + [
                      .option("for", value: "seconds", type: .number, help: "Stop after this many seconds."),
                      .flag("log-rx", help: "Also print every packet the radio hears (LOG_RX_DATA)."),
                  ]),
        Operation("advert", .config, api: "advert", daemon: true,
                  help: "Send this radio's advert (zero-hop, or flood).",
                  args: OperationArgument.link + [
                      .flag("flood", help: "Flood the advert through repeaters."),
                  ]),
        Operation("time get", .read, api: "time_get",
                  help: "Print the radio's clock (epoch seconds).",
                  args: OperationArgument.link),
        Operation("time sync", .config, api: "time_sync",
                  help: "Set the radio's clock from this host's.",
                  args: OperationArgument.link),
        Operation("time set", .config, api: "time_set",
                  help: "Set the radio's clock to EPOCH (seconds since 1970, UTC).",
                  args: OperationArgument.link + [
                      .positional("epoch", help: "Epoch seconds."),
                  ]),
        Operation("get", .read, api: "get",
                  help: "Print a device setting (all without a name).",
                  discussion: "Settings: name, coords (LAT LON), radio (FREQ_MHZ BW_KHZ SF CR [REPEAT]), tx (DBM), tuning (RX_DELAY AIRTIME_FACTOR), manual-add (on|off), telemetry (BASE LOC ENV: deny|flags|allow), advert-loc-policy (none|share|prefs), multi-acks, pin, auto-add (FLAGS [MAX_HOPS]; FLAGS as a number, 0x.. hex, or overwrite,chat,repeater,room,sensor), path-hash-mode (0-2), flood-scope (#REGION|none), custom (NAME VALUE); read-only: public-key, firmware, model, max-contacts, max-channels, client-repeat.",
                  args: OperationArgument.link + [
                      .positional("setting", optional: true, choices: Executor.settingNames, help: "Setting name."),
                  ]),
        Operation("set", .config, api: "set",
                  help: "Change a device setting.",
                  discussion: "Settings: name, coords (LAT LON), radio (FREQ_MHZ BW_KHZ SF CR [REPEAT]), tx (DBM), tuning (RX_DELAY AIRTIME_FACTOR), manual-add (on|off), telemetry (BASE LOC ENV: deny|flags|allow), advert-loc-policy (none|share|prefs), multi-acks, pin, auto-add (FLAGS [MAX_HOPS]; FLAGS as a number, 0x.. hex, or overwrite,chat,repeater,room,sensor), path-hash-mode (0-2), flood-scope (#REGION|none), custom (NAME VALUE); read-only: public-key, firmware, model, max-contacts, max-channels, client-repeat.",
                  args: OperationArgument.link + [
                      .positional("setting", choices: Executor.settingNames, help: "Setting name."),
                      .positional("values", optional: true, repeatable: true, help: "Value(s)."),
                  ]),
        Operation("battery", .read, api: "battery",
                  help: "Battery voltage and storage use.",
                  args: OperationArgument.link),
        Operation("stats", .read, api: "stats",
                  help: "Device statistics (core, radio, packets; all by default).",
                  args: OperationArgument.link + [
                      .positional("type", optional: true, choices: ["core", "radio", "packets"], help: "core, radio or packets."),
                  ]),
        Operation("login", .admin, api: "login",
                  help: "Log in to a repeater or room server.",
                  discussion: "A password that worked is saved (0600, by the node's key, never printed) and used when -p is not given; --no-save keeps it out, --forget removes it.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                      .option("password", short: "p", value: "password", help: "Password (empty: guest or known member; not given: the saved one, else empty)."),
                      .flag("no-save", help: "Do not save the password."),
                      .flag("forget", help: "Remove the saved password of this node (and do not log in)."),
                  ]),
        Operation("logout", .admin, api: "logout",
                  help: "Log out of a repeater or room server.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                      .flag("forget", help: "Also remove the node's saved password."),
                  ]),
        Operation("status", .read, api: "status",
                  help: "Ask a repeater or room server for its status.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                  ]),
        Operation("regions", .read, api: "regions",
                  help: "Ask a repeater which regions it lets floods through for (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", help: "Repeater name or hex key prefix."),
                  ]),
        Operation("owner", .read, api: "owner",
                  help: "Ask a repeater for its name and owner information (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", help: "Repeater name or hex key prefix."),
                  ]),
        Operation("clock", .read, api: "clock",
                  help: "Ask a repeater for its clock (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", help: "Repeater name or hex key prefix."),
                  ]),
        Operation("scope", .config, api: "scope",
                  help: "Scope this connection's floods to a region (#name), to none, or back to the radio's default.",
                  discussion: "The scope lasts as long as the connection to the radio: use it through a daemon (it holds the connection, so the daemon's and every client's floods are scoped until it reconnects), or `set flood-scope` for the radio's persistent default.",
                  args: OperationArgument.link + [
                      .positional("scope", help: "#region, none, or default."),
                  ]),
        Operation("telemetry", .read, api: "telemetry",
                  help: "Telemetry of a node (without a node: of this radio).",
                  args: OperationArgument.link + [
                      .positional("node", optional: true, help: "Node name or hex key prefix."),
                  ]),
        Operation("neighbours", .read, api: "neighbours", aliases: ["neighbors"],
                  help: "A repeater's neighbour table.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                  ]),
        Operation("acl", .read, api: "acl",
                  help: "A server's access control list (admin).",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                  ]),
        Operation("cmd", .admin, api: "cmd",
                  help: "Run a CLI command on a repeater (admin), or on a companion (protocol 14, with its remote CLI permission), and print its reply.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                      .positional("command", repeatable: true, help: "The command, e.g. ver."),
                  ]),
        Operation("trace", .read, api: "trace",
                  help: "Trace a route of repeaters and print the SNR of each hop.",
                  args: OperationArgument.link + [
                      .positional("path", help: "Comma-separated hop hashes in hex, out and back, e.g. 5f,33,5f."),
                  ]),
        Operation("sign", .secret, api: "sign",
                  help: "Sign data (hex) with the radio's private key.",
                  args: OperationArgument.link + [
                      .positional("data", help: "Data as hex (at most 8192 bytes)."),
                  ]),
        Operation("key export", .secret, api: "key_export",
                  help: "Print the private key as hex.",
                  args: OperationArgument.link),
        Operation("key import", .secret, api: "key_import",
                  help: "Replace the private key (128 hex digits).",
                  args: OperationArgument.link + [
                      .positional("key", help: "The 64-byte private key as hex."),
                  ]),
        Operation("reboot", .admin, api: "reboot",
                  help: "Reboot the radio.",
                  args: OperationArgument.link),
        Operation("factory-reset", .admin, api: "factory_reset",
                  help: "Erase the radio (identity, contacts, channels).",
                  args: OperationArgument.link + [
                      .flag("yes-erase-everything", help: "Required: confirms that everything on the radio is erased."),
                  ]),
        Operation("raw", .admin, api: "raw",
                  help: "Send one frame (hex) and print the reply frame (hex).",
                  args: OperationArgument.link + [
                      .positional("frame", help: "The frame payload as hex, e.g. 1603."),
                  ]),
        Operation("raw-data", .admin, api: "raw_data",
                  help: "Send a RAW_CUSTOM payload direct along a path (SEND_RAW_DATA).",
                  args: OperationArgument.link + [
                      .positional("path", help: "The path: hex hop hashes (\"\" for zero hops)."),
                      .positional("data", help: "The payload as hex (at least 4 bytes)."),
                  ]),
        Operation("raw-packet", .admin, api: "raw_packet",
                  help: "Transmit a whole on-air packet (SEND_RAW_PACKET); it is checked to be a MeshCore packet first.",
                  args: OperationArgument.link + [
                      .positional("packet", help: "The packet as hex."),
                      .option("priority", value: "priority", type: .integer, default: "0", help: "Transmit priority (0 highest)."),
                  ]),
        Operation("discover", .config, api: "discover",
                  help: "Find nearby nodes: a zero-hop discovery request, and who answered with their SNR.",
                  discussion: "Repeaters answer a discovery request (CONTROL DISCOVER_REQ) heard directly, after a short random delay and at most 4 times in 2 minutes. Listed: name (when a contact), key, type, the SNR and RSSI of the answer here, and the SNR the node heard the request with. Exit 6 when none answered.",
                  args: OperationArgument.link + [
                      .option("for", value: "seconds", type: .number, default: "8.0", help: "Seconds to listen for answers."),
                      .option("type", value: "types", default: "all", help: "Node types to ask: comma-separated repeater, room, chat, sensor, or all."),
                  ]),
        Operation("request", .admin, api: "request",
                  help: "Send a binary request (SEND_BINARY_REQ) to a node and print its reply as hex.",
                  discussion: "The first byte is the request type: 01 status, 03 telemetry, 04 min/max/avg, 05 access list, 06 neighbours.",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                      .positional("data", help: "The request as hex, its type byte first."),
                  ]),
        Operation("mma", .read, api: "mma",
                  help: "Min/max/avg of a sensor's readings over a time window (binary request 04).",
                  args: OperationArgument.link + [
                      .positional("node", help: "Node name or hex key prefix."),
                      .option("from", value: "seconds", type: .integer, default: "3600", help: "Start of the window, seconds ago."),
                      .option("to", value: "seconds", type: .integer, default: "0", help: "End of the window, seconds ago."),
                  ]),
        Operation("cli", .admin, api: "cli",
                  help: "Run a command on the radio's own CLI (RUN_CLI_COMMAND; needs companion protocol 14 firmware).",
                  args: OperationArgument.link + [
                      .positional("command", repeatable: true, help: "The command."),
                  ]),
        Operation("chat", .message,
                  help: "Chat interactively in the terminal (conversations, delivery states, repeater commands).",
                  discussion: "Opens NAME (a contact, room, repeater or channel) or the most recent conversation. Type to send; /to NAME switches (Tab completes names), /list shows the conversations, /login, /logout, /status and /cmd talk to repeaters and rooms, /help lists the commands; Page Up/Down scroll back; Ctrl-D, Ctrl-C or /quit leave. Works directly or through a running daemon, and reconnects when the radio or the daemon comes back.",
                  args: OperationArgument.link + [
                      .positional("name", optional: true, help: "The conversation to open: a contact, room or channel name, or a key prefix."),
                      .option("state-dir", value: "dir", help: "State folder for the message history (default $XDG_STATE_HOME/pocketmesh)."),
                  ]),
        Operation("daemon", nil,
                  help: "Own one radio: keep the link up, store every message, send the outbox, run hooks, serve the local API.",
                  discussion: "Runs in the foreground and logs one line per step to stderr. Every message drained from the radio is appended to the store (fsync) before the next one is requested. While it runs, other pocketmesh commands for the same radio go through its socket.\n\nAPI: newline-delimited JSON on a Unix socket (default $XDG_RUNTIME_DIR/pocketmesh/NAME.sock, mode 0600), e.g. {\"id\":1,\"op\":\"send\",\"to\":\"alice\",\"text\":\"hi\"}; {\"op\":\"subscribe\"} streams events.\n\nHook: --on-message CMD runs CMD (split into words, no shell) once per received message, with the message as JSON on stdin and POCKETMESH_ID, POCKETMESH_KIND, POCKETMESH_FROM, POCKETMESH_TEXT, POCKETMESH_CHANNEL, POCKETMESH_TIMESTAMP, ... in the environment. Exit 0 marks it delivered; anything else is retried with backoff. Delivery survives restarts.\n\nsystemd: with NOTIFY_SOCKET set it sends READY=1 after the first handshake and sync, STATUS= lines, and WATCHDOG=1 at half of WatchdogSec. See contrib/pocketmesh.service.",
                  args: [
                      .option("serial", short: "s", value: "path", help: "USB serial device of the radio (auto: the only one plugged in)."),
                      .option("baud", value: "n", type: .integer, default: "115200", help: "Serial speed (USB-UART bridges; native USB ignores it)."),
                      .option("tcp", short: "t", value: "host[:port]", help: "TCP companion radio (default port 5000)."),
                      .option("ble", value: "address", help: "BLE address of the radio (AA:BB:CC:DD:EE:FF, or .../random); pair it first with bluetoothctl."),
                      .option("ble-min-mtu", value: "bytes", type: .integer, default: "179", help: "Smallest BLE ATT MTU to accept (default 179: any 176-byte frame fits). ESP32 radios offer 176; with 176, received frames over 173 bytes (the longest messages) may be cut short."),
                      .option("state-dir", value: "dir", help: "State folder (default $XDG_STATE_HOME/pocketmesh)."),
                      .option("socket", value: "path", help: "API socket path (default $XDG_RUNTIME_DIR/pocketmesh/NAME.sock)."),
                      .option("name", value: "name", help: "Name of this daemon's socket and registry entry (default: from the link)."),
                      .option("on-message", value: "cmd", help: "Program to run for each received message (no shell; words split like a shell would, without expansion)."),
                      .option("hook-concurrency", value: "n", type: .integer, default: "2", help: "Hooks running at once."),
                      .option("hook-timeout", value: "seconds", type: .number, default: "30.0", help: "Seconds a hook may run before SIGTERM (then SIGKILL)."),
                      .option("hook-attempts", value: "n", type: .integer, default: "10", help: "Runs of a message's hook before it is given up (see `pocketmesh hooks`)."),
                      .flag("hooks-from-start", help: "A hook with no delivery cursor in the store (new, or its cursor lost) gets every stored message, oldest first (default: it starts after the newest, and the log says so)."),
                      .option("drain-interval", value: "seconds", type: .number, default: "60.0", help: "Seconds between safety-net drains of the radio's queue."),
                      .option("timeout", value: "seconds", type: .number, default: "5.0", help: "Seconds to wait for each radio response."),
                      .option("companion-listen", value: "host:port[,opts]", repeatable: true, help: "Serve the companion protocol (WiFi framing) to apps on this address; repeatable. Its clients may use the operation classes read, message and config; options after commas: read-only (read only), allow=CLASS+CLASS (adds admin, secret, ...), app=NAME (every client on it is app NAME, with its own message cursor: one listener per meshcore_py-based app, which all send the name mccli)."),
                      .option("companion-ws", value: "host:port[,opts]", repeatable: true, help: "Serve the companion protocol over WebSocket on this address (one binary message per frame, '<'/'>' header included), for browser apps; repeatable; the same options as --companion-listen, and origin=URL (repeatable or '+'-separated): a web page origin allowed to connect (a browser page from any other origin gets HTTP 403; clients that send no Origin are accepted)."),
                      .option("companion-max-clients", value: "n", type: .integer, default: "8", help: "Companion hub clients connected at once; a new one beyond this evicts the client idle the longest."),
                      .option("companion-idle-timeout", value: "seconds", type: .integer, default: "900", help: "Disconnect a companion hub client that sends nothing for this many seconds (1 to 86400)."),
                      .option("low-battery", value: "mv", type: .integer, help: "Publish a low_battery event (API subscribers) when the radio's battery reads below this many millivolts, and battery_ok when it is 50 mV above again."),
                      .option("battery-every", value: "seconds", type: .number, default: "300.0", help: "Seconds between battery readings for --low-battery."),
                      .option("mqtt", value: "url", repeatable: true, help: "Bridge messages, adverts, deliveries and commands to this MQTT broker (mqtt://, mqtts:// (TLS), ws:// or wss:// (WebSocket, path /mqtt by default), [USER@]HOST[:PORT]); repeatable."),
                      .option("mqtt-prefix", value: "prefix", default: "meshcore", help: "Topic prefix of the MQTT bridge. Commands on PREFIX/command/OP reach every radio bridged with this prefix, PREFIX/radio/KEY/command/OP (KEY: 12 hex of the radio's key) this radio only."),
                      .option("mqtt-user", value: "user", help: "User name for the MQTT brokers (or mqtt://USER@HOST)."),
                      .option("mqtt-password-file", value: "file", help: "File holding the MQTT password (first line; mode 0600). Never the password itself."),
                      .option("mqtt-allow", value: "classes", help: "Operation classes MQTT commands may use besides read and message: config, admin (comma-separated); secret is never allowed over MQTT."),
                      .option("mqtt-ca-file", value: "file", help: "CA certificates (PEM) that mqtts:// and wss:// brokers must chain to (default: the system's CA bundle)."),
                      .option("mqtt-observer", value: "url", repeatable: true, help: "Upload every packet the radio hears to this MQTT broker in the observer networks' format (meshcore/IATA/KEY/packets, retained status); repeatable."),
                      .option("mqtt-iata", value: "code", help: "Region (airport code, e.g. SEA) of the observer topics."),
                      .option("mqtt-observer-key", value: "file", help: "The node's private key (hex, as `pocketmesh key export` prints; mode 0600): sign in to the observer brokers as v1_KEY with a JWT."),
                      .option("mqtt-observer-password-file", value: "file", help: "File holding the observer broker's password, for the user in its URL (mode 0600)."),
                      .option("mqtt-observer-audience", value: "name", help: "The JWT's audience (default: the broker's host name)."),
                  ]),
        Operation("daemon hook-exec", nil, hidden: true,
                  help: "Run one hook under its delivery marker (internal).",
                  args: [
                      .option("timeout-ms", value: "timeout-ms", default: "30000", help: ""),
                      .option("grace-ms", value: "grace-ms", default: "3000", help: ""),
                      .option("output-limit", value: "output-limit", type: .integer, default: "4096", help: ""),
                      .positional("marker", help: ""),
                      .positional("command", optional: true, repeatable: true, remaining: true, help: ""),
                  ]),
        Operation("daemon op-exec", nil, hidden: true,
                  help: "Run one API operation (internal).",
                  args: [
                      .option("api-socket", value: "api-socket", required: true, help: "The daemon's socket."),
                      .option("response-timeout", value: "response-timeout", type: .number, default: "5.0", help: "Seconds to wait for each response."),
                  ]),
        Operation("hooks failed", .read, api: "hooks_failed", daemon: true,
                  help: "List the messages whose hook was given up.",
                  args: OperationArgument.store),
        Operation("hooks retry", .config, api: "hooks_retry", daemon: true,
                  help: "Run a given-up message's hook again.",
                  args: [
                      .positional("id", help: "The message id (from `pocketmesh hooks failed`)."),
                  ] + OperationArgument.store),
        Operation("hooks drop", .config, api: "hooks_drop", daemon: true,
                  help: "Forget a given-up message (its hook does not run again).",
                  args: [
                      .positional("id", help: "The message id (from `pocketmesh hooks failed`)."),
                  ] + OperationArgument.store),
        Operation("chats", .message, api: "chats", daemon: true,
                  help: "List conversations from the store, newest first (read-only).",
                  args: [
                      .option("state-dir", value: "dir", help: "State folder (default $XDG_STATE_HOME/pocketmesh)."),
                      .option("radio", value: "key", help: "The radio: a public key prefix (hex) of a stored radio."),
                      .option("serial", short: "s", value: "path", help: "The radio last seen on this serial device."),
                      .option("tcp", short: "t", value: "host[:port]", help: "The radio last seen at this TCP address."),
                      .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
                  ]),
        Operation("history", .message, api: "history", daemon: true,
                  help: "Show a conversation from the store, oldest first (read-only).",
                  args: [
                      .positional("thread", help: "A contact or room name, a channel name or number, or a key prefix."),
                      .option("limit", value: "limit", type: .integer, default: "50", help: "How many messages."),
                      .option("before", value: "id", help: "Only messages with an id below this (page backwards)."),
                      .option("state-dir", value: "dir", help: "State folder (default $XDG_STATE_HOME/pocketmesh)."),
                      .option("radio", value: "key", help: "The radio: a public key prefix (hex) of a stored radio."),
                      .option("serial", short: "s", value: "path", help: "The radio last seen on this serial device."),
                      .option("tcp", short: "t", value: "host[:port]", help: "The radio last seen at this TCP address."),
                      .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
                  ]),
        Operation("config path", nil,
                  help: "Print where the config file is (it may not exist)."),
        Operation("config show", nil,
                  help: "Print the radios and settings the config file gives.",
                  args: [
                      .flag("json", short: "j", help: "JSON output."),
                  ]),
        Operation("config check", nil,
                  help: "Check the config file; errors name the line."),
        Operation("ops", nil,
                  help: "Print the operation table: every command with its API op name, permission class and arguments.",
                  discussion: "With --json, one object per operation: cli (the command path), api (the local API's op name, null when the API does not serve it), class (read, message, config, admin or secret; null for commands that only run on this host), daemon (answered by the daemon itself), help, and args (name, kind positional/option/flag, type, required, default, choices, repeatable, help).",
                  args: [
                      .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
                  ]),
        Operation("completions", nil,
                  help: "Print a shell completion script for bash, zsh or fish.",
                  discussion: "bash: source <(pocketmesh completions bash); zsh: pocketmesh completions zsh > \"${fpath[1]}/_pocketmesh\"; fish: pocketmesh completions fish > ~/.config/fish/completions/pocketmesh.fish.",
                  args: [
                      .positional("shell", choices: ["bash", "zsh", "fish"], help: "bash, zsh or fish."),
                  ]),
        Operation("demo", nil,
                  help: "Run a small simulated mesh in virtual time and show what happens on it.",
                  discussion: "Two companion radios (alice, bob) three repeater hops apart, with a second branch between them, and a room server. Both radios are driven by the same session code the CLI uses, over the real companion protocol; the mesh uses the real on-air format and crypto. Every line is something that happened in the simulation.",
                  args: [
                      .option("seed", value: "seed", default: "7", help: "Seed: the same seed gives the same run."),
                      .flag("packets", help: "Also print every packet put on the air."),
                  ]),
        Operation("sim", nil,
                  help: "Run a simulated MeshCore mesh and serve each companion node over TCP (and a pty).",
                  discussion: "Companion nodes speak the real companion protocol with the real on-air format and crypto, so any client (pocketmesh, meshcore-cli, meshcore_py) can connect to them. Node i listens on 127.0.0.1:(tcp-base + i); one client per node, a new connection evicts the old one. At start one line per companion node is printed:\n  node NAME pubkey=HEX tcp=127.0.0.1:PORT [pty=PATH]\nfollowed by one line per repeater and room server.",
                  args: [
                      .option("nodes", value: "nodes", type: .integer, default: "2", help: "Number of companion nodes (sim0, sim1, ...)."),
                      .option("repeaters", value: "repeaters", type: .integer, default: "0", help: "Number of repeaters (rpt0, ...)."),
                      .option("rooms", value: "rooms", type: .integer, default: "0", help: "Number of room servers (room0, ...)."),
                      .option("topology", value: "topology", default: "line", help: "line, star, grid, or a JSON topology file (see the README)."),
                      .option("seed", value: "seed", default: "1", help: "Seed for identities and every random choice."),
                      .option("tcp-base", value: "tcp-base", type: .integer, default: "5001", help: "TCP port of the first companion node (node i uses base + i)."),
                      .option("pty", value: "pty", help: "Also serve each companion on a pseudo-terminal, linked as DIR/NAME."),
                      .option("capture", value: "capture", help: "Write every transmitted on-air packet to FILE, one hex line each."),
                      .option("for", value: "for", type: .number, help: "Stop after this many seconds (default: run until interrupted)."),
                      .option("password", value: "password", default: "password", help: "Admin password of repeaters and room servers."),
                      .option("guest-password", value: "guest-password", default: "hello", help: "Guest password of repeaters and room servers."),
                      .option("loss", value: "loss", type: .number, default: "0.0", help: "Loss probability (0...1) of every link of a built-in topology."),
                      .option("snr", value: "snr", type: .number, default: "8.0", help: "SNR in dB of every link of a built-in topology."),
                      .option("offline-queue", value: "offline-queue", type: .integer, default: "16", help: "Offline message queue size of each companion."),
                      .option("max-contacts", value: "max-contacts", type: .integer, default: "100", help: "Contact table size of each companion."),
                      .option("protocol", value: "version", type: .integer, default: "13", help: "Companion protocol version of the simulated radios: 13 (firmware v1.17.1) or 14 (the firmware's dev line: RUN_CLI_COMMAND, CLI commands to companions, remote CLI permission)."),
                      .flag("collisions", help: "Simulate collisions (half-duplex radios, overlapping receptions destroy each other)."),
                      .option("air-port", value: "port", type: .integer, help: "Serve the air on 127.0.0.1:PORT for the topology's external nodes (other implementations; see the README)."),
                  ]),
        Operation("sim-bench", nil, hidden: true,
                  help: "Simulator scale benchmark (virtual time).",
                  args: [
                      .option("nodes", value: "nodes", type: .integer, default: "100", help: "Total nodes (repeaters in a grid plus companions)."),
                      .option("companions", value: "companions", type: .integer, default: "20", help: "How many of the nodes are companions."),
                      .option("seconds", value: "seconds", type: .number, default: "3600", help: "Virtual seconds to simulate."),
                      .option("messages", value: "messages", type: .integer, default: "1000", help: "Direct messages to send between random companions."),
                      .option("seed", value: "seed", default: "1", help: "Seed."),
                      .option("protocol", value: "version", type: .integer, default: "13", help: "Companion protocol version of the simulated radios: 13 (firmware v1.17.1) or 14 (the firmware's dev line: RUN_CLI_COMMAND, CLI commands to companions, remote CLI permission)."),
                      .flag("collisions", help: "Simulate collisions."),
                  ]),
        Operation("help", nil,
                  help: "Show subcommand help information.",
                  args: [
                      .positional("subcommands", optional: true, repeatable: true, help: ""),
                  ]),
    ]
}

extension OperationArgument {
    /// How a command reaches the radio (or its daemon), and --json: the options of every command that talks to a radio.
    public static let link: [OperationArgument] = [
        .option("serial", short: "s", value: "path", help: "USB serial device of the radio (auto: the only one plugged in)."),
        .option("baud", value: "n", type: .integer, default: "115200", help: "Serial speed (USB-UART bridges; native USB ignores it)."),
        .option("tcp", short: "t", value: "host[:port]", help: "TCP companion radio (default port 5000)."),
        .option("ble", value: "address", help: "BLE address of the radio (AA:BB:CC:DD:EE:FF, or .../random); pair it first with bluetoothctl."),
        .option("ble-min-mtu", value: "bytes", type: .integer, default: "179", help: "Smallest BLE ATT MTU to accept (default 179: any 176-byte frame fits). ESP32 radios offer 176; with 176, received frames over 173 bytes (the longest messages) may be cut short."),
        .option("timeout", value: "seconds", type: .number, default: "5.0", help: "Seconds to wait for each response (and to connect)."),
        .flag("json", short: "j", help: "Stable machine-readable output (JSON; JSON Lines for listen)."),
    ]

    /// How a command that reads the daemon's store finds it.
    public static let store: [OperationArgument] = [
        .option("serial", short: "s", value: "path", help: "The daemon that owns this serial device."),
        .option("tcp", short: "t", value: "host[:port]", help: "The daemon that owns this TCP radio."),
        .option("ble", value: "address", help: "The daemon that owns this BLE radio."),
        .option("radio", value: "key|name", help: "The daemon of this radio (public key prefix) or daemon name."),
        .option("socket", value: "path", help: "The daemon's API socket."),
        .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
    ]
}
