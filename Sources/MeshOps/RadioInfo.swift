import MeshCompanion
import MeshSession

/// What `info` reports about a radio, from its SELF_INFO and DEVICE_INFO frames: one definition
/// for the command line's `info --json` and the daemon's `info` op.
public enum RadioInfo {
    /// The fields, in a stable order; nil when SELF_INFO is too short to be one.
    public static func value(selfInfo: [UInt8], deviceInfo: [UInt8]) -> Value? {
        guard let s = RadioSelf(frame: selfInfo) else { return nil }
        return value(s, RadioDevice(frame: deviceInfo))
    }

    public static func value(_ s: RadioSelf, _ d: RadioDevice?) -> Value {
        var fields: [Value.Field] = [
            ("name", .string(s.name)),
            ("public_key", .string(s.publicKey.hex)),
            ("type", .string(s.advertType.description)),
            ("tx_power_dbm", .int(s.txPowerDbm)),
            ("max_tx_power_dbm", .int(s.maxTxPowerDbm)),
            ("latitude", .double(Double(s.latitude) / 1e6)),
            ("longitude", .double(Double(s.longitude) / 1e6)),
            ("frequency_mhz", .double(Double(s.radio.frequencyKHz) / 1000)),
            ("bandwidth_khz", .double(Double(s.radio.bandwidthHz) / 1000)),
            ("spreading_factor", .int(s.radio.spreadingFactor)),
            ("coding_rate", .int(s.radio.codingRate)),
            ("multi_acks", .int(s.multiAcks)),
            ("advert_location_policy", .int(s.advertLocationPolicy)),
            ("telemetry_modes", telemetryModes(s.telemetryModes.packed)),
            ("manual_add_contacts", .bool(s.manualAddContacts & 1 != 0)),
        ]
        if let d {
            fields.append(("protocol_version", .int(d.firmwareVersionCode)))
            if let n = d.maxContacts { fields.append(("max_contacts", .int(n))) }
            if let n = d.maxChannels { fields.append(("max_channels", .int(n))) }
            if let v = d.version { fields.append(("firmware_version", .string(v))) }
            if let v = d.buildDate { fields.append(("firmware_build_date", .string(v))) }
            if let v = d.model { fields.append(("model", .string(v))) }
            if let v = d.clientRepeat { fields.append(("client_repeat", .bool(v))) }
            if let v = d.pathHashMode { fields.append(("path_hash_mode", .int(v))) }
        }
        return .object(fields)
    }

    /// SELF_INFO's packed telemetry modes (`env<<4 | loc<<2 | base`) by name.
    public static func telemetryModes(_ packed: UInt8) -> Value {
        func mode(_ v: UInt8) -> Value { .string(["deny", "flags", "allow", "3"][Int(v & 3)]) }
        return .object([("base", mode(packed)), ("location", mode(packed >> 2)), ("environment", mode(packed >> 4))])
    }
}
