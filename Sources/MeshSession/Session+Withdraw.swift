/// Commands whose owner has given up on them (an operation past its deadline).
extension Session {
    /// Withdraws a ticket's work: a command or remote request still queued never goes to the
    /// radio, a direct message not yet handed to the radio is dropped, a request awaiting its
    /// answer stops waiting. What is already in flight cannot be taken back (the radio answers
    /// in order): it finishes, and its late answer is dropped here. No event names the ticket
    /// afterwards: nobody is handed an answer meant for an operation that has ended.
    public func withdraw(_ ticket: Ticket) {
        func mine(_ c: Command) -> Bool {
            switch c.purpose {
            case .user(let t), .request(let t, _), .dmSend(let t), .dmResetPath(let t): return t == ticket
            case .refresh(let then): return then?.0 == ticket
            case .deviceQuery, .appStart, .clock, .drain: return false
            }
        }
        queue.removeAll(where: mine)
        messages.removeAll { m in
            guard m.ticket == ticket else { return false }
            if case .sending = m.state { return false }  // its SEND is in flight: finishes, then is dropped below
            return true
        }
        if let r = slotRequest, r.ticket == ticket, case .awaiting = r.state { slotRequest = nil }
        if let r = commandRequest, r.ticket == ticket, case .awaiting = r.state { commandRequest = nil }
        traces.removeAll { $0.ticket == ticket }
        if !withdrawn.contains(ticket) { withdrawn.append(ticket) }
        // Bounded: the oldest withdrawn tickets have long finished.
        if withdrawn.count > Self.withdrawnCapacity { withdrawn.removeFirst(withdrawn.count - Self.withdrawnCapacity) }
    }

    static let withdrawnCapacity = 64

    /// Whether an event is about withdrawn work (and so is dropped); its last event also ends the
    /// ticket's withdrawal.
    func isWithdrawn(_ e: SessionEvent) -> Bool {
        guard !withdrawn.isEmpty else { return false }
        let ticket: Ticket
        let last: Bool
        switch e {
        case .reply(let t, _): ticket = t; last = true
        case .delivery(let t, let d):
            ticket = t
            switch d {
            case .sent, .retrying: last = false
            default: last = true
            }
        case .request(let t, let o):
            ticket = t
            if case .sent = o { last = false } else { last = true }
        default: return false
        }
        guard let i = withdrawn.firstIndex(of: ticket) else { return false }
        if last { withdrawn.remove(at: i) }
        return true
    }
}
