import MeshSession

/// What an operation needs of a conversation with a radio, and nothing more: it submits commands
/// through the `Session` and waits for what becomes of them. An operation never opens a
/// descriptor, never reads a clock of its own and never writes a byte: the shell that owns the
/// link does, and feeds the session's replies and pushes back through the port.
///
/// Two shells drive operations through it:
/// - the command line (`Radio`): one operation on its own link; each wait spins its poll loop;
/// - the daemon (`SessionPort`): any number at once on the daemon's own session, interleaved with
///   its sync, the hub and MQTT, on its one poll loop; a wait suspends the operation until the
///   loop hands it its reply (`OperationJobs` runs the operations' steps on that loop's thread).
public protocol OperationPort: AnyObject {
    /// The conversation: SELF_INFO, DEVICE_INFO and the protocol the radio speaks are read here;
    /// commands go in through `submit` (so that the shell writes them).
    var session: Session { get }
    /// The shell's monotonic clock (milliseconds).
    var now: UInt64 { get }
    /// Submits through the session; the shell writes what the session wants sent.
    func submit<T>(_ body: (Session, UInt64) throws(Session.SubmitError) -> T) throws(ClientError) -> T
    /// Waits for a submitted command's reply (`.cancelled` is thrown as a lost link).
    func reply(to ticket: Ticket) async throws(ClientError) -> Reply
    /// Waits for the next step of a direct message (sent, retrying, acked, failed...).
    func delivery(of ticket: Ticket) async throws(ClientError) -> Delivery
    /// Waits for the next step of a remote request (sent, then its reply or its end).
    func outcome(of ticket: Ticket) async throws(ClientError) -> RequestOutcome
    /// Waits until the session has emptied the radio's message queue (or until `deadline`; each
    /// SYNC_NEXT_MESSAGE has the command timeout, so a radio gone quiet ends a drain anyway).
    func drained(by deadline: UInt64?) async throws(ClientError)
    /// Waits until `deadline` (a listening window: discovery answers, heard repeats).
    func sleep(until deadline: UInt64) async throws(ClientError)
    /// Every session event from now on goes to `handler` too (after the shell's own handling).
    func observe(_ handler: @escaping (SessionEvent) -> Void) -> Int
    func stopObserving(_ token: Int)
}

extension OperationPort {
    /// Submits one command and waits for its reply.
    public func call(_ frame: [UInt8], expecting: Session.Expectation, timeout: UInt64? = nil) async throws(ClientError) -> Reply {
        let t = try submit { s, now throws(Session.SubmitError) in try s.submit(frame: frame, expecting: expecting, timeout: timeout, now: now) }
        return try await reply(to: t)
    }

    public func listContacts(since: UInt32? = nil) async throws(ClientError) -> Reply {
        let t = try submit { s, now throws(Session.SubmitError) in try s.listContacts(since: since, now: now) }
        return try await reply(to: t)
    }

    /// Sends a direct message and waits until it is acknowledged or given up (`wait == false`:
    /// until the radio took the first attempt); `progress` sees each attempt.
    public func sendText(to key: [UInt8], text: String, timestamp: UInt32, wait: Bool,
                         progress: (Delivery) -> Void = { _ in }) async throws(ClientError) -> Delivery {
        let t = try submit { s, now throws(Session.SubmitError) in try s.sendText(to: key, text: text, timestamp: timestamp, now: now) }
        while true {
            let d = try await delivery(of: t)
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
    public func request(_ r: RemoteRequest, progress: (RequestOutcome) -> Void = { _ in }) async throws(ClientError) -> RequestOutcome {
        let t = try submit { s, now throws(Session.SubmitError) in try s.request(r, now: now) }
        while true {
            let o = try await outcome(of: t)
            if case .sent = o { progress(o); continue }
            return o
        }
    }

    /// Asks the radio for its queued messages and waits until the queue is empty.
    public func drain() async throws(ClientError) {
        _ = try submit { s, now throws(Session.SubmitError) in s.drain(now: now) }
        try await drained(by: nil)
    }

    /// Waits until a drain under way (if any) has emptied the radio's queue.
    public func finishDrain() async throws(ClientError) {
        try await drained(by: nil)
    }
}
