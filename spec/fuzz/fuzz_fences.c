/* fuzz_fences.c — the fence topic's record reader (fence_rec.c:
 * eg_fence_rec_parse). GROUP.fences is a control topic anyone with produce
 * rights can write to; its records rebuild the fences of a partition's new
 * owner, so a damaged or hostile record must be refused with a reason,
 * never crash, grow without bound or half-apply. Input: the record key, a
 * NUL byte, the value (no NUL: the input is a key with a tombstone).
 * Contract checked: a refusal names a reason; an end or a tombstone names
 * its partition; an accepted fence is within the bounds (a legal head id,
 * followers none twice, at most EG_FENCE_REC_MAX_FOLLOWERS, a rung exactly
 * for a ladder), its record key is the one its key derives, and the writer
 * (eg_fence_rec_format, through a fence table) encodes it back into a
 * record read as the same fence. An operation record (fence_op.h: release,
 * resolve) is parsed by eg_fence_op_parse: a refusal names a reason, an
 * accepted one is within its bounds and written back byte for byte. */
#include "fence.h"
#include "fence_rec.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t klen = nul ? (size_t)(nul - data) : size;
    const void *val = nul ? nul + 1 : NULL;
    size_t vlen = nul ? size - klen - 1 : 0;
    eg_fence_rec r;
    const char *why = NULL;
    char ct[EG_TOPIC_NAME_MAX + 1];
    int32_t cp;
    int64_t ce;
    int claim = eg_fence_claim_parse(data, klen, val, vlen, ct, &cp, &ce, &why);
    if (claim < 0) {
        FZ_CHECK(why && why[0], "a refused claim without a reason");
        return 0;
    }
    if (claim) { /* a claim (fence_rec.h): within bounds, and written back byte for byte */
        FZ_CHECK(ce >= 1 && ce <= EG_FENCE_EPOCH_MAX && cp >= 0, "a claim out of its bounds");
        char ck[EG_FENCE_REC_KEY_MAX], cv[EG_FENCE_CLAIM_MAX];
        size_t cl = eg_fence_claim_format(ct, cp, ce, ck, cv);
        FZ_CHECK(cl == vlen && !memcmp(cv, val, vlen) && strlen(ck) == klen && !memcmp(ck, data, klen),
                 "a claim written back differs");
        return 0;
    }
    if (val && eg_fence_op_is(val, vlen)) { /* an operation record (fence_op.h) */
        eg_fence_op op;
        if (eg_fence_op_parse(data, klen, val, vlen, &op, &why) != 0) {
            FZ_CHECK(why && why[0], "a refused operation without a reason");
            return 0;
        }
        FZ_CHECK(op.topic[0] && op.partition >= 0, "an operation names no partition");
        FZ_CHECK(op.op == EG_FENCE_OP_RELEASE || op.op == EG_FENCE_OP_RESOLVE, "operation %d", (int)op.op);
        FZ_CHECK(eg_id_valid(op.id, strlen(op.id)) && op.by[0] && op.at_ms >= 0, "an operation out of its bounds");
        char ov[EG_FENCE_OP_VALUE_MAX];
        size_t ol = eg_fence_op_format(op.op, op.id, op.by, op.at_ms, ov);
        FZ_CHECK(ol == vlen && !memcmp(ov, val, vlen), "an operation written back differs");
        return 0;
    }
    int rc = eg_fence_rec_parse(data, klen, val, vlen, &r, &why);
    if (rc < 0) {
        FZ_CHECK(why && why[0], "a refused record without a reason");
        return 0;
    }
    FZ_CHECK(r.topic[0] && r.partition >= 0, "no partition named");
    if (rc == 0) {
        FZ_CHECK(!r.key && !r.q, "an end that holds a fence");
        return 0;
    }
    FZ_CHECK(eg_id_valid(r.head, strlen(r.head)), "a bad head id");
    FZ_CHECK(r.nq >= 0 && r.nq <= EG_FENCE_REC_MAX_FOLLOWERS, "%d followers", r.nq);
    FZ_CHECK(r.key_len <= EG_FENCE_REC_MAX_KEY, "a key of %zu bytes", r.key_len);
    FZ_CHECK((r.action == EG_ACT_LADDER) == (r.rung[0] != '\0'), "a rung without a ladder or the reverse");
    char want[EG_FENCE_REC_KEY_MAX];
    size_t wl = eg_fence_rec_key(r.topic, r.partition, r.key, r.key_len, want);
    FZ_CHECK(wl == klen && !memcmp(want, data, wl), "a record key its key does not derive");
    /* round trip through a table, as a rebuild does */
    eg_fences t;
    eg_fences_init(&t, 1, EG_FENCE_REC_MAX_FOLLOWERS);
    FZ_CHECK(eg_fences_park(&t, r.key, r.key_len, r.head, r.why, r.action, r.rung, r.rung_index, r.since_ms) ==
                 EG_FENCE_OK,
             "a fresh table refuses it");
    eg_fence *f = eg_fences_get(&t, r.key, r.key_len);
    f->parked = r.parked;
    for (int i = 0; i < r.nq; i++) FZ_CHECK(eg_fences_follow(&t, f, r.q[i]) == EG_FENCE_OK, "follower %d refused", i);
    FZ_CHECK(f->nq == r.nq, "followers lost: %d of %d", f->nq, r.nq);
    size_t n = 0;
    char *v = eg_fence_rec_format(r.topic, r.partition, f, r.done, r.released, r.epoch, r.at_ms, &n);
    FZ_CHECK(v != NULL, "its own fence cannot be written");
    eg_fence_rec back;
    int rc2 = eg_fence_rec_parse(want, wl, v, n, &back, &why);
    FZ_CHECK(rc2 == 1, "its own encoding is refused: %s", why);
    FZ_CHECK(back.key_len == r.key_len && (r.key_len == 0 || !memcmp(back.key, r.key, r.key_len)) &&
                 !strcmp(back.head, r.head) && back.parked == r.parked && back.why == r.why &&
                 back.action == r.action && !strcmp(back.rung, r.rung) && back.rung_index == r.rung_index &&
                 back.since_ms == r.since_ms && back.at_ms == r.at_ms && back.nq == r.nq && back.done == r.done &&
                 back.released == r.released && back.epoch == r.epoch,
             "round trip changed it");
    for (int i = 0; i < r.nq; i++) FZ_CHECK(!strcmp(back.q[i], r.q[i]), "follower %d changed", i);
    eg_fence_rec_clear(&back);
    free(v);
    eg_fences_free(&t);
    eg_fence_rec_clear(&r);
    return 0;
}
