import MeshOps
import MeshSession
import MeshNet
import MeshDaemonClient
import MeshLink
import MeshOps

/// `contacts pending` and `contacts add-pending PREFIX`: adverts of nodes that are not contacts
/// (with `set manual-add on` the radio only reports them). The daemon keeps them as they come
/// (its store's `pending`, the newest 256), so these ask the running daemon of the radio.
struct Pending: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pending")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var daemon: DaemonSelection { DaemonSelection(args) }
    var clear: Bool { args.flag("clear") }

    func run(_ args: OperationValues) throws {
        try daemon.run { () throws(DaemonError) in
            if clear {
                let r = try daemon.client().call(.contactsFlushPending)
                guard case .success(let fields) = r.result else { return }
                let n = fields.first(where: { $0.0 == "dropped" })?.1.int ?? 0
                if daemon.json { emitLine(JSON.object(fields).text) } else { emitHuman("forgot \(n) pending advert\(n == 1 ? "" : "s")") }
                return
            }
            let r = try daemon.client().call(.contactsPending)
            guard case .success(let fields) = r.result, case .array(let list)? = fields.first(where: { $0.0 == "result" })?.1 else { return }
            if daemon.json { emitLine(JSON.array(list).text); return }
            if list.isEmpty { emitHuman("no pending adverts (with `set manual-add on`, adverts of new nodes wait here)."); return }
            for c in list {
                let key = c["public_key"]?.string ?? ""
                let hops = c["path_length"]?.int.map { $0 < 0 ? "flood" : "\($0) hops" } ?? "-"
                func number(_ k: String) -> Double {
                    switch c[k] { case .double(let d)?: return d; case .integer(let i)?: return Double(i); default: return 0 }
                }
                let lat = number("latitude"), lon = number("longitude")
                let place = lat == 0 && lon == 0 ? "" : "  \(lat),\(lon)"
                let heard = c["heard"]?.int.map { Contacts.isoTime($0) } ?? ""
                emitHuman("\(key.prefix(12))  \(pad(c["type"]?.string ?? "", 8)) \(pad(hops, 8)) \(heard)  \(terminalSafeLine(c["name"]?.string ?? ""))\(place)")
            }
        }
    }
}

struct AddPending: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add-pending")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var prefix: String { args.string("prefix") ?? "" }
    var daemon: DaemonSelection { DaemonSelection(args) }

    func run(_ args: OperationValues) throws {
        try daemon.run { () throws(DaemonError) in
            let r = try daemon.client().call(.contactsAddPending, [("prefix", .string(prefix))])
            guard case .success(let fields) = r.result else { return }
            let name = fields.first(where: { $0.0 == "name" })?.1.string ?? prefix
            if daemon.json { emitLine(JSON.object(fields).text) } else { emitHuman("added \(terminalSafeLine(name))") }
        }
    }
}
