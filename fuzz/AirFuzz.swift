// libFuzzer target over on-air packets: the packet parser, every payload decoder, advert parsing and
// signature checks, and the plaintext decoders. Built by fuzz/run.sh together with the MeshAir sources.
//
// Invariants: no trap on any input; a parsed packet encodes back to the same bytes; where a payload
// format is exact the decoded value encodes back to the same bytes, and otherwise decoding what was
// encoded gives the same value again.

import MeshCompanion
import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

var fuzzSink = 0
let fuzzKey = PublicKey(hex: "1ec77175b0918ed206f9ae04ec136d6d5d4315bb26305427f645b492e9350c10")!
let fuzzChannel = ChannelSecret.publicChannel

/// Decodes `payload` as every payload type and checks the round trips.
func payloads(_ payload: [UInt8], type: PayloadType?) {
    if type == nil || type!.isPeerDatagram, let d = try? PeerDatagram(payload: payload) {
        fuzzCheck(d.encoded == payload, "peer datagram round trip")
        fuzzSink &+= d.mac.count &+ d.ciphertext.count &+ (d.isAddressed(to: fuzzKey) ? 1 : 0)
    }
    if type == nil || type == .grpTxt || type == .grpData, let g = try? GroupDatagram(payload: payload) {
        fuzzCheck(g.encoded == payload, "group datagram round trip")
        if let p = try? g.decrypt(with: fuzzChannel) { fuzzSink &+= p.count }
    }
    if type == nil || type == .anonReq, let a = try? AnonRequest(payload: payload) {
        fuzzCheck(a.encoded == payload, "anon request round trip")
    }
    if type == nil || type == .ack, let a = try? AckPayload(payload: payload) {
        fuzzCheck(a.encoded == payload, "ack round trip")
    }
    if type == nil || type == .multipart, let m = try? MultipartPayload(payload: payload) {
        fuzzCheck(m.encoded == payload, "multipart round trip")
        payloads(m.inner, type: m.innerType)
    }
    if type == nil || type == .trace, let t = try? TracePayload(payload: payload) {
        fuzzCheck(t.encoded == payload, "trace round trip")
        fuzzSink &+= t.hopHashes.count &+ (t.nextHash(afterSNRCount: Int(payload.first ?? 0) & 7)?.count ?? 0)
    }
    if type == nil || type == .advert, let a = try? Advert(payload: payload) {
        fuzzCheck(a.encoded == payload, "advert round trip")
        if a.isValid { fuzzSink &+= 1 }
        if let d = try? a.data() { appData(d) }
    }
    if type == nil || type == .control, let c = try? ControlPayload(payload: payload) {
        let again = try? ControlPayload(payload: c.encoded)
        fuzzCheck(again == c, "control payload re-decodes equal")
    }
    if type == nil {
        if let d = try? AdvertData(bytes: payload) { appData(d) }
        plaintexts(payload)
    }
}

func appData(_ d: AdvertData) {
    fuzzSink &+= (d.name?.utf8.count ?? 0) &+ Int(d.latitude ?? 0) &+ Int(d.feat1 ?? 0)
    // Encoding normalises (zero features dropped, the name cut); after that it must be stable.
    guard let once = try? AdvertData(bytes: d.encoded) else { return fuzzCheck(false, "advert data re-decodes") }
    fuzzCheck(once.encoded.count <= AirLimits.maxAdvertDataSize, "advert data fits")
    fuzzCheck((try? AdvertData(bytes: once.encoded)) == once, "advert data encoding is stable")
}

/// Plaintexts travel encrypted, so zero-padded to whole AES blocks: decode what the receiver would see.
func padded(_ b: [UInt8]) -> [UInt8] { b + [UInt8](repeating: 0, count: (16 - b.count % 16) % 16) }

/// Checks that re-decoding what `x` encodes to (padded) succeeds and, after that one normalisation
/// (padding kept, over-long fields cut), is stable. `encode` returns nil when it refuses the value.
func stable<T: Equatable>(_ x: T, _ what: StaticString, encode: (T) -> [UInt8]?, decode: ([UInt8]) -> T?) {
    guard let e = encode(x) else { return }
    guard let once = decode(padded(e)) else { return fuzzCheck(false, what) }
    // (The padding may take a value past an encoder's length limit.)
    guard let e2 = encode(once) else { return fuzzCheck(e2Refusable(e, padded(e)), what) }
    fuzzCheck(decode(padded(e2)) == once, what)
}

func e2Refusable(_ e: [UInt8], _ p: [UInt8]) -> Bool { p.count > e.count }

