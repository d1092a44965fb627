import MeshCompanion
import Testing
@testable import MeshSession

// Hand-made frames, byte-exact, driven in virtual time.

func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
/// The parts one after the other (a long `+` chain of literals is too slow for Swift 6.0's type checker).
func joined(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }

let keyA: [UInt8] = (0..<32).map { UInt8($0 + 0xA0 & 0xFF) }
let keyB: [UInt8] = (0..<32).map { UInt8($0 + 0x10) }

func deviceInfoFrame() -> [UInt8] {
    var f: [UInt8] = [0x0D, 13, 50, 40] + le32(0)
    f += Array("14 Aug 2026".utf8) + [0]
    var model = Array("Test Board".utf8); model += [UInt8](repeating: 0, count: 40 - model.count)
    var ver = Array("v1.17.1".utf8); ver += [UInt8](repeating: 0, count: 20 - ver.count)
    f += model + ver + [0, 0]
    return f
}

func selfInfoFrame(name: String = "node") -> [UInt8] {
    var f: [UInt8] = [0x05, 1, 20, 22] + keyA + le32(0) + le32(0) + [0, 0, 0, 0]
    f += le32(869618) + le32(62500) + [8, 5] + Array(name.utf8)
    return f
}

func contactFrame(key: [UInt8], name: String, lastmod: UInt32, code: UInt8 = 0x03) -> [UInt8] {
    var f: [UInt8] = [code] + key + [1, 0, 0xFF] + [UInt8](repeating: 0, count: 64)
    var n = Array(name.utf8); n += [UInt8](repeating: 0, count: 32 - n.count)
    f += n + le32(1_700_000_000) + le32(0) + le32(0) + le32(lastmod)
    return f
}

func sentFrame(flood: Bool, tag: UInt32, est: UInt32) -> [UInt8] { [0x06, flood ? 1 : 0] + le32(tag) + le32(est) }

/// A session plus what it has said so far.
final class Harness {
    let s: Session
    var now: UInt64 = 1_000
    var sent: [[UInt8]] = []
    var events: [SessionEvent] = []

    init(_ config: SessionConfig = SessionConfig()) { s = Session(config: config) }

    func collect() {
        while let f = s.nextFrame() { sent.append(f) }
        while let e = s.nextEvent() { events.append(e) }
    }
    func feed(_ f: [UInt8]) { s.receive(frame: f, now: now); collect() }
    func advance(to t: UInt64) { now = t; s.tick(now: now); collect() }
    func takeSent() -> [[UInt8]] { defer { sent = [] }; collect(); return sent }
    func takeEvents() -> [SessionEvent] { collect(); defer { events = [] }; return events }

    /// Runs the handshake without clock sync or drain.
    static func ready(_ configure: (inout SessionConfig) -> Void = { _ in }) -> Harness {
        var c = SessionConfig()
        c.drainOnStart = false
        configure(&c)
        let h = Harness(c)
        h.s.start(now: h.now)
        h.collect()
        h.feed(deviceInfoFrame())
        h.feed(selfInfoFrame())
        _ = h.takeSent(); _ = h.takeEvents()
        return h
    }
}

@Suite struct HandshakeTests {
    @Test func handshakeSendsQueryThenAppStartThenClockThenDrain() {
        var c = SessionConfig()
        c.clockEpoch = 1_763_000_000
        let h = Harness(c)
        h.s.start(now: h.now)
        #expect(h.takeSent() == [[0x16, 0x03]])
        h.feed(deviceInfoFrame())
        #expect(h.takeSent() == [[0x01, 0x03, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20] + Array("pocketmesh".utf8)])
        h.feed(selfInfoFrame())
        #expect(h.takeEvents() == [.ready(deviceInfo: deviceInfoFrame(), selfInfo: selfInfoFrame())])
        #expect(h.s.state == .ready)
        #expect(h.takeSent() == [[0x06] + le32(1_763_000_000)])
        h.feed([0x01, 0x06])  // radio clock is ahead
        #expect(h.takeEvents() == [.clock(.radioAhead)])
        #expect(h.takeSent() == [[0x0A]])
        h.feed([0x0A])
        #expect(h.takeSent().isEmpty)
        #expect(!h.s.isBusy)
        #expect(h.s.nextDeadline == nil)
    }

