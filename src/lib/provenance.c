/* provenance.c — signing and checking a replayed record's claims (see
 * provenance.h). */
#include "provenance.h"
#include "headers.h"
#include "record.h"
#include "sha256.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const EG_PROV_CLAIMS[] = {
    EG_H_ID, EG_H_ORIG_TOPIC, EG_H_ORIG_PARTITION, EG_H_ORIG_OFFSET, EG_H_ORIG_TIMESTAMP, EG_H_ORIG_GROUP, NULL};

static int is_claim(const char *name) {
    for (const char *const *c = EG_PROV_CLAIMS; *c; c++)
        if (strcmp(name, *c) == 0) return 1;
    return 0;
}

int eg_prov_has_claims(const rd_kafka_headers_t *h) {
    const char *name;
    const void *v;
    size_t n;
    for (size_t i = 0; h && rd_kafka_header_get_all(h, i, &name, &v, &n) == 0; i++)
        if ((name[0] == 'e' || name[0] == 'o') && (is_claim(name) || strcmp(name, EG_PROV_HEADER) == 0)) return 1;
    return 0;
}

/* The canonical claims of h for value (v, vlen) (provenance.h), in a buffer
 * the caller frees; its length into *len. */
static unsigned char *claims(const rd_kafka_headers_t *h, const void *v, size_t vlen, size_t *len) {
    size_t cap = 128, n = 0;
    for (const char *const *c = EG_PROV_CLAIMS; *c; c++) {
        const void *val;
        size_t vl = 0;
        cap += strlen(*c) + 24;
        if (h && rd_kafka_header_get_last(h, *c, &val, &vl) == 0) cap += vl;
    }
    unsigned char *b = eg_xmalloc(cap);
    for (const char *const *c = EG_PROV_CLAIMS; *c; c++) {
        const void *val = NULL;
        size_t vl = 0;
        int has = h && rd_kafka_header_get_last(h, *c, &val, &vl) == 0;
        size_t nl = strlen(*c) + 1;
        memcpy(b + n, *c, nl);
        n += nl;
        n += (size_t)snprintf((char *)b + n, cap - n, "%lld", has ? (long long)vl : -1LL) + 1; /* and its NUL */
        if (has && vl) {
            memcpy(b + n, val, vl);
            n += vl;
        }
    }
    memcpy(b + n, "value", 6);
    n += 6;
    eg_sha256 s;
    unsigned char dig[32];
    eg_sha256_init(&s);
    eg_sha256_update(&s, v ? v : "", v ? vlen : 0);
    eg_sha256_final(&s, dig);
    for (int i = 0; i < 32; i++) n += (size_t)snprintf((char *)b + n, cap - n, "%02x", dig[i]);
    *len = n;
    return b;
}

void eg_prov_sign(const eg_ctlkey *key, rd_kafka_headers_t *h, const void *k, size_t klen, const void *v, size_t vlen) {
    rd_kafka_header_remove(h, EG_PROV_HEADER);
    if (!key || !key->n) return;
    size_t n;
    unsigned char *c = claims(h, v, vlen, &n);
    char sig[EG_CTLSIGN_LEN + 1];
    eg_ctlsign_sign(key, "provenance", k ? k : "", k ? klen : 0, c, n, sig);
    free(c);
    rd_kafka_header_add(h, EG_PROV_HEADER, -1, sig, -1);
}

int eg_prov_verify(const eg_ctlkey *key, const rd_kafka_headers_t *h, const void *k, size_t klen, const void *v,
                   size_t vlen, const char **reason) {
    const void *sig = NULL;
    size_t siglen = 0;
    if (!h || rd_kafka_header_get_last(h, EG_PROV_HEADER, &sig, &siglen) != 0) sig = NULL;
    size_t n;
    unsigned char *c = claims(h, v, vlen, &n);
    int rc = eg_ctlsign_verify(key, "provenance", k ? k : "", k ? klen : 0, c, n, sig, sig ? siglen : 0, reason);
    free(c);
    return rc;
}

rd_kafka_headers_t *eg_prov_strip(const rd_kafka_headers_t *h, const char *reason) {
    rd_kafka_headers_t *out = rd_kafka_headers_new(h ? rd_kafka_header_cnt(h) + 1 : 1);
    const char *name;
    const void *v;
    size_t n;
    for (size_t i = 0; h && rd_kafka_header_get_all(h, i, &name, &v, &n) == 0; i++)
        if (!is_claim(name) && strcmp(name, EG_PROV_HEADER) != 0) rd_kafka_header_add(out, name, -1, v, (ssize_t)n);
    rd_kafka_header_add(out, EG_PROV_REFUSED_HEADER, -1, reason, -1);
    return out;
}
