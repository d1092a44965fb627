#include "CMeshTLS.h"

#include <arpa/inet.h>
#include <mbedtls/asn1.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MESHTLS_MAX_INPUT (64 * 1024)

// mbedTLS 3 marks structure members private; 2.28 (Debian bookworm) has no such macro.
#ifndef MBEDTLS_PRIVATE
#define MBEDTLS_PRIVATE(member) member
#endif

struct meshtls {
    mbedtls_ssl_context ssl;
    mbedtls_ssl_config conf;
    mbedtls_x509_crt ca;
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    uint8_t *in;      // received, not yet taken by mbedTLS
    size_t in_start, in_len, in_cap;
    uint8_t *out;     // produced by mbedTLS, not yet sent
    size_t out_start, out_len, out_cap;
    // A broker given as an IP address: the address (4 or 16 bytes), which the certificate must
    // name in a subjectAltName iPAddress entry; whether it did not.
    unsigned char ip[16];
    size_t ip_len;
    int ip_mismatch;
    char host[64];
};

// The CA bundles of the common distributions (Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE, others).
static const char *const system_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", NULL,
};

static int bio_send(void *ctx, const unsigned char *buf, size_t len) {
    meshtls *t = ctx;
    if (t->out_start > 0 && t->out_start == t->out_len) { t->out_start = 0; t->out_len = 0; }
    if (t->out_len + len > t->out_cap) {
        if (t->out_start > 0) {
            memmove(t->out, t->out + t->out_start, t->out_len - t->out_start);
            t->out_len -= t->out_start;
            t->out_start = 0;
        }
        if (t->out_len + len > t->out_cap) {
            if (t->out_len > 256 * 1024) return MBEDTLS_ERR_SSL_WANT_WRITE;  // the socket is not taking it
            size_t cap = t->out_cap ? t->out_cap : 4096;
            while (cap < t->out_len + len) cap *= 2;
            uint8_t *p = realloc(t->out, cap);
            if (!p) return MBEDTLS_ERR_SSL_WANT_WRITE;
            t->out = p;
            t->out_cap = cap;
        }
    }
    memcpy(t->out + t->out_len, buf, len);
    t->out_len += len;
    return (int)len;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len) {
    meshtls *t = ctx;
    size_t have = t->in_len - t->in_start;
    if (have == 0) return MBEDTLS_ERR_SSL_WANT_READ;
    if (len > have) len = have;
    memcpy(buf, t->in + t->in_start, len);
    t->in_start += len;
    if (t->in_start == t->in_len) { t->in_start = 0; t->in_len = 0; }
    return (int)len;
}

// Whether the certificate names `ip` (4 or 16 bytes) in a subjectAltName iPAddress entry
// (RFC 5280 4.2.1.6: GeneralName [7] IMPLICIT OCTET STRING). mbedTLS 2.28 lists only dNSName and
// otherName entries in `subject_alt_names`, and matches a host name against those only, so the
// extension's DER is walked here: Extensions ::= SEQUENCE OF Extension, Extension ::= SEQUENCE {
// extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }, SAN: 2.5.29.17.
static int san_names_ip(const mbedtls_x509_crt *crt, const unsigned char *ip, size_t ip_len) {
    static const unsigned char san_oid[] = {0x55, 0x1D, 0x11};
    const mbedtls_x509_buf *ext = &crt->MBEDTLS_PRIVATE(v3_ext);
    if (!ext->p || ext->len == 0) return 0;
    unsigned char *p = ext->p;
    const unsigned char *end = p + ext->len;
    size_t len;
    if (*p == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3)) {  // the [3] wrapper, if included
        if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3) != 0) return 0;
        end = p + len;
    }
    if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) return 0;
    end = p + len;
    while (p < end) {
        if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) return 0;
        unsigned char *next = p + len;
        size_t oid_len;
        if (mbedtls_asn1_get_tag(&p, next, &oid_len, MBEDTLS_ASN1_OID) != 0) return 0;
        int is_san = oid_len == sizeof san_oid && memcmp(p, san_oid, sizeof san_oid) == 0;
        p += oid_len;
        int critical = 0;
        (void)mbedtls_asn1_get_bool(&p, next, &critical);  // optional: p stays put when absent
        size_t value_len;
        if (mbedtls_asn1_get_tag(&p, next, &value_len, MBEDTLS_ASN1_OCTET_STRING) != 0) return 0;
        if (is_san) {
            unsigned char *q = p;
            const unsigned char *names_end = p + value_len;
            size_t n;
            if (mbedtls_asn1_get_tag(&q, names_end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) return 0;
            names_end = q + n;
            while (q < names_end) {
                int tag = *q;
                if (mbedtls_asn1_get_tag(&q, names_end, &n, tag) != 0) return 0;
                if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && n == ip_len && memcmp(q, ip, ip_len) == 0) return 1;
                q += n;
            }
        }
        p = next;
    }
    return 0;
}

