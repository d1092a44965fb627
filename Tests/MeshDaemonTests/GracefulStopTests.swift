import Glibc
import MeshCompanion
import MeshLink
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshNode
@testable import MeshSim
import MeshOps

/// A stop (SIGTERM, SIGINT) or a reconnect (SIGHUP) that comes while a SYNC_NEXT_MESSAGE is on its
/// way: the radio forgets a message once it hands it over, so the daemon waits (bounded) for the
/// answer and stores it before it goes.
@Suite(.serialized) struct GracefulStopTests {
    struct Rig {
        let dir: String
        let world: SimWorld
        let port: RadioPort
        let daemon: Daemon
        var log: [String] { logBox.lines }
        let logBox: LogBox
    }

    final class LogBox { var lines: [String] = [] }

    func rig(queued: Int, commandTimeoutMS: UInt64 = 1_500) throws -> Rig {
        let dir = temporaryDirectory("pm-gs")
        var o = SimWorld.Options()
        o.seed = 5
        o.companion.offlineQueueSize = 64
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        let b = w.companions[1]
        for i in 0..<queued {
            b.receive(frame: try CommandFrame.sendChannelTextMessage(channel: 0, text: "m\(i)", timestamp: b.epochNow).bytes)
            w.mesh.run(for: 4_000)
        }
        let r = try RadioPort(world: w, node: w.companions[0])
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.commandTimeoutMS = commandTimeoutMS
        let d = try Daemon(config: c)
        let box = LogBox()
        d.log = { box.lines.append($0) }
        return Rig(dir: dir, world: w, port: r, daemon: d, logBox: box)
    }

    func texts(_ d: Daemon) -> [String] {
        ((try? d.store?.messages(after: 0, limit: 1000, incomingOnly: true)) ?? []).map(\.textString)
    }

    @Test(arguments: [false, true])
    func aStopMidDrainStoresTheMessageInFlight(reconnect: Bool) throws {
        let g = try rig(queued: 6)
        defer { g.daemon.shutdown(); removeTree(g.dir) }
        let d = g.daemon, r = g.port
        var syncs = 0
        var held: [UInt8]? = nil
        r.onCommand = { _, f in
            guard f.first == CommandCode.syncNextMessage.rawValue else { return true }
            syncs += 1
            if syncs == 3 && held == nil { held = f; return false }  // a slow link: the answer comes later
            return true
        }
        #expect(drive(d, r) { held != nil }, "\(g.log)")
        #expect(texts(d).count == 2)
        d.settle(reconnect ? .reconnect : .stop, now: monotonicMilliseconds())
        #expect(!d.stopping && d.link != nil, "stopped without waiting for the message in flight")
        // The answer arrives after a while; nothing else is asked for.
        let heldAt = monotonicMilliseconds()
        #expect(drive(d, r, limitMS: 400) { d.stopping || d.link == nil } == false)
        r.node.receive(frame: held!)
        #expect(drive(d, r) { reconnect ? d.link == nil || d.radio.connections >= 2 : d.stopping }, "\(g.log)")
        #expect(monotonicMilliseconds() - heldAt < 1_500)
        #expect(texts(d).map { $0.hasSuffix("m2") } == [false, false, true])
        #expect(syncs == 3, "a SYNC_NEXT_MESSAGE went out after the stop was asked for")
        if reconnect {
            // Back again: the rest is drained on the new connection, each message once.
            #expect(drive(d, r) { texts(d).count == 6 }, "\(texts(d)) \(g.log)")
            #expect(Set(texts(d)).count == 6)
        }
    }

    @Test func aStopWaitsNoLongerThanTheCommandTimeout() throws {
        let g = try rig(queued: 3, commandTimeoutMS: 600)
        defer { g.daemon.shutdown(); removeTree(g.dir) }
        let d = g.daemon, r = g.port
        var swallowed = false
        r.onCommand = { _, f in
            if f.first == CommandCode.syncNextMessage.rawValue, !swallowed { swallowed = true; return false }
            return true
        }
        #expect(drive(d, r) { swallowed })
        let t0 = monotonicMilliseconds()
        d.settle(.stop, now: t0)
        #expect(drive(d, r, limitMS: 5_000) { d.stopping })
        #expect(monotonicMilliseconds() - t0 >= 500)
        #expect(g.log.contains { $0.contains("waiting for the message in flight") })
    }
}
