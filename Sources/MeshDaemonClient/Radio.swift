import Glibc
import MeshCompanion
import MeshLink
import MeshSession
import MeshOps

/// Where the radio is.
public enum LinkTarget: Sendable, Equatable, CustomStringConvertible {
    case serial(path: String, baud: Int)
    case tcp(host: String, port: UInt16)
    /// `AA:BB:CC:DD:EE:FF[/random]`; `minimumMTU` is the smallest ATT MTU accepted (179 carries
    /// any 176-byte frame whole; ESP32 radios offer 176, see `ATTClient.Configuration.minimumMTU`).
    case ble(address: String, minimumMTU: Int = 179)

    public var description: String {
        switch self {
        case .serial(let p, let b): return "serial \(p) at \(b) baud"
        case .tcp(let h, let p): return "tcp \(h):\(p)"
        case .ble(let a, _): return "ble \(a)"
        }
    }

    /// Opens the link (MeshLink's `LinkEndpoint`: `--serial auto`, BLE security, …); errors are one
    /// actionable sentence, usage errors (a bad address or speed) apart from link failures.
    public func open(timeoutMilliseconds: Int) throws(ClientError) -> ByteLink {
        do {
            let endpoint: LinkEndpoint
            var att = ATTClient.Configuration()
            switch self {
            case .serial(let path, let baud):
                endpoint = try LinkEndpoint(serial: path, baud: baud, tcp: nil, ble: nil)
            case .tcp(let host, let port):
                endpoint = .tcp(TCPAddress(host: host, port: port))
            case .ble(let address, let minimumMTU):
                endpoint = try LinkEndpoint(serial: nil, baud: nil, tcp: nil, ble: address)
                att.minimumMTU = UInt16(clamping: max(23, minimumMTU))
            }
            return try endpoint.open(timeoutMilliseconds: timeoutMilliseconds, bleConfiguration: att)
        } catch {
            try Radio.throwing(error)
        }
    }
}

extension Radio {
    static func throwing(_ e: LinkError) throws(ClientError) -> Never {
        throw e.isUsageError ? .usage(Radio.sentence(e.description)) : .link(Radio.sentence(e.description))
    }
}

/// Runs a `Session` over a real link inside a `PollLoop`: one thread, no async.
///
/// The `wait…` methods spin the loop until what they wait for happened, so command-line code reads
/// top to bottom; every other event (messages, pushes) goes to `onEvent`.
public final class Radio {
    public let session: Session
    public let loop: PollLoop
    public let link: ByteLink
    let decoder = FrameDecoder(side: .client)
    var timer: PollLoop.TimerID? = nil
    var timerDeadline: UInt64? = nil
    public private(set) var linkError: LinkError? = nil
    public private(set) var handshakeError: Reply? = nil
    public private(set) var isReady = false
    public private(set) var clock: ClockResult? = nil
    var replies: [Ticket: Reply] = [:]
    var deliveries: [Ticket: Delivery] = [:]
    var requests: [Ticket: RequestOutcome] = [:]
    /// Every event, after the driver's own bookkeeping.
    public var onEvent: (SessionEvent) -> Void = { _ in }
    /// Operations' observers (`observe`), after `onEvent`.
    var observers = SessionObservers()

    public init(link: ByteLink, config: SessionConfig, loop: PollLoop = PollLoop()) {
        self.link = link
        self.loop = loop
        self.session = Session(config: config)
        let onError: (LinkError) -> Void = { [unowned self] error in
            self.linkError = error
            self.session.close()
            self.pump()
            self.loop.stop()
        }
        if link.framing == .datagram {
            loop.attach(link, readBufferSize: 4096, onReceive: { [unowned self] chunk in self.received(chunk) }, onError: onError)
        } else {
            // Stream links read straight into the frame decoder's ring: no copy before decoding.
            loop.attach(link, reading: { [unowned self] l throws(LinkError) in try self.readFrames(l) }, onError: onError)
        }
    }