// The verify callback for a broker given as an IP address: the leaf certificate must name it in
// an iPAddress entry (a dNSName or the CN holding the address's text does not count, RFC 6125).
static int verify_ip(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags) {
    meshtls *t = ctx;
    if (depth == 0 && !san_names_ip(crt, t->ip, t->ip_len)) {
        *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
        t->ip_mismatch = 1;
    }
    return 0;
}

int meshtls_certificate_names_ip(const uint8_t *der, size_t der_len, const char *address) {
    unsigned char ip[16];
    size_t ip_len = 0;
    if (inet_pton(AF_INET, address, ip) == 1) ip_len = 4;
    else if (inet_pton(AF_INET6, address, ip) == 1) ip_len = 16;
    else return -1;
    mbedtls_x509_crt crt;
    mbedtls_x509_crt_init(&crt);
    int r = mbedtls_x509_crt_parse_der(&crt, der, der_len);
    int found = r == 0 ? san_names_ip(&crt, ip, ip_len) : -1;
    mbedtls_x509_crt_free(&crt);
    return found;
}

static void say(char *err, size_t err_len, const char *what, int code) {
    if (!err || !err_len) return;
    char detail[160] = "";
    if (code) mbedtls_strerror(code, detail, sizeof detail);
    snprintf(err, err_len, "%s%s%s", what, code ? ": " : "", detail);
}

meshtls *meshtls_new(const char *host, const char *ca_file, char *err, size_t err_len) {
    meshtls *t = calloc(1, sizeof *t);
    if (!t) { say(err, err_len, "out of memory", 0); return NULL; }
    mbedtls_ssl_init(&t->ssl);
    mbedtls_ssl_config_init(&t->conf);
    mbedtls_x509_crt_init(&t->ca);
    mbedtls_entropy_init(&t->entropy);
    mbedtls_ctr_drbg_init(&t->drbg);
    int r;
    static const unsigned char personal[] = "pocketmesh-tls";
    if ((r = mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func, &t->entropy, personal, sizeof personal - 1)) != 0) {
        say(err, err_len, "cannot seed the random generator", r);
        goto fail;
    }
    if (ca_file) {
        r = mbedtls_x509_crt_parse_file(&t->ca, ca_file);
        if (r < 0 || t->ca.version == 0) {
            char what[600];
            snprintf(what, sizeof what, "cannot read CA certificates from %s", ca_file);
            say(err, err_len, what, r < 0 ? r : 0);
            goto fail;
        }
    } else {
        int loaded = 0;
        for (const char *const *p = system_bundles; *p && !loaded; p++) {
            if (access(*p, R_OK) != 0) continue;
            // A bundle may hold a certificate mbedTLS cannot parse: r > 0 counts those; the rest load.
            r = mbedtls_x509_crt_parse_file(&t->ca, *p);
            if (r >= 0 && t->ca.version != 0) loaded = 1;
        }
        if (!loaded) {
            say(err, err_len, "no system CA certificates found (/etc/ssl/certs/ca-certificates.crt and the like); give a CA file", 0);
            goto fail;
        }
    }
    if ((r = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
        say(err, err_len, "TLS configuration failed", r);
        goto fail;
    }
    mbedtls_ssl_conf_authmode(&t->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&t->conf, &t->ca, NULL);
    mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
    mbedtls_ssl_conf_min_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);  // TLS 1.2
    if ((r = mbedtls_ssl_setup(&t->ssl, &t->conf)) != 0) { say(err, err_len, "TLS setup failed", r); goto fail; }
    snprintf(t->host, sizeof t->host, "%s", host);
    if (inet_pton(AF_INET, host, t->ip) == 1) t->ip_len = 4;
    else if (inet_pton(AF_INET6, host, t->ip) == 1) t->ip_len = 16;
    if (t->ip_len) {
        // An IP address: no SNI (RFC 6066 forbids an address there) and no name check by mbedTLS,
        // which compares the address's text with dNSName entries; verify_ip checks iPAddress
        // entries instead. (Setting NULL explicitly is also what mbedTLS 3.6 asks for here.)
        if ((r = mbedtls_ssl_set_hostname(&t->ssl, NULL)) != 0) { say(err, err_len, "TLS setup failed", r); goto fail; }
        mbedtls_ssl_set_verify(&t->ssl, verify_ip, t);
    } else if ((r = mbedtls_ssl_set_hostname(&t->ssl, host)) != 0) {
        say(err, err_len, "bad host name for TLS", r);
        goto fail;
    }
    mbedtls_ssl_set_bio(&t->ssl, t, bio_send, bio_recv, NULL);
    return t;
