import MeshAir
import MeshCompanion
import MeshNet
import MeshOps
import MeshSession
import MeshDaemonClient
import MeshLink

/// Pushes from the radio as the API's typed events (`subscribe`): one JSON object per push with
/// `"event"` naming its kind and the push's fields decoded. MSG_WAITING and SEND_CONFIRMED are
/// not among them: `message` and `delivery` events say what they lead to.
enum PushJSON {
    static func event(_ p: Push) -> JSON? {
        func key(_ k: MeshCompanion.PublicKey) -> JSON { .string(k.hex) }
        func prefix(_ k: KeyPrefix) -> JSON { .string(k.hex) }
        func hex(_ b: [UInt8]) -> JSON { .string(HexCodec.encode(b)) }
        func snr(_ q: Int8) -> JSON { .double(Double(q) / 4) }
        switch p.kind {
        case .messageWaiting, .sendConfirmed:
            return nil
        case .advert(let k):
            return .obj(("event", "advert"), ("public_key", key(k)))
        case .pathUpdated(let k):
            return .obj(("event", "path_updated"), ("public_key", key(k)))
        case .newAdvert(let c):
            var pairs: [(String, JSON)] = [("event", "new_advert")]
            if let s = ContactSummary(record: p.frame.count >= CompanionLimits.contactRecordSize ? [ResponseCode.contact.rawValue] + p.frame.dropFirst() : []),
               case .object(let fields) = s.value {
                pairs += fields
            } else {
                pairs += [("public_key", key(c.publicKey)), ("name", .string(c.name))]
            }
            return .object(pairs)
        case .contactDeleted(let k):
            return .obj(("event", "contact_deleted"), ("public_key", key(k)))
        case .contactsFull:
            return .obj(("event", "contacts_full"))
        case .rawData(let q, let rssi, let payload):
            return .obj(("event", "raw_data"), ("snr", snr(q)), ("rssi", .int(Int64(rssi))), ("payload", hex(payload)))
        case .loginSuccess(let l):
            var pairs: [(String, JSON)] = [("event", "login"), ("ok", .bool(true)), ("prefix", prefix(l.prefix)), ("admin", .bool(l.isAdmin))]
            if let t = l.serverTimestamp { pairs.append(("server_time", .int(Int64(t)))) }
            return .object(pairs)
        case .loginFail(let k):
            return .obj(("event", "login"), ("ok", .bool(false)), ("prefix", prefix(k)))
        case .status(let k, let stats):
            var pairs: [(String, JSON)] = [("event", "status"), ("prefix", prefix(k))]
            if let s = stats {
                pairs += [("battery_mv", .int(Int64(s.batteryMillivolts))), ("uptime_s", .int(Int64(s.uptimeSeconds))),
                          ("noise_floor", .int(Int64(s.noiseFloor))), ("last_rssi", .int(Int64(s.lastRSSI))),
                          ("last_snr", snr(Int8(clamping: s.lastSNRQuarterDb))), ("packets_received", .int(Int64(s.packetsReceived))),
                          ("packets_sent", .int(Int64(s.packetsSent)))]
            }
            return .object(pairs)
        case .logRxData(let q, let rssi, let packet):
            var pairs: [(String, JSON)] = [("event", "log_rx"), ("snr", snr(q)), ("rssi", .int(Int64(rssi))), ("raw", hex(packet))]
            if let pk = try? Packet(bytes: packet) {
                pairs += [("payload_type", .int(Int64(pk.payloadType.rawValue))), ("flood", .bool(pk.routeType.isFlood)),
                          ("hops", .int(Int64(pk.pathLength.hopCount)))]
            }
            return .object(pairs)
        case .trace(let tag, _, _, let hashes, let snrs, let final):
            return .obj(("event", "trace"), ("tag", .int(Int64(tag))), ("path", hex(hashes)),
                        ("snrs", .array(snrs.map { snr($0) })), ("final_snr", snr(final)))
        case .telemetry(let k, let lpp):
            return .obj(("event", "telemetry"), ("prefix", prefix(k)), ("lpp", hex(lpp)))
        case .binary(let tag, let data):
            return .obj(("event", "binary"), ("tag", .int(Int64(tag))), ("data", hex(data)))
        case .pathDiscovery(let k, let outLen, let out, let inLen, let inPath):
            return .obj(("event", "path_discovery"), ("prefix", prefix(k)),
                        ("out_path", hex(Array(out.prefix(outLen.byteCount)))), ("in_path", hex(Array(inPath.prefix(inLen.byteCount)))))
        case .controlData(let q, let rssi, let pl, let payload):
            return .obj(("event", "control_data"), ("snr", snr(q)), ("rssi", .int(Int64(rssi))),
                        ("hops", pl.isUnknown ? .null : .int(Int64(pl.hopCount))), ("payload", hex(payload)))
        case .other:
            return .obj(("event", "push"), ("code", .int(Int64(p.code))), ("raw", hex(p.frame)))
        }
    }
}
