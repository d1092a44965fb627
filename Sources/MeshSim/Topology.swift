import MeshNode
/// One node of a topology, before it exists.
public struct NodeSpec: Sendable, Equatable {
    public var name: String
    public var role: NodeRole
    /// Admin password (repeaters and rooms).
    public var password: String?
    /// Guest password (repeaters and rooms).
    public var guestPassword: String?
    /// Seed for the node's identity; derived from the mesh seed when absent.
    public var seed: UInt64?
    /// Regions a repeater or room relays scoped floods for (as `region put NAME`), e.g. `#north`.
    public var regions: [String]?
    /// True for a radio without a battery-backed clock: its clock starts at 15 May 2024 20:52:31
    /// UTC at power-up and again at every reboot.
    public var volatileClock: Bool?
    /// Battery voltage and sensors for telemetry (see `Sensors`).
    public var telemetry: Sensors?
    /// What a `kiss` node does wrong (see `KISSModemFaults`).
    public var kissFaults: KISSModemFaults?

    public init(name: String, role: NodeRole, password: String? = nil, guestPassword: String? = nil, seed: UInt64? = nil,
                regions: [String]? = nil, volatileClock: Bool? = nil) {
        self.name = name; self.role = role; self.password = password; self.guestPassword = guestPassword; self.seed = seed
        self.regions = regions; self.volatileClock = volatileClock
    }
}

/// A radio link between two nodes: SNR at the receiver and the probability a packet is lost.
public struct LinkSpec: Sendable, Equatable {
    public var a: String
    public var b: String
    public var snr: Double
    public var loss: Double
    /// If true, only a → b.
    public var oneway: Bool

    public init(a: String, b: String, snr: Double = 8, loss: Double = 0, oneway: Bool = false) {
        self.a = a; self.b = b; self.snr = snr; self.loss = loss; self.oneway = oneway
    }
}

/// Nodes and the links between them.
///
/// JSON file form:
/// ```
/// { "nodes": [ {"name": "alice", "role": "companion"},
///              {"name": "r1", "role": "repeater", "password": "secret", "guest_password": "guest",
///               "regions": ["#north"], "volatile_clock": true} ],
///   "links": [ {"a": "alice", "b": "r1", "snr": 7.5, "loss": 0.1} ] }
/// ```
/// Links are two-way unless `"oneway": true`; `snr` defaults to 8 dB and `loss` to 0. A server's
/// `regions` allow scoped floods for those regions (without any, it relays only unscoped floods);
/// `volatile_clock` is a radio without a battery-backed clock; `telemetry` sets its battery and
/// sensors (see `Sensors`); `faults` makes a `kiss` node misbehave (see `KISSModemFaults`). Read
/// and written in TopologyJSON.swift.
public struct Topology: Sendable, Equatable {
    public var nodes: [NodeSpec]
    public var links: [LinkSpec]

    public init(nodes: [NodeSpec], links: [LinkSpec]) { self.nodes = nodes; self.links = links }

    public enum Shape: String, Sendable { case line, star, grid }

    public enum TopologyError: Error, CustomStringConvertible {
        case unreadable(String)
        case badJSON(String)
        case unknownNode(String)
        case duplicateName(String)
        case badValue(String)

        public var description: String {
            switch self {
            case .unreadable(let p): return "cannot read topology file \(p)"
            case .badJSON(let m): return "topology file is not valid: \(m)"
            case .unknownNode(let n): return "topology link names an unknown node \"\(n)\""
            case .duplicateName(let n): return "topology has two nodes named \"\(n)\""
            case .badValue(let m): return "topology: \(m)"
            }
        }
    }