func plaintexts(_ b: [UInt8]) {
    if let t = try? TextMessage(plaintext: b) {
        fuzzSink &+= t.string.utf8.count &+ Int(t.ackCode(key: fuzzKey).value & 1)
        stable(t, "text message round trip", encode: { try? $0.encoded() }, decode: { try? TextMessage(plaintext: $0) })
    }
    if let r = try? RequestPlaintext(plaintext: b) { fuzzCheck(r.encoded == b, "request round trip") }
    if let r = try? ResponsePlaintext(plaintext: b) { fuzzCheck(r.encoded == b, "response round trip") }
    if let p = try? PathPlaintext(plaintext: b) {
        fuzzSink &+= Int(p.extraPayloadType?.rawValue ?? 0)
        stable(p, "path plaintext round trip", encode: { try? $0.encoded() }, decode: { try? PathPlaintext(plaintext: $0) })
    }
    if let g = try? GroupText(plaintext: b) {
        fuzzSink &+= (g.senderName?.utf8.count ?? 0) &+ g.message.utf8.count
        stable(g, "group text round trip", encode: { $0.encoded }, decode: { try? GroupText(plaintext: $0) })
    }
    if let g = try? GroupData(plaintext: b) {
        stable(g, "group data round trip", encode: { try? $0.encoded() }, decode: { try? GroupData(plaintext: $0) })
    }
    for room in [false, true] {
        if let l = try? LoginRequest(plaintext: b, room: room) {
            stable(l, "login request round trip", encode: { $0.encoded }, decode: { try? LoginRequest(plaintext: $0, room: room) })
        }
    }
    if let l = try? LoginResponse(plaintext: b) {
        stable(l, "login response round trip", encode: { $0.encoded }, decode: { try? LoginResponse(plaintext: $0) })
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    let bytes = Array(raw)

    // The whole input as one received packet.
    if let view = try? PacketView(raw) {
        let packet = Packet(view)
        fuzzCheck(packet.bytes == bytes, "packet round trip")
        fuzzCheck(packet.hash == view.hash, "packet hash from view and copy")
        fuzzCheck((try? Packet(bytes: bytes)) == packet, "packet from bytes")
        fuzzSink &+= packet.hops.count &+ (packet.firstHopMatches([0x1e]) ? 1 : 0)
        payloads(packet.payload, type: packet.payloadType)
        var relayed = packet
        if (try? relayed.appendHop(Array(repeating: 0xAB, count: packet.hops.first?.count ?? 1))) != nil {
            fuzzCheck(relayed.hops.count == packet.hops.count + 1, "append hop")
            fuzzCheck((try? Packet(bytes: relayed.bytes)) == relayed, "relayed packet round trip")
        }
        var shortened = packet
        if (try? shortened.removeFirstHop()) != nil {
            fuzzCheck((try? Packet(bytes: shortened.bytes)) == shortened, "shortened packet round trip")
        }
    } else {
        fuzzCheck((try? Packet(bytes: bytes)) == nil, "packet and view agree")
    }
    // The whole input as a bare payload or plaintext of any type.
    payloads(bytes, type: nil)
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let me = try! LocalIdentity(seed: [UInt8](repeating: 7, count: 32))
    let other = try! LocalIdentity(seed: [UInt8](repeating: 9, count: 32))
    let secret = try! me.sharedSecret(with: other.publicKey)
    var seeds: [(String, [UInt8])] = []
    func add(_ name: String, _ p: @autoclosure () throws -> Packet) {
        if let p = try? p() { seeds.append((name, p.bytes)) }
    }
    let text = TextMessage(timestamp: 1_700_000_000, text: "Hello")
    add("advert", try Packet.advert(identity: me, timestamp: 1_700_000_000,
                                    appData: AdvertData(type: .chat, name: "Alice", latitude: 52.5, longitude: 13.4).encoded,
                                    route: .flood))
    add("advert-direct", try Packet.advert(identity: other, timestamp: 5, appData: AdvertData(type: .repeater, name: "rpt").encoded,
                                           route: .direct([1, 2, 3])))
    add("grp-txt", try Packet.groupText(GroupText(timestamp: 9, senderName: "Bob", message: "Hi all"), channel: fuzzChannel))
    add("ack", try Packet.ack(AckCode(value: 0xDEADBEEF), route: .flood))
    add("multi-ack", try Packet.multipartAck(AckCode(value: 1), remaining: 2, route: .direct([5])))
    add("trace", try Packet.trace(TracePayload(tag: 1, authCode: 2, flags: 0, hashes: [1, 2, 3])))
    add("control", try Packet.control(.discoverRequest(prefixOnly: true, typeFilter: 4, tag: 7, since: 1)))
    add("control-resp", try Packet.control(.discoverResponse(nodeType: .repeater, snrQuarterDb: -8, tag: 7,
                                                              publicKey: Array(me.publicKey.bytes.prefix(8)))))
    add("raw-custom", try Packet.rawCustom([1, 2, 3, 4], path: [9, 9], hashSize: 2))
    add("txt-msg", try Packet(payloadType: .txtMsg,
                              payload: PeerDatagram(destHash: 1, srcHash: 2, macAndCiphertext: [UInt8](repeating: 0x5A, count: 18)).encoded,
                              route: .flood(hashSize: 3)))
    seeds.append(("text-plain", (try? text.encoded()) ?? []))
    seeds.append(("transport-flood", [0x14, 0x34, 0x12, 0, 0, 0x41, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
    seeds.append(("shared-secret", secret.bytes))
    for (name, bytes) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    _exit(0)
}
