import MeshCompanion

/// One conversation with one companion radio, without I/O.
///
/// Feed it every decoded frame payload (`receive`) and the time (`tick`); take the frames it
/// wants sent (`nextFrame`, payload only: the shell adds the `<` + length header), the events it
/// produced (`nextEvent`) and the time it next needs to be woken (`nextDeadline`).
///
/// One command is in flight at a time; the rest wait in a FIFO. Responses (code < 0x80) complete
/// the command in flight when their code is one it expects; pushes (≥ 0x80) are routed by code
/// wherever they arrive, including inside a contacts listing.
public final class Session {
    public enum State: Sendable, Equatable { case idle, handshaking, ready, failed, closed }

    public enum SubmitError: Error, Equatable {
        /// The command queue is full (`commandCapacity`); try again after replies arrive.
        case queueFull
        /// Text longer than the radio accepts (160 bytes; 158 from the fifth attempt on).
        case textTooLong(limit: Int)
        /// A public key must be 32 bytes.
        case badPublicKey
        /// The session is closed or its handshake failed.
        case notUsable
        /// The command could not be encoded (a value outside the firmware's limits).
        case invalid(String)
    }

    /// What completes a command.
    public enum Expectation: Sendable, Equatable {
        /// A single response whose code is in the set (ERR and DISABLED always complete).
        case codes(CodeSet)
        /// CONTACTS_START, CONTACT…, END_OF_CONTACTS.
        case contacts
        /// No response at all (REBOOT): done once handed out.
        case noReply
        /// The first response of any code (raw frames).
        case anyResponse

        /// What completes `frame` as the firmware answers it (for frames built elsewhere: the
        /// daemon's tunnel, a hub client).
        public static func answering(_ frame: [UInt8]) -> Expectation {
            switch CommandReply.answering(frame) {
            case .response: return .anyResponse
            case .contactListing: return .contacts
            case .push(let code): return .codes(CodeSet(code.rawValue))
            case .none: return .noReply
            }
        }
    }

    public let config: SessionConfig
    /// LOG_RX_DATA pushes are handed out (from `config.forwardLogRx`; a command may turn it on
    /// while it listens for echoes of its own packet).
    public lazy var forwardsLogRx: Bool = config.forwardLogRx
    public internal(set) var state: State = .idle
    /// The last DEVICE_INFO and SELF_INFO frames (read again after a command changes a setting).
    public internal(set) var deviceInfo: [UInt8]? = nil { didSet { radioDevice = deviceInfo.flatMap(RadioDevice.init(frame:)) } }
    public internal(set) var selfInfo: [UInt8]? = nil { didSet { radioSelf = selfInfo.flatMap(RadioSelf.init(frame:)) } }
    /// The same, decoded once.
    public private(set) var radioDevice: RadioDevice? = nil
    public private(set) var radioSelf: RadioSelf? = nil
    /// The highest contact `lastmod` seen in any listing (for `since`; END can report 0).
    public internal(set) var contactsLastmod: UInt32 = 0
    /// Events dropped because the event queue was full.
    public internal(set) var droppedEvents: Int = 0
    /// Maximum commands waiting behind the one in flight; `submit` throws `.queueFull` beyond.
    public let commandCapacity = 256

    // MARK: commands
    enum Purpose {
        case user(Ticket)
        case deviceQuery
        case appStart
        case clock
        case drain
        case dmSend(Ticket)
        case dmResetPath(Ticket)
        case request(Ticket, RemoteRequest)
        /// DEVICE_QUERY or APP_START again after a setting changed; then the held reply, if any.
        case refresh(then: (Ticket, Reply)?)
    }

    struct Command {
        var frame: [UInt8]
        var expect: Expectation
        var timeout: UInt64
        var purpose: Purpose
    }

    var queue: [Command] = []
    var inFlight: Command? = nil
    var inFlightDeadline: UInt64 = 0
    var listing: ContactListing? = nil
    /// The most contacts a listing keeps: what the radio says it holds (DEVICE_INFO's
    /// max-contacts), never more than `CompanionLimits.contactsCeiling`.
    public var contactsLimit: Int {
        let said = radioDevice?.maxContacts ?? 0
        return said > 0 ? min(said, CompanionLimits.contactsCeiling) : CompanionLimits.contactsCeiling
    }
    /// A contacts listing under way: records received so far and the radio's total.
    public var contactsProgress: (received: Int, total: Int)? { listing.map { ($0.records.count, Int($0.total)) } }
    var outbox: [[UInt8]] = []
    var events: [SessionEvent] = []
    var eventHead = 0
    var nextTicket: Ticket = 1
    /// Tickets whose owner withdrew them (`withdraw`): their events are dropped.
    var withdrawn: [Ticket] = []

