import MeshCompanion
import MeshStore

/// The radio's offline queue as tunnel clients see it while the daemon owns the radio.
///
/// The daemon drains the radio itself, so a client's SYNC_NEXT_MESSAGE is answered from the store:
/// the received messages (direct, channel, room, datagrams) stored after a persisted delivery
/// cursor (the store's cursor `"sync"`), oldest first, each as the V3 frame the radio would have
/// sent, then NO_MORE_MESSAGES.
///
/// Each client drains in rounds (SYNC_NEXT_MESSAGE until NO_MORE_MESSAGES). A round starts at the
/// cursor; the cursor moves to the last message handed over only when the client asks past it and
/// gets NO_MORE_MESSAGES. So a client that reaches the end of the queue gets each message exactly
/// once; a client that goes away mid-round (a killed `sync`) moves nothing, and the next round
/// starts over from the cursor (at least once). Two clients draining at the same moment may both
/// get the same messages.
///
/// Sans-I/O: the caller looks messages up in the store and persists the cursor.
public struct TunnelQueue {
    public typealias Client = Int

    /// What to answer a SYNC_NEXT_MESSAGE with.
    public enum Step: Equatable, Sendable {
        /// Send this stored message.
        case message(id: UInt64)
        /// Send NO_MORE_MESSAGES; if `commit` is set, persist it as the new cursor first.
        case noMore(commit: UInt64?)
        /// Send this frame: a repeater's CLI reply owed to this client (never stored).
        case frame([UInt8])
    }

    /// Every received message with an id ≤ this has been handed to a client that reached the end.
    public private(set) var cursor: UInt64
    /// Clients in a round: the id of the last message handed over (the round's start if none yet).
    private var position: [Client: UInt64] = [:]
    /// Repeater CLI commands (txt_type 1) sent through a tunnel: the sender's key prefix → the client.
    private var cliWaiters: [[UInt8]: Client] = [:]
    /// CLI replies owed to one client, handed out before the store's messages, in a round of their
    /// own: the command that asked gets its reply, not the backlog since the last `sync`.
    private var owed: [Client: [[UInt8]]] = [:]
    private var inOwedRound: Set<Client> = []

    public init(cursor: UInt64) { self.cursor = cursor }

    /// The answer to a SYNC_NEXT_MESSAGE from `client`. `firstAfter(id)` returns the id of the
    /// oldest received message stored after `id`, or nil.
    public mutating func next(for client: Client, firstAfter: (UInt64) -> UInt64?) -> Step {
        if var o = owed[client], !o.isEmpty {
            let f = o.removeFirst()
            owed[client] = o.isEmpty ? nil : o
            if position[client] == nil { inOwedRound.insert(client) }
            return .frame(f)
        }
        if inOwedRound.remove(client) != nil { return .noMore(commit: nil) }
        let at = position[client] ?? cursor
        if let id = firstAfter(at) {
            position[client] = id
            return .message(id: id)
        }
        position[client] = nil
        guard at > cursor else { return .noMore(commit: nil) }
        cursor = at
        return .noMore(commit: at)
    }

    /// A client went away: whatever it was handed in its unfinished round stays queued.
    public mutating func disconnected(_ client: Client) {
        position[client] = nil
        owed[client] = nil
        inOwedRound.remove(client)
        cliWaiters = cliWaiters.filter { $0.value != client }
    }

    /// `client` sent a repeater CLI command to the node whose key starts with `prefix` (6 bytes).
    public mutating func expectCLIReply(from prefix: [UInt8], to client: Client) { cliWaiters[prefix] = client }

    /// A drained CLI reply (txt_type 1) from `prefix`: the client whose command it answers, which
    /// gets `frame` from its next SYNC_NEXT_MESSAGE as the radio would have handed it over; nil
    /// when no client waits for one (the reply is then stored like any message).
    public mutating func routeCLIReply(from prefix: [UInt8], frame: [UInt8]) -> Client? {
        guard let c = cliWaiters.removeValue(forKey: prefix) else { return nil }
        owed[c, default: []].append(frame)
        return c
    }

    /// True while `client` is in the middle of a round.
    public func isDraining(_ client: Client) -> Bool { position[client] != nil }

    /// The frame the radio would have sent for this message (V3 layout, with SNR), or nil for
    /// an outgoing message or one that cannot be framed.
    public static func frame(for m: StoredMessage) -> [UInt8]? {
        guard m.direction == .incoming else { return nil }
        let path = PathLength(rawValue: m.pathLength)
        switch m.kind {
        case .direct, .room:
            guard let sender = KeyPrefix(m.peer.bytes) else { return nil }
            var author: KeyPrefix? = nil
            if m.textType == TextType.signedPlain.rawValue {
                author = KeyPrefix([UInt8(truncatingIfNeeded: m.author >> 24), UInt8(truncatingIfNeeded: m.author >> 16),
                                                  UInt8(truncatingIfNeeded: m.author >> 8), UInt8(truncatingIfNeeded: m.author)])
            }
            return try? ResponseFrame.contactMessage(snrQuarterDb: m.snr, senderPrefix: sender, pathLength: path,
                                                   textType: TextType(rawValue: m.textType), senderTimestamp: m.senderTimestamp,
                                                   authorPrefix: author, text: m.text).bytes
        case .channel:
            if m.isDatagram {
                return try? ResponseFrame.channelData(snrQuarterDb: m.snr, channelIndex: m.channelIndex, pathLength: path,
                                                    dataType: m.dataType, data: m.text).bytes
            }
            return ResponseFrame.channelMessage(snrQuarterDb: m.snr, channelIndex: m.channelIndex, pathLength: path,
                                              timestamp: m.senderTimestamp, text: m.text).bytes
        }
    }
}
