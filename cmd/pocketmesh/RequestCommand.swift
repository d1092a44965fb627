import MeshOps
import MeshSession

/// An operation that runs its row's request: every row with a handler (`Operation.request`) that
/// no command type of the tree declares. The parser finds it in the table, gives it the values
/// the row checked, and it runs the request and prints the result.
struct RequestCommand: RadioCommand {
    func text(_ v: Value, _ args: OperationValues) -> String { OperationText.text(v, args) }
}

/// Groups of the tree whose operations are all rows that run their request.
struct Time: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "time")
}

struct Key: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "key")
}

/// What a radio command prints as text (`--json` prints the result itself), by its request; the
/// result's own text where nothing is said.
enum OperationText {
    static func text(_ v: Value, _ args: OperationValues) -> String {
        guard let request = try? Request(args) else { return v.text() }
        switch request {
        case .advert:
            return v["done"]?.stringValue ?? v.text()
        case .channels:
            guard case .array(let items) = v else { return v.text() }
            return items.map { "\($0["index"]?.intValue ?? 0)  \($0["name"]?.stringValue ?? "")  \($0["secret"]?.stringValue ?? "")" }
                .joined(separator: "\n")
        case .channelAdd(let name, _):
            return "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? name)"
        case .channelURI:
            return v["uri"]?.stringValue ?? ""
        case .channelImport:
            return "channel \(v["index"]?.intValue ?? 0): \(v["name"]?.stringValue ?? "")"
        case .contactExport:
            return v["advert"]?.stringValue ?? v.text()
        case .contactFavourite(let contact, _):
            return "\(v["name"]?.stringValue ?? contact) is \(v["favourite"] == .bool(true) ? "a favourite" : "not a favourite")"
        case .contactURI:
            return "\(v["uri"]?.stringValue ?? "")\n\(v["contact_uri"]?.stringValue ?? "")"
        case .contactPath:
            // `out_path_length` -1 (unknown: messages flood, as `path_length` in `contacts --json`) reads "flood".
            guard case .object(var fields) = v else { return v.text() }
            for i in fields.indices where fields[i].key == "out_path_length" && fields[i].value == .int(-1) {
                fields[i].value = .string("flood")
            }
            return Value.object(fields).text()
        case .hasConnection(let contact):
            return "\(v["name"]?.stringValue ?? contact): " + (v["connected"] == .bool(true) ? "connected (logged in)" : "not connected")
        case .regions:
            guard case .array(let names)? = v["regions"] else { return v.text() }
            return names.isEmpty ? "no regions" : names.compactMap(\.stringValue).joined(separator: "\n")
        case .telemetry:
            // One record a line, e.g. "voltage (channel 1): 4.15 V".
            guard case .array(let records)? = v["records"] else { return v.text() }
            let head = v["name"]?.stringValue.map { "telemetry of \($0):" } ?? "telemetry of this radio:"
            var lines = [head] + records.map { "  " + ($0["text"]?.stringValue ?? $0.text()) }
            if records.isEmpty { lines = [head + " no records (raw LPP: \(v["lpp"]?.stringValue ?? ""))"] }
            if let rest = v["undecoded"]?.stringValue {
                lines.append("  not decoded (an LPP type this version does not know): \(rest)")
            }
            return lines.joined(separator: "\n")
        case .neighbours(let node):
            guard case .array(let items)? = v["neighbours"] else { return v.text() }
            let name = v["name"]?.stringValue ?? node
            if items.isEmpty { return "\(name) has no neighbours (it lists repeaters whose zero-hop adverts it heard)." }
            return items.map { n -> String in
                let prefix = n["prefix"]?.stringValue ?? ""
                let who = n["name"]?.stringValue.map { "\($0) (\(prefix))" } ?? prefix
                let snr = n["snr"]?.scalarText ?? "-"
                return "\(who): heard \(n["heard_s_ago"]?.intValue ?? 0) s ago, SNR \(snr) dB"
            }.joined(separator: "\n")
        case .command:
            // The reply, then any other messages taken off the radio's queue while waiting for it.
            var lines: [String] = []
            if let r = v["reply"]?.stringValue { lines.append(r) }
            if case .array(let ms)? = v["messages"] { lines += ms.map(messageLine) }
            return lines.joined(separator: "\n")
        case .get(let setting):
            if let setting, let one = v[setting] {
                switch one { case .object, .array: return one.text(); default: return one.scalarText }
            }
            return v.text()
        case .set(let setting, _):
            return "\(setting) set"
        case .sign:
            return v["signature"]?.stringValue ?? v.text()
        case .keyExport:
            return v["private_key"]?.stringValue ?? v.text()
        case .raw, .localCommand:
            return v["reply"]?.stringValue ?? v.text()
        case .discover:
            guard case .array(let nodes)? = v["nodes"], !nodes.isEmpty else { return "no node answered." }
            return nodes.map { n in
                let key = String((n["public_key"]?.stringValue ?? "").prefix(12))
                let snr = n["snr"]?.scalarText ?? "?", there = n["snr_there"]?.scalarText ?? "?"
                return "\(key)  \(pad(n["type"]?.stringValue ?? "", 9)) snr \(snr) dB (theirs \(there) dB) rssi \(n["rssi"]?.scalarText ?? "?")  \(n["name"]?.stringValue ?? "")"
            }.joined(separator: "\n")
        case .mma:
            guard case .array(let rs)? = v["records"] else { return v.text() }
            if rs.isEmpty { return "no readings in that window." }
            return rs.map { r in
                "\(r["type"]?.stringValue ?? "") (channel \(r["channel"]?.scalarText ?? "")): min \(r["min"]?.scalarText ?? "") max \(r["max"]?.scalarText ?? "") avg \(r["avg"]?.scalarText ?? "")"
            }.joined(separator: "\n")
        default:
            return v.text()
        }
    }
}