    @Test func commandsSubmittedBeforeStartWaitForHandshake() throws {
        var c = SessionConfig(); c.drainOnStart = false
        let h = Harness(c)
        let t = try h.s.submit(frame: [0x05], expecting: 0x09, now: h.now)
        h.s.start(now: h.now)
        #expect(h.takeSent() == [[0x16, 0x03]])
        h.feed(deviceInfoFrame())
        h.feed(selfInfoFrame())
        #expect(h.takeSent() == [[0x01, 0x03, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20] + Array("pocketmesh".utf8), [0x05]])
        h.feed([0x09] + le32(1_763_000_123))
        #expect(h.takeEvents().last == .reply(t, .frame([0x09] + le32(1_763_000_123))))
    }

    @Test func handshakeTimeoutFails() {
        let h = Harness()
        h.s.start(now: h.now)
        h.advance(to: h.now + 5_000)
        #expect(h.takeEvents() == [.handshakeFailed(.timeout)])
        #expect(h.s.state == .failed)
        #expect(throws: Session.SubmitError.notUsable) { try h.s.submit(frame: [0x05], expecting: 0x09, now: h.now) }
    }

    @Test func handshakeErrorFails() {
        let h = Harness()
        h.s.start(now: h.now)
        h.feed([0x01, 0x01])
        #expect(h.takeEvents() == [.handshakeFailed(.error(1))])
    }
}

@Suite struct CommandTests {
    @Test func pushesInterleaveInsideContactsListing() throws {
        let h = Harness.ready()
        let t = try h.s.listContacts(now: h.now)
        #expect(h.takeSent() == [[0x04]])
        h.feed([0x02] + le32(5))
        h.feed([0x80] + keyB)                     // advert push between frames
        h.feed(contactFrame(key: keyA, name: "alice", lastmod: 300))
        h.feed([0x88, 0x28, 0xC4, 0x11, 0x00])    // LOG_RX_DATA: dropped unless forwarded
        h.feed([0x83])                            // MSG_WAITING: drain queued behind the listing
        h.feed(contactFrame(key: keyB, name: "bob", lastmod: 700))
        #expect(h.takeSent().isEmpty)
        h.feed([0x04] + le32(0))                  // END may say 0; we keep our own max
        let ev = h.takeEvents()
        #expect(ev.contains(.push(Push(frame: [0x80] + keyB))))
        #expect(ev.contains(.push(Push(frame: [0x83]))))
        #expect(!ev.contains { if case .push(let f) = $0 { return f.code == 0x88 }; return false })
        let listing = ContactListing(records: [contactFrame(key: keyA, name: "alice", lastmod: 300),
                                               contactFrame(key: keyB, name: "bob", lastmod: 700)], total: 5, lastmod: 700)
        #expect(ev.last == .reply(t, .contacts(listing)))
        #expect(h.s.contactsLastmod == 700)
        #expect(h.takeSent() == [[0x0A]])
        _ = try h.s.listContacts(since: h.s.contactsLastmod, now: h.now)
        h.feed([0x0A])
        #expect(h.takeSent() == [[0x04] + le32(700)])
    }

    @Test func oneCommandInFlightAndFIFO() throws {
        let h = Harness.ready()
        let t1 = try h.s.submit(frame: [0x05], expecting: 0x09, now: h.now)
        let t2 = try h.s.submit(frame: [0x14], expecting: 0x0C, now: h.now)
        #expect(h.takeSent() == [[0x05]])
        h.feed([0x85, 0, 1, 2, 3, 4, 5, 6])      // unrelated push does not complete anything
        #expect(h.takeSent().isEmpty)
        h.feed([0x09] + le32(42))
        #expect(h.takeSent() == [[0x14]])
        h.feed([0x0C, 0x10, 0x0E] + le32(1) + le32(2))
        let ev = h.takeEvents()
        #expect(ev.contains(.reply(t1, .frame([0x09] + le32(42)))))
        #expect(ev.contains(.reply(t2, .frame([0x0C, 0x10, 0x0E] + le32(1) + le32(2)))))
    }

