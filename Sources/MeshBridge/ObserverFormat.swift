import Glibc
import MeshAir
import MeshCompanion
import MeshNet
import MeshSession
import MeshLink
import MeshOps

/// What the observer uploader publishes, exactly as meshcore-packet-capture (the uploader the
/// MeshCore analyzer and map sites are built on) publishes it for the same packet and status: the
/// same keys in the same order, the same values computed the same way from the same frames, and
/// the same text (`json.dumps`: ", " and ": " separators, non-ASCII escaped, floats as Python
/// writes them). PocketMesh adds `score` and `duration` to packets (names the uploader does not
/// use, after its keys). Pure functions of their inputs; byte-exact tests in ObserverTests, and
/// Tests/interop/test_observer_format.py compares with a recording of the uploader itself.
public enum ObserverFormat {
    /// `meshcore/{IATA}/{PUBLIC KEY}`: the topic root of one observer.
    public static func topicRoot(iata: String, publicKey: PublicKey) -> String {
        "meshcore/\(iata)/\(publicKey.hex.uppercased())"
    }

    /// An IATA code as the observer networks use it: 3 to 8 letters or digits, upper case.
    public static func iata(_ text: String) -> String? {
        let up = text.uppercased()
        guard (3...8).contains(up.utf8.count), up.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { return nil }
        return up
    }

    /// SNR in dB from quarter dB, as Python prints a float (12.0, -1.25).
    public static func snr(_ quarterDb: Int8) -> String {
        let q = Int(quarterDb)
        let a = abs(q)
        return (q < 0 ? "-" : "") + "\(a / 4)." + ["0", "25", "5", "75"][a % 4]
    }

    /// The firmware's reception score (`RadioLibWrapper::packetScoreInt`), times 1000 as its RX log
    /// line prints it: 0 below the SF's SNR threshold, else (SNR − threshold) / 10 × (1 − len / 256),
    /// clamped to 0...1.
    public static func score(snrQuarterDb: Int8, spreadingFactor sf: Int, length: Int) -> Int {
        guard (7...12).contains(sf) else { return 0 }
        let threshold = [-7.5, -10, -12.5, -15, -17.5, -20][sf - 7]
        let snr = Double(snrQuarterDb) / 4
        guard snr >= threshold else { return 0 }
        let s = (snr - threshold) / 10 * (1 - Double(length) / 256)
        return Int(max(0, min(1, s)) * 1000)
    }

    /// The UTC wall clock split as the uploader writes it: `datetime.isoformat()` (microseconds
    /// left out when they are zero, as Python does), `%H:%M:%S` and `%d/%m/%Y`.
    public static func clock(epochMicros: Int64) -> (iso: String, time: String, date: String) {
        var t = time_t(epochMicros / 1_000_000)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let micros = epochMicros % 1_000_000
        let digits = String(micros)
        let frac = micros == 0 ? "" : "." + String(repeating: "0", count: 6 - digits.count) + digits
        let year = "\(tm.tm_year + 1900)"
        let time = "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))"
        let iso = "\(year)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(time)\(frac)+00:00"
        return (iso, time, "\(two(tm.tm_mday))/\(two(tm.tm_mon + 1))/\(year)")
    }

    // MARK: packets

    /// The uploader's reading of a packet (`decode_and_publish_message`): nil where it gives up
    /// (then the packet still goes out, as route `U`, type and payload length `0`).
    public struct Decoded: Equatable {
        /// F (flood, with or without transport codes), D (direct), T (direct with transport codes).
        public var route: String
        public var payloadType: UInt8
        /// The path's hops, lower-case hex, each as wide as the path length byte says.
        public var hops: [String]
    }

    /// The path length byte as the uploader reads it (`_decode_packed_path_length`): hop count in
    /// the low 6 bits, bytes per hop − 1 in the top 2; the reserved 4-byte mode and paths longer
    /// than 64 bytes fall back to the old reading (the whole byte is the length, 1 byte a hop).
    public static func pathBytes(_ p: PathLength) -> (length: Int, perHop: Int) {
        if !p.isValid { return (Int(p.rawValue), 1) }
        return (p.byteCount, p.hashSize)
    }

    /// The uploader's route letter: flood with or without transport codes is `F`.
    public static func routeLetter(_ r: RouteType) -> String {
        switch r {
        case .transportFlood, .flood: "F"
        case .direct: "D"
        case .transportDirect: "T"
        }
    }

    /// Where the path length byte sits: after the header, and after the transport codes if the
    /// route type carries them.
    static func pathLengthIndex(_ header: PacketHeader) -> Int {
        header.routeType.hasTransportCodes ? 5 : 1
    }