    deinit {
        loop.detach(link)
        if let t = timer { loop.cancelTimer(t) }
        link.close()
    }

    public var now: UInt64 { loop.now }

    /// One read of a stream link into the decoder's ring, then each complete frame to the session.
    func readFrames(_ l: ByteLink) throws(LinkError) -> Int {
        var failure: LinkError? = nil
        let now = loop.now
        let n = decoder.receive(now: now, reading: { room in
            do throws(LinkError) { return try l.read(into: room) } catch { failure = error; return 0 }
        }) { frame in session.receive(frame: frame, now: now) }
        if let failure { throw failure }
        if n > 0 {
            pump()
            loop.stop()  // a frame can end a wait without an event (NO_MORE_MESSAGES ends a drain)
        }
        return n
    }

    func received(_ chunk: UnsafeRawBufferPointer) {
        if link.framing == .datagram {
            session.receive(frame: chunk, now: loop.now)
        } else {
            decoder.receive(chunk, now: loop.now) { frame in session.receive(frame: frame, now: loop.now) }
        }
        pump()
        // A frame can end a wait without an event (NO_MORE_MESSAGES ends a drain): let `run` look.
        loop.stop()
    }

    /// Writes what the session wants sent, re-arms the deadline timer, dispatches events.
    func pump() {
        while let payload = session.nextFrame() {
            guard linkError == nil else { break }
            do throws(LinkError) {
                if link.framing == .datagram {
                    try link.write(payload)
                } else {
                    let wire: [UInt8]
                    do { wire = try FrameEncoder.encode(payload, marker: .toRadio) } catch { continue }
                    try link.write(wire)
                }
            } catch {
                linkError = error
                session.close()
            }
        }
        let deadline = session.nextDeadline
        if deadline != timerDeadline {
            if let t = timer { loop.cancelTimer(t); timer = nil }
            timerDeadline = deadline
            if let d = deadline {
                timer = loop.addTimer(at: d) { [unowned self] in
                    self.timer = nil
                    self.timerDeadline = nil
                    self.session.tick(now: self.loop.now)
                    self.pump()
                    self.loop.stop()
                }
            }
        }
        var any = false
        while let e = session.nextEvent() {
            any = true
            switch e {
            case .ready: isReady = true
            case .handshakeFailed(let r): handshakeError = r
            case .clock(let c): clock = c
            case .reply(let t, let r): replies[t] = r
            case .delivery(let t, let d): deliveries[t] = d
            case .request(let t, let o): requests[t] = o
            default: break
            }
            onEvent(e)
            observers.notify(e)
        }
        if any || linkError != nil { loop.stop() }
    }

    /// Called for each handled signal while `run` waits: true goes on waiting (e.g. a window resize),
    /// false (or no handler) ends the wait with `.interrupted`.
    public var onSignal: ((Int32) -> Bool)? = nil

    /// Submits through the session without waiting (sends, requests): what becomes of it arrives
    /// at `onEvent` (`.delivery`, `.request`, `.reply` with the ticket); `forget` the ticket then.
    public func submit<T>(_ body: (Session, UInt64) throws(Session.SubmitError) -> T) throws(ClientError) -> T {
        let r: T
        do { r = try body(session, loop.now) } catch { throw Radio.submitError(error) }
        pump()
        return r
    }

    /// Drops what the driver kept of a ticket submitted with `submit`.
    public func forget(_ t: Ticket) {
        replies[t] = nil
        deliveries[t] = nil
        requests[t] = nil
    }

    /// Called each time the loop wakes while a command waits (progress displays read the session).
    public var onProgress: (() -> Void)? = nil

