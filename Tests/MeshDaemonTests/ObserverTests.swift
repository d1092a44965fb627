import CSodium
import MeshAir
import MeshCompanion
import MeshNet
import MeshSession
import Testing
@testable import MeshDaemon

/// The observer uploader's format (what analyzer sites read), byte for byte.
@Suite struct ObserverTests {
    let key = PublicKey(HexCodec.decode("7f01db1b1ac9e81e8b335cf368fae7cdc5879ba0366e1cc9db62382c7b875e5f")!)!
    let radio = RadioParams(frequencyKHz: 869_618, bandwidthHz: 62_500, spreadingFactor: 8, codingRate: 5)

    func text(_ j: JSON?) -> String {
        var out: [UInt8] = []
        j?.write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func aDirectTextPacketIsOneExactLine() throws {
        // Direct route (2), TXT_MSG (2): header 0x0A; two 1-byte hops AB, CD; a 6-byte payload.
        let raw: [UInt8] = [0x0A, 0x02, 0xAB, 0xCD, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]
        let j = ObserverFormat.packet(raw: raw, snrQuarterDb: -21, rssi: -97, origin: "obs", originId: key, radio: radio,
                                      epochMicros: 1_764_000_000_012_345)
        // The hash, computed here as the firmware does: SHA-256(type, payload), first 8 bytes.
        let expectedHash = HexCodec.encode(sha256([0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]).prefix(8)).uppercased()
        #expect(expectedHash == "6CD071A9112BCB8B")
        // Score: (-5.25 + 10) / 10 * (1 - 10/256) = 0.456... -> 456. Duration: SF8 62.5 kHz CR 4/5, 10 bytes:
        // (32 + 8) * 4 + 17 + ceil((80 + 16 - 32 + 8 + 20) / 32) * 5 * 4 = 237 quarter symbols of 4,096 us -> 242 ms.
        #expect(text(j) == #"{"origin":"obs","origin_id":"7F01DB1B1AC9E81E8B335CF368FAE7CDC5879BA0366E1CC9DB62382C7B875E5F","#
            + #""timestamp":"2025-11-24T16:00:00.012345+00:00","type":"PACKET","direction":"rx","time":"16:00:00","date":"24/11/2025","#
            + #""len":"10","packet_type":"2","route":"D","payload_len":"6","raw":"0A02ABCD112233445566","SNR":"-5.25","RSSI":"-97","#
            + #""score":"456","duration":"242","hash":"6CD071A9112BCB8B","path":"AB,CD"}"#)
    }

    @Test func routesTraceHashesAndWhatIsNotAPacket() throws {
        // Transport flood (0) advert: F; transport direct (3): T, and no path field for it.
        let flood: [UInt8] = [0x10, 0x01, 0x00, 0x02, 0x00, 0x00, 0x99]
        #expect(ObserverFormat.packet(raw: flood, snrQuarterDb: 0, rssi: -1, origin: "o", originId: key, radio: nil, epochMicros: 0)?["route"]?.string == "F")
        let td: [UInt8] = [0x0B, 0x01, 0x00, 0x02, 0x00, 0x01, 0xAA, 0x42]
        let j = ObserverFormat.packet(raw: td, snrQuarterDb: 0, rssi: -1, origin: "o", originId: key, radio: nil, epochMicros: 0)
        #expect(j?["route"]?.string == "T" && j?["path"] == nil && j?["score"] == nil && j?["payload_len"]?.string == "1")
        // TRACE (9) hashes the path length as uint16 LE too.
        let trace: [UInt8] = [0x26, 0x01, 0x20, 0x01, 0x02, 0x03, 0x04]
        let expected = HexCodec.encode(sha256([0x09, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04]).prefix(8)).uppercased()
        #expect(ObserverFormat.packet(raw: trace, snrQuarterDb: 0, rssi: -1, origin: "o", originId: key, radio: nil, epochMicros: 0)?["hash"]?.string == expected)
        // Bytes that are no packet (a reserved path hash size, a cut path) are not published.
        #expect(ObserverFormat.packet(raw: [0x0A, 0xC1, 0x00], snrQuarterDb: 0, rssi: 0, origin: "o", originId: key, radio: nil, epochMicros: 0) == nil)
        #expect(ObserverFormat.packet(raw: [0x0A, 0x05, 0x00], snrQuarterDb: 0, rssi: 0, origin: "o", originId: key, radio: nil, epochMicros: 0) == nil)
    }

    @Test func numbersAsTheObserverNetworksWriteThem() {
        #expect(["0.0", "12.0", "-1.25", "7.5", "-0.75", "31.75", "-32.0"] ==
                [0, 48, -5, 30, -3, 127, -128].map { ObserverFormat.snr(Int8($0)) })
        #expect(ObserverFormat.score(snrQuarterDb: 48, spreadingFactor: 8, length: 10) == 1000)
        #expect(ObserverFormat.score(snrQuarterDb: -44, spreadingFactor: 8, length: 10) == 0)  // -11 dB < -10
        #expect(ObserverFormat.score(snrQuarterDb: -80, spreadingFactor: 12, length: 128) == 0)  // exactly the threshold
        #expect(ObserverFormat.score(snrQuarterDb: -60, spreadingFactor: 12, length: 128) == 250)  // 5/10 * 1/2
        #expect(ObserverFormat.radio(radio) == "869.618,62.5,8,5")
        #expect(ObserverFormat.radio(RadioParams(frequencyKHz: 915_000, bandwidthHz: 250_000, spreadingFactor: 10, codingRate: 7)) == "915,250,10,7")
        #expect(ObserverFormat.iata("sea") == "SEA" && ObserverFormat.iata("S/A") == nil && ObserverFormat.iata("AB") == nil)
        let c = ObserverFormat.clock(epochMicros: 951_782_400_000_001)  // 2000-02-29
        #expect(c.iso == "2000-02-29T00:00:00.000001+00:00" && c.time == "00:00:00" && c.date == "29/02/2000")
    }

    @Test func statusCarriesTheRadioAndFlatStats() {
        let stats = ObserverFormat.flatStats([("result", .obj(("core", .obj(("battery_mv", .int(4100)))),
                                                                ("packets", .obj(("received", .int(7))))))])
        let s = ObserverFormat.status("online", origin: "o", originId: key, device: nil, radio: radio, stats: stats, epochMicros: 0)
        #expect(text(s) == #"{"status":"online","timestamp":"1970-01-01T00:00:00.000000+00:00","origin":"o","#
            + #""origin_id":"7F01DB1B1AC9E81E8B335CF368FAE7CDC5879BA0366E1CC9DB62382C7B875E5F","model":"unknown","#
            + #""firmware_version":"unknown","radio":"869.618,62.5,8,5","client_version":"pocketmesh/\#(PocketMeshVersion.string)","#
            + #""stats":{"battery_mv":4100,"packets_received":7}}"#)
        #expect(ObserverFormat.flatStats([("ok", .bool(true))]) == nil)
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
