import Glibc
import MeshAir
import MeshCompanion
import MeshLink
import MeshSession
import Testing
@testable import MeshNode
@testable import MeshSim

/// A simulated companion radio behind the Nordic UART service of a `SimulatedGATTServer`, on one
/// end of an AF_UNIX SOCK_SEQPACKET socketpair (one ATT PDU per message, like an L2CAP socket);
/// a `BLELink` (the ATT client) and a `Session` on the other end. Mesh and session time are the
/// simulator's virtual milliseconds; the only real I/O is the socketpair.
final class BLERadioBench {
    let world: SimWorld
    let node: CompanionNode
    let server: SimulatedGATTServer
    let link: BLELink
    let session: Session
    private(set) var serverFD: Int32
    private(set) var events: [SessionEvent] = []
    private(set) var linkError: LinkError? = nil
    /// What the radio side saw and sent, in order: "W" a frame written to RX, "R" a Write
    /// Response, "N" a notification, "E" an ATT error response, "O" any other PDU.
    private(set) var trace: [Character] = []
    /// Cut the link (close the radio's end) once this many more notifications have gone out.
    var disconnectAfterNotifications: Int? = nil
    /// Cut the link when the next frame write reaches the radio, before it is handled or answered.
    var disconnectOnFrameWrite = false
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)

    var now: UInt64 { world.mesh.now }

    init(world: SimWorld, companion index: Int = 0, options: SimulatedGATTServer.Options = .init(),
         authenticated: Bool = true, att: ATTClient.Configuration = .init(), session config: SessionConfig = BLERadioBench.sessionConfig()) throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Errno.current
        }
        self.world = world
        node = world.companions[index]
        server = SimulatedGATTServer(options: options)
        server.isAuthenticated = authenticated
        serverFD = fds[1]
        session = Session(config: config)
        link = BLELink(adopting: FileDescriptor(rawValue: fds[0]), name: "C0:FF:EE:00:00:01/random", configuration: att)
        // The radio: frames written to RX go to the companion, whose frames go out as notifications
        // (those it produces while handling a write leave before that write's response).
        node.connected = true
        node.onFrame = { [unowned self] frame in self.server.notify(frame: frame.bytes) }
        server.onFrame = { [unowned self] frame in self.node.receive(frame: Array(frame)) }
    }

    deinit {
        buffer.deallocate()
        link.close()
        if serverFD >= 0 { close(serverFD) }
    }

    static func sessionConfig() -> SessionConfig {
        var c = SessionConfig()
        c.drainOnStart = false
        c.commandTimeout = 5_000
        return c
    }

    /// Moves ATT PDUs both ways and frames into the session until nothing moves.
    func shuttle() {
        var moved = true
        while moved {
            moved = false
            while linkError == nil, let frame = session.nextFrame() {
                moved = true
                do { try link.write(frame) } catch { fail(error) }
            }
            if linkError == nil { do { try link.flush() } catch { fail(error) } }
            // The radio's side: read every PDU first, then send what it answered (so pipelined
            // writes would show up as "WW" in the trace).
            while serverFD >= 0 {
                let n = recv(serverFD, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                if n <= 0 { break }
                moved = true
                let pdu = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                if pdu[0] == ATTOpcode.writeRequest.rawValue, n >= 3, UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == SimulatedGATTServer.rxHandle {
                    trace.append("W")
                    if disconnectOnFrameWrite {
                        disconnectRadio()
                        break
                    }
                }
                server.receive(pdu)
            }
            while serverFD >= 0, let pdu = server.takeOutgoing() {
                moved = true
                switch pdu[0] {
                case ATTOpcode.writeResponse.rawValue: trace.append("R")
                case ATTOpcode.handleValueNotification.rawValue: trace.append("N")
                case ATTOpcode.errorResponse.rawValue: trace.append("E")
                default: trace.append("O")
                }
                _ = pdu.withUnsafeBytes { send(serverFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if pdu[0] == ATTOpcode.handleValueNotification.rawValue, let left = disconnectAfterNotifications {
                    disconnectAfterNotifications = left - 1
                    if left - 1 <= 0 { disconnectRadio() }
                }
            }
            // The client's side: one PDU per read; a frame when the PDU carried one.
            while linkError == nil {
                var p = pollfd(fd: link.fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 0) > 0 else { break }
                moved = true
                do {
                    let n = try link.read(into: buffer)
                    if n > 0 { session.receive(frame: UnsafeRawBufferPointer(rebasing: buffer[0..<n]), now: now) }
                } catch {
                    fail(error)
                }
            }
            while let e = session.nextEvent() { events.append(e); moved = true }
        }
    }

    /// The radio goes away (out of range, powered off): its end of the ATT channel closes.
    func disconnectRadio() {
        guard serverFD >= 0 else { return }
        close(serverFD)
        serverFD = -1
    }

    private func fail(_ error: LinkError) {
        guard linkError == nil else { return }
        linkError = error
        session.close()  // as the CLI's Radio and the daemon do
    }

    /// Runs virtual time in 20 ms steps until `done`, or `limit` ms pass. True when `done`.
    @discardableResult
    func run(limit: UInt64 = 60_000, until done: () -> Bool) -> Bool {
        let end = now + limit
        while true {
            shuttle()
            if done() { return true }
            if now >= end { return false }
            world.mesh.run(for: 20)
            session.tick(now: now)
        }
    }

    func handshake() -> Bool {
        session.start(now: now)
        return run(limit: 10_000) { events.contains { if case .ready = $0 { return true }; return false } }
    }

    func reply(_ ticket: Ticket) -> Reply? {
        for case .reply(let t, let r) in events where t == ticket { return r }
        return nil
    }

    func deliveries(_ ticket: Ticket) -> [Delivery] {
        events.compactMap { if case .delivery(ticket, let d) = $0 { return d }; return nil }
    }

    /// Submits a command and runs until its reply.
    func call(_ frame: [UInt8], expecting code: UInt8) throws -> Reply? {
        let t = try session.submit(frame: frame, expecting: code, now: now)
        run(limit: 10_000) { reply(t) != nil }
        return reply(t)
    }
}

@Suite struct BLEEndToEndTests {
    /// Two companions one repeater apart; the first is reached over BLE.
    static func world() throws -> SimWorld { try line(repeaters: 1, seed: 7) }

    @Test func handshakeContactsAndAcknowledgedDirectMessage() throws {
        let w = try Self.world()
        let bench = try BLERadioBench(world: w)
        let bob = FrameApp(w.companions[1])

        #expect(bench.handshake())
        #expect(bench.link.isReady)
        #expect(bench.link.mtu == 247)
        #expect(bench.link.handles?.rx == SimulatedGATTServer.rxHandle)
        guard case .ready(let deviceInfo, let selfInfo)? = bench.events.first else {
            Issue.record("no ready event: \(bench.events)")
            return
        }
        #expect(deviceInfo.first == 0x0D)
        #expect(Array(selfInfo[4..<36]) == w.companions[0].publicKey.bytes)

        // Adverts: ours through the BLE link, bob's directly; then the mesh settles.
        #expect(try bench.call(CommandFrame.sendSelfAdvert(flood: true).bytes, expecting: 0x00) == .ok)
        #expect(bob.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00])
        bench.run(limit: 30_000) { false }
        #expect(bench.linkError == nil)

        // Contacts listing over BLE: bob is there.
        let listing = try bench.session.listContacts(now: bench.now)
        #expect(bench.run(limit: 10_000) { bench.reply(listing) != nil })
        guard case .contacts(let contacts)? = bench.reply(listing) else {
            Issue.record("no contacts listing: \(String(describing: bench.reply(listing)))")
            return
        }
        let bobKey = w.companions[1].publicKey.bytes
        #expect(contacts.records.contains { Array($0[1..<33]) == bobKey })

        // A direct message, acknowledged by bob's radio (SEND_CONFIRMED arrives as a notification).
        let dm = try bench.session.sendText(to: bobKey, text: "hello over BLE", timestamp: w.companions[0].epochNow, now: bench.now)
        #expect(bench.run(limit: 60_000) { bench.deliveries(dm).contains { if case .acked = $0 { return true }; return false } })
        #expect(bench.deliveries(dm).first.map { if case .sent = $0 { return true }; return false } == true)
        #expect(bob.count(0x83) >= 1)
        let message = bob.call(CommandFrame.syncNextMessage())
        #expect(message.map { Array($0.suffix(14)) } == Array("hello over BLE".utf8))

        // One frame per write, never a write before the previous write's response.
        #expect(!String(bench.trace).contains("WW"))
        #expect(bench.link.hasPendingOutput == false)
        #expect(bench.server.truncatedNotifications == 0)
        #expect(bench.linkError == nil)
    }

    @Test func notificationsInterleaveWithWriteResponses() throws {
        let w = try Self.world()
        let bench = try BLERadioBench(world: w)
        let bob = FrameApp(w.companions[1])
        #expect(bench.handshake())
        #expect(try bench.call(CommandFrame.sendSelfAdvert(flood: true).bytes, expecting: 0x00) == .ok)
        #expect(bob.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00])
        bench.run(limit: 30_000) { false }   // bob's advert: a NEW_ADVERT push over BLE
        #expect(bench.events.contains { if case .push(let f) = $0 { return f.code == 0x80 || f.code == 0x8A }; return false })

        // Several commands at once: the client writes them one by one, each after the previous
        // response, while the listing's frames arrive as notifications ahead of its write response.
        let start = bench.trace.count
        let listing = try bench.session.listContacts(now: bench.now)
        let times = try (0..<4).map { _ in try bench.session.submit(frame: CommandFrame.getDeviceTime().bytes, expecting: 0x09, now: bench.now) }
        #expect(bench.run(limit: 10_000) { bench.reply(listing) != nil && times.allSatisfy { bench.reply($0) != nil } })
        let trace = String(bench.trace[start...])
        // GET_CONTACTS: CONTACTS_START goes out before the Write Response (the companion answers
        // while handling the write); the two CONTACTs (bob, the repeater) and END follow from the
        // radio's loop; only then does the session write the next command.
        #expect(trace.hasPrefix("WNRNNNW"))
        #expect(!trace.contains("WW"))
        #expect(trace.filter { $0 == "W" }.count == 5)
        for t in times {
            guard case .frame(let f)? = bench.reply(t) else { Issue.record("no time reply"); continue }
            #expect(f.first == 0x09)
        }
        guard case .contacts(let contacts)? = bench.reply(listing) else { Issue.record("no listing"); return }
        #expect(contacts.records.count == 2)
        #expect(contacts.records.contains { Array($0[1..<33]) == w.companions[1].publicKey.bytes })

        // Unsolicited pushes: bob's DM arrives, MSG_WAITING is notified, the session drains it.
        _ = bob.call(try CommandFrame.sendTextMessage(to: w.companions[0].publicKey, text: "ping", timestamp: w.companions[1].epochNow))
        #expect(bench.run(limit: 30_000) { bench.events.contains { if case .message(let m) = $0 { return m.textString == "ping" }; return false } })
        #expect(bench.events.contains { if case .push(let f) = $0 { return f.code == 0x83 }; return false })
        #expect(!String(bench.trace).contains("WW"))
        #expect(bench.linkError == nil)
    }

    @Test func disconnectInTheMiddleOfAListing() throws {
        let w = try Self.world()
        let bench = try BLERadioBench(world: w)
        let bob = FrameApp(w.companions[1])
        #expect(bench.handshake())
        #expect(bob.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00])
        bench.run(limit: 30_000) { false }

        // The radio goes away after CONTACTS_START and one CONTACT: the listing never ends.
        bench.disconnectAfterNotifications = 2
        let listing = try bench.session.listContacts(now: bench.now)
        #expect(bench.run(limit: 10_000) { bench.linkError != nil })
        guard case .lost(let name, let reason)? = bench.linkError else {
            Issue.record("expected a lost link, got \(String(describing: bench.linkError))")
            return
        }
        #expect(name == "C0:FF:EE:00:00:01/random")
        #expect(reason == "the radio disconnected")
        #expect(bench.reply(listing) == .cancelled)
        // Nothing more can be sent on this link.
        #expect(throws: LinkError.self) { try bench.link.write([0x05]) }
    }

    @Test func disconnectWhileAFrameWriteIsUnacknowledged() throws {
        let w = try Self.world()
        let bench = try BLERadioBench(world: w)
        #expect(bench.handshake())
        bench.disconnectOnFrameWrite = true
        let t = try bench.session.submit(frame: CommandFrame.getDeviceTime().bytes, expecting: 0x09, now: bench.now)
        #expect(bench.run(limit: 10_000) { bench.linkError != nil })
        #expect(bench.linkError == .lost("C0:FF:EE:00:00:01/random", reason: "the radio disconnected, with 1 frame(s) not acknowledged"))
        #expect(bench.linkError?.description == "lost the link to C0:FF:EE:00:00:01/random: the radio disconnected, with 1 frame(s) not acknowledged.")
        #expect(bench.reply(t) == .cancelled)
    }

    @Test func truncatedPDUFailsTheLink() throws {
        let w = try Self.world()
        let bench = try BLERadioBench(world: w)
        #expect(bench.handshake())
        // Half a notification: opcode and one byte of the handle.
        _ = [ATTOpcode.handleValueNotification.rawValue, 0x14].withUnsafeBytes { send(bench.serverFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        bench.run(limit: 1_000) { bench.linkError != nil }
        #expect(bench.linkError?.description.contains("malformed ATT PDU (short notification)") == true)
    }

    @Test func unpairedRadioSaysPairFirst() throws {
        var options = SimulatedGATTServer.Options()
        options.requireAuthentication = true
        let w = try Self.world()
        let bench = try BLERadioBench(world: w, options: options, authenticated: false)
        bench.session.start(now: bench.now)
        #expect(bench.run(limit: 5_000) { bench.linkError != nil })
        let message = bench.linkError?.description ?? ""
        #expect(message.contains("insufficient authentication"))
        #expect(message.contains("pair the radio first: bluetoothctl pair C0:FF:EE:00:00:01"))
        #expect(message.contains("PIN 123456"))
        #expect(!bench.events.contains { if case .ready = $0 { return true }; return false })
        #expect(!String(bench.trace).contains("W"))  // no frame reached the radio
    }

    @Test func smallMTUIsRefusedWithWhatToDo() throws {
        var options = SimulatedGATTServer.Options()
        options.mtu = 100
        let bench = try BLERadioBench(world: try Self.world(), options: options)
        bench.session.start(now: bench.now)
        #expect(bench.run(limit: 5_000) { bench.linkError != nil })
        let message = bench.linkError?.description ?? ""
        #expect(message.contains("ATT MTU is 100 bytes"))
        #expect(message.contains("--serial"))
        #expect(!String(bench.trace).contains("W"))
    }

    /// ESP32 firmware offers MTU 176: refused by default (with the option to accept it named);
    /// accepted with a minimum of 176, where only frames over 173 bytes are cut short.
    @Test func esp32MTU() throws {
        var options = SimulatedGATTServer.Options()
        options.mtu = 176
        let refused = try BLERadioBench(world: try Self.world(), options: options)
        refused.session.start(now: refused.now)
        #expect(refused.run(limit: 5_000) { refused.linkError != nil })
        #expect(refused.linkError?.description.contains("--ble-min-mtu 176") == true)

        var att = ATTClient.Configuration()
        att.minimumMTU = 176
        let w = try Self.world()
        let bench = try BLERadioBench(world: w, options: options, att: att)
        let bob = FrameApp(w.companions[1])
        #expect(bench.handshake())
        #expect(bench.link.mtu == 176)
        #expect(try bench.call(CommandFrame.sendSelfAdvert(flood: true).bytes, expecting: 0x00) == .ok)
        #expect(bob.call(CommandFrame.sendSelfAdvert(flood: true)) == [0x00])
        bench.run(limit: 30_000) { false }
        let bobKey = w.companions[1].publicKey.bytes
        let dm = try bench.session.sendText(to: bobKey, text: String(repeating: "x", count: 150), timestamp: w.companions[0].epochNow, now: bench.now)
        #expect(bench.run(limit: 60_000) { bench.deliveries(dm).contains { if case .acked = $0 { return true }; return false } })
        #expect(bench.server.truncatedNotifications == 0)
        #expect(bench.linkError == nil)
    }
}
