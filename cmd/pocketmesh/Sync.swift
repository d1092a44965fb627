import Glibc
import MeshOps
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshLink

struct Sync: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "sync")
    func text(_ value: Value, _ args: OperationValues) -> String {
        guard case .array(let items) = value else { return value.text() }
        return items.map(messageLine).joined(separator: "\n")
    }

    /// Without a daemon, what `sync` takes off the radio is also kept in the radio's store (as the
    /// chat does), so `history` and `chats` show it; through a daemon, the daemon stores.
    func run(_ args: OperationValues) throws {
        let link = LinkOptions(args)
        try runRequest(.sync, link: link, render: { self.text($0, args) }, row: args.operation, keep: { executor, messages in
            guard let radio = executor.radio as? Radio, !(radio.link is DaemonTunnelLink), let key = radio.session.radioSelf?.publicKey.bytes else { return }
            storeTaken(messages, contacts: (try? executor.contacts()) ?? [], radioKey: key, link: (try? link.target())?.daemonLinkSpec)
        })
    }
}

/// Appends messages taken off the radio to its store, with the radio's contacts (so `history`
/// knows their names), and records the link that reached it; a store that cannot be written is a
/// warning (the messages were printed).
func storeTaken(_ messages: [ReceivedMessage], contacts: [ContactSummary], radioKey: [UInt8], link spec: String?) {
    do {
        let root = try StoreLocation.stateRoot()
        let store = try RadioStore(publicKey: radioKey)
        defer { store.close() }
        let wall = UInt32(truncatingIfNeeded: time(nil))
        if !contacts.isEmpty { try store.saveContacts(contacts.map(StoredContact.init(summary:))) }
        if !messages.isEmpty { _ = try store.append(messages.map { MessageJSON.stored($0, receivedAt: wall) }) }
        if let spec { StoreLinks.remember(stateRoot: root, link: spec, publicKey: radioKey) }
    } catch {
        writeStderr("pocketmesh: warning: the messages were printed but not stored (\(error)); `history` will not show them.")
    }
}

/// One message as a line of text: exactly one line, whatever the sender put in its name or text
/// (a newline shows as `\n`), so a message cannot pass itself off as several.
func messageLine(_ m: Value) -> String {
    let ts = m["timestamp"]?.intValue ?? 0
    let text = terminalSafeLine(m["text"]?.stringValue ?? "")
    switch m["kind"]?.stringValue {
    case "channel": return "[\(ts)] #\(m["channel"]?.intValue ?? 0) \(text)"
    case "channel_data": return "#\(m["channel"]?.intValue ?? 0) data \(m["data_type"]?.intValue ?? 0): \(m["data"]?.stringValue ?? "")"
    default:
        let from = terminalSafeLine(m["name"]?.stringValue ?? m["from"]?.stringValue ?? "?")
        return "[\(ts)] \(from): \(text)"
    }
}

extension StoredContact {
    /// A contact as the radio listed it, for the store.
    init(summary c: ContactSummary) {
        self.init(publicKey: c.publicKey, type: c.type, flags: c.flags, outPathLength: c.outPathLength, outPath: c.outPath,
                  name: c.name, lastAdvert: c.lastAdvert, latitude: c.latitude, longitude: c.longitude, lastModified: c.lastModified)
    }
}
