import Glibc
import MeshAir
import MeshCompanion
import MeshNet
import MeshSession

/// What the observer uploader publishes, in the format the MeshCore analyzer and map sites read
/// (the one meshcoretomqtt and meshcore-packet-capture publish): pure functions of their inputs,
/// byte-exact tests in ObserverTests.
enum ObserverFormat {
    /// `meshcore/{IATA}/{PUBLIC KEY}`: the topic root of one observer.
    static func topicRoot(iata: String, publicKey: PublicKey) -> String {
        "meshcore/\(iata)/\(publicKey.hex.uppercased())"
    }

    /// An IATA code as the observer networks use it: 3 to 8 letters or digits, upper case.
    static func iata(_ text: String) -> String? {
        let up = text.uppercased()
        guard (3...8).contains(up.utf8.count), up.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { return nil }
        return up
    }

    /// Route letters: F (flood, with or without transport codes), D (direct), T (direct with transport codes).
    static func route(_ r: RouteType) -> String {
        switch r {
        case .flood, .transportFlood: return "F"
        case .direct: return "D"
        case .transportDirect: return "T"
        }
    }

    /// SNR in dB from quarter dB, as Python prints a float (12.0, -1.25).
    static func snr(_ quarterDb: Int8) -> String {
        let q = Int(quarterDb)
        let a = abs(q)
        return (q < 0 ? "-" : "") + "\(a / 4)." + ["0", "25", "5", "75"][a % 4]
    }

    /// The firmware's reception score (`RadioLibWrapper::packetScoreInt`), times 1000 as its RX log
    /// line prints it: 0 below the SF's SNR threshold, else (SNR − threshold) / 10 × (1 − len / 256),
    /// clamped to 0...1.
    static func score(snrQuarterDb: Int8, spreadingFactor sf: Int, length: Int) -> Int {
        guard (7...12).contains(sf) else { return 0 }
        let threshold = [-7.5, -10, -12.5, -15, -17.5, -20][sf - 7]
        let snr = Double(snrQuarterDb) / 4
        guard snr >= threshold else { return 0 }
        let s = (snr - threshold) / 10 * (1 - Double(length) / 256)
        return Int(max(0, min(1, s)) * 1000)
    }

    /// The UTC wall clock split as the format wants it: ISO 8601 with microseconds, HH:MM:SS, DD/MM/YYYY.
    static func clock(epochMicros: Int64) -> (iso: String, time: String, date: String) {
        var t = time_t(epochMicros / 1_000_000)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let micros = String(epochMicros % 1_000_000)
        let frac = String(repeating: "0", count: 6 - micros.count) + micros
        let year = "\(tm.tm_year + 1900)"
        let time = "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))"
        let iso = "\(year)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(time).\(frac)+00:00"
        return (iso, time, "\(two(tm.tm_mday))/\(two(tm.tm_mon + 1))/\(year)")
    }

    /// One received packet (LOG_RX_DATA): nil if the bytes are not a packet this version reads.
    static func packet(raw: [UInt8], snrQuarterDb: Int8, rssi: Int8, origin: String, originId: PublicKey,
                       radio: RadioParams?, epochMicros: Int64) -> JSON? {
        guard let p = try? Packet(bytes: raw) else { return nil }
        let c = clock(epochMicros: epochMicros)
        var fields: [(String, JSON)] = [
            ("origin", .string(origin)), ("origin_id", .string(originId.hex.uppercased())),
            ("timestamp", .string(c.iso)), ("type", "PACKET"), ("direction", "rx"),
            ("time", .string(c.time)), ("date", .string(c.date)), ("len", .string("\(raw.count)")),
            ("packet_type", .string("\(p.payloadType.rawValue)")), ("route", .string(route(p.routeType))),
            ("payload_len", .string("\(p.payloadCount)")), ("raw", .string(HexCodec.encode(raw).uppercased())),
            ("SNR", .string(snr(snrQuarterDb))), ("RSSI", .string("\(rssi)")),
        ]
        if let radio {
            let lora = LoRaSettings(spreadingFactor: Int(radio.spreadingFactor), bandwidthHz: Int(radio.bandwidthHz), codingRate: Int(radio.codingRate))
            fields.append(("score", .string("\(score(snrQuarterDb: snrQuarterDb, spreadingFactor: Int(radio.spreadingFactor), length: raw.count))")))
            fields.append(("duration", .string("\(lora.airtimeMilliseconds(length: raw.count))")))
        }
        fields.append(("hash", .string(p.hash.description.uppercased())))
        if p.routeType == .direct {
            fields.append(("path", .string(p.hops.map { HexCodec.encode($0).uppercased() }.joined(separator: ","))))
        }
        return .object(fields)
    }