    /// Spins the loop until `done()` or the monotonic `deadline`; false when the deadline passed.
    @discardableResult
    public func run(until deadline: UInt64? = nil, _ done: () -> Bool) throws(ClientError) -> Bool {
        while !done() {
            onProgress?()
            if let e = linkError { throw .link(Radio.sentence(e.description)) }
            switch loop.run(until: deadline) {
            case .stopped: continue
            case .deadline: return done()
            case .signal(let n):
                if let go = onSignal, go(n) { continue }
                throw .interrupted
            case .idle: throw .link("the link to the radio closed: check the connection and try again.")
            }
        }
        return true
    }

    /// Handshake; waits for SELF_INFO.
    public func connect(timeoutMilliseconds: UInt64) throws(ClientError) {
        session.start(now: loop.now)
        pump()
        let ok = try run(until: loop.now + timeoutMilliseconds + 1_000) { isReady || handshakeError != nil }
        if let r = handshakeError {
            switch r {
            case .timeout, .cancelled:
                throw .timeout("the radio on \(link) did not answer the handshake: check that it runs MeshCore companion firmware and that no other app holds it.")
            case .error(let code):
                throw .radio("the handshake", code: code, hint: "update the radio's companion firmware")
            default:
                throw .link("the radio on \(link) answered the handshake with something unexpected: check that it runs MeshCore companion firmware.")
            }
        }
        if !ok { throw .timeout("the radio on \(link) did not answer the handshake: check that it runs MeshCore companion firmware.") }
    }

    /// Submits one command and waits for its reply.
    public func call(_ frame: [UInt8], expecting: Session.Expectation, timeout: UInt64? = nil) throws(ClientError) -> Reply {
        let t: Ticket
        do { t = try session.submit(frame: frame, expecting: expecting, timeout: timeout, now: loop.now) } catch {
            throw Radio.submitError(error)
        }
        pump()
        return try waitReply(t)
    }

    /// Waits for a submitted command's reply.
    public func waitReply(_ t: Ticket) throws(ClientError) -> Reply {
        try run { replies[t] != nil }
        let r = replies.removeValue(forKey: t)!
        if r == .cancelled { throw lost() }
        return r
    }

    /// Waits for the next step of a direct message.
    public func waitDelivery(_ t: Ticket) throws(ClientError) -> Delivery {
        try run { deliveries[t] != nil }
        let d = deliveries.removeValue(forKey: t)!
        if case .cancelled = d { throw lost() }
        return d
    }

    /// Waits for the next step of a remote request.
    public func waitOutcome(_ t: Ticket) throws(ClientError) -> RequestOutcome {
        try run { requests[t] != nil }
        let o = requests.removeValue(forKey: t)!
        if o == .cancelled { throw lost() }
        return o
    }

    /// Waits until no drain is under way (or until `deadline`).
    public func waitDrained(by deadline: UInt64?) throws(ClientError) {
        pump()
        try run(until: deadline) { !session.draining }
    }

    /// Lets the loop run until `deadline` (events go to `onEvent` and the observers meanwhile).
    public func wait(until deadline: UInt64) throws(ClientError) {
        try run(until: deadline) { false }
    }

    /// Every event from now on goes to `handler` too; `stopObserving` with the token ends it.
    public func observe(_ handler: @escaping (SessionEvent) -> Void) -> Int { observers.add(handler) }

    public func stopObserving(_ token: Int) { observers.remove(token) }

    /// The error to report when the session ended because the link went away.
    func lost() -> ClientError {
        if let e = linkError { return .link(Radio.sentence(e.description)) }
        return .link("the session with the radio ended: reconnect and try again.")
    }

    public func call(_ frame: EncodedFrame, expecting code: ResponseCode, timeout: UInt64? = nil) throws(ClientError) -> Reply {
        try call(frame.bytes, expecting: .codes(CodeSet(code.rawValue)), timeout: timeout)
    }

    public static func submitError(_ e: Session.SubmitError) -> ClientError { e.clientError }

    /// Makes sure a message is one sentence ending in a full stop.
    static func sentence(_ s: String) -> String { ClientError.sentence(s) }
}
