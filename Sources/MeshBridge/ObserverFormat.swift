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

    /// An IATA code as the public observer brokers take it: three letters (upper-cased here), not
    /// a placeholder (`XXX`, or `LOC`, the uploader's "not set"); the brokers disconnect others.
    public static func iata(_ text: String) -> String? {
        let up = text.uppercased()
        guard up.utf8.count == 3, up.utf8.allSatisfy({ (0x41...0x5A).contains($0) }), up != "XXX", up != "LOC" else { return nil }
        return up
    }

    /// The one sentence a refused `--mqtt-iata` gets.
    public static func iataRefusal(_ text: String) -> String {
        "--mqtt-iata \"\(text)\": the observer brokers take the three-letter airport code (IATA) of your region, e.g. SEA, and disconnect a client with any other (XXX and LOC are placeholders)."
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
        /// The application payload (after the header, transport codes and path).
        public var payload: [UInt8] = []
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
        return Decoded(route: routeLetter(header.routeType), payloadType: header.payloadType.rawValue, hops: hops, payload: Array(payload))
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
                       radio: RadioParams?, epochMicros: Int64, channels: [Channel]? = nil) -> JSON {
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
        // `--mqtt-observer-decode`: the payload's plain text and fields; a flood path as a list.
        if let channels, let d {
            var o = payloadFields(type: d.payloadType, d.payload, channels: channels)
            if d.route != "D" && !d.hops.isEmpty { o.append(("path", .array(d.hops.map { .string($0) }))) }
            fields.append(("decoded", .object(o)))
        }
        if let radio {
            let lora = LoRaSettings(spreadingFactor: Int(radio.spreadingFactor), bandwidthHz: Int(radio.bandwidthHz), codingRate: Int(radio.codingRate))
            fields.append(("score", .string("\(score(snrQuarterDb: snrQuarterDb, spreadingFactor: Int(radio.spreadingFactor), length: raw.count))")))
            fields.append(("duration", .string("\(lora.airtimeMilliseconds(length: raw.count))")))
        }
        return .object(fields)
    }

    // MARK: the decoded object

    /// A channel the `decoded` object's group texts are decrypted with, and the name it is shown by.
    public struct Channel: Sendable {
        public var name: String
        public var secret: ChannelSecret
        public init(name: String, secret: ChannelSecret) { self.name = name; self.secret = secret }
    }

    /// `--mqtt-observer-decode`: `#name` (a hashtag channel), `NAME=KEY` (32 hex digits) or `public`,
    /// comma-separated; the Public channel last, as the uploader adds it. Nil for anything else.
    public static func channels(_ text: String) -> [Channel]? {
        var out: [Channel] = []
        for item in text.split(separator: ",").map({ String($0.filter { $0 != " " }) }) where item.lowercased() != "public" {
            if item.hasPrefix("#"), item.count > 1 {
                out.append(Channel(name: item.lowercased(), secret: ChannelSecret(hashtag: item.lowercased())))
            } else if let eq = item.firstIndex(of: "="), eq > item.startIndex, let k = HexCodec.decode(String(item[item.index(after: eq)...])),
                      k.count == 16, let secret = try? ChannelSecret(k) {
                out.append(Channel(name: String(item[..<eq]), secret: secret))
            } else { return nil }
        }
        return out + [Channel(name: "public", secret: .publicChannel)]
    }

    public static let neighborsRefusal = "--mqtt-observer-neighbors: give the hours between snapshots, 12 to 336 (as the observer firmware and packet-capture)."

    public static func channelsRefusal(_ text: String) -> String {
        "--mqtt-observer-decode \"\(text)\": give channels as public, #NAME or NAME=KEY (32 hex digits), comma-separated."
    }

    static let payloadNames = ["REQ", "RESPONSE", "TXT_MSG", "ACK", "ADVERT", "GRP_TXT", "GRP_DATA", "ANON_REQ", "PATH", "TRACE",
                               "MULTIPART", "Type11", "Type12", "Type13", "Type14", "RAW_CUSTOM"]

    /// `bytes.decode("utf-8", errors="ignore")`: what is not UTF-8 left out.
    static func text<C: Collection<UInt8>>(_ bytes: C) -> String {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars.filter { $0 != "\u{FFFD}" })
        return String(s)
    }

    /// The uploader's `decoded` object (`decode_payload`) for a payload: group texts decrypted with
    /// the first channel whose hash and MAC match, adverts' fields, a direct message's note, an
    /// ACK's bytes, and the type's name for the rest.
    public static func payloadFields(type: UInt8, _ p: [UInt8], channels: [Channel]) -> [(String, JSON)] {
        let kind = payloadNames[Int(type & 15)]
        switch type {
        case 5:
            guard p.count >= 3 else { return [("kind", .string(kind)), ("decrypted", false), ("error", "payload_too_short")] }
            var o: [(String, JSON)] = [("kind", .string(kind)), ("channel_hash", .string(HexCodec.encode([p[0]]))),
                                       ("cipher_mac", .string(HexCodec.encode(Array(p[1..<3])))), ("ciphertext_len", .int(Int64(p.count - 3))),
                                       ("decrypted", false)]
            guard p.count >= 19, (p.count - 3) % 16 == 0 else { return o }
            for c in channels where c.secret.hash == p[0] {
                guard let plain = try? c.secret.sharedSecret.decrypt(p[1...]), plain.count >= 5 else { continue }
                let ts = Int64(plain[0]) | Int64(plain[1]) << 8 | Int64(plain[2]) << 16 | Int64(plain[3]) << 24
                // Cut at the first NUL; "sender: text" split where the uploader splits it.
                var body = Array(text(plain[5...]).unicodeScalars)
                if let nul = body.firstIndex(of: "\0") { body.removeSubrange(nul...) }
                var sender: JSON = .null
                if let colon = body.indices.dropLast().first(where: { body[$0] == ":" && body[$0 + 1] == " " }), colon > 0, colon < 50,
                   !body[..<colon].contains(where: { $0 == ":" || $0 == "[" || $0 == "]" }) {
                    sender = .string(String(String.UnicodeScalarView(body[..<colon])))
                    body.removeSubrange(...(colon + 1))
                }
                o[4].1 = true
                var iso = clock(epochMicros: ts * 1_000_000).iso
                iso.removeLast(6)
                o += [("channel", .string(c.name)), ("sender", sender), ("text", .string(String(String.UnicodeScalarView(body)))),
                      ("flags", .int(Int64(plain[4]))), ("msg_timestamp", .string(iso + "Z"))]
                break
            }
            return o
        case 4:
            // Adverts shorter than key, time and signature are not decoded at all (`decode`).
            func u32(_ i: Int) -> UInt32 { UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3]) << 24 }
            var o: [(String, JSON)] = [("kind", .string(kind)), ("advert_parse_ok", true), ("public_key", .string(HexCodec.encode(Array(p[0..<32])))),
                                       ("advert_time", .int(Int64(u32(32)))), ("signature", .string(HexCodec.encode(Array(p[36..<100]))))]
            guard p.count > 100 else { return o }
            let flags = p[100], mode = Int(flags & 15)
            o.append(("mode", .string((1...4).contains(mode) ? ["Companion", "Repeater", "RoomServer", "Sensor"][mode - 1] : "Type\(mode)")))
            var i = 101
            if flags & 0x10 != 0 {
                guard p.count >= i + 8 else { return o }
                o.append(("lat", .double(Double(Int32(bitPattern: u32(i))) / 1_000_000)))
                o.append(("lon", .double(Double(Int32(bitPattern: u32(i + 4))) / 1_000_000)))
                i += 8
            }
            for (bit, name) in [(UInt8(0x20), "feat1"), (0x40, "feat2")] where flags & bit != 0 {
                guard p.count >= i + 2 else { return o }
                o.append((name, .int(Int64(p[i]) | Int64(p[i + 1]) << 8)))
                i += 2
            }
            if flags & 0x80 != 0 && p.count > i {
                var name = text(p[i...])
                while name.unicodeScalars.last == "\0" { name.unicodeScalars.removeLast() }
                o.append(("name", .string(name)))
            }
            return o
        case 2: return [("kind", .string(kind)), ("encrypted", true), ("note", "direct message; not decryptable by observer")]
        case 3: return [("kind", .string(kind)), ("ack", .string(HexCodec.encode(p)))]
        default: return [("kind", .string(kind))]
        }
    }

    // MARK: neighbours

    /// One neighbour of the `neighbors` snapshot: a repeater that answered the zero-hop discovery.
    public struct Neighbour: Sendable {
        public var publicKey: String
        public var snr: Double
        /// Wall clock (µs) of its answer.
        public var heardAt: Int64
        public var scopes = ""
        public var status = "timeout"
        public init(publicKey: String, snr: Double, heardAt: Int64) { self.publicKey = publicKey; self.snr = snr; self.heardAt = heardAt }
    }

    /// The firmware's order, as the uploader sorts: most recently heard (whole seconds), then the
    /// stronger SNR, then the key.
    public static func sorted(_ n: [Neighbour], now: Int64) -> [Neighbour] {
        n.sorted { a, b in
            let (x, y) = (max(0, (now - a.heardAt) / 1_000_000), max(0, (now - b.heardAt) / 1_000_000))
            if x != y { return x < y }
            if a.snr != b.snr { return a.snr > b.snr }
            return a.publicKey.lowercased() < b.publicKey.lowercased()
        }
    }

    /// `meshcore/{IATA}/{KEY}/neighbors` as packet-capture's `build_neighbors_message` writes it:
    /// `total_neighbors` (discovered), `queried_neighbors`, `truncated`, `self.scopes` and the
    /// neighbours in the firmware's order, the tail dropped where the text would reach 10240 bytes.
    public static func neighbors(origin: String, originId: PublicKey, selfScopes: String, entries: [Neighbour], total: Int,
                                 epochMicros: Int64) -> JSON {
        var fields: [(String, JSON)] = [
            ("timestamp", .string(clock(epochMicros: epochMicros).iso)), ("origin", .string(origin)),
            ("origin_id", .string(originId.hex.uppercased())), ("total_neighbors", .int(Int64(total))),
            ("queried_neighbors", .int(Int64(entries.count))), ("truncated", .bool(total > entries.count)),
            ("self", .object([("scopes", .string(selfScopes))])), ("neighbors", .array([])),
        ]
        var list: [JSON] = []
        var dropped = false
        for e in sorted(entries, now: epochMicros) {
            list.append(.object([("pubkey", .string(e.publicKey.uppercased())), ("snr", .double(e.snr)),
                                 ("heard_secs_ago", .int(max(0, (epochMicros - e.heardAt) / 1_000_000))),
                                 ("scopes", .string(e.scopes)), ("status", .string(e.status))]))
            fields[7].1 = .array(list)
            if dumps(.object(fields)).count >= 10_240 {
                list.removeLast()
                fields[7].1 = .array(list)
                dropped = true
                break
            }
        }
        fields[5].1 = .bool(dropped || total > entries.count)
        return .object(fields)
    }

    // MARK: status

    /// `freq,bw,sf,cr` as the uploader writes it from meshcore_py's SELF_INFO: MHz and kHz as
    /// Python floats (`869.618`, `250.0`).
    public static func radio(_ r: RadioParams) -> String {
        "\(thousandths(r.frequencyKHz)),\(thousandths(r.bandwidthHz)),\(r.spreadingFactor),\(r.codingRate)"
    }

    /// A node's radio settings as a companion radio's (for `radio` above).
    public static func radio(frequencyKHz: UInt32, bandwidthHz: UInt32, spreadingFactor: UInt8, codingRate: UInt8) -> RadioParams {
        RadioParams(frequencyKHz: frequencyKHz, bandwidthHz: bandwidthHz, spreadingFactor: spreadingFactor, codingRate: codingRate)
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
                       stats: JSON?, epochMicros: Int64, clientVersion: String = "pocketmesh/" + PocketMeshVersion.string,
                       firmware given: (model: String, version: String)? = nil) -> JSON {
        let fw = device == nil ? given ?? firmware(nil) : firmware(device)
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

    /// The claims of the token, as the uploader orders them: `publicKey`, `iat`, `exp`, then `aud`,
    /// `owner` (the operator's 64-hex key), `email` and `client` when given.
    public struct Claims: Sendable {
        public var audience: String? = nil
        public var owner: String? = nil
        public var email: String? = nil
        public var client: String? = "pocketmesh/" + PocketMeshVersion.string
        public init() {}
    }

    /// The signing input of the token the public observer brokers take with the user name
    /// `v1_{PUBLIC KEY}`: base64url of the header `{"alg":"Ed25519","typ":"JWT"}` and of the
    /// claims (compact `json.dumps`), joined by a dot. The token is this, a dot, and the
    /// Ed25519 signature by the node's key in hex (`token`), which the radio may make.
    public static func tokenInput(publicKey: PublicKey, issuedAt: Int64, lifetimeS: Int64, claims c: Claims) -> String {
        var body = Array(#"{"publicKey":""#.utf8) + Array(publicKey.hex.uppercased().utf8)
        body += #"","iat":\#(issuedAt),"exp":\#(issuedAt + lifetimeS)"#.utf8
        for (k, v) in [("aud", c.audience), ("owner", c.owner), ("email", c.email), ("client", c.client)] {
            guard let v else { continue }
            body += #","\#(k)":"#.utf8
            pythonString(v, into: &body)
        }
        body.append(UInt8(ascii: "}"))
        return base64url(Array(#"{"alg":"Ed25519","typ":"JWT"}"#.utf8)) + "." + base64url(body)
    }

    public static func token(input: String, signature: [UInt8]) -> String { input + "." + HexCodec.encode(signature) }

    /// The token signed here with the node's key (a key file, or the node's own).
    public static func token(identity: LocalIdentity, issuedAt: Int64, lifetimeS: Int64, claims: Claims) -> String {
        let input = tokenInput(publicKey: identity.publicKey, issuedAt: issuedAt, lifetimeS: lifetimeS, claims: claims)
        return token(input: input, signature: identity.sign(Array(input.utf8)))
    }

    /// `--mqtt-observer-owner`: 64 hex digits (upper-cased, as the uploader sends it), else nil.
    public static func owner(_ text: String) -> String? {
        guard text.utf8.count == 64, HexCodec.decode(text) != nil else { return nil }
        return text.uppercased()
    }

    /// `--mqtt-observer-email`: lower-cased; the uploader's pattern (local part of letters, digits
    /// and `._%+-`, a domain of letters, digits, `.` and `-` ending in a dot and two letters or more).
    public static func email(_ text: String) -> String? {
        let e = Array(text.lowercased().utf8)
        guard let at = e.firstIndex(of: 0x40), at > 0, let dot = e.lastIndex(of: 0x2E), dot > at + 1, e.count - dot > 2 else { return nil }
        func ok(_ b: UInt8, _ extra: String) -> Bool { (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || extra.utf8.contains(b) }
        guard e[..<at].allSatisfy({ ok($0, "._%+-") }), e[(at + 1)..<dot].allSatisfy({ ok($0, ".-") }),
              e[(dot + 1)...].allSatisfy({ (0x61...0x7A).contains($0) }) else { return nil }
        return String(decoding: e, as: UTF8.self)
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
