import Glibc
import MeshLink
import MeshStore

// The daemon's own parts of its one poll loop (MeshLink's `PollLoop`), beside the API server, the
// hub (MeshHub), the MQTT connections (MeshBridge), the hooks (`HookRunner`) and the systemd
// notifier: each has its descriptors, its readiness handler and its deadline; the loop names none
// of them. None blocks: the link is non-blocking, hooks are reaped with WNOHANG, the store is
// retried on a timer when it cannot take a message.

/// The radio owner: the link's descriptor, and the session's sync, drain, keepalive and battery
/// checks, a stop or reconnect waiting for the message in flight. Its tick first writes out what
/// the other parts asked of the radio since the last turn (`Daemon.pump`).
final class RadioPart: PollPart {
    unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }

    func pollDescriptors(into fds: inout [pollfd]) {
        if let c = daemon.connector { c.pollDescriptors(into: &fds); return }
        guard let link = daemon.link else { return }
        fds.append(pollfd(fd: link.fd, events: Int16(POLLIN) | (link.hasPendingOutput ? Int16(POLLOUT) : 0), revents: 0))
    }

    func handle(_ p: pollfd, now: UInt64) -> Bool {
        if let c = daemon.connector {
            guard c.handle(p, now: now) else { return false }
            daemon.connectorProgress(now: now)
            return true
        }
        guard let link = daemon.link, p.fd == link.fd else { return false }
        daemon.linkReady(p.revents)
        return true
    }

    func tick(now: UInt64) -> UInt64? {
        daemon.pump(now: now)
        return daemon.radioTimers(now: now)
    }
}

/// The operations run for API, hub and MQTT clients (their deadlines, their clients gone) and the
/// hub clients' turns at the radio; it runs after the parts those clients come through.
final class OperationsPart: PollPart {
    unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }
    func tick(now: UInt64) -> UInt64? { daemon.operationsTimers(now: now) }
}

/// Serial hotplug: the kernel's or udev's device events; a matching `add` while the link is down
/// reconnects at once (DaemonHotplug.swift).
final class HotplugPart: PollPart {
    unowned let daemon: Daemon
    var monitor: HotplugMonitor? = nil
    init(_ daemon: Daemon) { self.daemon = daemon }

    func pollDescriptors(into fds: inout [pollfd]) {
        if let m = monitor { fds.append(pollfd(fd: m.fd, events: Int16(POLLIN), revents: 0)) }
    }

    func handle(_ p: pollfd, now: UInt64) -> Bool {
        guard let m = monitor, p.fd == m.fd else { return false }
        daemon.hotplugReady(now: now)
        return true
    }

    func tick(now: UInt64) -> UInt64? { nil }
}

/// The store when it could not take a received message (a full disk, a failing inbox): tried
/// again every few seconds, never in a loop (DaemonMessages.swift, `retryStore`).
final class StorePart: PollPart {
    unowned let daemon: Daemon
    /// When to try the store again (held messages, the inbox); 0: nothing waits.
    var retryAt: UInt64 = 0
    init(_ daemon: Daemon) { self.daemon = daemon }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }

    func tick(now: UInt64) -> UInt64? {
        guard daemon.store != nil, !daemon.storeTakesMessages else { return nil }
        if retryAt == 0 { retryAt = now + 5_000 }
        if now >= retryAt { daemon.retryStore(now: now) }
        return retryAt != 0 ? retryAt : nil
    }
}

/// The outbox: direct messages sent, retried and given up on their schedule while the radio is
/// ready (`OutboxSender`, whose retry times are wall-clock seconds). Its turn sends what is due
/// while a slot is free (every turn of the loop asks: a round's end, the radio becoming ready, a
/// new message each wake the loop anyway), and it asks for a wake-up only at the next item's
/// time: an empty outbox, or one whose items are all in flight, asks for none.
final class OutboxPart: PollPart {
    unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }

    func tick(now: UInt64) -> UInt64? {
        guard daemon.phase == .ready, daemon.session != nil, let store = daemon.store, !store.outbox.isEmpty else { return nil }
        let sender = daemon.outbox
        func room() -> Bool { sender.inFlight.count < sender.policy.maxInFlight }
        var wallMS = Self.wallClockMilliseconds()
        if room() && store.outbox.contains(where: { !sender.inFlight.contains($0.messageId) && $0.nextAttemptAt <= UInt32(truncatingIfNeeded: wallMS / 1000) }) {
            daemon.sendOutbox(now: now)
            wallMS = Self.wallClockMilliseconds()
        }
        // Due items beyond the slots wait for a round to end (its reply wakes the loop).
        guard room() else { return nil }
        let wall = UInt32(truncatingIfNeeded: wallMS / 1000)
        guard let next = store.outbox.filter({ !sender.inFlight.contains($0.messageId) && $0.nextAttemptAt > wall }).map(\.nextAttemptAt).min() else {
            return nil
        }
        let dueMS = UInt64(next) * 1000
        return now + (dueMS > wallMS ? dueMS - wallMS : 0) + 1
    }

    /// Wall-clock milliseconds since the epoch (the outbox's times are wall-clock seconds).
    static func wallClockMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(0, ts.tv_sec)) * 1000 + UInt64(max(0, ts.tv_nsec)) / 1_000_000
    }
}

/// Hooks: started, timed out and retried in `tick`; finished ones are reaped there (WNOHANG) and
/// on SIGCHLD.
extension HookRunner: PollPart {
    public func pollDescriptors(into fds: inout [pollfd]) {}
    public func handle(_ p: pollfd, now: UInt64) -> Bool { false }
}

/// systemd's watchdog.
extension SystemdNotify: PollPart {
    public func pollDescriptors(into fds: inout [pollfd]) {}
    public func handle(_ p: pollfd, now: UInt64) -> Bool { false }
}
