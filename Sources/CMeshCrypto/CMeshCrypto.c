#include "CMeshCrypto.h"

#include <mbedtls/aes.h>
#include <mbedtls/bignum.h>
#include <mbedtls/md.h>
#include <mbedtls/sha1.h>
#include <mbedtls/version.h>
#include <pthread.h>
#include <sodium.h>
#include <string.h>

// sodium_init() is not called: the functions used here need no set-up (their implementations are
// chosen when libsodium is compiled, and randombytes readies itself, see meshcrypto_random), and
// calling it would link every implementation it chooses among (Argon2, BLAKE2b, ChaCha20, ...).

// MeshCore's private key is the orlp "expanded" Ed25519 key: SHA-512(seed) with the first half
// clamped (the scalar a) and the second half the nonce prefix; the seed is never exported. libsodium's
// crypto_sign_* wants the seed, so signing is done here from a and the prefix with its constant-time
// scalar and point operations, exactly as RFC 8032 signs.

// a mod L (the 32-byte scalar, zero-extended to the 64 bytes crypto_core_ed25519_scalar_reduce takes).
static void reduce_scalar(uint8_t out[32], const uint8_t a[32]) {
    uint8_t wide[64];
    memcpy(wide, a, 32);
    memset(wide + 32, 0, 32);
    crypto_core_ed25519_scalar_reduce(out, wide);
    sodium_memzero(wide, sizeof wide);
}

int meshcrypto_ed25519_public_key(uint8_t public_key[32], const uint8_t private_key[64]) {
    uint8_t a[32];
    reduce_scalar(a, private_key);
    int rc = crypto_scalarmult_ed25519_base_noclamp(public_key, a);  // -1 for a = 0
    sodium_memzero(a, sizeof a);
    return rc == 0 ? 0 : -1;
}

int meshcrypto_ed25519_sign(uint8_t signature[64], const uint8_t *message, size_t length,
                            const uint8_t private_key[64], const uint8_t public_key[32]) {
    crypto_hash_sha512_state h;
    uint8_t wide[64], r[32], k[32], a[32];
    int rc = -1;
    // r = SHA-512(prefix || M) mod L; R = r·B
    crypto_hash_sha512_init(&h);
    crypto_hash_sha512_update(&h, private_key + 32, 32);
    crypto_hash_sha512_update(&h, message, length);
    crypto_hash_sha512_final(&h, wide);
    crypto_core_ed25519_scalar_reduce(r, wide);
    if (crypto_scalarmult_ed25519_base_noclamp(signature, r) != 0) goto done;
    // k = SHA-512(R || A || M) mod L; S = r + k·a mod L
    crypto_hash_sha512_init(&h);
    crypto_hash_sha512_update(&h, signature, 32);
    crypto_hash_sha512_update(&h, public_key, 32);
    crypto_hash_sha512_update(&h, message, length);
    crypto_hash_sha512_final(&h, wide);
    crypto_core_ed25519_scalar_reduce(k, wide);
    reduce_scalar(a, private_key);
    crypto_core_ed25519_scalar_mul(k, k, a);
    crypto_core_ed25519_scalar_add(signature + 32, r, k);
    rc = 0;
done:
    sodium_memzero(&h, sizeof h);
    sodium_memzero(wide, sizeof wide);
    sodium_memzero(r, sizeof r);
    sodium_memzero(k, sizeof k);
    sodium_memzero(a, sizeof a);
    if (rc != 0) memset(signature, 0, 64);
    return rc;
}

int meshcrypto_ed25519_verify(const uint8_t signature[64], const uint8_t *message, size_t length,
                              const uint8_t public_key[32]) {
    return crypto_sign_ed25519_verify_detached(signature, message, length, public_key) == 0 ? 0 : -1;
}

