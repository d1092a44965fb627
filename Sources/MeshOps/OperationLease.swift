import MeshSession

/// One operation's share of the daemon's `SessionPort`: everything the operation submits is
/// recorded here, so that when its time is up the shell cancels it (`cancel`): its commands and
/// requests still queued never reach the radio, its late answers are dropped by the session
/// (`Session.withdraw`), its waits end with the error, and it can submit nothing more.
public final class OperationLease: OperationPort {
    let port: SessionPort
    /// Tickets the operation submitted (withdrawn together on `cancel`; at most its own commands).
    var tickets: [Ticket] = []
    var observers: [Int] = []
    /// Set by `cancel`: every later call fails with it.
    public private(set) var cancelled: ClientError? = nil

    public init(_ port: SessionPort) { self.port = port }

    public var session: Session { port.session }
    public var now: UInt64 { port.now }

    public func submit<T>(_ body: (Session, UInt64) throws(Session.SubmitError) -> T) throws(ClientError) -> T {
        if let e = cancelled { throw e }
        let r = try port.submit(body)
        if let t = r as? Ticket { tickets.append(t) }
        return r
    }

    public func reply(to ticket: Ticket) async throws(ClientError) -> Reply {
        if let e = cancelled { throw e }
        return try await port.reply(to: ticket)
    }

    public func delivery(of ticket: Ticket) async throws(ClientError) -> Delivery {
        if let e = cancelled { throw e }
        return try await port.delivery(of: ticket)
    }

    public func outcome(of ticket: Ticket) async throws(ClientError) -> RequestOutcome {
        if let e = cancelled { throw e }
        return try await port.outcome(of: ticket)
    }

    public func drained(by deadline: UInt64?) async throws(ClientError) {
        if let e = cancelled { throw e }
        try await port.drained(by: deadline)
        if let e = cancelled { throw e }
    }

    public func sleep(until deadline: UInt64) async throws(ClientError) {
        if let e = cancelled { throw e }
        try await port.sleep(until: deadline)
        if let e = cancelled { throw e }
    }

    public func observe(_ handler: @escaping (SessionEvent) -> Void) -> Int {
        let token = port.observe(handler)
        observers.append(token)
        return token
    }

    public func stopObserving(_ token: Int) {
        observers.removeAll { $0 == token }
        port.stopObserving(token)
    }

    /// Cancels the operation: withdraws what it has outstanding at the radio and ends its waits
    /// on them with `error` (its steps run at the shell's next `runReady`).
    public func cancel(_ error: ClientError) {
        guard cancelled == nil else { return }
        cancelled = error
        for t in tickets { port.withdraw(t, error) }
        tickets.removeAll()
        for o in observers { port.stopObserving(o) }
        observers.removeAll()
    }
}

extension SessionPort {
    /// Withdraws one ticket (an operation cancelled): the session drops its work and its late
    /// answers, and a wait on it ends with `error`.
    public func withdraw(_ t: Ticket, _ error: ClientError) {
        owned[t] = nil
        arrived[t] = nil
        session.withdraw(t)
        if let c = waiting.removeValue(forKey: t) { c.resume(returning: .failure(error)) }
    }
}
