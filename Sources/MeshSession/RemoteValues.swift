import MeshCompanion

/// Replies of remote nodes (repeaters, room servers, sensors) as printed values.
extension Executor {
    func statusValue(_ f: [UInt8], name: String) -> Value {
        var fields: [Value.Field] = [.init("name", .string(name))]
        let ok: Value? = f.withUnsafeBytes { b in
            guard case .statusResponse(let r)? = try? CompanionFrame.decode(b), let st = r.stats else { return nil }
            var o: [Value.Field] = [
                .init("battery_mv", .int(st.batteryMillivolts)), .init("tx_queue", .int(st.txQueueLength)),
                .init("noise_floor", .int(st.noiseFloor)), .init("last_rssi", .int(st.lastRSSI)),
                .init("last_snr", .double(Double(st.lastSNRQuarterDb) / 4)),
                .init("packets_received", .int(st.packetsReceived)), .init("packets_sent", .int(st.packetsSent)),
                .init("air_time_s", .int(st.airTimeSeconds)), .init("uptime_s", .int(st.uptimeSeconds)),
                .init("sent_flood", .int(st.sentFlood)), .init("sent_direct", .int(st.sentDirect)),
                .init("received_flood", .int(st.receivedFlood)), .init("received_direct", .int(st.receivedDirect)),
                .init("error_events", .int(st.errorEvents)), .init("direct_duplicates", .int(st.directDuplicates)),
                .init("flood_duplicates", .int(st.floodDuplicates)),
            ]
            if let p = st.postedCount { o.append(.init("posted", .int(p))) }
            return .object(o)
        }
        fields.append(.init("stats", ok ?? .hex(f.dropFirst(8))))
        return .object(fields)
    }

    func telemetryValue(_ f: [UInt8], name: String?) -> Value {
        var records: [Value] = []
        f.withUnsafeBytes { b in
            guard case .telemetryResponse(let t)? = try? CompanionFrame.decode(b) else { return }
            var reader = t.lpp
            while let r = try? reader.next() {
                records.append(.string("\(r)"))
            }
        }
        var fields: [Value.Field] = []
        if let name { fields.append(.init("name", .string(name))) }
        fields.append(.init("lpp", .hex(f.dropFirst(8))))
        fields.append(.init("records", .array(records)))
        return .object(fields)
    }

    func neighboursValue(_ f: [UInt8]) -> Value {
        // Reply data after the tag: total u16, count u16, then count × (prefix[4], secs_ago u32, snr×4 i8).
        let d = Array(f.dropFirst(6))
        guard d.count >= 4 else { return .object([.init("raw", .hex(d))]) }
        let total = Int(d[0]) | Int(d[1]) << 8
        let count = Int(d[2]) | Int(d[3]) << 8
        var list: [Value] = []
        var i = 4
        for _ in 0..<count where i + 9 <= d.count {
            list.append(.object([.init("prefix", .hex(d[i..<(i + 4)])), .init("heard_s_ago", .int(readU32(d, i + 4))),
                                 .init("snr", .double(Double(Int8(bitPattern: d[i + 8])) / 4))]))
            i += 9
        }
        return .object([.init("total", .int(total)), .init("neighbours", .array(list))])
    }

    func traceValue(_ f: [UInt8]) -> Value {
        guard f.count >= 12 else { return .object([.init("raw", .hex(f))]) }
        let n = Int(f[2]), flags = f[3]
        let hashes = Array(f.dropFirst(12).prefix(n))
        let snrCount = n >> Int(flags & 3)
        let snrs = Array(f.dropFirst(12 + n).prefix(snrCount))
        var hops: [Value] = []
        for (i, s) in snrs.enumerated() {
            hops.append(.object([.init("hash", .hex(hashes[min(i, max(0, hashes.count - 1))...].prefix(1 << Int(flags & 3)))),
                                 .init("snr", .double(Double(Int8(bitPattern: s)) / 4))]))
        }
        let final: Value = f.count > 12 + n + snrCount ? .double(Double(Int8(bitPattern: f[12 + n + snrCount])) / 4) : .null
        return .object([.init("tag", .int(readU32(f, 4))), .init("hops", .array(hops)), .init("final_snr", final)])
    }
}