    public func validate() throws {
        var names = Set<String>()
        for n in nodes {
            if n.name.isEmpty || n.name.utf8.count > 31 { throw TopologyError.badValue("node name \"\(n.name)\" must be 1-31 bytes") }
            if !names.insert(n.name).inserted { throw TopologyError.duplicateName(n.name) }
            if let p = n.telemetry?.problem { throw TopologyError.badValue("node \"\(n.name)\": \(p)") }
            if let rs = n.regions {
                if n.role == .companion || n.role == .external || n.role == .kiss { throw TopologyError.badValue("node \"\(n.name)\" is a \(n.role.rawValue); only repeaters and rooms have regions") }
                if rs.count > RegionMap.maxEntries { throw TopologyError.badValue("node \"\(n.name)\" has more than \(RegionMap.maxEntries) regions") }
                for r in rs where r.isEmpty || r == "*" || !r.utf8.allSatisfy(RegionMap.isNameByte) {
                    throw TopologyError.badValue("region \"\(r)\" of node \"\(n.name)\" is not a region name (letters, digits, '-', '#', '$')")
                }
            }
        }
        for l in links {
            if !names.contains(l.a) { throw TopologyError.unknownNode(l.a) }
            if !names.contains(l.b) { throw TopologyError.unknownNode(l.b) }
            if !(0...1).contains(l.loss) { throw TopologyError.badValue("loss must be within 0...1 (link \(l.a)-\(l.b))") }
        }
    }

    /// A built-in shape. Companions are named `sim0…`, repeaters `rpt0…`, rooms `room0…`.
    ///
    /// - line: the repeaters form a chain; the first companion hangs off the first repeater, the last
    ///   companion off the last one (so they are `repeaters + 1` hops apart), the others and the rooms
    ///   off repeaters in between.
    /// - star: every node hears the first repeater (the hub), and only it.
    /// - grid: the repeaters form a square-ish grid with 4-neighbour links; the other nodes are spread
    ///   over the grid, the first companion in one corner, the last in the opposite one.
    /// With no repeaters, every node hears every other node in every shape.
    public static func builtIn(_ shape: Shape, companions: Int, repeaters: Int, rooms: Int, snr: Double = 8, loss: Double = 0) -> Topology {
        var nodes: [NodeSpec] = []
        let cs = (0..<companions).map { NodeSpec(name: "sim\($0)", role: .companion) }
        let rs = (0..<repeaters).map { NodeSpec(name: "rpt\($0)", role: .repeater) }
        let ms = (0..<rooms).map { NodeSpec(name: "room\($0)", role: .room) }
        nodes = cs + rs + ms
        var links: [LinkSpec] = []
        func link(_ a: String, _ b: String) { links.append(LinkSpec(a: a, b: b, snr: snr, loss: loss)) }
        let leaves = cs + ms
        if repeaters == 0 {
            for i in 0..<nodes.count { for j in (i + 1)..<max(i + 1, nodes.count) { link(nodes[i].name, nodes[j].name) } }
            return Topology(nodes: nodes, links: links)
        }
        // Which repeater each leaf attaches to: first companion at 0, last companion at the end,
        // everything else spread evenly.
        func anchor(_ k: Int, of n: Int) -> Int {
            if n <= 1 { return 0 }
            return (k * (repeaters - 1) + (n - 1) / 2) / (n - 1)
        }
        switch shape {
        case .line:
            for i in 0..<(repeaters - 1) { link(rs[i].name, rs[i + 1].name) }
            for (k, c) in cs.enumerated() { link(c.name, rs[anchor(k, of: cs.count)].name) }
            for (k, m) in ms.enumerated() { link(m.name, rs[ms.count == 1 ? repeaters / 2 : anchor(k, of: ms.count)].name) }
        case .star:
            for r in rs.dropFirst() { link(r.name, rs[0].name) }
            for l in leaves { link(l.name, rs[0].name) }
        case .grid:
            var w = 1
            while w * w < repeaters { w += 1 }
            for i in 0..<repeaters {
                if (i % w) + 1 < w && i + 1 < repeaters { link(rs[i].name, rs[i + 1].name) }
                if i + w < repeaters { link(rs[i].name, rs[i + w].name) }
            }
            for (k, c) in cs.enumerated() { link(c.name, rs[anchor(k, of: cs.count)].name) }
            for (k, m) in ms.enumerated() { link(m.name, rs[ms.count == 1 ? repeaters / 2 : anchor(k, of: ms.count)].name) }
        }
        return Topology(nodes: nodes, links: links)
    }
}
