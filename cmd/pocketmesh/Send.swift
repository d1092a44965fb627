import MeshSession
import MeshCompanion
import MeshOps

struct Send: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "send")
    func run(_ args: OperationValues) throws {
        let link = LinkOptions(args)
        let noWait = args.flag("no-wait")
        let split = args.flag("split")
        let to = args.string("to") ?? ""
        let text = args.strings("text") ?? []
        guard split else { return try runRadioCommand(args) }
        // 158: the limit of a text resent with attempt > 3, so every retry of a part fits.
        try runSplit(link: link, text: joined(text), limit: { _ in CompanionLimits.maxTextLengthHighAttempt },
                     request: { .send(to: to, text: $0, wait: !noWait) }, render: { self.text($0, args) })
    }
    /// "heard 2 repeats; " for a flooded message.
    func heard(_ v: Value) -> String {
        guard let n = v["heard_repeats"]?.intValue else { return "" }
        return "flooded, heard \(n) repeat\(n == 1 ? "" : "s"); "
    }
    func text(_ v: Value, _ args: OperationValues) -> String {
        let to = args.string("to") ?? ""
        let name = v["to"]?.stringValue ?? to
        let attempts = v["attempts"]?.intValue ?? 1
        switch v["status"]?.stringValue {
        case "acked": return heard(v) + "acked by \(name) after \(attempts) attempt\(attempts == 1 ? "" : "s") (round trip \(v["round_trip_ms"]?.intValue ?? 0) ms)"
        case "sent": return "sent to \(name) (\(v["flood"] == .bool(true) ? "flood" : "direct"))"
        default: return heard(v) + "not acknowledged by \(name) after \(attempts) attempts"
        }
    }
}
