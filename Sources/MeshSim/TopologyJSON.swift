import MeshNode
import MeshNet

// The topology file's JSON form, read and written with MeshNet's JSON codec. Keys not named here
// are ignored; a null counts as absent.

extension Topology {
    /// Decodes a topology from JSON bytes and checks it.
    public static func decode(json: [UInt8]) throws -> Topology {
        let value: JSON
        do { value = try json.withUnsafeBytes { try JSONParser.parse($0) } } catch {
            throw TopologyError.badJSON("\(error)")
        }
        let t = try Topology(json: value)
        try t.validate()
        return t
    }

    /// From a parsed topology file (not yet validated).
    public init(json: JSON) throws(Topology.TopologyError) {
        let o = try Fields(json, "the topology")
        nodes = try o.array("nodes").enumerated().map { i, n throws(Topology.TopologyError) in try NodeSpec(json: n, "nodes[\(i)]") }
        links = try o.array("links").enumerated().map { i, l throws(Topology.TopologyError) in try LinkSpec(json: l, "links[\(i)]") }
    }

    /// The topology file's form (every field, optional ones only when set).
    public var json: JSON {
        .obj(("nodes", .array(nodes.map(\.json))), ("links", .array(links.map(\.json))))
    }
}

extension NodeSpec {
    init(json: JSON, _ path: String) throws(Topology.TopologyError) {
        let o = try Fields(json, path)
        let roleName = try o.string("role")
        guard let role = NodeRole(rawValue: roleName) else {
            throw .badJSON("\(path).role \"\(roleName)\" is not one of companion, repeater, room, external, kiss")
        }
        self.init(name: try o.string("name"), role: role, password: try o.optionalString("password"),
                  guestPassword: try o.optionalString("guest_password"), seed: try o.optionalSeed("seed"),
                  regions: try o.optionalArray("regions")?.enumerated().map { i, r throws(Topology.TopologyError) in
                      guard let s = r.string else { throw .badJSON("\(path).regions[\(i)] must be a string") }
                      return s
                  },
                  volatileClock: try o.optionalBool("volatile_clock"))
        if let t = o["telemetry"] { telemetry = try Sensors(json: t, "\(path).telemetry") }
        if let f = o["faults"] {
            guard role == .kiss else { throw .badJSON("\(path).faults is for a \"kiss\" node") }
            kissFaults = try KISSModemFaults(json: f, "\(path).faults")
        }
    }

    var json: JSON {
        .obj(("name", .string(name)), ("role", .string(role.rawValue)), ("password", password.map { .string($0) }),
             ("guest_password", guestPassword.map { .string($0) }),
             ("seed", seed.map { $0 <= UInt64(Int64.max) ? JSON.int(Int64($0)) : .double(Double($0)) }),
             ("regions", regions.map { .array($0.map { .string($0) }) }), ("volatile_clock", volatileClock.map { .bool($0) }),
             ("telemetry", telemetry?.json), ("faults", kissFaults?.json))
    }
}

extension KISSModemFaults {
    init(json: JSON, _ path: String) throws(Topology.TopologyError) {
        let o = try Fields(json, path)
        self.init()
        func packets(_ key: String) throws(Topology.TopologyError) -> Set<Int> {
            Set(try (o.optionalArray(key) ?? []).enumerated().map { i, v throws(Topology.TopologyError) in
                guard case .integer(let n) = v, n >= 1, n <= Int64(Int32.max) else { throw .badJSON("\(path).\(key)[\(i)] must be a packet number from 1") }
                return Int(n)
            })
        }
        dropTxDone = try packets("drop_tx_done")
        resetInTx = try packets("reset_in_tx")
        dropRxMeta = try packets("drop_rx_meta")
        if let h = try o.optionalNumber("hang_after_tx") {
            guard h >= 0, h.rounded() == h, h <= Double(Int32.max) else { throw .badJSON("\(path).hang_after_tx must be a whole number from 0") }
            hangAfterTx = Int(h)
        }
        silent = try o.optionalBool("silent") ?? false
    }

    var json: JSON {
        func list(_ s: Set<Int>) -> JSON? { s.isEmpty ? nil : .array(s.sorted().map { .int(Int64($0)) }) }
        return .obj(("drop_tx_done", list(dropTxDone)), ("reset_in_tx", list(resetInTx)), ("drop_rx_meta", list(dropRxMeta)),
                    ("hang_after_tx", hangAfterTx.map { .int(Int64($0)) }), ("silent", silent ? .bool(true) : nil))
    }
}