    @Test func timeoutThenNextCommandAndLateReplyIsUnexpected() throws {
        let h = Harness.ready()
        let t1 = try h.s.submit(frame: [0x05], expecting: 0x09, timeout: 2_000, now: h.now)
        let t2 = try h.s.submit(frame: [0x07, 0x01], expecting: 0x00, now: h.now)
        #expect(h.takeSent() == [[0x05]])
        #expect(h.s.nextDeadline == h.now + 2_000)
        h.advance(to: h.now + 1_999)
        #expect(h.takeEvents().isEmpty)
        h.advance(to: h.now + 1)
        #expect(h.takeEvents() == [.reply(t1, .timeout)])
        #expect(h.takeSent() == [[0x07, 0x01]])
        h.feed([0x09] + le32(42))                 // late: not what ADVERT expects
        #expect(h.takeEvents() == [.unexpected([0x09] + le32(42))])
        h.feed([0x00])
        #expect(h.takeEvents() == [.reply(t2, .ok)])
    }

    @Test func errorAndDisabledComplete() throws {
        let h = Harness.ready()
        let t1 = try h.s.submit(frame: [0x17], expecting: 0x0E, now: h.now)
        h.feed([0x0F])
        let t2 = try h.s.submit(frame: [0x0F] + keyB, expecting: 0x00, now: h.now)
        h.feed([0x01, 0x02])
        #expect(h.takeEvents() == [.reply(t1, .disabled), .reply(t2, .error(2))])
    }

    @Test func selfTelemetryAnswersWithPushCode() throws {
        let h = Harness.ready()
        let t = try h.s.submit(frame: [0x27, 0, 0, 0], expecting: .codes(CodeSet(0x8B)), now: h.now)
        let f: [UInt8] = [0x8B, 0] + Array(keyA[0..<6]) + [0x01, 0x74, 0x01, 0x9A]
        h.feed(f)
        #expect(h.takeEvents() == [.reply(t, .frame(f))])
    }

    @Test func noReplyCommandCompletesWhenSent() throws {
        let h = Harness.ready()
        let t = try h.s.submit(frame: [0x13] + Array("reboot".utf8), expecting: .noReply, now: h.now)
        #expect(h.takeSent() == [[0x13] + Array("reboot".utf8)])
        #expect(h.takeEvents() == [.reply(t, .sent)])
    }

    @Test func channelTextGetsOK() throws {
        let h = Harness.ready()
        let t = try h.s.sendChannelText(index: 0, text: "hi", timestamp: 1_700_000_000, now: h.now)
        #expect(h.takeSent() == [[0x03, 0x00, 0x00] + le32(1_700_000_000) + Array("hi".utf8)])
        h.feed([0x00])
        #expect(h.takeEvents() == [.reply(t, .ok)])
        #expect(throws: Session.SubmitError.textTooLong(limit: 160)) {
            try h.s.sendChannelText(index: 0, text: String(repeating: "A", count: 161), timestamp: 0, now: h.now)
        }
    }

    @Test func closeCancelsEverything() throws {
        let h = Harness.ready()
        let t1 = try h.s.submit(frame: [0x05], expecting: 0x09, now: h.now)
        let t2 = try h.s.submit(frame: [0x14], expecting: 0x0C, now: h.now)
        h.s.close()
        #expect(h.takeEvents() == [.reply(t1, .cancelled), .reply(t2, .cancelled)])
    }
}

