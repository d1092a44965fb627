/// The companion hub's share of the radio, sans-I/O: each client's requests in its own bounded
/// FIFO, in the order it sent them, and a turn at the radio for one client at a time.
///
/// - **Order.** A client's requests are answered in the order it sent them, as the firmware does:
///   a request the daemon answers itself (`local`: DEVICE_QUERY, APP_START, SYNC_NEXT_MESSAGE, a
///   refusal) waits behind that client's own requests still at the radio or waiting for it.
/// - **Fairness.** One hub request is at the radio at a time (`radioBusy`), and the daemon hands
///   out the turn only when the radio has none of its own work waiting (its sync, keepalive,
///   outbox), so those always go first. The turn goes round the clients (round robin); each
///   client also has a request rate (`ratePerSecond`, bursts of `burst`): a client over its share
///   waits for its next token while another client has a request waiting, the others do not. A
///   client alone (nobody else has a request waiting) is not held back: it gets the radio at
///   full speed, its share running dry meanwhile, so that when others come it waits its turns.
/// - **Contacts.** GET_CONTACTS (`contacts`) is answered by the daemon from its copy of the
///   radio's table when that copy is current (`HubContacts`) and the client has a token of its
///   share, in its client's order like a local request; otherwise it goes to the radio in its turn.
/// - **Bounds.** At most `capacity` requests wait per client; while its queue is full the hub does
///   not read that client's socket (backpressure through poll), so a client that floods only
///   fills its own socket buffers.
public struct HubQueue {
    /// What the daemon does with a request when its turn comes: send it to the radio, answer it
    /// itself, or refuse it (its class is not allowed; ERR).
    public enum Kind: Equatable {
        case radio, local, refused, contacts
        /// Waits for the radio's turn (GET_CONTACTS does when the daemon's copy is not current).
        var atRadio: Bool { self == .radio || self == .contacts }
    }

    public struct Request: Equatable {
        public var frame: [UInt8]
        public var kind: Kind
        public init(frame: [UInt8], kind: Kind) { self.frame = frame; self.kind = kind }
    }

    /// Requests that may wait per client (overflow policy: the hub stops reading that client).
    public static let capacity = 32
    /// Radio requests per second a client may send on average (`burst` at once).
    public var ratePerSecond: UInt64 = 20
    public var burst: UInt64 = 64

    public final class Client {
        var waiting: [Request] = []
        /// A request of this client's is at the radio.
        var inFlight = false
        /// Milliseconds of credit: a radio request costs `1000 / ratePerSecond`.
        var credit: UInt64
        var creditAt: UInt64
        init(credit: UInt64, now: UInt64) { self.credit = credit; creditAt = now }
    }

    public private(set) var clients: [Int: Client] = [:]
    /// Clients in the order their turns go round.
    private var order: [Int] = []
    private var nextTurn = 0
    /// A hub request is at the radio.
    public private(set) var radioBusy = false

    public init(ratePerSecond: UInt64 = 20, burst: UInt64 = 64) {
        self.ratePerSecond = max(1, ratePerSecond)
        self.burst = max(1, burst)
    }

    private var cost: UInt64 { 1000 / ratePerSecond }
    private var creditCap: UInt64 { cost * burst }

    public mutating func add(_ id: Int, now: UInt64) {
        guard clients[id] == nil else { return }
        clients[id] = Client(credit: creditCap, now: now)
        order.append(id)
    }

    /// Forgets a client; its request at the radio (if any) still finishes, unanswered.
    public mutating func remove(_ id: Int) {
        guard clients.removeValue(forKey: id) != nil, let i = order.firstIndex(of: id) else { return }
        order.remove(at: i)
        if nextTurn > i { nextTurn -= 1 }
        if nextTurn >= order.count { nextTurn = 0 }
    }

    /// Requests a client may still queue.
    public func room(_ id: Int) -> Int {
        guard let c = clients[id] else { return 0 }
        return Self.capacity - c.waiting.count
    }

