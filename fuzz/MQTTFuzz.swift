// libFuzzer target over the bytes a broker sends: the MQTT packet decoder and the client session
// that acts on them (CONNACK, PUBACK, SUBACK, PUBLISH, PINGRESP); and the same bytes as a DNS
// server's answer to the broker's lookup. Built by fuzz/run.sh together
// with the MeshNet sources.
//
// Byte 0 picks the read size (1 ... 64 bytes at a time) so the incremental decoder sees packets
// split at every place. Invariants: no trap on any input; a decoder error is final (the session
// reports it and closes); the session's in-flight window never exceeds its limit; every decoded
// PUBLISH re-encodes to the bytes it was decoded from, when the decoder accepted it whole.

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let step = Int(bytes[0] & 0x3F) + 1
    let stream = bytes[1...]

    // The decoder alone, fed in pieces.
    var decoder = MQTTDecoder(maxPacketSize: 4096)
    var at = stream.startIndex
    decoding: while at < stream.endIndex {
        let end = min(at + step, stream.endIndex)
        decoder.append(stream[at..<end])
        at = end
        while true {
            do {
                guard let packet = try decoder.next() else { break }
                if case .publish(let p) = packet {
                    fuzzCheck(p.qos == .atMostOnce || p.packetId != 0, "a QoS 1 PUBLISH has a packet id")
                    var again = MQTTDecoder(maxPacketSize: 4096)
                    again.append(packet.bytes)
                    if case .publish(let q)?? = try? again.next() {
                        fuzzCheck(q == p, "a decoded PUBLISH survives encode and decode")
                    } else {
                        fuzzCheck(false, "a decoded PUBLISH survives encode and decode")
                    }
                }
            } catch {
                break decoding
            }
        }
    }

    // The client session, connected, then given the same bytes as if from the broker.
    var options = MQTTClient.Options(connect: MQTTConnect(clientId: "fuzz", keepAliveS: 30))
    options.maxInflight = 4
    options.maxQueued = 8
    let client = MQTTClient(options: options)
    var now: UInt64 = 1_000
    client.transportOpened(now: now)
    client.subscribe([("meshcore/command/+", .atLeastOnce)], now: now)
    for i in 0..<6 { _ = client.publish(topic: "meshcore/t", payload: [UInt8(i)], qos: .atLeastOnce, now: now) }
    _ = client.takeOutput()
    at = stream.startIndex
    while at < stream.endIndex {
        let end = min(at + step, stream.endIndex)
        do {
            _ = try client.receive(stream[at..<end], now: now)
            try client.tick(now: now)
        } catch {
            break
        }
        fuzzCheck(client.inflightCount <= options.maxInflight, "the in-flight window holds")
        _ = client.takeOutput()
        at = end
        now += 500
    }
    client.transportClosed()
    fuzzCheck(client.state == .closed, "a closed transport closes the session")

    // The same bytes as a DNS server's answer to the broker lookup (id and question taken from
    // the input, so the fuzzer can reach the records): no trap, and addresses of the asked size.
    if bytes.count >= 2 {
        let id = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        for type in [DNSType.a, .aaaa] {
            if case .addresses(let found)? = DNSMessage.answer(Array(stream), id: id, name: "broker.example.com", type: type) {
                fuzzCheck(found.allSatisfy { $0.count == (type == .a ? 4 : 16) }, "DNS addresses have their type's size")
            }
        }
        var lookup = DNSLookup(name: "broker.example.com", config: ResolverConfig(parsing: "nameserver 10.0.0.1\nnameserver 10.0.0.2"),
                               now: 0, newId: { id })
        lookup.receive(Array(stream), from: 0, now: 1)
        lookup.tick(now: 10_000)
        lookup.tick(now: 20_000)
        lookup.tick(now: 30_000)
        lookup.tick(now: 40_000)
        fuzzCheck(lookup.outcome != nil, "a lookup ends")
    }
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    var seeds: [(String, [UInt8])] = []
    let connack: [UInt8] = [0x20, 0x02, 0x00, 0x00]
    let suback: [UInt8] = [0x90, 0x03, 0x00, 0x01, 0x01]
    let pubacks: [UInt8] = [0x40, 0x02, 0x00, 0x01, 0x40, 0x02, 0x00, 0x02, 0x40, 0x02, 0x00, 0x03]
    let inbound = MQTTPacket.publish(MQTTPublish(topic: "meshcore/command/send", payload: Array(#"{"id":1}"#.utf8), qos: .atLeastOnce, packetId: 7)).bytes
    seeds.append(("session", [0x05] + connack + suback + pubacks + inbound + [0xD0, 0x00]))
    seeds.append(("refused", [0x00] + [0x20, 0x02, 0x00, 0x05]))
    seeds.append(("one-byte-reads", [0x00] + connack + inbound))
    seeds.append(("long-length", [0x3F] + connack + [0x30, 0xFF, 0xFF, 0xFF, 0x7F]))
    // A DNS answer (from byte 1 on) to the query whose id is the input's first two bytes: 0x0707.
    if var r = try? DNSMessage.query(id: 0x0707, name: "broker.example.com", type: .a) {
        r[2] = 0x81; r[3] = 0x80; r[7] = 1
        r += [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x04, 192, 0, 2, 1]
        seeds.append(("dns-answer", [0x07] + r))
    }
    for (name, bytes) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    _exit(0)
}