    public static func decode(_ raw: [UInt8]) -> Decoded? {
        guard raw.count >= 2 else { return nil }
        // The header as MeshAir types it; the path as the uploader reads it (`pathBytes`, more
        // lenient than MeshAir's `PacketView`, which rejects what the uploader still publishes).
        let header = PacketHeader(byte: raw[0])
        var i = pathLengthIndex(header)
        guard raw.count > i else { return nil }
        let (length, perHop) = pathBytes(PathLength(rawValue: raw[i]))
        i += 1
        guard raw.count >= i + length else { return nil }
        let path = raw[i..<(i + length)]
        let payload = raw[(i + length)...]
        guard header.version == 0 else { return nil }  // only version 1 (0)
        if header.payloadType == .advert {
            // An advert shorter than key, time and signature is dropped; so is one whose node type
            // (the flags' low nibble) is 8 or more (Python's strict `AdvertFlags(byte)` raises for it).
            guard payload.count >= Advert.fixedSize else { return nil }
            if payload.count > Advert.fixedSize, AdvertType(rawValue: payload[payload.startIndex + Advert.fixedSize]).rawValue >= 8 { return nil }
        }
        let hex = HexCodec.encode(Array(path))
        let width = perHop * 2
        let cut = hex.count % width == 0 ? width : 2
        var hops: [String] = []
        var at = hex.startIndex
        while at < hex.endIndex {
            let next = hex.index(at, offsetBy: cut)
            hops.append(String(hex[at..<next]))
            at = next
        }
        return Decoded(route: routeLetter(header.routeType), payloadType: header.payloadType.rawValue, hops: hops)
    }

    /// `Packet::calculatePacketHash` as the uploader computes it (`calculate_packet_hash`):
    /// SHA-256 over the payload type, the path length byte as uint16 LE for TRACE only, and the
    /// payload; the first 8 bytes in upper-case hex, or sixteen zeros for a cut packet.
    public static func hash(_ raw: [UInt8]) -> String {
        let zeros = "0000000000000000"
        guard !raw.isEmpty else { return zeros }
        let header = PacketHeader(byte: raw[0])
        var i = pathLengthIndex(header)
        guard raw.count > i else { return zeros }
        let plen = PathLength(rawValue: raw[i])
        i += 1 + pathBytes(plen).length
        guard i <= raw.count else { return zeros }
        return PacketHash.compute(payloadType: header.payloadType, pathLength: plen, payload: raw[i...]).hex.uppercased()
    }

    /// One received packet (LOG_RX_DATA), as `format_packet_data` writes it; then PocketMesh's
    /// `score` and `duration` when the radio settings are known.
    public static func packet(raw: [UInt8], snrQuarterDb: Int8, rssi: Int8, origin: String, originId: PublicKey,
                       radio: RadioParams?, epochMicros: Int64) -> JSON {
        let c = clock(epochMicros: epochMicros)
        let d = decode(raw)
        var fields: [(String, JSON)] = [
            ("origin", .string(origin)), ("origin_id", .string(originId.hex.uppercased())),
            ("timestamp", .string(c.iso)), ("type", "PACKET"), ("direction", "rx"),
            ("time", .string(c.time)), ("date", .string(c.date)), ("len", .string("\(raw.count)")),
            ("packet_type", .string("\(d?.payloadType ?? 0)")), ("route", .string(d?.route ?? "U")),
            // meshcore_py's `payload_length`: the whole packet the radio logged.
            ("payload_len", .string(d == nil ? "0" : "\(raw.count)")), ("raw", .string(HexCodec.encode(raw).uppercased())),
            ("SNR", .string(snr(snrQuarterDb))), ("RSSI", .string("\(rssi)")), ("hash", .string(hash(raw))),
        ]
        if let d, d.route == "D" { fields.append(("path", .string(d.hops.joined(separator: ",")))) }
        if let radio {
            let lora = LoRaSettings(spreadingFactor: Int(radio.spreadingFactor), bandwidthHz: Int(radio.bandwidthHz), codingRate: Int(radio.codingRate))
            fields.append(("score", .string("\(score(snrQuarterDb: snrQuarterDb, spreadingFactor: Int(radio.spreadingFactor), length: raw.count))")))
            fields.append(("duration", .string("\(lora.airtimeMilliseconds(length: raw.count))")))
        }
        return .object(fields)
    }

    // MARK: status

    /// `freq,bw,sf,cr` as the uploader writes it from meshcore_py's SELF_INFO: MHz and kHz as
    /// Python floats (`869.618`, `250.0`).
    public static func radio(_ r: RadioParams) -> String {
        "\(thousandths(r.frequencyKHz)),\(thousandths(r.bandwidthHz)),\(r.spreadingFactor),\(r.codingRate)"
    }

