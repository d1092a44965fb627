import Glibc
import Testing
@testable import MeshLink

/// The radio side of a SOCK_SEQPACKET socketpair: a `SimulatedGATTServer` driven by the test's poll loop.
final class GATTPeer {
    let fd: Int32
    let server: SimulatedGATTServer
    /// Hold each Write Response to RX for this many ms (0: answer at once) to catch pipelined writes.
    var holdWriteResponses: UInt64 = 0
    /// Close the socket when a frame write arrives, before answering it.
    var disconnectOnFrame = false
    private(set) var pipelinedWrites = 0
    private(set) var framesReceived: [[UInt8]] = []
    private var awaitingResponse = false
    private weak var loop: PollLoop?

    init(fd: Int32, server: SimulatedGATTServer) {
        self.fd = fd
        self.server = server
    }

    func attach(to loop: PollLoop) {
        self.loop = loop
        loop.register(fd: fd, events: .readable) { [unowned self] events in
            var buffer = [UInt8](repeating: 0, count: 1024)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 {
                loop.unregister(fd: fd)
                return
            }
            let pdu = Array(buffer[0..<n])
            let isFrameWrite = pdu[0] == ATTOpcode.writeRequest.rawValue && pdu.count >= 3
                && (UInt16(pdu[1]) | UInt16(pdu[2]) << 8) == SimulatedGATTServer.rxHandle
            if isFrameWrite {
                if awaitingResponse { pipelinedWrites += 1 }
                framesReceived.append(Array(pdu[3...]))
                if disconnectOnFrame {
                    loop.unregister(fd: fd)
                    Glibc.close(fd)
                    return
                }
            }
            pdu.withUnsafeBytes { server.receive($0) }
            flush(frameWrite: isFrameWrite)
        }
    }

    func flush(frameWrite: Bool = false) {
        while let next = server.takeOutgoing() {
            if frameWrite && next == [ATTOpcode.writeResponse.rawValue] && holdWriteResponses > 0 {
                awaitingResponse = true
                loop?.addTimer(after: holdWriteResponses) { [unowned self] in
                    awaitingResponse = false
                    send(next)
                }
                continue
            }
            send(next)
        }
    }

    func send(_ pdu: [UInt8]) {
        _ = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

/// A socketpair with a BLELink on one end and a GATT peer on the other.
struct BLEFixture {
    let link: BLELink
    let peer: GATTPeer
    let loop = PollLoop()
    var received: [[UInt8]] = []

    init(options: SimulatedGATTServer.Options = .init(), authenticated: Bool = false,
         configuration: ATTClient.Configuration = .init(), handler: ((SimulatedGATTServer, [UInt8]) -> Void)? = nil) throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Errno.current
        }
        let server = SimulatedGATTServer(options: options)
        server.isAuthenticated = authenticated
        if let handler {
            server.onFrame = { [unowned server] frame in handler(server, Array(frame)) }
        }
        peer = GATTPeer(fd: fds[1], server: server)
        link = BLELink(adopting: FileDescriptor(rawValue: fds[0]), name: "C0:FF:EE:00:00:01/random", configuration: configuration)
        peer.attach(to: loop)
    }

    /// Runs the loop until `until` is true, the link fails, or 3 s pass. Returns the link error, if any.
    mutating func run(until done: @escaping (_ received: [[UInt8]]) -> Bool) -> LinkError? {
        var failure: LinkError? = nil
        var frames = received
        let loop = self.loop
        loop.attach(link, onReceive: { chunk in
            frames.append(Array(chunk))
            if done(frames) { loop.stop() }
        }, onError: { error in
            failure = error
            loop.stop()
        })
        // Readiness and acknowledgements produce no chunk: check on a short timer too.
        func tick() {
            if done(frames) { loop.stop() } else { loop.addTimer(after: 2, tick) }
        }
        loop.addTimer(after: 0, tick)
        loop.run(until: monotonicMilliseconds() + 3000)
        loop.detach(link)
        received = frames
        return failure
    }
}

@Suite struct BLELinkTests {
    /// A tiny stand-in radio: answers DEVICE_QUERY with a DEVICE_INFO-like frame, preceded by a push.
    static let radio: (SimulatedGATTServer, [UInt8]) -> Void = { server, frame in
        switch frame.first {
        case 0x16:
            server.notify(frame: [0x83])                                   // push: MSG_WAITING
            server.notify(frame: [0x0D, 13] + [UInt8](repeating: 0xAB, count: 80))
        case 0x02:
            server.notify(frame: [0x06] + Array(frame[1...]))              // echo as a 0x06 frame
        default:
            server.notify(frame: [0x01, 0x01])                             // ERR
        }
    }