    // MARK: drain
    public internal(set) var draining = false
    var drainAgain = false
    /// A SYNC_NEXT_MESSAGE is queued or in flight.
    var syncOutstanding = false
    /// No SYNC_NEXT_MESSAGE goes out until the shell says it can take a message (`resumeMessages`).
    public internal(set) var messagesPaused = false
    /// `stopDraining`: the SYNC in flight is answered, no further one is sent.
    var drainStopped = false

    // MARK: direct messages
    enum MessageState { case waiting, sending, awaitingAck(deadline: UInt64) }
    struct OutgoingMessage {
        var ticket: Ticket
        var publicKey: [UInt8]
        var text: String
        var timestamp: UInt32
        var attempt = 0
        var flood = false
        var tags: [UInt32] = []
        var state: MessageState = .waiting
    }
    var messages: [OutgoingMessage] = []

    // MARK: remote requests
    enum RequestState { case sending, awaiting(deadline: UInt64) }
    struct ActiveRequest {
        var ticket: Ticket
        var request: RemoteRequest
        var tag: UInt32 = 0
        var state: RequestState = .sending
    }
    /// The radio's single pending-request slot (login, status, telemetry, binary, anon, discovery).
    var slotRequest: ActiveRequest? = nil
    /// A repeater CLI command waiting for its txt_type 1 reply.
    var commandRequest: ActiveRequest? = nil
    /// Traces waiting for their TRACE_DATA push, matched by tag (at most `traceCapacity`; the oldest is superseded).
    var traces: [ActiveRequest] = []
    let traceCapacity = 8

    public init(config: SessionConfig = SessionConfig()) {
        self.config = config
    }

    // MARK: - Shell interface

    /// Queues the handshake (DEVICE_QUERY, APP_START, optional clock sync, optional drain)
    /// ahead of anything already submitted.
    public func start(now: UInt64) {
        guard state == .idle else { return }
        state = .handshaking
        var head: [Command] = []
        head.append(Command(frame: CommandFrame.deviceQuery(appTargetVersion: config.appVersion).bytes, expect: .codes(CodeSet(Resp.deviceInfo)),
                            timeout: config.commandTimeout, purpose: .deviceQuery))
        head.append(Command(frame: appStartFrame(), expect: .codes(CodeSet(Resp.selfInfo)),
                            timeout: config.commandTimeout, purpose: .appStart))
        if let epoch = config.clockEpoch {
            head.append(Command(frame: CommandFrame.setDeviceTime(epoch).bytes, expect: .codes(CodeSet(Resp.ok)), timeout: config.commandTimeout, purpose: .clock))
        }
        if config.drainOnStart && !drainStopped {
            draining = true
            if !messagesPaused { head.append(syncCommand()) }
        }
        queue.insert(contentsOf: head, at: 0)
        pump(now: now)
    }

    /// The next frame payload to write to the radio, if any.
    public func nextFrame() -> [UInt8]? {
        outbox.isEmpty ? nil : outbox.removeFirst()
    }

    /// The next event, if any.
    public func nextEvent() -> SessionEvent? {
        guard eventHead < events.count else {
            if eventHead > 0 { events.removeAll(keepingCapacity: true); eventHead = 0 }
            return nil
        }
        let e = events[eventHead]
        eventHead += 1
        if eventHead == events.count { events.removeAll(keepingCapacity: true); eventHead = 0 }
        return e
    }

    /// The earliest time at which `tick` has work to do.
    public var nextDeadline: UInt64? {
        var d: UInt64? = inFlight == nil ? nil : inFlightDeadline
        func consider(_ t: UInt64) { if d == nil || t < d! { d = t } }
        for m in messages { if case .awaitingAck(let t) = m.state { consider(t) } }
        if let r = slotRequest, case .awaiting(let t) = r.state { consider(t) }
        if let r = commandRequest, case .awaiting(let t) = r.state { consider(t) }
        for r in traces { if case .awaiting(let t) = r.state { consider(t) } }
        return d
    }

    /// Commands queued or in flight: the radio's own turn-taking. A shell that shares the radio
    /// (the daemon's hub) hands over work of lower priority only when this is 0.
    public var commandsPending: Int { queue.count + (inFlight == nil ? 0 : 1) }

    /// True while anything is queued, in flight or awaited.
    public var isBusy: Bool {
        inFlight != nil || !queue.isEmpty || !messages.isEmpty || slotRequest != nil || commandRequest != nil
            || !traces.isEmpty || draining
    }

