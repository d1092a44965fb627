import MeshCompanion

/// A node's battery and sensors, as its telemetry reports them (Cayenne LPP, channel 1 for the
/// node itself): the battery voltage, the GPS position (location permission) and the environment
/// sensors on channels 2, 3, … in order (environment permission), then the MCU temperature, as
/// the firmware's `querySensors` lays them out.
///
/// In the simulator these are simulated values (4.15 V unless the topology says otherwise). A
/// real node (`pocketmesh node`) reports what its host measures, through the node's
/// `sensorSource`, or nothing: no voltage or temperature it did not read (a status then says
/// 0 mV, and telemetry leaves the record out).
///
/// Topology form: `"telemetry": {"voltage": 3.9, "temperature": 31.5, "location": [51.5, -0.12, 35],
/// "sensors": [{"type": "temperature", "value": 18.2}, {"type": "humidity", "value": 55}]}`.
public struct Sensors: Sendable, Equatable {
    public struct Sensor: Sendable, Equatable {
        /// An LPP type name: temperature, humidity, barometer, illuminance, voltage, current, …
        public var type: String
        public var value: Double
        public init(type: String, value: Double) { self.type = type; self.value = value }
    }

    /// Battery voltage, V (none: not measured).
    public var voltage: Double?
    /// MCU temperature, °C (none: the board has no sensor).
    public var temperature: Double?
    /// Latitude, longitude (degrees) and optionally altitude (m) of a GPS.
    public var location: [Double]?
    public var sensors: [Sensor]

    public init(voltage: Double? = 4.15, temperature: Double? = nil, location: [Double]? = nil, sensors: [Sensor] = []) {
        self.voltage = voltage; self.temperature = temperature; self.location = location; self.sensors = sensors
    }

    static let basePermission: UInt8 = 1, locationPermission: UInt8 = 2, environmentPermission: UInt8 = 4

    /// Scalar LPP types a sensor may be.
    static func lppType(_ name: String) -> LPPType? {
        LPPType.allCases.first { $0.name == name && $0.size <= 4 && $0 != .gps && $0 != .unixTime && $0 != .colour }
    }

    /// A sentence naming the first thing wrong, or nil.
    public var problem: String? {
        if let voltage, !(0...10).contains(voltage) { return "telemetry voltage must be within 0...10 V" }
        if let l = location, !(2...3).contains(l.count) || abs(l[0]) > 90 || abs(l[1]) > 180 {
            return "telemetry location must be [latitude, longitude] or [latitude, longitude, altitude] in degrees and metres"
        }
        if sensors.count > 16 { return "telemetry has more than 16 sensors" }
        for s in sensors where Self.lppType(s.type) == nil { return "telemetry sensor type \"\(s.type)\" is not a Cayenne LPP sensor type" }
        return nil
    }

    /// The battery as status frames carry it; 0 when not measured.
    public var millivolts: UInt16 { voltage.map { UInt16(clamping: Int(($0 * 1000).rounded())) } ?? 0 }

    /// The LPP records a requester with `permissions` (base, location, environment bits) gets.
    public func lpp(permissions: UInt8) -> [UInt8] {
        var w = LPPWriter()
        if let voltage { w.add(channel: 1, type: .voltage, .scalar(voltage)) }
        if permissions & Self.locationPermission != 0, let l = location, l.count >= 2 {
            w.add(channel: 1, type: .gps, .gps(latitude: l[0], longitude: l[1], altitude: l.count > 2 ? l[2] : 0))
        }
        if permissions & Self.environmentPermission != 0 {
            for (i, s) in sensors.enumerated() {
                if let t = Self.lppType(s.type) { w.add(channel: UInt8(2 + i), type: t, .scalar(s.value)) }
            }
        }
        if let t = temperature { w.add(channel: 1, type: .temperature, .scalar(t)) }
        return w.bytes
    }
}
