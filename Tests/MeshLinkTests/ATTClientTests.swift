import Testing
@testable import MeshLink

/// The ATT client driven byte by byte, without sockets.
@Suite struct ATTClientTests {
    func feed(_ client: inout ATTClient, _ pdu: [UInt8], now: UInt64 = 0) throws(ATTClientError) -> String {
        var result = ""
        var failure: ATTClientError? = nil
        pdu.withUnsafeBytes { raw in
            do throws(ATTClientError) {
                switch try client.receive(raw, now: now) {
                case .none: result = "none"
                case .ready: result = "ready"
                case .frame(let frame): result = "frame " + frame.map { hex($0) }.joined()
                case .frameAcknowledged: result = "ack"
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return result
    }

    func drain(_ client: inout ATTClient) -> [[UInt8]] {
        var all: [[UInt8]] = []
        while let next = client.takeOutgoing() { all.append(next) }
        return all
    }

    /// Runs a client against the simulated server in memory until it is ready.
    func readyClient(_ server: SimulatedGATTServer) throws -> ATTClient {
        var client = ATTClient()
        client.start(now: 0)
        for _ in 0..<20 where client.phase != .ready {
            for pdu in drain(&client) { pdu.withUnsafeBytes { server.receive($0) } }
            while let reply = server.takeOutgoing() { _ = try feed(&client, reply) }
        }
        return client
    }

    @Test func requestBytes() throws {
        var client = ATTClient()
        client.start(now: 0)
        #expect(drain(&client) == [[0x02, 0x05, 0x02]])  // Exchange MTU 517
        #expect(try feed(&client, [0x03, 0xF7, 0x00]) == "none")
        #expect(client.mtu == 247)
        let service = drain(&client)
        #expect(service == [[0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28,
                             0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0, 0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E]])
        #expect(try feed(&client, [0x07, 0x10, 0x00, 0x15, 0x00]) == "none")
        #expect(drain(&client) == [[0x08, 0x10, 0x00, 0x15, 0x00, 0x03, 0x28]])
    }

    @Test func serviceMissing() throws {
        var client = ATTClient()
        client.start(now: 0)
        _ = drain(&client)
        _ = try feed(&client, [0x03, 0xF7, 0x00])
        _ = drain(&client)
        #expect(throws: ATTClientError.serviceNotFound) { _ = try feed(&client, [0x01, 0x06, 0x01, 0x00, 0x0A]) }
        #expect(client.phase == .failed)
    }

    @Test func mtuExchangeNotSupportedMeans23() throws {
        var client = ATTClient()
        client.start(now: 0)
        _ = drain(&client)
        #expect(throws: ATTClientError.mtuTooSmall(23, needed: 179)) { _ = try feed(&client, [0x01, 0x02, 0x00, 0x00, 0x06]) }
    }

    @Test func timeout() throws {
        var client = ATTClient()
        client.start(now: 1000)
        #expect(client.nextDeadline == 11_000)
        try client.checkTimeout(now: 10_999)
        #expect(throws: ATTClientError.timeout("the MTU exchange")) { try client.checkTimeout(now: 11_000) }
    }