extension LinkSpec {
    init(json: JSON, _ path: String) throws(Topology.TopologyError) {
        let o = try Fields(json, path)
        self.init(a: try o.string("a"), b: try o.string("b"), snr: try o.optionalNumber("snr") ?? 8,
                  loss: try o.optionalNumber("loss") ?? 0, oneway: try o.optionalBool("oneway") ?? false)
    }

    var json: JSON {
        .obj(("a", .string(a)), ("b", .string(b)), ("snr", .double(snr)), ("loss", .double(loss)), ("oneway", .bool(oneway)))
    }
}

extension Sensors {
    init(json: JSON, _ path: String) throws(Topology.TopologyError) {
        let o = try Fields(json, path)
        let location = try o.optionalArray("location")?.enumerated().map { i, v throws(Topology.TopologyError) in
            guard let d = Fields.number(v) else { throw .badJSON("\(path).location[\(i)] must be a number") }
            return d
        }
        let sensors = try (o.optionalArray("sensors") ?? []).enumerated().map { i, s throws(Topology.TopologyError) in
            let f = try Fields(s, "\(path).sensors[\(i)]")
            guard let value = try f.optionalNumber("value") else { throw .badJSON("\(path).sensors[\(i)] has no \"value\"") }
            return Sensor(type: try f.string("type"), value: value)
        }
        self.init(voltage: try o.optionalNumber("voltage") ?? 4.15, temperature: try o.optionalNumber("temperature"),
                  location: location, sensors: sensors)
    }

    var json: JSON {
        .obj(("voltage", voltage.map { .double($0) }), ("temperature", temperature.map { .double($0) }),
             ("location", location.map { .array($0.map { .double($0) }) }),
             ("sensors", .array(sensors.map { .obj(("type", .string($0.type)), ("value", .double($0.value))) })))
    }
}

/// The fields of one JSON object of the topology file, each error naming where it is.
private struct Fields {
    let pairs: [(String, JSON)]
    let path: String

    init(_ value: JSON, _ path: String) throws(Topology.TopologyError) {
        guard case .object(let pairs) = value else { throw .badJSON("\(path) must be an object") }
        self.pairs = pairs
        self.path = path
    }

    /// The value of `key`, nil when absent or null.
    subscript(key: String) -> JSON? {
        for (k, v) in pairs where k == key {
            if case .null = v { return nil }  // (not `v == .null ? nil : v`: JSON is ExpressibleByNilLiteral)
            return v
        }
        return nil
    }

    static func number(_ v: JSON) -> Double? {
        switch v {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    func string(_ key: String) throws(Topology.TopologyError) -> String {
        guard let v = self[key] else { throw .badJSON("\(path) has no \"\(key)\"") }
        guard let s = v.string else { throw .badJSON("\(path).\(key) must be a string") }
        return s
    }

    func array(_ key: String) throws(Topology.TopologyError) -> [JSON] {
        guard let v = self[key] else { throw .badJSON("\(path) has no \"\(key)\"") }
        guard let a = v.array else { throw .badJSON("\(path).\(key) must be an array") }
        return a
    }

    func optionalString(_ key: String) throws(Topology.TopologyError) -> String? {
        guard let v = self[key] else { return nil }
        guard let s = v.string else { throw .badJSON("\(path).\(key) must be a string") }
        return s
    }

    func optionalArray(_ key: String) throws(Topology.TopologyError) -> [JSON]? {
        guard let v = self[key] else { return nil }
        guard let a = v.array else { throw .badJSON("\(path).\(key) must be an array") }
        return a
    }

    func optionalBool(_ key: String) throws(Topology.TopologyError) -> Bool? {
        guard let v = self[key] else { return nil }
        guard let b = v.bool else { throw .badJSON("\(path).\(key) must be true or false") }
        return b
    }

    func optionalNumber(_ key: String) throws(Topology.TopologyError) -> Double? {
        guard let v = self[key] else { return nil }
        guard let d = Self.number(v) else { throw .badJSON("\(path).\(key) must be a number") }
        return d
    }

    /// A whole number from 0 to 2^64 - 1 (above 2^63 only as exact as the double it was read as).
    func optionalSeed(_ key: String) throws(Topology.TopologyError) -> UInt64? {
        guard let v = self[key] else { return nil }
        switch v {
        case .integer(let i) where i >= 0: return UInt64(i)
        case .double(let d) where d.rounded() == d && d >= 0 && d < 18_446_744_073_709_551_616: return UInt64(d)
        default: throw .badJSON("\(path).\(key) must be a whole number from 0 to 2^64 - 1")
        }
    }
}
