/* fuzz_protect.c — payload protection (protect.h) on hostile bytes: a JSON
 * path as an operator might write it and a payload as anyone who can
 * produce to a source topic might send it. Input: a path up to the first
 * newline, then the payload. The path is parsed (refused with a reason, or
 * 1 to 16 steps); the payload is masked with the path and three fixed ones
 * (`$..card`, `$.a[*].b`, `$["x\"y"]`): either refused whole (not_json,
 * too_deep) with nothing allocated, or masked; a masked output is itself
 * strict JSON and masking it again changes nothing (the token replaces the
 * token), so no value the paths name survives in another spelling. Keyed
 * hashing runs too. The payload is encrypted and decrypted back byte for
 * byte, and a flipped byte of the ciphertext is refused. */
#include "fuzz.h"
#include "protect.h"

#include <string.h>

static eg_prot_keys keys;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const unsigned char *k[] = {(const unsigned char *)"fuzz-key-0123456789"};
    size_t l[] = {19};
    eg_prot_keys_derive(&keys, k, l, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nl = memchr(data, '\n', size);
    size_t plen = nl ? (size_t)(nl - data) : 0;
    const char *payload = (const char *)data + (nl ? plen + 1 : 0);
    size_t n = size - (nl ? plen + 1 : 0);
    static eg_prot_mask m;
    memset(&m, 0, sizeof m);
    strcpy(m.token, "[masked]");
    char err[200] = "";
    const char *fixed[] = {"$..card", "$.a[*].b", "$[\"x\\\"y\"]"};
    for (int i = 0; i < 3; i++)
        FZ_CHECK(eg_jpath_parse(fixed[i], strlen(fixed[i]), &m.paths[m.npaths++], err, sizeof err) == 0, "%s", err);
    if (nl) {
        err[0] = 0;
        int rc = eg_jpath_parse((const char *)data, plen, &m.paths[m.npaths], err, sizeof err);
        FZ_CHECK(rc == 0 || (rc == -1 && err[0]), "a refused path says why");
        if (rc == 0) {
            FZ_CHECK(m.paths[m.npaths].n >= 1 && m.paths[m.npaths].n <= EG_PROT_STEPS, "steps %d", m.paths[m.npaths].n);
            m.npaths++;
        }
    }
    char *out = NULL, *again = NULL;
    size_t olen = 0, alen = 0;
    int masked = 0, masked2 = 0;
    const char *why = NULL;
    if (eg_prot_mask_json(&m, NULL, payload, n, &out, &olen, &masked, &why) == 0) {
        FZ_CHECK(out != NULL && masked >= 0, "a masked payload has a buffer");
        FZ_CHECK(eg_prot_mask_json(&m, NULL, out, olen, &again, &alen, &masked2, &why) == 0,
                 "the masked output is strict JSON (%s)", why);
        FZ_CHECK(masked2 == masked && alen == olen && !memcmp(again, out, olen), "masking twice changes nothing");
        if (!masked) FZ_CHECK(olen == n && !memcmp(out, payload, n), "nothing masked: the payload as it came");
        free(again);
        free(out);
        m.hash = 1;
        FZ_CHECK(eg_prot_mask_json(&m, &keys, payload, n, &out, &olen, &masked2, &why) == 0 && masked2 == masked,
                 "hashing masks the same values");
        free(out);
    } else {
        FZ_CHECK(out == NULL && why && (!strcmp(why, "not_json") || !strcmp(why, "too_deep")), "refused: %s",
                 why ? why : "(null)");
    }
    unsigned char *c = NULL, *p = NULL;
    size_t cn = 0, pn = 0;
    char hdr[EG_PROT_HDR_MAX];
    FZ_CHECK(eg_prot_encrypt(&keys, payload, n, &c, &cn, hdr) == 0 && cn == n + EG_PROT_NONCE + EG_PROT_TAG,
             "encrypts");
    FZ_CHECK(eg_prot_decrypt(&keys, hdr, strlen(hdr), c, cn, &p, &pn, err, sizeof err) == 0 && pn == n &&
                 (n == 0 || !memcmp(p, payload, n)),
             "decrypts back: %s", err);
    free(p);
    p = NULL;
    c[size % cn] ^= 0x20;
    FZ_CHECK(eg_prot_decrypt(&keys, hdr, strlen(hdr), c, cn, &p, &pn, err, sizeof err) == -1 && !p,
             "a flipped byte is refused");
    free(c);
    return 0;
}
