import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

@Suite struct RebootTests {
    func world(volatile: Bool?) throws -> SimWorld {
        let t = Topology(nodes: [NodeSpec(name: "a", role: .companion, volatileClock: volatile),
                                 NodeSpec(name: "rpt", role: .repeater, volatileClock: volatile)],
                         links: [LinkSpec(a: "a", b: "rpt")])
        return try SimWorld(topology: t)
    }

    @Test func aBatteryBackedClockKeepsRunningAcrossAReboot() throws {
        let w = try world(volatile: nil)
        let a = w.companions[0], r = w.repeaters[0]
        w.mesh.run(for: 60_000)
        let before = a.epochNow
        #expect(before == w.mesh.epochNow)
        a.reboot(); r.reboot()
        w.mesh.run(for: 5_000)
        #expect(a.powered && a.epochNow == before + 5 && r.epochNow == before + 5)
    }

    @Test func aClockWithoutBatteryStartsAgainAtEveryBoot() throws {
        let w = try world(volatile: true)
        let a = w.companions[0], r = w.repeaters[0]
        #expect(a.epochNow == SimNode.volatileClockStart && r.epochNow == SimNode.volatileClockStart)
        let app = FrameApp(a)
        #expect(app.call(CommandFrame.setDeviceTime(w.mesh.epochNow + 10))?.first == 0x00)
        #expect(r.command("time \(w.mesh.epochNow + 10)").hasPrefix("OK - clock set"))
        w.mesh.run(for: 30_000)
        #expect(a.epochNow == w.mesh.epochNow + 10)
        app.send(CommandFrame.reboot())
        #expect(r.command("reboot") == "")
        w.mesh.run(for: 1_000) // down for a second, then boots
        w.mesh.run(for: 3_000)
        #expect(a.epochNow == SimNode.volatileClockStart + 3 && r.epochNow == SimNode.volatileClockStart + 3)
    }

    @Test func clkrebootResetsTheClockOfAnyRadio() throws {
        let w = try world(volatile: nil)
        let r = w.repeaters[0]
        #expect(r.command("clkreboot") == "")
        w.mesh.run(for: 1_000)
        #expect(r.powered && r.epochNow == SimNode.volatileClockStart + 1)
    }

    @Test func powerDownIsAnnouncedForTheHost() throws {
        let w = try world(volatile: nil)
        var downs = 0
        w.companions[0].onPowerDown = { downs += 1 }
        FrameApp(w.companions[0]).send(CommandFrame.reboot())
        #expect(downs == 1 && !w.companions[0].powered)
        #expect(w.repeaters[0].command("poweroff") == "")
        w.mesh.run(for: 10_000)
        #expect(!w.repeaters[0].powered && w.companions[0].powered)
    }

    @Test func topologyFileTakesVolatileClock() throws {
        let json = #"{"nodes": [{"name": "a", "role": "companion", "volatile_clock": true}], "links": []}"#
        let w = try SimWorld(topology: try Topology.decode(json: Array(json.utf8)))
        #expect(!w.companions[0].hasBatteryClock && w.companions[0].epochNow == SimNode.volatileClockStart)
    }
}
