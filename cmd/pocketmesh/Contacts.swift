import Glibc
import MeshSession
import MeshOps

struct Contacts: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        subcommands: [List.self, Pending.self, AddPending.self])

    struct List: RadioCommand {
        static let configuration = CommandConfiguration(commandName: "list")

        func run(_ args: OperationValues) throws {
            let link = LinkOptions(args)
            let geojson = args.flag("geojson")
            guard geojson else { return try runRadioCommand(args) }
            let radio = try link.connect(drain: false)
            let outcome = try Executor(radio: radio, timeout: link.timeoutMilliseconds).execute(.contacts)
            if let e = outcome.error { throw e }
            emitLine(Contacts.featureCollection(outcome.value).json)
        }
        func text(_ value: Value, _ args: OperationValues) -> String {
            guard case .array(let items) = value else { return value.text() }
            if items.isEmpty { return "no contacts (they are added when adverts are heard; try `pocketmesh advert`)." }
            return items.map { c -> String in
                let hops: String = (c["path_length"]?.intValue).map { $0 < 0 ? "flood" : "\($0) hops" } ?? "-"
                let key = c["public_key"]?.stringValue ?? ""
                let name = c["name"]?.stringValue ?? ""
                let type = c["type"]?.stringValue ?? ""
                return "\(String(key.prefix(12)))  \(pad(type, 8)) \(pad(hops, 8)) \(name)"
            }.joined(separator: "\n")
        }
    }












}

func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }

extension Contacts {
    /// GeoJSON (RFC 7946): one Point feature per contact with a position ([longitude, latitude]),
    /// with its name, type, key prefix, when it was last heard and its path length.
    static func featureCollection(_ contacts: Value) -> Value {
        var features: [Value] = []
        if case .array(let items) = contacts {
            for c in items {
                guard case .double(let lat)? = c["latitude"], case .double(let lon)? = c["longitude"],
                      lat != 0 || lon != 0, abs(lat) <= 90, abs(lon) <= 180 else { continue }
                let key = c["public_key"]?.stringValue ?? ""
                let heard = c["last_advert"]?.intValue ?? 0
                let path = c["path_length"]?.intValue ?? -1
                var props: [Value.Field] = [
                    ("name", c["name"] ?? .null), ("type", c["type"] ?? .null),
                    ("key_prefix", .string(String(key.prefix(12)))),
                    ("last_heard", .int(heard)),
                ]
                if heard > 0 { props.append(("last_heard_utc", .string(isoTime(heard)))) }
                props.append(("path_length", path < 0 ? .null : .int(path)))
                features.append(.object([
                    ("type", .string("Feature")),
                    ("geometry", .object([("type", .string("Point")), ("coordinates", .array([.double(lon), .double(lat)]))])),
                    ("properties", .object(props)),
                ]))
            }
        }
        return .object([("type", .string("FeatureCollection")), ("features", .array(features))])
    }

    /// `2026-11-24T01:02:03Z`.
    static func isoTime(_ epoch: Int64) -> String {
        var t = time_t(epoch)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }
}
