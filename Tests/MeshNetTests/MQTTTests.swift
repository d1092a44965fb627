import Testing
@testable import MeshNet

extension MQTTPacket: Equatable {
    public static func == (a: MQTTPacket, b: MQTTPacket) -> Bool {
        switch (a, b) {
        case let (.connect(x), .connect(y)): return x == y
        case let (.connack(s1, r1), .connack(s2, r2)): return s1 == s2 && r1 == r2
        case let (.publish(x), .publish(y)): return x == y
        case let (.puback(x), .puback(y)): return x == y
        case let (.subscribe(i1, f1), .subscribe(i2, f2)):
            return i1 == i2 && f1.count == f2.count && zip(f1, f2).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.suback(i1, g1), .suback(i2, g2)): return i1 == i2 && g1 == g2
        case (.pingreq, .pingreq), (.pingresp, .pingresp), (.disconnect, .disconnect): return true
        case let (.oversized(t1, q1, i1, l1), .oversized(t2, q2, i2, l2)): return t1 == t2 && q1 == q2 && i1 == i2 && l1 == l2
        default: return false
        }
    }

}

@Suite struct MQTTPacketTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    /// The parts one after the other (a long `+` chain of literals is too slow for Swift 6.0's type checker).
    func joined(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }

    @Test func connectMinimal() {
        let p = MQTTPacket.connect(MQTTConnect(clientId: "pm", keepAliveS: 60))
        #expect(p.bytes == joined([0x10, 0x0E, 0x00, 0x04], bytes("MQTT"), [0x04, 0x02, 0x00, 0x3C, 0x00, 0x02], bytes("pm")))
    }

    @Test func connectWithWillUserAndPassword() throws {
        let c = MQTTConnect(clientId: "pm", username: "u", password: bytes("p"), keepAliveS: 60,
                            will: MQTTWill(topic: "s", payload: bytes("off"), qos: .atLeastOnce, retain: true))
        let expected = joined([0x10, 0x1C, 0x00, 0x04], bytes("MQTT"), [0x04, 0xEE, 0x00, 0x3C, 0x00, 0x02], bytes("pm"),
                              [0x00, 0x01], bytes("s"), [0x00, 0x03], bytes("off"), [0x00, 0x01], bytes("u"), [0x00, 0x01], bytes("p"))
        #expect(MQTTPacket.connect(c).bytes == expected)
        // A client never receives a CONNECT: decoding one is an error.
        var d = MQTTDecoder()
        d.append(expected)
        #expect(throws: MQTTError.self) { _ = try d.next() }
    }

    @Test func publishQoS1Retained() throws {
        let p = MQTTPublish(topic: "a/b", payload: bytes("hi"), qos: .atLeastOnce, retain: true, packetId: 10)
        let expected = joined([0x33, 0x09, 0x00, 0x03], bytes("a/b"), [0x00, 0x0A], bytes("hi"))
        #expect(MQTTPacket.publish(p).bytes == expected)
        var d = MQTTDecoder()
        d.append(expected)
        #expect(try d.next() == .publish(p))
    }

    @Test func remainingLengthVarint() throws {
        var out: [UInt8] = []
        for (n, enc) in [(0, [0x00]), (127, [0x7F]), (128, [0x80, 0x01]), (321, [0xC1, 0x02]), (16_383, [0xFF, 0x7F]),
                         (16_384, [0x80, 0x80, 0x01]), (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F])] as [(Int, [UInt8])] {
            out.removeAll()
            MQTTPacket.remainingLength(n, into: &out)
            #expect(out == enc, "\(n)")
        }
        // A 300-byte payload round-trips through a two-byte length, delivered a byte at a time.
        let p = MQTTPublish(topic: "t", payload: [UInt8](repeating: 7, count: 300))
        var d = MQTTDecoder()
        var got: MQTTPacket? = nil
        for b in MQTTPacket.publish(p).bytes {
            #expect(got == nil)
            d.append([b])
            got = try d.next()
        }
        #expect(got == .publish(p))
    }

    @Test func subscribeAndAcks() throws {
        let sub = MQTTPacket.subscribe(packetId: 2, filters: [("x/#", .atLeastOnce)])
        #expect(sub.bytes == joined([0x82, 0x08, 0x00, 0x02, 0x00, 0x03], bytes("x/#"), [0x01]))
        var d = MQTTDecoder()
        d.append([0x20, 0x02, 0x00, 0x00, 0x40, 0x02, 0x12, 0x34, 0x90, 0x03, 0x00, 0x02, 0x01, 0xD0, 0x00])
        #expect(try d.next() == .connack(sessionPresent: false, returnCode: 0))
        #expect(try d.next() == .puback(0x1234))
        #expect(try d.next() == .suback(packetId: 2, granted: [1]))
        #expect(try d.next() == .pingresp)
        #expect(try d.next() == nil)
        #expect(MQTTPacket.pingreq.bytes == [0xC0, 0x00])
        #expect(MQTTPacket.disconnect.bytes == [0xE0, 0x00])
    }

    @Test func malformedInputIsAnErrorNotACrash() {
        for bad: [UInt8] in [[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [0x20, 0x01, 0x00], [0x34, 0x02, 0x00, 0x05],
                             [0x36, 0x04, 0x00, 0x01, 0x61, 0x00], [0x50, 0x02, 0x00, 0x01], [0xF0, 0x00],
                             [0x30, 0x04, 0x00, 0x02, 0xC3, 0x28],
                             // QoS 1 with packet id 0 (found by fuzz/run.sh mqtt); a wildcard in a topic name
                             [0x32, 0x05, 0x00, 0x01, 0x61, 0x00, 0x00], [0x30, 0x05, 0x00, 0x03, 0x61, 0x2F, 0x23]] {
            var d = MQTTDecoder()
            d.append(bad)
            #expect(throws: MQTTError.self, "\(bad)") { _ = try d.next() }
        }
        // Over the size limit, anything but a PUBLISH (which is skipped, see below) is an error.
        var d = MQTTDecoder(maxPacketSize: 100)
        d.append([0x90, 0xC8, 0x01])
        #expect(throws: MQTTError.self) { _ = try d.next() }
    }

    /// A PUBLISH over the limit, its header and the start of its topic length.
    func oversizedPublish(topic: String, qos: MQTTQoS, id: UInt16, payload: Int) -> [UInt8] {
        MQTTPacket.publish(MQTTPublish(topic: topic, payload: [UInt8](repeating: 0x5A, count: payload), qos: qos,
                                       retain: true, packetId: id)).bytes
    }

    @Test func anOversizedPublishIsSkippedAsItArrivesNotBuffered() throws {
        let limit = 1_000
        let big = oversizedPublish(topic: "pm/command/send", qos: .atLeastOnce, id: 0x0102, payload: 300_000)
        let after = MQTTPacket.publish(MQTTPublish(topic: "pm/x", payload: [1, 2, 3])).bytes
        let stream = big + after
        // Byte counts of the pieces: the fixed header and part of the topic, then chunks of 4 KiB.
        var d = MQTTDecoder(maxPacketSize: limit)
        var got: [MQTTPacket] = []
        var at = 0
        var most = 0
        for size in [3, 5] + [Int](repeating: 4096, count: stream.count / 4096 + 1) {
            guard at < stream.count else { break }
            let end = min(at + size, stream.count)
            d.append(stream[at..<end])
            at = end
            while let p = try d.next() { got.append(p) }
            most = max(most, d.buffered)
        }
        let length = big.count - 4  // the fixed header of a 300,019-byte body is 1 + 3 bytes
        #expect(got == [.oversized(topic: "pm/command/send", qos: .atLeastOnce, packetId: 0x0102, length: length),
                        .publish(MQTTPublish(topic: "pm/x", payload: [1, 2, 3]))])
        // Never more than a read's worth waits in the buffer; none of the payload is kept.
        #expect(most <= 4096 + 8, "\(most)")
        #expect(d.skipping == 0 && d.buffered == 0)
    }

    @Test func anOversizedPublishInOnePieceAndOneCutBeforeItsPacketId() throws {
        let big = oversizedPublish(topic: "a", qos: .atMostOnce, id: 0, payload: 2_000)
        var d = MQTTDecoder(maxPacketSize: 1_000)
        d.append(big + [0xD0, 0x00])
        #expect(try d.next() == .oversized(topic: "a", qos: .atMostOnce, packetId: 0, length: big.count - 3))
        #expect(try d.next() == .pingresp)
        // QoS 1: nothing is reported until the packet id is in.
        let q1 = oversizedPublish(topic: "abc", qos: .atLeastOnce, id: 9, payload: 2_000)
        var e = MQTTDecoder(maxPacketSize: 1_000)
        e.append(q1.prefix(3 + 2 + 3 + 1))
        #expect(try e.next() == nil)
        e.append(q1[(3 + 2 + 3 + 1)...].prefix(1))
        #expect(try e.next() == .oversized(topic: "abc", qos: .atLeastOnce, packetId: 9, length: q1.count - 3))
        #expect(e.skipping == q1.count - (3 + 2 + 3 + 2) && e.buffered == 0)
        // A topic length past the packet's end, a bad topic, or QoS 1 with id 0: errors as for any PUBLISH.
        for bad: [UInt8] in [[0x32, 0xE9, 0x07, 0xFF, 0xFF], [0x30, 0xE9, 0x07, 0x00, 0x01, 0x23],
                             [0x32, 0xE9, 0x07, 0x00, 0x01, 0x61, 0x00, 0x00], [0x36, 0xE9, 0x07, 0x00, 0x01, 0x61, 0x00, 0x01]] {
            var f = MQTTDecoder(maxPacketSize: 1_000)
            f.append(bad)
            #expect(throws: MQTTError.self, "\(bad)") { _ = try f.next() }
        }
    }

    @Test func topicMatching() {
        #expect(MQTTTopic.matches("meshcore/command/send", filter: "meshcore/command/+"))
        #expect(!MQTTTopic.matches("meshcore/command/send/result", filter: "meshcore/command/+"))
        #expect(MQTTTopic.matches("meshcore/command/send/result", filter: "meshcore/#"))
        #expect(MQTTTopic.matches("meshcore", filter: "meshcore/#"))
        #expect(!MQTTTopic.matches("$SYS/x", filter: "#"))
        #expect(MQTTTopic.isValidName("a/b") && !MQTTTopic.isValidName("a/+") && !MQTTTopic.isValidName(""))
    }
}

