import MeshSession

/// The daemon's shell for operations: the daemon's own session, shared with its sync, its outbox,
/// the hub and MQTT. Any number of operations wait here at once; none of them blocks anything.
///
/// The shell's side, in its loop:
/// - `handle(_:)` each session event: a reply, delivery or request outcome of a ticket an operation
///   submitted is taken (true) and resumes that operation; every event goes to the observers;
/// - `tick(now:)` at `nextDeadline` (listening windows, drain waits);
/// - `jobs.runReady()` after either, then write the session's frames;
/// - `close(_:)` when the session ends: every operation waiting gets that error.
public final class SessionPort: OperationPort {
    public let session: Session
    let clock: () -> UInt64
    /// Steps of the operations waiting here run on `jobs` (the shell's thread).
    public let jobs: OperationJobs

    enum Arrival { case reply(Reply), delivery(Delivery), outcome(RequestOutcome) }
    /// Tickets submitted through this port and not finished, with their command frame (nil for
    /// messages and requests, whose frames the session builds).
    var owned: [Ticket: [UInt8]?] = [:]
    var arrived: [Ticket: [Arrival]] = [:]
    var waiting: [Ticket: CheckedContinuation<Result<Arrival, ClientError>, Never>] = [:]
    var drainWaiters: [(deadline: UInt64?, resume: CheckedContinuation<Result<Void, ClientError>, Never>)] = []
    var sleepers: [(deadline: UInt64, resume: CheckedContinuation<Result<Void, ClientError>, Never>)] = []
    var observers = SessionObservers()
    var closedError: ClientError? = nil
    /// A command an operation submitted has finished: its frame and the radio's answer (the shell
    /// keeps its own records in step, e.g. a contact removed or a contacts listing).
    public var onCommandFinished: ([UInt8], Reply) -> Void = { _, _ in }

    public init(session: Session, jobs: OperationJobs, clock: @escaping () -> UInt64) {
        self.session = session
        self.jobs = jobs
        self.clock = clock
    }

    public var now: UInt64 { clock() }

    /// Whether an operation waits on this ticket (so the shell leaves the event to the port).
    public func owns(_ t: Ticket) -> Bool { owned[t] != nil }

    public func submit<T>(_ body: (Session, UInt64) throws(Session.SubmitError) -> T) throws(ClientError) -> T {
        if let e = closedError { throw e }
        let r: T
        do { r = try body(session, clock()) } catch { throw error.clientError }
        if let t = r as? Ticket { owned[t] = .some(session.frame(of: t)) }
        return r
    }

    // MARK: waits

    public func reply(to ticket: Ticket) async throws(ClientError) -> Reply {
        guard case .reply(let r) = try await next(ticket) else { throw Self.mixedUp }
        if r == .cancelled { throw lost }
        return r
    }

    public func delivery(of ticket: Ticket) async throws(ClientError) -> Delivery {
        guard case .delivery(let d) = try await next(ticket) else { throw Self.mixedUp }
        if case .cancelled = d { throw lost }
        return d
    }

    public func outcome(of ticket: Ticket) async throws(ClientError) -> RequestOutcome {
        guard case .outcome(let o) = try await next(ticket) else { throw Self.mixedUp }
        if o == .cancelled { throw lost }
        return o
    }

    func next(_ t: Ticket) async throws(ClientError) -> Arrival {
        if var queued = arrived[t], !queued.isEmpty {
            let a = queued.removeFirst()
            arrived[t] = queued.isEmpty ? nil : queued
            return a
        }
        if let e = closedError { throw e }
        let r = await withCheckedContinuation { waiting[t] = $0 }
        return try r.get()
    }

    public func drained(by deadline: UInt64?) async throws(ClientError) {
        if let e = closedError { throw e }
        if !session.draining { return }
        if let d = deadline, clock() >= d { return }
        let r = await withCheckedContinuation { drainWaiters.append((deadline, $0)) }
        try r.get()
    }

    public func sleep(until deadline: UInt64) async throws(ClientError) {
        if let e = closedError { throw e }
        if clock() >= deadline { return }
        let r = await withCheckedContinuation { sleepers.append((deadline, $0)) }
        try r.get()
    }

    public func observe(_ handler: @escaping (SessionEvent) -> Void) -> Int { observers.add(handler) }

    public func stopObserving(_ token: Int) { observers.remove(token) }

    // MARK: the shell's side

    /// One session event. True when it belonged to an operation (the shell does nothing more with it).
    @discardableResult
    public func handle(_ e: SessionEvent) -> Bool {
        var taken = false
        switch e {
        case .reply(let t, let r):
            if let frame = owned.removeValue(forKey: t) {
                if let f = frame { onCommandFinished(f, r) }
                arrive(t, .reply(r))
                taken = true
            }
        case .delivery(let t, let d):
            if owned[t] != nil {
                switch d {
                case .sent, .retrying: break
                default: owned[t] = nil
                }
                arrive(t, .delivery(d))
                taken = true
            }
        case .request(let t, let o):
            if owned[t] != nil {
                if case .sent = o {} else { owned[t] = nil }
                arrive(t, .outcome(o))
                taken = true
            }
        default:
            break
        }
        observers.notify(e)
        if !drainWaiters.isEmpty && !session.draining { resumeDrainWaiters(all: true, now: 0) }
        return taken
    }

    func arrive(_ t: Ticket, _ a: Arrival) {
        if let c = waiting.removeValue(forKey: t) {
            c.resume(returning: .success(a))
        } else {
            arrived[t, default: []].append(a)
        }
    }

    /// Ends the waits whose time has come.
    public func tick(now: UInt64) {
        if sleepers.contains(where: { now >= $0.deadline }) {
            let due = sleepers.filter { now >= $0.deadline }
            sleepers.removeAll { now >= $0.deadline }
            for s in due { s.resume.resume(returning: .success(())) }
        }
        resumeDrainWaiters(all: !session.draining, now: now)
    }

    func resumeDrainWaiters(all: Bool, now: UInt64) {
        let due = drainWaiters.filter { w in all || w.deadline.map { now >= $0 } ?? false }
        guard !due.isEmpty else { return }
        drainWaiters.removeAll { w in all || w.deadline.map { now >= $0 } ?? false }
        for w in due { w.resume.resume(returning: .success(())) }
    }

    /// The earliest time `tick` has something to do.
    public var nextDeadline: UInt64? {
        let times = sleepers.map(\.deadline) + drainWaiters.compactMap(\.deadline)
        return times.min()
    }

    /// Operations waiting here, or with an answer not yet taken.
    public var isIdle: Bool { waiting.isEmpty && sleepers.isEmpty && drainWaiters.isEmpty }

    /// The session ended: every wait ends with `error`, and nothing more can be submitted here.
    public func close(_ error: ClientError) {
        guard closedError == nil else { return }
        closedError = error
        let w = waiting
        waiting.removeAll()
        for (_, c) in w { c.resume(returning: .failure(error)) }
        let d = drainWaiters
        drainWaiters.removeAll()
        for x in d { x.resume.resume(returning: .failure(error)) }
        let s = sleepers
        sleepers.removeAll()
        for x in s { x.resume.resume(returning: .failure(error)) }
        owned.removeAll()
        arrived.removeAll()
        observers.removeAll()
    }

    var lost: ClientError { closedError ?? .link("the link to the radio was lost: try again once the daemon has reconnected.") }
    static let mixedUp = ClientError(.internal, "an operation's answer arrived for another kind of command; this is a bug.")
}
