import Glibc
import MeshCompanion
import MeshLink

/// Where the radio is.
public enum LinkTarget: Sendable, Equatable, Codable, CustomStringConvertible {
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

    /// How long opening may block: BLE connect plus GATT setup needs more than a TCP connect.
    public static func bleOpenTimeout(_ milliseconds: Int) -> Int { max(milliseconds, 10_000) }

    /// Opens the link; errors are one actionable sentence.
    public func open(timeoutMilliseconds: Int) throws(ClientError) -> ByteLink {
        do {
            switch self {
            case .serial(let path, let baud):
                guard let speed = SerialSpeed(baud: baud) else {
                    throw ClientError.usage("unsupported baud rate \(baud): use one of \(SerialSpeed.supportedBauds.map(String.init).joined(separator: ", ")).")
                }
                if path == "auto" {
                    // `--serial auto`: the only USB serial candidate (or the only known radio bridge).
                    let radio = try RadioCandidate.choose(from: SerialDiscovery.candidates())
                    let chosen = radio.byIdPath.flatMap { access($0, F_OK) == 0 ? $0 : nil } ?? radio.path
                    return try SerialLink(path: chosen, speed: speed)
                }
                return try SerialLink(path: path, speed: speed)
            case .tcp(let host, let port):
                return try TCPLink(connectingTo: TCPAddress(host: host, port: port), timeoutMilliseconds: timeoutMilliseconds)
            case .ble(let text, let minimumMTU):
                let address = try BLEAddress(parsing: text)
                var configuration = ATTClient.Configuration()
                configuration.minimumMTU = UInt16(clamping: max(23, minimumMTU))
                return try BLELink(connectingTo: address, timeoutMilliseconds: Self.bleOpenTimeout(timeoutMilliseconds),
                                   configuration: configuration)
            }
        } catch let e as ClientError {
            throw e
        } catch let e as LinkError {
            throw e.isUsageError ? .usage(Radio.sentence(e.description)) : .link(Radio.sentence(e.description))
        } catch {
            throw .link("cannot open \(self): \(error).")
        }
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

    public init(link: ByteLink, config: SessionConfig, loop: PollLoop = PollLoop()) {
        self.link = link
        self.loop = loop
        self.session = Session(config: config)
        loop.attach(link, readBufferSize: 4096, onReceive: { [unowned self] chunk in
            self.received(chunk)
        }, onError: { [unowned self] error in
            self.linkError = error
            self.session.close()
            self.pump()
            self.loop.stop()
        })
    }

    deinit {
        loop.detach(link)
        if let t = timer { loop.cancelTimer(t) }
        link.close()
    }

    public var now: UInt64 { loop.now }

    func received(_ chunk: UnsafeRawBufferPointer) {
        if link.framing == .datagram {
            session.receive(frame: chunk, now: loop.now)
        } else {
            decoder.receive(chunk) { frame in session.receive(frame: frame, now: loop.now) }
        }
        pump()
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
        }
        if any || linkError != nil { loop.stop() }
    }

    /// Spins the loop until `done()` or the monotonic `deadline`; false when the deadline passed.
    @discardableResult
    public func run(until deadline: UInt64? = nil, _ done: () -> Bool) throws(ClientError) -> Bool {
        while !done() {
            if let e = linkError { throw .link(Radio.sentence(e.description)) }
            switch loop.run(until: deadline) {
            case .stopped: continue
            case .deadline: return done()
            case .signal: throw .interrupted
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
        try run { replies[t] != nil }
        return replies.removeValue(forKey: t)!
    }

    public func call(_ frame: EncodedFrame, expecting code: ResponseCode, timeout: UInt64? = nil) throws(ClientError) -> Reply {
        try call(frame.bytes, expecting: .codes(CodeSet(code.rawValue)), timeout: timeout)
    }

    public func listContacts(since: UInt32? = nil) throws(ClientError) -> Reply {
        let t: Ticket
        do { t = try session.listContacts(since: since, now: loop.now) } catch { throw Radio.submitError(error) }
        pump()
        try run { replies[t] != nil }
        return replies.removeValue(forKey: t)!
    }

    /// Sends a direct message and waits until it is acknowledged or given up
    /// (`wait == false`: until the radio took the first attempt).
    public func sendText(to key: [UInt8], text: String, timestamp: UInt32, wait: Bool,
                         progress: (Delivery) -> Void = { _ in }) throws(ClientError) -> Delivery {
        let t: Ticket
        do { t = try session.sendText(to: key, text: text, timestamp: timestamp, now: loop.now) } catch {
            throw Radio.submitError(error)
        }
        pump()
        while true {
            try run { deliveries[t] != nil }
            let d = deliveries.removeValue(forKey: t)!
            switch d {
            case .sent, .retrying:
                progress(d)
                if !wait, case .sent = d { return d }
            default:
                return d
            }
        }
    }

    /// Sends a remote request and waits for its reply (or its end).
    public func request(_ r: RemoteRequest, progress: (RequestOutcome) -> Void = { _ in }) throws(ClientError) -> RequestOutcome {
        let t: Ticket
        do { t = try session.request(r, now: loop.now) } catch { throw Radio.submitError(error) }
        pump()
        while true {
            try run { requests[t] != nil }
            let o = requests.removeValue(forKey: t)!
            if case .sent = o { progress(o); continue }
            return o
        }
    }

    /// Drains the radio's message queue and waits until it is empty.
    public func drain() throws(ClientError) {
        session.drain(now: loop.now)
        pump()
        try run { !session.draining }
    }

    static func submitError(_ e: Session.SubmitError) -> ClientError {
        switch e {
        case .queueFull: return .usage("too many commands are waiting: send fewer at once.")
        case .textTooLong(let limit): return .usage("the text is longer than \(limit) bytes: shorten it.")
        case .badPublicKey: return .usage("a public key must be 32 bytes (64 hex digits).")
        case .notUsable: return .link("the session with the radio ended: reconnect and try again.")
        case .invalid(let why): return .usage(Radio.sentence(why) == "." ? "the command has a value outside the radio's limits." : "the command has a value outside the radio's limits: \(Radio.sentence(why))")
        }
    }

    /// Makes sure a message is one sentence ending in a full stop.
    static func sentence(_ s: String) -> String {
        var t = s
        while t.hasSuffix(".") { t.removeLast() }
        return t + "."
    }
}
