import MeshCompanion

/// Identifies one submitted command, direct message or remote request.
public typealias Ticket = UInt32

/// Tunables of a session. Every time is in milliseconds of the caller's monotonic clock.
public struct SessionConfig: Sendable {
    /// Protocol version announced in DEVICE_QUERY (≥ 3 gives V3 message frames with SNR).
    public var appVersion: UInt8 = 3
    /// Name announced in APP_START.
    public var appName: String = "pocketmesh"
    /// When set, SET_DEVICE_TIME is sent after APP_START with this epoch (seconds).
    /// ERR 6 (radio clock ahead) is tolerated and reported as `.clock(.radioAhead)`.
    public var clockEpoch: UInt32? = nil
    /// Drain the offline message queue right after the handshake.
    public var drainOnStart: Bool = true
    /// Drain the queue whenever MSG_WAITING is pushed.
    public var drainOnWaiting: Bool = true
    /// How long a command may wait for its response.
    public var commandTimeout: UInt64 = 5_000
    /// Direct messages: total attempts (first send included).
    public var sendAttempts: Int = 3
    /// Direct messages: attempts sent along the known path before RESET_PATH and flood.
    public var directAttempts: Int = 2
    /// Direct messages: per-attempt ACK timeout = est_timeout × factor (SENT's estimate) ...
    public var ackTimeoutFactor: Double = 1.2
    /// ... unless this fixed per-attempt timeout is set.
    public var ackTimeout: UInt64? = nil
    /// Lower bound of any per-attempt ACK or remote-reply wait.
    public var minReplyTimeout: UInt64 = 0
    /// Remote requests: reply timeout = est_timeout × factor ...
    public var requestTimeoutFactor: Double = 1.2
    /// ... or this when the radio gave no estimate (or a fixed override when `requestTimeoutFixed`).
    public var requestTimeout: UInt64 = 10_000
    public var requestTimeoutFixed: Bool = false
    /// Direct messages waiting for an ACK at once; further sends wait their turn (the radio
    /// remembers only 8 expected ACKs).
    public var maxOutstandingAcks: Int = 8
    /// After each `.message` event, send no SYNC_NEXT_MESSAGE until the shell calls
    /// `resumeMessages` (it has stored the message): the daemon's durability rule.
    public var holdDrainUntilStored: Bool = false
    /// Forward LOG_RX_DATA (0x88) pushes as events (one per packet the radio hears).
    public var forwardLogRx: Bool = false
    /// Capacity of the event queue; on overflow the oldest event is dropped and counted.
    public var eventCapacity: Int = 1024

    public init() {}

    /// How long one attempt waits for its ACK, given SENT's `est_timeout` (ms).
    public func ackWait(estimatedTimeout est: UInt32) -> UInt64 {
        max(ackTimeout ?? UInt64(Double(est) * ackTimeoutFactor), minReplyTimeout)
    }
}

/// How a command finished.
public enum Reply: Sendable, Equatable {
    /// RESP_CODE_OK.
    case ok
    /// The response frame (code < 0x80, or a push-coded answer such as self telemetry).
    case frame([UInt8])
    /// A complete contacts listing: the 148-byte records, the radio's total, the max lastmod seen.
    case contacts(ContactListing)
    /// RESP_CODE_ERR with the radio's error code.
    case error(UInt8)
    /// RESP_CODE_DISABLED.
    case disabled
    /// No response within the command's timeout.
    case timeout
    /// Sent; this command has no response (REBOOT).
    case sent
    /// The session was closed before the command finished.
    case cancelled
}

public struct ContactListing: Sendable, Equatable {
    public var records: [[UInt8]]
    /// CONTACTS_START count: the radio's total, not the number listed.
    public var total: UInt32
    /// Max lastmod over the records listed (0 when none), as END_OF_CONTACTS should report.
    public var lastmod: UInt32
    /// Records past what the radio can hold (`Session.contactsLimit`): not kept, only counted.
    public var refused: Int = 0

    public init(records: [[UInt8]], total: UInt32, lastmod: UInt32, refused: Int = 0) {
        self.records = records; self.total = total; self.lastmod = lastmod; self.refused = refused
    }
}

