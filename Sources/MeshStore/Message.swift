import MeshCompanion
// Plain value types for stored messages, conversations and their keys.

/// The store names a message's sender, and a direct or room thread, by the first 6 bytes of a
/// public key: MeshCompanion's `KeyPrefix` of 6 bytes, packed big-endian into 48 bits inside a
/// `ThreadKey` so that thread order follows the hex text.
extension KeyPrefix {
    /// The 6 bytes as a big-endian 48-bit number.
    public var packed: UInt64 {
        var v: UInt64 = 0
        for i in 0..<6 { v = v << 8 | UInt64(i < count ? self[i] : 0) }
        return v
    }

    /// From 6 bytes packed big-endian (`packed`).
    public init(packed: UInt64) {
        self.init(padding: (0..<6).map { UInt8(truncatingIfNeeded: packed >> UInt64(8 * (5 - $0))) })
    }

    /// The first 6 bytes of `bytes` (a prefix or a whole 32-byte key); shorter input is zero-padded.
    public init(sixOf bytes: some Collection<UInt8>) { self.init(padding: bytes, count: 6) }
}

/// What a message belongs to.
public enum MessageKind: UInt8, Sendable {
    case direct = 1
    case channel = 2
    case room = 3
}

public enum Direction: UInt8, Sendable {
    case incoming = 0
    case outgoing = 1
}

/// Delivery state of an outgoing message (incoming messages are `.received`).
public enum DeliveryStatus: UInt8, Sendable {
    case received = 0
    case pending = 1
    case sent = 2
    case acked = 3
    case failed = 4

    public var name: String {
        switch self {
        case .received: return "received"
        case .pending: return "pending"
        case .sent: return "sent"
        case .acked: return "acked"
        case .failed: return "failed"
        }
    }
}

/// A conversation: a contact (direct), a channel slot, or a room server.
public struct ThreadKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// kind in bits 56..63, key prefix or channel index in the low 48 bits.
    public var raw: UInt64

    public init(raw: UInt64) { self.raw = raw }
    public static func direct(_ peer: KeyPrefix) -> ThreadKey { ThreadKey(raw: UInt64(MessageKind.direct.rawValue) << 56 | peer.packed) }
    public static func channel(_ index: UInt8) -> ThreadKey { ThreadKey(raw: UInt64(MessageKind.channel.rawValue) << 56 | UInt64(index)) }
    public static func room(_ server: KeyPrefix) -> ThreadKey { ThreadKey(raw: UInt64(MessageKind.room.rawValue) << 56 | server.packed) }

    public var kind: MessageKind? { MessageKind(rawValue: UInt8(raw >> 56)) }
    /// The contact or room key prefix (zero for channels).
    public var peer: KeyPrefix { kind == .channel ? KeyPrefix(packed: 0) : KeyPrefix(packed: raw) }
    /// The channel index (zero for direct and room threads).
    public var channelIndex: UInt8 { kind == .channel ? UInt8(truncatingIfNeeded: raw) : 0 }

    public var description: String {
        switch kind {
        case .channel: return "channel \(channelIndex)"
        case .room: return "room \(peer)"
        case .direct: return "contact \(peer)"
        case nil: return "thread \(raw)"
        }
    }
    public static func < (a: ThreadKey, b: ThreadKey) -> Bool { a.raw < b.raw }
}

/// One message as stored in the log. `id` is assigned by the store (monotonic, never reused).
public struct StoredMessage: Equatable, Sendable {
    public var id: UInt64
    public var kind: MessageKind
    public var direction: Direction
    /// Direct: the contact's key prefix. Room: the room server's key prefix. Channel: zero.
    public var peer: KeyPrefix
    /// Channel slot (channel messages only).
    public var channelIndex: UInt8
    /// Room messages: the 4-byte key prefix of the author (txt_type 2), else 0.
    public var author: UInt32
    /// The sender's clock, epoch seconds (the dedup key, and the retry timestamp of outgoing text).
    public var senderTimestamp: UInt32
    /// When this host stored it, epoch seconds.
    public var receivedAt: UInt32
    /// 0 plain, 1 CLI data, 2 signed plain (room); channel datagrams: 0x80 | the data type's low 7 bits.
    public var textType: UInt8
    /// Channel datagrams: the 16-bit data type (never 0 on the air); 0 for texts.
    public var dataType: UInt16
    /// Encoded path_len as received (0xFF = direct).
    public var pathLength: UInt8
    /// SNR × 4 (0 if unknown).
    public var snr: Int8
    public var status: DeliveryStatus
    /// Send attempts so far (outgoing).
    public var attempts: UInt8
    /// Round trip of the acknowledgement in ms (outgoing, acked).
    public var roundTripMs: UInt32
    /// The expected ACK code of the latest attempt (outgoing).
    public var ackTag: UInt32
    /// The text as received: raw bytes, not necessarily UTF-8.
    public var text: [UInt8]

