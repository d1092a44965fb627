import Testing
@testable import MeshCompanion

@Suite struct LPPTests {
    func read(_ bytes: [UInt8]) throws -> [LPPRecord] {
        try bytes.withUnsafeBytes { raw in
            var r = LPPReader(raw)
            var out: [LPPRecord] = []
            while let x = try r.next() { out.append(x) }
            return out
        }
    }

    @Test func commonTypesBigEndian() throws {
        let bytes = hex("""
            01 00 01   02 01 00   03 02 FF38   04 03 0064   05 65 012C   06 66 01   07 67 FF9C   08 68 61
            09 71 03E8 FC18 0000   0A 73 2710   0B 74 0173   0C 75 03E8   0D 76 000F4240   0E 78 55
            0F 79 FFF6   10 80 0064   11 82 000003E8   12 83 000007D0   13 84 005A   14 85 6553F100
            15 86 0064 FF9C 0000   16 88 07EF40 FFC568 0003E8   17 64 0000002A   18 8E 01   19 87 FF8000   1A 7D 0190
            """)
        let r = try read(bytes)
        let expected: [LPPRecord] = [
            .init(channel: 1, type: .digitalInput, value: .scalar(1)),
            .init(channel: 2, type: .digitalOutput, value: .scalar(0)),
            .init(channel: 3, type: .analogInput, value: .scalar(-2)),
            .init(channel: 4, type: .analogOutput, value: .scalar(1)),
            .init(channel: 5, type: .illuminance, value: .scalar(300)),
            .init(channel: 6, type: .presence, value: .scalar(1)),
            .init(channel: 7, type: .temperature, value: .scalar(-10)),
            .init(channel: 8, type: .humidity, value: .scalar(48.5)),
            .init(channel: 9, type: .accelerometer, value: .vector(x: 1, y: -1, z: 0)),
            .init(channel: 10, type: .barometer, value: .scalar(1000)),
            .init(channel: 11, type: .voltage, value: .scalar(3.71)),
            .init(channel: 12, type: .current, value: .scalar(1)),
            .init(channel: 13, type: .frequency, value: .scalar(1_000_000)),
            .init(channel: 14, type: .percentage, value: .scalar(85)),
            .init(channel: 15, type: .altitude, value: .scalar(-10)),
            .init(channel: 16, type: .power, value: .scalar(100)),
            .init(channel: 17, type: .distance, value: .scalar(1)),
            .init(channel: 18, type: .energy, value: .scalar(2)),
            .init(channel: 19, type: .direction, value: .scalar(90)),
            .init(channel: 20, type: .unixTime, value: .unixTime(0x6553_F100)),
            .init(channel: 21, type: .gyrometer, value: .vector(x: 1, y: -1, z: 0)),
            .init(channel: 22, type: .gps, value: .gps(latitude: 52, longitude: -1.5, altitude: 10)),
            .init(channel: 23, type: .genericSensor, value: .scalar(42)),
            .init(channel: 24, type: .switchValue, value: .scalar(1)),
            .init(channel: 25, type: .colour, value: .colour(r: 255, g: 128, b: 0)),
            .init(channel: 26, type: .concentration, value: .scalar(400)),
        ]
        #expect(r.count == expected.count)
        for (a, b) in zip(r, expected) { #expect(a == b) }
    }

    @Test func writerRoundTrip() throws {
        var w = LPPWriter()
        w.add(channel: 1, type: .voltage, .scalar(4.12))
        w.add(channel: 1, type: .temperature, .scalar(-3.5))
        w.add(channel: 2, type: .gps, .gps(latitude: 45.1234, longitude: -75.5, altitude: 120.25))
        w.add(channel: 3, type: .accelerometer, .vector(x: 0.5, y: -0.25, z: 1))
        let r = try read(w.bytes)
        #expect(r.map(\.value) == [.scalar(4.12), .scalar(-3.5), .gps(latitude: 45.1234, longitude: -75.5, altitude: 120.25),
                                   .vector(x: 0.5, y: -0.25, z: 1)])
    }

    @Test func unknownTypeStopsWithRemainder() throws {
        try hex("01 74 0173 02 FE 0102 03").withUnsafeBytes { raw in
            var r = LPPReader(raw)
            let first = try r.next()
            #expect(first?.type == .voltage)
            #expect(throws: LPPError.unknownType(type: 0xFE, offset: 4)) { _ = try r.next() }
            #expect(Array(r.remainder) == hex("02 FE 0102 03"))
        }
        #expect(throws: LPPError.truncated(type: 0x74, offset: 0)) { _ = try read(hex("01 74 01")) }
    }

    @Test func everyTypeReadsWithItsUnit() throws {
        let bytes = hex("""
            01 00 01   02 01 00   03 02 FF38   04 03 0064   05 65 012C   06 66 01   07 67 FF9C   08 68 61
            09 71 03E8 FC18 0000   0A 73 2710   0B 74 0173   0C 75 03E8   0D 76 000F4240   0E 78 55
            0F 79 FFF6   10 80 0064   11 82 000003E8   12 83 000007D0   13 84 005A   14 85 6553F100
            15 86 0064 FF9C 0000   16 88 07EF40 FFC568 0003E8   17 64 0000002A   18 8E 01   19 87 FF8000   1A 7D 0190
            """)
        let texts = try read(bytes).map { "\($0)" }
        #expect(texts == [
            "digital input (channel 1): 1",
            "digital output (channel 2): 0",
            "analog input (channel 3): -2.00",
            "analog output (channel 4): 1.00",
            "illuminance (channel 5): 300 lx",
            "presence (channel 6): yes",
            "temperature (channel 7): -10.0 °C",
            "humidity (channel 8): 48.5 %",
            "accelerometer (channel 9): x 1.000, y -1.000, z 0.000 g",
            "barometer (channel 10): 1000.0 hPa",
            "voltage (channel 11): 3.71 V",
            "current (channel 12): 1.000 A",
            "frequency (channel 13): 1000000 Hz",
            "percentage (channel 14): 85 %",
            "altitude (channel 15): -10 m",
            "power (channel 16): 100 W",
            "distance (channel 17): 1.000 m",
            "energy (channel 18): 2.000 kWh",
            "direction (channel 19): 90°",
            "unix time (channel 20): 1700000000 (2023-11-14 22:13:20 UTC)",
            "gyrometer (channel 21): x 1.00, y -1.00, z 0.00 °/s",
            "gps (channel 22): latitude 52.0000°, longitude -1.5000°, altitude 10.00 m",
            "generic (channel 23): 42",
            "switch (channel 24): on",
            "colour (channel 25): #ff8000",
            "concentration (channel 26): 400 ppm",
        ])
        #expect(Set(try read(bytes).map(\.type)) == Set(LPPType.allCases), "a type has no reading here")
        #expect("\(LPPRecord(channel: 1, type: .voltage, value: .scalar(4.15)))" == "voltage (channel 1): 4.15 V")
    }
}