    /// `v / 1000` as Python prints the float: the shortest decimal, at least one digit after the point.
    public static func thousandths(_ v: UInt32) -> String {
        var frac = String(v % 1000)
        frac = String(repeating: "0", count: 3 - frac.count) + frac
        while frac.count > 1, frac.hasSuffix("0") { frac.removeLast() }
        return "\(v / 1000).\(frac)"
    }

    /// `model` and `firmware_version` as `get_firmware_info` makes them from DEVICE_INFO: from
    /// firmware version code 3, the model and `v{VERSION} (Build: {DATE})`; before, `unknown` and
    /// `v{CODE}`; `unknown` twice when the radio did not answer.
    public static func firmware(_ d: RadioDevice?) -> (model: String, version: String) {
        guard let d else { return ("unknown", "unknown") }
        guard d.firmwareVersionCode >= 3 else { return ("unknown", "v\(d.firmwareVersionCode)") }
        var version = d.version ?? "Unknown"
        if version.hasPrefix("v") { version.removeFirst() }
        return (d.model ?? "Unknown", "v\(version) (Build: \(d.buildDate ?? "Unknown"))")
    }

    /// The status (`publish_status`): `online` (with the radio's stats when known) or, on a clean
    /// stop, `offline`. `clientVersion` names the software, as the uploader's names itself.
    public static func status(_ status: String, origin: String, originId: PublicKey, device: RadioDevice?, radio: RadioParams?,
                       stats: JSON?, epochMicros: Int64, clientVersion: String = "pocketmesh/" + PocketMeshVersion.string) -> JSON {
        let fw = firmware(device)
        var fields: [(String, JSON)] = [
            ("status", .string(status)), ("timestamp", .string(clock(epochMicros: epochMicros).iso)),
            ("origin", .string(origin)), ("origin_id", .string(originId.hex.uppercased())),
            ("model", .string(fw.model)), ("firmware_version", .string(fw.version)),
            ("radio", .string(radio.map(Self.radio) ?? "unknown")), ("client_version", .string(clientVersion)),
        ]
        if let stats { fields.append(("stats", stats)) }
        return .object(fields)
    }

    /// The last will: only these four keys, as the uploader's (`connect_mqtt_broker`).
    public static func will(origin: String, originId: PublicKey, epochMicros: Int64) -> JSON {
        .object([("status", "offline"), ("timestamp", .string(clock(epochMicros: epochMicros).iso)),
                 ("origin", .string(origin)), ("origin_id", .string(originId.hex.uppercased()))])
    }

    /// The `stats` operation's names → meshcore_py's (STATS_CORE, STATS_RADIO, STATS_PACKETS events),
    /// which the uploader merges into one object in that order.
    public static let statsNames: [(group: String, ours: String, theirs: String)] = [
        ("core", "battery_mv", "battery_mv"), ("core", "uptime_s", "uptime_secs"), ("core", "error_flags", "errors"),
        ("core", "queue_length", "queue_len"),
        ("radio", "noise_floor", "noise_floor"), ("radio", "last_rssi", "last_rssi"), ("radio", "last_snr", "last_snr"),
        ("radio", "tx_air_s", "tx_air_secs"), ("radio", "rx_air_s", "rx_air_secs"),
        ("packets", "received", "recv"), ("packets", "sent", "sent"), ("packets", "sent_flood", "flood_tx"),
        ("packets", "sent_direct", "direct_tx"), ("packets", "received_flood", "flood_rx"),
        ("packets", "received_direct", "direct_rx"), ("packets", "receive_errors", "recv_errors"),
    ]

    /// The radio's stats (the `stats` operation's answer: core, radio, packets) as the uploader's
    /// `stats` object: meshcore_py's names, `last_snr` a float, and the packet counters' aliases
    /// `packets_sent` and `packets_received` (`normalize_packet_stats`) after them.
    public static func flatStats(_ answer: [(String, JSON)]) -> JSON? {
        var groups: [String: [(String, JSON)]] = [:]
        func take(_ pairs: [(String, JSON)]) {
            for (k, v) in pairs where ["core", "radio", "packets"].contains(k) {
                if case .object(let inner) = v { groups[k] = inner }
            }
        }
        take(answer)
        for (k, v) in answer where k == "result" { if case .object(let inner) = v { take(inner) } }
        var out: [(String, JSON)] = []
        for n in statsNames {
            guard let inner = groups[n.group], let v = inner.first(where: { $0.0 == n.ours })?.1 else { continue }
            if n.theirs == "last_snr", let i = v.int { out.append((n.theirs, .double(Double(i)))) } else { out.append((n.theirs, v)) }
        }
        if let p = groups["packets"] {
            for (alias, ours) in [("packets_sent", "sent"), ("packets_received", "received")] {
                if let v = p.first(where: { $0.0 == ours })?.1 { out.append((alias, v)) }
            }
        }
        return out.isEmpty ? nil : .object(out)
    }