    @Test func discoveryAndFrames() throws {
        var fixture = try BLEFixture(authenticated: true, handler: Self.radio)
        let link = fixture.link
        #expect(fixture.run { _ in link.isReady } == nil)
        #expect(link.mtu == 247)
        #expect(link.handles == NordicUARTHandles(serviceStart: 0x10, serviceEnd: 0x15, rx: 0x12, tx: 0x14, txConfiguration: 0x15))
        #expect(fixture.peer.server.notificationsEnabled)
        #expect(link.framing == .datagram)
        try link.write([0x16, 0x03])
        #expect(fixture.run { $0.count >= 2 } == nil)
        #expect(fixture.received.count == 2)
        #expect(fixture.received[0] == [0x83])
        #expect(fixture.received[1].count == 82)
        #expect(fixture.peer.framesReceived == [[0x16, 0x03]])
    }

    @Test func framesQueuedBeforeReadyAndNeverPipelined() throws {
        var fixture = try BLEFixture(authenticated: true, handler: Self.radio)
        fixture.peer.holdWriteResponses = 5
        let link = fixture.link
        // Written before discovery finished: they wait in the client's queue.
        let frames: [[UInt8]] = (0..<6).map { [0x02, 0x00, 0x00, UInt8($0)] + [UInt8](repeating: 0x41, count: 172) }
        for frame in frames { try link.write(frame) }
        #expect(fixture.run { $0.count >= frames.count } == nil)
        #expect(fixture.peer.framesReceived == frames)       // whole frames, in order, one per write
        #expect(fixture.peer.pipelinedWrites == 0)             // next write only after the Write Response
        #expect(fixture.received.map { $0[3] } == [0, 1, 2, 3, 4, 5])
        #expect(fixture.received.allSatisfy { $0.count == 176 })  // 176-byte notifications intact
    }

    @Test func disconnectMidFrame() throws {
        var fixture = try BLEFixture(authenticated: true, handler: Self.radio)
        fixture.peer.disconnectOnFrame = true
        let link = fixture.link
        #expect(fixture.run { _ in link.isReady } == nil)
        try link.write([0x16, 0x03])
        let failure = fixture.run { _ in false }
        guard case .lost(_, let reason) = failure else {
            Issue.record("expected .lost, got \(String(describing: failure))")
            return
        }
        #expect(reason.contains("1 frame(s) not acknowledged"))
    }

    @Test func insufficientAuthenticationSaysPairFirst() throws {
        var options = SimulatedGATTServer.Options()
        options.requireAuthentication = true
        var fixture = try BLEFixture(options: options, authenticated: false, handler: Self.radio)
        let link = fixture.link
        let failure = fixture.run { _ in link.isReady }
        guard case .bluetooth(_, let reason) = failure else {
            Issue.record("expected .bluetooth, got \(String(describing: failure))")
            return
        }
        #expect(reason.contains("pair the radio first: bluetoothctl pair C0:FF:EE:00:00:01"))
        #expect(reason.contains("123456"))
        #expect(!link.isReady)
    }

    @Test(arguments: [UInt16(176), 100, 23])
    func smallMTUIsRefused(serverMTU: UInt16) throws {
        var options = SimulatedGATTServer.Options()
        options.mtu = serverMTU
        var fixture = try BLEFixture(options: options, authenticated: true, handler: Self.radio)
        let link = fixture.link
        let failure = fixture.run { _ in link.isReady }
        guard case .bluetooth(_, let reason) = failure else {
            Issue.record("expected .bluetooth, got \(String(describing: failure))")
            return
        }
        #expect(reason.contains("ATT MTU is \(serverMTU) bytes"))
        #expect(reason.contains("at least 179"))
    }

    @Test func smallMTUAcceptedWhenConfigured() throws {
        var options = SimulatedGATTServer.Options()
        options.mtu = 176  // what ESP32 firmware uses
        var configuration = ATTClient.Configuration()
        configuration.minimumMTU = 176
        var fixture = try BLEFixture(options: options, authenticated: true, configuration: configuration, handler: Self.radio)
        let link = fixture.link
        #expect(fixture.run { _ in link.isReady } == nil)
        #expect(link.mtu == 176)
        #expect(throws: LinkError.self) { try link.write([UInt8](repeating: 1, count: 174)) }
    }