/// What a direct message is doing.
public enum Delivery: Sendable, Equatable {
    /// The radio took attempt `attempt` (0-based) and says it went flood or direct; `ackTag` is the
    /// ACK code it expects for this attempt (SEND_CONFIRMED carries it).
    case sent(attempt: Int, flood: Bool, estimatedTimeout: UInt32, ackTag: UInt32)
    /// No ACK in time; the next attempt goes out (after RESET_PATH when `flood`).
    case retrying(attempt: Int, flood: Bool)
    /// The recipient acknowledged attempt `attempt`; round trip as measured by the radio.
    case acked(attempt: Int, roundTrip: UInt32)
    /// No ACK after every attempt.
    case failed(attempts: Int)
    /// The radio refused the send (ERR code), or did not answer the command.
    case refused(UInt8)
    case timeout
    case cancelled
}

/// A request to a remote node, matched the way the firmware matches it.
public enum RemoteRequest: Sendable, Equatable {
    case login(publicKey: [UInt8], password: String)
    case status(publicKey: [UInt8])
    case telemetry(publicKey: [UInt8])
    /// SEND_BINARY_REQ: `data[0]` is the request type (0x05 ACL, 0x06 neighbours, …).
    case binary(publicKey: [UInt8], data: [UInt8])
    case anon(publicKey: [UInt8], data: [UInt8])
    case pathDiscovery(publicKey: [UInt8])
    /// A remote CLI command: SEND_TXT_MSG txt_type 1 to a repeater or room server, txt_type 3
    /// (protocol 14) to a companion; the reply is a contact message of txt_type 1 either way.
    case command(publicKey: [UInt8], text: String, timestamp: UInt32, textType: TextType = .cliData)
    /// SEND_TRACE_PATH; matched by tag.
    case trace(tag: UInt32, auth: UInt32, flags: UInt8, path: [UInt8])

    var publicKey: [UInt8] {
        switch self {
        case .login(let k, _), .status(let k), .telemetry(let k), .binary(let k, _), .anon(let k, _),
             .pathDiscovery(let k), .command(let k, _, _, _): return k
        case .trace: return []
        }
    }

    /// Requests that share the radio's one pending-request slot.
    var usesRadioSlot: Bool {
        switch self {
        case .login, .status, .telemetry, .binary, .anon, .pathDiscovery: return true
        case .command, .trace: return false
        }
    }
}

public enum RequestOutcome: Sendable, Equatable {
    /// The radio accepted the request (SENT); the reply is awaited until the deadline.
    case sent(estimatedTimeout: UInt32)
    /// The reply: the push frame (0x85/0x86/0x87/0x89/0x8B/0x8C/0x8D) or, for `.command`,
    /// the contact message frame carrying the CLI reply.
    case reply([UInt8])
    /// A newer request took the radio's single pending slot.
    case superseded
    case refused(UInt8)
    case timeout
    case cancelled
}

public enum ClockResult: Sendable, Equatable {
    case set
    /// ERR 6: the radio's clock is ahead of the supplied epoch; it cannot move backwards.
    case radioAhead
    case failed(Reply)
}

public enum SessionEvent: Sendable, Equatable {
    /// Handshake done: DEVICE_INFO and SELF_INFO frames.
    case ready(deviceInfo: [UInt8], selfInfo: [UInt8])
    /// DEVICE_QUERY or APP_START failed; the session is unusable.
    case handshakeFailed(Reply)
    case clock(ClockResult)
    /// A submitted command finished.
    case reply(Ticket, Reply)
    /// A message drained from the radio's queue.
    case message(ReceivedMessage)
    /// A queued frame the session could not parse (kept raw).
    case malformedMessage([UInt8])
    /// SYNC_NEXT_MESSAGE got neither a message nor NO_MORE_MESSAGES (a timeout, ERR): draining
    /// stopped. A radio that stops answering mid-drain may have rebooted (its queue and the
    /// handshake are gone, while a serial link stays open).
    case drainFailed(Reply)
    /// Any push not consumed by matching (adverts, path updates, raw data, log rx when enabled…),
    /// decoded.
    case push(Push)
    case delivery(Ticket, Delivery)
    case request(Ticket, RequestOutcome)
    /// A response that no command was waiting for (e.g. a late answer after a timeout).
    case unexpected([UInt8])
}
