/* ctlsign.c — HMAC-SHA256 and the signature of a control record (see
 * ctlsign.h).
 *
 * HMAC is RFC 2104 over the streaming SHA-256 of sha256.c: a key longer
 * than the block (64 bytes) is hashed first, the inner and outer pads are
 * 0x36 and 0x5c. The canonical form is fed to the hash piece by piece, so
 * nothing is copied or allocated. Verification compares every byte of the
 * 32-byte MAC (no early exit). spec/c/test_ctlsign.c checks RFC 4231's
 * test vectors; spec/fuzz/fuzz_ctlsign.c the verifier on any header. */
#include "ctlsign.h"

#include "sha256.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The hash state after the key's pad (pad byte p) for the key k (<= 64
 * bytes after hashing a longer one). */
static void keyed(eg_sha256 *s, const unsigned char k[64], unsigned char p) {
    unsigned char pad[64];
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ p;
    eg_sha256_init(s);
    eg_sha256_update(s, pad, 64);
}

/* The block-sized key of an HMAC with key (klen bytes). */
static void block_key(const void *key, size_t klen, unsigned char k[64]) {
    memset(k, 0, 64);
    if (klen > 64) {
        eg_sha256 s;
        eg_sha256_init(&s);
        eg_sha256_update(&s, key, klen);
        eg_sha256_final(&s, k);
    } else if (klen) {
        memcpy(k, key, klen);
    }
}

/* Finishes an HMAC whose inner hash is in *inner. */
static void hmac_final(const unsigned char k[64], eg_sha256 *inner, unsigned char out[32]) {
    unsigned char ih[32];
    eg_sha256_final(inner, ih);
    eg_sha256 s;
    keyed(&s, k, 0x5c);
    eg_sha256_update(&s, ih, 32);
    eg_sha256_final(&s, out);
}

void eg_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n, unsigned char out[32]) {
    unsigned char k[64];
    block_key(key, klen, k);
    eg_sha256 s;
    keyed(&s, k, 0x36);
    eg_sha256_update(&s, msg, n);
    hmac_final(k, &s, out);
}

#define KEYRING_MAGIC "errgate-keyring-v1"

/* Parses the key ring text (n bytes, after its first line) into *key.
 * Returns NULL, or the reason it is refused. */
static const char *parse_ring(const unsigned char *p, size_t n, eg_ctlkey *key) {
    size_t used = 0;
    int nkeys = 0;
    const unsigned char *end = p + n;
    while (p < end) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        const unsigned char *eol = nl ? nl : end;
        size_t len = (size_t)(eol - p);
        while (len > 0 && isspace(p[len - 1])) len--;
        if (len > 0 && p[0] != '#') {
            if (len < EG_CTLSIGN_KEY_MIN) return "a key of the ring is shorter than 16 bytes";
            if (nkeys > EG_CTLSIGN_ACCEPT_MAX) return "the ring holds more than 4 keys";
            memcpy(key->k + used, p, len); /* fits: the whole file does */
            used += len;
            if (nkeys == 0) key->n = len;
            else key->accept[nkeys - 1] = len;
            nkeys++;
        }
        p = nl ? nl + 1 : end;
    }
    if (nkeys == 0) return "the ring holds no key";
    key->naccept = nkeys - 1;
    return NULL;
}

