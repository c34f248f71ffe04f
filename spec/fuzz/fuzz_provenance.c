/* fuzz_provenance.c — a source record's claims and their signature
 * (provenance.c): anyone who can produce to a source topic chooses the
 * record's key, value and headers, errgate.provenance included. Input:
 * KLEN (1 byte, at most 64), the key, VLEN (2 bytes, big-endian), the
 * value, then headers in fz_headers' format. Contract checked: verify
 * accepts only the signature eg_prov_sign would write for the same record
 * (a refusal names a known reason); a record signed by eg_prov_sign
 * verifies, and no longer does with a byte of its value or of a claim
 * changed; eg_prov_strip leaves no claim and no signature, keeps every
 * other header in order and adds one errgate.claims-refused. */
#include "fuzz.h"
#include "provenance.h"

#include <string.h>

static const eg_ctlkey *fuzz_key(void) {
    static eg_ctlkey k;
    if (!k.n) {
        memcpy(k.k, "errgate-fuzz-provenance-key-0123456789", 38);
        k.n = 38;
    }
    return &k;
}

static int is_claim(const char *name) {
    for (const char *const *c = EG_PROV_CLAIMS; *c; c++)
        if (!strcmp(name, *c)) return 1;
    return !strcmp(name, EG_PROV_HEADER);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t i = 0;
    size_t klen = size > i ? data[i++] % 65 : 0;
    if (klen > size - i) klen = size - i;
    const uint8_t *k = data + i;
    i += klen;
    size_t vlen = size - i >= 2 ? ((size_t)data[i] << 8 | data[i + 1]) : 0;
    i += size - i >= 2 ? 2 : size - i;
    if (vlen > size - i) vlen = size - i;
    const uint8_t *v = data + i;
    i += vlen;
    rd_kafka_headers_t *h = fz_headers(data + i, size - i);
    const eg_ctlkey *key = fuzz_key();
    const char *why = NULL;

    rd_kafka_headers_t *signed_h = rd_kafka_headers_copy(h);
    eg_prov_sign(key, signed_h, k, klen, v, vlen);
    const void *good = NULL, *sig = NULL;
    size_t goodlen = 0, siglen = 0;
    FZ_CHECK(rd_kafka_header_get_last(signed_h, EG_PROV_HEADER, &good, &goodlen) == 0 && goodlen == EG_CTLSIGN_LEN,
             "sign wrote no signature");
    if (eg_prov_verify(key, h, k, klen, v, vlen, &why) == 0) {
        FZ_CHECK(rd_kafka_header_get_last(h, EG_PROV_HEADER, &sig, &siglen) == 0 && siglen == goodlen &&
                     !memcmp(sig, good, goodlen),
                 "a forged signature verified");
    } else {
        FZ_CHECK(why && (!strcmp(why, "unsigned") || !strcmp(why, "malformed") || !strcmp(why, "bad_signature")),
                 "a refusal without a known reason (%s)", why ? why : "NULL");
    }
    FZ_CHECK(eg_prov_verify(key, signed_h, k, klen, v, vlen, &why) == 0, "a signed record is refused (%s)", why);
    FZ_CHECK(eg_prov_has_claims(signed_h), "a signed record has no claims");
    if (vlen > 0) {
        uint8_t changed[65536];
        memcpy(changed, v, vlen);
        changed[vlen / 2] ^= 0x20;
        FZ_CHECK(eg_prov_verify(key, signed_h, k, klen, changed, vlen, &why) == -1, "a changed value verified");
    }
    rd_kafka_headers_t *moved = rd_kafka_headers_copy(signed_h);
    rd_kafka_header_add(moved, EG_PROV_CLAIMS[0], -1, "other/0/1", -1); /* the last one counts */
    const void *was = NULL;
    size_t waslen = 0;
    if (rd_kafka_header_get_last(signed_h, EG_PROV_CLAIMS[0], &was, &waslen) != 0 || waslen != 9 ||
        memcmp(was, "other/0/1", 9))
        FZ_CHECK(eg_prov_verify(key, moved, k, klen, v, vlen, &why) == -1, "a changed claim verified");
    rd_kafka_headers_destroy(moved);

    rd_kafka_headers_t *s = eg_prov_strip(h, "bad_signature");
    FZ_CHECK(!eg_prov_has_claims(s), "strip left a claim");
    const char *name, *n2;
    const void *val, *v2;
    size_t vl, vl2, j = 0, kept = 0;
    for (size_t x = 0; rd_kafka_header_get_all(h, x, &name, &val, &vl) == 0; x++) {
        if (is_claim(name)) continue;
        FZ_CHECK(rd_kafka_header_get_all(s, j++, &n2, &v2, &vl2) == 0 && !strcmp(name, n2) && vl == vl2 &&
                     (!vl || !memcmp(val, v2, vl)),
                 "strip changed header %zu (%s)", x, name);
        kept++;
    }
    FZ_CHECK(rd_kafka_header_get_all(s, kept, &n2, &v2, &vl2) == 0 && !strcmp(n2, EG_PROV_REFUSED_HEADER) &&
                 rd_kafka_header_cnt(s) == kept + 1,
             "strip did not end with one %s", EG_PROV_REFUSED_HEADER);
    rd_kafka_headers_destroy(s);
    rd_kafka_headers_destroy(signed_h);
    rd_kafka_headers_destroy(h);
    return 0;
}
