import CMeshCrypto
import CSodium

// The primitives MeshCore's packets need, from two C libraries: libsodium (SHA-256/512, Ed25519,
// X25519, random bytes) and mbedTLS (AES-128, HMAC-SHA256), which the TLS transport links anyway.
// Ed25519 from a 64-byte expanded key and the firmware's ECDH are composed in CMeshCrypto.

/// SHA-256, fed in pieces (libsodium).
struct SHA256Hasher {
    private var state = crypto_hash_sha256_state()

    init() { crypto_hash_sha256_init(&state) }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    mutating func update<C: Collection<UInt8>>(_ bytes: C) {
        if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update($0) }
        }
    }

    /// The 32-byte digest (the hasher is spent).
    mutating func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256_final(&state, &out)
        return out
    }
}

public enum Digest {
    public static func sha256<C: Collection<UInt8>>(_ bytes: C) -> [UInt8] {
        var h = SHA256Hasher()
        h.update(bytes)
        return h.finalize()
    }

    static func sha512<C: Collection<UInt8>>(_ bytes: C) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        let input = Array(bytes)
        crypto_hash_sha512(&out, input, UInt64(input.count))
        return out
    }

    /// HMAC-SHA256 (mbedTLS).
    static func hmacSHA256<C: Collection<UInt8>>(key: [UInt8], _ message: C) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let input = Array(message)
        _ = meshcrypto_hmac_sha256(&out, key, key.count, input, input.count)
        return out
    }
}

/// AES-128 on whole blocks (mbedTLS), as MeshCore uses it: ECB, one key, no IV.
enum AES128 {
    /// Encrypts (or decrypts) `blocks` in place; its count must be a multiple of 16.
    static func ecb(_ blocks: inout [UInt8], key: ArraySlice<UInt8>, encrypt: Bool) -> Bool {
        let k = Array(key)
        guard k.count == 16, blocks.count % 16 == 0 else { return false }
        let count = blocks.count
        return blocks.withUnsafeMutableBufferPointer { b in
            meshcrypto_aes128_ecb(b.baseAddress, count, k, encrypt ? 1 : 0) == 0
        }
    }
}

/// Random bytes from the kernel's generator, through libsodium: for keys and channel secrets.
public struct SecureRandom: RandomNumberGenerator {
    public init() {}

    public mutating func next() -> UInt64 {
        var v: UInt64 = 0
        withUnsafeMutableBytes(of: &v) { meshcrypto_random($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
        return v
    }

    /// `count` random bytes.
    public static func bytes(count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { b in if let p = b.baseAddress { meshcrypto_random(p, count) } }
        return out
    }
}
