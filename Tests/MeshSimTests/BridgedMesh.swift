import MeshAir
@testable import MeshNode
@testable import MeshSim

/// Two simulated companions, sim0 and sim1, that hear each other only through a middle radio, and
/// a `RadioAir` on the world's clock where the node under test runs (what `pocketmesh node` runs
/// on a real radio): the mesh of the RadioAir, KISS modem and SX1262 tests.
struct BridgedMesh {
    let w: SimWorld
    let middle: SimNode
    let air: RadioAir
    let a: FrameApp, b: FrameApp

    /// `role`: the middle node's topology role (external, kiss), or nil with `make`, which adds
    /// it to the mesh; `snr`: its links to sim0 and to sim1.
    init(role: String?, snr: (Double, Double), seed: UInt64, airSeed: UInt64, make: ((SimMesh) -> SimNode)? = nil) throws {
        var o = SimWorld.Options()
        o.seed = seed
        if let role {
            let json = #"{"nodes":[{"name":"sim0","role":"companion"},{"name":"mid","role":"\#(role)"},{"name":"sim1","role":"companion"}],"#
                + #""links":[{"a":"sim0","b":"mid","snr":\#(snr.0)},{"a":"mid","b":"sim1","snr":\#(snr.1)}]}"#
            w = try SimWorld(topology: try Topology.decode(json: Array(json.utf8)), options: o)
            middle = role == "kiss" ? w.modems[0] : w.externals[0]
        } else {
            w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
            w.mesh.unlink(w.companions[0], w.companions[1])
            middle = make!(w.mesh)
            w.mesh.link(w.companions[0], middle, snr: snr.0)
            w.mesh.link(middle, w.companions[1], snr: snr.1)
        }
        air = RadioAir(seed: airSeed, scheduler: w.mesh.scheduler, epochBase: w.mesh.epochBase)
        a = FrameApp(w.companions[0])
        b = FrameApp(w.companions[1])
    }

    /// A repeater on the `RadioAir`, its key from `seed`.
    func repeater(name: String, seed: UInt64, password: String) -> RepeaterNode {
        var rng = SimRandom(seed: seed)
        return RepeaterNode(mesh: air, name: name, identity: LocalIdentity.generate(using: &rng), adminPassword: password)
    }
}
