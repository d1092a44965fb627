import MeshCompanion
import MeshNet
import MeshStore

/// The JSON of the daemon's signal and battery samples (`samples signal`, `samples battery`):
/// the same from the daemon and from the store folder read directly.
public enum SampleJSON {
    static let routes = ["transport_flood", "flood", "direct", "transport_direct"]

    public static func signal(_ s: SignalSample) -> JSON {
        var pairs: [(String, JSON)] = [("time", .int(Int64(s.time))), ("kind", .string(s.kind.name)),
                                      ("snr", .double(Double(s.snrQuarterDb) / 4)),
                                      ("rssi", s.rssi.map { .int(Int64($0)) } ?? .null)]
        if s.kind == .packet {
            pairs.append(("route", .string(routes[Int(s.header & 3)])))
            pairs.append(("payload_type", .int(Int64((s.header >> 2) & 0x0F))))
        }
        let path = PathLength(rawValue: s.pathLength)
        if !path.isUnknown && path.isValid { pairs.append(("hops", .int(Int64(path.hopCount)))) }
        if !s.from.isEmpty { pairs.append(("from", .string(HexCodec.encode(s.from)))) }
        return .object(pairs)
    }

    public static func battery(_ s: BatterySample) -> JSON {
        var pairs: [(String, JSON)] = [("time", .int(Int64(s.time))), ("millivolts", .int(Int64(s.millivolts)))]
        if let u = s.usedKB, let t = s.totalKB {
            pairs.append(("storage_used_kb", .int(Int64(u))))
            pairs.append(("storage_total_kb", .int(Int64(t))))
        }
        return .object(pairs)
    }

    /// The result of `samples_signal` / `samples_battery` from a ring (nil: none kept yet):
    /// `{"samples":[...],"capacity":N}`, oldest first.
    public static func result(_ ring: SampleRing?, kind: SampleRing.Kind, since: UInt32, limit: Int) throws -> [(String, JSON)] {
        let records = try ring?.records(since: since, limit: limit) ?? []
        let list: [JSON] = kind == .signal ? records.compactMap { SignalSample($0).map(signal) }
                                           : records.compactMap { BatterySample($0).map(battery) }
        return [("samples", .array(list)), ("capacity", .int(Int64(ring?.capacity ?? kind.capacity)))]
    }
}
