// A TLS client session over mbedTLS that does no I/O of its own: the caller moves bytes between
// its socket and the session (meshtls_feed for what arrived, meshtls_output for what to send), so
// it runs in a poll loop with a non-blocking socket like any other protocol of the daemon.
#ifndef CMESHTLS_H
#define CMESHTLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct meshtls meshtls;

/// A client session for `host` (SNI, and the name the certificate must carry), trusting the
/// certificates in `ca_file` (PEM), or the system's CA bundle when NULL. NULL on failure, with a
/// reason in `err`. An IPv4 or IPv6 address as `host` is sent without SNI and must be named in the
/// certificate's subjectAltName as an iPAddress entry.
meshtls *meshtls_new(const char *host, const char *ca_file, char *err, size_t err_len);
void meshtls_free(meshtls *t);

/// Whether a DER certificate names the IP address `address` (text) in a subjectAltName iPAddress
/// entry: 1 yes, 0 no, -1 when the address or the certificate cannot be read. (The check the
/// sessions of IP-address hosts make; exposed for tests.)
int meshtls_certificate_names_ip(const uint8_t *der, size_t der_len, const char *address);

/// Bytes received from the socket. Returns 0, or -1 when the session's input buffer is full
/// (at most 64 KiB waits to be read).
int meshtls_feed(meshtls *t, const uint8_t *bytes, size_t len);

/// Bytes to send on the socket: the pointer and count; then meshtls_consume(n) for what was sent.
const uint8_t *meshtls_output(meshtls *t, size_t *len);
void meshtls_consume(meshtls *t, size_t n);

/// Runs the handshake as far as the received bytes allow: 1 when done, 0 when it needs more input,
/// or a negative mbedTLS error (meshtls_describe tells what it means).
int meshtls_handshake(meshtls *t);

/// Encrypts application bytes: the count taken (all of them unless the output backs up), or a
/// negative error.
int meshtls_write(meshtls *t, const uint8_t *bytes, size_t len);

/// Decrypts into `buf`: the count, 0 when nothing is complete yet, -1 when the peer closed the
/// session (close_notify), or another negative error.
int meshtls_read(meshtls *t, uint8_t *buf, size_t len);

/// Queues a close_notify alert.
void meshtls_close_notify(meshtls *t);

/// A readable reason for an error code of this session (certificate problems named).
void meshtls_describe(meshtls *t, int code, char *buf, size_t len);

#endif
