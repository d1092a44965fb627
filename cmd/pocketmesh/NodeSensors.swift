import Glibc
import MeshLink
import MeshNode
import MeshSession

/// What `pocketmesh node` reports as its battery and temperature (status, telemetry, the admin
/// CLI's `stats-core`): values this host measures, read from sysfs each time they are asked
/// for, or nothing (never the simulator's invented ones).
///
/// `--battery-sensor` and `--temperature-sensor` take `auto` (the default), `none`, or a file:
/// a power supply's `voltage_now` (microvolts, /sys/class/power_supply/NAME/), an hwmon
/// `inN_input` (millivolts, e.g. an INA219 on the solar supply), a thermal zone's `temp` or an
/// hwmon `tempN_input` (millidegrees). `auto` takes, for the battery, the first power supply of
/// type Battery with a voltage, else the first other power supply with one; for the
/// temperature, the first thermal zone, else the first hwmon `temp1_input`; nothing when there
/// is none. POCKETMESH_SYSFS moves the tree `auto` looks in (tests use a made-up one).
struct HostSensors {
    enum Unit { case microvolts, millivolts, millidegrees }

    struct Source: Equatable {
        let path: String
        let unit: Unit

        /// The value in volts or degrees, or nil when the file cannot be read as a number now.
        func value() -> Double? {
            guard let text = HostSensors.readSmall(path),
                  let n = Int64(text.trimmedSpaces()) else { return nil }
            switch unit {
            case .microvolts: return Double(n) / 1_000_000
            case .millivolts, .millidegrees: return Double(n) / 1000
            }
        }
    }

    var battery: Source?
    var temperature: Source?

    static var sysfsRoot: String {
        if let p = getenv("POCKETMESH_SYSFS"), p.pointee != 0 { return String(cString: p) }
        return "/sys"
    }

    /// Nothing measured.
    init() {}

    /// `battery` and `temperature` as the options give them (nil: auto).
    init(battery: String?, temperature: String?, root: String = HostSensors.sysfsRoot) throws {
        self.battery = try Self.choose(battery ?? "auto", option: "--battery-sensor", kinds: [.microvolts, .millivolts]) {
            Self.autoBattery(root: root)
        }
        self.temperature = try Self.choose(temperature ?? "auto", option: "--temperature-sensor", kinds: [.millidegrees]) {
            Self.autoTemperature(root: root)
        }
    }

    /// What to report now: the sources read, nothing for those not there or not readable.
    func read() -> Sensors {
        Sensors(voltage: battery?.value(), temperature: temperature?.value())
    }

    static func choose(_ spec: String, option: String, kinds: [Unit], auto: () -> Source?) throws -> Source? {
        switch spec {
        case "none": return nil
        case "auto": return auto()
        default:
            let what = kinds.contains(.millidegrees)
                ? "a thermal zone's temp or an hwmon tempN_input file"
                : "a power supply's voltage_now or an hwmon inN_input file"
            guard let unit = unit(ofFile: spec), kinds.contains(unit) else {
                throw ClientError.usage("\(option) \(spec): give \(what), auto or none.")
            }
            let source = Source(path: spec, unit: unit)
            guard source.value() != nil else {
                throw ClientError.usage("\(option) \(spec): it cannot be read as a number; give \(what), auto or none.")
            }
            return source
        }
    }

    /// The unit a sysfs file's name says its value is in.
    static func unit(ofFile path: String) -> Unit? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        if name.hasPrefix("voltage_") { return .microvolts }
        if name.hasPrefix("in") && name.hasSuffix("_input") && name.dropFirst(2).dropLast(6).allSatisfy(\.isNumber) && name.count > 8 {
            return .millivolts
        }
        if name == "temp" { return .millidegrees }
        if name.hasPrefix("temp") && name.hasSuffix("_input") && name.dropFirst(4).dropLast(6).allSatisfy(\.isNumber) && name.count > 10 {
            return .millidegrees
        }
        return nil
    }

    static func autoBattery(root: String) -> Source? {
        let dir = root + "/class/power_supply"
        var others: [Source] = []
        for name in listing(dir) {
            let s = Source(path: "\(dir)/\(name)/voltage_now", unit: .microvolts)
            guard let v = s.value(), v > 0 else { continue }
            if readSmall("\(dir)/\(name)/type")?.trimmedSpaces() == "Battery" { return s }
            others.append(s)
        }
        return others.first
    }

    static func autoTemperature(root: String) -> Source? {
        let zones = root + "/class/thermal"
        let names = listing(zones).filter { $0.hasPrefix("thermal_zone") }
            .sorted { (Int($0.dropFirst(12)) ?? .max) < (Int($1.dropFirst(12)) ?? .max) }
        for name in names {
            let s = Source(path: "\(zones)/\(name)/temp", unit: .millidegrees)
            if s.value() != nil { return s }
        }
        let hwmon = root + "/class/hwmon"
        for name in listing(hwmon) {
            let s = Source(path: "\(hwmon)/\(name)/temp1_input", unit: .millidegrees)
            if s.value() != nil { return s }
        }
        return nil
    }

    /// The names in a folder, sorted; none when it cannot be read.
    static func listing(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { out.append(name) }
        }
        return out.sorted()
    }

    /// At most 64 bytes of a small file (sysfs attributes), or nil.
    static func readSmall(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 64)
        let r = buf.withUnsafeMutableBytes { raw in retryingOnInterrupt { Glibc.read(fd, raw.baseAddress, raw.count) } }
        guard case .success(let n) = r, n > 0 else { return nil }
        return String(decoding: buf[0..<n], as: UTF8.self)
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    fileprivate func trimmedSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
