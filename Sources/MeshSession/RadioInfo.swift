import MeshCompanion

/// What `info` reports about a radio, from its SELF_INFO and DEVICE_INFO frames: one definition
/// for the command line's `info --json` and the daemon's `info` op.
public enum RadioInfo {
    /// The fields, in a stable order; nil when SELF_INFO is too short to be one.
    public static func value(selfInfo s: [UInt8], deviceInfo d: [UInt8]) -> Value? {
        guard s.count >= 58 else { return nil }
        var fields: [Value.Field] = [
            .init("name", .string(String(decoding: s[58...].prefix { $0 != 0 }, as: UTF8.self))),
            .init("public_key", .hex(s[4..<36])),
            .init("type", .string(ContactType(rawValue: s[1]).description)),
            .init("tx_power_dbm", .int(Int8(bitPattern: s[2]))),
            .init("max_tx_power_dbm", .int(Int8(bitPattern: s[3]))),
            .init("latitude", .double(Double(Int32(bitPattern: readU32(s, 36))) / 1e6)),
            .init("longitude", .double(Double(Int32(bitPattern: readU32(s, 40))) / 1e6)),
            .init("frequency_mhz", .double(Double(readU32(s, 48)) / 1000)),
            .init("bandwidth_khz", .double(Double(readU32(s, 52)) / 1000)),
            .init("spreading_factor", .int(s[56])),
            .init("coding_rate", .int(s[57])),
            .init("multi_acks", .int(s[44])),
            .init("advert_location_policy", .int(s[45])),
            .init("telemetry_modes", telemetryModes(s[46])),
            .init("manual_add_contacts", .bool(s[47] & 1 != 0)),
        ]
        if d.count >= 4 {
            fields.append(.init("protocol_version", .int(d[1])))
            fields.append(.init("max_contacts", .int(Int(d[2]) * 2)))
            fields.append(.init("max_channels", .int(d[3])))
        }
        if d.count >= 80 {
            fields.append(.init("firmware_version", .string(cString(d[60..<80]))))
            fields.append(.init("firmware_build_date", .string(cString(d[8..<20]))))
            fields.append(.init("model", .string(cString(d[20..<60]))))
        }
        if d.count >= 82 {
            fields.append(.init("client_repeat", .bool(d[80] != 0)))
            fields.append(.init("path_hash_mode", .int(d[81])))
        }
        return .object(fields)
    }

    /// SELF_INFO's packed telemetry modes (`env<<4 | loc<<2 | base`) by name.
    public static func telemetryModes(_ packed: UInt8) -> Value {
        func mode(_ v: UInt8) -> Value { .string(["deny", "flags", "allow", "3"][Int(v & 3)]) }
        return .object([.init("base", mode(packed)), .init("location", mode(packed >> 2)), .init("environment", mode(packed >> 4))])
    }

    static func cString(_ b: ArraySlice<UInt8>) -> String { String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) }
}
