import MeshCompanion
import Crypto

/// The public key is MeshCompanion's `PublicKey` (one type for frames, packets, the store and the
/// simulator); on air its first 1, 2 or 3 bytes are the node's "hash" in paths and datagram headers.
extension PublicKey {
    /// Checks only the length (any 32 bytes can appear on air).
    public init<C: Collection<UInt8>>(air bytes: C) throws(AirError) {
        guard bytes.count == AirLimits.publicKeySize, let k = PublicKey(bytes) else { throw .invalidKey }
        self = k
    }

    /// The 1-byte node hash used by datagrams (`dest_hash`, `src_hash`).
    public var hashByte: UInt8 { self[0] }

    /// The first `count` bytes as an array (path hashes use 1...3).
    public func leadingBytes(_ count: Int) -> [UInt8] { Array(bytes.prefix(count)) }

    /// Whether `hash` equals the first `hash.count` bytes of this key.
    public func matches<C: Collection<UInt8>>(hash: C) -> Bool {
        hash.count <= PublicKey.size && withUnsafeBytes { k in zip(hash, k).allSatisfy { $0 == $1 } }
    }

    /// Starts with 0x00 or 0xFF, which the firmware never uses for its own identity.
    public var hasReservedPrefix: Bool { self[0] == 0x00 || self[0] == 0xFF }

    /// Verifies an Ed25519 signature with swift-crypto.
    public func isValidSignature<S: Collection<UInt8>, M: Collection<UInt8>>(_ signature: S, for message: M) -> Bool {
        guard signature.count == AirLimits.signatureSize,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: bytes) else { return false }
        return key.isValidSignature(Array(signature), for: Array(message))
    }
}

/// This node's Ed25519 identity, in the firmware's terms (`LocalIdentity`).
///
/// `privateKey` is the firmware's 64-byte orlp "expanded" key: SHA512(seed) with bytes 0..31 clamped
/// (the scalar) and bytes 32..63 the nonce prefix. It is what `EXPORT_PRIVATE_KEY` returns and
/// `IMPORT_PRIVATE_KEY` takes; it is not `seed || pubkey`.
public struct LocalIdentity {
    public let publicKey: PublicKey
    /// 64-byte expanded private key (export form).
    public let privateKey: [UInt8]
    /// Set when the identity came from a seed: signing goes through swift-crypto.
    private let seedKey: Curve25519.Signing.PrivateKey?

    /// From a 32-byte Ed25519 seed. Throws `.reservedKeyPrefix` if the public key starts with 0x00/0xFF.
    public init<C: Collection<UInt8>>(seed: C) throws(AirError) {
        guard seed.count == 32 else { throw .invalidKey }
        let seedBytes = Array(seed)
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seedBytes) else { throw .invalidKey }
        let pub = try PublicKey(air: key.publicKey.rawRepresentation)
        guard !pub.hasReservedPrefix else { throw .reservedKeyPrefix }
        var expanded = Array(SHA512.hash(data: seedBytes))
        expanded[0] &= 248
        expanded[31] &= 63
        expanded[31] |= 64
        publicKey = pub
        privateKey = expanded
        seedKey = key
    }

    /// Imports a 64-byte expanded private key (no seed). The public key is scalar * B; signatures are
    /// computed from the scalar and prefix with `Edwards25519` (not constant-time).
    /// Throws `.reservedKeyPrefix` for public keys starting with 0x00/0xFF, like the firmware's import.
    public init<C: Collection<UInt8>>(privateKey expanded: C) throws(AirError) {
        guard expanded.count == 64 else { throw .invalidKey }
        let bytes = Array(expanded)
        let scalar = UInt256(littleEndian: bytes[0 ..< 32])
        guard scalar != .zero else { throw .invalidKey }
        let pub = try PublicKey(air: Edwards25519.encode(Edwards25519.multiplyBase(scalar)))
        guard !pub.hasReservedPrefix else { throw .reservedKeyPrefix }
        publicKey = pub
        privateKey = bytes
        seedKey = nil
    }

    /// A new identity from `rng` (32 seed bytes), regenerated until the public key does not start
    /// with 0x00 or 0xFF, as the firmware does. A seeded generator gives reproducible identities.
    public static func generate<R: RandomNumberGenerator>(using rng: inout R) -> LocalIdentity {
        while true {
            var seed = [UInt8](repeating: 0, count: 32)
            for i in 0 ..< 32 { seed[i] = UInt8.random(in: 0 ... 255, using: &rng) }
            if let id = try? LocalIdentity(seed: seed) { return id }
        }
    }

    /// A new identity from the system generator.
    public static func generate() -> LocalIdentity {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    /// Whether this identity can sign through swift-crypto (it was made from a seed).
    public var hasSeed: Bool { seedKey != nil }

    /// Deterministic Ed25519 signature (64 bytes) over `message`.
    public func sign<M: Collection<UInt8>>(_ message: M) -> [UInt8] {
        let msg = Array(message)
        if let key = seedKey, let sig = try? key.signature(for: msg) {
            return Array(sig)
        }
        return Ed25519Expanded.sign(msg, privateKey: privateKey, publicKey: publicKey.bytes)
    }

    /// The firmware's ECDH secret with `peer` (raw X25519 output, no KDF). Cache it per contact.
    public func sharedSecret(with peer: PublicKey) throws(AirError) -> SharedSecret {
        try SharedSecret.exchange(privateKey: privateKey, peer: peer)
    }
}

/// Ed25519 signing from an expanded key (RFC 8032 steps with a given scalar and prefix).
enum Ed25519Expanded {
    static func sign(_ message: [UInt8], privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8] {
        let a = Scalar(reducing: UInt256(littleEndian: privateKey[0 ..< 32]))
        var h = SHA512()
        h.update(data: privateKey[32 ..< 64])
        h.update(data: message)
        let r = h.finalize().withUnsafeBytes { Scalar(reducing: $0) }
        let R = Edwards25519.encode(Edwards25519.multiplyBase(r.value))
        var hk = SHA512()
        hk.update(data: R)
        hk.update(data: publicKey)
        hk.update(data: message)
        let k = hk.finalize().withUnsafeBytes { Scalar(reducing: $0) }
        let s = r + k * a
        return R + s.bytes
    }
}