@Suite struct BrokerURLTests {
    @Test func schemesPortsAndPaths() throws {
        let a = try BrokerURL(parsing: "mqtt://broker.local")
        #expect(a.scheme == .mqtt && a.host == "broker.local" && a.port == 1883 && !a.usesTLS)
        let b = try BrokerURL(parsing: "mqtts://me@10.0.0.1:18883")
        #expect(b.user == "me" && b.port == 18883 && b.usesTLS && !b.usesWebSocket)
        let c = try BrokerURL(parsing: "wss://mqtt.example.net")
        #expect(c.port == 443 && c.path == "/mqtt" && c.usesTLS && c.usesWebSocket)
        let d = try BrokerURL(parsing: "ws://[::1]:9001/")
        #expect(d.host == "::1" && d.port == 9001 && d.path == "/")
        #expect(d.description == "ws://[::1]:9001/")
    }

    @Test func badURLsSayWhy() {
        for bad in ["broker.local", "http://x", "mqtt://", "mqtt://x:0", "mqtt://x:99999", "mqtt://u:secret@x", "mqtt://x/path", "ws://[::1"] {
            #expect(throws: MQTTError.self, "\(bad)") { _ = try BrokerURL(parsing: bad) }
        }
    }
}

@Suite struct MQTTClientTests {
    func client(keepAlive: UInt16 = 60, window: Int = 2) -> MQTTClient {
        var o = MQTTClient.Options(connect: MQTTConnect(clientId: "c", keepAliveS: keepAlive))
        o.maxInflight = window
        o.maxQueued = 4
        return MQTTClient(options: o)
    }

