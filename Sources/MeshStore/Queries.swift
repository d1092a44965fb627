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

    /// Finds a conversation by what a person types: a contact or room name (exact, then
    /// case-insensitive, then a unique case-insensitive prefix), a channel name (with or without '#'),
    /// "channel N" / "#N" for a channel slot, or a hex public key prefix (at least 4 hex digits).
    public func resolveThread(_ query: String) throws -> ThreadKey {
        let q = query
        let lower = q.lowercased()
        var candidates: [(ThreadKey, String)] = []
        for c in contacts where !c.name.isEmpty {
            candidates.append((c.type == 3 ? .room(c.prefix) : .direct(c.prefix), c.name))
        }
        for ch in channels where !ch.name.isEmpty {
            candidates.append((.channel(ch.index), ch.name))
        }
        // Threads with history but no contact or channel record.
        for k in log.threadKeys where !candidates.contains(where: { $0.0 == k }) {
            candidates.append((k, name(of: k)))
        }
        if let hit = candidates.first(where: { $0.1 == q }) { return hit.0 }
        let bare = lower.hasPrefix("#") ? String(lower.dropFirst()) : lower
        if let hit = candidates.first(where: { $0.1.lowercased() == lower || ($0.0.kind == .channel && $0.1.lowercased().trimmingHash == bare) }) {
            return hit.0
        }
        if let n = UInt8(bare) ?? (lower.hasPrefix("channel ") ? UInt8(lower.dropFirst(8)) : nil) {
            return .channel(n)
        }
        let prefixed = candidates.filter { $0.1.lowercased().hasPrefix(lower) }
        if prefixed.count == 1 { return prefixed[0].0 }
        if q.count >= 4, q.count <= 64, let bytes = bytesFromHex(q.count % 2 == 0 ? q : String(q.dropLast())) {
            let matches = Set(candidates.map(\.0).filter { $0.kind != .channel && $0.peer.bytes.starts(with: bytes.prefix(6)) })
            if matches.count == 1 { return matches.first! }
            if matches.isEmpty, bytes.count >= 6 { return .direct(KeyPrefix(bytes)) }
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
            } else if m.kind == .room && m.textType == 2 {
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