    /// Handles every deadline that has passed at `now`.
    public func tick(now: UInt64) {
        if inFlight != nil, now >= inFlightDeadline {
            finishInFlight(.timeout, frame: nil, now: now)
        }
        let expired = messages.compactMap { m -> Ticket? in
            if case .awaitingAck(let t) = m.state, now >= t { return m.ticket }
            return nil
        }
        for t in expired {
            if let i = messages.firstIndex(where: { $0.ticket == t }) { ackTimedOut(index: i, now: now) }
        }
        if let r = slotRequest, case .awaiting(let t) = r.state, now >= t {
            slotRequest = nil
            emit(.request(r.ticket, .timeout))
        }
        if let r = commandRequest, case .awaiting(let t) = r.state, now >= t {
            commandRequest = nil
            emit(.request(r.ticket, .timeout))
        }
        traces.removeAll { r in
            if case .awaiting(let t) = r.state, now >= t { emit(.request(r.ticket, .timeout)); return true }
            return false
        }
        pump(now: now)
    }

    /// Feeds one decoded frame payload (code byte first).
    public func receive(frame: [UInt8], now: UInt64) {
        frame.withUnsafeBytes { receive(frame: $0, now: now) }
    }

    /// Feeds one decoded frame payload (code byte first). The bytes are only borrowed.
    public func receive(frame b: UnsafeRawBufferPointer, now: UInt64) {
        guard let code = b.first, state != .closed else { return }
        if PushCode.isPush(code) {
            handlePush(code, b, now: now)
        } else {
            handleResponse(code, b, now: now)
        }
        pump(now: now)
    }

    /// Ends the session: everything queued, in flight or awaited finishes as cancelled.
    public func close() {
        guard state != .closed else { return }
        state = .closed
        if let c = inFlight { inFlight = nil; cancel(c) }
        let q = queue
        queue.removeAll()
        for c in q { cancel(c) }
        for m in messages { emit(.delivery(m.ticket, .cancelled)) }
        messages.removeAll()
        if let r = slotRequest { emit(.request(r.ticket, .cancelled)) }
        if let r = commandRequest { emit(.request(r.ticket, .cancelled)) }
        for r in traces { emit(.request(r.ticket, .cancelled)) }
        slotRequest = nil; commandRequest = nil; traces.removeAll()
        draining = false; syncOutstanding = false
        outbox.removeAll()
    }

    // MARK: - Submitting work

    /// Queues a command frame; `.reply(ticket, …)` reports its outcome.
    @discardableResult
    public func submit(frame: [UInt8], expecting: Expectation, timeout: UInt64? = nil, now: UInt64) throws(SubmitError) -> Ticket {
        try checkUsable()
        guard queue.count < commandCapacity else { throw .queueFull }
        let t = takeTicket()
        queue.append(Command(frame: frame, expect: expecting, timeout: timeout ?? config.commandTimeout, purpose: .user(t)))
        pump(now: now)
        return t
    }

    /// The frame of a command submitted with `submit` that has not finished yet (the shell keeps
    /// it to learn what the radio's answer changed, e.g. a contact removed).
    public func frame(of ticket: Ticket) -> [UInt8]? {
        func mine(_ c: Command) -> Bool { if case .user(let t) = c.purpose { return t == ticket }; return false }
        if let c = inFlight, mine(c) { return c.frame }
        return queue.first(where: mine)?.frame
    }

    /// Queues a command that completes with RESP_CODE_OK.
    @discardableResult
    public func submit(frame: [UInt8], expecting code: UInt8, timeout: UInt64? = nil, now: UInt64) throws(SubmitError) -> Ticket {
        try submit(frame: frame, expecting: .codes(CodeSet(code)), timeout: timeout, now: now)
    }

    /// Lists contacts (GET_CONTACTS). `since` filters to lastmod strictly greater; pass
    /// `contactsLastmod` for an incremental sync.
    @discardableResult
    public func listContacts(since: UInt32? = nil, timeout: UInt64? = nil, now: UInt64) throws(SubmitError) -> Ticket {
        return try submit(frame: CommandFrame.getContacts(since: since).bytes, expecting: .contacts, timeout: timeout, now: now)
    }

    /// Starts draining the radio's message queue (SYNC_NEXT_MESSAGE until NO_MORE_MESSAGES).
    public func drain(now: UInt64) {
        guard state == .ready || state == .handshaking || state == .idle, !drainStopped else { return }
        if draining { drainAgain = true; return }
        draining = true
        continueDrain()
        pump(now: now)
    }

    /// Backpressure from the shell: no SYNC_NEXT_MESSAGE goes out until `resumeMessages`. With
    /// `SessionConfig.holdDrainUntilStored` the session pauses itself after each message it hands
    /// out, so the shell says "stored" before the radio is asked for (and forgets) the next one.
    public func pauseMessages() { messagesPaused = true }

