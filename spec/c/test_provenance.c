/* test_provenance.c — a replayed record's signed claims (provenance.c): a
 * record signed verifies; the same signature on another value, another
 * key, with a claim changed, removed or added, or from another control key
 * is refused as bad_signature; none is "unsigned", a broken one
 * "malformed"; a repeated claim counts by its last copy (as every reader
 * takes it); signing without a key only removes an old signature; strip
 * keeps every other header in order and says why; has_claims sees each
 * claim and the signature alone. */
#include "provenance.h"
#include "tap.h"

#include <string.h>

static eg_ctlkey key_of(const char *s) {
    eg_ctlkey k = {0};
    k.n = strlen(s);
    memcpy(k.k, s, k.n);
    return k;
}

static rd_kafka_headers_t *claims(void) {
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    rd_kafka_header_add(h, "x-tenant", -1, "vip", -1);
    rd_kafka_header_add(h, "errgate.id", -1, "pay/0/5", -1);
    rd_kafka_header_add(h, "original.topic", -1, "pay", -1);
    rd_kafka_header_add(h, "original.partition", -1, "0", -1);
    rd_kafka_header_add(h, "original.offset", -1, "5", -1);
    rd_kafka_header_add(h, "traceparent", -1, "00-ab", -1);
    return h;
}

static int verifies(const eg_ctlkey *k, const rd_kafka_headers_t *h, const char *key, const char *val,
                    const char **why) {
    return eg_prov_verify(k, h, key, strlen(key), val, strlen(val), why) == 0;
}

static void test_sign_verify(void) {
    eg_ctlkey k = key_of("provenance-test-key-0123456789");
    eg_ctlkey other = key_of("provenance-other-key-0123456789");
    const char *why = NULL;
    rd_kafka_headers_t *h = claims();
    CHECK(eg_prov_has_claims(h), "errgate.id and original.* are claims");
    CHECK(!verifies(&k, h, "k1", "{\"a\":1}", &why) && !strcmp(why, "unsigned"), "no signature: unsigned (%s)", why);
    eg_prov_sign(&k, h, "k1", 2, "{\"a\":1}", 7);
    CHECK(verifies(&k, h, "k1", "{\"a\":1}", &why), "a signed record verifies");
    eg_prov_sign(&k, h, "k1", 2, "{\"a\":1}", 7);
    size_t n = 0;
    for (size_t i = 0; i < rd_kafka_header_cnt(h); i++) {
        const char *name;
        const void *v;
        size_t vl;
        rd_kafka_header_get_all(h, i, &name, &v, &vl);
        n += !strcmp(name, EG_PROV_HEADER);
    }
    CHECK(n == 1 && verifies(&k, h, "k1", "{\"a\":1}", &why), "signing again replaces the signature (%zu)", n);
    CHECK(!verifies(&k, h, "k1", "{\"a\":2}", &why) && !strcmp(why, "bad_signature"),
          "copied onto another value: bad_signature");
    CHECK(!verifies(&k, h, "k2", "{\"a\":1}", &why), "onto another key: refused");
    CHECK(!verifies(&other, h, "k1", "{\"a\":1}", &why), "checked with another control key: refused");

    rd_kafka_headers_t *c = rd_kafka_headers_copy(h);
    rd_kafka_header_add(c, "errgate.id", -1, "pay/0/9", -1);
    CHECK(!verifies(&k, c, "k1", "{\"a\":1}", &why), "a second errgate.id after the signature (the last counts)");
    rd_kafka_headers_destroy(c);
    c = rd_kafka_headers_copy(h);
    rd_kafka_header_remove(c, "original.offset");
    CHECK(!verifies(&k, c, "k1", "{\"a\":1}", &why), "a claim removed: refused");
    rd_kafka_headers_destroy(c);
    c = rd_kafka_headers_copy(h);
    rd_kafka_header_add(c, "original.consumer.group", -1, "g", -1);
    CHECK(!verifies(&k, c, "k1", "{\"a\":1}", &why), "a claim added: refused");
    rd_kafka_headers_destroy(c);
    c = rd_kafka_headers_copy(h);
    rd_kafka_header_add(c, "x-other", -1, "anything", -1);
    CHECK(verifies(&k, c, "k1", "{\"a\":1}", &why), "a header that is no claim may be added");
    rd_kafka_headers_destroy(c);
    c = rd_kafka_headers_copy(h);
    rd_kafka_header_remove(c, EG_PROV_HEADER);
    rd_kafka_header_add(c, EG_PROV_HEADER, -1, "v1:nothex", -1);
    CHECK(!verifies(&k, c, "k1", "{\"a\":1}", &why) && !strcmp(why, "malformed"), "a broken signature: malformed");
    rd_kafka_headers_destroy(c);

    eg_ctlkey none = {0};
    eg_prov_sign(&none, h, "k1", 2, "{\"a\":1}", 7);
    const void *v;
    size_t vl;
    CHECK(rd_kafka_header_get_last(h, EG_PROV_HEADER, &v, &vl) != 0, "signing without a key removes the signature");
    rd_kafka_headers_destroy(h);

    /* a record with neither value nor key signs and verifies too */
    h = claims();
    eg_prov_sign(&k, h, NULL, 0, NULL, 0);
    CHECK(eg_prov_verify(&k, h, NULL, 0, NULL, 0, &why) == 0, "no key and no value: verifies");
    CHECK(eg_prov_verify(&k, h, NULL, 0, "", 0, &why) == 0, "an empty value is no value");
    rd_kafka_headers_destroy(h);
}

static void test_strip(void) {
    rd_kafka_headers_t *h = claims();
    rd_kafka_header_add(h, EG_PROV_HEADER, -1, "v1:00", -1);
    rd_kafka_headers_t *s = eg_prov_strip(h, "bad_signature");
    const char *name;
    const void *v;
    size_t vl;
    const char *want[] = {"x-tenant", "traceparent", EG_PROV_REFUSED_HEADER};
    int same = rd_kafka_header_cnt(s) == 3;
    for (size_t i = 0; same && i < 3; i++)
        same = rd_kafka_header_get_all(s, i, &name, &v, &vl) == 0 && !strcmp(name, want[i]);
    CHECK(same, "strip keeps x-tenant and traceparent in order, then errgate.claims-refused");
    CHECK(rd_kafka_header_get_last(s, EG_PROV_REFUSED_HEADER, &v, &vl) == 0 && vl == 13 &&
              !memcmp(v, "bad_signature", 13),
          "and says why");
    CHECK(!eg_prov_has_claims(s), "no claim is left");
    rd_kafka_headers_destroy(s);
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(2);
    rd_kafka_header_add(h, "x-tenant", -1, "vip", -1);
    CHECK(!eg_prov_has_claims(h), "a record without errgate headers has no claims");
    rd_kafka_header_add(h, EG_PROV_HEADER, -1, "v1:00", -1);
    CHECK(eg_prov_has_claims(h), "a signature alone counts (it is checked, and refused)");
    rd_kafka_headers_destroy(h);
    CHECK(!eg_prov_has_claims(NULL), "no headers: no claims");
}

int main(void) {
    test_sign_verify();
    test_strip();
    return TAP_DONE();
}