int eg_ctlsign_load(const char *path, eg_ctlkey *key, char *err, size_t errlen) {
    memset(key, 0, sizeof *key);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "control key file %s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char buf[EG_CTLSIGN_KEY_MAX + 1];
    size_t n = fread(buf, 1, sizeof buf, f);
    int bad = ferror(f);
    fclose(f);
    while (n > 0 && isspace(buf[n - 1])) n--;
    if (bad || n > EG_CTLSIGN_KEY_MAX || n < EG_CTLSIGN_KEY_MIN) {
        snprintf(err, errlen, "control key file %s: %s", path,
                 bad                      ? "cannot be read"
                 : n < EG_CTLSIGN_KEY_MIN ? "shorter than 16 bytes"
                                          : "longer than 1024 bytes");
        return -1;
    }
    size_t magic = sizeof KEYRING_MAGIC - 1;
    if (n > magic && !memcmp(buf, KEYRING_MAGIC, magic) && (buf[magic] == '\n' || buf[magic] == '\r')) {
        const char *why = parse_ring(buf + magic + 1, n - magic - 1, key);
        if (why) {
            memset(key, 0, sizeof *key);
            snprintf(err, errlen, "control key file %s: %s", path, why);
            return -1;
        }
        return 0;
    }
    memcpy(key->k, buf, n);
    key->n = n;
    return 0;
}

/* The record's MAC over the canonical form (ctlsign.h) with the key of
 * key_len bytes at key. */
static void record_mac(const unsigned char *key, size_t key_len, const char *kind, const void *k, size_t klen,
                       const void *v, size_t vlen, unsigned char out[32]) {
    unsigned char bk[64];
    block_key(key, key_len, bk);
    eg_sha256 s;
    keyed(&s, bk, 0x36);
    char num[24];
    eg_sha256_update(&s, "errgate-ctl-v1", sizeof "errgate-ctl-v1"); /* with its NUL */
    eg_sha256_update(&s, kind, strlen(kind) + 1);
    int m = snprintf(num, sizeof num, "%zu", klen);
    eg_sha256_update(&s, num, (size_t)m + 1);
    if (klen) eg_sha256_update(&s, k, klen);
    m = snprintf(num, sizeof num, "%zu", vlen);
    eg_sha256_update(&s, num, (size_t)m + 1);
    if (vlen) eg_sha256_update(&s, v, vlen);
    hmac_final(bk, &s, out);
}

void eg_ctlsign_sign(const eg_ctlkey *key, const char *kind, const void *k, size_t klen, const void *v, size_t vlen,
                     char sig[EG_CTLSIGN_LEN + 1]) {
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[32];
    record_mac(key->k, key->n, kind, k, klen, v, vlen, mac);
    memcpy(sig, "v1:", 3);
    for (int i = 0; i < 32; i++) {
        sig[3 + 2 * i] = hex[mac[i] >> 4];
        sig[4 + 2 * i] = hex[mac[i] & 15];
    }
    sig[EG_CTLSIGN_LEN] = '\0';
}

/* The value of one lowercase hex digit, or -1. */
static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int eg_ctlsign_verify(const eg_ctlkey *key, const char *kind, const void *k, size_t klen, const void *v, size_t vlen,
                      const void *sig, size_t siglen, const char **reason) {
    const unsigned char *s = sig;
    if (!s) {
        *reason = "unsigned";
        return -1;
    }
    unsigned char got[32];
    if (siglen != EG_CTLSIGN_LEN || memcmp(s, "v1:", 3) != 0) {
        *reason = "malformed";
        return -1;
    }
    for (int i = 0; i < 32; i++) {
        int hi = hexval(s[3 + 2 * i]), lo = hexval(s[4 + 2 * i]);
        if (hi < 0 || lo < 0) {
            *reason = "malformed";
            return -1;
        }
        got[i] = (unsigned char)(hi << 4 | lo);
    }
    /* every key of the ring is tried, whichever matched: the time says
     * nothing of which key signed */
    int match = 0;
    size_t off = 0, len = key->n;
    for (int j = 0; j <= key->naccept && j <= EG_CTLSIGN_ACCEPT_MAX; j++) {
        unsigned char want[32];
        record_mac(key->k + off, len, kind, k, klen, v, vlen, want);
        unsigned diff = 0;
        for (int i = 0; i < 32; i++) diff |= (unsigned)(got[i] ^ want[i]);
        match |= diff == 0;
        off += len;
        if (j < key->naccept) len = key->accept[j];
    }
    if (!match) {
        *reason = "bad_signature";
        return -1;
    }
    return 0;
}
