#ifndef CMESHCRYPTO_H
#define CMESHCRYPTO_H

// MeshCore's crypto over libsodium (Ed25519 and X25519, constant-time) and mbedTLS (AES-128,
// HMAC-SHA256, SHA-1): the compositions a 64-byte expanded private key needs, done in C so that
// intermediate secrets are wiped. Every function returns 0 on success and -1 on failure.

#include <stddef.h>
#include <stdint.h>

/// The public key a·B of a MeshCore 64-byte expanded private key (the clamped scalar a, then the
/// nonce prefix), a taken mod L. -1 when a is 0 mod L.
int meshcrypto_ed25519_public_key(uint8_t public_key[32], const uint8_t private_key[64]);

/// The deterministic Ed25519 signature (RFC 8032) from an expanded private key and its public key.
int meshcrypto_ed25519_sign(uint8_t signature[64], const uint8_t *message, size_t length,
                            const uint8_t private_key[64], const uint8_t public_key[32]);

/// 0 when `signature` is a valid Ed25519 signature of `message` by `public_key`.
int meshcrypto_ed25519_verify(const uint8_t signature[64], const uint8_t *message, size_t length,
                              const uint8_t public_key[32]);

/// The Montgomery u = (1 + y) / (1 - y) mod 2^255-19 of an encoded Ed25519 public key, for any 32
/// bytes as the firmware's `ed25519_key_exchange` computes it: the sign bit is ignored, y >= p is
/// reduced, and y = 1 gives 0.
void meshcrypto_montgomery_u(uint8_t u[32], const uint8_t public_key[32]);

/// The same with big numbers only (the path for keys that libsodium's conversion refuses); for tests.
void meshcrypto_montgomery_u_unchecked(uint8_t u[32], const uint8_t public_key[32]);

/// The firmware's ECDH secret: X25519(clamped private_key[0..32], the peer's Montgomery u). -1 when
/// the result is all zero (a peer key of small order).
int meshcrypto_shared_secret(uint8_t secret[32], const uint8_t private_key[64], const uint8_t peer[32]);

/// AES-128 on whole 16-byte blocks in place (ECB): `length` must be a multiple of 16.
int meshcrypto_aes128_ecb(uint8_t *blocks, size_t length, const uint8_t key[16], int encrypt);

/// HMAC-SHA256.
int meshcrypto_hmac_sha256(uint8_t mac[32], const uint8_t *key, size_t key_length,
                           const uint8_t *message, size_t length);

/// SHA-1 (the WebSocket handshake's accept key; nothing else).
int meshcrypto_sha1(uint8_t digest[20], const uint8_t *message, size_t length);

/// Random bytes from the kernel's generator (libsodium's randombytes).
void meshcrypto_random(uint8_t *buffer, size_t length);

#endif
