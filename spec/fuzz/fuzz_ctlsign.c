/* fuzz_ctlsign.c — the signature check of control records (ctlsign.c:
 * eg_ctlsign_verify) on any errgate.sig header, key and value: anyone who
 * can produce to the audit topic or LANE.state chooses all three. Input:
 * SIG "\n" KEY "\n" VALUE (missing parts are empty; a first byte of '!'
 * selects the kind "state", else "audit"). Contract checked: a refusal
 * names one of the four reasons; a header is accepted only when it is
 * byte for byte the signature eg_ctlsign_sign gives (no other header
 * verifies); the signature of the same key and value always verifies, and
 * with any one byte of the value changed never does. */
#include "ctlsign.h"
#include "fuzz.h"

#include <string.h>

static const eg_ctlkey *fuzz_key(void) {
    static eg_ctlkey k;
    if (!k.n) {
        memcpy(k.k, "errgate-fuzz-control-key-0123456789", 35);
        k.n = 35;
    }
    return &k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *kind = "audit";
    const char *p = (const char *)data, *end = p + size;
    if (p < end && *p == '!') {
        kind = "state";
        p++;
    }
    const char *nl1 = memchr(p, '\n', (size_t)(end - p));
    const char *sig = p;
    size_t siglen = nl1 ? (size_t)(nl1 - p) : (size_t)(end - p);
    const char *k = nl1 ? nl1 + 1 : end;
    const char *nl2 = memchr(k, '\n', (size_t)(end - k));
    size_t klen = nl2 ? (size_t)(nl2 - k) : (size_t)(end - k);
    const char *v = nl2 ? nl2 + 1 : end;
    size_t vlen = (size_t)(end - v);
    const eg_ctlkey *key = fuzz_key();
    const char *why = NULL;
    char good[EG_CTLSIGN_LEN + 1];
    eg_ctlsign_sign(key, kind, k, klen, v, vlen, good);
    int rc = eg_ctlsign_verify(key, kind, k, klen, v, vlen, sig, siglen, &why);
    if (rc == 0) FZ_CHECK(siglen == EG_CTLSIGN_LEN && !memcmp(sig, good, siglen), "a forged header verified");
    else
        FZ_CHECK(why && (!strcmp(why, "unsigned") || !strcmp(why, "malformed") || !strcmp(why, "bad_signature")),
                 "a refusal without a known reason (%s)", why ? why : "NULL");
    FZ_CHECK(eg_ctlsign_verify(key, kind, k, klen, v, vlen, good, EG_CTLSIGN_LEN, &why) == 0,
             "its own signature is refused (%s)", why);
    FZ_CHECK(eg_ctlsign_verify(key, kind, k, klen, v, vlen, NULL, 0, &why) == -1 && !strcmp(why, "unsigned"),
             "no header is not 'unsigned'");
    if (vlen > 0 && vlen <= 4096) {
        char changed[4096];
        memcpy(changed, v, vlen);
        changed[vlen / 2] ^= 0x20;
        FZ_CHECK(eg_ctlsign_verify(key, kind, k, klen, changed, vlen, good, EG_CTLSIGN_LEN, &why) == -1,
                 "a changed byte of the value verified");
    }
    return 0;
}
