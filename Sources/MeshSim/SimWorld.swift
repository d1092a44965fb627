import MeshNode
import MeshAir

/// A mesh built from a topology: the nodes, their identities (from the seed) and links.
public final class SimWorld {
    public let mesh: SimMesh
    public let topology: Topology
    public private(set) var companions: [CompanionNode] = []
    public private(set) var repeaters: [RepeaterNode] = []
    public private(set) var rooms: [RoomNode] = []
    public private(set) var externals: [ExternalNode] = []
    public private(set) var modems: [KISSModemNode] = []

    public struct Options {
        public var seed: UInt64 = 1
        public var collisions = false
        /// Epoch seconds at virtual time 0 (node clocks start there).
        public var epochBase: UInt32 = 1_767_225_600 // 2026-01-01T00:00:00Z
        public var companion = CompanionNode.Config()
        public var adminPassword = "password"
        /// Guest password of repeaters and rooms without their own; blank lets anyone in as a
        /// guest with a blank password, as in the firmware.
        public var guestPassword = "hello"
        public var radio = RadioParams()
        public init() {}
    }

    public init(topology: Topology, options: Options = Options()) throws {
        try topology.validate()
        self.topology = topology
        mesh = SimMesh(seed: options.seed, epochBase: options.epochBase, collisions: options.collisions)
        var ids = SimRandom(seed: options.seed ^ 0x1D3A_7E11_0000_0001)
        var byName: [String: SimNode] = [:]
        for spec in topology.nodes {
            var r = spec.seed.map { SimRandom(seed: $0) } ?? ids.fork()
            let identity = LocalIdentity.generate(using: &r)
            let node: SimNode
            switch spec.role {
            case .companion:
                let c = CompanionNode(mesh: mesh, name: spec.name, identity: identity, config: options.companion)
                companions.append(c); node = c
            case .repeater:
                let n = RepeaterNode(mesh: mesh, name: spec.name, identity: identity, adminPassword: spec.password ?? options.adminPassword,
                                     guestPassword: spec.guestPassword ?? options.guestPassword)
                repeaters.append(n); node = n
            case .external:
                let n = ExternalNode(mesh: mesh, name: spec.name)
                externals.append(n); node = n
            case .kiss:
                let n = KISSModemNode(mesh: mesh, name: spec.name, identity: identity)
                modems.append(n); node = n
            case .room:
                let n = RoomNode(mesh: mesh, name: spec.name, identity: identity, adminPassword: spec.password ?? options.adminPassword,
                                 guestPassword: spec.guestPassword ?? options.guestPassword)
                rooms.append(n); node = n
            }
            node.radio.params = options.radio
            if let m = node as? KISSModemNode {
                m.powerOnParams = options.radio
                m.faults = spec.kissFaults ?? KISSModemFaults()
            }
            if spec.volatileClock == true {
                node.hasBatteryClock = false
                node.setClock(SimNode.volatileClockStart)
            }
            if let t = spec.telemetry {
                (node as? CompanionNode)?.sensors = t
                (node as? ServerNode)?.sensors = t
            }
            if let server = node as? ServerNode {
                for name in spec.regions ?? [] { _ = server.command("region put \(name)") }
                server.savedRegions = server.regions
            }
            byName[spec.name] = node
        }
        for l in topology.links {
            mesh.link(byName[l.a]!, byName[l.b]!, snr: l.snr, loss: l.loss, oneway: l.oneway)
        }
    }

    public func node(_ name: String) -> SimNode? { mesh.node(named: name) }
}

/// Every transmitted packet as one lowercase hex line (the `--capture` file format).
public func hexLine(_ bytes: [UInt8]) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var out = [UInt8](); out.reserveCapacity(bytes.count * 2 + 1)
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    out.append(0x0A)
    return String(decoding: out, as: UTF8.self)
}
