import ArgumentParser
import MeshCompanion
import MeshOps
import MeshSession

/// `discover [--for SECONDS] [--type LIST]`: nearby nodes answering a zero-hop discovery request.
struct Discover: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "Find nearby nodes: a zero-hop discovery request, and who answered with their SNR.",
        discussion: """
            Repeaters answer a discovery request (CONTROL DISCOVER_REQ) heard directly, after a short \
            random delay and at most 4 times in 2 minutes. Listed: name (when a contact), key, type, \
            the SNR and RSSI of the answer here, and the SNR the node heard the request with. Exit 6 when none answered.
            """)
    @OptionGroup var link: LinkOptions
    @Option(name: .customLong("for"), help: ArgumentHelp("Seconds to listen for answers.", valueName: "seconds"))
    var duration: Double = 8
    @Option(help: ArgumentHelp("Node types to ask: comma-separated repeater, room, chat, sensor, or all.", valueName: "types"))
    var type: String = "all"

    func validate() throws {
        if !(duration > 0 && duration <= 600) { throw ValidationError("--for must be between 0 and 600 seconds.") }
        if DiscoverTypes.filter(type) == nil { throw ValidationError("--type takes repeater, room, chat, sensor or all (comma-separated).") }
    }
    func request() throws(ClientError) -> Request { .discover(waitMs: Int(duration * 1000), types: DiscoverTypes.filter(type) ?? DiscoverTypes.all) }
    func run() throws {
        try runRadioCommand()
    }
    func text(_ v: Value) -> String {
        guard case .array(let nodes)? = v["nodes"], !nodes.isEmpty else { return "no node answered." }
        return nodes.map { n in
            let key = String((n["public_key"]?.stringValue ?? "").prefix(12))
            let snr = n["snr"]?.scalarText ?? "?", there = n["snr_there"]?.scalarText ?? "?"
            return "\(key)  \(pad(n["type"]?.stringValue ?? "", 9)) snr \(snr) dB (theirs \(there) dB) rssi \(n["rssi"]?.scalarText ?? "?")  \(n["name"]?.stringValue ?? "")"
        }.joined(separator: "\n")
    }
}

extension Contacts {
    struct SetPath: RadioCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-path",
            abstract: "Set a contact's path by hand: hex hop hashes (\"\" for a neighbour heard directly); reset-path forgets it.")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Contact name or hex key prefix.") var contact: String
        @Argument(help: "Hop hashes as hex (e.g. 5f33, or 5f,33), in the radio's path hash size.") var path: String
        func request() throws(ClientError) -> Request { .contactSetPath(contact, path: path) }
    }

    struct Permissions: RadioCommand {
        static let configuration = CommandConfiguration(
            commandName: "permissions",
            abstract: "Set what the radio grants a contact (the whole set): telemetry (used when the telemetry modes are `flags`) and, on protocol 14 radios, remote CLI.")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Contact name or hex key prefix.") var contact: String
        @Argument(help: "Comma-separated: base, location, environment (all: the three), cli (remote CLI, protocol 14); or none.") var grant: String
        func request() throws(ClientError) -> Request { .contactPermissions(contact, grant: grant) }
    }

    struct Connected: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "connected", abstract: "Whether the radio is logged in to a repeater or room (HAS_CONNECTION).")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Node name or hex key prefix.") var contact: String
        func request() throws(ClientError) -> Request { .hasConnection(contact) }
        func text(_ v: Value) -> String {
            "\(v["name"]?.stringValue ?? contact): " + (v["connected"] == .bool(true) ? "connected (logged in)" : "not connected")
        }
    }
}

/// `request NODE HEX`: a generic binary request.
struct BinaryRequestCommand: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send a binary request (SEND_BINARY_REQ) to a node and print its reply as hex.",
        discussion: "The first byte is the request type: 01 status, 03 telemetry, 04 min/max/avg, 05 access list, 06 neighbours.")
    @OptionGroup var link: LinkOptions
    @Argument(help: "Node name or hex key prefix.") var node: String
    @Argument(help: "The request as hex, its type byte first.") var data: String
    func request() throws(ClientError) -> Request { .binaryRequest(node, hex: data) }
}

/// `mma NODE [--from S] [--to S]`: min/max/avg telemetry.
struct MMA: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "mma", abstract: "Min/max/avg of a sensor's readings over a time window (binary request 04).")
    @OptionGroup var link: LinkOptions
    @Argument(help: "Node name or hex key prefix.") var node: String
    @Option(help: ArgumentHelp("Start of the window, seconds ago.", valueName: "seconds")) var from: UInt32 = 3600
    @Option(help: ArgumentHelp("End of the window, seconds ago.", valueName: "seconds")) var to: UInt32 = 0
    func request() throws(ClientError) -> Request { .mma(node, from: from, to: to) }
    func text(_ v: Value) -> String {
        guard case .array(let rs)? = v["records"] else { return v.text() }
        if rs.isEmpty { return "no readings in that window." }
        return rs.map { r in
            "\(r["type"]?.stringValue ?? "") (channel \(r["channel"]?.scalarText ?? "")): min \(r["min"]?.scalarText ?? "") max \(r["max"]?.scalarText ?? "") avg \(r["avg"]?.scalarText ?? "")"
        }.joined(separator: "\n")
    }
}

extension Channel {
    struct DataCommand: RadioCommand {
        static let configuration = CommandConfiguration(
            commandName: "data", abstract: "Send a datagram to a channel (SEND_CHANNEL_DATA): a 16-bit data type and hex data.")
        @OptionGroup var link: LinkOptions
        @Argument(help: "Channel index or name.") var channel: String
        @Argument(help: "Data type 1–65535 (65280–65535 for development).") var dataType: UInt16
        @Argument(help: "The data as hex.") var data: String
        func request() throws(ClientError) -> Request { .channelData(channel, dataType: dataType, hex: data) }
    }
}

/// `raw-data PATH HEX`, `raw-packet HEX`.
struct RawData: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "raw-data", abstract: "Send a RAW_CUSTOM payload direct along a path (SEND_RAW_DATA).")
    @OptionGroup var link: LinkOptions
    @Argument(help: "The path: hex hop hashes (\"\" for zero hops).") var path: String
    @Argument(help: "The payload as hex (at least 4 bytes).") var data: String
    func request() throws(ClientError) -> Request { .rawData(path: path, hex: data) }
}

struct RawPacket: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "raw-packet", abstract: "Transmit a whole on-air packet (SEND_RAW_PACKET); it is checked to be a MeshCore packet first.")
    @OptionGroup var link: LinkOptions
    @Argument(help: "The packet as hex.") var packet: String
    @Option(help: "Transmit priority (0 highest).") var priority: UInt8 = 0
    func request() throws(ClientError) -> Request { .rawPacket(packet, priority: priority) }
}

/// `cli TEXT…`: the radio's own CLI (companion protocol 14).
struct LocalCLI: RadioCommand {
    static let configuration = CommandConfiguration(
        commandName: "cli", abstract: "Run a command on the radio's own CLI (RUN_CLI_COMMAND; needs companion protocol 14 firmware).")
    @OptionGroup var link: LinkOptions
    @Argument(help: "The command.") var command: [String]
    func request() throws(ClientError) -> Request { .localCommand(joined(command)) }
    func text(_ v: Value) -> String { v["reply"]?.stringValue ?? v.text() }
}
