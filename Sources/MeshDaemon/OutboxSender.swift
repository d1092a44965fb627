import MeshSession
import MeshOps
import MeshStore
import MeshDaemonClient
import MeshLink

/// Sends the store's outbox through the daemon's session, with retries and backoff: each round is
/// an operation on the daemon's `OperationJobs` over its `SessionPort` (the caller owns both, and
/// the store); its events go to `emit` as they happen.
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
/// is the command line's `send`'s: `OperationPort.sendText` over `Session.sendText`; what is
/// here is only what the daemon adds around rounds: the
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
    /// Wall-clock epoch seconds (the saved deadlines and backoff are in them).
    let wallClock: () -> UInt32
    /// Where the sender's events go as they happen (the daemon logs and publishes them).
    var emit: ([Event]) -> Void = { _ in }
    /// Items with a round running on the current session (at most `maxInFlight`).
    private(set) var inFlight: Set<UInt64> = []
    /// Each item's latest round (its generation). A round's progress and end are the item's until
    /// the item is settled by something else (a late SEND_CONFIRMED) or a newer round starts; a
    /// lost link does not void them: what the radio said before the link went (a SENT, an ACK
    /// read in the same burst) is still saved when the round's step runs.
    private(set) var latest: [UInt64: UInt64] = [:]
    private var generation: UInt64 = 0

    init(policy: Policy, sessionConfig: SessionConfig, wallClock: @escaping () -> UInt32) {
        self.policy = policy
        self.sessionConfig = sessionConfig
        self.wallClock = wallClock
    }

    /// The wall-clock second until which the ACK of an attempt sent at `wall` is awaited.
    func ackDeadline(wall: UInt32, estimatedTimeout est: UInt32) -> UInt32 {
        let ms = sessionConfig.ackWait(estimatedTimeout: est)
        let s = UInt32(clamping: (ms + 999) / 1000)
        return wall &+ s &+ 1
    }

    /// Starts a round for each due item: those never sent, and those whose saved ACK deadline or
    /// backoff (`nextAttemptAt`) has passed. Each round is the command line's own
    /// (`OperationPort.sendText`), run as an operation on `jobs` through `port`; its first step
    /// runs at the shell's next `jobs.runReady()`.
    func send(port: any OperationPort, jobs: OperationJobs, store: RadioStore) {
        let wall = wallClock()
        var events: [Event] = []
        for item in store.outbox where !inFlight.contains(item.messageId) && item.nextAttemptAt <= wall {
            guard inFlight.count < policy.maxInFlight else { break }
            let peer = item.thread.peer
            guard let contact = store.contact(prefix: peer) else {
                events += finish(item.messageId, store: store, wall: wall,
                                 DaemonError(.notFound, "no contact with key \(peer) on the radio"))
                continue
            }
            generation &+= 1
            let id = item.messageId, g = generation
            inFlight.insert(id)
            latest[id] = g
            let key = contact.publicKey, text = String(decoding: item.text, as: UTF8.self), ts = item.senderTimestamp
            jobs.start({ [unowned self] () async throws(ClientError) -> Delivery in
                try await port.sendText(to: key, text: text, timestamp: ts, wait: true) { d in
                    // Saved first: from here on a restart waits for this ACK instead of sending again.
                    if case .sent = d, self.latest[id] == g { self.emit(self.sent(id, d, store: store)) }
                }
            }) { [unowned self] result in
                guard self.latest[id] == g else { return }
                self.latest[id] = nil
                self.inFlight.remove(id)
                switch result {
                case .success(let d):
                    self.emit(self.ended(id, d, store: store))
                case .failure(let e) where e.kind == .link:
                    // The link went away: the item stays, with the ACK code and deadline of its
                    // last attempt, for the next connection.
                    break
                case .failure(let e):
                    self.emit(self.finish(id, store: store, wall: self.wallClock(), DaemonError(.usage, "cannot send: \(e.message)")))
                }
            }
        }
        emit(events)
    }

    /// The radio took an attempt: saved with the item before anything else.
    func sent(_ id: UInt64, _ d: Delivery, store: RadioStore) -> [Event] {
        guard case .sent(_, _, let est, let tag) = d else { return [] }
        let wall = wallClock()
        let attempts = (store.outboxItem(id: id)?.attempts ?? 0) &+ 1
        let deadline = ackDeadline(wall: wall, estimatedTimeout: est)
        let sent = Event.sent(id: id, attempts: attempts, ackTag: tag, ackDeadline: deadline)
        do { try store.recordSent(id: id, attempts: attempts, ackTag: tag, nextAttemptAt: deadline, now: wall) } catch {
            return [.storeFailed(id: id, "\(error)"), sent]
        }
        return [sent]
    }

    /// The end of a round.
    func ended(_ id: UInt64, _ d: Delivery, store: RadioStore) -> [Event] {
        let wall = wallClock()
        switch d {
        case .sent, .retrying:
            return []
        case .acked(_, let rtt):
            return acked(id, roundTripMs: rtt, store: store, wall: wall)
        case .failed:
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
            return []
        }
    }

    /// A SEND_CONFIRMED the session did not match (it was sent before a restart or a lost link):
    /// if an outbox item saved this ACK code, it is acknowledged.
    func confirmed(ack: UInt32, roundTripMs: UInt32, store: RadioStore, wall: UInt32) -> [Event]? {
        guard let item = store.outboxItem(ackTag: ack) else { return nil }
        let id = item.messageId
        // The session may hold a newer round of it; its later events no longer touch the item.
        latest[id] = nil
        inFlight.remove(id)
        return acked(id, roundTripMs: roundTripMs, store: store, wall: wall)
    }

    /// The session is gone: its items may start new rounds on the next one (every item stays in
    /// the store); what its rounds read before it went is still saved when their steps run.
    func sessionClosed() {
        inFlight.removeAll()
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
