import MeshSession

// The operation table's rows of the operations on a radio (its companion protocol, directly or
// through the daemon), in the order `pocketmesh --help` lists them: the first part of
// `OperationTable.rows` (OperationRows.swift, which has the rest: the daemon, the store, this
// host's own commands).

extension OperationTable {
    /// The radio's operations, in the order `pocketmesh --help` lists them.
    static let radioRows: [Operation] = [
        Operation("info", .read, api: .path, daemon: .info, result: .json(.info),
                  help: "Show the radio's identity, radio settings and firmware.",
                  args: OperationArgument.link) { _ in .info },
        Operation("scan", nil, result: .json(.scan),
                  help: "List candidate radios: USB serial devices, and with --ble, BLE advertisers named MeshCore-*.",
                  discussion: "USB serial devices come from udev (or sysfs when udev is unavailable) with their stable /dev/serial/by-id name, USB vendor:product ids and names; bridges that MeshCore boards use (CP210x, CH340, CH9102, ESP32-S3 native USB, nRF52840 ...) are named. --ble runs an active LE scan for --for seconds; it needs CAP_NET_RAW and CAP_NET_ADMIN (root, or setcap on the binary). Exit codes: 0 at least one candidate, 6 none found, 3 Bluetooth unavailable (with --ble).",
                  args: [
                      .flag("ble", help: "Also scan for BLE radios advertising as MeshCore-*."),
                      .option("for", value: "seconds", type: .number, default: "5.0", range: 0.001...600, help: "Seconds the BLE scan lasts."),
                      .flag("all", help: "With --ble, list every advertiser, not only MeshCore-* ones."),
                      .flag("json", short: "j", help: "Stable machine-readable output (JSON)."),
                  ]),
        Operation("contacts list", .read, api: "contacts", daemon: .contacts, result: .json(.contactList),
                  help: "List contacts.",
                  args: OperationArgument.link + [
                      .flag("geojson", commandLineOnly: true, help: "A GeoJSON FeatureCollection of the contacts that have a position (for geojson.io, QGIS, uMap)."),
                  ]) { _ in .contacts },
        Operation("contacts show", .read, api: .path, result: .json(.shared(.contact)),
                  help: "Show one contact.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix (a whole 64-digit key also finds contacts the list leaves out)."),
                  ]) { v in .contactShow(try v.required("contact")) },
        Operation("contacts add", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Add or update a contact by public key.",
                  args: OperationArgument.link + [
                      .positional("public-key", help: "Public key, 64 hex digits."),
                      .positional("name", help: "Name (at most 31 bytes)."),
                      .option("type", value: "type", choices: ["chat", "repeater", "room", "sensor"], help: "chat, repeater, room or sensor (default: chat, or what the radio has for a known contact)."),
                      .option("path", value: "path", help: "Out path as hex hop hashes; empty: send flood (default: unknown, or the known contact's path)."),
                  ]) { v in
            .contactAdd(publicKey: try v.required("public-key"), name: try v.required("name"),
                        type: try Request.contactType(v.string("type")), path: v.string("path"))
        },
        Operation("contacts remove", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Remove a contact.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactRemove(try v.required("contact")) },
        Operation("contacts reset-path", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Forget a contact's path (next message floods).",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactResetPath(try v.required("contact")) },
        Operation("contacts reset-advert-time", .config, api: .path, result: .json(.contactAdvertTime),
                  help: "Set a contact's last advert time to 0, so the radio takes its next advert whatever its timestamp (meshcore-cli's reset_advert_time).",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactResetAdvertTime(try v.required("contact")) },
        Operation("contacts share", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Re-send a contact's advert zero-hop.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactShare(try v.required("contact")) },
        Operation("contacts export", .read, api: .path, result: .json(.contactExport),
                  help: "Print a contact's advert as hex (no contact: this radio's own).",
                  args: OperationArgument.link + [
                      .positional("contact", optional: true, api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactExport(v.string("contact")) },
        Operation("contacts import", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Import a contact from a meshcore:// link (a card or contact/add) or an exported advert (hex).",
                  args: OperationArgument.link + [
                      .positional("advert", api: ["uri", "advert"], help: "meshcore://HEX, meshcore://contact/add?name=…&public_key=…&type=…, or the advert as hex."),
                  ]) { v in .contactImportLink(try v.required("advert")) },
        Operation("contacts favourite", .config, api: .path, aliases: ["favorite"], result: .json(.contactFavourite),
                  help: "Mark a contact a favourite (kept when the radio's table is full and auto-add overwrites), or not.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                      .positional("state", type: .bool, choices: ["on", "off"], api: ["on"], help: "on or off."),
                  ]) { v in .contactFavourite(try v.required("contact"), on: v.flag("state")) },
        Operation("contacts uri", .read, api: .path, result: .json(.contactURI),
                  help: "Print a contact's share links (meshcore://), as the phone apps make them.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactURI(try v.required("contact")) },
        Operation("contacts pending", .read, api: .path, daemon: .contactsPending, result: .json(.contactsPending),
                  help: "List the adverts of nodes that are not contacts (with manual-add on), as the daemon heard them.",
                  discussion: "Needs the radio's daemon (`pocketmesh daemon`): it collects them while nobody looks.",
                  args: OperationArgument.store + [
                      .flag("clear", commandLineOnly: true, help: "Forget every pending advert (meshcore-cli's flush_pending; API: contacts_flush_pending)."),
                  ]),
        Operation("contacts add-pending", .config, api: .path, daemon: .contactsAddPending, result: .json(.contactAddPending),
                  help: "Add a pending node as a contact, with its advert's data (type, name, location, advert time, path).",
                  args: [
                      .positional("prefix", help: "Hex key prefix or name, from `contacts pending`."),
                  ] + OperationArgument.store),
        Operation("contacts path", .read, api: .path, result: .json(.contactPath),
                  help: "Show a contact's stored path and the path of its last advert.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactPath(try v.required("contact")) },
        Operation("contacts discover-path", .config, api: .path, result: .json(.contactDiscoverPath),
                  help: "Ask a contact for the paths to and from it.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                  ]) { v in .contactDiscoverPath(try v.required("contact")) },
        Operation("contacts set-path", .config, api: .path, result: .json(.contactSetPath),
                  help: "Set a contact's path by hand: hex hop hashes (\"\" or 0 for a neighbour heard directly); reset-path forgets it.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                      .positional("path", help: "Hop hashes as hex in the radio's path hash size (5f33), or comma-separated, each hop's width giving the hash size (5f,33 or 5f1a,33b2), as meshcore-cli; HEX:MODE names the path hash mode (0-2)."),
                  ]) { v in .contactSetPath(try v.required("contact"), path: try v.required("path")) },
        Operation("contacts permissions", .config, api: .path, result: .json(.contactPermissions),
                  help: "Set what the radio grants a contact (the whole set): telemetry (used when the telemetry modes are `flags`) and, on protocol 14 radios, remote CLI.",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Contact name or hex key prefix."),
                      .positional("grant", help: "Comma-separated: base, location, environment (all: the three), cli (remote CLI, protocol 14); or none."),
                  ]) { v in .contactPermissions(try v.required("contact"), grant: try v.required("grant")) },
        Operation("contacts connected", .read, api: .path, result: .json(.contactConnected),
                  help: "Whether the radio is logged in to a repeater or room (HAS_CONNECTION).",
                  args: OperationArgument.link + [
                      .positional("contact", api: ["name"], help: "Node name or hex key prefix."),
                  ]) { v in .hasConnection(try v.required("contact")) },
        Operation("send", .message, api: .path, daemon: .send, result: .json(.send),
                  help: "Send a direct message and wait for its ACK (retrying, then flooding).",
                  discussion: "Exit code 4 when no ACK arrived after every attempt.",
                  args: OperationArgument.link + [
                      .flag("no-wait", commandLineOnly: true, help: "Return once the radio took the message; do not wait for the ACK."),
                      .flag("split", commandLineOnly: true, help: "Send a text longer than one message (160 bytes) as numbered parts, \"(1/3) …\", cut at spaces."),
                      .option("ack-timeout", value: "seconds", type: .number, commandLineOnly: true, range: 0.5...600, help: "Seconds to wait for each attempt's ACK (default: the radio's estimate for the path × 1.2)."),
                      .positional("to", help: "Contact name or hex key prefix."),
                      .positional("text", repeatable: true, help: "The text (at most 160 bytes, or any length with --split)."),
                  ],
                  apiOnly: [
                      // The daemon queues the message in its outbox and answers at once, or with
                      // wait, once it is acknowledged or given up.
                      .flag("wait", help: "Answer once the message is acknowledged (or given up), not once it is queued."),
                  ]) { v in .send(to: try v.required("to"), text: v.words("text") ?? "", wait: !v.flag("no-wait")) },
        Operation("channel list", .read, api: .path, result: .json(.arrayOf(.channel)),
                  help: "List the channels in use.",
                  args: OperationArgument.link) { _ in .channels },
        Operation("channel set", .config, api: .path, result: .json(.shared(.channel)),
                  help: "Set a channel slot (a #name makes a hashtag channel).",
                  args: OperationArgument.link + [
                      .positional("index", type: .integer, range: 0...255, help: "Slot index."),
                      .positional("name", help: "Channel name; #name derives the key from the name."),
                      .option("secret", value: "secret", help: "Secret, 32 hex digits."),
                      .flag("hashtag", help: "Hashtag channel: key = SHA-256(\"#name\")[0..16]."),
                  ]) { v in .channelSet(index: v.integer("index") ?? 0, name: try v.required("name"), secret: v.string("secret"), hashtag: v.flag("hashtag")) },
        Operation("channel add", .config, api: .path, result: .json(.channelAdded), secret: .fields(["uri"]),
                  help: "Add a channel in the first free slot (a #name is a hashtag channel; otherwise give --secret).",
                  args: OperationArgument.link + [
                      .positional("name", help: "Channel name."),
                      .option("secret", value: "secret", help: "Secret, 32 hex digits."),
                  ]) { v in
            let name = try v.required("name")
            guard v.string("secret") != nil || name.hasPrefix("#") else {
                throw ClientError.usage("\(v.door == .api ? v.subject + ": " : "")give \(v.label("secret")) (32 hex digits), or a #name for a hashtag channel.")
            }
            return .channelAdd(name: name, secret: v.string("secret"))
        },
        Operation("channel remove", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Clear a channel slot.",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                  ]) { v in .channelRemove(try v.required("channel")) },
        Operation("channel send", .message, api: .path, result: .json(.channelSend),
                  help: "Send a text to a channel (no ACK).",
                  args: OperationArgument.link + [
                      .flag("split", commandLineOnly: true, help: "Send a text longer than one message as numbered parts, \"(1/3) …\", cut at spaces."),
                      .option("repeats-wait", value: "seconds", type: .number, default: "2.0", apiDefault: "0", range: 0...60, help: "How long to listen for repeaters re-sending the message (heard repeats); 0: do not."),
                      .positional("channel", help: "Slot index or channel name."),
                      .positional("text", repeatable: true, help: "The text."),
                  ]) { v in .channelSend(try v.required("channel"), text: v.words("text") ?? "", repeatsWaitMs: Int((v.number("repeats-wait") ?? 0) * 1000)) },
        Operation("channel uri", .read, api: .path, result: .json(.channelURI), secret: .answer(["uri"]),
                  help: "Print a channel's link: meshcore://channel/add?name=…&secret=….",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                  ]) { v in .channelURI(try v.required("channel")) },
        Operation("channel import", .config, api: .path, result: .json(.channelAdded), secret: .fields(["uri"]),
                  help: "Add a channel from its meshcore://channel/add link (into the slot with its name, else the first free one).",
                  args: OperationArgument.link + [
                      .positional("uri", help: "meshcore://channel/add?name=…&secret=…."),
                  ]) { v in .channelImport(try v.required("uri")) },
        Operation("channel rekey", .config, result: .json(.channelRekey),
                  help: "Give a channel a new random secret and send it to its members by direct message.",
                  discussion: "Every member is checked first (an unknown one changes nothing, exit 6). Then the slot gets the new secret and each member gets meshcore://channel/add?name=…&secret=… with the usual retries. Exit 4 when a member did not acknowledge (the channel has the new secret anyway: send them the link again with `pocketmesh send`).",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Slot index or channel name."),
                      .option("members", value: "members", required: true, help: "Who gets the new secret: contact names or key prefixes, comma-separated."),
                  ]),
        Operation("channel data", .message, api: .path, result: .json(.channelData),
                  help: "Send a datagram to a channel (SEND_CHANNEL_DATA): a 16-bit data type and hex data.",
                  args: OperationArgument.link + [
                      .positional("channel", help: "Channel index or name."),
                      .positional("data-type", type: .integer, range: 1...65535, help: "Data type 1–65535 (65280–65535 for development)."),
                      .positional("data", help: "The data as hex."),
                  ]) { v in .channelData(try v.required("channel"), dataType: v.integer("data-type") ?? 0, hex: try v.required("data")) },
        Operation("sync", .message, api: .path, daemon: .sync, result: .json(.arrayOf(.message)),
                  help: "Fetch and print the messages waiting in the radio.",
                  args: OperationArgument.link) { _ in .sync },
        Operation("listen", .message, result: .jsonLines(.listenEvent),
                  help: "Print messages and pushes as they arrive, until interrupted (or --for SECONDS).",
                  discussion: "With --json, one JSON object per line (JSON Lines) with an \"event\" field.",
                  args: OperationArgument.link + [
                      .option("for", value: "seconds", type: .number, range: 0.001...(.infinity), help: "Stop after this many seconds."),
                      .flag("log-rx", help: "Also print every packet the radio hears (LOG_RX_DATA)."),
                  ]),
        Operation("advert", .config, api: .path, result: .json(.shared(.ok)),
                  help: "Send this radio's advert (zero-hop, or flood).",
                  args: OperationArgument.link + [
                      .flag("flood", help: "Flood the advert through repeaters."),
                  ]) { v in .advert(flood: v.flag("flood")) },
        Operation("time get", .read, api: .path, result: .json(.timeGet),
                  help: "Print the radio's clock (epoch seconds).",
                  args: OperationArgument.link) { _ in .timeGet },
        Operation("time sync", .config, api: .path, result: .json(.timeSet),
                  help: "Set the radio's clock from this host's.",
                  args: OperationArgument.link) { _ in .timeSync },
        Operation("time set", .config, api: .path, result: .json(.timeSet),
                  help: "Set the radio's clock to EPOCH (seconds since 1970, UTC).",
                  args: OperationArgument.link + [
                      .positional("epoch", type: .integer, range: 1_600_000_000...4_294_967_295, help: "Epoch seconds."),
                  ]) { v in .timeSet(v.integer("epoch") ?? 0) },
        Operation("get", .read, api: .path, result: .json(.settings),
                  help: "Print a device setting (all without a name).",
                  discussion: "Settings: name, coords (LAT LON), radio (FREQ_MHZ BW_KHZ SF CR [REPEAT]), tx (DBM), tuning (RX_DELAY AIRTIME_FACTOR), manual-add (on|off), telemetry (BASE LOC ENV: deny|flags|allow), advert-loc-policy (none|share|prefs), multi-acks, pin, auto-add (FLAGS [MAX_HOPS]; FLAGS as a number, 0x.. hex, or overwrite,chat,repeater,room,sensor), path-hash-mode (0-2), flood-scope (#REGION|none), custom (NAME VALUE); client-repeat (on|off); read-only: public-key, firmware, model, max-contacts, max-channels, repeat-freqs.",
                  args: OperationArgument.link + [
                      .positional("setting", optional: true, choices: Executor.settingNames, help: "Setting name."),
                  ]) { v in .get(v.string("setting")) },
        Operation("set", .config, api: .path, result: .json(.settingChanged),
                  help: "Change a device setting.",
                  discussion: "Settings: name, coords (LAT LON), radio (FREQ_MHZ BW_KHZ SF CR [REPEAT]), tx (DBM), tuning (RX_DELAY AIRTIME_FACTOR), manual-add (on|off), telemetry (BASE LOC ENV: deny|flags|allow), advert-loc-policy (none|share|prefs), multi-acks, pin, auto-add (FLAGS [MAX_HOPS]; FLAGS as a number, 0x.. hex, or overwrite,chat,repeater,room,sensor), path-hash-mode (0-2), flood-scope (#REGION|none), custom (NAME VALUE); client-repeat (on|off); read-only: public-key, firmware, model, max-contacts, max-channels, repeat-freqs.",
                  args: OperationArgument.link + [
                      .positional("setting", choices: Executor.settableSettingNames, help: "Setting name."),
                      .positional("values", optional: true, repeatable: true, api: ["values", "value"], help: "Value(s)."),
                  ]) { v in .set(try v.required("setting"), v.strings("values") ?? []) },
        Operation("battery", .read, api: .path, result: .json(.battery),
                  help: "Battery voltage and storage use.",
                  args: OperationArgument.link) { _ in .battery },
        Operation("stats", .read, api: .path, result: .json(.stats),
                  help: "Device statistics (core, radio, packets; all by default).",
                  args: OperationArgument.link + [
                      .positional("type", optional: true, choices: ["core", "radio", "packets"], help: "core, radio or packets."),
                  ]) { v in .stats(v.string("type")) },
        Operation("login", .admin, api: .path, result: .json(.login),
                  help: "Log in to a repeater or room server.",
                  discussion: "A password that worked is saved (0600, by the node's key, never printed) and used when -p is not given; --no-save keeps it out, --forget removes it.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                      .option("password", short: "p", value: "password", apiRequired: true,
                              help: "Password (empty: guest or known member; not given: the saved one, else empty)."),
                      .flag("no-save", commandLineOnly: true, help: "Do not save the password."),
                      .flag("forget", commandLineOnly: true, help: "Remove the saved password of this node (and do not log in)."),
                  ]) { v in .login(try v.required("node"), password: v.string("password") ?? "") },
        Operation("logout", .admin, api: .path, result: .json(.shared(.ok)),
                  help: "Log out of a repeater or room server.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                      .flag("forget", commandLineOnly: true, help: "Also remove the node's saved password."),
                  ]) { v in .logout(try v.required("node")) },
        Operation("status", .read, api: .path, result: .json(.status),
                  help: "Ask a repeater or room server for its status.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                  ]) { v in .status(try v.required("node")) },
        Operation("regions", .read, api: .path, result: .json(.regions),
                  help: "Ask a repeater which regions it lets floods through for (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Repeater name or hex key prefix, or its whole key when it is no contact (asked zero-hop)."),
                  ]) { v in .regions(try v.required("node")) },
        Operation("owner", .read, api: .path, result: .json(.owner),
                  help: "Ask a repeater for its name and owner information (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Repeater name or hex key prefix, or its whole key when it is no contact (asked zero-hop)."),
                  ]) { v in .owner(try v.required("node")) },
        Operation("clock", .read, api: .path, result: .json(.clock),
                  help: "Ask a repeater for its clock (anonymous request, no login; direct route only).",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Repeater name or hex key prefix, or its whole key when it is no contact (asked zero-hop)."),
                  ]) { v in .clock(try v.required("node")) },
        Operation("scope", .config, api: .path, result: .json(.scope),
                  help: "Scope the radio's floods to a region (#name), to none, or back to its default, until the radio reboots.",
                  discussion: "The radio keeps the scope until it reboots: it is not saved, and it outlasts the connection, so the floods of every program that uses the radio afterwards are scoped too. A daemon sets it again whenever it reconnects (the radio may have rebooted meanwhile). `set flood-scope` sets the radio's saved default.",
                  args: OperationArgument.link + [
                      .positional("scope", help: "#region, none, or default."),
                  ]) { v in .scope(try v.required("scope")) },
        Operation("telemetry", .read, api: .path, result: .json(.telemetry),
                  help: "Telemetry of a node (without a node: of this radio).",
                  args: OperationArgument.link + [
                      .positional("node", optional: true, api: ["name"], help: "Node name or hex key prefix."),
                  ]) { v in .telemetry(v.string("node")) },
        Operation("neighbours", .read, api: .path, aliases: ["neighbors"], result: .json(.neighbours),
                  help: "A repeater's neighbour table.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                  ]) { v in .neighbours(try v.required("node")) },
        Operation("acl", .read, api: .path, result: .json(.acl),
                  help: "A server's access control list (admin).",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                  ]) { v in .acl(try v.required("node")) },
        Operation("cmd", .admin, api: .path, result: .json(.command),
                  help: "Run a CLI command on a repeater (admin), or on a companion (protocol 14, with its remote CLI permission), and print its reply.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                      .positional("command", repeatable: true, api: ["text"], help: "The command, e.g. ver."),
                  ]) { v in .command(try v.required("node"), text: v.words("command") ?? "") },
        Operation("trace", .read, api: .path, result: .json(.trace),
                  help: "Trace a route of repeaters and print the SNR of each hop.",
                  args: OperationArgument.link + [
                      .positional("path", help: "Comma-separated hop hashes in hex, out and back, e.g. 5f,33,5f."),
                  ]) { v in .trace(path: try v.required("path")) },
        Operation("sign", .secret, api: .path, result: .json(.signature),
                  help: "Sign data (hex) with the radio's private key.",
                  args: OperationArgument.link + [
                      .positional("data", help: "Data as hex (at most 8192 bytes)."),
                  ]) { v in .sign(data: try v.required("data")) },
        Operation("key export", .secret, api: .path, result: .json(.privateKey),
                  help: "Print the private key as hex.",
                  args: OperationArgument.link) { _ in .keyExport },
        Operation("key import", .secret, api: .path, result: .json(.shared(.ok)),
                  help: "Replace the private key (128 hex digits).",
                  args: OperationArgument.link + [
                      .positional("key", help: "The 64-byte private key as hex."),
                  ]) { v in .keyImport(try v.required("key")) },
        Operation("reboot", .admin, api: .path, result: .json(.shared(.ok)),
                  help: "Reboot the radio.",
                  args: OperationArgument.link) { _ in .reboot },
        Operation("factory-reset", .admin, api: .path, result: .json(.shared(.ok)),
                  help: "Erase the radio (identity, contacts, channels).",
                  args: OperationArgument.link + [
                      .flag("yes-erase-everything", help: "Required: confirms that everything on the radio is erased."),
                  ]) { v in
            guard v.flag("yes-erase-everything") else {
                throw ClientError.usage("\(v.subject) erases the radio: add \(v.label("yes-erase-everything"))\(v.door == .api ? ": true" : "") to confirm.")
            }
            return .factoryReset
        },
        Operation("raw", .admin, api: .path, result: .json(.rawReply), secret: .frames(["reply"]),
                  help: "Send one frame (hex) and print the reply frame (hex).",
                  args: OperationArgument.link + [
                      .positional("frame", api: ["hex"], help: "The frame payload as hex, e.g. 1603."),
                  ]) { v in .raw(try v.required("frame")) },
        Operation("raw-data", .admin, api: .path, result: .json(.rawData),
                  help: "Send a RAW_CUSTOM payload direct along a path (SEND_RAW_DATA).",
                  args: OperationArgument.link + [
                      .positional("path", help: "The path: hex hop hashes (\"\" for zero hops)."),
                      .positional("data", help: "The payload as hex (at least 4 bytes)."),
                  ]) { v in .rawData(path: try v.required("path"), hex: try v.required("data")) },
        Operation("raw-packet", .admin, api: .path, result: .json(.rawPacket),
                  help: "Transmit a whole on-air packet (SEND_RAW_PACKET); it is checked to be a MeshCore packet first.",
                  args: OperationArgument.link + [
                      .positional("packet", help: "The packet as hex."),
                      .option("priority", value: "priority", type: .integer, default: "0", range: 0...255, help: "Transmit priority (0 highest)."),
                  ]) { v in .rawPacket(try v.required("packet"), priority: v.integer("priority") ?? 0) },
        Operation("discover", .config, api: .path, result: .json(.discover),
                  help: "Find nearby nodes: a zero-hop discovery request, and who answered with their SNR.",
                  discussion: "Repeaters answer a discovery request (CONTROL DISCOVER_REQ) heard directly, after a short random delay and at most 4 times in 2 minutes. Listed: name (when a contact), key, type, the SNR and RSSI of the answer here, and the SNR the node heard the request with. Exit 6 when none answered.",
                  args: OperationArgument.link + [
                      .option("for", value: "seconds", type: .number, default: "8.0", range: 0.001...600, help: "Seconds to listen for answers."),
                      .option("type", value: "types", default: "all", help: "Node types to ask: comma-separated repeater, room, chat, sensor, or all."),
                  ]) { v in
            let seconds = v.number("for") ?? 0
            guard let types = DiscoverTypes.filter(v.string("type") ?? "") else {
                throw v.usage("type", "takes repeater, room, chat, sensor or all (comma-separated).")
            }
            return .discover(waitMs: Int(seconds * 1000), types: types)
        },
        Operation("request", .admin, api: .path, result: .json(.binaryReply),
                  help: "Send a binary request (SEND_BINARY_REQ) to a node and print its reply as hex.",
                  discussion: "The first byte is the request type: 01 status, 03 telemetry, 04 min/max/avg, 05 access list, 06 neighbours.",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                      .positional("data", help: "The request as hex, its type byte first."),
                  ]) { v in .binaryRequest(try v.required("node"), hex: try v.required("data")) },
        Operation("mma", .read, api: .path, result: .json(.mma),
                  help: "Min/max/avg of a sensor's readings over a time window (binary request 04).",
                  args: OperationArgument.link + [
                      .positional("node", api: ["name"], help: "Node name or hex key prefix."),
                      .option("from", value: "seconds", type: .integer, default: "3600", range: 0...4_294_967_295, help: "Start of the window, seconds ago."),
                      .option("to", value: "seconds", type: .integer, default: "0", range: 0...4_294_967_295, help: "End of the window, seconds ago."),
                  ]) { v in .mma(try v.required("node"), from: v.integer("from") ?? 0, to: v.integer("to") ?? 0) },
        Operation("cli", .admin, api: .path, result: .json(.localCLI),
                  help: "Run a command on the radio's own CLI (RUN_CLI_COMMAND; needs companion protocol 14 firmware).",
                  args: OperationArgument.link + [
                      .positional("command", repeatable: true, help: "The command."),
                  ]) { v in .localCommand(v.words("command") ?? "") },
        Operation("chat", .message,
                  help: "Chat interactively in the terminal (conversations, delivery states, repeater commands).",
                  discussion: "Opens NAME (a contact, room, repeater or channel) or the most recent conversation. Type to send; /to NAME switches (Tab completes names), /list shows the conversations, /login, /logout, /status and /cmd talk to repeaters and rooms, /help lists the commands; Page Up/Down scroll back; Ctrl-D, Ctrl-C or /quit leave. Works directly or through a running daemon, and reconnects when the radio or the daemon comes back.",
                  args: OperationArgument.link + [
                      .positional("name", optional: true, help: "The conversation to open: a contact, room or channel name, or a key prefix."),
                      .option("state-dir", value: "dir", help: "State folder for the message history (default $XDG_STATE_HOME/pocketmesh)."),
                  ]),
    ]
}
