import MeshCompanion
import MeshOps
import MeshSession
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshHub
import MeshLink
import MeshNode
@testable import MeshSim

@Suite struct HubTests {
    @Test func listenerSyntax() throws {
        let plain = try HubListener(parsing: "127.0.0.1:5000")
        #expect(plain.address.port == 5000 && !plain.readOnly && plain.allowed == .hubDefault)
        #expect(plain.allowed.description == "read,message,config")
        let v6 = try HubListener(parsing: "[::1]:5001,read-only")
        #expect(v6.address.host == "::1" && v6.readOnly && v6.allowed.description == "read")
        let allow = try HubListener(parsing: "0.0.0.0:5002,allow=admin+secret")
        #expect(allow.allowed == .everything)
        // The older command names still open their class.
        let legacy = try HubListener(parsing: "0.0.0.0:5002,allow=reboot")
        #expect(legacy.allowed.description == "read,message,config,admin")
        let roWidened = try HubListener(parsing: "0.0.0.0:5002,read-only,allow=message")
        #expect(roWidened.allowed.description == "read,message")
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,allow=everything") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,writable") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "localhost") }
    }

    static func text(_ type: TextType) throws -> [UInt8] {
        try CommandFrame.sendTextMessage(to: KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6]), text: "ver", timestamp: 1_700_000_000, type: type).bytes
    }

    @Test func defaultListenerRefusesAdminAndSecretCommands() throws {
        let rw = try HubListener(parsing: "127.0.0.1:5000")
        // Key-equivalent, administrative and raw commands: refused on a default listener.
        for code: CommandCode in [.factoryReset, .exportPrivateKey, .importPrivateKey, .reboot, .signStart, .signData, .signFinish,
                                  .setDevicePin, .sendRawPacket, .sendRawData, .sendLogin, .logout, .sendBinaryRequest] {
            #expect(rw.refusal([code.rawValue, 0, 0, 0]) != nil, "\(code)")
        }
        // RUN_CLI_COMMAND (protocol 14) and codes this build does not know: admin.
        #expect(rw.refusal([0x42] + Array("get name".utf8)) != nil)
        #expect(rw.refusal([0x7F]) != nil)
        // A text message of the CLI type is a remote command.
        #expect(rw.refusal(try Self.text(.cliData)) != nil)
        #expect(rw.refusal(try Self.text(.plain)) == nil)
        for code: CommandCode in [.setAdvertName, .setOtherParams, .setRadioParams, .sendChannelTextMessage, .syncNextMessage, .getContacts] {
            #expect(rw.refusal([code.rawValue, 0, 0, 0]) == nil, "\(code)")
        }
        let opened = try HubListener(parsing: "127.0.0.1:5000,allow=admin")
        #expect(opened.refusal([CommandCode.reboot.rawValue]) == nil)
        #expect(opened.refusal(try Self.text(.cliData)) == nil)
        #expect(opened.refusal([CommandCode.exportPrivateKey.rawValue]) != nil)
        let ro = try HubListener(parsing: "127.0.0.1:5000,read-only")
        #expect(ro.refusal([CommandCode.setAdvertName.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.sendChannelTextMessage.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.syncNextMessage.rawValue]) != nil)
        #expect(ro.refusal([CommandCode.getContacts.rawValue]) == nil)
        #expect(ro.refusal([CommandCode.getBatteryAndStorage.rawValue]) == nil)
    }

    @Test func messagesInTheVersionTheClientAskedFor() throws {
        let peer = KeyPrefix(sixOf: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6])
        let direct = StoredMessage(kind: .direct, direction: .incoming, peer: peer, senderTimestamp: 1_700_000_000,
                                   receivedAt: 1_700_000_005, pathLength: 2, snr: -7, text: Array("hello".utf8))
        let channel = StoredMessage(kind: .channel, direction: .incoming, channelIndex: 3, senderTimestamp: 1_700_000_002,
                                    receivedAt: 1_700_000_005, pathLength: 1, snr: 4, text: Array("bob: hi all".utf8))
        // Legacy frames are MeshCompanion's own legacy encodings.
        let legacyDirect = try ResponseFrame.contactMessage(v3: false, senderPrefix: peer, pathLength: PathLength(rawValue: 2),
                                                            senderTimestamp: 1_700_000_000, text: Array("hello".utf8)).bytes
        let legacyChannel = ResponseFrame.channelMessage(v3: false, channelIndex: 3, pathLength: PathLength(rawValue: 1),
                                                         timestamp: 1_700_000_002, text: Array("bob: hi all".utf8)).bytes
        #expect(Daemon.hubFrame(for: direct, v3: false) == legacyDirect)
        #expect(Daemon.hubFrame(for: channel, v3: false) == legacyChannel)
        #expect(Daemon.hubFrame(for: direct, v3: true) == TunnelQueue.frame(for: direct))
        #expect(Daemon.hubFrame(for: channel, v3: true)?.first == ResponseCode.channelMessage.rawValue)
    }

    @Test func appCursorNames() {
        #expect(HubCursors.name(forApp: "mccli") == "hub-mccli")
        #expect(HubCursors.name(forApp: "Home Assistant") == "hub-home_assistant")
        #expect(HubCursors.name(forApp: "") == "hub-unnamed")
        #expect(HubCursors.name(forApp: String(repeating: "x", count: 200)).utf8.count == 64)
    }

    @Test func listenerAppAndOrigins() throws {
        let app = try HubListener(parsing: "127.0.0.1:5000,app=homeassistant")
        #expect(app.app == "homeassistant" && app.origins.isEmpty)
        let ws = try HubListener(parsing: "127.0.0.1:5001,origin=http://localhost:8080+https://app.example/,origin=http://[::1]:3000", webSocket: true)
        #expect(ws.origins == ["http://localhost:8080", "https://app.example", "http://[::1]:3000"])
        // origin= is for WebSocket listeners; an origin is a scheme and a host, no path.
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,origin=http://localhost") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,origin=localhost", webSocket: true) }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,origin=http://a/b", webSocket: true) }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,app=") }
        #expect(throws: DaemonError.self) { try HubListener(parsing: "127.0.0.1:5000,app=two words") }
    }

    static let batt = HubQueue.Request(frame: [CommandCode.getBatteryAndStorage.rawValue], kind: .radio)
    static let time = HubQueue.Request(frame: [CommandCode.getDeviceTime.rawValue], kind: .radio)
    static let sync = HubQueue.Request(frame: [CommandCode.syncNextMessage.rawValue], kind: .local)

    @Test func aClientsLocalAnswerWaitsBehindItsRadioRequest() {
        // `<\x01\x00\x05<\x01\x00\x0a` in one write: GET_DEVICE_TIME, then SYNC_NEXT_MESSAGE. The
        // firmware answers 0x09 then 0x0A; so must the hub.
        var q = HubQueue()
        q.push(1, Self.time, now: 0)
        q.push(1, Self.sync, now: 0)
        #expect(q.takeLocal(1) == nil)  // the radio request is first
        #expect(q.nextRadio(now: 0)?.request == Self.time)
        #expect(q.takeLocal(1) == nil)  // still at the radio
        q.answered(1)
        #expect(q.takeLocal(1) == Self.sync)
        // Another client's local request does not wait for this one's radio request.
        q.push(1, Self.time, now: 0)
        q.push(2, Self.sync, now: 0)
        #expect(q.nextRadio(now: 0)?.client == 1)
        #expect(q.takeLocal(2) == Self.sync)
    }

    @Test func turnsGoRoundAndARateHoldsBackOnlyTheFlooder() {
        var q = HubQueue(ratePerSecond: 10, burst: 2)
        for _ in 0..<HubQueue.capacity { q.push(1, Self.batt, now: 0) }
        #expect(q.room(1) == 0 && !q.push(1, Self.batt, now: 0))  // bounded: the hub stops reading it
        q.push(2, Self.batt, now: 0)
        q.push(2, Self.batt, now: 0)
        // One hub request at the radio at a time, turns alternating.
        var served: [Int] = []
        for _ in 0..<4 {
            guard let (c, _) = q.nextRadio(now: 0) else { break }
            #expect(q.nextRadio(now: 0) == nil)
            served.append(c)
            q.answered(c)
        }
        #expect(served == [1, 2, 1, 2])
        // Client 1 used its burst: while another client waits it waits for a token (100 ms at 10 a
        // second); client 3 does not.
        q.push(3, Self.batt, now: 0)
        q.push(3, Self.batt, now: 0)
        q.push(3, Self.batt, now: 0)
        #expect(q.nextRadio(now: 0)?.client == 3)
        q.answered(3)
        #expect(q.nextRadio(now: 0)?.client == 3)
        q.answered(3)
        // Both over their share, both waiting: the share holds each back.
        #expect(q.nextRadio(now: 0) == nil)
        #expect(q.nextDeadline(now: 0) == 100)
        #expect(q.nextRadio(now: 99) == nil)
        #expect(q.nextRadio(now: 100)?.client == 1)
        q.answered(1)
        #expect(q.nextRadio(now: 100)?.client == 3)
        q.answered(3)
        // A client gone with its request at the radio frees the turn.
        q.remove(1)
        q.answered(1)
        q.push(4, Self.batt, now: 100)
        #expect(q.nextRadio(now: 100)?.client == 4)
    }

    @Test func appCursorsUnseenFor30DaysOrBeyond64Go() {
        let now = 100 * 86_400
        // 70 apps seen a day apart, one of them connected now though seen long ago.
        let cursors = (0..<70).map { (name: "hub-app\($0)", writtenAt: now - $0 * 86_400 / 2) }
        let gone = HubCursors.expired(cursors, now: now, inUse: ["hub-app69"])
        // Unseen for over 30 days: app61...app68 (app60 is exactly 30 days); app69 is in use.
        #expect(Set(gone) == Set((61...68).map { "hub-app\($0)" }))
        // 80 apps all seen today: the 16 least recently seen go.
        let recent = (0..<80).map { (name: "hub-r\($0)", writtenAt: now - $0) }
        #expect(Set(HubCursors.expired(recent, now: now, inUse: [])) == Set((64..<80).map { "hub-r\($0)" }))
        #expect(HubCursors.expired(Array(recent.prefix(64)), now: now, inUse: []).isEmpty)
    }

    @Test func aClientAloneGetsTheRadioAtFullSpeedAndTheShareWhenOthersWait() {
        var q = HubQueue(ratePerSecond: 10, burst: 2)
        // Alone, client 1 is not held to its share: 20 requests back to back, no time passing.
        for _ in 0..<20 {
            q.push(1, Self.batt, now: 0)
            #expect(q.nextDeadline(now: 0) == 0)
            guard let (c, _) = q.nextRadio(now: 0) else { Issue.record("client 1 held back while alone"); return }
            #expect(c == 1)
            q.answered(c)
        }
        // Client 2 comes: it gets its turns, client 1 (share spent) waits while client 2 waits.
        for _ in 0..<3 { q.push(1, Self.batt, now: 0) }
        q.push(2, Self.batt, now: 0)
        q.push(2, Self.batt, now: 0)
        var served: [Int] = []
        while let (c, _) = q.nextRadio(now: 0) {
            served.append(c)
            q.answered(c)
        }
        // Once client 2 has nothing waiting, client 1 is alone again.
        #expect(served == [2, 2, 1, 1, 1])
        // A flooding client stays bounded, alone or not: its queue, then the hub stops reading it.
        for _ in 0..<HubQueue.capacity { q.push(1, Self.batt, now: 0) }
        #expect(q.room(1) == 0 && !q.push(1, Self.batt, now: 0))
        // ... and another client's request gets the very next turn (a second later: shares refilled).
        #expect(q.nextRadio(now: 1_000)?.client == 1)
        q.push(2, Self.batt, now: 1_000)
        q.answered(1)
        #expect(q.nextRadio(now: 1_000)?.client == 2)
        q.answered(2)
        #expect(q.nextRadio(now: 1_000)?.client == 1)
    }

    @Test func contactsAreLocalWhileTheCopyIsCurrent() {
        let list = HubQueue.Request(frame: [CommandCode.getContacts.rawValue], kind: .contacts)
        var q = HubQueue()
        q.push(1, list, now: 0)
        q.push(1, Self.sync, now: 0)
        #expect(q.takeLocal(1) == nil)  // not current: it waits for the radio
        #expect(q.takeLocal(1, contacts: true) == list)
        #expect(q.takeLocal(1) == Self.sync)
        q.push(2, list, now: 0)
        #expect(q.nextRadio(now: 0)?.request == list)
        q.answered(2)
        // Each local listing costs a token: past its share a client's listings wait for the radio.
        var r = HubQueue(ratePerSecond: 10, burst: 3)
        for _ in 0..<4 { r.push(3, list, now: 0) }
        for _ in 0..<3 { #expect(r.takeLocal(3, contacts: true, now: 0) == list) }
        #expect(r.takeLocal(3, contacts: true, now: 0) == nil)
        #expect(r.takeLocal(3, contacts: true, now: 100) == list)
        r.push(3, list, now: 100)
        #expect(r.takeLocal(3, contacts: true, now: 100) == nil)
        #expect(r.nextRadio(now: 100)?.client == 3)  // alone: the radio at full speed
    }

    /// 151 contacts on a simulated radio (virtual time): the copy learnt from its whole listing
    /// answers GET_CONTACTS, with and without `since`, byte for byte as the radio does.
    @Test func contactsFromTheCopyAreTheRadiosAnswerByteForByte() throws {
        var o = SimWorld.Options()
        o.companion.maxContacts = 200
        let world = try SimWorld(topology: Topology(nodes: [NodeSpec(name: "a", role: .companion)], links: []), options: o)
        let node = world.companions[0]
        var frames: [[UInt8]] = []
        node.onFrame = { frames.append($0.bytes) }
        func key(_ i: Int) -> [UInt8] { [UInt8(i & 0xFF), UInt8(i >> 8)] + [UInt8](repeating: 0x5A, count: 30) }
        for i in 0..<151 {
            var c = Contact(publicKey: PublicKey(key(i))!, type: i % 7 == 0 ? .repeater : .chat, name: "node \(i)",
                            lastAdvertTimestamp: 1_700_000_000 + UInt32(i), latitude: Int32(i * 1000), longitude: -Int32(i * 77),
                            lastModified: 1_767_000_000 + UInt32(i % 40))
            if i % 3 == 0 { try c.setOutPath(PathLength(rawValue: 2), [0x11, 0x22]) }
            #expect(node.addOrUpdate(c))
        }
        func radio(_ cmd: [UInt8]) -> [[UInt8]] {
            frames = []
            node.receive(frame: cmd)
            world.mesh.run(for: 2_000)
            return frames
        }
        func learn(_ copy: inout HubContacts) {
            let cmd = CommandFrame.getContacts().bytes
            copy.sent(cmd)
            for f in radio(cmd) { f.withUnsafeBytes { copy.received($0) } }
        }
        var copy = HubContacts()
        #expect(!copy.answer([CommandCode.getContacts.rawValue]) { _ in })
        learn(&copy)
        #expect(copy.current && copy.records.count == 151)
        for since: UInt32? in [nil, 0, 1_767_000_010, 1_767_000_038, 1_767_000_039, 1_767_000_040] {
            let cmd = CommandFrame.getContacts(since: since).bytes
            var local: [[UInt8]] = []
            #expect(copy.answer(cmd) { local.append($0) })
            let want = radio(cmd)
            #expect(local == want, "since \(String(describing: since))")
            #expect(want.count >= 2 && local.count == want.count)
        }
        // An incremental listing by someone else teaches nothing and forgets nothing.
        let incremental = CommandFrame.getContacts(since: 1_767_000_030).bytes
        copy.sent(incremental)
        for f in radio(incremental) { f.withUnsafeBytes { copy.received($0) } }
        #expect(copy.current && copy.records.count == 151)
        // A command that changes the table, from anyone: the copy is dropped until the next whole listing.
        let remove = [CommandCode.removeContact.rawValue] + key(5)
        copy.sent(remove)
        #expect(!copy.current && copy.records.isEmpty)
        _ = radio(remove)
        learn(&copy)
        #expect(copy.current && copy.records.count == 150)
        // Reading commands and message pushes leave it; an advert (a contact changed) does not.
        copy.sent(CommandFrame.getDeviceTime().bytes)
        [PushCode.messageWaiting.rawValue].withUnsafeBytes { copy.received($0) }
        #expect(copy.current)
        ([PushCode.advert.rawValue] + key(9)).withUnsafeBytes { copy.received($0) }
        #expect(!copy.current)
        // A change while a whole listing goes by: not learnt.
        let cmd = CommandFrame.getContacts().bytes
        copy.sent(cmd)
        let listing = radio(cmd)
        for (i, f) in listing.enumerated() {
            if i == 40 { ([PushCode.pathUpdated.rawValue] + key(9)).withUnsafeBytes { copy.received($0) } }
            f.withUnsafeBytes { copy.received($0) }
        }
        #expect(!copy.current)
        // A listing whose records are fewer than its count (cut short): not learnt.
        copy.sent(cmd)
        for (i, f) in listing.enumerated() where i != 3 { f.withUnsafeBytes { copy.received($0) } }
        #expect(!copy.current)
        learn(&copy)
        #expect(copy.current)
        copy.forget()  // the link went down
        #expect(!copy.current && copy.forgotten == 3)
    }
}
