import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// a - rpt - b, where b hears a only through the repeater.
func relayed(regions: [String]?) throws -> (SimWorld, FrameApp, FrameApp, RepeaterNode) {
    let t = Topology(nodes: [NodeSpec(name: "a", role: .companion), NodeSpec(name: "b", role: .companion),
                             NodeSpec(name: "rpt", role: .repeater, regions: regions)],
                     links: [LinkSpec(a: "a", b: "rpt"), LinkSpec(a: "rpt", b: "b")])
    let w = try SimWorld(topology: t)
    return (w, FrameApp(w.companions[0]), FrameApp(w.companions[1]), w.repeaters[0])
}

/// Sends a Public channel message from `a` with `scope` and tells whether `b` got it.
func channelReaches(_ w: SimWorld, _ a: FrameApp, _ b: FrameApp, scope: FloodScopeOverride, text: String) throws -> Bool {
    #expect(a.call(try CommandFrame.setFloodScopeKey(scope))?.first == 0x00)
    b.frames.removeAll()
    _ = a.call(try CommandFrame.sendChannelTextMessage(channel: 0, text: text, timestamp: w.companions[0].epochNow))
    return w.mesh.run(until: { b.count(0x83) > 0 }, limit: 20_000)
}

@Suite struct RegionScopeTests {
    static let north = FloodScopeOverride.key(RegionKey(name: "#north").key)
    static let south = FloodScopeOverride.key(RegionKey(name: "#south").key)

    @Test func scopedFloodsPassOnlyARepeaterWithTheirRegion() throws {
        let (w, a, b, r) = try relayed(regions: ["#north"])
        #expect(r.regions.exportNames(max: 160, mask: RegionMap.denyFlood) == "*,north")
        #expect(try channelReaches(w, a, b, scope: Self.north, text: "north"))
        #expect(try !channelReaches(w, a, b, scope: Self.south, text: "south"))
        #expect(try channelReaches(w, a, b, scope: .unscoped, text: "plain"))
        // `region denyf`: the region stays but its floods stop; `*` stops unscoped floods.
        #expect(r.command("region denyf north") == "OK")
        #expect(try !channelReaches(w, a, b, scope: Self.north, text: "north again"))
        #expect(r.command("region allowf north") == "OK")
        #expect(r.command("region denyf *") == "OK")
        #expect(try !channelReaches(w, a, b, scope: .unscoped, text: "plain again"))
        #expect(try channelReaches(w, a, b, scope: Self.north, text: "north once more"))
    }

    @Test func aRepeaterWithoutRegionsRelaysOnlyUnscopedFloods() throws {
        let (w, a, b, _) = try relayed(regions: nil)
        #expect(try !channelReaches(w, a, b, scope: Self.north, text: "north"))
        #expect(try channelReaches(w, a, b, scope: .unscoped, text: "plain"))
        // A null key (what meshcore_py sends for "no scope") goes back to the default: unscoped.
        #expect(try !channelReaches(w, a, b, scope: Self.north, text: "north again"))
        #expect(try channelReaches(w, a, b, scope: .key([UInt8](repeating: 0, count: 16)), text: "default"))
    }

    @Test func regionsAddedByTheAdminCLI() throws {
        let (w, a, b, r) = try relayed(regions: nil)
        #expect(r.command("region put north") == "OK - (flood allowed)")
        #expect(try channelReaches(w, a, b, scope: Self.north, text: "north"))
        #expect(r.command("region remove north") == "OK")
        #expect(try !channelReaches(w, a, b, scope: Self.north, text: "north again"))
    }

    @Test func aScopedDirectMessageIsAcknowledgedInTheScope() throws {
        // Only #north floods pass; both companions send in #north, so the ACK must come back scoped.
        let (w, a, b, r) = try relayed(regions: ["#north"])
        #expect(r.command("region denyf *") == "OK")
        for app in [a, b] { #expect(app.call(try CommandFrame.setFloodScopeKey(Self.north))?.first == 0x00) }
        exchangeAdverts(w, [a, b])
        let bKey = w.companions[1].publicKey
        #expect(a.contact(bKey) != nil)
        a.frames.removeAll()
        _ = a.call(try CommandFrame.sendTextMessage(to: bKey, text: "scoped", timestamp: w.companions[0].epochNow))
        #expect(w.mesh.run(until: { a.count(0x82) > 0 }, limit: 30_000))
    }

    @Test func aScopedRequestIsAnsweredInItsScope() throws {
        let (w, a, _, r) = try relayed(regions: ["#north"])
        #expect(a.call(try CommandFrame.setFloodScopeKey(Self.north))?.first == 0x00)
        var scoped = 0, plain = 0
        w.mesh.onTransmit = { n, bytes in
            guard n === r, let p = try? Packet(bytes: bytes), p.payloadType == .path else { return }
            if p.routeType == .transportFlood { scoped += 1 } else { plain += 1 }
        }
        w.mesh.run(for: 10_000) // the repeater's advert: a contact without a path, so the login floods
        #expect(try loginFrame(a, w, r.publicKey, "password") != nil)
        #expect(scoped == 1 && plain == 0)
    }

    @Test func topologyRegionsAreChecked() throws {
        let json = ##"{"nodes": [{"name": "r", "role": "repeater", "regions": ["#north", "south-east"]}], "links": []}"##
        let t = try Topology.decode(json: Array(json.utf8))
        #expect(t.nodes[0].regions == ["#north", "south-east"])
        for bad in [##"["no way"]"##, ##"["*"]"##] {
            let j = ##"{"nodes": [{"name": "r", "role": "repeater", "regions": "## + bad + ##"}], "links": []}"##
            #expect(throws: Topology.TopologyError.self) { try Topology.decode(json: Array(j.utf8)) }
        }
        let c = ##"{"nodes": [{"name": "c", "role": "companion", "regions": ["#north"]}], "links": []}"##
        #expect(throws: Topology.TopologyError.self) { try Topology.decode(json: Array(c.utf8)) }
    }
}

@Suite struct RadioChannelTests {
    @Test func radiosOnAnotherChannelDoNotHearEachOther() throws {
        let (w, a, b, r) = try relayed(regions: nil)
        #expect(try channelReaches(w, a, b, scope: .clear, text: "same channel"))
        // b moves to another frequency (the companion applies it at once): nothing reaches it.
        let moved = MeshCompanion.RadioParams(frequencyKHz: 915_000, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)
        #expect(b.call(try CommandFrame.setRadioParams(moved))?.first == 0x00)
        #expect(try !channelReaches(w, a, b, scope: .clear, text: "other frequency"))
        // The repeater follows with `set radio` and a reboot; a is now the one left behind.
        #expect(r.command("set radio 915,62.5,8,7") == "OK - reboot to apply")
        _ = r.command("reboot")
        w.mesh.run(for: 2_000)
        #expect(try !channelReaches(w, a, b, scope: .clear, text: "a left behind"))
        #expect(a.call(try CommandFrame.setRadioParams(moved))?.first == 0x00)
        #expect(try channelReaches(w, a, b, scope: .clear, text: "together again")) // coding rates may differ
        // Another spreading factor is another channel too; a small frequency offset is not.
        var sf9 = moved; sf9.spreadingFactor = 9
        #expect(b.call(try CommandFrame.setRadioParams(sf9))?.first == 0x00)
        #expect(try !channelReaches(w, a, b, scope: .clear, text: "sf9"))
        var near = moved; near.frequencyKHz = 915_010
        #expect(b.call(try CommandFrame.setRadioParams(near))?.first == 0x00)
        #expect(try channelReaches(w, a, b, scope: .clear, text: "10 kHz off"))
    }
}
