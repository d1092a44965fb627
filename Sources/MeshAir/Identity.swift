import CMeshCrypto
import MeshCompanion

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

    /// Verifies an Ed25519 signature (libsodium; a non-canonical S, or an R or key of small order,
    /// is refused).
    public func isValidSignature<S: Collection<UInt8>, M: Collection<UInt8>>(_ signature: S, for message: M) -> Bool {
        guard signature.count == AirLimits.signatureSize else { return false }
        let sig = Array(signature), msg = Array(message), key = bytes
        return meshcrypto_ed25519_verify(sig, msg, msg.count, key) == 0
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
    /// Whether the identity was made from a seed (a radio's exported key has none). Signing does
    /// not depend on it: it always uses the expanded key.
    public let hasSeed: Bool

    /// From a 32-byte Ed25519 seed. Throws `.reservedKeyPrefix` if the public key starts with 0x00/0xFF.
    public init<C: Collection<UInt8>>(seed: C) throws(AirError) {
        guard seed.count == 32 else { throw .invalidKey }
        var expanded = Digest.sha512(seed)
        expanded[0] &= 248
        expanded[31] &= 63
        expanded[31] |= 64
        try self.init(expanded: expanded, hasSeed: true)
    }

    /// Imports a 64-byte expanded private key (no seed). The public key is scalar * B (the scalar
    /// taken mod L).
    /// Throws `.reservedKeyPrefix` for public keys starting with 0x00/0xFF, like the firmware's import.
    public init<C: Collection<UInt8>>(privateKey expanded: C) throws(AirError) {
        guard expanded.count == 64 else { throw .invalidKey }
        try self.init(expanded: Array(expanded), hasSeed: false)
    }

    private init(expanded: [UInt8], hasSeed: Bool) throws(AirError) {
        var pub = [UInt8](repeating: 0, count: 32)
        guard meshcrypto_ed25519_public_key(&pub, expanded) == 0 else { throw .invalidKey }  // scalar 0 mod L
        let key = try PublicKey(air: pub)
        guard !key.hasReservedPrefix else { throw .reservedKeyPrefix }
        publicKey = key
        privateKey = expanded
        self.hasSeed = hasSeed
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

    /// A new identity from the system's generator (libsodium's random bytes).
    public static func generate() -> LocalIdentity {
        var rng = SecureRandom()
        return generate(using: &rng)
    }

    /// Deterministic Ed25519 signature (64 bytes) over `message`, from the expanded key
    /// (constant-time, libsodium).
    public func sign<M: Collection<UInt8>>(_ message: M) -> [UInt8] {
        let msg = Array(message)
        var sig = [UInt8](repeating: 0, count: AirLimits.signatureSize)
        let pub = publicKey.bytes
        _ = meshcrypto_ed25519_sign(&sig, msg, msg.count, privateKey, pub)  // fails only for r = 0 mod L
        return sig
    }

    /// The firmware's ECDH secret with `peer` (raw X25519 output, no KDF). Cache it per contact.
    public func sharedSecret(with peer: PublicKey) throws(AirError) -> SharedSecret {
        try SharedSecret.exchange(privateKey: privateKey, peer: peer)
    }
}