fail:
    meshtls_free(t);
    return NULL;
}

void meshtls_free(meshtls *t) {
    if (!t) return;
    mbedtls_ssl_free(&t->ssl);
    mbedtls_ssl_config_free(&t->conf);
    mbedtls_x509_crt_free(&t->ca);
    mbedtls_ctr_drbg_free(&t->drbg);
    mbedtls_entropy_free(&t->entropy);
    free(t->in);
    free(t->out);
    free(t);
}

int meshtls_feed(meshtls *t, const uint8_t *bytes, size_t len) {
    if (t->in_start > 0) {
        memmove(t->in, t->in + t->in_start, t->in_len - t->in_start);
        t->in_len -= t->in_start;
        t->in_start = 0;
    }
    if (t->in_len + len > MESHTLS_MAX_INPUT) return -1;
    if (t->in_len + len > t->in_cap) {
        size_t cap = t->in_cap ? t->in_cap : 4096;
        while (cap < t->in_len + len) cap *= 2;
        uint8_t *p = realloc(t->in, cap);
        if (!p) return -1;
        t->in = p;
        t->in_cap = cap;
    }
    memcpy(t->in + t->in_len, bytes, len);
    t->in_len += len;
    return 0;
}

const uint8_t *meshtls_output(meshtls *t, size_t *len) {
    *len = t->out_len - t->out_start;
    return t->out + t->out_start;
}

void meshtls_consume(meshtls *t, size_t n) {
    size_t have = t->out_len - t->out_start;
    t->out_start += n < have ? n : have;
    if (t->out_start == t->out_len) { t->out_start = 0; t->out_len = 0; }
}

int meshtls_handshake(meshtls *t) {
    int r = mbedtls_ssl_handshake(&t->ssl);
    if (r == 0) return 1;
    if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE) return 0;
    return r < 0 ? r : -1;
}

int meshtls_write(meshtls *t, const uint8_t *bytes, size_t len) {
    size_t done = 0;
    while (done < len) {
        int r = mbedtls_ssl_write(&t->ssl, bytes + done, len - done);
        if (r == MBEDTLS_ERR_SSL_WANT_WRITE || r == MBEDTLS_ERR_SSL_WANT_READ) break;
        if (r < 0) return r;
        done += (size_t)r;
    }
    return (int)done;
}

int meshtls_read(meshtls *t, uint8_t *buf, size_t len) {
    int r = mbedtls_ssl_read(&t->ssl, buf, len);
    if (r > 0) return r;
    if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE) return 0;
    if (r == 0 || r == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) return -1;
    return r;
}

void meshtls_close_notify(meshtls *t) { (void)mbedtls_ssl_close_notify(&t->ssl); }

void meshtls_describe(meshtls *t, int code, char *buf, size_t len) {
    if (!len) return;
    uint32_t flags = mbedtls_ssl_get_verify_result(&t->ssl);
    if (code == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != (uint32_t)-1) {
        char info[256];
        int n = mbedtls_x509_crt_verify_info(info, sizeof info, "", flags);
        // One line: the reasons joined with "; ".
        for (int i = 0; i < n && info[i]; i++) if (info[i] == '\n') info[i] = (i + 1 < n && info[i + 1]) ? ';' : '\0';
        if (t->ip_mismatch) {
            // The CN-mismatch flag was ours: say what was missing.
            uint32_t others = flags & ~(uint32_t)MBEDTLS_X509_BADCERT_CN_MISMATCH;
            if (others) n = mbedtls_x509_crt_verify_info(info, sizeof info, "", others);
            for (int i = 0; others && i < n && info[i]; i++) if (info[i] == '\n') info[i] = (i + 1 < n && info[i + 1]) ? ';' : '\0';
            snprintf(buf, len, "the broker's certificate was refused (it names no IP address %s in its subjectAltName%s%s)",
                     t->host, others ? "; " : "", others ? info : "");
            return;
        }
        snprintf(buf, len, "the broker's certificate was refused (%s)", info);
        return;
    }
    char detail[200];
    mbedtls_strerror(code, detail, sizeof detail);
    snprintf(buf, len, "TLS: %s", detail);
}