    @Test func notificationsIndicationsAndServerRequests() throws {
        let server = SimulatedGATTServer()
        var client = try readyClient(server)
        #expect(client.phase == .ready)
        #expect(client.mtu == 247)
        // Notification on TX: one frame; on another handle: ignored.
        #expect(try feed(&client, [0x1B, 0x14, 0x00, 0x83]) == "frame 83")
        #expect(try feed(&client, [0x1B, 0x03, 0x00, 0x99]) == "none")
        // Indication: frame plus a confirmation.
        #expect(try feed(&client, [0x1D, 0x14, 0x00, 0x00]) == "frame 00")
        #expect(drain(&client) == [[0x1E]])
        // The radio asks for an MTU exchange, and reads our (empty) database.
        #expect(try feed(&client, [0x02, 0xB9, 0x00]) == "none")
        #expect(drain(&client) == [[0x03, 0x05, 0x02]])
        #expect(client.mtu == 185)
        #expect(try feed(&client, [0x0A, 0x01, 0x00]) == "none")
        #expect(drain(&client) == [[0x01, 0x0A, 0x00, 0x00, 0x06]])
        // A frame write, its response, and a stray response.
        try client.send(frame: [0x16, 0x03], now: 0)
        #expect(drain(&client) == [[0x12, 0x12, 0x00, 0x16, 0x03]])
        #expect(try feed(&client, [0x1B, 0x14, 0x00, 0x83]) == "frame 83")  // interleaved
        #expect(try feed(&client, [0x13]) == "ack")
        #expect(try feed(&client, [0x13]) == "none")
        #expect(throws: ATTClientError.frameTooLarge(183, maximum: 182)) {
            try client.send(frame: [UInt8](repeating: 0, count: 183), now: 0)
        }
    }

    @Test func writeErrorsAfterReady() throws {
        let server = SimulatedGATTServer()
        var client = try readyClient(server)
        try client.send(frame: [0x16, 0x03], now: 0)
        _ = drain(&client)
        #expect(throws: ATTClientError.needsPairing(.insufficientEncryption, during: "a frame write")) {
            _ = try feed(&client, [0x01, 0x12, 0x12, 0x00, 0x0F])
        }
        let message = ATTClientError.needsPairing(.insufficientEncryption, during: "a frame write").description(address: "AA:BB:CC:DD:EE:FF")
        #expect(message.hasSuffix("pair the radio first: bluetoothctl pair AA:BB:CC:DD:EE:FF (PIN 123456 or the one on the radio's screen)"))
        #expect(ATTClientError.refused(.writeNotPermitted, during: "a frame write").description.contains("write not permitted (0x03)"))
    }

    @Test func boundedQueue() throws {
        var configuration = ATTClient.Configuration()
        configuration.frameQueueCapacity = 2
        var client = ATTClient(configuration: configuration)
        client.start(now: 0)
        try client.send(frame: [1], now: 0)
        try client.send(frame: [2], now: 0)
        #expect(throws: ATTClientError.queueFull(capacity: 2)) { try client.send(frame: [3], now: 0) }
        #expect(client.unacknowledgedFrames == 2)
    }

    @Test func malformedInputIsAnError() {
        let inputs: [[UInt8]] = [[], [0x1B, 0x14], [0x01, 0x02]]
        for input in inputs {
            var client = ATTClient()
            client.start(now: 0)
            #expect(throws: ATTClientError.self) { _ = try feed(&client, input) }
        }
    }

    @Test func discoveryThatGoesBackwardsIsRefused() throws {
        var client = ATTClient()
        client.start(now: 0)
        _ = drain(&client)
        _ = try feed(&client, [0x03, 0xF7, 0x00])
        _ = drain(&client)
        _ = try feed(&client, [0x07, 0x10, 0x00, 0x30, 0x00])
        _ = drain(&client)
        // A characteristic at 0x11, then (asked from 0x12) the same one again: would loop forever.
        let entry: [UInt8] = [0x09, 0x07, 0x11, 0x00, 0x08, 0x12, 0x00, 0x00, 0x2A]
        _ = try feed(&client, entry)
        #expect(drain(&client) == [[0x08, 0x12, 0x00, 0x30, 0x00, 0x03, 0x28]])
        #expect(throws: ATTClientError.self) { _ = try feed(&client, entry) }
    }

    /// Random PDUs (seeded) never trap the client or the server; errors are typed.
    @Test func randomInputNeverTraps() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        let server = SimulatedGATTServer()
        var client = try readyClient(server)
        var errors = 0
        for round in 0..<20_000 {
            let length = Int(next()) % 40
            var pdu = (0..<length).map { _ in next() }
            if !pdu.isEmpty && round % 2 == 0 { pdu[0] = [0x01, 0x03, 0x05, 0x07, 0x09, 0x11, 0x13, 0x1B, 0x1D][Int(next()) % 9] }
            pdu.withUnsafeBytes { server.receive($0) }
            while server.takeOutgoing() != nil {}
            do {
                _ = try feed(&client, pdu)
            } catch {
                errors += 1
                client = try readyClient(server)
            }
            _ = drain(&client)
        }
        #expect(errors > 0)
    }

    @Test func uuids() {
        #expect(BluetoothUUID.nordicUARTService.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        #expect(BluetoothUUID(short: 0x2902).short == 0x2902)
        #expect(BluetoothUUID.nordicUARTRX.short == nil)
        #expect(BluetoothUUID("zz") == nil)
    }
}