@Suite struct DrainTests {
    @Test func drainsLegacyAndV3Frames() {
        let h = Harness.ready()
        h.feed([0x83])
        #expect(h.takeSent() == [[0x0A]])
        let legacyDM: [UInt8] = [0x07] + Array(keyB[0..<6]) + [0x02, 0x00] + le32(1_700_000_001) + Array("old".utf8)
        h.feed(legacyDM)
        #expect(h.takeSent() == [[0x0A]])
        let legacyChan: [UInt8] = [0x08, 0x00, 0xFF, 0x00] + le32(1_700_000_002) + Array("bob: yo".utf8)
        h.feed(legacyChan)
        let v3DM: [UInt8] = [0x10, 0x28, 0, 0] + Array(keyB[0..<6]) + [0xFF, 0x00] + le32(1_700_000_003) + Array("new".utf8)
        h.feed(v3DM)
        let v3Chan: [UInt8] = [0x11, 0xF4, 0, 0, 0x03, 0x42, 0x00] + le32(1_700_000_004) + Array("amy: hey".utf8)
        h.feed(v3Chan)
        let data: [UInt8] = [0x1B, 0x10, 0, 0, 0x01, 0xFF, 0x00, 0xFF, 0x03, 0xDE, 0xAD, 0xBE]
        h.feed(data)
        let room = joined([0x10, 0x08, 0, 0], Array(keyB[0..<6]), [0x01, 0x02], le32(9), [1, 2, 3, 4], Array("post".utf8))
        h.feed(room)
        #expect(h.takeSent().count == 5)
        h.feed([0x0A])
        #expect(h.takeSent().isEmpty)
        let msgs = h.takeEvents().compactMap { e -> ReceivedMessage? in if case .message(let m) = e { return m }; return nil }
        #expect(msgs.count == 6)
        #expect(msgs[0].kind == .contact && msgs[0].senderPrefix == Array(keyB[0..<6]) && msgs[0].hops == 2
                && msgs[0].timestamp == 1_700_000_001 && msgs[0].textString == "old" && msgs[0].snrQuarterDb == nil)
        #expect(msgs[1].kind == .channel && msgs[1].channelIndex == 0 && msgs[1].hops == nil && msgs[1].textString == "bob: yo")
        #expect(msgs[2].kind == .contact && msgs[2].snrQuarterDb == 0x28 && msgs[2].textString == "new")
        #expect(msgs[3].kind == .channel && msgs[3].channelIndex == 3 && msgs[3].hops == 2 && msgs[3].snrQuarterDb == -12
                && msgs[3].timestamp == 1_700_000_004 && msgs[3].textString == "amy: hey")
        #expect(msgs[4].kind == .channelData && msgs[4].dataType == 0xFF00 && msgs[4].text == [0xDE, 0xAD, 0xBE])
        #expect(msgs[5].textType == .signedPlain && msgs[5].authorPrefix == [1, 2, 3, 4] && msgs[5].textString == "post")
    }

    @Test func waitingDuringDrainDrainsAgain() {
        let h = Harness.ready()
        h.feed([0x83])
        #expect(h.takeSent() == [[0x0A]])
        h.feed([0x83])                            // another message queued while the sync is in flight
        #expect(h.takeSent().isEmpty)
        h.feed([0x0A])
        #expect(h.takeSent() == [[0x0A]])
        h.feed([0x0A])
        #expect(h.takeSent().isEmpty)
    }

    @Test func drainTimeoutIsReported() {
        let h = Harness.ready { $0.commandTimeout = 1_000 }
        h.feed([0x83])
        #expect(h.takeSent() == [[0x0A]])
        h.feed([0x83])                            // more waiting; the radio never answers (rebooting)
        _ = h.takeEvents()
        h.advance(to: h.now + 1_000)
        #expect(h.takeEvents() == [.drainFailed(.timeout)])
        #expect(h.takeSent().isEmpty)             // the shell decides what comes next
        #expect(!h.s.isBusy)
    }

    @Test func drainRunsOnStart() {
        let h = Harness()
        h.s.start(now: h.now)
        h.feed(deviceInfoFrame())
        h.feed(selfInfoFrame())
        #expect(h.takeSent().last == [0x0A])
        h.feed([0x07] + Array(keyB[0..<6]) + [0x00, 0x00] + le32(5) + Array("x".utf8))
        #expect(h.takeSent() == [[0x0A]])
        h.feed([0x0A])
        #expect(h.takeEvents().contains { if case .message(let m) = $0 { return m.textString == "x" }; return false })
    }

    @Test func malformedQueuedFrameIsKeptRaw() {
        let h = Harness.ready()
        h.feed([0x83])
        h.feed([0x10, 0x00])
        #expect(h.takeEvents().contains(.malformedMessage([0x10, 0x00])))
        #expect(h.takeSent() == [[0x0A], [0x0A]])
    }
}

