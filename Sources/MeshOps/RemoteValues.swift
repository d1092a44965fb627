import MeshCompanion
import MeshSession

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
            // The tail differs by server type (the names of `stats radio` and `stats packets`).
            if let a = st.rxAirTimeSeconds { o.append(.init("rx_air_s", .int(a))) }
            if let e = st.receiveErrors { o.append(.init("receive_errors", .int(e))) }
            if let p = st.postedCount { o.append(.init("posted", .int(p))) }
            if let p = st.postPushCount { o.append(.init("post_pushes", .int(p))) }
            return .object(o)
        }
        fields.append(.init("stats", ok ?? .hex(f.dropFirst(8))))
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
        if let name { fields.append(.init("name", .string(name))) }
        fields.append(.init("lpp", .hex(f.dropFirst(8))))
        fields.append(.init("records", .array(records)))
        if !undecoded.isEmpty { fields.append(.init("undecoded", .hex(undecoded))) }
        return .object(fields)
    }

    /// One LPP record: channel, type, value(s) in the type's unit, and the record as a person reads it.
    static func lppValue(_ r: LPPRecord) -> Value {
        var fields: [Value.Field] = [.init("channel", .int(r.channel)), .init("type", .string(r.type.name))]
        switch r.value {
        case .scalar(let v): fields.append(.init("value", .double(v)))
        case .vector(let x, let y, let z): fields += [.init("x", .double(x)), .init("y", .double(y)), .init("z", .double(z))]
        case .gps(let lat, let lon, let alt):
            fields += [.init("latitude", .double(lat)), .init("longitude", .double(lon)), .init("altitude", .double(alt))]
        case .colour(let red, let green, let blue): fields.append(.init("value", .hex([red, green, blue])))
        case .unixTime(let t): fields.append(.init("value", .int(t)))
        }
        if !r.type.unit.isEmpty, r.type != .gps { fields.append(.init("unit", .string(r.type.unit))) }
        fields.append(.init("text", .string(r.description)))
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
                var fields: [Value.Field] = [.init("prefix", .hex(e.prefix))]
                if let n = known.first(where: { $0.publicKey.starts(with: e.prefix) }) { fields.append(.init("name", .string(n.name))) }
                fields.append(.init("heard_s_ago", .int(e.secondsAgo)))
                fields.append(.init("snr", .double(Double(e.snrQuarterDb) / 4)))
                list.append(.object(fields))
            }
            pages += 1
            if page.entries.isEmpty { break }
        } while list.count < total && pages < 64
        return .object([.init("name", .string(c.name)), .init("total", .int(total)), .init("neighbours", .array(list))])
    }

    func traceValue(_ f: [UInt8]) -> Value {
        guard let t = TraceResult(frame: f) else { return .object([.init("raw", .hex(f))]) }
        let hops: [Value] = t.hops.map { .object([.init("hash", .hex($0.hash)), .init("snr", .double(Double($0.snrQuarterDb) / 4))]) }
        return .object([.init("tag", .int(t.tag)), .init("hops", .array(hops)),
                        .init("final_snr", .double(Double(t.finalSNRQuarterDb) / 4))])
    }
}
