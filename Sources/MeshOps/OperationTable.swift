import MeshSession

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
    /// Values it takes too that are not offered (`completions radios`, for the scripts).
    public var hiddenChoices: [String] = []
    /// Given more than once (an option), or taking every remaining value (a positional).
    public var repeatable: Bool
    /// Not shown in help (internal or deprecated).
    public var hidden: Bool
    /// Takes every argument after it as they are (the internal `daemon hook-exec`).
    public var remaining: Bool
    public var help: String
    /// Its field names in the local API (and MQTT commands) when they are not its name with dashes
    /// as "_": the first is the one `ops --json` shows (`name` for a command's `<contact>`), any
    /// others are accepted too (`set` takes `values`, or one `value`).
    public var apiNames: [String]
    /// The API's default where it is not the command line's (`channel_send` waits for no repeats).
    public var apiDefault: String?
    /// Only the command line has it (what the command does around its request: `login --no-save`).
    public var commandLineOnly: Bool
    /// The API requires it though the command line does not: the command line has a fallback the
    /// API has not (`login`'s `password`: the command line's saved one).
    public var apiRequired: Bool
    /// The values an `integer` or `number` takes (both doors check it, with one message:
    /// "<data-type> must be 1 to 65535, not 70000.").
    public var range: ClosedRange<Double>?

    public init(kind: Kind, name: String, short: Character?, valueName: String?, type: ValueType, required: Bool,
                defaultValue: String?, choices: [String], repeatable: Bool, hidden: Bool, remaining: Bool, help: String,
                apiNames: [String] = [], apiDefault: String? = nil, commandLineOnly: Bool = false, apiRequired: Bool = false, range: ClosedRange<Double>? = nil) {
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
        self.apiNames = apiNames
        self.apiDefault = apiDefault
        self.commandLineOnly = commandLineOnly
        self.apiRequired = apiRequired
        self.range = range
    }

    /// Its field name in the local API: `public_key` for `<public-key>`, unless the row names another.
    public var apiField: String { apiNames.first ?? String(name.map { $0 == "-" ? "_" : $0 }) }

    /// Whether an API field names it.
    public func isNamed(apiField field: String) -> Bool { apiNames.isEmpty ? field == apiField : apiNames.contains(field) }

    /// The spelling on the command line: `--serial`, `<contact>`.
    public var display: String { kind == .positional ? "<\(name)>" : "--\(name)" }

    // The table's rows call these a few hundred times: not inlined, each call is a few bytes, not
    // the whole argument built in place (the rows' initialiser was 100 KB of the binary).
    @inline(never)
    public static func positional(_ name: String, type: ValueType = .string, optional: Bool = false, choices: [String] = [],
                                  hiddenChoices: [String] = [],
                                  default value: String? = nil, repeatable: Bool = false, hidden: Bool = false,
                                  remaining: Bool = false, api: [String] = [], range: ClosedRange<Double>? = nil,
                                  help: String) -> OperationArgument {
        var a = OperationArgument(kind: .positional, name: name, short: nil, valueName: name, type: type, required: !optional && value == nil,
                                  defaultValue: value, choices: choices, repeatable: repeatable, hidden: hidden, remaining: remaining, help: help,
                                  apiNames: api, range: range)
        a.hiddenChoices = hiddenChoices
        return a
    }

    @inline(never)
    public static func option(_ name: String, short: Character? = nil, value valueName: String, type: ValueType = .string,
                              required: Bool = false, choices: [String] = [], default value: String? = nil,
                              repeatable: Bool = false, hidden: Bool = false, api: [String] = [], apiDefault: String? = nil,
                              commandLineOnly: Bool = false, apiRequired: Bool = false, range: ClosedRange<Double>? = nil,
                              help: String) -> OperationArgument {
        OperationArgument(kind: .option, name: name, short: short, valueName: valueName, type: type, required: required,
                          defaultValue: value, choices: choices, repeatable: repeatable, hidden: hidden, remaining: false, help: help,
                          apiNames: api, apiDefault: apiDefault, commandLineOnly: commandLineOnly, apiRequired: apiRequired, range: range)
    }

    @inline(never)
    public static func flag(_ name: String, short: Character? = nil, repeatable: Bool = false, hidden: Bool = false,
                            commandLineOnly: Bool = false, help: String) -> OperationArgument {
        OperationArgument(kind: .flag, name: name, short: short, valueName: nil, type: .bool, required: false,
                          defaultValue: nil, choices: [], repeatable: repeatable, hidden: hidden, remaining: false, help: help,
                          commandLineOnly: commandLineOnly)
    }
}