    public init(id: UInt64 = 0, kind: MessageKind, direction: Direction, peer: KeyPrefix = KeyPrefix(packed: 0),
                channelIndex: UInt8 = 0, author: UInt32 = 0, senderTimestamp: UInt32, receivedAt: UInt32,
                textType: UInt8 = 0, pathLength: UInt8 = 0xFF, snr: Int8 = 0, status: DeliveryStatus? = nil,
                attempts: UInt8 = 0, roundTripMs: UInt32 = 0, ackTag: UInt32 = 0, dataType: UInt16 = 0, text: [UInt8]) {
        self.id = id; self.kind = kind; self.direction = direction; self.peer = peer
        self.channelIndex = channelIndex; self.author = author; self.senderTimestamp = senderTimestamp
        self.receivedAt = receivedAt; self.textType = textType; self.pathLength = pathLength; self.snr = snr
        self.status = status ?? (direction == .incoming ? .received : .pending)
        self.attempts = attempts; self.roundTripMs = roundTripMs; self.ackTag = ackTag; self.text = text
        // Records from before the data type was kept whole carry only its low 7 bits (in txt_type).
        self.dataType = kind != .channel ? 0 : dataType != 0 || textType & 0x80 == 0 ? dataType : UInt16(textType & 0x7F)
    }

    /// A channel datagram: `text` holds its payload and `dataType` says what it is.
    public static func channelDatagram(channelIndex: UInt8, dataType: UInt16, receivedAt: UInt32, pathLength: UInt8 = 0xFF,
                                       snr: Int8 = 0, data: [UInt8]) -> StoredMessage {
        StoredMessage(kind: .channel, direction: .incoming, channelIndex: channelIndex, senderTimestamp: 0, receivedAt: receivedAt,
                      textType: 0x80 | UInt8(truncatingIfNeeded: dataType & 0x7F), pathLength: pathLength, snr: snr,
                      dataType: dataType, text: data)
    }

    /// A channel datagram (stored with text type 0x80 | …), not a text.
    public var isDatagram: Bool { kind == .channel && textType & 0x80 != 0 }

    public init(id: UInt64 = 0, kind: MessageKind, direction: Direction, peer: KeyPrefix = KeyPrefix(packed: 0),
                channelIndex: UInt8 = 0, senderTimestamp: UInt32, receivedAt: UInt32, text: String) {
        self.init(id: id, kind: kind, direction: direction, peer: peer, channelIndex: channelIndex,
                  senderTimestamp: senderTimestamp, receivedAt: receivedAt, text: Array(text.utf8))
    }

    public var thread: ThreadKey {
        switch kind {
        case .direct: return .direct(peer)
        case .channel: return .channel(channelIndex)
        case .room: return .room(peer)
        }
    }

    /// The text decoded as UTF-8 (invalid bytes replaced).
    public var textString: String { String(decoding: text, as: UTF8.self) }
}

/// Latest delivery state of an outgoing message, recorded by a status record in the log.
public struct DeliveryUpdate: Equatable, Sendable {
    public var status: DeliveryStatus
    public var attempts: UInt8
    public var roundTripMs: UInt32
    public var ackTag: UInt32
    public init(status: DeliveryStatus, attempts: UInt8 = 0, roundTripMs: UInt32 = 0, ackTag: UInt32 = 0) {
        self.status = status; self.attempts = attempts; self.roundTripMs = roundTripMs; self.ackTag = ackTag
    }
}

/// What `append` did with a message.
public enum AppendResult: Equatable, Sendable {
    /// Stored durably under this id.
    case stored(UInt64)
    /// A received message with the same sender, timestamp and text is already stored under this id.
    case duplicate(UInt64)

    public var id: UInt64 {
        switch self { case let .stored(i), let .duplicate(i): return i }
    }
}

/// One damaged stretch found while opening or reading.
public struct DamageReport: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var offset: UInt64
    public var length: UInt64
    public var detail: String
    public var description: String {
        length == 0 ? "\(file) at offset \(offset): \(detail); skipped"  // found while reading, through the index
                    : "\(file): \(length) damaged bytes at offset \(offset) skipped (\(detail))"
    }
}

/// What opening found and repaired.
public struct RecoveryReport: Equatable, Sendable {
    /// Damaged records skipped (their data is lost; later records are kept).
    public var damage: [DamageReport] = []
    /// Bytes of a torn tail cut off the message log (an append interrupted by a crash).
    public var truncatedBytes: UInt64 = 0
    /// True if the persisted index was missing or stale and the log was scanned in full.
    public var fullScan: Bool = false
    /// Records scanned (checked) while opening.
    public var scannedRecords: Int = 0
    /// How far the next message id was raised past what the log holds (the log was lost or cut
    /// short; ids continue above every id issued before).
    public var idsRaised: UInt64 = 0
}