    @Test func silentRadioTimesOutThroughThePollLoop() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        var configuration = ATTClient.Configuration()
        configuration.transactionTimeoutMilliseconds = 50
        let link = BLELink(adopting: FileDescriptor(rawValue: fds[0]), name: "C0:FF:EE:00:00:02", configuration: configuration)
        defer { link.close() }
        let loop = PollLoop()
        var failure: LinkError? = nil
        loop.attach(link, onReceive: { _ in }, onError: { failure = $0; loop.stop() })
        let start = monotonicMilliseconds()
        #expect(loop.run(until: start + 3000) == .stopped)
        #expect(monotonicMilliseconds() - start < 1000)
        #expect(failure?.description.contains("did not answer the MTU exchange in time") == true)
    }

    @Test func addressParsing() throws {
        let address = try BLEAddress(parsing: "c0:ff:ee:00:11:22/random")
        #expect(address.bytes == [0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22])
        #expect(address.type == .randomAddress)
        #expect(address.description == "C0:FF:EE:00:11:22/random")
        #expect(try BLEAddress(parsing: "00:11:22:33:44:55").type == .publicAddress)
        withUnsafeBytes(of: address.bdaddr) { #expect(Array($0) == [0x22, 0x11, 0x00, 0xEE, 0xFF, 0xC0]) }
        for bad in ["", "00:11:22:33:44", "00:11:22:33:44:5G", "00:11:22:33:44:55/other", "001122334455"] {
            #expect(throws: LinkError.self) { _ = try BLEAddress(parsing: bad) }
        }
    }

    /// On a kernel without Bluetooth (or without an adapter) connecting fails with one sentence.
    @Test func noBluetoothIsAClearError() throws {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)  // BTPROTO_L2CAP
        if probe >= 0 { Glibc.close(probe) }
        do {
            _ = try BLELink(connectingTo: BLEAddress(parsing: "00:11:22:33:44:55"), timeoutMilliseconds: 500)
            Issue.record("connected to a Bluetooth device that should not exist")
        } catch {
            if probe < 0 {
                guard case .unsupported(let what, let reason) = error else {
                    Issue.record("expected .unsupported, got \(error)")
                    return
                }
                #expect(what == "Bluetooth")
                #expect(reason.contains("EAFNOSUPPORT"))
                #expect(error.description.hasSuffix("instead."))
            }
        }
    }
}

/// The BLE link made on the caller's loop (the daemon's): the GATT setup advances only when poll
/// reports the socket, and a radio that never answers ends at the setup's deadline (virtual time).
@Suite struct BLEConnectorTests {
    static func pair() throws -> (FileDescriptor, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Errno.current
        }
        return (FileDescriptor(rawValue: fds[0]), fds[1])
    }

    @Test func theSetupRunsOnTheCallersLoop() throws {
        let (mine, theirs) = try Self.pair()
        let peer = GATTPeer(fd: theirs, server: SimulatedGATTServer(options: .init()))
        peer.server.isAuthenticated = true
        let loop = PollLoop()
        peer.attach(to: loop)
        let address = try BLEAddress(parsing: "C0:FF:EE:00:00:01/random")
        let c = BLEConnector(settingUp: mine, address: address, timeoutMilliseconds: 5_000, now: monotonicMilliseconds())
        let end = monotonicMilliseconds() + 3_000
        while case .connecting = c.state, monotonicMilliseconds() < end {
            guard let fd = c.fd else { break }
            loop.register(fd: fd, events: PollEvents(rawValue: c.pollEvents)) { events in
                c.ready(revents: events.rawValue, now: monotonicMilliseconds())
            }
            _ = loop.turn(until: monotonicMilliseconds() + 10)
            loop.unregister(fd: fd)
        }
        guard case .connected(let link) = c.state else { Issue.record("not connected: \(c.state)"); return }
        #expect(link.isReady && link.mtu == 247)
        link.close()
        Glibc.close(theirs)
    }

    @Test func aSilentRadioEndsAtTheSetupsDeadline() throws {
        let (mine, theirs) = try Self.pair()
        defer { Glibc.close(theirs) }
        let start = monotonicMilliseconds()
        let c = BLEConnector(settingUp: mine, address: try BLEAddress(parsing: "C0:FF:EE:00:00:02"), timeoutMilliseconds: 10_000, now: start)
        guard case .connecting = c.state else { Issue.record("\(c.state)"); return }
        c.tick(now: start + 9_999)
        if case .failed(let e) = c.state, case .timeout = e { Issue.record("gave up early: \(e)") }
        c.tick(now: start + 10_000)
        guard case .failed(let e) = c.state else { Issue.record("not failed: \(c.state)"); return }
        #expect(e.description.contains("GATT setup") || e.description.contains("did not answer") || e.description.contains("ATT"), "\(e)")
        #expect(c.fd == nil)
    }
}
