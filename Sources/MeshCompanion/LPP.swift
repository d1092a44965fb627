// CayenneLPP telemetry (big-endian values), as carried by TELEMETRY_RESPONSE.

/// LPP data types (Cayenne and the common extended set).
public enum LPPType: UInt8, Sendable, CaseIterable {
    case digitalInput = 0
    case digitalOutput = 1
    case analogInput = 2
    case analogOutput = 3
    case genericSensor = 100
    case illuminance = 101
    case presence = 102
    case temperature = 103
    case humidity = 104
    case accelerometer = 113
    case barometer = 115
    case voltage = 116
    case current = 117
    case frequency = 118
    case percentage = 120
    case altitude = 121
    case concentration = 125
    case power = 128
    case distance = 130
    case energy = 131
    case direction = 132
    case unixTime = 133
    case gyrometer = 134
    case colour = 135
    case gps = 136
    case switchValue = 142

    /// Value size in bytes.
    public var size: Int {
        switch self {
        case .digitalInput, .digitalOutput, .presence, .humidity, .percentage, .switchValue: return 1
        case .analogInput, .analogOutput, .illuminance, .temperature, .barometer, .voltage, .current,
             .altitude, .concentration, .power, .direction: return 2
        case .colour: return 3
        case .genericSensor, .frequency, .distance, .energy, .unixTime: return 4
        case .accelerometer, .gyrometer: return 6
        case .gps: return 9
        }
    }

    /// Divisor from the wire integer to the unit value.
    var divisor: Double {
        switch self {
        case .analogInput, .analogOutput, .voltage: return 100
        case .temperature, .barometer: return 10
        case .humidity: return 2
        case .current, .accelerometer, .distance, .energy: return 1000
        case .gyrometer: return 100
        default: return 1
        }
    }

    var isSigned: Bool {
        switch self {
        case .analogInput, .analogOutput, .temperature, .accelerometer, .altitude, .gyrometer, .gps: return true
        default: return false
        }
    }

    /// Short lowercase name, e.g. "temperature".
    public var name: String {
        switch self {
        case .digitalInput: return "digital_input"
        case .digitalOutput: return "digital_output"
        case .analogInput: return "analog_input"
        case .analogOutput: return "analog_output"
        case .genericSensor: return "generic"
        case .illuminance: return "illuminance"
        case .presence: return "presence"
        case .temperature: return "temperature"
        case .humidity: return "humidity"
        case .accelerometer: return "accelerometer"
        case .barometer: return "barometer"
        case .voltage: return "voltage"
        case .current: return "current"
        case .frequency: return "frequency"
        case .percentage: return "percentage"
        case .altitude: return "altitude"
        case .concentration: return "concentration"
        case .power: return "power"
        case .distance: return "distance"
        case .energy: return "energy"
        case .direction: return "direction"
        case .unixTime: return "unix_time"
        case .gyrometer: return "gyrometer"
        case .colour: return "colour"
        case .gps: return "gps"
        case .switchValue: return "switch"
        }
    }
}

/// A decoded LPP value in its unit (°C, %, hPa, V, A, Hz, m, W, kWh, °, g, °/s, seconds).
public enum LPPValue: Hashable, Sendable {
    case scalar(Double)
    /// Accelerometer (g) or gyrometer (°/s).
    case vector(x: Double, y: Double, z: Double)
    /// Degrees and metres.
    case gps(latitude: Double, longitude: Double, altitude: Double)
    case colour(r: UInt8, g: UInt8, b: UInt8)
    case unixTime(UInt32)
}

/// One LPP record.
public struct LPPRecord: Hashable, Sendable {
    public var channel: UInt8
    public var type: LPPType
    public var value: LPPValue
    public init(channel: UInt8, type: LPPType, value: LPPValue) {
        self.channel = channel
        self.type = type
        self.value = value
    }
}

/// Reads LPP records one by one without allocating. Stops with an error at an unknown type
/// (its size is unknown, so nothing after it can be read); `remainder` then holds the rest.
public struct LPPReader {
    public let bytes: UnsafeRawBufferPointer
    public private(set) var offset = 0
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Bytes not yet read (e.g. after an unknown type, starting at its channel byte).
    public var remainder: UnsafeRawBufferPointer { bytes.tail(offset) }

    /// The next record, nil at the end (trailing zero padding also ends the payload).
    public mutating func next() throws(LPPError) -> LPPRecord? {
        // Fewer than 3 bytes cannot hold a record; the firmware pads nothing, but be lenient.
        guard bytes.count - offset >= 3 else { return nil }
        let channel = bytes[offset], raw = bytes[offset + 1]
        guard let type = LPPType(rawValue: raw) else { throw .unknownType(type: raw, offset: offset) }
        let v = offset + 2
        if v + type.size > bytes.count { throw .truncated(type: raw, offset: offset) }
        let value: LPPValue
        switch type {
        case .accelerometer, .gyrometer:
            value = .vector(x: Double(be(v, 2, true)) / type.divisor, y: Double(be(v + 2, 2, true)) / type.divisor,
                            z: Double(be(v + 4, 2, true)) / type.divisor)
        case .gps:
            value = .gps(latitude: Double(be(v, 3, true)) / 10_000, longitude: Double(be(v + 3, 3, true)) / 10_000,
                         altitude: Double(be(v + 6, 3, true)) / 100)
        case .colour:
            value = .colour(r: bytes[v], g: bytes[v + 1], b: bytes[v + 2])
        case .unixTime:
            value = .unixTime(UInt32(truncatingIfNeeded: be(v, 4, false)))
        default:
            value = .scalar(Double(be(v, type.size, type.isSigned)) / type.divisor)
        }
        offset = v + type.size
        return LPPRecord(channel: channel, type: type, value: value)
    }

    /// Big-endian integer of `n` bytes at `o`, sign-extended if `signed`.
    private func be(_ o: Int, _ n: Int, _ signed: Bool) -> Int64 {
        var v: Int64 = 0
        for i in 0..<n { v = v << 8 | Int64(bytes[o + i]) }
        if signed && n < 8 && v & (1 << (8 * Int64(n) - 1)) != 0 { v -= 1 << (8 * Int64(n)) }
        return v
    }
}

/// Builds LPP payloads (for the simulator's sensors and tests).
public struct LPPWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    public init() {}

    /// Appends a record; the value is scaled and rounded to the type's resolution.
    public mutating func add(channel: UInt8, type: LPPType, _ value: LPPValue) {
        bytes.append(channel)
        bytes.append(type.rawValue)
        func put(_ v: Double, _ n: Int) {
            let i = Int64(v.rounded())
            for s in stride(from: n - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: i >> (8 * Int64(s)))) }
        }
        switch value {
        case .scalar(let x): put(x * type.divisor, type.size)
        case .vector(let x, let y, let z): put(x * type.divisor, 2); put(y * type.divisor, 2); put(z * type.divisor, 2)
        case .gps(let lat, let lon, let alt): put(lat * 10_000, 3); put(lon * 10_000, 3); put(alt * 100, 3)
        case .colour(let r, let g, let b): bytes += [r, g, b]
        case .unixTime(let t): put(Double(t), 4)
        }
    }
}
