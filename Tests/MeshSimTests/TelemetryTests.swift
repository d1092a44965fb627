import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

@Suite struct TelemetryTests {
    func records(_ lpp: [UInt8]) throws -> [LPPRecord] {
        try lpp.withUnsafeBytes { raw in
            var r = LPPReader(raw)
            var out: [LPPRecord] = []
            while let rec = try r.next() { out.append(rec) }
            return out
        }
    }

    func world() throws -> SimWorld {
        let json = """
        {"nodes": [{"name": "a", "role": "companion"},
                   {"name": "b", "role": "companion", "telemetry": {"voltage": 3.7, "temperature": 31.5,
                    "location": [51.5, -0.125, 35], "sensors": [{"type": "temperature", "value": 18.2},
                    {"type": "humidity", "value": 55}]}},
                   {"name": "rpt", "role": "repeater", "telemetry": {"voltage": 3.95}}],
         "links": [{"a": "a", "b": "rpt"}, {"a": "rpt", "b": "b"}]}
        """
        return try SimWorld(topology: try Topology.decode(json: Array(json.utf8)))
    }

    func request(_ app: FrameApp, _ w: SimWorld, _ key: PublicKey) throws -> [LPPRecord]? {
        app.frames.removeAll()
        _ = app.call(CommandFrame.sendTelemetryRequest(key))
        guard w.mesh.run(until: { app.count(0x8B) > 0 }, limit: 30_000), let f = app.take(0x8B) else { return nil }
        return try records(Array(f[8...]))
    }

    @Test func companionSensorsFollowTheTelemetryModes() throws {
        let w = try world()
        let a = FrameApp(w.companions[0]), b = FrameApp(w.companions[1])
        exchangeAdverts(w, [a, b])
        let bKey = w.companions[1].publicKey
        // Base only: the battery and the MCU temperature.
        _ = b.call(CommandFrame.setOtherParams(manualAddContacts: 0, telemetryModes: TelemetryModes(base: 2), advertLocationPolicy: 0, multiAcks: 0))
        let base = try #require(try request(a, w, bKey))
        #expect(base.map(\.type) == [.voltage, .temperature])
        #expect(base[0].value == .scalar(3.7) && base[1].value == .scalar(31.5))
        // Everything: GPS on channel 1, the environment sensors on channels 2 and 3.
        _ = b.call(CommandFrame.setOtherParams(manualAddContacts: 0, telemetryModes: TelemetryModes(base: 2, location: 2, environment: 2),
                                                   advertLocationPolicy: 0, multiAcks: 0))
        let all = try #require(try request(a, w, bKey))
        #expect(all.map(\.type) == [.voltage, .gps, .temperature, .humidity, .temperature])
        #expect(all.map(\.channel) == [1, 1, 2, 3, 1])
        #expect(all[1].value == .gps(latitude: 51.5, longitude: -0.125, altitude: 35))
        #expect(all[2].value == .scalar(18.2) && all[3].value == .scalar(55))
        // The battery frame and the node's own telemetry use the same battery.
        #expect(Array(b.call(CommandFrame.getBatteryAndStorage())!.prefix(3)) == [0x0C, 0x74, 0x0E]) // 3700 mV
    }

    @Test func repeaterTelemetryUsesItsBattery() throws {
        let w = try world()
        let a = FrameApp(w.companions[0]), r = w.repeaters[0]
        #expect(try loginFrame(a, w, r.publicKey, "hello") != nil) // a guest
        let recs = try #require(try request(a, w, r.publicKey))
        #expect(recs.map(\.type) == [.voltage] && recs[0].value == .scalar(3.95)) // no MCU temperature given
    }

    @Test func badSensorsAreRefused() throws {
        for t in [#"{"voltage": 42}"#, #"{"location": [1]}"#, #"{"sensors": [{"type": "flux", "value": 1}]}"#] {
            let j = #"{"nodes": [{"name": "a", "role": "companion", "telemetry": "# + t + #"}], "links": []}"#
            #expect(throws: Topology.TopologyError.self) { try Topology.decode(json: Array(j.utf8)) }
        }
    }
}