    func packets(_ bytes: [UInt8]) throws -> [MQTTPacket] {
        var d = MQTTDecoder()
        d.append(bytes)
        var out: [MQTTPacket] = []
        while let p = try d.next() { out.append(p) }
        return out
    }

    @Test func publishesWaitForTheConnectionAndTheWindow() throws {
        let c = client()
        let a = c.publish(topic: "t", payload: [1], now: 0)
        let b = c.publish(topic: "t", payload: [2], now: 0)
        let x = c.publish(topic: "t", payload: [3], now: 0)
        #expect(c.takeOutput().isEmpty && c.queuedCount == 3)
        c.transportOpened(now: 10)
        #expect(c.takeOutput() == MQTTPacket.connect(c.options.connect).bytes)
        #expect(try c.receive([0x20, 0x02, 0x00, 0x00], now: 20) == [.connected(sessionPresent: false)])
        // Two go out (the window), the third waits for a PUBACK.
        let sent = try packets(c.takeOutput())
        #expect(sent == [.publish(MQTTPublish(topic: "t", payload: [1], qos: .atLeastOnce, packetId: a)),
                         .publish(MQTTPublish(topic: "t", payload: [2], qos: .atLeastOnce, packetId: b))])
        #expect(c.inflightCount == 2 && c.queuedCount == 1 && !c.canPublishNow)
        #expect(try c.receive(MQTTPacket.puback(a).bytes, now: 30) == [.acknowledged(a)])
        #expect(try packets(c.takeOutput()) == [.publish(MQTTPublish(topic: "t", payload: [3], qos: .atLeastOnce, packetId: x))])
        // A duplicate PUBACK is ignored.
        #expect(try c.receive(MQTTPacket.puback(a).bytes, now: 31) == [])
    }

    @Test func inflightIsSentAgainWithDupAfterAReconnect() throws {
        let c = client()
        c.transportOpened(now: 0)
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        _ = c.takeOutput()
        let id = c.publish(topic: "t", payload: [9], now: 1)
        _ = c.takeOutput()
        c.transportClosed()
        c.transportOpened(now: 100)
        _ = c.takeOutput()
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 101)
        #expect(try packets(c.takeOutput()) == [.publish(MQTTPublish(topic: "t", payload: [9], qos: .atLeastOnce, dup: true, packetId: id))])
        #expect(try c.receive(MQTTPacket.puback(id).bytes, now: 102) == [.acknowledged(id)])
        #expect(c.inflightCount == 0)
    }

    @Test func subscriptionsAreRenewedAndIncomingQoS1IsAcknowledged() throws {
        let c = client()
        c.subscribe([("p/command/+", .atLeastOnce)], now: 0)
        for round in 0..<2 {
            c.transportOpened(now: 0)
            _ = c.takeOutput()
            _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
            let out = c.takeOutput()
            // SUBSCRIBE (0x82), its packet id, then the filter and its QoS.
            #expect(out.first == 0x82 && Array(out.suffix(14)) == [0x00, 0x0B] + Array("p/command/+".utf8) + [0x01], "round \(round)")
            c.transportClosed()
        }
        c.transportOpened(now: 0)
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        _ = c.takeOutput()
        let incoming = MQTTPublish(topic: "p/command/send", payload: Array("{}".utf8), qos: .atLeastOnce, packetId: 77)
        #expect(try c.receive(MQTTPacket.publish(incoming).bytes, now: 1) == [.message(incoming)])
        #expect(try packets(c.takeOutput()) == [.puback(77)])
    }

    @Test func anOversizedMessageIsAcknowledgedAndDroppedWithoutEndingTheSession() throws {
        var o = MQTTClient.Options(connect: MQTTConnect(clientId: "c", keepAliveS: 60))
        o.maxPacketSize = 1_024
        let c = MQTTClient(options: o)
        c.transportOpened(now: 0)
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        _ = c.takeOutput()
        let big = MQTTPacket.publish(MQTTPublish(topic: "pm/command/x", payload: [UInt8](repeating: 1, count: 5_000), qos: .atLeastOnce,
                                                 retain: true, packetId: 300)).bytes
        var events: [MQTTClient.Event] = []
        var at = 0
        while at < big.count {
            let end = min(at + 700, big.count)
            events += try c.receive(big[at..<end], now: 1)
            at = end
        }
        #expect(events == [.oversized(topic: "pm/command/x", bytes: big.count - 3)])
        // PUBACK: the broker does not send it again.
        #expect(try packets(c.takeOutput()) == [.puback(300)])
        #expect(c.state == .connected)
        let small = MQTTPublish(topic: "pm/command/y", payload: [7], qos: .atLeastOnce, packetId: 301)
        #expect(try c.receive(MQTTPacket.publish(small).bytes, now: 2) == [.message(small)])
    }

    @Test func refusedConnectionSaysWhy() {
        let c = client()
        c.transportOpened(now: 0)
        #expect(throws: MQTTError("the broker refused the connection: bad user name or password")) {
            _ = try c.receive([0x20, 0x02, 0x00, 0x04], now: 1)
        }
    }

    @Test func keepAlivePingsAndDetectsADeadBroker() throws {
        let c = client(keepAlive: 10)
        c.transportOpened(now: 0)
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        _ = c.takeOutput()
        #expect(c.deadline == 7_500)
        try c.tick(now: 7_500)
        #expect(c.takeOutput() == MQTTPacket.pingreq.bytes)
        _ = try c.receive(MQTTPacket.pingresp.bytes, now: 7_600)
        try c.tick(now: 15_000)
        #expect(c.takeOutput() == MQTTPacket.pingreq.bytes)
        #expect(throws: MQTTError.self) { try c.tick(now: 15_000 + 10_000) }
    }

    @Test func noConnackTimesOut() {
        let c = client()
        c.transportOpened(now: 0)
        #expect(throws: MQTTError.self) { try c.tick(now: 15_000) }
    }

    @Test func aFullQueueDropsTheOldest() throws {
        let c = client()
        for i in 0..<6 { c.publish(topic: "t", payload: [UInt8(i)], qos: .atMostOnce, now: 0) }
        #expect(c.dropped == 2 && c.queuedCount == 4)
        c.transportOpened(now: 0)
        _ = c.takeOutput()
        _ = try c.receive([0x20, 0x02, 0x00, 0x00], now: 0)
        let payloads = try packets(c.takeOutput()).compactMap { p -> UInt8? in if case .publish(let m) = p { return m.payload[0] } else { return nil } }
        #expect(payloads == [2, 3, 4, 5])
    }
}

@Suite struct ReconnectBackoffTests {
    @Test func aBrokerThatAcceptsAndClosesAtOnceIsRetriedEverMoreSlowly() {
        var b = ReconnectBackoff()
        var now: UInt64 = 0
        var delays: [UInt64] = []
        for _ in 0..<9 {
            b.connected(now: now)      // CONNACK...
            now += 50                  // ...and closed at once
            let d = b.failed(now: now)
            delays.append(d)
            now += d
        }
        #expect(delays == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000])
    }

    @Test func theDelayStartsAgainOnlyAfterAMinuteConnected() {
        var b = ReconnectBackoff()
        #expect(b.failed(now: 0) == 1_000)
        #expect(b.failed(now: 1_000) == 2_000)
        #expect(b.failed(now: 3_000) == 4_000)
        // Up for 59.999 s: not long enough.
        b.connected(now: 10_000)
        #expect(b.failed(now: 69_999) == 8_000)
        // Up for a minute: the next failure waits the minimum again.
        b.connected(now: 100_000)
        #expect(b.failed(now: 160_000) == 1_000)
        // Failures without a connection in between keep growing.
        #expect(b.failed(now: 161_000) == 2_000)
    }
}
