import MeshSession
import MeshStore
import MeshDaemonClient

/// Sends the store's outbox through a session, with retries and backoff; sans-I/O (the caller
/// passes monotonic `now` and wall-clock `wall` epoch seconds, and owns the session and store).
///
/// Every attempt the radio takes (SENT) is saved with its outbox item before anything else is
/// done: the ACK code the radio expects (`ackTag`) and, in `nextAttemptAt`, the wall-clock second
/// until which that ACK is awaited (est_timeout × the session's ACK timeout factor, rounded up,
/// plus a second for the clock's truncation). The radio keeps its table of expected ACKs when the
/// daemon goes away and pushes SEND_CONFIRMED to whichever app is connected, so after a restart
/// (or a lost link) an item that was in flight is not sent again before that deadline, and a
/// SEND_CONFIRMED carrying its saved code marks it acknowledged with the radio's round trip.
/// The saved code also stays through the backoff after a round without an ACK, so a late
/// SEND_CONFIRMED for the last attempt still counts.
///
/// A round itself (the attempts, flood on the last, RESET_PATH, ACK matching, the ACK timeouts)
/// is `Session.sendText`'s, the same round the command line's `send` waits on through
/// `OperationPort.sendText`; what is here is only what the daemon adds around rounds: the
/// contact from the store, the item's own timestamp on every round, the saved state, backoff,
/// late SEND_CONFIRMED, ERR 2 as final, and the cap on items in flight.
final class OutboxSender {
    struct Policy {
        /// Total attempts (each round is the session's `sendAttempts`) before giving up.
        var maxAttempts = 9
        /// Backoff after a round without an ACK: base << (round - 1), seconds.
        var retryBaseS: UInt32 = 30
        /// Items handed to the session at once.
        var maxInFlight = 8
        init() {}
    }

    enum Event: Equatable {
        /// The radio took attempt `attempts` (1-based over the item's life).
        case sent(id: UInt64, attempts: UInt8, ackTag: UInt32, ackDeadline: UInt32)
        case acked(id: UInt64, roundTripMs: UInt32)
        /// A round ended without an ACK; the next one starts after `delayS` seconds.
        case retrying(id: UInt64, attempts: UInt8, delayS: UInt32)
        case failed(id: UInt64, DaemonError)
        /// Saving an outcome failed (the item stays as it was on disk).
        case storeFailed(id: UInt64, String)
    }

    let policy: Policy
    /// The session's ACK timing (for the saved deadline).
    let sessionConfig: SessionConfig
    private(set) var tickets: [Ticket: UInt64] = [:]
    private(set) var inFlight: Set<UInt64> = []

    init(policy: Policy, sessionConfig: SessionConfig) {
        self.policy = policy
        self.sessionConfig = sessionConfig
    }

    /// The wall-clock second until which the ACK of an attempt sent at `wall` is awaited.
    func ackDeadline(wall: UInt32, estimatedTimeout est: UInt32) -> UInt32 {
        let ms = sessionConfig.ackWait(estimatedTimeout: est)
        let s = UInt32(clamping: (ms + 999) / 1000)
        return wall &+ s &+ 1
    }

    /// Hands due items to the session: those never sent, and those whose saved ACK deadline or
    /// backoff (`nextAttemptAt`) has passed. Call `session`'s pump afterwards.
    func send(session s: Session, store: RadioStore, now: UInt64, wall: UInt32) -> [Event] {
        var events: [Event] = []
        for item in store.outbox where !inFlight.contains(item.messageId) && item.nextAttemptAt <= wall {
            guard inFlight.count < policy.maxInFlight else { break }
            let peer = item.thread.peer
            guard let contact = store.contact(prefix: peer) else {
                events += finish(item.messageId, store: store, wall: wall,
                                 DaemonError(.notFound, "no contact with key \(peer) on the radio"))
                continue
            }
            do {
                let t = try s.sendText(to: contact.publicKey, text: String(decoding: item.text, as: UTF8.self),
                                       timestamp: item.senderTimestamp, now: now)
                tickets[t] = item.messageId
                inFlight.insert(item.messageId)
            } catch {
                events += finish(item.messageId, store: store, wall: wall, DaemonError(.usage, "cannot send: \(error)"))
            }
        }
        return events
    }

