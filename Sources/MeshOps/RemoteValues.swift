import MeshCompanion
import MeshSession

/// Replies of remote nodes (repeaters, room servers, sensors) as printed values.
extension Executor {
    func statusValue(_ f: [UInt8], name: String) -> Value {
        var fields: [Value.Field] = [("name", .string(name))]
        let ok: Value? = f.withUnsafeBytes { b in
            guard case .statusResponse(let r)? = try? CompanionFrame.decode(b), let st = r.stats else { return nil }
            var o: [Value.Field] = [
                ("battery_mv", .int(st.batteryMillivolts)), ("tx_queue", .int(st.txQueueLength)),
                ("noise_floor", .int(st.noiseFloor)), ("last_rssi", .int(st.lastRSSI)),
                ("last_snr", .double(Double(st.lastSNRQuarterDb) / 4)),
                ("packets_received", .int(st.packetsReceived)), ("packets_sent", .int(st.packetsSent)),
                ("air_time_s", .int(st.airTimeSeconds)), ("uptime_s", .int(st.uptimeSeconds)),
                ("sent_flood", .int(st.sentFlood)), ("sent_direct", .int(st.sentDirect)),
                ("received_flood", .int(st.receivedFlood)), ("received_direct", .int(st.receivedDirect)),
                ("error_events", .int(st.errorEvents)), ("direct_duplicates", .int(st.directDuplicates)),
                ("flood_duplicates", .int(st.floodDuplicates)),
            ]
            // The tail differs by server type (the names of `stats radio` and `stats packets`).
            if let a = st.rxAirTimeSeconds { o.append(("rx_air_s", .int(a))) }
            if let e = st.receiveErrors { o.append(("receive_errors", .int(e))) }
            if let p = st.postedCount { o.append(("posted", .int(p))) }
            if let p = st.postPushCount { o.append(("post_pushes", .int(p))) }
            return .object(o)
        }
        fields.append(("stats", ok ?? .hex(f.dropFirst(8))))
        return .object(fields)
    }

    func telemetryValue(_ f: [UInt8], name: String?) -> Value {
        var records: [Value] = []
        var undecoded: [UInt8] = []
        f.withUnsafeBytes { b in
            guard case .telemetryResponse(let t)? = try? CompanionFrame.decode(b) else { return }
            var reader = t.lpp
            while true {
                do {
                    guard let r = try reader.next() else { break }
                    records.append(Executor.lppValue(r))
                } catch {
                    undecoded = Array(reader.remainder)  // an unknown type: its size, so the rest, is unknown
                    break
                }
            }
        }
        var fields: [Value.Field] = []
        if let name { fields.append(("name", .string(name))) }
        fields.append(("lpp", .hex(f.dropFirst(8))))
        fields.append(("records", .array(records)))
        if !undecoded.isEmpty { fields.append(("undecoded", .hex(undecoded))) }
        return .object(fields)
    }

    /// One LPP record: channel, type, value(s) in the type's unit, and the record as a person reads it.
    static func lppValue(_ r: LPPRecord) -> Value {
        var fields: [Value.Field] = [("channel", .int(r.channel)), ("type", .string(r.type.name))]
        switch r.value {
        case .scalar(let v): fields.append(("value", .double(v)))
        case .vector(let x, let y, let z): fields += [("x", .double(x)), ("y", .double(y)), ("z", .double(z))]
        case .gps(let lat, let lon, let alt):
            fields += [("latitude", .double(lat)), ("longitude", .double(lon)), ("altitude", .double(alt))]
        case .colour(let red, let green, let blue): fields.append(("value", .hex([red, green, blue])))
        case .unixTime(let t): fields.append(("value", .int(t)))
        }
        if !r.type.unit.isEmpty, r.type != .gps { fields.append(("unit", .string(r.type.unit))) }
        fields.append(("text", .string(r.description)))
        return .object(fields)
    }

    /// Key prefix length asked of a repeater's neighbour table (as contact messages name senders).
    static let neighbourPrefixLength = 6

    /// REQ_TYPE_GET_NEIGHBOURS with a fresh nonce (each request packet unique).
    static func neighboursRequest(offset: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return RemoteRequestData.neighbours(offset: offset, prefixLength: neighbourPrefixLength,
                                        nonce: UInt32.random(in: 0...UInt32.max, using: &rng))
    }

    /// A repeater's whole neighbour table, page by page (a page carries at most 130 bytes of entries).
    func neighbours(of c: ContactSummary) async throws(ClientError) -> Value {
        var list: [Value] = []
        var total = 0
        var pages = 0
        let known = (try? await contacts()) ?? []
        repeat {
            let o = try await radio.request(.binary(publicKey: c.publicKey, data: Executor.neighboursRequest(offset: list.count)))
            let f = try requestReply(o, what: "the neighbours of \(c.name)", timeoutHint: "log in first (`pocketmesh login`)")
            guard let page = NeighbourPage(frame: f, prefixLength: Executor.neighbourPrefixLength) else {
                throw .link("\(c.name) sent a malformed neighbour table: try again.")
            }
            total = page.total
            for e in page.entries {
                var fields: [Value.Field] = [("prefix", .hex(e.prefix))]
                if let n = known.first(where: { $0.publicKey.starts(with: e.prefix) }) { fields.append(("name", .string(n.name))) }
                fields.append(("heard_s_ago", .int(e.secondsAgo)))
                fields.append(("snr", .double(Double(e.snrQuarterDb) / 4)))
                list.append(.object(fields))
            }
            pages += 1
            if page.entries.isEmpty { break }
        } while list.count < total && pages < 64
        return .object([("name", .string(c.name)), ("total", .int(total)), ("neighbours", .array(list))])
    }

    func traceValue(_ f: [UInt8]) -> Value {
        guard let t = TraceResult(frame: f) else { return .object([("raw", .hex(f))]) }
        let hops: [Value] = t.hops.map { .object([("hash", .hex($0.hash)), ("snr", .double(Double($0.snrQuarterDb) / 4))]) }
        return .object([("tag", .int(t.tag)), ("hops", .array(hops)),
                        ("final_snr", .double(Double(t.finalSNRQuarterDb) / 4))])
    }
}