    // MARK: text

    /// The text Python's `json.dumps` writes for this value (its defaults: ", " and ": " between
    /// items, non-ASCII and control characters as `\uXXXX`, floats as `repr` writes them).
    public static func dumps(_ j: JSON) -> [UInt8] {
        var out: [UInt8] = []
        dumps(j, into: &out)
        return out
    }

    public static func dumps(_ j: JSON, into out: inout [UInt8]) {
        switch j {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .integer(let v): out += String(v).utf8
        case .double(let d): out += pythonFloat(d).utf8
        case .string(let s): pythonString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out += ", ".utf8 }
                dumps(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let pairs):
            out.append(UInt8(ascii: "{"))
            for (n, (k, v)) in pairs.enumerated() {
                if n > 0 { out += ", ".utf8 }
                pythonString(k, into: &out)
                out += ": ".utf8
                dumps(v, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `repr(float)`: the shortest decimal that reads back the same (Swift's `description` finds
    /// the same digits and uses an exponent in the same ranges), with ".0" on whole numbers, and
    /// `NaN`/`Infinity` as `json.dumps` writes them.
    public static func pythonFloat(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        if d == d.rounded(), abs(d) < 1e16 { return (d.sign == .minus ? "-" : "") + String(Int64(abs(d))) + ".0" }
        return d.description
    }

    public static func pythonString(_ s: String, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        func escape(_ u: UInt16) {
            out += "\\u".utf8
            for shift in [12, 8, 4, 0] { out.append(hex[Int(u >> UInt16(shift)) & 15]) }
        }
        out.append(0x22)
        for u in s.utf16 {
            switch u {
            case 0x22: out += "\\\"".utf8
            case 0x5C: out += "\\\\".utf8
            case 0x0A: out += "\\n".utf8
            case 0x0D: out += "\\r".utf8
            case 0x09: out += "\\t".utf8
            case 0x08: out += "\\b".utf8
            case 0x0C: out += "\\f".utf8
            case 0x20...0x7E: out.append(UInt8(u))
            default: escape(u)
            }
        }
        out.append(0x22)
    }

    // MARK: authentication token

    /// Base64url without padding (RFC 7515).
    public static func base64url(_ bytes: [UInt8]) -> String {
        var s = WebSocketServer.base64(bytes)
        while s.hasSuffix("=") { s.removeLast() }
        return String(s.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The password the public observer brokers take with the user name `v1_{PUBLIC KEY}`: a JWT
    /// (`{"alg":"Ed25519","typ":"JWT"}`) whose claims name the key, issue and expiry times and the
    /// broker (`aud`), signed with the node's Ed25519 key; the signature is hex, as those brokers
    /// verify it.
    public static func token(identity: LocalIdentity, issuedAt: Int64, lifetimeS: Int64, audience: String?) -> String {
        let header = base64url(Array(#"{"alg":"Ed25519","typ":"JWT"}"#.utf8))
        var claims: [(String, JSON)] = [("publicKey", .string(identity.publicKey.hex.uppercased())), ("iat", .int(issuedAt)),
                                        ("exp", .int(issuedAt + lifetimeS))]
        if let audience { claims.append(("aud", .string(audience))) }
        var body: [UInt8] = []
        JSON.object(claims).write(into: &body)
        let input = header + "." + base64url(body)
        return input + "." + HexCodec.encode(identity.sign(Array(input.utf8)))
    }

    /// A private key file: the 64-byte expanded key (`pocketmesh key export`) as 128 hex digits
    /// (whitespace ignored), or its 64 raw bytes. Refuses a file others can read.
    public static func readIdentity(_ path: String, flag: String) throws(DaemonError) -> LocalIdentity {
        let bytes = try SecretFile.read(path, flag: flag)
        var key = bytes
        if bytes.count != 64 {
            let text = String(decoding: bytes.filter { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }, as: UTF8.self)
            guard let k = HexCodec.decode(text), k.count == 64 else {
                throw DaemonError(.usage, "\(flag) \(path): not a private key (128 hex digits, as `pocketmesh key export` prints).")
            }
            key = k
        }
        do throws(AirError) {
            return try LocalIdentity(privateKey: key)
        } catch {
            throw DaemonError(.usage, "\(flag) \(path): not a usable private key (\(error)).")
        }
    }
}