/// What an operation's row points at: its request from its arguments' values.
/// (Untyped throws: closures infer no thrown type in Swift 6.0; it throws `ClientError` only.)
public typealias RequestMaker = @Sendable (OperationValues) throws -> Request

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
    /// Fields only the API takes, not arguments of the command (`send`'s `wait`: the daemon
    /// answers once the message is acknowledged).
    public var apiOnly: [OperationArgument]
    /// What it prints with `--json` (`ResultShape.swift`; the shapes are in OperationResults.swift).
    public var result: OperationResult
    /// Its handler, for an operation that runs as a request: the request its arguments' values
    /// make (both doors call it, `Request(_:)`); `Executor.execute` runs it.
    public var request: RequestMaker?

    public var cli: String { path.joined(separator: " ") }

    /// The arguments an API request gives as fields: all but how the command line reaches the
    /// radio or its store (`OperationArgument.link`, `.store`, `.storeFolder`), which the daemon
    /// holds, and what only the command line does; then the fields only the API takes.
    public var apiArguments: [OperationArgument] {
        args.filter {
            !$0.commandLineOnly && !OperationArgument.link.contains($0) && !OperationArgument.store.contains($0)
                && !OperationArgument.storeFolder.contains($0)
        } + apiOnly
    }

    @inline(never)
    public init(_ path: String, _ opClass: OperationClass?, api: APIName = .none, daemon: Bool = false, aliases: [String] = [],
                hidden: Bool = false, result: OperationResult = .none, help: String, discussion: String = "",
                args: [OperationArgument] = [], apiOnly: [OperationArgument] = [], request: RequestMaker? = nil) {
        self.path = path.split(separator: " ").map(String.init)
        self.opClass = opClass
        switch api {
        case .none: self.api = nil
        case .path: self.api = Operation.apiName(self.path)
        case .named(let name): self.api = name
        }
        self.daemon = daemon
        self.aliases = aliases
        self.hidden = hidden
        self.help = help
        self.discussion = discussion
        self.args = args
        self.apiOnly = apiOnly
        self.result = result
        self.request = request
    }

    /// A row's API name: none (the API does not serve it), its path's (`apiName(_:)`, the rule),
    /// or another (`contacts list` is `contacts`; the API's own ops).
    public enum APIName: Sendable, ExpressibleByStringLiteral {
        case none, path, named(String)
        public init(stringLiteral name: String) { self = .named(name) }
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

    /// The row of an op the daemon answers itself: an op of the API alone (`apiOnly`; the
    /// daemon's `status` rather than a node's), else a row marked `daemon`.
    public static func daemonRow(api: String) -> Operation? {
        apiOnly.first { $0.api == api } ?? byAPI[api].flatMap { $0.daemon ? $0 : nil }
    }

    /// The ops of the daemon's local API that no command runs, each with its class and fields
    /// (no command path). The daemon answers them itself.
    public static let apiOnly: [Operation] = [
        Operation("", .read, api: "ping", daemon: true, help: "The daemon's process id, version and state."),
        Operation("", .read, api: "status", daemon: true,
                  help: "The daemon's state: link, radio, store, outbox, hooks, MQTT and hub (`status` with a \"name\" is a node's)."),
        Operation("", .read, api: "channels", daemon: true, help: "The channels in the daemon's store."),
        Operation("", .message, api: "outbox", daemon: true, help: "The messages waiting in the outbox."),
        Operation("", .config, api: "contacts_flush_pending", daemon: true,
                  help: "Forget every pending advert (`contacts pending --clear`)."),
        Operation("", .message, api: "subscribe", daemon: true, help: "Stream events (messages, deliveries, pushes) to this connection.",
                  apiOnly: [.flag("log-rx", help: "Also every received packet (LOG_RX_DATA).")]),
        Operation("", .read, api: "tunnel", daemon: true, help: "Carry companion frames over this connection (the API socket only)."),
    ]

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
        OperationGroup("samples", help: "Show the signal and battery samples the daemon keeps (for plots)."),
        OperationGroup("node", help: "Run this host as a MeshCore node on a radio, or run its admin CLI.", default: "run"),
        OperationGroup("config", help: "Show or check the config file (named radios, the default radio, daemon settings).",
                       discussion: "The file is $XDG_CONFIG_HOME/pocketmesh/config.toml (~/.config/pocketmesh/config.toml; POCKETMESH_CONFIG names another). A command without --serial, --tcp or --ble uses --radio NAME, else POCKETMESH_RADIO, else default_radio; `pocketmesh daemon --radio NAME` also takes the radio's daemon settings."),
    ]

}

