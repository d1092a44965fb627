import CSodium
import MeshAir
import MeshCompanion
import MeshNet
import MeshSession
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshBridge
import MeshLink
import MeshOps

/// The observer uploader's format (what analyzer sites read), byte for byte.
@Suite struct ObserverTests {
    let key = PublicKey(HexCodec.decode("7f01db1b1ac9e81e8b335cf368fae7cdc5879ba0366e1cc9db62382c7b875e5f")!)!
    let radio = RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)

    func text(_ j: JSON?) -> String {
        var out: [UInt8] = []
        j?.write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The uploader's text for a packet with its clock fields replaced by "T" and PocketMesh's own
    /// fields (`score`, `duration`) left out: what remains must be its text byte for byte.
    func uploaderPart(_ j: JSON) -> String {
        guard case .object(let pairs) = j else { return "" }
        let kept = pairs.filter { !["score", "duration"].contains($0.0) }
            .map { ["timestamp", "time", "date"].contains($0.0) ? ($0.0, JSON.string("T")) : $0 }
        return String(decoding: ObserverFormat.dumps(.object(kept)), as: UTF8.self)
    }

    /// Vectors made by meshcore-packet-capture's own `format_packet_data` and `json.dumps` (commit
    /// 36d10df) from the LOG_RX_DATA meshcore_py 2.3.17 reads for each packet.
    static let uploaderVectors: [(raw: String, snrQ: Int8, rssi: Int8, text: String)] = [
        // Direct text message over two 1-byte hops: payload_len is the whole packet, the path lower case.
        ("0A02ABCD112233445566", -21, -97, #""len": "10", "packet_type": "2", "route": "D", "payload_len": "10", "raw": "0A02ABCD112233445566", "SNR": "-5.25", "RSSI": "-97", "hash": "6CD071A9112BCB8B", "path": "ab,cd"}"#),
        // Direct with transport codes: T, and no path key.
        ("0B0100020001AA42", 0, -1, #""len": "8", "packet_type": "2", "route": "T", "payload_len": "8", "raw": "0B0100020001AA42", "SNR": "0.0", "RSSI": "-1", "hash": "BA14365B34C02CC7"}"#),
        // TRACE hashes its path length byte as uint16 LE too.
        ("26012001020304", 0, -1, #""len": "7", "packet_type": "9", "route": "D", "payload_len": "7", "raw": "26012001020304", "SNR": "0.0", "RSSI": "-1", "hash": "DD79CBE99F3FC8F5", "path": "20"}"#),
        // Reserved 4-byte hop mode (0xC1): read as a 193-byte path, which is cut: route U, zero hash.
        ("0AC100", 0, 0, #""len": "3", "packet_type": "0", "route": "U", "payload_len": "0", "raw": "0AC100", "SNR": "0.0", "RSSI": "0", "hash": "0000000000000000"}"#),
        // A path longer than the packet.
        ("0A0500", 0, 0, #""len": "3", "packet_type": "0", "route": "U", "payload_len": "0", "raw": "0A0500", "SNR": "0.0", "RSSI": "0", "hash": "0000000000000000"}"#),
        // Two 2-byte hops.
        ("0A42ABCDEF0111", 4, -100, #""len": "7", "packet_type": "2", "route": "D", "payload_len": "7", "raw": "0A42ABCDEF0111", "SNR": "1.0", "RSSI": "-100", "hash": "79CF34B187CF095E", "path": "abcd,ef01"}"#),
        // Payload version 1: not decoded (U), still hashed.
        ("4A0100", 1, -5, #""len": "3", "packet_type": "0", "route": "U", "payload_len": "0", "raw": "4A0100", "SNR": "0.25", "RSSI": "-5", "hash": "DBC1B4C900FFE48D"}"#),
        // Direct, no hops, no payload: an empty path.
        ("0200", 0, 0, #""len": "2", "packet_type": "0", "route": "D", "payload_len": "2", "raw": "0200", "SNR": "0.0", "RSSI": "0", "hash": "6E340B9CFFB37A98", "path": ""}"#),
        // Adverts: 99 payload bytes is too short (U); 100 (no app data) and flags 0x91 are read;
        // flags with bit 3 (0x08) are not (U); transport flood is F.
        ("1100" + String(repeating: "11", count: 99), 0, 0, #""len": "101", "packet_type": "0", "route": "U", "payload_len": "0", "raw": "1100"# + String(repeating: "11", count: 99) + #"", "SNR": "0.0", "RSSI": "0", "hash": "50C17DD05D0E2804"}"#),
        ("1100@", 0, 0, #""len": "102", "packet_type": "4", "route": "F", "payload_len": "102", "raw": "1100@", "SNR": "0.0", "RSSI": "0", "hash": "C35A7AA79D9CC0B2"}"#),
        ("1100@91", 0, 0, #""len": "103", "packet_type": "4", "route": "F", "payload_len": "103", "raw": "1100@91", "SNR": "0.0", "RSSI": "0", "hash": "394A3D775FECB82F"}"#),
        ("1100@0841", 0, 0, #""len": "104", "packet_type": "0", "route": "U", "payload_len": "0", "raw": "1100@0841", "SNR": "0.0", "RSSI": "0", "hash": "DF1BF429F7C2D12F"}"#),
        ("1000AABBCC01DD@8141", -128, -128, #""len": "109", "packet_type": "4", "route": "F", "payload_len": "109", "raw": "1000AABBCC01DD@8141", "SNR": "-32.0", "RSSI": "-128", "hash": "5A377E6FDCE8C43E"}"#),
        ("0D00", 127, 127, #""len": "2", "packet_type": "3", "route": "F", "payload_len": "2", "raw": "0D00", "SNR": "31.75", "RSSI": "127", "hash": "084FED08B978AF4D"}"#),
        ("0E00", -1, -1, #""len": "2", "packet_type": "3", "route": "D", "payload_len": "2", "raw": "0E00", "SNR": "-0.25", "RSSI": "-1", "hash": "084FED08B978AF4D", "path": ""}"#),
    ]

    @Test func packetsAreTheUploadersTextByteForByte() throws {
        let head = #"{"origin": "obs", "origin_id": "7F01DB1B1AC9E81E8B335CF368FAE7CDC5879BA0366E1CC9DB62382C7B875E5F", "timestamp": "T", "type": "PACKET", "direction": "rx", "time": "T", "date": "T", "#
        let advertBody = String(repeating: "11", count: 100)  // "@": an advert's key, time and signature
        for v in Self.uploaderVectors {
            let rawHex = v.raw.split(separator: "@", omittingEmptySubsequences: false).joined(separator: advertBody)
            let raw = try #require(HexCodec.decode(rawHex))
            let j = ObserverFormat.packet(raw: raw, snrQuarterDb: v.snrQ, rssi: v.rssi, origin: "obs", originId: key, radio: radio,
                                          epochMicros: 1_764_000_000_012_345)
            #expect(uploaderPart(j) == head + v.text.split(separator: "@", omittingEmptySubsequences: false).joined(separator: advertBody), "\(v.raw)")
        }
    }

    @Test func pocketMeshsOwnFieldsComeLastAndTheClockIsPythons() throws {
        // Direct route (2), TXT_MSG (2): header 0x0A; two 1-byte hops AB, CD; a 6-byte payload.
        let raw: [UInt8] = [0x0A, 0x02, 0xAB, 0xCD, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]
        let j = ObserverFormat.packet(raw: raw, snrQuarterDb: -21, rssi: -97, origin: "obs", originId: key, radio: radio,
                                      epochMicros: 1_764_000_000_012_345)
        // Score: (-5.25 + 10) / 10 * (1 - 10/256) = 0.456... -> 456. Duration: SF8 62.5 kHz CR 4/5, 10 bytes:
        // (32 + 8) * 4 + 17 + ceil((80 + 16 - 32 + 8 + 20) / 32) * 5 * 4 = 237 quarter symbols of 4,096 us -> 242 ms.
        #expect(text(j).hasSuffix(#""hash":"6CD071A9112BCB8B","path":"ab,cd","score":"456","duration":"242"}"#))
        #expect(j["timestamp"]?.string == "2025-11-24T16:00:00.012345+00:00" && j["time"]?.string == "16:00:00" && j["date"]?.string == "24/11/2025")
        // Without the radio settings there are no extras; without microseconds, Python's isoformat has no fraction.
        let k = ObserverFormat.packet(raw: raw, snrQuarterDb: 0, rssi: 0, origin: "o", originId: key, radio: nil, epochMicros: 1_764_000_000_000_000)
        #expect(k["score"] == nil && k["duration"] == nil && k["timestamp"]?.string == "2025-11-24T16:00:00+00:00")
    }

    @Test func numbersAsTheUploaderWritesThem() {
        #expect(["0.0", "12.0", "-1.25", "7.5", "-0.75", "31.75", "-32.0"] ==
                [0, 48, -5, 30, -3, 127, -128].map { ObserverFormat.snr(Int8($0)) })
        #expect(ObserverFormat.score(snrQuarterDb: 48, spreadingFactor: 8, length: 10) == 1000)
        #expect(ObserverFormat.score(snrQuarterDb: -44, spreadingFactor: 8, length: 10) == 0)  // -11 dB < -10
        #expect(ObserverFormat.score(snrQuarterDb: -80, spreadingFactor: 12, length: 128) == 0)  // exactly the threshold
        #expect(ObserverFormat.score(snrQuarterDb: -60, spreadingFactor: 12, length: 128) == 250)  // 5/10 * 1/2
        // meshcore_py divides by 1000 into a float; Python prints 250.0, 869.525, 62.5, 7.8.
        #expect(ObserverFormat.radio(radio) == "869.618,62.5,8,5")
        #expect(ObserverFormat.radio(RadioParams(frequencyKHz: 915_000, bandwidthHz: 250_000, spreadingFactor: 10, codingRate: 7)) == "915.0,250.0,10,7")
        #expect(ObserverFormat.radio(RadioParams(frequencyKHz: 869_525, bandwidthHz: 7_800, spreadingFactor: 11, codingRate: 5)) == "869.525,7.8,11,5")
        #expect(ObserverFormat.radio(RadioParams(frequencyKHz: 433_050, bandwidthHz: 41_700, spreadingFactor: 12, codingRate: 8)) == "433.05,41.7,12,8")
        #expect(ObserverFormat.iata("sea") == "SEA" && ObserverFormat.iata("S/A") == nil && ObserverFormat.iata("AB") == nil)
        let c = ObserverFormat.clock(epochMicros: 951_782_400_000_001)  // 2000-02-29
        #expect(c.iso == "2000-02-29T00:00:00.000001+00:00" && c.time == "00:00:00" && c.date == "29/02/2000")
        #expect([0, -0.0, 5, -2.25, 1e-05, 0.1, 1e16, 123456.5].map(ObserverFormat.pythonFloat) ==
                ["0.0", "-0.0", "5.0", "-2.25", "1e-05", "0.1", "1e+16", "123456.5"])
    }

    @Test func textIsWhatJsonDumpsWrites() {
        // ensure_ascii: everything outside ' '...'~' is \uXXXX (UTF-16, lower-case hex), with the short escapes first.
        let j: JSON = .object([("name", .string("Zoë 🐙\u{7F}\u{1}\"\\\n\t\u{8}\u{C}\r")), ("n", .array([.int(-3), .null, .bool(true), .double(0.5)])),
                               ("e", .object([]))])
        #expect(String(decoding: ObserverFormat.dumps(j), as: UTF8.self) ==
                #"{"name": "Zo\u00eb \ud83d\udc19\u007f\u0001\"\\\n\t\b\f\r", "n": [-3, null, true, 0.5], "e": {}}"#)
    }

    /// A DEVICE_INFO frame as firmware v1.17.1 sends it.
    func deviceInfo(code: UInt8 = 10, build: String = "10-Nov-2025", model: String = "PocketMesh Sim", version: String = "v1.17.1") -> RadioDevice? {
        func field(_ s: String, _ n: Int) -> [UInt8] { Array(s.utf8.prefix(n)) + [UInt8](repeating: 0, count: n - min(n, s.utf8.count)) }
        return RadioDevice(frame: [13, code, 50, 8, 0, 0, 0, 0] + field(build, 12) + field(model, 40) + field(version, 20) + [0, 0])
    }

    @Test func statusCarriesTheFirmwareAndTheStatsUnderMeshcorePysNames() throws {
        let answer: [(String, JSON)] = [("result", .obj(
            ("core", .obj(("battery_mv", .int(4100)), ("uptime_s", .int(77)), ("error_flags", .int(0)), ("queue_length", .int(1)))),
            ("radio", .obj(("noise_floor", .int(-120)), ("last_rssi", .int(-90)), ("last_snr", .double(5)), ("tx_air_s", .int(3)), ("rx_air_s", .int(9)))),
            ("packets", .obj(("received", .int(7)), ("sent", .int(2)), ("sent_flood", .int(1)), ("sent_direct", .int(1)),
                             ("received_flood", .int(6)), ("received_direct", .int(1)), ("receive_errors", .null)))))]
        let stats = ObserverFormat.flatStats(answer)
        let s = ObserverFormat.status("online", origin: "o", originId: key, device: deviceInfo(), radio: radio, stats: stats,
                                      epochMicros: 1_764_000_000_500_000, clientVersion: "pocketmesh/x")
        #expect(String(decoding: ObserverFormat.dumps(s), as: UTF8.self) ==
            #"{"status": "online", "timestamp": "2025-11-24T16:00:00.500000+00:00", "origin": "o", "#
            + #""origin_id": "7F01DB1B1AC9E81E8B335CF368FAE7CDC5879BA0366E1CC9DB62382C7B875E5F", "model": "PocketMesh Sim", "#
            + #""firmware_version": "v1.17.1 (Build: 10-Nov-2025)", "radio": "869.618,62.5,8,5", "client_version": "pocketmesh/x", "#
            + #""stats": {"battery_mv": 4100, "uptime_secs": 77, "errors": 0, "queue_len": 1, "noise_floor": -120, "last_rssi": -90, "#
            + #""last_snr": 5.0, "tx_air_secs": 3, "rx_air_secs": 9, "recv": 7, "sent": 2, "flood_tx": 1, "direct_tx": 1, "flood_rx": 6, "#
            + #""direct_rx": 1, "recv_errors": null, "packets_sent": 2, "packets_received": 7}}"#)
        // The answer of the API at the top level reads the same; nothing known is no stats.
        #expect(ObserverFormat.flatStats([("radio", .obj(("last_snr", .double(-2.25))))]) == .object([("last_snr", .double(-2.25))]))
        #expect(ObserverFormat.flatStats([("ok", .bool(true))]) == nil)
        // Firmware: a version without its "v" gets one; before version code 3 only the code is known.
        #expect(ObserverFormat.firmware(deviceInfo(version: "1.9.0")).version == "v1.9.0 (Build: 10-Nov-2025)")
        #expect(ObserverFormat.firmware(RadioDevice(frame: [13, 2])) == ("unknown", "v2"))
        #expect(ObserverFormat.firmware(nil) == ("unknown", "unknown"))
        let offline = ObserverFormat.status("offline", origin: "o", originId: key, device: nil, radio: nil, stats: nil, epochMicros: 0, clientVersion: "c")
        #expect(String(decoding: ObserverFormat.dumps(offline), as: UTF8.self) ==
            #"{"status": "offline", "timestamp": "1970-01-01T00:00:00+00:00", "origin": "o", "origin_id": "\#(key.hex.uppercased())", "#
            + #""model": "unknown", "firmware_version": "unknown", "radio": "unknown", "client_version": "c"}"#)
    }

    @Test func theWillHasTheUploadersFourKeys() {
        let w = ObserverFormat.will(origin: "o", originId: key, epochMicros: 1_764_000_000_000_001)
        #expect(String(decoding: ObserverFormat.dumps(w), as: UTF8.self) ==
            #"{"status": "offline", "timestamp": "2025-11-24T16:00:00.000001+00:00", "origin": "o", "origin_id": "\#(key.hex.uppercased())"}"#)
    }

    /// The public brokers disconnect a client whose topic has anything but a three-letter airport
    /// code: placeholders, digits and other lengths are refused before anything connects.
    @Test func onlyThreeLetterAirportCodesAreTaken() {
        #expect(["sea", "SEA", "Ams", "lhr"].map(ObserverFormat.iata) == ["SEA", "SEA", "AMS", "LHR"])
        for bad in ["XXX", "xxx", "LOC", "loc", "POCK", "SEATTLE", "AB", "", "S1A", "123", "SÉA", "S A", "SE/"] {
            #expect(ObserverFormat.iata(bad) == nil, "\(bad)")
        }
        let refusal = ObserverFormat.iataRefusal("XXX")
        #expect(refusal.hasPrefix("--mqtt-iata \"XXX\": ") && !refusal.contains("\n") && refusal.hasSuffix("."))
    }

    @Test func ownerAndEmailAreTakenAsTheUploaderTakesThem() {
        let owner = String(repeating: "ab", count: 32)
        #expect(ObserverFormat.owner(owner) == owner.uppercased())
        #expect(ObserverFormat.owner(String(owner.dropLast())) == nil && ObserverFormat.owner(String(owner.dropLast()) + "g") == nil)
        #expect(ObserverFormat.email("Ops.Team+mesh@Example.co.UK") == "ops.team+mesh@example.co.uk")
        for bad in ["a@b", "a@b.c", "@example.com", "a@.com", "a b@example.com", "a@exa mple.com", "a@example.c0m", "a@b@c.com", "a@example."] {
            #expect(ObserverFormat.email(bad) == nil, "\(bad)")
        }
    }

    /// The claims in the uploader's order and compact form (`publicKey`, `iat`, `exp`, `aud`,
    /// `owner`, `email`, `client`), each optional claim left out when not given; the token is the
    /// signing input, a dot and the hex signature, whoever signs it.
    @Test func theTokenCarriesTheClientOwnerAndEmailClaims() throws {
        let id = try LocalIdentity(seed: [UInt8](repeating: 9, count: 32))
        let k = id.publicKey.hex.uppercased()
        var claims = ObserverFormat.Claims()
        claims.audience = "mqtt-us-v1.letsmesh.net"
        claims.owner = String(repeating: "AB", count: 32)
        claims.email = "ops@example.org"
        claims.client = "pocketmesh/1.2.3"
        let input = ObserverFormat.tokenInput(publicKey: id.publicKey, issuedAt: 1_764_000_000, lifetimeS: 86_400, claims: claims)
        let body = #"{"publicKey":"\#(k)","iat":1764000000,"exp":1764086400,"aud":"mqtt-us-v1.letsmesh.net","owner":"\#(claims.owner!)","email":"ops@example.org","client":"pocketmesh/1.2.3"}"#
        #expect(input == "eyJhbGciOiJFZDI1NTE5IiwidHlwIjoiSldUIn0." + ObserverFormat.base64url(Array(body.utf8)))
        var bare = ObserverFormat.Claims()
        bare.client = nil
        #expect(ObserverFormat.tokenInput(publicKey: id.publicKey, issuedAt: 5, lifetimeS: 10, claims: bare)
            == "eyJhbGciOiJFZDI1NTE5IiwidHlwIjoiSldUIn0." + ObserverFormat.base64url(Array(#"{"publicKey":"\#(k)","iat":5,"exp":15}"#.utf8)))
        // The default client claim names PocketMesh and its version, as the status's client_version.
        #expect(ObserverFormat.Claims().client == "pocketmesh/" + PocketMeshVersion.string)
        // A claim with a quote or non-ASCII is escaped as json.dumps escapes it.
        var odd = ObserverFormat.Claims()
        odd.client = "p\"é"
        #expect(ObserverFormat.tokenInput(publicKey: id.publicKey, issuedAt: 5, lifetimeS: 10, claims: odd).hasSuffix(
            ObserverFormat.base64url(Array(#"{"publicKey":"\#(k)","iat":5,"exp":15,"client":"p\"\u00e9"}"#.utf8))))
        let token = ObserverFormat.token(identity: id, issuedAt: 1_764_000_000, lifetimeS: 86_400, claims: claims)
        #expect(token.hasPrefix(input + "."))
        let signature = HexCodec.decode(String(token.dropFirst(input.count + 1))) ?? []
        let signed = Array(input.utf8)
        #expect(signature.count == 64 && crypto_sign_verify_detached(signature, signed, UInt64(signed.count), id.publicKey.bytes) == 0)
    }

    /// The `decoded` object as meshcore-packet-capture's `decode_payload` writes it (its output for
    /// these payloads, recorded with the Public channel and `#Mesh`): group texts decrypted or not,
    /// the sender split off or not, adverts with and without location, features and name, and the
    /// types it only names.
    @Test func theDecodedObjectIsTheUploaders() throws {
        let channels = try #require(ObserverFormat.channels("#Mesh"))
        #expect(channels.map(\.name) == ["#mesh", "public"])
        let cases: [(UInt8, String, String)] = [
            (5, "119a62988c6a71b1d4c5ad9bf9081ed0fa92711efae8e72bf0bf18d70f9da0372c5452",
             ##"{"kind": "GRP_TXT", "channel_hash": "11", "cipher_mac": "9a62", "ciphertext_len": 32, "decrypted": true, "channel": "public", "sender": "alice", "text": "hello \u00e9 \ud83d\ude00", "flags": 0, "msg_timestamp": "2025-11-24T16:00:00Z"}"##),
            (5, "b0e616f1d6815ca509a8b4adf84b87023bc32094fa5fe953562f259021200e11721989",
             ##"{"kind": "GRP_TXT", "channel_hash": "b0", "cipher_mac": "e616", "ciphertext_len": 32, "decrypted": true, "channel": "#mesh", "sender": null, "text": "[bot]: hi: there", "flags": 1, "msg_timestamp": "2023-11-14T22:13:21Z"}"##),
            (5, "b85deb989db9cde76e744fbf33f6c01c26c935cbda0c046760806879c6ccf7ac63d62a",
             ##"{"kind": "GRP_TXT", "channel_hash": "b8", "cipher_mac": "5deb", "ciphertext_len": 32, "decrypted": false}"##),
            (5, "0102",
             ##"{"kind": "GRP_TXT", "decrypted": false, "error": "payload_too_short"}"##),
            (4, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f008124696465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a392e0d31103c01dfeff52707420c3a9ff0000",
             ##"{"kind": "ADVERT", "advert_parse_ok": true, "public_key": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "advert_time": 1764000000, "signature": "6465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3", "mode": "Repeater", "lat": 51.5, "lon": -0.123456, "name": "Rpt \u00e9"}"##),
            (4, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f070000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000061010203",
             ##"{"kind": "ADVERT", "advert_parse_ok": true, "public_key": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "advert_time": 7, "signature": "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", "mode": "Companion", "feat1": 513}"##),
            (2, "01020304",
             ##"{"kind": "TXT_MSG", "encrypted": true, "note": "direct message; not decryptable by observer"}"##),
            (3, "deadbeef",
             ##"{"kind": "ACK", "ack": "deadbeef"}"##),
            (9, "00",
             ##"{"kind": "TRACE"}"##),
            (11, "",
             ##"{"kind": "Type11"}"##),
        ]
        for (type, hex, expected) in cases {
            let fields = ObserverFormat.payloadFields(type: type, HexCodec.decode(hex) ?? [], channels: channels)
            #expect(String(decoding: ObserverFormat.dumps(.object(fields)), as: UTF8.self) == expected)
        }
        // In a packet: after the uploader's keys (a flood path as a list), before PocketMesh's own.
        let raw = [0x15, 0x02, 0xAB, 0xCD] + (HexCodec.decode(cases[0].1) ?? [])
        let packet = ObserverFormat.packet(raw: raw, snrQuarterDb: 20, rssi: -70, origin: "o", originId: key, radio: radio,
                                           epochMicros: 1_764_000_000_000_000, channels: channels)
        guard case .object(let pairs) = packet else { Issue.record("not an object"); return }
        #expect(Array(pairs.map(\.0).suffix(3)) == ["decoded", "score", "duration"])
        let decoded = String(decoding: ObserverFormat.dumps(pairs[pairs.count - 3].1), as: UTF8.self)
        #expect(decoded == String(cases[0].2.dropLast()) + #", "path": ["ab", "cd"]}"#)
        #expect(ObserverFormat.packet(raw: raw, snrQuarterDb: 20, rssi: -70, origin: "o", originId: key, radio: nil, epochMicros: 0)["decoded"] == nil)
        for bad in ["#", "ops=12", "=00112233445566778899aabbccddeeff", "mesh"] { #expect(ObserverFormat.channels(bad) == nil, "\(bad)") }
        #expect(ObserverFormat.channels("public, ops=00112233445566778899AABBCCDDEEFF")?.map(\.name) == ["ops", "public"])
    }

    /// The neighbours snapshot as packet-capture's `build_neighbors_message` writes it (its output
    /// for these entries): the firmware's order (recency in whole seconds, then SNR, then key),
    /// `truncated` for a capped discovery, and the tail past 10240 bytes dropped.
    @Test func theNeighboursSnapshotIsTheUploaders() {
        let now: Int64 = 1_764_000_000_000_000
        func n(_ k: String, _ snr: Double, _ ago: Int64, _ scopes: String, _ status: String) -> ObserverFormat.Neighbour {
            var e = ObserverFormat.Neighbour(publicKey: String(repeating: k, count: 32).uppercased(), snr: snr, heardAt: now - ago)
            e.scopes = scopes
            e.status = status
            return e
        }
        let entries = [n("bb", -3.25, 10_500_000, "", "timeout"), n("aa", 8, 10_200_000, "#ams,#nl", "responded"),
                       n("cc", 8, 10_900_000, "", "send_failed"), n("dd", 1.5, 2_000_000, "", "responded")]
        let origin = PublicKey(HexCodec.decode(String(repeating: "7f", count: 32))!)!
        let m = ObserverFormat.neighbors(origin: "Obs é", originId: origin, selfScopes: "#ams", entries: entries, total: 5, epochMicros: now)
        let k = { (x: String) in String(repeating: x, count: 32) }
        #expect(String(decoding: ObserverFormat.dumps(m), as: UTF8.self) ==
            ##"{"timestamp": "2025-11-24T16:00:00+00:00", "origin": "Obs \u00e9", "origin_id": "\##(k("7F"))", "total_neighbors": 5, "queried_neighbors": 4, "truncated": true, "self": {"scopes": "#ams"}, "neighbors": [{"pubkey": "\##(k("DD"))", "snr": 1.5, "heard_secs_ago": 2, "scopes": "", "status": "responded"}, {"pubkey": "\##(k("AA"))", "snr": 8.0, "heard_secs_ago": 10, "scopes": "#ams,#nl", "status": "responded"}, {"pubkey": "\##(k("CC"))", "snr": 8.0, "heard_secs_ago": 10, "scopes": "", "status": "send_failed"}, {"pubkey": "\##(k("BB"))", "snr": -3.25, "heard_secs_ago": 10, "scopes": "", "status": "timeout"}]}"##)
        // 40 entries of 300-byte scopes: 22 fit under the budget (the uploader's count), truncated.
        let many = (0..<40).map { i in
            var e = ObserverFormat.Neighbour(publicKey: String(repeating: "0", count: 62) + (i < 16 ? "0" : "") + String(i, radix: 16), snr: 5, heardAt: now - 1_000_000)
            e.scopes = String(repeating: "x", count: 300)
            e.status = "responded"
            return e
        }
        let big = ObserverFormat.neighbors(origin: "o", originId: origin, selfScopes: "", entries: many, total: 40, epochMicros: now)
        #expect(big["neighbors"]?.array?.count == 22 && big["truncated"] == .bool(true))
    }

    @Test func theTokenIsAJWTSignedWithTheNodesKeyWhetherSeededOrImported() throws {
        let seeded = try LocalIdentity(seed: [UInt8](repeating: 7, count: 32))
        let imported = try LocalIdentity(privateKey: seeded.privateKey)
        for id in [seeded, imported] {
            var claims = ObserverFormat.Claims()
            claims.audience = "mqtt.example"
            claims.client = nil
            let token = ObserverFormat.token(identity: id, issuedAt: 1_764_000_000, lifetimeS: 3600, claims: claims)
            let parts = token.split(separator: ".").map(String.init)
            #expect(parts.count == 3)
            #expect(parts[0] == "eyJhbGciOiJFZDI1NTE5IiwidHlwIjoiSldUIn0")  // {"alg":"Ed25519","typ":"JWT"}
            #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
            let body = #"{"publicKey":"\#(id.publicKey.hex.uppercased())","iat":1764000000,"exp":1764003600,"aud":"mqtt.example"}"#
            #expect(parts[1] == ObserverFormat.base64url(Array(body.utf8)))
            let signature = HexCodec.decode(parts[2]) ?? []
            let signed = Array((parts[0] + "." + parts[1]).utf8)
            #expect(signature.count == 64 && crypto_sign_verify_detached(signature, signed, UInt64(signed.count), id.publicKey.bytes) == 0)
        }
        #expect(ObserverFormat.base64url([0xFB, 0xFF]) == "-_8")
    }
}

/// The broker token the radio signs: asked of the daemon as a `sign` operation whose answer comes
/// later (the loop goes on meanwhile); nothing connects before it; a busy radio is asked again a
/// second later, not at every turn; the token's signing input is the tokenInput of the radio's key.
@Suite struct ObserverRadioTokenTests {
    final class Host: BridgeHost {
        var requests: [DaemonRequest] = []
        func bridgeExecute(_ request: DaemonRequest, client: Caller) -> DaemonResponse? { requests.append(request); return nil }
    }

    @Test func theFirstConnectionWaitsForTheRadiosSignature() throws {
        let url = try BrokerURL(parsing: "mqtt://127.0.0.1:1")
        var s = MQTTObserver.Settings(connection: BrokerConnection.Settings(url: url), iata: "SEA")
        s.signedByRadio = true
        s.claims.client = "c"
        let o = MQTTObserver(settings: s, clientIdSuffix: "", index: 0)
        let host = Host()
        o.host = host
        o.wallClock = { 1_764_000_000_000_000 }
        let key = PublicKey(HexCodec.decode(String(repeating: "ab", count: 32))!)!
        o.ready(name: "r", publicKey: key, radio: nil, now: 1_000)
        #expect(host.requests.map(\.name) == ["sign"] && o.connection == nil)
        var bare = ObserverFormat.Claims()
        bare.audience = "127.0.0.1"
        bare.client = "c"
        let input = ObserverFormat.tokenInput(publicKey: key, issuedAt: 1_764_000_000, lifetimeS: 86_400, claims: bare)
        #expect(host.requests[0].args["data"]?.string == HexCodec.encode(Array(input.utf8)))
        // Busy (an API client's signing): asked again after a second, not before.
        o.answer(DaemonResponse(id: 2, error: DaemonError(.busy, "sign: busy")), now: 1_000)
        _ = o.tick(now: 1_500)
        #expect(host.requests.count == 1 && o.connection == nil)
        _ = o.tick(now: 2_000)
        #expect(host.requests.count == 2 && o.connection == nil)
        o.answer(DaemonResponse(id: 2, ok: [("signature", .string(String(repeating: "00", count: 64)))]), now: 2_100)
        #expect(o.connection != nil)
        o.stop(now: 2_200)
    }
}

/// SHA-256 (libsodium), computed here as the firmware does.
private func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
    return out
}