@Suite struct DirectMessageTests {
    let ts: UInt32 = 1_700_000_000

    func sendFrame(attempt: UInt8, text: String = "hello") -> [UInt8] {
        [0x02, 0x00, attempt] + le32(ts) + Array(keyB[0..<6]) + Array(text.utf8)
    }

    @Test func retriesTwiceDirectThenResetsPathAndFloods() throws {
        let h = Harness.ready()
        let t = try h.s.sendText(to: keyB, text: "hello", timestamp: ts, now: h.now)
        #expect(h.takeSent() == [sendFrame(attempt: 0)])
        h.feed(sentFrame(flood: false, tag: 0x1111_1111, est: 1_000))
        #expect(h.takeEvents() == [.delivery(t, .sent(attempt: 0, flood: false, estimatedTimeout: 1_000, ackTag: 0x1111_1111))])
        #expect(h.s.nextDeadline == h.now + 1_200)  // est × 1.2
        h.advance(to: h.now + 1_200)
        #expect(h.takeEvents() == [.delivery(t, .retrying(attempt: 1, flood: false))])
        #expect(h.takeSent() == [sendFrame(attempt: 1)])  // same timestamp, attempt + 1
        h.feed(sentFrame(flood: false, tag: 0x2222_2222, est: 1_000))
        h.advance(to: h.now + 1_200)
        #expect(h.takeSent() == [[0x0D] + keyB])
        h.feed([0x00])
        #expect(h.takeSent() == [sendFrame(attempt: 2)])
        h.feed(sentFrame(flood: true, tag: 0x3333_3333, est: 4_000))
        let ev = h.takeEvents()
        #expect(ev.contains(.delivery(t, .retrying(attempt: 2, flood: true))))
        #expect(ev.last == .delivery(t, .sent(attempt: 2, flood: true, estimatedTimeout: 4_000, ackTag: 0x3333_3333)))
        h.feed([0x81] + keyB)                     // PATH_UPDATED comes first
        h.feed([0x82] + le32(0x3333_3333) + le32(2_345))
        #expect(h.takeEvents() == [.push(Push(frame: [0x81] + keyB)), .delivery(t, .acked(attempt: 2, roundTrip: 2_345))])
        #expect(!h.s.isBusy)
    }

    @Test func lateAckOfEarlierAttemptConfirms() throws {
        let h = Harness.ready()
        let t = try h.s.sendText(to: keyB, text: "hello", timestamp: ts, now: h.now)
        h.feed(sentFrame(flood: false, tag: 0xAAAA_0001, est: 1_000))
        h.advance(to: h.now + 1_200)
        h.feed(sentFrame(flood: false, tag: 0xAAAA_0002, est: 1_000))
        _ = h.takeEvents()
        h.feed([0x82] + le32(0xAAAA_0001) + le32(1_500))
        #expect(h.takeEvents() == [.delivery(t, .acked(attempt: 0, roundTrip: 1_500))])
        h.advance(to: h.now + 5_000)
        #expect(h.takeEvents().isEmpty)
    }

    @Test func failsAfterAllAttempts() throws {
        let h = Harness.ready { $0.ackTimeout = 3_000 }
        let t = try h.s.sendText(to: keyB, text: "hello", timestamp: ts, now: h.now)
        #expect(h.takeSent() == [sendFrame(attempt: 0)])
        h.feed(sentFrame(flood: true, tag: 1, est: 100))
        h.advance(to: h.now + 3_000)
        #expect(h.takeSent() == [sendFrame(attempt: 1)])  // already flood: no RESET_PATH
        h.feed(sentFrame(flood: true, tag: 2, est: 100))
        h.advance(to: h.now + 3_000)
        #expect(h.takeSent() == [sendFrame(attempt: 2)])
        h.feed(sentFrame(flood: true, tag: 3, est: 100))
        h.advance(to: h.now + 2_999)
        _ = h.takeEvents()
        h.advance(to: h.now + 1)
        #expect(h.takeEvents() == [.delivery(t, .failed(attempts: 3))])
        #expect(!h.s.isBusy)
    }