    public func waitingCount(_ id: Int) -> Int { clients[id]?.waiting.count ?? 0 }
    public func inFlight(_ id: Int) -> Bool { clients[id]?.inFlight ?? false }

    /// Queues a request (the caller checked `room`); false when the queue is full.
    @discardableResult
    public mutating func push(_ id: Int, _ r: Request, now: UInt64) -> Bool {
        if clients[id] == nil { add(id, now: now) }
        guard let c = clients[id], c.waiting.count < Self.capacity else { return false }
        c.waiting.append(r)
        return true
    }

    /// The client's next request if the daemon answers it itself and nothing of the client's is
    /// before it at the radio.
    /// `contacts`: GET_CONTACTS may be answered locally now (the daemon's copy is current); each
    /// such answer costs the client a token of its share, as a turn at the radio does, so a client
    /// cannot have the daemon write listings without bound (past its share it waits for the
    /// radio's turn).
    public mutating func takeLocal(_ id: Int, contacts: Bool = false, now: UInt64 = 0) -> Request? {
        guard let c = clients[id], !c.inFlight, let first = c.waiting.first else { return nil }
        if first.kind == .contacts {
            guard contacts else { return nil }
            refill(c, now: now)
            guard c.credit >= cost else { return nil }
            c.credit -= cost
        } else if first.kind.atRadio {
            return nil
        }
        return c.waiting.removeFirst()
    }

    /// Radio requests at the head of a client's queue, taken without a turn (the link is down: each
    /// gets its error at once, in order).
    public mutating func takeRadioHead(_ id: Int) -> Request? {
        guard let c = clients[id], !c.inFlight, let first = c.waiting.first, first.kind.atRadio else { return nil }
        return c.waiting.removeFirst()
    }

    /// The client has a request waiting for the radio's turn.
    private static func wants(_ c: Client) -> Bool { !c.inFlight && c.waiting.first?.kind.atRadio == true }

    /// Whether a client other than `id` has a request waiting for the radio.
    private func othersWant(_ id: Int) -> Bool { clients.contains { $0.key != id && Self.wants($0.value) } }

    /// The next client whose turn it is at the radio and its request (marked in flight and
    /// charged to its rate), or nil: a hub request is at the radio already, or no client has one
    /// due. A client over its share gets the turn when no other client wants the radio.
    public mutating func nextRadio(now: UInt64) -> (client: Int, request: Request)? {
        guard !radioBusy, !order.isEmpty else { return nil }
        for step in 0..<order.count {
            let id = order[(nextTurn + step) % order.count]
            guard let c = clients[id], Self.wants(c) else { continue }
            refill(c, now: now)
            guard c.credit >= cost || !othersWant(id) else { continue }
            c.credit = c.credit >= cost ? c.credit - cost : 0
            c.inFlight = true
            radioBusy = true
            nextTurn = (nextTurn + step + 1) % order.count
            return (id, c.waiting.removeFirst())
        }
        return nil
    }

    /// The client's request at the radio is done (answered, timed out, cancelled, or refused by
    /// the session); the client may be gone.
    public mutating func answered(_ id: Int) {
        radioBusy = false
        clients[id]?.inFlight = false
    }

    /// The request at the radio belongs to nobody any more (its client left): the turn is free.
    public mutating func releaseRadio() { radioBusy = false }

    /// When a client now held back by its rate gets its next token (nil: nobody waits for one).
    public func nextDeadline(now: UInt64) -> UInt64? {
        guard !radioBusy else { return nil }
        var next: UInt64? = nil
        for (id, c) in clients where Self.wants(c) {
            let credit = min(creditCap, c.credit + (now > c.creditAt ? now - c.creditAt : 0))
            let at = credit >= cost || !othersWant(id) ? now : now + (cost - credit)
            next = min(next ?? at, at)
        }
        return next
    }

    private func refill(_ c: Client, now: UInt64) {
        guard now > c.creditAt else { return }
        c.credit = min(creditCap, c.credit + (now - c.creditAt))
        c.creditAt = now
    }
}
