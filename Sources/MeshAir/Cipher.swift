import CMeshCrypto
import MeshCompanion

/// A 32-byte secret shared with a peer (ECDH) or a channel secret padded with zeros.
/// AES-128-ECB uses bytes 0..15; the 2-byte MAC is HMAC-SHA256 keyed with all 32 bytes.
public struct SharedSecret: Hashable, Sendable {
    public let bytes: [UInt8]

    /// 32 bytes, or 16 bytes (padded with zeros, the channel form).
    public init<C: Collection<UInt8>>(_ bytes: C) throws(AirError) {
        switch bytes.count {
        case 32: self.bytes = Array(bytes)
        case 16: self.bytes = Array(bytes) + [UInt8](repeating: 0, count: 16)
        default: throw .invalidKey
        }
    }

    /// X25519(scalar = prv[0..32] clamped, u = (1+y)/(1-y) of the peer's Ed25519 key), like
    /// `ed25519_key_exchange`. A peer key of small order (an all-zero result) is refused.
    static func exchange(privateKey: [UInt8], peer: PublicKey) throws(AirError) -> SharedSecret {
        guard privateKey.count == 64 else { throw .invalidKey }
        var out = [UInt8](repeating: 0, count: 32)
        let theirs = peer.bytes
        guard meshcrypto_shared_secret(&out, privateKey, theirs) == 0 else { throw .cryptoFailure }
        return try SharedSecret(out)
    }

    /// The first 2 bytes of HMAC-SHA256(key = 32-byte secret, ciphertext).
    public func mac<C: Collection<UInt8>>(for ciphertext: C) -> (UInt8, UInt8) {
        let code = Digest.hmacSHA256(key: bytes, ciphertext)
        return (code[0], code[1])
    }

    /// AES-128-ECB of `plaintext` zero-padded to 16 bytes (an empty plaintext stays empty).
    public func ciphertext<C: Collection<UInt8>>(for plaintext: C) -> [UInt8] {
        var out = Array(plaintext)
        let padded = (out.count + 15) / 16 * 16
        out += [UInt8](repeating: 0, count: padded - out.count)
        _ = AES128.ecb(&out, key: bytes[0 ..< 16], encrypt: true)
        return out
    }

    /// `MAC[2] || AES-128-ECB(plaintext, zero-padded)` (`Utils::encryptThenMAC`).
    public func encrypt<C: Collection<UInt8>>(_ plaintext: C) -> [UInt8] {
        let ct = ciphertext(for: plaintext)
        let (m0, m1) = mac(for: ct)
        return [m0, m1] + ct
    }

    /// Verifies the 2-byte MAC, then decrypts (`Utils::MACThenDecrypt`). The plaintext keeps its zero
    /// padding (a multiple of 16 bytes). Ciphertext that is not whole blocks is rejected.
    public func decrypt<C: Collection<UInt8>>(_ macAndCiphertext: C) throws(AirError) -> [UInt8] {
        let all = Array(macAndCiphertext)
        guard all.count > AirLimits.macSize else { throw .truncated }
        let ct = all[2...]
        guard ct.count % 16 == 0 else { throw .invalidField }
        let (m0, m1) = mac(for: ct)
        guard m0 == all[0], m1 == all[1] else { throw .macMismatch }
        var out = Array(ct)
        guard AES128.ecb(&out, key: bytes[0 ..< 16], encrypt: false) else { throw .cryptoFailure }
        return out
    }
}

/// A channel (group) secret: 16 bytes (or 32; the companion protocol only uses 16).
public struct ChannelSecret: Hashable, Sendable {
    /// 16 or 32 bytes as given.
    public let key: [UInt8]

    public init<C: Collection<UInt8>>(_ key: C) throws(AirError) {
        guard key.count == 16 || key.count == 32 else { throw .invalidKey }
        self.key = Array(key)
    }

    /// Hashtag channel: key = SHA256("#name")[0..16] (a '#' is prepended when missing).
    public init(hashtag name: String) {
        let full = name.hasPrefix("#") ? name : "#" + name
        key = Array(Digest.sha256(full.utf8).prefix(16))
    }

    /// The built-in "Public" channel, PSK `8b3387e9c5cdea6ac9e5edbaa115cd72`.
    public static let publicChannel = try! ChannelSecret(
        [0x8b, 0x33, 0x87, 0xe9, 0xc5, 0xcd, 0xea, 0x6a, 0xc9, 0xe5, 0xed, 0xba, 0xa1, 0x15, 0xcd, 0x72])

    /// SHA256(secret)[0] over 16 bytes, or over 32 when the upper half is non-zero.
    public var hash: UInt8 {
        let upperZero = key.count == 16 || key[16...].allSatisfy { $0 == 0 }
        return Digest.sha256(upperZero ? Array(key.prefix(16)) : key)[0]
    }

    /// The 32-byte form (secret || zeros) used for encryption and the MAC.
    public var sharedSecret: SharedSecret { try! SharedSecret(key.count == 16 ? key + [UInt8](repeating: 0, count: 16) : key) }
}