    @Test func refusedSendReportsErrorCode() throws {
        let h = Harness.ready()
        let t = try h.s.sendText(to: keyB, text: "hello", timestamp: ts, now: h.now)
        h.feed([0x01, 0x02])
        #expect(h.takeEvents() == [.delivery(t, .refused(2))])
    }

    @Test func atMostEightOutstandingAcks() throws {
        let h = Harness.ready()
        var tickets: [Ticket] = []
        for i in 0..<9 {
            tickets.append(try h.s.sendText(to: keyB, text: String(UnicodeScalar(UInt8(0x30 + i))), timestamp: ts, now: h.now))
        }
        for i in 0..<8 {
            #expect(h.takeSent().count == 1)
            h.feed(sentFrame(flood: false, tag: UInt32(100 + i), est: 10_000))
        }
        #expect(h.takeSent().isEmpty)             // the ninth waits for a free slot
        h.feed([0x82] + le32(100) + le32(50))
        #expect(h.takeSent() == [joined([0x02, 0x00, 0x00], le32(ts), Array(keyB[0..<6]), [0x38])])
    }

    @Test func textLimits() {
        let h = Harness.ready()
        #expect(throws: Session.SubmitError.textTooLong(limit: 160)) {
            try h.s.sendText(to: keyB, text: String(repeating: "A", count: 161), timestamp: ts, now: h.now)
        }
        #expect(throws: Session.SubmitError.badPublicKey) {
            try h.s.sendText(to: [1, 2, 3], text: "A", timestamp: ts, now: h.now)
        }
    }
}

@Suite struct RemoteRequestTests {
    @Test func loginMatchedByPrefixAndSupersededByStatus() throws {
        let h = Harness.ready()
        let login = try h.s.request(.login(publicKey: keyB, password: "secret"), now: h.now)
        #expect(h.takeSent() == [[0x1A] + keyB + Array("secret".utf8)])
        h.feed(sentFrame(flood: false, tag: 0x13121110, est: 2_000))
        #expect(h.takeEvents() == [.request(login, .sent(estimatedTimeout: 2_000))])
        let other: [UInt8] = [0x85, 0x01] + Array(keyA[0..<6]) + le32(0) + [0, 2]
        h.feed(other)                                 // another node's login reply: not ours
        #expect(h.takeEvents() == [.push(Push(frame: other))])
        let ok: [UInt8] = [0x85, 0x01] + Array(keyB[0..<6]) + le32(1_700_000_000) + [0x03, 0x02]
        h.feed(ok)
        #expect(h.takeEvents() == [.request(login, .reply(ok))])

        let again = try h.s.request(.login(publicKey: keyB, password: ""), now: h.now)
        h.feed(sentFrame(flood: false, tag: 0x13121110, est: 2_000))
        let status = try h.s.request(.status(publicKey: keyB), now: h.now)
        #expect(h.takeSent().last == [0x1B] + keyB)
        h.feed(sentFrame(flood: false, tag: 0x55, est: 2_000))
        let ev = h.takeEvents()
        #expect(ev.contains(.request(again, .superseded)))
        h.feed(ok)                                    // the old login's reply no longer matches
        #expect(h.takeEvents() == [.push(Push(frame: ok))])
        var stats: [UInt8] = [0x87, 0x00] + Array(keyB[0..<6]); stats += [UInt8](repeating: 7, count: 56)
        h.feed(stats)
        #expect(h.takeEvents() == [.request(status, .reply(stats))])
    }

