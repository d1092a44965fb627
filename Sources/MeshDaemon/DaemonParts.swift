import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshSession
import MeshStore
import MeshHub
import MeshBridge

// The daemon's parts of its one poll loop (MeshLink's `PollLoop`), beside the API server, the hub
// (MeshHub), the MQTT connections (MeshBridge), the hooks (`HookRunner`) and the systemd notifier.
// Each part owns its state; what it needs of the others it is given as closures when the daemon
// wires them (`Daemon.init`), so no part holds the daemon. Each has its descriptors, its readiness
// handler and its deadline; the loop names none of them. None blocks: the link is non-blocking,
// hooks are reaped with WNOHANG, the store is retried on a timer when it cannot take a message.

/// The radio owner: the link (or the connector making it), the session on it, reconnects with
/// backoff, requests waiting for the radio, and a stop or reconnect waiting for the message in
/// flight. Its turn (`turn`, the daemon's `radioTimers`) first writes out what the other parts
/// asked of the radio since the last one.
final class RadioPart: PollPart {
    var phase: Daemon.Phase = .down
    var link: ByteLink? = nil
    /// The link being made (`DaemonConnect.swift`), while `phase` is `connecting`.
    var connector: RadioConnector? = nil
    var session: Session? = nil
    var deframer = StreamDeframer(marker: UInt8(ascii: ">"))
    var readBuffer = [UInt8](repeating: 0, count: 4096)
    var reconnectAt: UInt64 = 0
    var backoffMS: UInt64 = 0
    var connections = 0
    /// DEVICE_INFO and SELF_INFO as the radio last reported them, kept while the link is down.
    var lastDeviceInfo: [UInt8] = []
    var lastSelfInfo: [UInt8] = []
    /// Why the last attempt to reach the radio failed (nil once it answered): `status` and STATUS=.
    var radioProblem: String? = nil
    var pendingLinkLoss: String? = nil
    /// The last SET_FLOOD_SCOPE_KEY a client set (`scope`): the radio forgets it with the
    /// connection, so it is sent again after each reconnect.
    var floodScopeFrame: [UInt8]? = nil
    /// Requests that need the radio, waiting for the connect and handshake under way
    /// (DaemonRadioWait.swift).
    var radioWaits: [RadioWait] = []
    /// A stop or reconnect asked for by a signal, waiting for the answer to a SYNC_NEXT_MESSAGE
    /// already sent (the radio forgets a message once it hands it over), until `settleDeadline`.
    var settling: Daemon.Settle? = nil
    var settleDeadline: UInt64 = 0

    /// The link's readiness (POLLIN/POLLOUT/POLLHUP), the connector's progress, and the turn.
    var linkReady: (Int16) -> Void = { _ in }
    var connectorProgress: (UInt64) -> Void = { _ in }
    var turn: (UInt64) -> UInt64? = { _ in nil }

    var deviceInfo: [UInt8] { session?.deviceInfo ?? lastDeviceInfo }
    var selfInfo: [UInt8] { session?.selfInfo ?? lastSelfInfo }

    func pollDescriptors(into fds: inout [pollfd]) {
        if let c = connector { c.pollDescriptors(into: &fds); return }
        guard let link else { return }
        fds.append(pollfd(fd: link.fd, events: Int16(POLLIN) | (link.hasPendingOutput ? Int16(POLLOUT) : 0), revents: 0))
    }

    func handle(_ p: pollfd, now: UInt64) -> Bool {
        if let c = connector {
            guard c.handle(p, now: now) else { return false }
            connectorProgress(now)
            return true
        }
        guard let link, p.fd == link.fd else { return false }
        linkReady(p.revents)
        return true
    }

    func tick(now: UInt64) -> UInt64? { turn(now) }
}

/// The sync's bookkeeping on the radio owner's session: contacts and channels listings, the
/// safety-net drain and keepalive, the battery watch (`--low-battery`).
final class RadioSync {
    var syncedOnce = false
    var contactsTicket: Ticket? = nil
    /// Whether the contacts listing in flight is a full one (not `since` the watermark).
    var contactsListingFull = false
    /// The next contacts sync lists every contact: the radio has fewer than the store (one was
    /// removed behind the daemon's back), so the store finds out which.
    var contactsFullSyncWanted = false
    var contactsResyncAt: UInt64? = nil
    var channelTickets: [Ticket: UInt8] = [:]
    var channelsFound: [StoredChannel] = []
    var nextDrainAt: UInt64 = 0
    var keepaliveTicket: Ticket? = nil
    var batteryTicket: Ticket? = nil
    var batteryCheckAt: UInt64 = 0
    var batteryLow = false
}