extension OperationArgument {
    /// How a command reaches the radio (or its daemon), and --json: the options of every command that talks to a radio.
    public static let link: [OperationArgument] = [
        .option("serial", short: "s", value: "path", help: "USB serial device of the radio (auto: the only one plugged in)."),
        .option("baud", value: "n", type: .integer, default: "115200", range: 1...(.infinity), help: "Serial speed (USB-UART bridges; native USB ignores it)."),
        .option("tcp", short: "t", value: "host[:port]", help: "TCP companion radio (default port 5000)."),
        .option("ble", value: "address", help: "BLE address of the radio (AA:BB:CC:DD:EE:FF, or .../random); pair it first with bluetoothctl."),
        .option("ble-min-mtu", value: "bytes", type: .integer, default: "179", range: 23...517, help: "Smallest BLE ATT MTU to accept (default 179: any 176-byte frame fits). ESP32 radios offer 176; with 176, received frames over 173 bytes (the longest messages) may be cut short."),
        .option("timeout", value: "seconds", type: .number, default: "5.0", range: 0.001...86_400, help: "Seconds to wait for each response (and to connect)."),
        .flag("json", short: "j", help: "Stable machine-readable output (JSON; JSON Lines for listen)."),
    ]

    /// How a command that reads a radio's store (with or without its daemon) finds it.
    public static let storeFolder: [OperationArgument] = [
        .option("state-dir", value: "dir", help: "State folder (default $XDG_STATE_HOME/pocketmesh)."),
        .option("radio", value: "key", help: "The radio: a public key prefix (hex) of a stored radio."),
        .option("serial", short: "s", value: "path", help: "The radio last seen on this serial device."),
        .option("tcp", short: "t", value: "host[:port]", help: "The radio last seen at this TCP address."),
        .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
    ]

    /// Which samples `samples signal` and `samples battery` show.
    public static let sampleRange: [OperationArgument] = [
        .option("since", value: "epoch", type: .integer, range: 0...4_294_967_295, help: "Only samples taken at or after this time (epoch seconds)."),
        .option("limit", value: "limit", type: .integer, default: "1000", range: 1...4096, help: "At most this many, the newest."),
    ]

    /// How a command that asks the daemon finds it.
    public static let store: [OperationArgument] = [
        .option("serial", short: "s", value: "path", help: "The daemon that owns this serial device."),
        .option("tcp", short: "t", value: "host[:port]", help: "The daemon that owns this TCP radio."),
        .option("ble", value: "address", help: "The daemon that owns this BLE radio."),
        .option("radio", value: "key|name", help: "The daemon of this radio (public key prefix) or daemon name."),
        .option("socket", value: "path", help: "The daemon's API socket."),
        .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
    ]
}
