import MeshCompanion

// Framing of log records: magic, payload length, CRC, payload.
//
//     0  u32 magic 0x524D_FEFF (bytes FF FE 4D 52; 0xFF never occurs in UTF-8 text)
//     4  u32 payload length (1 ... maxPayload)
//     8  u32 CRC-32 of bytes 4..<8 and the payload, seeded with the log's salt
//    12  payload
//
// The per-store salt means that text crafted to look like a record does not pass the CRC, so
// scanning past damage to the next magic with a valid CRC cannot be fooled by message text.

enum Frame {
    static let magic: UInt32 = 0x524D_FEFF
    static let headerSize = 12
    static let maxPayload = 8192

    /// Fills in the header reserved by `begin` at `start`, for the payload written after it.
    static func seal(_ out: inout [UInt8], at start: Int, salt: UInt32) {
        let len = UInt32(out.count - start - headerSize)
        out.setU32(magic, at: start)
        out.setU32(len, at: start + 4)
        let c = out.withUnsafeBytes { p in
            let c0 = CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[(start + 4) ..< (start + 8)]), seed: salt)
            return CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[(start + headerSize)...]), seed: c0)
        }
        out.setU32(c, at: start + 8)
    }

    /// Reserves a header; write the payload after it, then `seal`.
    static func begin(_ out: inout [UInt8]) -> Int {
        let s = out.count
        out.append(contentsOf: repeatElement(0, count: headerSize))
        return s
    }

    enum Check { case ok(payloadLength: Int), needMore(Int), bad }

    /// Checks the record starting at `p[0]`. `p` may be shorter than the record (then `.needMore(total)`).
    static func check(_ p: UnsafeRawBufferPointer, salt: UInt32) -> Check {
        if p.count < headerSize { return p.count >= 4 && p.u32(0) != magic ? .bad : .needMore(headerSize) }
        guard p.u32(0) == magic else { return .bad }
        let len = Int(p.u32(4))
        guard len >= 1, len <= maxPayload else { return .bad }
        guard p.count >= headerSize + len else { return .needMore(headerSize + len) }
        let c0 = CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[4..<8]), seed: salt)
        let c = CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[headerSize ..< headerSize + len]), seed: c0)
        return c == p.u32(8) ? .ok(payloadLength: len) : .bad
    }
}

// Payload layouts (little-endian).
//
// Message (type 1):
//     0 u8 type=1   1 u8 kind   2 u8 direction   3 u8 txt_type
//     4 u64 id
//    12 u8[6] peer key prefix (direct, room) or [channel idx, data type u16, 0...] (channel)
//    18 u32 room author prefix (4 bytes as received, little-endian)
//    22 u32 sender timestamp   26 u32 received at
//    30 u8 path_len   31 i8 snr×4   32 u8 status   33 u8 attempts
//    34 u32 round trip ms   38 u32 ack tag
//    42 u16 text length   44 text
//
// Channel datagrams have txt_type 0x80 | the data type's low 7 bits; records written before the
// data type was kept whole (bytes 13..14 zero) read those 7 bits as the data type.
//
// Delivery status (type 2), the latest one for a message wins:
//     0 u8 type=2   1 u8 status   2 u8 attempts   3 u8 reserved
//     4 u64 message id   12 u32 round trip ms   16 u32 ack tag   20 u32 at (epoch s)
enum Payload {
    static let message: UInt8 = 1
    static let status: UInt8 = 2
    static let messageFixed = 44
    static let statusSize = 24
    static let maxText = Frame.maxPayload - messageFixed

    static func encode(_ m: StoredMessage, into out: inout [UInt8]) {
        out.putU8(message)
        out.putU8(m.kind.rawValue)
        out.putU8(m.direction.rawValue)
        out.putU8(m.textType)
        out.putU64(m.id)
        if m.kind == .channel {
            out.putFixed([m.channelIndex, UInt8(truncatingIfNeeded: m.dataType), UInt8(truncatingIfNeeded: m.dataType >> 8)], 6)
        } else {
            out.append(contentsOf: m.peer.bytes)
        }
        out.putU32(m.author)
        out.putU32(m.senderTimestamp)
        out.putU32(m.receivedAt)
        out.putU8(m.pathLength)
        out.putU8(UInt8(bitPattern: m.snr))
        out.putU8(m.status.rawValue)
        out.putU8(m.attempts)
        out.putU32(m.roundTripMs)
        out.putU32(m.ackTag)
        out.putU16(UInt16(m.text.count))
        out.append(contentsOf: m.text)
    }

    /// Decodes a message payload; nil if it is not a well-formed message.
    static func decodeMessage(_ p: UnsafeRawBufferPointer) -> StoredMessage? {
        guard p.count >= messageFixed, p[0] == message,
              let kind = MessageKind(rawValue: p[1]), let dir = Direction(rawValue: p[2]),
              let status = DeliveryStatus(rawValue: p[32]) else { return nil }
        let n = Int(p.u16(42))
        guard p.count == messageFixed + n else { return nil }
        let peerBytes = UnsafeRawBufferPointer(rebasing: p[12..<18])
        let dataType = kind == .channel ? UInt16(p[13]) | UInt16(p[14]) << 8 : 0
        return StoredMessage(
            id: p.u64(4), kind: kind, direction: dir,
            peer: kind == .channel ? KeyPrefix(packed: 0) : KeyPrefix(sixOf: peerBytes),
            channelIndex: kind == .channel ? p[12] : 0,
            author: p.u32(18), senderTimestamp: p.u32(22), receivedAt: p.u32(26), textType: p[3],
            pathLength: p[30], snr: Int8(bitPattern: p[31]), status: status, attempts: p[33],
            roundTripMs: p.u32(34), ackTag: p.u32(38), dataType: dataType, text: Array(p[messageFixed ..< messageFixed + n]))
    }

    /// The fields the index needs, without copying the text.
    static func peekMessage(_ p: UnsafeRawBufferPointer) -> (id: UInt64, thread: ThreadKey, outgoing: Bool)? {
        guard p.count >= messageFixed, p[0] == message, let kind = MessageKind(rawValue: p[1]),
              let dir = Direction(rawValue: p[2]), p.count == messageFixed + Int(p.u16(42)) else { return nil }
        let thread: ThreadKey
        switch kind {
        case .channel: thread = .channel(p[12])
        case .direct: thread = .direct(KeyPrefix(sixOf: UnsafeRawBufferPointer(rebasing: p[12..<18])))
        case .room: thread = .room(KeyPrefix(sixOf: UnsafeRawBufferPointer(rebasing: p[12..<18])))
        }
        return (p.u64(4), thread, dir == .outgoing)
    }

    static func encodeStatus(id: UInt64, _ u: DeliveryUpdate, at: UInt32, into out: inout [UInt8]) {
        out.putU8(status)
        out.putU8(u.status.rawValue)
        out.putU8(u.attempts)
        out.putU8(0)
        out.putU64(id)
        out.putU32(u.roundTripMs)
        out.putU32(u.ackTag)
        out.putU32(at)
    }

    static func decodeStatus(_ p: UnsafeRawBufferPointer) -> (id: UInt64, update: DeliveryUpdate)? {
        guard p.count == statusSize, p[0] == status, let s = DeliveryStatus(rawValue: p[1]) else { return nil }
        return (p.u64(4), DeliveryUpdate(status: s, attempts: p[2], roundTripMs: p.u32(12), ackTag: p.u32(16)))
    }
}
