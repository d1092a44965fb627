import MeshCompanion
// What `pocketmesh chats` and `pocketmesh history` show, as plain values.

/// One line of `pocketmesh chats`.
public struct ChatSummary: Equatable, Sendable {
    public var kind: MessageKind
    /// Contact/room name, channel name, or key prefix.
    public var name: String
    /// "contact a1b2c3d4e5f6", "channel 0", "room ...".
    public var thread: ThreadKey
    public var unread: Int
    public var messages: Int
    public var lastMessageId: UInt64
    /// Epoch seconds this host stored the last message.
    public var lastAt: UInt32
    public var lastDirection: Direction
    public var lastText: String
}

/// One message of `pocketmesh history`.
public struct HistoryLine: Equatable, Sendable {
    public var id: UInt64
    public var direction: Direction
    /// Who wrote it: the contact's name, the channel sender (from "name: text"), a room author
    /// prefix, or "me" for outgoing.
    public var sender: String
    public var text: String
    public var senderTimestamp: UInt32
    public var receivedAt: UInt32
    public var status: DeliveryStatus
    public var attempts: UInt8
    public var roundTripMs: UInt32
    /// Hops (path_len & 63), nil if it came direct (0xFF) or is outgoing.
    public var hops: UInt8?
    /// SNR in dB (snr×4 / 4), nil if unknown.
    public var snr: Double?
}

/// One page of history, oldest first. Pass `olderBefore` as `--before` to get the previous page.
public struct HistoryPage: Equatable, Sendable {
    public var name: String
    public var thread: ThreadKey
    public var lines: [HistoryLine]
    /// The id to page further back from, nil if this page reaches the start of the thread.
    public var olderBefore: UInt64?
}

extension RadioStore {
    /// Conversations for `pocketmesh chats`, newest activity first.
    public func chats() throws -> [ChatSummary] {
        try conversations().map {
            ChatSummary(kind: $0.thread.kind ?? .direct, name: $0.name, thread: $0.thread, unread: $0.unread,
                        messages: $0.messageCount, lastMessageId: $0.lastMessage.id, lastAt: $0.lastMessage.receivedAt,
                        lastDirection: $0.lastMessage.direction, lastText: $0.lastMessage.textString)
        }
    }

    /// Finds a conversation by what a person types: a channel name (with or without '#'),
    /// "channel N" / "#N" for a channel slot, or a contact or room as `NameMatch` finds it (exact
    /// or case-insensitive name, hex key prefix, unique start of a name), the same rule as the
    /// command line's; a key prefix of 12 or more hex digits names a thread even with no contact.
    public func resolveThread(_ query: String) throws -> ThreadKey {
        let q = query
        let lower = q.lowercased()
        let bare = lower.hasPrefix("#") ? String(lower.dropFirst()) : lower
        var threads: [ThreadKey] = [], names: [String] = [], keys: [[UInt8]] = []
        for c in contacts where !c.name.isEmpty {
            threads.append(c.type == ContactType.room.rawValue ? .room(c.prefix) : .direct(c.prefix))
            names.append(c.name)
            keys.append(c.publicKey)
        }
        // Threads with history but no contact record.
        for k in log.threadKeys where k.kind != .channel && !threads.contains(k) {
            threads.append(k)
            names.append(name(of: k))
            keys.append(k.peer.bytes)
        }
        let named = channels.filter { !$0.name.isEmpty }
        if !names.contains(q), let ch = named.first(where: { $0.name == q || $0.name.lowercased().trimmingHash == bare }) {
            return .channel(ch.index)
        }
        if let n = UInt8(bare) ?? (lower.hasPrefix("channel ") ? UInt8(lower.dropFirst(8)) : nil) {
            return .channel(n)
        }
        switch NameMatch.find(q, names: names, keys: keys) {
        case .one(let i): return threads[i]
        case .ambiguous(let n): throw StoreError.ambiguousThread(q, count: n)
        case .none: break
        }
        if q.count >= 12, q.count <= 64, let bytes = bytesFromHex(q.count % 2 == 0 ? q : String(q.dropLast())) {
            return .direct(KeyPrefix(sixOf: bytes))
        }
        throw StoreError.unknownThread(query)
    }

    /// A page of `pocketmesh history NAME|CHANNEL [--limit N] [--before ID]`.
    public func historyPage(_ query: String, limit: Int = 50, before: UInt64? = nil) throws -> HistoryPage {
        let thread = try resolveThread(query)
        return try historyPage(thread, limit: limit, before: before)
    }

    public func historyPage(_ thread: ThreadKey, limit: Int = 50, before: UInt64? = nil) throws -> HistoryPage {
        let ms = try history(thread, limit: limit + 1, before: before)
        let more = ms.count > limit
        let page = more ? Array(ms.dropFirst()) : ms
        let peerName = name(of: thread)
        let lines = page.map { m -> HistoryLine in
            var sender = peerName
            var text = m.textString
            if m.direction == .outgoing {
                sender = "me"
            } else if m.kind == .channel, let (who, body) = splitSender(m.text) {
                sender = who
                text = body
            } else if m.kind == .room && m.textType == TextType.signedPlain.rawValue {
                var a: [UInt8] = []
                a.putU32(m.author)
                sender = contacts.first(where: { $0.publicKey.starts(with: a) })?.name ?? hexString(a)
            }
            return HistoryLine(id: m.id, direction: m.direction, sender: sender, text: text,
                               senderTimestamp: m.senderTimestamp, receivedAt: m.receivedAt, status: m.status,
                               attempts: m.attempts, roundTripMs: m.roundTripMs,
                               hops: m.direction == .incoming && m.pathLength != 0xFF ? m.pathLength & 63 : nil,
                               snr: m.snr == 0 ? nil : Double(m.snr) / 4)
        }
        return HistoryPage(name: peerName, thread: thread, lines: lines, olderBefore: more ? page.first?.id : nil)
    }
}

/// "name: text" → (name, text), as channel messages arrive.
func splitSender(_ b: [UInt8]) -> (String, String)? {
    var i = 0
    while i + 1 < b.count {
        if b[i] == 58 && b[i + 1] == 32 {
            return (String(decoding: b[..<i], as: UTF8.self), String(decoding: b[(i + 2)...], as: UTF8.self))
        }
        i += 1
    }
    return nil
}

extension String {
    fileprivate var trimmingHash: String { hasPrefix("#") ? String(dropFirst()) : self }
}
