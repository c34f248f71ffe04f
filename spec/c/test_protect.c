/* test_protect.c — payload protection (protect.h): the path parser (good
 * paths, and each bad one refused with where), the masker against payloads
 * whose secrets are nested, in arrays, behind escaped member names (\u
 * escapes, escaped quotes), escaped inside the value, and in binary or
 * broken JSON (refused whole, never half-masked); the keyed hash (equal
 * values alike however they are spelled, another key differs); AES-256-GCM
 * encryption and decryption (round trip of binary bytes with NULs, a fresh
 * nonce per record, a key ring: the first key encrypts, every key
 * decrypts, rotation), and each refusal by name: no key, a key not in the
 * ring, a changed byte, a cut value, a malformed header. */
#include "protect.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_ok(const char *p) {
    eg_jpath jp;
    char err[160];
    return eg_jpath_parse(p, strlen(p), &jp, err, sizeof err) == 0;
}

static void test_paths(void) {
    const char *good[] = {"$.card", "$.card.number",     "$..cvv",  "$.items[*].pan", "$.a[0]", "$[\"we.ird\"]",
                          "$.a.*",  "$[\"ca\\u0072d\"]", "$.x-y_z9"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) CHECK(parse_ok(good[i]), "path %s is accepted", good[i]);
    const char *bad[] = {"",
                         "$",
                         "card",
                         "$.",
                         "$..",
                         "$[",
                         "$[01]",
                         "$[1",
                         "$.a b",
                         "$[\"\"]",
                         "$..a..b",
                         "$[-1]",
                         "$.a[9999999999]",
                         "$.a.\xc3",
                         "$[\"x]",
                         "$.a[*",
                         "$.a]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!parse_ok(bad[i]), "path '%s' is refused", bad[i]);
    eg_jpath jp;
    char err[160] = "";
    CHECK(eg_jpath_parse("$.a b", 5, &jp, err, sizeof err) < 0 && strstr(err, "byte 4"),
          "a bad path's error names the byte (%s)", err);
    char nul[] = "$.a\0b";
    CHECK(eg_jpath_parse(nul, 5, &jp, err, sizeof err) < 0, "a NUL inside a path is refused");
    char many[200] = "$";
    for (int i = 0; i < 17; i++) strcat(many, ".a");
    CHECK(!parse_ok(many), "17 steps are refused");
    char longp[400] = "$.";
    memset(longp + 2, 'a', 300);
    longp[302] = 0;
    CHECK(!parse_ok(longp), "a path of 302 bytes is refused");
}

/* Masks in with the paths given (token "[masked]", no hash); returns the
 * output (static) or NULL when refused. */
static const char *mask_with(const char *in, size_t n, const char *const *paths, int np, int *masked) {
    static eg_prot_mask m;
    static char out[8192];
    memset(&m, 0, sizeof m);
    strcpy(m.token, "[masked]");
    char err[160];
    for (int i = 0; i < np; i++)
        if (eg_jpath_parse(paths[i], strlen(paths[i]), &m.paths[m.npaths++], err, sizeof err) != 0) return NULL;
    char *o = NULL;
    size_t olen = 0;
    const char *why = NULL;
    if (eg_prot_mask_json(&m, NULL, in, n, &o, &olen, masked, &why) != 0) return NULL;
    snprintf(out, sizeof out, "%.*s", (int)olen, o);
    free(o);
    return out;
}

static void test_mask(void) {
    const char *card[] = {"$.card.number", "$..cvv", "$.items[*].pan"};
    int n = 0;
    const char *in = "{\"id\":7,\"card\":{\"number\":\"4111111111111111\",\"exp\":\"12/30\"},"
                     "\"meta\":{\"deep\":{\"cvv\":123}},\"items\":[{\"pan\":\"5500005555555559\"},{\"pan\":42}]}";
    const char *o = mask_with(in, strlen(in), card, 3, &n);
    CHECK(o && !strstr(o, "4111111111111111") && !strstr(o, "5500005555555559") && !strstr(o, "123"),
          "nested, recursive and array secrets are masked");
    CHECK(o && n == 4, "four values masked (%d)", n);
    CHECK(o && strstr(o, "\"exp\":\"12/30\"") && strstr(o, "\"id\":7"), "the rest is unchanged: %s", o ? o : "-");
    /* escaped member names: \u escapes and escaped quotes are the same name */
    const char *esc = "{\"ca\\u0072d\":{\"n\\u0075mber\":\"4111111111111111\"}}";
    o = mask_with(esc, strlen(esc), card, 1, &n);
    CHECK(o && !strstr(o, "4111") && n == 1, "a member name spelled with \\u escapes matches: %s", o ? o : "-");
    const char *qpath[] = {"$[\"a\\\"b\"]"};
    const char *q = "{\"a\\\"b\":\"secret-4111\",\"ab\":\"keep\"}";
    o = mask_with(q, strlen(q), qpath, 1, &n);
    CHECK(o && !strstr(o, "secret") && strstr(o, "keep") && n == 1, "a member name with an escaped quote: %s",
          o ? o : "-");
    /* a value that escapes its digits is masked whole */
    const char *ev = "{\"card\":{\"number\":\"\\u0034\\u0031\\u0031\\u0031 1111 \\\"x\\\"\"}}";
    o = mask_with(ev, strlen(ev), card, 1, &n);
    CHECK(o && !strstr(o, "u0034") && !strstr(o, "1111") && n == 1, "an escaped secret value is masked whole");
    /* a whole object at the path goes */
    const char *obj[] = {"$.card"};
    o = mask_with(in, strlen(in), obj, 1, &n);
    CHECK(o && !strstr(o, "4111") && !strstr(o, "12/30") && n == 1, "an object at a path is replaced whole");
    /* no match: unchanged */
    const char *none[] = {"$.nothing"};
    o = mask_with(in, strlen(in), none, 1, &n);
    CHECK(o && !strcmp(o, in) && n == 0, "no path matching: the payload is unchanged");
    /* not JSON: refused whole, nothing half-masked */
    const char *bad[] = {"card=4111111111111111",
                         "{\"card\":{\"number\":\"4111111111111111\"}",
                         "{\"card\":{\"number\":\"4111111111111111\"}} trailing",
                         "{\"card\":{\"number\":\"4111\x01\"}}",
                         "{\"card\":{\"number\":\"4111\\x\"}}",
                         "{\"card\":{\"number\":01}}",
                         "{'card':1}",
                         "",
                         "{\"a\":\"\xff\xfe 4111111111111111\"}",
                         "[1,]",
                         "{\"a\":1,}",
                         "\"unterminated"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(mask_with(bad[i], strlen(bad[i]), card, 1, &n) == NULL, "not JSON, refused: %zu", i);
    const char bin[] = "\x00\x01{\"card\":{\"number\":\"4111111111111111\"}}";
    CHECK(mask_with(bin, sizeof bin - 1, card, 1, &n) == NULL, "binary bytes around JSON: refused");
    const char nulin[] = "{\"card\":{\"number\":\"41\0\"}}";
    CHECK(mask_with(nulin, sizeof nulin - 1, card, 1, &n) == NULL, "a raw NUL inside a string: refused");
    /* depth */
    char deep[400] = "";
    for (int i = 0; i < 70; i++) strcat(deep, "[");
    for (int i = 0; i < 70; i++) strcat(deep, "]");
    CHECK(mask_with(deep, strlen(deep), card, 1, &n) == NULL, "nesting of 70 is refused (too deep)");
    eg_prot_mask m;
    memset(&m, 0, sizeof m);
    strcpy(m.token, "x");
    char err[64];
    eg_jpath_parse("$.a", 3, &m.paths[m.npaths++], err, sizeof err);
    char *out = NULL;
    size_t olen;
    const char *why = NULL;
    CHECK(eg_prot_mask_json(&m, NULL, deep, strlen(deep), &out, &olen, &n, &why) < 0 && !strcmp(why, "too_deep"),
          "too deep says too_deep");
    CHECK(eg_prot_mask_json(&m, NULL, "x", 1, &out, &olen, &n, &why) < 0 && !strcmp(why, "not_json") && !out,
          "not JSON says not_json, nothing allocated");
    /* a scalar root, whitespace, unicode surrogate pairs in names */
    const char *sp = " {\"\\ud83d\\ude00\" : \"s\" , \"a\" : [ true , null , -1.5e3 ] } ";
    const char *emo[] = {"$[\"\xf0\x9f\x98\x80\"]"};
    o = mask_with(sp, strlen(sp), emo, 1, &n);
    CHECK(o && n == 1 && strstr(o, "-1.5e3"), "a surrogate-pair name matches its UTF-8 spelling: %s", o ? o : "-");
}

static void test_hash(void) {
    const unsigned char *k1[] = {(const unsigned char *)"0123456789abcdef-one"};
    const unsigned char *k2[] = {(const unsigned char *)"0123456789abcdef-two"};
    size_t l[] = {20};
    eg_prot_keys a, b;
    eg_prot_keys_derive(&a, k1, l, 1);
    eg_prot_keys_derive(&b, k2, l, 1);
    eg_prot_mask m;
    memset(&m, 0, sizeof m);
    m.hash = 1;
    char err[64];
    eg_jpath_parse("$..pan", 6, &m.paths[m.npaths++], err, sizeof err);
    const char *in = "[{\"pan\":\"4111111111111111\"},{\"pan\":\"\\u00341\\u0031\\u0031111111111111\"},"
                     "{\"pan\":\"5500005555555559\"}]";
    char *o = NULL, *o2 = NULL;
    size_t ol, ol2;
    int n;
    const char *why;
    CHECK(eg_prot_mask_json(&m, &a, in, strlen(in), &o, &ol, &n, &why) == 0 && n == 3, "three values hashed");
    char h[3][40] = {{0}};
    const char *p = o;
    for (int i = 0; i < 3 && (p = strstr(p, "hmac:")); i++, p++) memcpy(h[i], p, 37);
    CHECK(h[0][0] && !strcmp(h[0], h[1]), "the same value spelled with escapes hashes alike (%s)", h[0]);
    CHECK(strcmp(h[0], h[2]) != 0, "another value hashes differently");
    CHECK(!strstr(o, "4111") && !strstr(o, "5500"), "no digit of the secrets is left: %s", o);
    CHECK(eg_prot_mask_json(&m, &b, in, strlen(in), &o2, &ol2, &n, &why) == 0 && !strstr(o2, h[0]),
          "another key, another hash");
    free(o);
    free(o2);
    CHECK(strlen(a.kid[0]) == EG_PROT_KID_LEN && strcmp(a.kid[0], b.kid[0]), "key ids: 8 hex, distinct (%s %s)",
          a.kid[0], b.kid[0]);
}

static void test_encrypt(void) {
    const unsigned char *ring_old[] = {(const unsigned char *)"old-key-0123456789"};
    const unsigned char *ring_both[] = {(const unsigned char *)"new-key-0123456789",
                                        (const unsigned char *)"old-key-0123456789"};
    size_t l[] = {18, 18};
    eg_prot_keys old, both, none;
    eg_prot_keys_derive(&old, ring_old, l, 1);
    eg_prot_keys_derive(&both, ring_both, l, 2);
    memset(&none, 0, sizeof none);
    const char secret[] = "{\"card\":\"4111111111111111\"}\x00\xff\x01 binary 4111111111111111";
    size_t sn = sizeof secret - 1;
    unsigned char *c1 = NULL, *c2 = NULL, *pl = NULL;
    size_t c1n, c2n, pn;
    char h1[EG_PROT_HDR_MAX], h2[EG_PROT_HDR_MAX], err[256];
    CHECK(eg_prot_encrypt(&old, secret, sn, &c1, &c1n, h1) == 0 && c1n == sn + 28, "encrypted: nonce + tag added");
    CHECK(!memmem(c1, c1n, "4111", 4), "the ciphertext holds no digit run of the card");
    CHECK(eg_prot_encrypt(&old, secret, sn, &c2, &c2n, h2) == 0 && memcmp(c1, c2, 12) != 0, "a fresh nonce per record");
    CHECK(!strncmp(h1, "encrypt;v1;kid=", 15) && !strcmp(h1 + 15, old.kid[0]), "header %s", h1);
    CHECK(eg_prot_header_mode(h1, strlen(h1)) == EG_PROT_ENCRYPT &&
              eg_prot_header_mode("pointer", 7) == EG_PROT_POINTER &&
              eg_prot_header_mode("mask;masked=1", 13) == EG_PROT_MASK && eg_prot_header_mode("maskx", 5) < 0 &&
              eg_prot_header_mode(NULL, 0) == EG_PROT_NONE,
          "header modes");
    CHECK(eg_prot_decrypt(&old, h1, strlen(h1), c1, c1n, &pl, &pn, err, sizeof err) == 0 && pn == sn &&
              !memcmp(pl, secret, sn),
          "decrypted back, binary bytes and all");
    free(pl);
    pl = NULL;
    CHECK(eg_prot_decrypt(&both, h1, strlen(h1), c1, c1n, &pl, &pn, err, sizeof err) == 0,
          "a ring holding the old key second still decrypts it (rotation)");
    free(pl);
    pl = NULL;
    unsigned char *c3 = NULL;
    size_t c3n;
    char h3[EG_PROT_HDR_MAX];
    CHECK(eg_prot_encrypt(&both, secret, sn, &c3, &c3n, h3) == 0 && strcmp(h3, h1) != 0,
          "the ring's first key encrypts (%s)", h3);
    CHECK(eg_prot_decrypt(&old, h3, strlen(h3), c3, c3n, &pl, &pn, err, sizeof err) < 0 &&
              strstr(err, "not in the protection key file") && !pl,
          "a key not in the ring is refused by id: %s", err);
    CHECK(eg_prot_decrypt(&none, h1, strlen(h1), c1, c1n, &pl, &pn, err, sizeof err) < 0 &&
              strstr(err, "no protection key"),
          "no key: refused by name: %s", err);
    /* a forged header naming the right kid over another key's ciphertext */
    char forged[EG_PROT_HDR_MAX];
    snprintf(forged, sizeof forged, "encrypt;v1;kid=%s", old.kid[0]);
    CHECK(eg_prot_decrypt(&both, forged, strlen(forged), c3, c3n, &pl, &pn, err, sizeof err) < 0 &&
              strstr(err, "failed"),
          "the wrong key for the bytes fails authentication: %s", err);
    c1[20] ^= 1;
    CHECK(eg_prot_decrypt(&old, h1, strlen(h1), c1, c1n, &pl, &pn, err, sizeof err) < 0, "a changed byte is refused");
    c1[20] ^= 1;
    CHECK(eg_prot_decrypt(&old, h1, strlen(h1), c1, 27, &pl, &pn, err, sizeof err) < 0 && strstr(err, "too short"),
          "a value cut below nonce and tag: %s", err);
    CHECK(eg_prot_decrypt(&old, h1, strlen(h1), c1, c1n - 1, &pl, &pn, err, sizeof err) < 0, "a cut value is refused");
    const char *badh[] = {"encrypt;v2;kid=12345678",
                          "encrypt;v1;kid=1234567",
                          "encrypt;v1;kid=1234567z",
                          "encrypt;v1;kid=12345678x",
                          "pointer",
                          ""};
    for (size_t i = 0; i < sizeof badh / sizeof *badh; i++)
        CHECK(eg_prot_decrypt(&old, badh[i], strlen(badh[i]), c1, c1n, &pl, &pn, err, sizeof err) < 0 &&
                  strstr(err, "malformed"),
              "malformed header '%s' refused", badh[i]);
    unsigned char *e0 = NULL;
    size_t e0n;
    char h0[EG_PROT_HDR_MAX];
    CHECK(eg_prot_encrypt(&old, NULL, 0, &e0, &e0n, h0) == 0 && e0n == 28 &&
              eg_prot_decrypt(&old, h0, strlen(h0), e0, e0n, &pl, &pn, err, sizeof err) == 0 && pn == 0,
          "an empty payload round-trips");
    free(c2);
    CHECK(eg_prot_encrypt(&none, secret, sn, &c2, &c2n, h2) < 0 && !c2, "no key: encrypt refuses, nothing allocated");
    free(pl);
    free(e0);
    free(c1);
    free(c2);
    free(c3);
}

static void test_keyfile(void) {
    char path[] = "/tmp/eg-protkey-XXXXXX";
    int fd = mkstemp(path);
    const char *ring = "errgate-keyring-v1\nnew-key-0123456789\nold-key-0123456789\n";
    CHECK(fd >= 0 && write(fd, ring, strlen(ring)) == (ssize_t)strlen(ring), "key ring written");
    close(fd);
    eg_prot_keys k, both;
    char err[256];
    CHECK(eg_prot_keys_load(path, &k, err, sizeof err) == 0 && k.n == 2, "a ring of two keys loads");
    const unsigned char *ring_both[] = {(const unsigned char *)"new-key-0123456789",
                                        (const unsigned char *)"old-key-0123456789"};
    size_t l[] = {18, 18};
    eg_prot_keys_derive(&both, ring_both, l, 2);
    CHECK(!strcmp(k.kid[0], both.kid[0]) && !strcmp(k.kid[1], both.kid[1]), "the file's keys are the ring's");
    unlink(path);
    CHECK(eg_prot_keys_load(path, &k, err, sizeof err) < 0, "a missing file is refused: %s", err);
    CHECK(eg_prot_mode_parse("encrypt") == EG_PROT_ENCRYPT && eg_prot_mode_parse("x") < 0 &&
              !strcmp(eg_prot_mode_name(EG_PROT_POINTER), "pointer"),
          "mode names");
}

int main(void) {
    test_paths();
    test_mask();
    test_hash();
    test_encrypt();
    test_keyfile();
    return TAP_DONE();
}
