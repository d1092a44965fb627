import Glibc
import MeshDaemonClient
import MeshNet
import MeshOps
import MeshSession
import MeshStore

/// `pocketmesh samples signal|battery [--since EPOCH] [--limit N]`: the samples the daemon keeps
/// in the radio's folder (from the daemon that owns the radio when one runs, else from the folder).
struct SamplesCommand: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(commandName: "samples", subcommands: [SamplesSignal.self, SamplesBattery.self])
}

struct SamplesSignal: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "signal")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    func run(_ args: OperationValues) throws { try showSamples(args, .signal) }
}

struct SamplesBattery: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "battery")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    func run(_ args: OperationValues) throws { try showSamples(args, .battery) }
}

/// Payload type names (header bits 2-5), as the firmware's PAYLOAD_TYPE_ constants.
private let payloadTypes = ["req", "response", "txt_msg", "ack", "advert", "grp_txt", "grp_data", "anon_req", "path",
                            "trace", "multipart", "control"]

func showSamples(_ args: OperationValues, _ kind: SampleRing.Kind) throws {
    let store = StoreSelection(args)
    let since = UInt32(clamping: args.whole("since") ?? 0)
    let limit: Int = args.whole("limit") ?? 1000
    try runReporting {
        let fields: [(String, JSON)]
        if let d = try store.daemon() {
            let r = try store.ask(d, kind == .signal ? .samplesSignal : .samplesBattery,
                                  [("since", .int(Int64(since))), ("limit", .int(Int64(limit)))])
            guard case .success(let f) = r.result else { return }
            fields = f
        } else {
            let dir: String
            do { dir = try store.directory() } catch let e as ExitFailure { throw store.noStore(e) }
            do {
                let ring = try SampleRing(directory: dir, kind: kind, readOnly: true)
                defer { ring.close() }
                fields = try SampleJSON.result(ring, kind: kind, since: since, limit: limit)
                if ring.damaged > 0 { writeStderr("pocketmesh: warning: \(ring.path): \(ring.damaged) damaged sample(s) skipped") }
            } catch {
                throw ExitFailure(code: ErrorKind.storage.exitCode, message: "cannot read the samples: \(error)")
            }
        }
        if store.json {
            print(JSON.object(fields).text)
            return
        }
        guard case .array(let list)? = fields.first(where: { $0.0 == "samples" })?.1 else { return }
        if list.isEmpty { print(kind == .signal ? "No signal sample yet." : "No battery sample yet."); return }
        for s in list {
            let t = formatTime(UInt32(clamping: s["time"]?.int ?? 0))
            if kind == .battery {
                let mv = s["millivolts"]?.int ?? 0
                let storage = s["storage_total_kb"]?.int.map { " storage \(s["storage_used_kb"]?.int ?? 0)/\($0) KB" } ?? ""
                print("\(t) \(mv) mV\(storage)")
            } else {
                let snr = s["snr"]?.doubleValue ?? 0
                let rssi = s["rssi"]?.int.map { " RSSI \($0) dBm" } ?? ""
                var what = s["kind"]?.string ?? ""
                if let route = s["route"]?.string, let type = s["payload_type"]?.int {
                    what += " \(route) " + (type < payloadTypes.count ? payloadTypes[Int(type)] : "type \(type)")
                }
                if let hops = s["hops"]?.int { what += " \(hops) hop(s)" }
                if let from = s["from"]?.string { what += " from \(from)" }
                print("\(t) SNR \(snr) dB\(rssi) \(what)")
            }
        }
    }
}
