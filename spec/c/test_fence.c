/* test_fence.c — the fence table (fence.h): a key's head and followers in
 * order, release of the next follower when the head resolves, the caps on
 * keys and followers, the operator's release, keys compared by bytes, a
 * random run against a brute-force model; and the fence topic's records
 * (fence_rec.h): a round trip, and refusals of what anyone could produce. */
#include "fence.h"
#include "fence_done.h"
#include "fence_rec.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int must_follow(eg_fences *t, const char *key, const char *id) {
    return eg_fences_must_follow(t, key, strlen(key), id, NULL);
}

int main(void) {
    eg_fences t;
    eg_fences_init(&t, 2, 3);
    CHECK(!must_follow(&t, "k1", "s/0/1"), "an empty table fences nothing");

    /* order: a head, followers in the order they first follow */
    CHECK(eg_fences_park(&t, "k1", 2, "s/0/1", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 100) == EG_FENCE_OK,
          "a ladder parks a new key");
    CHECK(t.nkeys == 1, "one fenced key");
    CHECK(!must_follow(&t, "k1", "s/0/1"), "the head itself passes (it comes back from its rung)");
    CHECK(must_follow(&t, "k1", "s/0/2"), "a later record of the key follows");
    CHECK(!must_follow(&t, "k2", "s/0/3"), "another key passes");
    eg_fence *f = eg_fences_get(&t, "k1", 2);
    CHECK(f && f->parked && f->action == EG_ACT_LADDER && strcmp(f->rung, "30s") == 0 && f->rung_index == 1,
          "the fence says where followers go");
    CHECK(eg_fences_follow(&t, f, "s/0/2") == EG_FENCE_OK && eg_fences_follow(&t, f, "s/0/4") == EG_FENCE_OK,
          "two followers queued");
    CHECK(eg_fences_follow(&t, f, "s/0/2") == EG_FENCE_OK && f->nq == 2 && t.nfollowers == 2,
          "a follower that follows again (from its rung) is not queued twice");
    CHECK(eg_fences_follow(&t, f, "s/0/1") == EG_FENCE_OK && f->nq == 2, "the head is never its own follower");
    CHECK(eg_fences_park(&t, "k1", 2, "s/0/1", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "5m", 2, 200) == EG_FENCE_OK &&
              strcmp(f->rung, "5m") == 0 && f->rung_index == 2 && f->since_ms == 100,
          "the head climbing a rung moves the fence (since kept)");

    /* release in order */
    CHECK(eg_fences_resolve(&t, "k1", 2, "s/0/2") == 0, "a follower's success resolves nothing");
    CHECK(eg_fences_resolve(&t, "k1", 2, "s/0/1") == 1, "the head resolves");
    f = eg_fences_get(&t, "k1", 2);
    CHECK(f && strcmp(f->head, "s/0/2") == 0 && !f->parked && f->nq == 1 && t.nfollowers == 1,
          "the first follower is the released head");
    CHECK(!must_follow(&t, "k1", "s/0/2"), "the released head passes");
    CHECK(must_follow(&t, "k1", "s/0/4"), "the second follower still follows");
    CHECK(strcmp(f->rung, "5m") == 0, "followers still go where the head is");
    CHECK(eg_fences_resolve(&t, "k1", 2, "s/0/2") == 1 && strcmp(eg_fences_get(&t, "k1", 2)->head, "s/0/4") == 0,
          "then the second");
    CHECK(eg_fences_resolve(&t, "k1", 2, "s/0/4") == 1 && !eg_fences_get(&t, "k1", 2) && t.nkeys == 0 &&
              t.nfollowers == 0,
          "the last one unfences the key");

    /* the head fails again while released: parked again */
    eg_fences_park(&t, "k1", 2, "a", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 1);
    eg_fences_follow(&t, eg_fences_get(&t, "k1", 2), "b");
    eg_fences_resolve(&t, "k1", 2, "a");
    CHECK(eg_fences_park(&t, "k1", 2, "b", EG_FENCE_WHY_DLQ, EG_ACT_DLQ, "", 0, 2) == EG_FENCE_OK &&
              eg_fences_get(&t, "k1", 2)->parked && eg_fences_get(&t, "k1", 2)->action == EG_ACT_DLQ,
          "a released head that fails again is parked where it went (ladder+dlq: the DLQ)");
    CHECK(eg_fences_park(&t, "k1", 2, "c", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 3) == EG_FENCE_QUEUED &&
              eg_fences_get(&t, "k1", 2)->nq == 1,
          "another record of a fenced key that parks joins the queue");

    /* caps */
    CHECK(eg_fences_park(&t, "k2", 2, "x", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 4) == EG_FENCE_OK,
          "a second key fits (max_keys 2)");
    CHECK(eg_fences_park(&t, "k3", 2, "y", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 5) == EG_FENCE_FULL &&
              !eg_fences_get(&t, "k3", 2) && t.nkeys == 2,
          "a third key is refused at the cap, nothing changes");
    CHECK(eg_fences_park(&t, "k2", 2, "x", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "5m", 2, 6) == EG_FENCE_OK,
          "a fenced key's head moves at the cap");
    f = eg_fences_get(&t, "k2", 2);
    CHECK(eg_fences_follow(&t, f, "x2") == EG_FENCE_OK && eg_fences_follow(&t, f, "x3") == EG_FENCE_OK &&
              t.nfollowers == 3,
          "followers up to max_followers (3)");
    CHECK(eg_fences_follow(&t, f, "x4") == EG_FENCE_FULL && f->nq == 2, "one more follower is refused");
    CHECK(eg_fences_park(&t, "k2", 2, "x5", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 7) == EG_FENCE_FULL,
          "joining a queue by parking is refused at the cap too");

    /* operator release */
    CHECK(eg_fences_release(&t, "k2", 2) == 1 && !eg_fences_get(&t, "k2", 2) && t.nkeys == 1 && t.nfollowers == 1,
          "release drops the key's fence and its queue");
    CHECK(!must_follow(&t, "k2", "x3"), "its followers pass after it");
    CHECK(eg_fences_release(&t, "k2", 2) == 0, "releasing an unfenced key says so");

    /* keys are bytes */
    CHECK(eg_fences_park(&t, "k\0z", 3, "n1", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 8) == EG_FENCE_OK,
          "a key with a NUL byte is fenced");
    CHECK(!eg_fences_get(&t, "k", 1) && !eg_fences_get(&t, "k\0y", 3) && eg_fences_get(&t, "k\0z", 3),
          "keys are compared by all their bytes");
    CHECK(eg_fences_release(&t, "k\0z", 3) == 1, "and released by them");
    CHECK(eg_fences_park(&t, "", 0, "e1", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 9) == EG_FENCE_OK &&
              eg_fences_must_follow(&t, "", 0, "e2", NULL),
          "an empty key is a key (a record without one is the caller's: never fenced)");
    eg_fences_free(&t);
    CHECK(t.nkeys == 0 && t.nfollowers == 0 && t.max_keys == 2, "free empties the table and keeps its caps");

    /* random run against a model: K keys, per key a head and a FIFO */
    enum { K = 500, OPS = 200000, QMAX = 64 };
    eg_fences_init(&t, K, K * QMAX);
    static int mhead[K], mq[K][QMAX], mn[K], mfenced[K];
    int next_id = 1, bad = 0, iter_bad = 0;
    srand(11);
    for (int op = 0; op < OPS; op++) {
        int k = rand() % K;
        char key[16], id[24];
        int kl = snprintf(key, sizeof key, "key-%d", k);
        int what = rand() % 4;
        if (what == 0 && !mfenced[k]) { /* park a new key */
            snprintf(id, sizeof id, "t/0/%d", next_id);
            if (eg_fences_park(&t, key, (size_t)kl, id, EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "r", 1, 0) != EG_FENCE_OK)
                bad++;
            mfenced[k] = 1;
            mhead[k] = next_id++;
            mn[k] = 0;
        } else if (what <= 1 && mfenced[k] && mn[k] < QMAX) { /* a follower */
            snprintf(id, sizeof id, "t/0/%d", next_id);
            eg_fence *ff = NULL;
            if (!eg_fences_must_follow(&t, key, (size_t)kl, id, &ff) || eg_fences_follow(&t, ff, id) != EG_FENCE_OK)
                bad++;
            mq[k][mn[k]++] = next_id++;
        } else if (what == 2 && mfenced[k]) { /* the head resolves */
            snprintf(id, sizeof id, "t/0/%d", mhead[k]);
            if (eg_fences_resolve(&t, key, (size_t)kl, id) != 1) bad++;
            if (mn[k]) {
                mhead[k] = mq[k][0];
                memmove(mq[k], mq[k] + 1, (size_t)(--mn[k]) * sizeof mq[k][0]);
            } else {
                mfenced[k] = 0;
            }
        } else if (what == 3 && mfenced[k] && rand() % 8 == 0) { /* an operator's release */
            if (eg_fences_release(&t, key, (size_t)kl) != 1) bad++;
            mfenced[k] = 0;
        }
        int p = rand() % K;
        kl = snprintf(key, sizeof key, "key-%d", p);
        eg_fence *g = eg_fences_get(&t, key, (size_t)kl);
        if (!!g != mfenced[p]) bad++;
        else if (g) {
            snprintf(id, sizeof id, "t/0/%d", mhead[p]);
            if (strcmp(g->head, id) != 0 || g->nq != mn[p]) bad++;
            for (int i = 0; i < mn[p] && i < g->nq; i++) {
                snprintf(id, sizeof id, "t/0/%d", mq[p][i]);
                if (strcmp(g->q[g->qoff + i], id) != 0) bad++;
            }
        }
    }
    int nf = 0, nq = 0;
    for (int k = 0; k < K; k++) nf += mfenced[k], nq += mfenced[k] ? mn[k] : 0;
    size_t cur = 0;
    int seen = 0;
    for (eg_fence *g; (g = eg_fences_next(&t, &cur));) {
        char kb[16] = "";
        memcpy(kb, g->key, g->key_len < sizeof kb - 1 ? g->key_len : sizeof kb - 1);
        int k = atoi(kb + 4);
        if (k < 0 || k >= K || !mfenced[k]) iter_bad++;
        seen++;
    }
    CHECK(bad == 0, "%d operations agree with the model (%d mismatches)", OPS, bad);
    CHECK(t.nkeys == nf && t.nfollowers == nq, "counts agree: %d keys, %d followers", t.nkeys, t.nfollowers);
    CHECK(seen == nf && iter_bad == 0, "iteration visits every fence once (%d of %d)", seen, nf);
    eg_fences_free(&t);

    /* the fence topic's records */
    eg_fences_init(&t, 10, 100);
    eg_fences_park(&t, "acct\n7", 6, "pay/3/41", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "30s", 1, 1000);
    f = eg_fences_get(&t, "acct\n7", 6);
    eg_fences_follow(&t, f, "pay/3/42");
    eg_fences_follow(&t, f, "pay/3/57");
    char rk[EG_FENCE_REC_KEY_MAX];
    size_t rkl = eg_fence_rec_key("pay", 3, "acct\n7", 6, rk), vl = 0;
    char *v = eg_fence_rec_format("pay", 3, f, -1, -1, 0, 2000, &vl);
    eg_fence_rec rec;
    const char *why = NULL;
    CHECK(v && eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == 1, "a fence written is read back");
    CHECK(rec.key_len == 6 && !memcmp(rec.key, "acct\n7", 6) && !strcmp(rec.head, "pay/3/41") && rec.parked &&
              rec.action == EG_ACT_LADDER && !strcmp(rec.rung, "30s") && rec.since_ms == 1000 && rec.at_ms == 2000 &&
              rec.nq == 2 && !strcmp(rec.q[1], "pay/3/57") && !strcmp(rec.topic, "pay") && rec.partition == 3,
          "with every field");
    eg_fence_rec_clear(&rec);
    char rk2[EG_FENCE_REC_KEY_MAX];
    size_t rkl2 = eg_fence_rec_key("pay", 2, "acct\n7", 6, rk2);
    CHECK(eg_fence_rec_parse(rk2, rkl2, v, vl, &rec, &why) == -1 && !strcmp(why, "key_mismatch"),
          "a value under another partition's record key is refused (key_mismatch)");
    CHECK(eg_fence_rec_parse(rk, rkl, v, vl - 1, &rec, &why) == -1 && !strcmp(why, "malformed"),
          "a torn value is refused");
    char *dup = malloc(vl + 40);
    memcpy(dup, v, vl);
    int dl = (int)vl;
    /* the count line says 2: make it 3 followers with one twice */
    char *cnt = strstr(dup, "\n2\npay/3/42");
    CHECK(cnt != NULL, "the count line is where the format says");
    if (cnt) {
        cnt[1] = '3';
        dl += sprintf(dup + vl, "pay/3/42\n");
        CHECK(eg_fence_rec_parse(rk, rkl, dup, (size_t)dl, &rec, &why) == -1, "a follower listed twice is refused");
    }
    free(dup);
    CHECK(eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END, strlen(EG_FENCE_REC_END), &rec, &why) == 0 &&
              !strcmp(rec.topic, "pay") && rec.partition == 3,
          "an end record names its partition");
    CHECK(eg_fence_rec_parse(rk, rkl, NULL, 0, &rec, &why) == 0, "so does a tombstone (the caller decides on it)");
    CHECK(eg_fence_rec_parse("pay/3/xyz", 9, v, vl, &rec, &why) == -1 && !strcmp(why, "bad_record_key"),
          "a record key that is not TOPIC/PARTITION/SHA-256 is refused");
    CHECK(eg_fence_rec_parse(rk, rkl, v, EG_FENCE_REC_MAX_VALUE + 1, &rec, &why) == -1 && !strcmp(why, "too_large"),
          "a value over the bound is refused before it is read");
    CHECK(rec.done == -1, "a state without a done line reads done -1 (records written before it existed)");
    free(v);
    v = eg_fence_rec_format("pay", 3, f, 40, -1, 0, 2000, &vl);
    char *dl40 = v ? memmem(v, vl, "\ndone 40\n", 9) : NULL;
    CHECK(dl40 && eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == 1 && rec.done == 40 && rec.nq == 2,
          "a state's done line (the key's resolved offset) is read back");
    eg_fence_rec_clear(&rec);
    if (dl40) {
        dl40[7] = 'x';
        CHECK(eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == -1, "a done line that is not a number is refused");
    }
    free(v);
    char endv[EG_FENCE_REC_END_MAX];
    size_t el = eg_fence_rec_end(12345, -1, 0, endv);
    CHECK(eg_fence_rec_parse(rk, rkl, endv, el, &rec, &why) == 0 && rec.done == 12345,
          "an end record carries the key's resolved offset");
    el = eg_fence_rec_end(-1, -1, 0, endv);
    CHECK(el == strlen(EG_FENCE_REC_END) && eg_fence_rec_parse(rk, rkl, endv, el, &rec, &why) == 0 && rec.done == -1,
          "an end record without one is the one it always was");
    CHECK(eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "done -1\n", strlen(EG_FENCE_REC_END) + 8, &rec, &why) == -1 &&
              eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "junk\n", strlen(EG_FENCE_REC_END) + 5, &rec, &why) == -1 &&
              eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "done 1\ndone 2\n", strlen(EG_FENCE_REC_END) + 14, &rec,
                                 &why) == -1,
          "an end with a negative done, another line, or two done lines is refused");
    v = eg_fence_rec_format("pay", 3, f, 40, -1, 7, 2000, &vl);
    CHECK(v && eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == 1 && rec.done == 40 && rec.epoch == 7,
          "a state's epoch line (its owner's claim) is read back after its done line");
    eg_fence_rec_clear(&rec);
    free(v);
    v = eg_fence_rec_format("pay", 3, f, -1, -1, 9, 2000, &vl);
    CHECK(v && eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == 1 && rec.done == -1 && rec.epoch == 9,
          "an epoch without a done line");
    eg_fence_rec_clear(&rec);
    free(v);
    el = eg_fence_rec_end(5, -1, 3, endv);
    CHECK(eg_fence_rec_parse(rk, rkl, endv, el, &rec, &why) == 0 && rec.done == 5 && rec.epoch == 3 &&
              rec.released == -1,
          "an end record carries done and epoch");
    el = eg_fence_rec_end(INT64_MAX, INT64_MAX, 9007199254740992LL, endv);
    CHECK(el < EG_FENCE_REC_END_MAX && eg_fence_rec_parse(rk, rkl, endv, el, &rec, &why) == 0 &&
              rec.done == INT64_MAX && rec.released == INT64_MAX && rec.epoch == 9007199254740992LL,
          "an end with the largest done, released and epoch fits its bound and reads back");
    v = eg_fence_rec_format("pay", 3, f, 40, 33, 7, 2000, &vl);
    CHECK(v && eg_fence_rec_parse(rk, rkl, v, vl, &rec, &why) == 1 && rec.done == 40 && rec.released == 33 &&
              rec.epoch == 7,
          "a state's released line (the key's release floor) is read back between done and epoch");
    eg_fence_rec_clear(&rec);
    free(v);
    CHECK(eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "released 3\ndone 5\n", strlen(EG_FENCE_REC_END) + 18, &rec,
                             &why) == -1 &&
              eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "released -3\n", strlen(EG_FENCE_REC_END) + 12, &rec,
                                 &why) == -1,
          "released before done, or a negative one, is refused");
    CHECK(
        eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "epoch 3\ndone 5\n", strlen(EG_FENCE_REC_END) + 15, &rec, &why) ==
                -1 &&
            eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "epoch 0\n", strlen(EG_FENCE_REC_END) + 8, &rec, &why) == -1 &&
            eg_fence_rec_parse(rk, rkl, EG_FENCE_REC_END "epoch 9007199254740993\n", strlen(EG_FENCE_REC_END) + 23,
                               &rec, &why) == -1,
        "epoch before done, epoch 0, or an epoch past 2^53 is refused");
    char ck[EG_FENCE_REC_KEY_MAX], cv[EG_FENCE_CLAIM_MAX], ctp[EG_TOPIC_NAME_MAX + 1];
    int32_t cpt = -1;
    int64_t cep = -1;
    size_t cvl = eg_fence_claim_format("pay", 3, 12, ck, cv);
    CHECK(!strcmp(ck, "pay/3/claim") && eg_fence_claim_parse(ck, strlen(ck), cv, cvl, ctp, &cpt, &cep, &why) == 1 &&
              !strcmp(ctp, "pay") && cpt == 3 && cep == 12,
          "a claim (pay/3/claim, epoch 12) is read back");
    CHECK(eg_fence_claim_parse(rk, rkl, endv, el, ctp, &cpt, &cep, &why) == 0, "a fence's record key is no claim");
    CHECK(eg_fence_claim_parse(ck, strlen(ck), "errgate-fence-claim 1\n0\n", 24, ctp, &cpt, &cep, &why) == -1 &&
              eg_fence_claim_parse(ck, strlen(ck), "errgate-fence-claim 1\n12", 24, ctp, &cpt, &cep, &why) == -1 &&
              eg_fence_claim_parse(ck, strlen(ck), NULL, 0, ctp, &cpt, &cep, &why) == -1 &&
              eg_fence_claim_parse("pay/x/claim", 11, cv, cvl, ctp, &cpt, &cep, &why) == -1 &&
              eg_fence_claim_parse("/3/claim", 8, cv, cvl, ctp, &cpt, &cep, &why) == -1,
          "a claim of epoch 0, torn, a tombstone, or under a bad record key is refused");
    CHECK(eg_fence_claim_parse(ck, strlen(ck), "errgate-fence-claim 1\n012\n", 25, ctp, &cpt, &cep, &why) == -1 &&
              eg_fence_claim_parse("pay/03/claim", 12, cv, cvl, ctp, &cpt, &cep, &why) == -1,
          "a claim is canonical: no leading zero in its epoch or partition (libFuzzer found both)");
    CHECK(eg_fence_partition("pay", 3, 1) == 0 && eg_fence_partition("pay", 3, 6) == eg_fence_partition("pay", 3, 6) &&
              eg_fence_partition("pay", 3, 6) >= 0 && eg_fence_partition("pay", 3, 6) < 6 &&
              eg_fence_partition("pay", 4, 6) != eg_fence_partition("pay", 3, 6),
          "the records about a source partition go to one partition of the fence topic, neighbours to others");
    eg_fences_free(&t);

    /* ladder+dlq: followers are placed in the DLQ in queue order (fence.h) */
    eg_fences_init(&t, 10, 100);
    eg_fences_park(&t, "k", 1, "pay/0/1", EG_FENCE_WHY_LADDER, EG_ACT_LADDER, "1s", 1, 0);
    f = eg_fences_get(&t, "k", 1);
    eg_fences_follow(&t, f, "pay/0/2");
    eg_fences_follow(&t, f, "pay/0/3");
    eg_fences_park(&t, "k", 1, "pay/0/1", EG_FENCE_WHY_DLQ, EG_ACT_DLQ, NULL, 0, 5000);
    CHECK(f->action == EG_ACT_DLQ && !strcmp(f->wait_rung, "1s") && f->wait_index == 1 && f->nplaced == 0 &&
              f->progress_ms == 5000,
          "a head dead-lettered from rung 1s at 5000: followers go to the DLQ, the ones not there wait on 1s");
    eg_fences_follow(&t, f, "pay/0/4");
    CHECK(!eg_fences_placeable(f, "pay/0/4") && !eg_fences_placeable(f, "pay/0/3") && eg_fences_placeable(f, "pay/0/2"),
          "a later record (from the source) may not pass the followers still on the rung; the first may go");
    eg_fences_placed(f, "pay/0/3");
    CHECK(f->nplaced == 0, "placing out of turn changes nothing");
    eg_fences_placed(f, "pay/0/2");
    CHECK(f->nplaced == 1 && eg_fences_placeable(f, "pay/0/3") && !eg_fences_placeable(f, "pay/0/4") &&
              eg_fences_placeable(f, "pay/0/2"),
          "then the next (a replay of a placed one may go again)");
    eg_fences_placed(f, "pay/0/3");
    char rk3[EG_FENCE_REC_KEY_MAX];
    size_t rkl3 = eg_fence_rec_key("pay", 0, "k", 1, rk3);
    v = eg_fence_rec_format("pay", 0, f, -1, -1, 2, 5, &vl);
    CHECK(v && eg_fence_rec_parse(rk3, rkl3, v, vl, &rec, &why) == 1 && rec.nplaced == 0 &&
              !strcmp(rec.wait_rung, "1s") && rec.wait_index == 1 && rec.nq == 3,
          "placements whose lane writes are in flight are not recorded: a next owner places them again first");
    eg_fence_rec_clear(&rec);
    free(v);
    CHECK(!eg_fences_durable(f, "pay/0/3") && f->ndurable == 0 && f->nearly == 1 && !eg_fences_durable(f, "pay/0/4") &&
              f->nearly == 1,
          "a placement durable before the one ahead of it is not counted yet; one never placed, not at all");
    CHECK(eg_fences_durable(f, "pay/0/2") && f->ndurable == 2 && f->nearly == 0 && !eg_fences_durable(f, "pay/0/2") &&
              !eg_fences_durable(f, "pay/0/3") && f->nplaced == 2,
          "the first placement durable: the prefix takes in the one durable before it, once");
    v = eg_fence_rec_format("pay", 0, f, -1, -1, 2, 5, &vl);
    CHECK(v && eg_fence_rec_parse(rk3, rkl3, v, vl, &rec, &why) == 1 && rec.nplaced == 2 &&
              !strcmp(rec.wait_rung, "1s") && rec.wait_index == 1 && rec.epoch == 2 && rec.nq == 3,
          "the durable placed prefix and the rung they wait on are recorded");
    eg_fence_rec_clear(&rec);
    if (v) {
        char *bad = malloc(vl + 8);
        memcpy(bad, v, vl);
        char *pl = strstr(bad, "placed 2");
        if (pl) pl[7] = '9';
        CHECK(pl && eg_fence_rec_parse(rk3, rkl3, bad, vl, &rec, &why) == -1, "more placed than queued is refused");
        free(bad);
    }
    free(v);
    eg_fences_resolve(&t, "k", 1, "pay/0/1");
    CHECK(!strcmp(f->head, "pay/0/2") && f->nplaced == 1 && f->ndurable == 1 && f->nq == 2,
          "the head resolved: the first placed is head");
    eg_fences_unqueue(&t, "k", 1, "pay/0/3");
    CHECK(f->nplaced == 0 && f->ndurable == 0 && f->nq == 1 && eg_fences_placeable(f, "pay/0/4"),
          "a placed follower resolved leaves the prefix; the next may go");
    eg_fences_free(&t);

    /* placements durable out of turn (their writes acknowledged before a rewritten one ahead) */
    eg_fences_init(&t, 10, 100);
    eg_fences_park(&t, "k", 1, "pay/0/1", EG_FENCE_WHY_DLQ, EG_ACT_DLQ, NULL, 0, 0);
    f = eg_fences_get(&t, "k", 1);
    static const char *const five[] = {"pay/0/2", "pay/0/3", "pay/0/4", "pay/0/5", "pay/0/6"};
    for (int i = 0; i < 5; i++) {
        eg_fences_follow(&t, f, five[i]);
        eg_fences_placed(f, five[i]);
    }
    CHECK(f->nplaced == 5 && !eg_fences_durable(f, five[4]) && !eg_fences_durable(f, five[2]) &&
              !eg_fences_durable(f, five[3]) && !eg_fences_durable(f, five[2]) && f->ndurable == 0 && f->nearly == 3,
          "three acknowledged out of turn: none counted, each remembered once");
    eg_fences_unqueue(&t, "k", 1, five[3]);
    CHECK(eg_fences_durable(f, five[0]) && f->ndurable == 1 && f->nearly == 2,
          "the first: the prefix stops at the second, not yet durable");
    CHECK(eg_fences_durable(f, five[1]) && f->ndurable == 4 && f->nplaced == 4 && f->nearly == 0,
          "the second: the prefix takes in the ones after it, the resolved one forgotten");
    eg_fences_free(&t);

    /* the resolved offsets (fence_done.h): raised only upward, bounded, least recent forgotten */
    eg_fence_done *dn = eg_fence_done_new(3);
    CHECK(eg_fence_done_get(dn, "a", 1) == -1 && eg_fence_done_count(dn) == 0, "an empty map knows no key");
    eg_fence_done_raise(dn, "a", 1, 10);
    eg_fence_done_raise(dn, "a", 1, 7);
    CHECK(eg_fence_done_get(dn, "a", 1) == 10, "a lower offset does not lower the mark");
    CHECK(eg_fence_done_covers(dn, "a", 1, 10) && eg_fence_done_covers(dn, "a", 1, 0) &&
              !eg_fence_done_covers(dn, "a", 1, 11) && !eg_fence_done_covers(dn, "a", 1, -1) &&
              !eg_fence_done_covers(dn, "z", 1, 0) && eg_fence_done_floor(dn, "a", 1) == -1,
          "a copy born at or below the mark has its outcome; above it, unknown (-1) or of another key, not");
    eg_fence_done_release(dn, "a", 1, 8);
    eg_fence_done_release(dn, "a", 1, 4);
    CHECK(eg_fence_done_floor(dn, "a", 1) == 8 && !eg_fence_done_covers(dn, "a", 1, 8) &&
              !eg_fence_done_covers(dn, "a", 1, 3) && eg_fence_done_covers(dn, "a", 1, 9) &&
              eg_fence_done_get(dn, "a", 1) == 10,
          "an operator's release up to 8 (raised only upward): copies at or below it are let through, the mark kept");
    eg_fence_done_release(dn, "r", 1, 5);
    eg_fence_done_raise(dn, "r", 1, 20);
    CHECK(eg_fence_done_get(dn, "r", 1) == 20 && eg_fence_done_floor(dn, "r", 1) == 5 &&
              !eg_fence_done_covers(dn, "r", 1, 5) && eg_fence_done_covers(dn, "r", 1, 6),
          "a later fence of a released key resolving past the floor does not make the released ones duplicates");
    eg_fence_done_free(dn);
    dn = eg_fence_done_new(3);
    eg_fence_done_raise(dn, "a", 1, 10);
    eg_fence_done_raise(dn, "b", 1, 1);
    eg_fence_done_raise(dn, "c", 1, 2);
    eg_fence_done_raise(dn, "a", 1, 11); /* a is the most recent now: b is the least */
    eg_fence_done_raise(dn, "d", 1, 3);
    CHECK(eg_fence_done_count(dn) == 3 && eg_fence_done_get(dn, "b", 1) == -1 && eg_fence_done_get(dn, "a", 1) == 11 &&
              eg_fence_done_get(dn, "c", 1) == 2 && eg_fence_done_get(dn, "d", 1) == 3,
          "past the cap the least recently raised key is forgotten, the others kept");
    eg_fence_done_raise(dn, "e", 1, -5);
    CHECK(eg_fence_done_get(dn, "e", 1) == -1 && eg_fence_done_count(dn) == 3, "a negative offset is not taken");
    for (int i = 0; i < 500; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%d", i);
        eg_fence_done_raise(dn, k, (size_t)n, i);
    }
    CHECK(eg_fence_done_count(dn) == 3 && eg_fence_done_get(dn, "k499", 4) == 499 &&
              eg_fence_done_get(dn, "k496", 4) == -1,
          "500 keys through a map of 3 keep the last 3");
    eg_fence_done_free(dn);
    dn = eg_fence_done_new(100000);
    for (int i = 0; i < 5000; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%d", i);
        eg_fence_done_raise(dn, k, (size_t)n, i);
    }
    int lost = 0;
    for (int i = 0; i < 5000; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%d", i);
        lost += eg_fence_done_get(dn, k, (size_t)n) != i;
    }
    CHECK(lost == 0 && eg_fence_done_count(dn) == 5000,
          "5,000 keys under the cap are all kept through growth (%d lost)", lost);
    eg_fence_done_free(dn);

    /* operation records (fence_op.h): release and resolve, asked by another instance or dlq resolve */
    char ov[EG_FENCE_OP_VALUE_MAX];
    size_t ol = eg_fence_op_format(EG_FENCE_OP_RESOLVE, "pay/3/41", "ann\tb", 5000, ov);
    eg_fence_op op;
    CHECK(ol > 0 && eg_fence_op_is(ov, ol) && !eg_fence_op_is(EG_FENCE_REC_END, strlen(EG_FENCE_REC_END)),
          "an operation record is told apart from a fence's");
    CHECK(eg_fence_op_parse(rk, rkl, ov, ol, &op, &why) == 0 && op.op == EG_FENCE_OP_RESOLVE &&
              !strcmp(op.id, "pay/3/41") && !strcmp(op.by, "ann?b") && op.at_ms == 5000 && !strcmp(op.topic, "pay") &&
              op.partition == 3,
          "a resolve is read back with its fields (a control byte of its author replaced)");
    CHECK(eg_fence_rec_parse(rk, rkl, ov, ol, &rec, &why) == -1, "the fence parser refuses an operation record");
    CHECK(eg_fence_op_parse(rk, rkl, ov, ol - 1, &op, &why) == -1 && !strcmp(why, "malformed"),
          "a torn operation is refused");
    CHECK(eg_fence_op_format(EG_FENCE_OP_RELEASE, "not an id", "x", 1, ov) == 0, "no operation on a bad id");
    ol = eg_fence_op_format(EG_FENCE_OP_RELEASE, "pay/3/41", "", 1, ov);
    CHECK(eg_fence_op_parse(rk, rkl, ov, ol, &op, &why) == 0 && op.op == EG_FENCE_OP_RELEASE &&
              !strcmp(op.by, "unknown"),
          "a release without an author names it unknown");
    static const char *const badop[] = {
        "errgate-fence-op 1\nlift\npay/3/41\nx\n1\n",          "errgate-fence-op 1\nrelease\npay/3/x\nx\n1\n",
        "errgate-fence-op 1\nrelease\npay/3/41\n\n1\n",        "errgate-fence-op 1\nrelease\npay/3/41\nx\n-1\n",
        "errgate-fence-op 1\nrelease\npay/3/41\nx\n1\nmore\n", NULL};
    for (int i = 0; badop[i]; i++)
        CHECK(eg_fence_op_parse(rk, rkl, badop[i], strlen(badop[i]), &op, &why) == -1, "a bad operation %d is refused",
              i);
    CHECK(eg_fence_op_parse("pay/3/xyz", 9, ov, ol, &op, &why) == -1 && !strcmp(why, "bad_record_key"),
          "an operation under a bad record key is refused");

    /* a follower resolved before its turn leaves the queue, the others keep their order */
    eg_fences u;
    eg_fences_init(&u, 4, 40);
    eg_fences_park(&u, "k", 1, "pay/0/1", EG_FENCE_WHY_DLQ, EG_ACT_DLQ, NULL, 0, 1);
    eg_fence *g = eg_fences_get(&u, "k", 1);
    eg_fences_follow(&u, g, "pay/0/2");
    eg_fences_follow(&u, g, "pay/0/3");
    eg_fences_follow(&u, g, "pay/0/4");
    CHECK(eg_fences_unqueue(&u, "k", 1, "pay/0/3") == 1 && g->nq == 2 && u.nfollowers == 2 &&
              !strcmp(g->q[g->qoff], "pay/0/2") && !strcmp(g->q[g->qoff + 1], "pay/0/4"),
          "unqueue takes a follower out of the middle");
    CHECK(eg_fences_unqueue(&u, "k", 1, "pay/0/1") == 0 && eg_fences_unqueue(&u, "k", 1, "pay/0/9") == 0 &&
              eg_fences_unqueue(&u, "j", 1, "pay/0/2") == 0,
          "not the head, nor an id not queued, nor another key");
    CHECK(eg_fences_resolve(&u, "k", 1, "pay/0/1") && !strcmp(g->head, "pay/0/2") && g->nq == 1,
          "then the head resolves onto the first follower");
    CHECK(eg_fences_unqueue(&u, "k", 1, "pay/0/4") == 1 && g->nq == 0 && u.nfollowers == 0, "and the last leaves");
    eg_fences_free(&u);
    return TAP_DONE();
}