    /// The shell can take the next message (the last one is stored): draining goes on.
    public func resumeMessages(now: UInt64) {
        guard messagesPaused else { return }
        messagesPaused = false
        if draining && !syncOutstanding { continueDrain() }
        pump(now: now)
    }

    /// Ends draining for good (a graceful stop): the SYNC_NEXT_MESSAGE already sent is answered
    /// and its message handed out; no further one is sent.
    public func stopDraining() {
        drainStopped = true
        drainAgain = false
        if let i = queue.firstIndex(where: { if case .drain = $0.purpose { return true }; return false }) {
            queue.remove(at: i)
            syncOutstanding = false
        }
        if !syncOutstanding { draining = false }
    }

    /// True while a SYNC_NEXT_MESSAGE is queued or in flight: its answer may be a message that the
    /// radio no longer keeps.
    public var awaitsMessage: Bool { syncOutstanding }

    /// Sends a direct message with ACK tracking and retries; `.delivery(ticket, …)` reports progress.
    @discardableResult
    public func sendText(to publicKey: [UInt8], text: String, timestamp: UInt32, now: UInt64) throws(SubmitError) -> Ticket {
        try checkUsable()
        guard let key = PublicKey(publicKey) else { throw .badPublicKey }
        let limit = config.sendAttempts > 4 ? CompanionLimits.maxTextLengthHighAttempt : CompanionLimits.maxTextLength
        guard text.utf8.count <= limit else { throw .textTooLong(limit: limit) }
        do {
            _ = try CommandFrame.sendTextMessage(to: key, text: text, timestamp: timestamp, attempt: UInt8(clamping: config.sendAttempts - 1))
        } catch { throw .invalid(error.description) }
        guard queue.count < commandCapacity else { throw .queueFull }
        let t = takeTicket()
        messages.append(OutgoingMessage(ticket: t, publicKey: publicKey, text: text, timestamp: timestamp))
        startWaitingMessages(now: now)
        pump(now: now)
        return t
    }

    /// Sends a channel text (SEND_CHANNEL_TXT_MSG); the radio answers OK, there is no ACK.
    @discardableResult
    public func sendChannelText(index: UInt8, text: String, timestamp: UInt32, now: UInt64) throws(SubmitError) -> Ticket {
        guard text.utf8.count <= CompanionLimits.maxTextLength else { throw .textTooLong(limit: CompanionLimits.maxTextLength) }
        let f: [UInt8]
        do { f = try CommandFrame.sendChannelTextMessage(channel: index, text: text, timestamp: timestamp).bytes } catch {
            throw .invalid(error.description)
        }
        return try submit(frame: f, expecting: .codes(CodeSet(Resp.ok)), now: now)
    }

    /// Sends a request to a remote node; `.request(ticket, …)` reports SENT, then the reply,
    /// a timeout, or that a newer request superseded it.
    @discardableResult
    public func request(_ r: RemoteRequest, now: UInt64) throws(SubmitError) -> Ticket {
        try checkUsable()
        if case .trace = r {} else { guard PublicKey(r.publicKey) != nil else { throw .badPublicKey } }
        guard queue.count < commandCapacity else { throw .queueFull }
        let frame: [UInt8]
        let key = PublicKey(r.publicKey)
        do {
            switch r {
            case .login(_, let password):
                frame = try CommandFrame.sendLogin(key!, password: password).bytes
            case .status:
                frame = CommandFrame.sendStatusRequest(key!).bytes
            case .telemetry:
                frame = CommandFrame.sendTelemetryRequest(key!).bytes
            case .binary(_, let data):
                frame = try CommandFrame.sendBinaryRequest(key!, data: data).bytes
            case .anon(_, let data):
                frame = try CommandFrame.sendAnonRequest(key!, data: data).bytes
            case .pathDiscovery:
                frame = CommandFrame.sendPathDiscoveryRequest(key!).bytes
            case .command(_, let text, let ts, let type):
                guard text.utf8.count <= CompanionLimits.maxTextLength else { throw SubmitError.textTooLong(limit: CompanionLimits.maxTextLength) }
                frame = try CommandFrame.sendTextMessage(to: key!, text: text, timestamp: ts, type: type).bytes
            case .trace(let tag, let auth, let flags, let path):
                frame = try CommandFrame.sendTracePath(tag: tag, authCode: auth, flags: flags, hashes: path).bytes
            }
        } catch let e as SubmitError {
            throw e
        } catch {
            throw .invalid("\(error)")
        }
        let t = takeTicket()
        queue.append(Command(frame: frame, expect: .codes(CodeSet(Resp.sent)), timeout: config.commandTimeout,
                             purpose: .request(t, r)))
        pump(now: now)
        return t
    }
}
