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

    @Test func theTokenIsAJWTSignedWithTheNodesKeyWhetherSeededOrImported() throws {
        let seeded = try LocalIdentity(seed: [UInt8](repeating: 7, count: 32))
        let imported = try LocalIdentity(privateKey: seeded.privateKey)
        for id in [seeded, imported] {
            let token = ObserverFormat.token(identity: id, issuedAt: 1_764_000_000, lifetimeS: 3600, audience: "mqtt.example")
            let parts = token.split(separator: ".").map(String.init)
            #expect(parts.count == 3)
            #expect(parts[0] == "eyJhbGciOiJFZDI1NTE5IiwidHlwIjoiSldUIn0")  // {"alg":"Ed25519","typ":"JWT"}
            #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
            let claims = #"{"publicKey":"\#(id.publicKey.hex.uppercased())","iat":1764000000,"exp":1764003600,"aud":"mqtt.example"}"#
            #expect(parts[1] == ObserverFormat.base64url(Array(claims.utf8)))
            let signature = HexCodec.decode(parts[2]) ?? []
            let signed = Array((parts[0] + "." + parts[1]).utf8)
            #expect(signature.count == 64 && crypto_sign_verify_detached(signature, signed, UInt64(signed.count), id.publicKey.bytes) == 0)
        }
        #expect(ObserverFormat.base64url([0xFB, 0xFF]) == "-_8")
    }
}

/// SHA-256 (libsodium), computed here as the firmware does.
private func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
    return out
}
