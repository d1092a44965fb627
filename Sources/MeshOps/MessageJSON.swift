import MeshCompanion
import MeshNet
import MeshSession
import MeshStore

/// The JSON form of stored messages, contacts and channels, shared by the API, events, hooks
/// and `pocketmesh history --json`.
public enum MessageJSON {
    public static func kindName(_ k: MessageKind) -> String {
        switch k {
        case .direct: return "direct"
        case .channel: return "channel"
        case .room: return "room"
        }
    }

    /// Splits a channel text "name: text" into its sender and body.
    public static func splitChannelSender(_ text: String) -> (String, String)? {
        let u = Array(text.utf8)
        guard u.count >= 2 else { return nil }
        for i in 0..<(u.count - 1) where u[i] == UInt8(ascii: ":") && u[i + 1] == UInt8(ascii: " ") {
            guard i > 0, i <= 31 else { return nil }
            return (String(decoding: u[..<i], as: UTF8.self), String(decoding: u[(i + 2)...], as: UTF8.self))
        }
        return nil
    }

    public static func message(_ m: StoredMessage, store: RadioStore?) -> JSON {
        // A contact's CLI reply or command is named by its text type, as `listen` names it.
        let kind = m.kind == .direct ? contactMessageKind(TextType(rawValue: m.textType)) : kindName(m.kind)
        var pairs: [(String, JSON)] = [("id", .int(Int64(m.id))), ("kind", .string(kind)),
                                      ("direction", .string(m.direction == .incoming ? "in" : "out"))]
        let text = m.textString
        switch m.kind {
        case .direct, .room:
            pairs.append(("from", .string(m.direction == .incoming ? m.peer.description : "me")))
            pairs.append(("peer", .string(m.peer.description)))
            if let c = store?.contact(prefix: m.peer), !c.name.isEmpty { pairs.append(("name", .string(c.name))) }
            if m.kind == .room && m.author != 0 {
                pairs.append(("author", .string(HexCodec.encode([UInt8(m.author >> 24), UInt8((m.author >> 16) & 0xFF),
                                                           UInt8((m.author >> 8) & 0xFF), UInt8(m.author & 0xFF)]))))
            }
            pairs.append(("text", .string(text)))
        case .channel:
            pairs.append(("channel", .int(Int64(m.channelIndex))))
            if let ch = store?.channel(index: m.channelIndex), !ch.name.isEmpty { pairs.append(("channel_name", .string(ch.name))) }
            if m.isDatagram {
                // A datagram names no sender and has no text: its bytes are `data` (below).
                pairs.append(("from", .string(m.direction == .incoming ? "" : "me")))
            } else if m.direction == .incoming, let (who, body) = splitChannelSender(text) {
                pairs.append(("from", .string(who)))
                pairs.append(("text", .string(body)))
            } else {
                pairs.append(("from", .string(m.direction == .incoming ? "" : "me")))
                pairs.append(("text", .string(text)))
            }
        }
        if m.isDatagram {
            pairs.append(("data_type", .int(Int64(m.dataType))))
            pairs.append(("data", .string(HexCodec.encode(Array(m.text)))))
        }
        pairs.append(("text_type", .int(Int64(m.textType))))
        // A channel datagram carries no timestamp (CHANNEL_DATA_RECV has none).
        if !m.isDatagram { pairs.append(("timestamp", .int(Int64(m.senderTimestamp)))) }
        pairs.append(("received", .int(Int64(m.receivedAt))))
        if m.direction == .incoming {
            let (route, hops) = Self.route(m, store: store)
            pairs.append(("route", .string(route)))
            pairs.append(("hops", hops.map { .int(Int64($0)) } ?? .null))
        } else {
            pairs.append(("hops", PathLength(rawValue: m.pathLength).isUnknown ? .null : .int(Int64(PathLength(rawValue: m.pathLength).hopCount))))
        }
        pairs.append(("snr", m.snr == 0 ? .null : .double(Double(m.snr) / 4)))
        pairs.append(("status", .string(m.status.name)))
        // The radio that received (or sent) it: the store is the radio's, named by its key.
        if let radio = store?.radioKeyHex { pairs.append(("radio", .string(radio))) }
        if m.direction == .outgoing {
            pairs.append(("attempts", .int(Int64(m.attempts))))
            if m.roundTripMs > 0 { pairs.append(("round_trip_ms", .int(Int64(m.roundTripMs)))) }
        }
        return .object(pairs)
    }

    /// How an incoming message arrived. The radio gives the flood path's length, or 0xFF for a
    /// message sent direct (its path was used up on the way): then the hops are those of the
    /// stored path to the sender (the route runs both ways), or unknown without one. So the same
    /// sender gives the same count whether its message floods or comes direct.
    static func route(_ m: StoredMessage, store: RadioStore?) -> (String, Int?) {
        let p = PathLength(rawValue: m.pathLength)
        if !p.isUnknown { return ("flood", p.hopCount) }
        if m.kind != .channel, let c = store?.contact(prefix: m.peer), !PathLength(rawValue: c.outPathLength).isUnknown {
            return ("direct", PathLength(rawValue: c.outPathLength).hopCount)
        }
        return ("direct", nil)
    }

    /// A contact with the fields of `pocketmesh contacts --json` (one definition: ContactSummary).
    public static func contact(_ c: StoredContact) -> JSON {
        guard let summary = ContactSummary(record: c.frame()) else { return .obj(("public_key", .string(c.publicKeyHex))) }
        return summary.value
    }

    /// A pending advert: the contact's fields, and when this host heard it (`heard`, epoch seconds).
    public static func pending(_ c: StoredContact) -> JSON {
        guard case .object(var pairs) = contact(c) else { return contact(c) }
        pairs.append(("heard", .int(Int64(c.updatedAt))))
        return .object(pairs)
    }

    /// A channel without its secret (secrets never leave the store through the API or logs).
    public static func channel(_ ch: StoredChannel) -> JSON {
        .obj(("index", .int(Int64(ch.index))), ("name", .string(ch.name)))
    }

    /// Converts a message drained from the radio into a stored (incoming) message.
    public static func stored(_ m: ReceivedMessage, receivedAt: UInt32) -> StoredMessage {
        switch m.kind {
        case .contact:
            let room = m.textType == .signedPlain
            var author: UInt32 = 0
            if room { for b in m.authorPrefix.prefix(4) { author = author << 8 | UInt32(b) } }
            return StoredMessage(kind: room ? .room : .direct, direction: .incoming, peer: KeyPrefix(sixOf: m.senderPrefix),
                                 author: author, senderTimestamp: m.timestamp, receivedAt: receivedAt, textType: m.textType.rawValue,
                                 pathLength: m.pathLength, snr: m.snrQuarterDb ?? 0, text: m.text)
        case .channel:
            return StoredMessage(kind: .channel, direction: .incoming, channelIndex: m.channelIndex,
                                 senderTimestamp: m.timestamp, receivedAt: receivedAt, textType: m.textType.rawValue,
                                 pathLength: m.pathLength, snr: m.snrQuarterDb ?? 0, text: m.text)
        case .channelData:
            return .channelDatagram(channelIndex: m.channelIndex, dataType: m.dataType, receivedAt: receivedAt,
                                    pathLength: m.pathLength, snr: m.snrQuarterDb ?? 0, data: m.text)
        }
    }
}
