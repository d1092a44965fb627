import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// What a server keeps across a restart of its host, as the firmware keeps it: the region map
/// as `region save` left it, and the ACL (clients with permissions); and what it reports as its
/// battery and temperature when a host measures them (or measures nothing).
@Suite struct ServerStateTests {
    @Test func savedRegionsComeBackInAnotherNode() throws {
        let (w, _, r) = try pair()
        defer { withExtendedLifetime(w) {} }
        var saves = 0
        r.onSavePrefs = { saves += 1 }
        _ = r.command("region put north")
        _ = r.command("region put hills north")
        _ = r.command("region put south")
        _ = r.command("region denyf south")
        _ = r.command("region home hills")
        #expect(r.command("region save") == "OK")
        #expect(saves == 1)
        #expect(r.command("region default east") == " default scope is now east")
        #expect(saves == 2)  // `region default` saves the map too
        _ = r.command("region put west")  // not saved: not kept
        let text = r.regionsText()
        #expect(!text.contains("west"))

        let (w2, _, fresh) = try pair()
        defer { withExtendedLifetime(w2) {} }
        #expect(fresh.loadRegions(text).isEmpty)
        _ = r.command("region remove west")
        #expect(fresh.command("region") == r.command("region"))
        #expect(fresh.command("region default") == " default scope is east")
        #expect(fresh.command("region list allowed") == r.command("region list allowed"))
        #expect(fresh.command("region list denied") == "south")
        #expect(fresh.regionsText() == text)
        // A new region gets an id past the loaded ones.
        #expect(fresh.command("region put west") == "OK - (flood allowed)")
        #expect(Set(fresh.regions.entries.map(\.id)).count == fresh.regions.entries.count)
        // A reboot starts from what was loaded.
        _ = fresh.command("reboot")
        w2.mesh.run(for: 2_000)
        #expect(fresh.command("region") == r.command("region"))
    }

    @Test func unreadableRegionLinesAreSkippedAndNamed() throws {
        let (w, _, r) = try pair()
        defer { withExtendedLifetime(w) {} }
        let refused = r.loadRegions("region 0 0 0 *\nregion 1 0 0 north\nregion 2 9 0 orphan\nregion x\nhome 1\nbogus\n")
        #expect(refused == ["region 2 9 0 orphan", "region x", "bogus"])
        #expect(r.command("region") == "* F\n north^ F\n")
    }

    @Test func theACLComesBackWithoutItsGuests() throws {
        let (w, _, r) = try pair()
        defer { withExtendedLifetime(w) {} }
        let admin = AirHex.encode(w.companions[0].publicKey.bytes)
        let reader = AirHex.encode(LocalIdentity.generate().publicKey.bytes)
        #expect(r.command("setperm \(admin) 3") == "OK")
        #expect(r.command("setperm \(reader) 1") == "OK")
        r.clients[1].outPath = [0x12, 0x34]
        r.clients[1].outHashSize = 1
        _ = r.putClient(LocalIdentity.generate().publicKey)  // a guest: not kept
        let before = r.clientsChanged
        let text = r.aclText()
        #expect(text.split(separator: "\n").count == 2)
        #expect(text.contains("\(admin.lowercased()) 3 0 -") && text.contains("\(reader.lowercased()) 1 0 1:1234"))

        let (w2, _, fresh) = try pair()
        defer { withExtendedLifetime(w2) {} }
        #expect(fresh.loadACL(text + "nonsense\n") == ["nonsense"])
        #expect(fresh.clients.map(\.key) == r.clients.filter { $0.permissions != 0 }.map(\.key))
        #expect(fresh.clients.map(\.permissions) == [3, 1])
        #expect(fresh.clients[1].outPath == [0x12, 0x34])
        #expect(fresh.aclText() == text)
        #expect(r.clientsChanged == before)
        r.clients[0].permissions = 1
        #expect(r.clientsChanged != before)
    }

    @Test func aHostsMeasurementsOrNothingNeverTheSimulatedOnes() throws {
        let (w, _, r) = try pair()
        defer { withExtendedLifetime(w) {} }
        let me = ServerClient(key: w.companions[0].publicKey, permissions: 3)
        // The simulator's own values, labelled so: 4.15 V and an MCU at 21.5 °C.
        #expect(r.stats.batteryMillivolts == 4150)
        #expect(r.handleRequest(type: 0x03, data: [0], client: me) == Sensors(voltage: 4.15, temperature: 21.5).lpp(permissions: 0xFF))
        // A host that measures nothing reports nothing.
        r.sensorSource = { Sensors(voltage: nil, temperature: nil) }
        #expect(r.stats.batteryMillivolts == 0)
        #expect(r.handleRequest(type: 0x03, data: [0], client: me) == [])
        #expect(r.command("stats-core", senderTimestamp: 0).contains("\"battery_mv\":0,"))
        // A host that measures reports what it read, each time it is asked.
        var volts = 12.61
        r.sensorSource = { Sensors(voltage: volts, temperature: 31.5) }
        #expect(r.stats.batteryMillivolts == 12610)
        volts = 12.2
        #expect(r.stats.batteryMillivolts == 12200)
        #expect(r.handleRequest(type: 0x03, data: [0], client: me) == Sensors(voltage: 12.2, temperature: 31.5).lpp(permissions: 0xFF))
    }
}
