import ArgumentParser
import MeshSession
import MeshOps

struct Sync: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sync", abstract: "Fetch and print the messages waiting in the radio.")
    @OptionGroup var link: LinkOptions
    func request() throws(ClientError) -> Request { .sync }
    func text(_ value: Value) -> String {
        guard case .array(let items) = value else { return value.text() }
        return items.map(messageLine).joined(separator: "\n")
    }
}

/// One message as a line of text: exactly one line, whatever the sender put in its name or text
/// (a newline shows as `\n`), so a message cannot pass itself off as several.
func messageLine(_ m: Value) -> String {
    let ts = m["timestamp"]?.intValue ?? 0
    let text = terminalSafeLine(m["text"]?.stringValue ?? "")
    switch m["type"]?.stringValue {
    case "channel": return "[\(ts)] #\(m["channel"]?.intValue ?? 0) \(text)"
    case "channel_data": return "[\(ts)] #\(m["channel"]?.intValue ?? 0) data \(m["data_type"]?.intValue ?? 0): \(m["data"]?.stringValue ?? "")"
    default:
        let from = terminalSafeLine(m["name"]?.stringValue ?? m["from"]?.stringValue ?? "?")
        return "[\(ts)] \(from): \(text)"
    }
}
