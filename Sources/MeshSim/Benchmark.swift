import MeshNode
import MeshAir
import MeshCompanion

/// The simulator's scale benchmark: a grid of repeaters with companions spread over it, every
/// companion advertising, then direct messages between random companion pairs over an hour of
/// virtual time. Messages go through the companion protocol (SEND_TXT_MSG) like an app's would.
public struct SimBenchmark {
    public var nodes = 100
    public var companions = 20
    public var virtualSeconds: UInt64 = 3600
    public var messages = 1000
    public var seed: UInt64 = 1
    public var collisions = false

    public struct Result {
        public var virtualSeconds: UInt64
        public var transmissions: UInt64
        public var receptions: UInt64
        public var sent: Int
        public var acked: Int
        public var flood: Int
        public var direct: Int
        public var events: Int
        public var refused: Int
    }

    public init() {}

    public func run() throws -> Result {
        let repeaters = max(1, nodes - companions)
        var o = SimWorld.Options()
        o.seed = seed
        o.collisions = collisions
        let world = try SimWorld(topology: .builtIn(.grid, companions: companions, repeaters: repeaters, rooms: 0), options: o)
        let mesh = world.mesh
        var acked = 0, sent = 0, flood = 0, direct = 0, refused = 0
        for c in world.companions {
            c.connected = true
            c.onFrame = { f in
                switch f.code {
                case 0x82: acked += 1
                case 0x06: sent += 1; f.withUnsafeBytes { if $0[1] == 1 { flood += 1 } else { direct += 1 } }
                case 0x83: c.receive(frame: [0x0A]) // drain like an app
                case 0x01: refused += 1
                default: break
                }
            }
            c.receive(frame: [0x16, 0x03])
        }
        // Everyone floods an advert in the first minute.
        for c in world.companions {
            mesh.scheduler.after(mesh.rng.below(60_000)) { _ = c.advertise(flood: true) }
        }
        // Messages spread over the rest of the hour.
        var rng = SimRandom(seed: seed ^ 0xBE4C)
        let start: UInt64 = 120_000
        let span = virtualSeconds * 1000 - start - 60_000
        let n = world.companions.count
        for i in 0 ..< messages {
            let at = start + span * UInt64(i) / UInt64(max(1, messages))
            let a = Int(rng.below(UInt64(n)))
            let pick = rng.next()
            let from = world.companions[a]
            let text = "message \(i) from \(from.name)"
            mesh.scheduler.schedule(at: at) {
                // A random contact of the sender (adverts reach at most 8 hops, so not everyone
                // knows everyone in a large grid).
                let known = from.contacts.filter { $0.type.rawValue == 1 }
                guard !known.isEmpty else { return }
                let to = known[Int(pick % UInt64(known.count))]
                guard let f = try? CommandFrame.sendTextMessage(to: to.publicKey, text: text, timestamp: from.epochNow) else { return }
                from.receive(frame: f.bytes)
            }
        }
        var events = 0
        let end = virtualSeconds * 1000
        while let d = mesh.scheduler.nextDeadline, d <= end { mesh.scheduler.step(); events += 1 }
        mesh.run(until: end)
        return Result(virtualSeconds: virtualSeconds, transmissions: mesh.transmissions, receptions: mesh.deliveries,
                      sent: sent, acked: acked, flood: flood, direct: direct, events: events, refused: refused)
    }
}