    /// `freq,bw,sf,cr` as the observer networks show a radio: MHz and kHz as decimals.
    static func radio(_ r: RadioParams) -> String {
        func decimal(_ v: UInt32, _ scale: UInt32) -> String {
            var frac = String(v % scale)
            frac = String(repeating: "0", count: String(scale).count - 1 - frac.count) + frac
            while frac.hasSuffix("0") { frac.removeLast() }
            return "\(v / scale)" + (frac.isEmpty ? "" : "." + frac)
        }
        return "\(decimal(r.frequencyKHz, 1000)),\(decimal(r.bandwidthHz, 1000)),\(r.spreadingFactor),\(r.codingRate)"
    }

    /// The retained status: `online` (with the radio's stats when known) or `offline` (the will).
    static func status(_ status: String, origin: String, originId: PublicKey, device: RadioDevice?, radio: RadioParams?,
                       stats: JSON?, epochMicros: Int64) -> JSON {
        var fields: [(String, JSON)] = [
            ("status", .string(status)), ("timestamp", .string(clock(epochMicros: epochMicros).iso)),
            ("origin", .string(origin)), ("origin_id", .string(originId.hex.uppercased())),
            ("model", .string(device?.model ?? "unknown")), ("firmware_version", .string(device?.version ?? "unknown")),
            ("radio", .string(radio.map(Self.radio) ?? "unknown")), ("client_version", .string("pocketmesh/" + PocketMeshVersion.string)),
        ]
        if let stats { fields.append(("stats", stats)) }
        return .object(fields)
    }

    /// The radio's stats (the `stats` operation's answer: core, radio, packets) as one flat object.
    static func flatStats(_ answer: [(String, JSON)]) -> JSON? {
        var out: [(String, JSON)] = []
        func take(_ pairs: [(String, JSON)]) {
            for (k, v) in pairs {
                guard ["core", "radio", "packets"].contains(k), case .object(let inner) = v else { continue }
                for (ik, iv) in inner {
                    out.append((k == "packets" ? "packets_" + ik : ik, iv))
                }
            }
        }
        take(answer)
        for (k, v) in answer where k == "result" { if case .object(let inner) = v { take(inner) } }
        return out.isEmpty ? nil : .object(out)
    }

    // MARK: authentication token

    /// Base64url without padding (RFC 7515).
    static func base64url(_ bytes: [UInt8]) -> String {
        var s = WebSocketServer.base64(bytes)
        while s.hasSuffix("=") { s.removeLast() }
        return String(s.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The password the public observer brokers take with the user name `v1_{PUBLIC KEY}`: a JWT
    /// (`{"alg":"Ed25519","typ":"JWT"}`) whose claims name the key, issue and expiry times and the
    /// broker (`aud`), signed with the node's Ed25519 key; the signature is hex, as those brokers
    /// verify it.
    static func token(identity: LocalIdentity, issuedAt: Int64, lifetimeS: Int64, audience: String?) -> String {
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
    static func readIdentity(_ path: String, flag: String) throws(DaemonError) -> LocalIdentity {
        let bytes = try Daemon.readSecretFile(path, flag: flag)
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