    @Test func binaryMatchedByTagAndTimesOut() throws {
        let h = Harness.ready()
        let t = try h.s.request(.binary(publicKey: keyB, data: [0x06, 0, 0, 0, 0]), now: h.now)
        #expect(h.takeSent() == [[0x32] + keyB + [0x06, 0, 0, 0, 0]])
        h.feed(sentFrame(flood: true, tag: 0xCAFE_F00D, est: 5_000))
        h.feed([0x8C, 0x00] + le32(0xDEAD_BEEF) + [1, 2])  // wrong tag
        #expect(h.takeEvents().last == .push(Push(frame: [0x8C, 0x00] + le32(0xDEAD_BEEF) + [1, 2])))
        h.feed([0x8C, 0x00] + le32(0xCAFE_F00D) + [1, 2])
        #expect(h.takeEvents() == [.request(t, .reply([0x8C, 0x00] + le32(0xCAFE_F00D) + [1, 2]))])

        let t2 = try h.s.request(.telemetry(publicKey: keyB), now: h.now)
        #expect(h.takeSent() == [[0x27, 0, 0, 0] + keyB])
        h.feed(sentFrame(flood: false, tag: 9, est: 1_000))
        h.advance(to: h.now + 1_199)
        _ = h.takeEvents()
        h.advance(to: h.now + 1)
        #expect(h.takeEvents() == [.request(t2, .timeout)])
    }

    @Test func pathDiscoveryTelemetryAndTrace() throws {
        let h = Harness.ready()
        let pd = try h.s.request(.pathDiscovery(publicKey: keyB), now: h.now)
        #expect(h.takeSent() == [[0x34, 0x00] + keyB])
        h.feed(sentFrame(flood: true, tag: 77, est: 3_000))
        let reply: [UInt8] = [0x8D, 0x00] + Array(keyB[0..<6]) + [0x01, 0x5F, 0x01, 0x5F]
        h.feed(reply)
        #expect(h.takeEvents().last == .request(pd, .reply(reply)))

        let tr = try h.s.request(.trace(tag: 0xBD89_4DA2, auth: 0, flags: 0, path: [0xFB]), now: h.now)
        #expect(h.takeSent() == [[0x24, 0xA2, 0x4D, 0x89, 0xBD, 0, 0, 0, 0, 0, 0xFB]])
        h.feed(sentFrame(flood: false, tag: 0xBD89_4DA2, est: 1_000))
        let trace: [UInt8] = [0x89, 0x00, 0x01, 0x00, 0xA2, 0x4D, 0x89, 0xBD, 0, 0, 0, 0, 0xFB, 0x30, 0x2C]
        h.feed(trace)
        #expect(h.takeEvents().last == .request(tr, .reply(trace)))
    }

    @Test func repeaterCommandReplyArrivesAsCLIMessage() throws {
        let h = Harness.ready()
        let t = try h.s.request(.command(publicKey: keyB, text: "ver", timestamp: 1_700_000_000), now: h.now)
        #expect(h.takeSent() == [joined([0x02, 0x01, 0x00], le32(1_700_000_000), Array(keyB[0..<6]), Array("ver".utf8))])
        h.feed(sentFrame(flood: false, tag: 0, est: 2_000))
        h.feed([0x83])
        #expect(h.takeSent() == [[0x0A]])
        let plain: [UInt8] = [0x10, 0, 0, 0] + Array(keyB[0..<6]) + [0xFF, 0x00] + le32(1) + Array("hi".utf8)
        h.feed(plain)                                 // a normal DM from the same node is a message
        let cli: [UInt8] = [0x10, 0, 0, 0] + Array(keyB[0..<6]) + [0xFF, 0x01] + le32(2) + Array("v1.17.1".utf8)
        h.feed(cli)
        h.feed([0x0A])
        let ev = h.takeEvents()
        #expect(ev.contains { if case .message(let m) = $0 { return m.textString == "hi" }; return false })
        #expect(ev.contains(.request(t, .reply(cli))))
    }

    @Test func refusedRequest() throws {
        let h = Harness.ready()
        let t = try h.s.request(.status(publicKey: keyB), now: h.now)
        h.feed([0x01, 0x02])
        #expect(h.takeEvents() == [.request(t, .refused(2))])
    }
}