    /// A delivery event of the session; nil when the ticket is not an outbox item's.
    func delivery(_ t: Ticket, _ d: Delivery, store: RadioStore, wall: UInt32) -> [Event]? {
        guard let id = tickets[t] else { return nil }
        switch d {
        case .sent(_, _, let est, let tag):
            // Saved first: from here on a restart waits for this ACK instead of sending again.
            let attempts = (store.outboxItem(id: id)?.attempts ?? 0) &+ 1
            let deadline = ackDeadline(wall: wall, estimatedTimeout: est)
            let sent = Event.sent(id: id, attempts: attempts, ackTag: tag, ackDeadline: deadline)
            do { try store.recordSent(id: id, attempts: attempts, ackTag: tag, nextAttemptAt: deadline, now: wall) } catch {
                return [.storeFailed(id: id, "\(error)"), sent]
            }
            return [sent]
        case .retrying:
            return []
        case .acked(_, let rtt):
            forget(t, id)
            return acked(id, roundTripMs: rtt, store: store, wall: wall)
        case .failed:
            forget(t, id)
            guard var item = store.outboxItem(id: id) else { return [] }
            if Int(item.attempts) >= policy.maxAttempts {
                return finish(id, store: store, wall: wall, DaemonError(.timeout, "no ACK after \(item.attempts) attempts"))
            }
            let round = max(1, Int(item.attempts) / max(1, sessionConfig.sendAttempts))
            let delay = policy.retryBaseS << UInt32(min(round - 1, 8))
            item.nextAttemptAt = wall &+ delay
            var events: [Event] = []
            do { try store.updateOutbox(item) } catch { events.append(.storeFailed(id: id, "\(error)")) }
            return events + [.retrying(id: id, attempts: item.attempts, delayS: delay)]
        case .refused(let code):
            forget(t, id)
            if code == 2 {
                return finish(id, store: store, wall: wall, DaemonError(.notFound, "the radio does not know the contact (ERR 2)"))
            }
            guard var item = store.outboxItem(id: id) else { return [] }
            item.attempts &+= 1
            item.nextAttemptAt = wall &+ policy.retryBaseS
            var events: [Event] = []
            do { try store.updateOutbox(item) } catch { events.append(.storeFailed(id: id, "\(error)")) }
            if Int(item.attempts) >= policy.maxAttempts {
                events += finish(id, store: store, wall: wall, DaemonError(.refused, "the radio refused the message (ERR \(code))"))
            }
            return events
        case .timeout, .cancelled:
            // The link went away or the radio did not answer: the item stays, with the ACK code
            // and deadline of its last attempt, for the next connection.
            forget(t, id)
            return []
        }
    }

    /// A SEND_CONFIRMED the session did not match (it was sent before a restart or a lost link):
    /// if an outbox item saved this ACK code, it is acknowledged.
    func confirmed(ack: UInt32, roundTripMs: UInt32, store: RadioStore, wall: UInt32) -> [Event]? {
        guard let item = store.outboxItem(ackTag: ack) else { return nil }
        let id = item.messageId
        // The session may hold a newer round of it; its later events no longer touch the item.
        for (t, i) in tickets where i == id { forget(t, id) }
        return acked(id, roundTripMs: roundTripMs, store: store, wall: wall)
    }

    /// The session is gone: its tickets are void; every item stays in the store.
    func sessionClosed() {
        tickets.removeAll()
        inFlight.removeAll()
    }

    private func forget(_ t: Ticket, _ id: UInt64) {
        tickets[t] = nil
        inFlight.remove(id)
    }

    private func acked(_ id: UInt64, roundTripMs: UInt32, store: RadioStore, wall: UInt32) -> [Event] {
        do { try store.recordAcked(id: id, roundTripMs: roundTripMs, now: wall) } catch {
            return [.storeFailed(id: id, "\(error)"), .acked(id: id, roundTripMs: roundTripMs)]
        }
        return [.acked(id: id, roundTripMs: roundTripMs)]
    }

    private func finish(_ id: UInt64, store: RadioStore, wall: UInt32, _ reason: DaemonError) -> [Event] {
        do { try store.recordFailed(id: id, now: wall) } catch { return [.storeFailed(id: id, "\(error)"), .failed(id: id, reason)] }
        return [.failed(id: id, reason)]
    }
}