/// The store: the open radio store, the hooks that follow it, what could not be put on disk, and
/// the retry when it could not take a received message (a full disk, a failing inbox): tried
/// again every few seconds, never in a loop (`retry`: the daemon's `retryStore`).
final class StorePart: PollPart {
    /// The open store; its sample files follow it (DaemonSamples.swift).
    var store: RadioStore? = nil {
        didSet {
            guard store !== oldValue else { return }
            if let s = store { samples.open(directory: s.directory) } else { samples.close() }
        }
    }
    /// The signal and battery samples kept beside it, for plots.
    let samples = SampleFiles()
    /// The hook runner of the open store (a part of the loop while there is one).
    var hooks: HookRunner? = nil
    /// When to try the store again (held messages, the inbox); 0: nothing waits.
    var retryAt: UInt64 = 0
    /// Received messages with no place on disk (store not open and its inbox failing): a last
    /// resort; the radio is asked for nothing more meanwhile (DaemonMessages.swift).
    var unsaved: [StoredMessage] = []
    let unsavedCapacity = 256
    var inboxProblemLogged = false
    /// Damaged records found while reading the store that have been logged.
    var readDamageLogged = 0
    var storedCount = 0
    var duplicateCount = 0
    var retry: (UInt64) -> Void = { _ in }
    var log: (String) -> Void = { _ in }

    /// True when a message taken off the radio now would be on disk whatever the log does: the
    /// store is open, its inbox is ready and empty, and nothing waits in memory.
    var takesMessages: Bool { unsaved.isEmpty && store?.canTakeMessage == true }

    /// A message already taken off the radio with no place on disk (the store not open, or its
    /// inbox failing too): the last resort, said plainly.
    func holdInMemory(_ rec: StoredMessage, _ why: String) {
        log("store: cannot store a received message (\(why)); it is held in memory only, and lost if the daemon stops "
            + "before the store works again; the radio keeps the rest of its queue")
        if unsaved.count >= unsavedCapacity { unsaved.removeFirst() }
        unsaved.append(rec)
        if retryAt == 0 { retryAt = monotonicMilliseconds() + 1_000 }
    }

    /// Logs each damaged record found while reading messages (hooks, API), once: it is skipped.
    func reportReadDamage() {
        guard let store else { return }
        let found = store.readDamage
        while readDamageLogged < found.count {
            log("store: \(found[readDamageLogged]) (a damaged record: its message cannot be shown or handed to a hook)")
            readDamageLogged += 1
        }
    }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }

    func tick(now: UInt64) -> UInt64? {
        guard store != nil, !takesMessages else { return nil }
        if retryAt == 0 { retryAt = now + 5_000 }
        if now >= retryAt { retry(now) }
        return retryAt != 0 ? retryAt : nil
    }
}

/// The outbox: direct messages sent, retried and given up on their schedule while the radio is
/// ready (`OutboxSender`, whose retry times are wall-clock seconds), and who waits for which.
/// Its turn sends what is due while a slot is free (every turn of the loop asks: a round's end,
/// the radio becoming ready, a new message each wake the loop anyway), and it asks for a wake-up
/// only at the next item's time: an empty outbox, or one whose items are all in flight, asks for none.
final class OutboxPart: PollPart {
    let sender: OutboxSender
    /// `send` requests with `wait`: answered when their message is acked or given up.
    var sendWaiters: [UInt64: [(Caller, Int64)]] = [:]
    /// ACK tags of direct messages sent through a tunnel, to mark them acked in the store.
    var tunnelAckTags: [(tag: UInt32, id: UInt64)] = []
    /// The store while the radio is ready for the outbox (nil otherwise), and sending what is due.
    var readyStore: () -> RadioStore? = { nil }
    var send: (UInt64) -> Void = { _ in }

