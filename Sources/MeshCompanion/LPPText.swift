// How LPP records read to people and in JSON-like key/value form: each type with its unit.

extension LPPType {
    /// The unit of the type's values ("" for counts, levels and on/off states).
    public var unit: String {
        switch self {
        case .digitalInput, .digitalOutput, .analogInput, .analogOutput, .genericSensor, .presence, .switchValue, .colour: return ""
        case .illuminance: return "lx"
        case .temperature: return "°C"
        case .humidity, .percentage: return "%"
        case .accelerometer: return "g"
        case .barometer: return "hPa"
        case .voltage: return "V"
        case .current: return "A"
        case .frequency: return "Hz"
        case .altitude, .distance: return "m"
        case .concentration: return "ppm"
        case .power: return "W"
        case .energy: return "kWh"
        case .direction: return "°"
        case .unixTime: return "s"
        case .gyrometer: return "°/s"
        case .gps: return "°"
        }
    }

    /// Decimals that the type's resolution carries.
    public var decimals: Int {
        switch divisor {
        case 1000: return 3
        case 100: return 2
        case 10, 2: return 1
        default: return 0
        }
    }

    /// The name with spaces, e.g. "digital input".
    public var label: String { name.split(separator: "_").joined(separator: " ") }
}

extension LPPRecord: CustomStringConvertible {
    /// E.g. "voltage (channel 1): 4.15 V", "gps (channel 2): 52.3700, 4.8900, 12.00 m".
    public var description: String { "\(type.label) (channel \(channel)): \(valueText)" }

    /// The value with its unit.
    public var valueText: String {
        func withUnit(_ s: String) -> String { type.unit.isEmpty ? s : type.unit == "°" ? s + "°" : s + " " + type.unit }
        switch value {
        case .scalar(let v):
            if type == .switchValue { return v == 0 ? "off" : "on" }
            if type == .presence { return v == 0 ? "no" : "yes" }
            return withUnit(LPPRecord.fixed(v, type.decimals))
        case .vector(let x, let y, let z):
            let d = type.decimals
            return "x \(LPPRecord.fixed(x, d)), y \(LPPRecord.fixed(y, d)), z \(LPPRecord.fixed(z, d)) \(type.unit)"
        case .gps(let lat, let lon, let alt):
            return "latitude \(LPPRecord.fixed(lat, 4))°, longitude \(LPPRecord.fixed(lon, 4))°, altitude \(LPPRecord.fixed(alt, 2)) m"
        case .colour(let r, let g, let b):
            let hex = Array("0123456789abcdef")
            return "#" + String([r, g, b].flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] })
        case .unixTime(let t):
            return "\(t) (\(LPPRecord.utc(t)))"
        }
    }

    /// `d` rounded to `decimals` places, without exponent notation.
    static func fixed(_ d: Double, _ decimals: Int) -> String {
        guard d.isFinite else { return "\(d)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let n = Int64((abs(d) * scale).rounded())
        let s = Int64(scale)
        var frac = String(n % s)
        while frac.count < decimals { frac = "0" + frac }
        return (d < 0 && n != 0 ? "-" : "") + String(n / s) + (decimals > 0 ? "." + frac : "")
    }

    /// "YYYY-MM-DD HH:MM:SS UTC" (civil date from days since 1970, proleptic Gregorian).
    static func utc(_ t: UInt32) -> String {
        let days = Int(t / 86_400), secs = Int(t % 86_400)
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(secs / 3600)):\(two(secs / 60 % 60)):\(two(secs % 60)) UTC"
    }
}
