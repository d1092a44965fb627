import MeshCompanion
import MeshOps
import MeshSession

/// `discover [--for SECONDS] [--type LIST]`: nearby nodes answering a zero-hop discovery request.
struct Discover: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "discover")

    func run(_ args: OperationValues) throws {
        try runRadioCommand(args)
    }
    func text(_ v: Value, _ args: OperationValues) -> String {
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
        static let configuration = CommandConfiguration(commandName: "set-path")
    }

    struct Permissions: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "permissions")
    }

    struct Connected: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "connected")
        func text(_ v: Value, _ args: OperationValues) -> String {
            let contact = args.string("contact") ?? ""
            return "\(v["name"]?.stringValue ?? contact): " + (v["connected"] == .bool(true) ? "connected (logged in)" : "not connected")
        }
    }
}

/// `request NODE HEX`: a generic binary request.
struct BinaryRequestCommand: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "request")
}

/// `mma NODE [--from S] [--to S]`: min/max/avg telemetry.
struct MMA: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "mma")
    func text(_ v: Value, _ args: OperationValues) -> String {
        guard case .array(let rs)? = v["records"] else { return v.text() }
        if rs.isEmpty { return "no readings in that window." }
        return rs.map { r in
            "\(r["type"]?.stringValue ?? "") (channel \(r["channel"]?.scalarText ?? "")): min \(r["min"]?.scalarText ?? "") max \(r["max"]?.scalarText ?? "") avg \(r["avg"]?.scalarText ?? "")"
        }.joined(separator: "\n")
    }
}

extension Channel {
    struct DataCommand: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "data")
    }
}

/// `raw-data PATH HEX`, `raw-packet HEX`.
struct RawData: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw-data")
}

struct RawPacket: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "raw-packet")
}

/// `cli TEXT…`: the radio's own CLI (companion protocol 14).
struct LocalCLI: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "cli")
    func text(_ v: Value, _ args: OperationValues) -> String { v["reply"]?.stringValue ?? v.text() }
}