    init(_ sender: OutboxSender) { self.sender = sender }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }

    func tick(now: UInt64) -> UInt64? {
        guard let store = readyStore(), !store.outbox.isEmpty else { return nil }
        func room() -> Bool { sender.inFlight.count < sender.policy.maxInFlight }
        var wallMS = Self.wallClockMilliseconds()
        if room() && store.outbox.contains(where: { !sender.inFlight.contains($0.messageId) && $0.nextAttemptAt <= UInt32(truncatingIfNeeded: wallMS / 1000) }) {
            send(now)
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

/// The local API's work in flight beyond the socket (`APIServer` has the clients): commands the
/// daemon sent to the radio for an API request, tunnel clients' frames at the radio and their view
/// of the message queue, and the refusals logged per door.
final class APIWork {
    var replyTickets: [Ticket: (client: Caller, id: Int64, what: String, record: StoredMessage?)] = [:]
    /// After an OK to a `replyTickets` command: what else to do, and the fields of the answer.
    var replyAfterOK: [Ticket: () -> [(String, JSON)]] = [:]
    var tunnelTickets: [Ticket: (client: APIServer.ClientID, frame: [UInt8])] = [:]
    /// The radio's message queue as tunnel clients see it: answered from the store (TunnelQueue.swift).
    var tunnelQueue = TunnelQueue(cursor: 0)
    /// Refusals logged per door (DaemonPermissions.swift).
    var refusalLog = RefusalLog()
    /// The web console's door (`--web`, WebServer.swift), a part of the loop while there is one.
    var web: WebServer? = nil
}

/// The operations run for API, hub and MQTT clients, in this process (DaemonOperations.swift):
/// their steps, the session's port they wait on, each one's share of it (`OperationLease`, which
/// cancels it at its deadline) and who asked. Its turn (`turn`, after the parts those clients come
/// through): operations timed out or whose client left, and the hub clients waiting on their
/// request rate; what they freed goes to the radio.
final class OperationsPart: PollPart {
    let jobs = OperationJobs()
    var port: SessionPort? = nil
    var runs: [Int: OperationRun] = [:]
    var next = 0
    /// How long an operation may take, and each of its commands.
    let timeoutMS: UInt64
    let commandTimeoutMS: UInt64
    /// Where an operation's answer goes, and the turn (the daemon's `operationsTimers`).
    var reply: (DaemonResponse, Caller) -> Void = { _, _ in }
    var turn: (UInt64) -> UInt64? = { _ in nil }

    init(timeoutMS: UInt64, commandTimeoutMS: UInt64) {
        self.timeoutMS = timeoutMS
        self.commandTimeoutMS = commandTimeoutMS
    }

    func pollDescriptors(into fds: inout [pollfd]) {}
    func handle(_ p: pollfd, now: UInt64) -> Bool { false }
    func tick(now: UInt64) -> UInt64? { turn(now) }
}

/// The companion hub's state on the daemon's side (DaemonHub.swift): the hub server (a part of
/// the loop itself), its clients' sessions, their requests in order and their turns at the radio.
final class HubPart {
    var server: HubServer? = nil
    var sessions: [Int: HubSession] = [:]
    /// The hub clients' requests, in order per client, and their turns at the radio (HubQueue.swift).
    var queue = HubQueue()
    /// The hub request at the radio: its client and frame.
    var tickets: [Ticket: (client: Int, frame: [UInt8])] = [:]
    /// When this daemon last wrote each app cursor (wall-clock seconds): it marks the app seen.
    var cursorTouched: [String: Int] = [:]
    /// Whose send each ACK code confirms.
    var ackOwners: [(ack: UInt32, client: Int)] = []
    /// The radio's contact table as last listed whole, while current: hub clients' GET_CONTACTS is answered from it.
    var contacts = HubContacts()
}

/// The MQTT connections (DaemonMQTT.swift): chat bridges and packet observers, each a part of
/// the loop itself.
final class MQTTPart {
    var bridges: [MQTTBridge] = []
    var observers: [MQTTObserver] = []
}

/// Serial hotplug: the kernel's or udev's device events; a matching `add` while the link is down
/// reconnects at once (DaemonHotplug.swift).
final class HotplugPart: PollPart {
    var monitor: HotplugMonitor? = nil
    /// The serial radio's identity (configured path, by-id name, last node, USB vendor:product).
    var identity: SerialRadioIdentity? = nil
    /// Whether the radio's link is down, and reconnecting (now) at a time; the daemon's log.
    var linkDown: () -> Bool = { false }
    var reconnect: (UInt64) -> Void = { _ in }
    var log: (String) -> Void = { _ in }

    func pollDescriptors(into fds: inout [pollfd]) {
        if let m = monitor { fds.append(pollfd(fd: m.fd, events: Int16(POLLIN), revents: 0)) }
    }

    func handle(_ p: pollfd, now: UInt64) -> Bool {
        guard let m = monitor, p.fd == m.fd else { return false }
        monitorReady(now: now)
        return true
    }

    func tick(now: UInt64) -> UInt64? { nil }
}

/// The daemon's life: when it started, whether it is stopping (the loop returns after the
/// handler that set it) or has shut down, and its exit code.
struct Lifecycle {
    let startedAt = monotonicMilliseconds()
    var stopping = false
    var isShutDown = false
    /// The exit code when the daemon stops on its own (a state folder it will not use: 2).
    var exitCode: Int32 = 0
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