// u = (1 + y) / (1 - y) mod p with mbedTLS's big numbers, for the keys libsodium's conversion refuses
// (not on the curve, of small order, or outside the prime-order subgroup) and the firmware still
// converts. Only public values go through it, so it need not be constant-time.
void meshcrypto_montgomery_u_unchecked(uint8_t u[32], const uint8_t public_key[32]) {
    uint8_t y_bytes[32];
    mbedtls_mpi p, y, n, d;
    int ok = 1;
    memcpy(y_bytes, public_key, 32);
    y_bytes[31] &= 0x7f;
    mbedtls_mpi_init(&p); mbedtls_mpi_init(&y); mbedtls_mpi_init(&n); mbedtls_mpi_init(&d);
    ok = ok && mbedtls_mpi_lset(&p, 1) == 0 && mbedtls_mpi_shift_l(&p, 255) == 0 && mbedtls_mpi_sub_int(&p, &p, 19) == 0;
    ok = ok && mbedtls_mpi_read_binary_le(&y, y_bytes, 32) == 0 && mbedtls_mpi_mod_mpi(&y, &y, &p) == 0;
    ok = ok && mbedtls_mpi_add_int(&n, &y, 1) == 0;                                    // 1 + y
    ok = ok && mbedtls_mpi_lset(&d, 1) == 0 && mbedtls_mpi_sub_mpi(&d, &d, &y) == 0
            && mbedtls_mpi_mod_mpi(&d, &d, &p) == 0;                                   // 1 - y mod p
    if (ok && mbedtls_mpi_cmp_int(&d, 0) == 0) {
        ok = mbedtls_mpi_lset(&n, 0) == 0;                                             // the firmware's 1/0 = 0
    } else {
        ok = ok && mbedtls_mpi_inv_mod(&d, &d, &p) == 0 && mbedtls_mpi_mul_mpi(&n, &n, &d) == 0
                && mbedtls_mpi_mod_mpi(&n, &n, &p) == 0;
    }
    if (!ok || mbedtls_mpi_write_binary_le(&n, u, 32) != 0) memset(u, 0, 32);  // only on allocation failure
    mbedtls_mpi_free(&p); mbedtls_mpi_free(&y); mbedtls_mpi_free(&n); mbedtls_mpi_free(&d);
}

void meshcrypto_montgomery_u(uint8_t u[32], const uint8_t public_key[32]) {
    if (crypto_sign_ed25519_pk_to_curve25519(u, public_key) != 0) meshcrypto_montgomery_u_unchecked(u, public_key);
}

int meshcrypto_shared_secret(uint8_t secret[32], const uint8_t private_key[64], const uint8_t peer[32]) {
    uint8_t u[32];
    meshcrypto_montgomery_u(u, peer);
    // crypto_scalarmult_curve25519 clamps the scalar as the firmware does ([0] &= 248, [31] &= 127 | 64)
    // and refuses an all-zero result.
    int rc = crypto_scalarmult_curve25519(secret, private_key, u);
    if (rc != 0) memset(secret, 0, 32);
    return rc == 0 ? 0 : -1;
}

int meshcrypto_aes128_ecb(uint8_t *blocks, size_t length, const uint8_t key[16], int encrypt) {
    if (length % 16 != 0) return -1;
    mbedtls_aes_context aes;
    mbedtls_aes_init(&aes);
    int rc = encrypt ? mbedtls_aes_setkey_enc(&aes, key, 128) : mbedtls_aes_setkey_dec(&aes, key, 128);
    for (size_t i = 0; rc == 0 && i < length; i += 16) {
        rc = mbedtls_aes_crypt_ecb(&aes, encrypt ? MBEDTLS_AES_ENCRYPT : MBEDTLS_AES_DECRYPT, blocks + i, blocks + i);
    }
    mbedtls_aes_free(&aes);  // wipes the round keys
    return rc == 0 ? 0 : -1;
}

int meshcrypto_hmac_sha256(uint8_t mac[32], const uint8_t *key, size_t key_length,
                           const uint8_t *message, size_t length) {
    const mbedtls_md_info_t *sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    return sha256 && mbedtls_md_hmac(sha256, key, key_length, message, length, mac) == 0 ? 0 : -1;
}

int meshcrypto_sha1(uint8_t digest[20], const uint8_t *message, size_t length) {
#if MBEDTLS_VERSION_MAJOR >= 3
    return mbedtls_sha1(message, length, digest) == 0 ? 0 : -1;
#else
    return mbedtls_sha1_ret(message, length, digest) == 0 ? 0 : -1;
#endif
}

static pthread_once_t random_once = PTHREAD_ONCE_INIT;
static void random_init(void) { randombytes_stir(); }

void meshcrypto_random(uint8_t *buffer, size_t length) {
    pthread_once(&random_once, random_init);  // the first use opens the source once, on one thread
    randombytes_buf(buffer, length);
}
