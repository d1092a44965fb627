import CMeshCrypto
import MeshCompanion

/// The 8-byte packet hash used for dedup (`Packet::calculatePacketHash`):
/// SHA256(payload_type || [TRACE: path_len as u16 LE] || payload)[0..8].
/// Route bits, transport codes and path are not included.
public struct PacketHash: Hashable, Sendable, CustomStringConvertible {
    /// The 8 bytes read as a little-endian UInt64 (cheap to store in a seen table).
    public let value: UInt64

    public init(value: UInt64) { self.value = value }

    public init<C: Collection<UInt8>>(_ bytes: C) throws(AirError) {
        guard bytes.count == 8 else { throw .invalidField }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        value = v
    }

    public var bytes: [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
    public var hex: String { AirHex.encode(bytes) }
    public var description: String { hex }

    public static func compute(payloadType: PayloadType, pathLength: PathLength, payload: UnsafeRawBufferPointer) -> PacketHash {
        var h = SHA256Hasher()
        var t = payloadType.rawValue
        withUnsafeBytes(of: &t) { h.update($0) }
        if payloadType == .trace {
            var len = UInt16(pathLength.encoded).littleEndian
            withUnsafeBytes(of: &len) { h.update($0) }
        }
        h.update(payload)
        return try! PacketHash(h.finalize().prefix(8))
    }

    public static func compute<C: Collection<UInt8>>(payloadType: PayloadType, pathLength: PathLength, payload: C) -> PacketHash {
        Array(payload).withUnsafeBytes { compute(payloadType: payloadType, pathLength: pathLength, payload: $0) }
    }
}

/// The 4-byte code an ACK carries for a text message (`composeMsgPacket` / `onPeerDataRecv`).
public enum TextAck {
    /// The 6-byte ACK payload a companion sends for plain text: `code, (attempt > 3 ? attempt : 0), random`.
    public static func payload(code: AckCode, attempt: UInt8, random: UInt8) -> [UInt8] {
        code.bytes + [attempt > 3 ? attempt : 0, random]
    }

    /// Plain/CLI text: SHA256(ts LE || (txt_type<<2 | attempt&3) || text || SENDER pubkey)[0..4].
    /// `text` is the UTF-8 text without NUL (and without author prefix).
    public static func code<T: Collection<UInt8>>(timestamp: UInt32, txtType: UInt8, attempt: UInt8,
                                                   text: T, sender: PublicKey) -> AckCode {
        var h = SHA256Hasher()
        h.update(le32(timestamp) + [txtType << 2 | attempt & 3])
        h.update(text)
        h.update(sender.bytes)
        return try! AckCode(Array(h.finalize().prefix(4)))
    }

    /// Signed (room) text, txt_type 2: SHA256(ts || flags || author_pfx4 || text || RECEIVER pubkey)[0..4].
    public static func signedCode<T: Collection<UInt8>>(timestamp: UInt32, attempt: UInt8, authorPrefix: [UInt8],
                                                         text: T, receiver: PublicKey) -> AckCode {
        var h = SHA256Hasher()
        h.update(le32(timestamp) + [TextType.signedPlain.rawValue << 2 | attempt & 3])
        h.update(authorPrefix.prefix(4))
        h.update(text)
        h.update(receiver.bytes)
        return try! AckCode(Array(h.finalize().prefix(4)))
    }
}

/// Region (scope) transport codes (`TransportKey::calcTransportCode`, `RegionMap`).
public struct RegionKey: Hashable, Sendable {
    /// 16-byte key.
    public let key: [UInt8]

    public init<C: Collection<UInt8>>(_ key: C) throws(AirError) {
        guard key.count == 16 else { throw .invalidKey }
        self.key = Array(key)
    }

    /// key = SHA256("#" + name)[0..16]; a '#' is prepended when missing.
    public init(name: String) {
        let full = name.hasPrefix("#") ? name : "#" + name
        key = Array(Digest.sha256(full.utf8).prefix(16))
    }

    /// u16 LE of HMAC-SHA256(key, payload_type || payload)[0..2], with 0 -> 1 and 0xFFFF -> 0xFFFE.
    public func transportCode<C: Collection<UInt8>>(payloadType: PayloadType, payload: C) -> UInt16 {
        let mac = Digest.hmacSHA256(key: key, [payloadType.rawValue] + Array(payload))
        let code = UInt16(mac[0]) | UInt16(mac[1]) << 8
        switch code {
        case 0x0000: return 0x0001
        case 0xFFFF: return 0xFFFE
        default: return code
        }
    }
}


/// SHA-1 (mbedTLS), for the WebSocket handshakes of MeshNet's client and server (RFC 6455's
/// `Sec-WebSocket-Accept`), which have no crypto of their own. Nothing of MeshCore uses it.
public enum SHA1 {
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        _ = meshcrypto_sha1(&out, bytes, bytes.count)
        return out
    }
}
