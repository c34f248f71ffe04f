/* gw_fence.c — per-key fencing of parked records (source.fence, under
 * ordering = "key"): the gateway's side of fence.h.
 *
 * Each source partition has a fence table, made at its first fence. The
 * record path (gateway.c) asks here at three points:
 *   - before a keyed record goes to the target (from its source or a rung):
 *     when its key is fenced and it is not the fence's head, it follows:
 *     written where the head is (the head's rung, or the DLQ under
 *     "ladder+dlq") with errgate.fenced-by: <the head's id> and reason
 *     `fenced`, no target call, no policy call, no rung climbed, and queued
 *     behind the head in the order it first followed;
 *   - after the policy's decision on a keyed record: a ladder parks its key
 *     (a new fence, or its own fence moves to the new rung); a dead letter
 *     parks it under "ladder+dlq" and resolves it under "ladder"; an ignore
 *     resolves it; a fence the table has no room for (source.fence_max_keys,
 *     or 100 queued followers per key on average) turns the decision into a
 *     hold with reason `fence_cap`, logged `fence_cap` and counted: the
 *     partition pauses rather than let a later record of the key pass;
 *   - after a success (under "ladder" also a dead letter, a quarantine or an
 *     ignore): the head resolves at its durable outcome (the success, its
 *     lane record acknowledged or spilled; eg_gw_fence_outcome), in the
 *     write that also raises its resolved offset; its first follower becomes
 *     the released head, which passes when it comes due on its rung, and
 *     the others follow again behind it until their turn.
 * A record without a key is never fenced. A rung record belongs to the
 * table of its source partition (a rung record goes to the source's
 * partition number).
 *
 * Durable: every change of a fence (a new fence, a follower queued, the
 * head moved, resolved or released) is written to the compacted control
 * topic GROUP.fences (fence_rec.h: one record per fenced key, its whole
 * state; a signed record with control_key_file, opened like the audit
 * topic: audit.h) and read back by every instance into a view of the
 * latest record per fence. A source partition's table is dropped when the
 * partition is revoked; when one is assigned, the view is first read up to
 * the topic's end (eg_audit_catch_up, up to FENCE_CATCH_UP_MS) and the
 * partition's table rebuilt from it, before any of its records is taken:
 * after a rebalance, a restart or a kill -9 the new owner holds the fences
 * the old one wrote. A write that fails (its delivery report's error: the
 * fence topic's leader gone longer than EG_AUDIT_WRITE_TIMEOUT_MS, as when
 * its broker is killed) is written again, the fence's state at that moment,
 * while the partition is still owned here: without it a kill -9 of the fence
 * topic's leader lost every fence written in those seconds, and the next
 * owner let later records of those keys pass (the chaos runner's per-key
 * audit, kafka seed 1). A write is awaited before the offsets of the
 * records that finished after it was sent are committed (eg_gw_fence_finish
 * holds their tracker finish until every fence write sent before is
 * acknowledged): a kill -9 within a write's flight leaves those records
 * uncommitted, and the next owner takes them again against the fences it
 * rebuilt, so that no change a committed record made is lost (without it,
 * the chaos runner's kill -9 seeds overtook parked records: 452
 * inversions in seed 6). A keyed record's lane write waits the same way
 * (eg_gw_fence_lane_wait): a copy on a rung or in the DLQ is never more
 * recent than the durable fence state that lists it (without it, a cut-off
 * owner's followers reached the rung while their fence writes never landed,
 * and the next owner passed them to the target ahead of their head). A new
 * owner reads the topic at least past its own acknowledged claim before it
 * rebuilds: a broker that has just been a stopped leader answers with an
 * old watermark.
 *
 * Duplicates: each fence also keeps the highest source offset of its key
 * resolved so far (fence_done.h), raised when a record that resolved the
 * fence has its durable outcome (its success, its dead letter acknowledged
 * under "ladder", its ignore's decision line written; not at the decision:
 * a dead letter lost with a kill -9 must be made again by the next owner),
 * written with the fence's next state or its end and read back by every
 * instance. A rung record born at or below it that the fence does not list
 * (a copy written again while it waited its turn, or taken again after a
 * rebalance because its offset was not committed) already has its outcome:
 * every rung record was parked or followed, and a fence's records resolve
 * in offset order, each at its durable outcome. It is dropped (logged `fence_duplicate`,
 * counted), not sent to the target again nor queued behind a later fence
 * (without it one record reached the target 160 times in a chaos seed and
 * the rungs never drained). A replay (replay.from-dlq) is never one. Records of
 * the topic are hostile input: refused (logged `fence_record_refused`,
 * counted by reason) when malformed, inconsistent, over the size bounds or,
 * with a control key, not signed by it; a tombstone is believed only
 * without a key. An operator lifts
 * a key's fence with POST /fences/release (key=K): its followers then pass
 * as they come back, and those in the DLQ are replayed by the operator.
 *
 * Group-wide: the topic also carries operation records (fence_op.h), under
 * a fence's record key so that they are ordered with its states. POST
 * /fences/release lifts the fences this instance holds and writes a release
 * record for each fence of the key its view shows held elsewhere; `errgate
 * dlq resolve -c` writes a resolve record for a dead-lettered item. Every
 * instance reads the topic live: the partition's owner applies one to its
 * table (release: lifted; resolve of a dead-lettered head: its first
 * follower is the released head; of a follower: off the queue) and writes
 * the fence's state again, every view applies it to its copy (what a later
 * owner rebuilds from). A revoke reads the topic to its end before the
 * fences are handed over, so one written just before is not lost in the
 * handover. They are refused like any record of the topic (unsigned, with a
 * key; malformed), and one for a fence not in the view changes nothing.
 *
 * Locality: the event loop's, like everything of gw.h. */
#include "audit.h"
#include "fence.h"
#include "fence_done.h"
#include "fence_rec.h"
#include "gw.h"
#include "headers.h"
#include "json.h"
#include "log.h"
#include "override.h"
#include "util.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Under ladder+dlq, a follower waits for its predecessors to reach the DLQ
 * as long as they keep coming: at most three of the rung's delays and this
 * long since the fence's placements last moved on (its move to the lane,
 * its rebuild here, a follower placed). Long enough for a predecessor's rung
 * copy held in another instance's spill journal until the rung's leader is
 * back: at 10 s from the move, a new owner placed a follower 0.7 s before a
 * previous owner's journal brought nine of its predecessors (the chaos
 * runner's ladder+dlq seed 2, 67 inversions). */
#define PLACE_GRACE_MS 60000
/* Followers queued per partition: this many per fenced key on average. */
#define FOLLOWERS_PER_KEY 100
/* /fences: ids listed per fence, key bytes shown. */
#define LIST_FOLLOWERS_MAX 100
#define LIST_KEY_MAX 256
/* At an assignment: the fence topic is read to its end within this (long
 * enough for a partition leader's election after its broker's kill -9:
 * at 10 s, with the watermarks asked once, a rebuild read without it and
 * left fences behind heads already resolved: the chaos runner's seed 1,
 * 899 records never settled). */
#define FENCE_CATCH_UP_MS 30000
/* The view holds at most this many fences (records of distinct keys). */
#define VIEW_MAX 1000000
/* At a revoke and at the stop: the fence writes still in flight are waited
 * for this long. Long enough for a write to fail (EG_AUDIT_WRITE_TIMEOUT_MS:
 * the fence topic's leader killed) and be written again to the next leader
 * while the partition's table is still here: at 3 s, a revoke within a
 * write's timeout dropped the table before its failure, and the next owner
 * rebuilt without those fences (the chaos runner's per-key audit, kafka
 * seed 1: 449 writes pending at a revoke, 52 inversions). It is waited only
 * while writes are pending. */
#define FENCE_FLUSH_MS (2 * EG_AUDIT_WRITE_TIMEOUT_MS + 1000)
/* At a revoke: the fence topic is read to its end within this first (a
 * release written just before is applied and handed over). Short: a revoke
 * at the stop must end well within a supervisor's kill timeout. */
#define FENCE_READ_MS 3000
/* Fences whose resolved offset is remembered (fence_done.h), over every
 * partition: the least recently changed are forgotten past it. */
#define DONE_MAX 200000

static const char *const refusal_names[] = {"unsigned",  "malformed",    "bad_signature", "replayed", "bad_record_key",
                                            "too_large", "key_mismatch", "view_full",     "other"};
#define NREFUSALS ((int)(sizeof refusal_names / sizeof refusal_names[0]))

typedef struct fpart {
    char *topic; /* the source topic */
    int32_t partition;
    int64_t epoch;    /* this owner's (its claim's), carried by its records */
    int fresh;        /* claimed, not rebuilt yet (eg_gw_fence_rebuild) */
    int64_t done_max; /* part_done_max's, cached for the record path */
    eg_fences t;
    struct fpart *next;
} fpart;

/* A record finished while fence writes were in flight: its offset is
 * marked finished once every write up to wseq is acknowledged. */
typedef struct deferred {
    eg_part *p;    /* a reference held */
    uint64_t seq;  /* its tracker sequence number */
    uint64_t wseq; /* the last fence write sent before it finished */
} deferred;

struct eg_gw_fencing {
    fpart *parts;
    eg_fence_done *done; /* resolved offset per fence (record key) */
    uint64_t duplicates; /* copies of resolved records dropped */
    /* fence writes: numbered from 1 in the order sent; acked[s & (capack - 1)]
     * for s in [wlo, wnext) says which are acknowledged */
    uint64_t wnext, wlo;
    unsigned char *acked;
    uint64_t capack; /* power of two, 0 before the first write */
    deferred *defer; /* FIFO, wseq not decreasing: defer[doff .. doff + ndefer) */
    size_t ndefer, doff, capdefer;
    eg_record *lw_head, *lw_tail; /* lane writes waiting (EG_RS_FENCE_WAIT), fence_wseq not decreasing */
    int lane_waiting;             /* on that list */
    uint64_t lane_waits;          /* lane writes that waited, in all */
    uint64_t place_waits;         /* followers sent back to wait on a rung for the ones before them */
    uint64_t place_timeouts;      /* followers placed ahead of ones that did not come back in time */
    uint64_t fenced_total;        /* records that followed a parked one */
    uint64_t cap_holds;           /* decisions held at the cap */
    uint64_t released;            /* fences lifted by an operator */
    uint64_t ops_applied[3];      /* operation records applied to a fence held here, by eg_fence_opkind */
    uint64_t ops_sent;            /* release records written for fences held elsewhere */
    eg_audit *topic;              /* GROUP.fences, NULL when fencing is off */
    char name[EG_TOPIC_NAME_MAX + 1];
    eg_strmap view_at;  /* record key -> index in view */
    eg_strmap claims;   /* "TOPIC/PARTITION" -> the highest epoch claimed */
    eg_strmap done_max; /* "TOPIC/PARTITION" -> the highest resolved offset of its fences */
    uint64_t stale;     /* records of a previous owner read after a later claim, ignored */
    int claims_pending; /* claims not acknowledged yet */
    int64_t *claim_at;  /* per fence partition: the offset of the last claim acknowledged, -1 none */
    int nclaim_at;
    eg_fence_rec *view; /* the latest record per fence (ended: key NULL and topic "") */
    int nview, capview;
    int pending; /* writes not acknowledged yet */
    int closing; /* the stop: a failed write is not written again */
    uint64_t writes, write_failures, rebuilt;
    uint64_t refused[NREFUSALS];
};

int eg_gw_fence_on(const eg_gw *gw) { return gw->cfg->fence != EG_FENCE_OFF && gw->cfg->ordering == EG_ORDER_KEY; }

/* ------------------------------------------------------------ the topic */

/* Counts and logs a refused record of the fence topic. */
static void refuse(eg_gw *gw, const eg_audit_rec *r, const char *why) {
    int i = 0;
    while (i < NREFUSALS - 1 && strcmp(refusal_names[i], why) != 0) i++;
    gw->fencing->refused[i]++;
    if (gw->fencing->refused[i] > 10 && gw->fencing->refused[i] % 1000) return; /* loud, not a flood */
    eg_log_msg(EG_WARN, "fence_record_refused", "%s[%d]@%lld: %s (not applied; %llu so far)", gw->fencing->name,
               (int)r->partition, (long long)r->offset, why, (unsigned long long)gw->fencing->refused[i]);
}

static void persist(eg_gw *gw, const struct fpart *fp, const void *key, size_t len);
static eg_fences *table_of(eg_gw *gw, const char *topic, int32_t partition, int create);
static struct fpart *part_of(eg_gw *gw, const char *topic, int32_t partition);

/* "TOPIC/PARTITION", the key of the per-partition maps, into k
 * (PART_KEY_MAX bytes). Returns its length. */
#define PART_KEY_MAX (EG_TOPIC_NAME_MAX + 16)
static size_t part_key(const char *topic, int32_t partition, char *k) {
    return (size_t)snprintf(k, PART_KEY_MAX, "%s/%d", topic, (int)partition);
}

/* The highest resolved offset of any fence of topic[partition] read or
 * raised here (-1: none): a record born above it cannot be a duplicate,
 * and its key's mark (a SHA-256 of the key away) is not looked up. */
static int64_t part_done_max(const struct eg_gw_fencing *fg, const char *topic, int32_t partition) {
    char k[PART_KEY_MAX];
    return eg_strmap_get(&fg->done_max, k, part_key(topic, partition, k));
}

/* Raises the resolved offset of the fence under record key rkey (of
 * topic[partition]) to off, and its partition's highest (map and table). */
static void raise_done(eg_gw *gw, const char *rkey, size_t rkl, const char *topic, int32_t partition, int64_t off) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (off < 0) return;
    eg_fence_done_raise(fg->done, rkey, rkl, off);
    char k[PART_KEY_MAX];
    size_t kl = part_key(topic, partition, k);
    if (off > eg_strmap_get(&fg->done_max, k, kl)) eg_strmap_put(&fg->done_max, k, kl, off);
    struct fpart *fp = part_of(gw, topic, partition);
    if (fp && off > fp->done_max) fp->done_max = off;
}

/* The source offset a record id of topic[partition] names in the
 * gateway's form "TOPIC/PARTITION/OFFSET", or -1 for any other form. */
static int64_t id_birth(const char *topic, int32_t partition, const char *id) {
    char want[EG_ID_MAX + 1];
    int w = snprintf(want, sizeof want, "%s/%d/", topic, (int)partition);
    if (w <= 0 || (size_t)w >= sizeof want || strncmp(id, want, (size_t)w) != 0) return -1;
    return eg_uint_parse(id + w, strlen(id + w));
}

/* An operator lifts the fence of key[0..len) of topic[partition] (head and
 * the nq follower ids of q): they pass as they come back, possibly after a
 * later fence of the key resolved past them, so the key's release floor is
 * raised to the highest of their offsets (fence_done.h): no copy of them is
 * dropped as resolved. Written with the fence's next state or its end. */
static void release_floor(eg_gw *gw, const char *topic, int32_t partition, const void *key, size_t len,
                          const char *head, char *const *q, int nq) {
    int64_t top = id_birth(topic, partition, head);
    for (int i = 0; i < nq; i++) {
        int64_t b = id_birth(topic, partition, q[i]);
        if (b > top) top = b;
    }
    char rkey[EG_FENCE_REC_KEY_MAX];
    size_t rkl = eg_fence_rec_key(topic, partition, key, len, rkey);
    eg_fence_done_release(gw->fencing->done, rkey, rkl, top);
}

/* The fence topic's partition the records about topic[partition] go to. */
static int32_t fence_partition(eg_gw *gw, const char *topic, int32_t partition) {
    return eg_fence_partition(topic, partition, eg_audit_partitions(gw->fencing->topic));
}

/* The highest epoch claimed for source partition topic[partition] that
 * this instance has read (0: none). */
static int64_t claimed(const struct eg_gw_fencing *fg, const char *topic, int32_t partition) {
    char k[PART_KEY_MAX];
    int64_t e = eg_strmap_get(&fg->claims, k, part_key(topic, partition, k));
    return e > 0 ? e : 0;
}

/* A claim of topic[partition] at epoch (read from the topic): the highest
 * one counts; when this instance holds the partition at a lower epoch,
 * another owner has taken it over (this one is being revoked or was cut
 * off): said, as its writes for it are ignored from now on. */
static void on_claim(eg_gw *gw, const char *topic, int32_t partition, int64_t epoch) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (epoch <= claimed(fg, topic, partition)) return;
    char k[PART_KEY_MAX];
    eg_strmap_put(&fg->claims, k, part_key(topic, partition, k), epoch);
    const struct fpart *fp = part_of(gw, topic, partition);
    if (fp && fp->epoch < epoch)
        eg_log_msg(EG_WARN, "fence_superseded",
                   "%s[%d]: another owner claimed its fences at epoch %lld (this one holds %lld): this one's fence "
                   "writes for it are ignored from now on",
                   topic, (int)partition, (long long)epoch, (long long)fp->epoch);
}

/* Logs an operation record's effect on a fence (event, with the key's
 * hash, the operation's id and author). */
static void log_op(const char *event, const eg_fence_op *op, const void *key, size_t len, int applied) {
    eg_logline l;
    if (!eg_log_begin(&l, applied ? EG_WARN : EG_INFO, event)) return;
    char kh[17];
    eg_fmt_hex64(eg_hash64(key, len), kh);
    eg_log_str(&l, "topic", op->topic);
    eg_log_int(&l, "partition", op->partition);
    eg_log_str(&l, "key_hash", kh);
    eg_log_str(&l, "op", op->op == EG_FENCE_OP_RELEASE ? "release" : "resolve");
    eg_log_str(&l, "id", op->id);
    eg_log_str(&l, "by", op->by);
    eg_log_int(&l, "applied", applied);
    eg_log_end(&l);
}

/* Operation op on the fence of key[0..len) in the table of its partition,
 * when this instance holds that table (it owns the partition): a release
 * lifts the fence; a resolve of a dead-lettered head lets its first
 * follower go next, of a dead-lettered follower takes it off the queue (a
 * fence whose head is on a rung is left alone: that record resolves when
 * it comes back). The fence's state after it is written to the topic,
 * changed or not. Returns 1 when the table held the partition. */
static int op_on_table(eg_gw *gw, const eg_fence_op *op, const void *key, size_t len) {
    eg_fences *t = table_of(gw, op->topic, op->partition, 0);
    if (!t) return 0;
    eg_fence *f = eg_fences_get(t, key, len);
    int changed = 0;
    if (f && op->op == EG_FENCE_OP_RELEASE) changed = eg_fences_release(t, key, len);
    else if (f && f->action != EG_ACT_LADDER)
        changed = eg_fences_resolve(t, key, len, op->id) || eg_fences_unqueue(t, key, len, op->id);
    if (changed) {
        gw->fencing->ops_applied[op->op]++;
        if (op->op == EG_FENCE_OP_RELEASE) gw->fencing->released++;
    }
    /* even unchanged, the fence's state is written again: the operation is the last record under
     * its record key now, and compaction would leave it alone there */
    if (f) persist(gw, (const struct fpart *)((const char *)t - offsetof(struct fpart, t)), key, len);
    log_op(op->op == EG_FENCE_OP_RELEASE ? "fence_release" : "fence_resolved", op, key, len, changed);
    return 1;
}

/* The same operation on the view's state v (what a rebuild starts from). */
static void op_on_view(eg_fence_rec *v, const eg_fence_op *op) {
    int end = op->op == EG_FENCE_OP_RELEASE;
    v->op_last = 1; /* the operation is the last record under the key, whether it changed the state or not */
    if (!end && v->action == EG_ACT_LADDER) return;
    if (!end && strcmp(v->head, op->id) == 0) {
        if (v->nq == 0) end = 1;
        else {
            eg_strlcpy(v->head, v->q[0], sizeof v->head);
            free(v->q[0]);
            memmove(v->q, v->q + 1, (size_t)(v->nq - 1) * sizeof *v->q);
            v->nq--;
            v->parked = 0;
            if (v->nplaced > 0) v->nplaced--;
        }
    } else if (!end) {
        int i = 0;
        while (i < v->nq && strcmp(v->q[i], op->id) != 0) i++;
        if (i == v->nq) return;
        free(v->q[i]);
        memmove(v->q + i, v->q + i + 1, (size_t)(v->nq - i - 1) * sizeof *v->q);
        v->nq--;
        if (i < v->nplaced) v->nplaced--;
    }
    if (end) {
        eg_fence_rec_clear(v);
        v->topic[0] = '\0'; /* ended */
        v->op_last = 0;
    }
}

/* An operation record (fence_op.h), written by another instance (a
 * release) or by `errgate dlq resolve`: applied to the fence of its record
 * key, in the table when this instance owns the partition (read live, not
 * again after a reset), and in the view. One for a fence not in the view
 * (never fenced, or ended) changes nothing. */
static void on_fence_op(eg_gw *gw, const eg_audit_rec *r) {
    struct eg_gw_fencing *fg = gw->fencing;
    eg_fence_op op;
    const char *why = NULL;
    if (eg_fence_op_parse(r->key, r->klen, r->val, r->vlen, &op, &why) != 0) {
        refuse(gw, r, why);
        return;
    }
    int64_t at = eg_strmap_get(&fg->view_at, r->key, r->klen);
    eg_fence_rec *v = at >= 0 ? &fg->view[at] : NULL;
    if (!v || !v->topic[0]) return;
    if (op.op == EG_FENCE_OP_RELEASE) /* every reader: what a later owner judges copies by */
        release_floor(gw, v->topic, v->partition, v->key, v->key_len, v->head, v->q, v->nq);
    int held = r->live && !r->reread && op_on_table(gw, &op, v->key, v->key_len);
    if (!held && r->live) log_op("fence_op_read", &op, v->key, v->key_len, 0);
    op_on_view(v, &op);
}

/* A record of the fence topic (audit.h's reader, at start and live): the
 * view keeps the latest state per fence. */
static void on_fence_rec(void *arg, const eg_audit_rec *r) {
    eg_gw *gw = arg;
    struct eg_gw_fencing *fg = gw->fencing;
    if (r->refusal) {
        refuse(gw, r, r->refusal);
        return;
    }
    if (!r->val && r->keyed) {
        refuse(gw, r, "unsigned"); /* a tombstone carries no signature */
        return;
    }
    if (r->val && eg_fence_op_is(r->val, r->vlen)) {
        on_fence_op(gw, r);
        return;
    }
    const char *why = NULL;
    char ctopic[EG_TOPIC_NAME_MAX + 1];
    int32_t cpart;
    int64_t cepoch;
    int isclaim = eg_fence_claim_parse(r->key, r->klen, r->val, r->vlen, ctopic, &cpart, &cepoch, &why);
    if (isclaim < 0) {
        refuse(gw, r, why);
        return;
    }
    if (isclaim) {
        on_claim(gw, ctopic, cpart, cepoch);
        return;
    }
    eg_fence_rec rec;
    int rc = eg_fence_rec_parse(r->key, r->klen, r->val, r->vlen, &rec, &why);
    if (rc < 0) {
        refuse(gw, r, why);
        return;
    }
    raise_done(gw, r->key, r->klen, rec.topic, rec.partition, rec.done);
    eg_fence_done_release(fg->done, r->key, r->klen, rec.released);
    int64_t at = eg_strmap_get(&fg->view_at, r->key, r->klen);
    /* a previous owner's write read after a later owner's claim, in the partition they share; a
     * record without an epoch (written by a gateway from before epochs) is not judged */
    int stale = rec.epoch > 0 && ((r->partition == fence_partition(gw, rec.topic, rec.partition) &&
                                   rec.epoch < claimed(fg, rec.topic, rec.partition)) ||
                                  (at >= 0 && fg->view[at].epoch > rec.epoch));
    if (stale) {
        fg->stale++;
        if (fg->stale <= 10 || fg->stale % 1000 == 0)
            eg_log_msg(EG_WARN, "fence_record_stale",
                       "%s[%d]@%lld: a fence state of %s[%d] at epoch %lld, older than its partition's owner's: "
                       "ignored (%llu so far)",
                       fg->name, (int)r->partition, (long long)r->offset, rec.topic, (int)rec.partition,
                       (long long)rec.epoch, (unsigned long long)fg->stale);
        eg_fence_rec_clear(&rec);
        return;
    }
    if (at < 0 && rc == 0) return; /* the end of a fence never seen */
    if (at < 0) {
        if (fg->nview >= VIEW_MAX) {
            eg_fence_rec_clear(&rec);
            refuse(gw, r, "view_full");
            return;
        }
        if (fg->nview == fg->capview) {
            fg->capview = fg->capview ? fg->capview * 2 : 64;
            fg->view = eg_xrealloc(fg->view, (size_t)fg->capview * sizeof *fg->view);
        }
        at = fg->nview++;
        memset(&fg->view[at], 0, sizeof fg->view[at]);
        eg_strmap_put(&fg->view_at, r->key, r->klen, at);
    }
    eg_fence_rec_clear(&fg->view[at]);
    if (rc == 0) rec.topic[0] = '\0'; /* ended */
    fg->view[at] = rec;
}

int eg_gw_fence_start(eg_gw *gw, char *err, size_t errlen) {
    if (!eg_gw_fence_on(gw)) return 0;
    if (!gw->fencing) gw->fencing = eg_xcalloc(1, sizeof *gw->fencing);
    if (!gw->fencing->done) gw->fencing->done = eg_fence_done_new(DONE_MAX);
    _Static_assert(sizeof gw->fencing->name >= EG_TOPIC_NAME_MAX + 1, "room for a topic name");
    if (eg_fence_topic(gw->cfg->scope, gw->fencing->name) != 0) {
        snprintf(err, errlen, "source.fence: the fence topic %s.fences would be longer than %d characters",
                 gw->cfg->scope, EG_TOPIC_NAME_MAX);
        return -1;
    }
    gw->fencing->topic =
        eg_audit_open_topic(gw->cfg, gw->fencing->name, "fence", gw->base, on_fence_rec, gw, err, errlen);
    if (!gw->fencing->topic) return -1;
    int n = 0;
    for (int i = 0; i < gw->fencing->nview; i++) n += gw->fencing->view[i].topic[0] != '\0';
    eg_log_msg(EG_INFO, "fence_topic", "%s read: %d fences of the group", gw->fencing->name, n);
    return 0;
}

int eg_gw_fence_topic_is(const eg_gw *gw, const char *topic) {
    size_t g = strlen(gw->cfg->scope);
    return strncmp(topic, gw->cfg->scope, g) == 0 && strcmp(topic + g, ".fences") == 0;
}

/* One fence write in flight: which fence it was (its source partition and
 * key), so that a failed one can be written again. Owned by the write; freed
 * by its delivery report. */
typedef struct fence_write { /* topic NULL: an operation record or a claim, never written again */
    eg_gw *gw;
    uint64_t seq; /* its number (0: an operation record or a claim, not awaited) */
    int claim;    /* a claim (eg_gw_fence_rebuild waits for it) */
    char *topic;
    int32_t partition;
    size_t len;
    unsigned char key[];
} fence_write;

static void persist_seq(eg_gw *gw, const fpart *fp, const void *key, size_t len, uint64_t seq);

/* The fence table of source partition topic[partition] held here, or NULL. */
static fpart *part_of(eg_gw *gw, const char *topic, int32_t partition) {
    for (fpart *f = gw->fencing->parts; f; f = f->next)
        if (f->partition == partition && strcmp(f->topic, topic) == 0) return f;
    return NULL;
}

/* ------------------------------------------------- awaited fence writes */

/* Marks the deferred finishes whose writes are all acknowledged finished,
 * in the order they came. */
static void release_deferred(eg_gw *gw) {
    struct eg_gw_fencing *fg = gw->fencing;
    while (fg->ndefer && fg->defer[fg->doff].wseq < fg->wlo) {
        deferred *d = &fg->defer[fg->doff++];
        fg->ndefer--;
        if (!d->p->revoked) eg_tracker_finish(&d->p->trk, d->seq);
        eg_gw_part_unref(d->p);
    }
    if (!fg->ndefer) fg->doff = 0;
}

eg_record *eg_gw_fence_lane_next(eg_gw *gw) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !fg->lw_head || fg->lw_head->fence_wseq >= fg->wlo) return NULL;
    eg_record *r = fg->lw_head;
    eg_gw_fence_lane_unlink(gw, r);
    return r;
}

int eg_gw_fence_lane_wait(eg_gw *gw, eg_record *r) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !r->msg->key || !eg_gw_fence_on(gw) || (fg->wlo == fg->wnext && !fg->lw_head)) return 0;
    r->fence_wseq = fg->wnext - 1;
    r->state = EG_RS_FENCE_WAIT;
    r->qnext = NULL;
    r->qprev = fg->lw_tail;
    if (fg->lw_tail) fg->lw_tail->qnext = r;
    else fg->lw_head = r;
    fg->lw_tail = r;
    fg->lane_waiting++;
    fg->lane_waits++;
    if (r->fence_wseq < fg->wlo) event_active(gw->fence_lane_ev, EV_TIMEOUT, 0); /* behind others only */
    return 1;
}

void eg_gw_fence_lane_unlink(eg_gw *gw, eg_record *r) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (r->qprev) r->qprev->qnext = r->qnext;
    else fg->lw_head = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev;
    else fg->lw_tail = r->qprev;
    r->qnext = r->qprev = NULL;
    fg->lane_waiting--;
}

/* Numbers a fence write about to be sent (from 1), not acknowledged yet. */
static uint64_t sent(eg_gw *gw) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg->wnext) fg->wnext = fg->wlo = 1;
    if (fg->wnext - fg->wlo == fg->capack) { /* the ring is full: double it */
        uint64_t nc = fg->capack ? fg->capack * 2 : 64;
        unsigned char *n = eg_xcalloc((size_t)nc, 1);
        for (uint64_t s = fg->wlo; s < fg->wnext; s++) n[s & (nc - 1)] = fg->acked[s & (fg->capack - 1)];
        free(fg->acked);
        fg->acked = n;
        fg->capack = nc;
    }
    uint64_t s = fg->wnext++;
    fg->acked[s & (fg->capack - 1)] = 0;
    return s;
}

/* Fence write number seq is acknowledged (or given up: refused, not owned
 * any more, the stop); 0 is no number. */
static void acked(eg_gw *gw, uint64_t seq) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!seq || seq < fg->wlo || seq >= fg->wnext) return;
    fg->acked[seq & (fg->capack - 1)] = 1;
    while (fg->wlo < fg->wnext && fg->acked[fg->wlo & (fg->capack - 1)]) fg->wlo++;
    release_deferred(gw);
    if (fg->lw_head && fg->lw_head->fence_wseq < fg->wlo) event_active(gw->fence_lane_ev, EV_TIMEOUT, 0);
}

void eg_gw_fence_finish(eg_gw *gw, eg_part *p, uint64_t seq) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || fg->wlo == fg->wnext) {
        eg_tracker_finish(&p->trk, seq);
        return;
    }
    if (fg->doff + fg->ndefer == fg->capdefer) {
        if (fg->doff > fg->capdefer / 2) { /* mostly taken from the front: move down */
            memmove(fg->defer, fg->defer + fg->doff, fg->ndefer * sizeof *fg->defer);
            fg->doff = 0;
        } else {
            fg->capdefer = fg->capdefer ? fg->capdefer * 2 : 256;
            fg->defer = eg_xrealloc(fg->defer, fg->capdefer * sizeof *fg->defer);
        }
    }
    p->refs++;
    fg->defer[fg->doff + fg->ndefer++] = (deferred){.p = p, .seq = seq, .wseq = fg->wnext - 1};
}

/* A fence write's delivery report: a failed write is written again (the
 * fence's current state) while its partition is owned here and the gateway
 * is not stopping; else the change is lost to the next owner, said. */
static void on_written(void *req, int32_t partition, int64_t offset, const char *err) {
    fence_write *w = req;
    eg_gw *gw = w->gw;
    struct eg_gw_fencing *fg = gw->fencing;
    fg->pending--;
    int again = 0;
    if (w->claim) fg->claims_pending--;
    if (w->claim && !err && partition >= 0 && partition < fg->nclaim_at && offset > fg->claim_at[partition])
        fg->claim_at[partition] = offset;
    if (err && w->claim) {
        fg->write_failures++;
        eg_log_msg(EG_ERROR, "fence_write_failed",
                   "%s: a claim: %s (a previous owner's writes still in flight are not told apart)", fg->name, err);
    } else if (err && !w->topic) { /* an operation record (send_releases): the operator asks again */
        fg->write_failures++;
        eg_log_msg(EG_ERROR, "fence_write_failed", "%s: a release record: %s (not applied: ask again)", fg->name, err);
    } else if (err) {
        fg->write_failures++;
        fpart *fp = fg->closing ? NULL : part_of(gw, w->topic, w->partition);
        eg_log_msg(EG_ERROR, "fence_write_failed", "%s: %s (%s[%d]: %s)", fg->name, err, w->topic, (int)w->partition,
                   fp ? "written again" : "not owned here any more: its next owner will not know this change");
        if (fp) persist_seq(gw, fp, w->key, w->len, w->seq); /* under its number: still awaited */
        again = fp != NULL;
    }
    if (!again) acked(gw, w->seq);
    free(w->topic);
    free(w);
}

/* Writes the state of key[0..len)'s fence in fp (or its end) to the topic,
 * as write number seq (0: the next number). */
static void persist_seq(eg_gw *gw, const fpart *fp, const void *key, size_t len, uint64_t seq) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !fg->topic) {
        if (seq) acked(gw, seq);
        return;
    }
    char rkey[EG_FENCE_REC_KEY_MAX], err[512], endv[EG_FENCE_REC_END_MAX];
    size_t rkl = eg_fence_rec_key(fp->topic, fp->partition, key, len, rkey);
    int64_t done = eg_fence_done_get(fg->done, rkey, rkl), floor = eg_fence_done_floor(fg->done, rkey, rkl);
    const eg_fence *f = eg_fences_get(&fp->t, key, len);
    size_t vlen = eg_fence_rec_end(done, floor, fp->epoch, endv);
    char *v = f ? eg_fence_rec_format(fp->topic, fp->partition, f, done, floor, fp->epoch, eg_wall_ms(), &vlen) : NULL;
    if (f && !v) {
        fg->write_failures++;
        eg_log_msg(EG_ERROR, "fence_write_failed",
                   "%s[%d]: a fence over the record bounds (key %zu bytes) is not durable", fp->topic,
                   (int)fp->partition, len);
        if (seq) acked(gw, seq);
        return;
    }
    fence_write *w = eg_xcalloc(1, sizeof *w + len);
    w->gw = gw;
    w->seq = seq ? seq : sent(gw);
    w->topic = eg_xstrdup(fp->topic);
    w->partition = fp->partition;
    w->len = len;
    memcpy(w->key, key, len);
    if (eg_audit_write_at(fg->topic, fence_partition(gw, fp->topic, fp->partition), rkey, v ? v : endv, vlen,
                          on_written, w, err, sizeof err) == 0) {
        fg->pending++;
        fg->writes++;
    } else {
        fg->write_failures++;
        eg_log_msg(EG_ERROR, "fence_write_failed", "%s", err);
        acked(gw, w->seq); /* refused at once: nothing to wait for */
        free(w->topic);
        free(w);
    }
    free(v);
}

static void persist(eg_gw *gw, const fpart *fp, const void *key, size_t len) { persist_seq(gw, fp, key, len, 0); }

/* The table of source partition topic[partition]; made when create. */
static eg_fences *table_of(eg_gw *gw, const char *topic, int32_t partition, int create) {
    if (!gw->fencing) {
        if (!create) return NULL;
        gw->fencing = eg_xcalloc(1, sizeof *gw->fencing);
    }
    for (fpart *f = gw->fencing->parts; f; f = f->next)
        if (f->partition == partition && strcmp(f->topic, topic) == 0) return &f->t;
    if (!create) return NULL;
    fpart *f = eg_xcalloc(1, sizeof *f);
    f->topic = eg_xstrdup(topic);
    f->partition = partition;
    f->epoch = claimed(gw->fencing, topic, partition); /* eg_gw_fence_rebuild claims above it */
    f->done_max = part_done_max(gw->fencing, topic, partition);
    int mk = gw->cfg->fence_max_keys;
    eg_fences_init(&f->t, mk, mk > INT32_MAX / FOLLOWERS_PER_KEY ? INT32_MAX : mk * FOLLOWERS_PER_KEY);
    f->next = gw->fencing->parts;
    gw->fencing->parts = f;
    return &f->t;
}

/* The table r's key is fenced in (its source partition's), or NULL. */
static eg_fences *table_for(eg_gw *gw, const eg_record *r, int create) {
    if (!eg_gw_fence_on(gw) || !r->msg->key) return NULL;
    return table_of(gw, r->part->origin, r->partition, create);
}

/* Writes the fence of r's key after a change. */
static void persist_r(eg_gw *gw, const eg_record *r, eg_fences *t) {
    persist(gw, (const fpart *)((const char *)t - offsetof(fpart, t)), r->msg->key, r->msg->key_len);
}

/* The source offset r was born at, for the duplicate check: a source
 * record's own; a rung record's from its errgate.id when that names r's
 * source partition (the gateway's form); -1 for a replay (never a
 * duplicate: it is asked for again) or an id of another form. */
static int64_t birth_of(eg_record *r) {
    if (r->part->rung < 0) return r->offset;
    size_t n;
    eg_record_read_headers(r); /* parsed once per record, not per ask */
    if (eg_headers_get(eg_record_headers(r), EG_H_REPLAY_FROM, &n)) return -1;
    char id[EG_ID_MAX + 1];
    eg_record_id(r, id, sizeof id);
    return id_birth(r->part->origin, r->partition, id);
}

/* r is a duplicate (EG_GW_FENCE_DUPLICATE): counted and logged. */
static void log_duplicate(eg_gw *gw, const eg_record *r, const char *id, int64_t birth, int64_t done) {
    uint64_t n = ++gw->fencing->duplicates;
    if (n > 100 && n % 1000) return; /* loud, not a flood */
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, "fence_duplicate")) return;
    eg_log_str(&l, "topic", r->topic);
    eg_log_int(&l, "partition", r->partition);
    eg_log_int(&l, "offset", r->offset);
    eg_log_str(&l, "id", id);
    eg_log_int(&l, "born", birth);
    eg_log_int(&l, "resolved_to", done);
    eg_log_int(&l, "dropped", (int64_t)n);
    eg_log_end(&l);
}

int eg_gw_fence_must_follow(eg_gw *gw, eg_record *r) {
    if (!eg_gw_fence_on(gw) || !r->msg->key || !gw->fencing) return EG_GW_FENCE_PASS;
    eg_fences *t = table_for(gw, r, 0);
    int none = !t || !t->nkeys, nodone = !gw->fencing->done || !eg_fence_done_count(gw->fencing->done);
    if (none && nodone) return EG_GW_FENCE_PASS;
    char id[EG_ID_MAX + 1];
    eg_record_id(r, id, sizeof id);
    eg_fence *f = none ? NULL : eg_fences_get(t, r->msg->key, r->msg->key_len);
    if (f && strcmp(f->head, id) == 0) return EG_GW_FENCE_PASS;
    if (f && eg_fences_queued(f, id)) return EG_GW_FENCE_FOLLOW; /* listed: never taken for a copy */
    /* only a rung copy is judged: a source record may be one that was never fenced (its key had no
     * fence when it was decided to the DLQ), whose lane write a revoke took after a later record of
     * its key had raised the mark past it (5 records lost in a chaos seed) */
    int64_t birth = nodone || r->part->rung < 0 ? -1 : birth_of(r);
    int64_t maxd = t ? ((const fpart *)((const char *)t - offsetof(fpart, t)))->done_max
                     : part_done_max(gw->fencing, r->part->origin, r->partition);
    if (birth >= 0 && birth <= maxd) { /* else no fence of the partition resolved this far: no key's mark can */
        char rkey[EG_FENCE_REC_KEY_MAX];
        size_t rkl = eg_fence_rec_key(r->part->origin, r->partition, r->msg->key, r->msg->key_len, rkey);
        if (eg_fence_done_covers(gw->fencing->done, rkey, rkl, birth)) {
            log_duplicate(gw, r, id, birth, eg_fence_done_get(gw->fencing->done, rkey, rkl));
            return EG_GW_FENCE_DUPLICATE;
        }
    }
    return f ? EG_GW_FENCE_FOLLOW : EG_GW_FENCE_PASS;
}

/* A hold the C core decided in place of d: the table is full. */
static void cap_hold(eg_gw *gw, const eg_record *r, eg_decision *d, const char *what) {
    int64_t delay = d->delay_ms > 0 ? d->delay_ms : DEFAULT_HOLD_MS;
    char klass[sizeof d->klass];
    eg_strlcpy(klass, d->klass[0] ? d->klass : "fenced", sizeof klass);
    memset(d, 0, sizeof *d);
    d->action = EG_ACT_HOLD;
    d->delay_ms = delay;
    eg_strlcpy(d->klass, klass, sizeof d->klass);
    eg_strlcpy(d->code, "fence_cap", sizeof d->code);
    eg_decision_set_reason(d, EG_RSN_FENCE_CAP);
    snprintf(d->message, sizeof d->message,
             "%s: the fence table of %s[%d] is full (source.fence_max_keys = %d); holding", what, r->part->origin,
             (int)r->partition, gw->cfg->fence_max_keys);
    gw->fencing->cap_holds++;
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "fence_cap")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_int(&l, "fence_max_keys", gw->cfg->fence_max_keys);
        eg_log_str(&l, "msg", d->message);
        eg_log_end(&l);
    }
}

void eg_gw_fence_follow(eg_gw *gw, eg_record *r, eg_fail *fl) {
    eg_fences *t = table_for(gw, r, 0);
    eg_decision *d = &fl->decision;
    memset(d, 0, sizeof *d);
    char id[EG_ID_MAX + 1];
    eg_record_id(r, id, sizeof id);
    eg_fence *f = NULL;
    if (!t || !eg_fences_must_follow(t, r->msg->key, r->msg->key_len, id, &f)) return; /* caller's contract */
    int had = f->nq;
    if (eg_fences_follow(t, f, id) != EG_FENCE_OK) {
        cap_hold(gw, r, d, "a record of a fenced key cannot be queued");
        return;
    }
    /* a dead-letter fence places its followers in the lane in queue order: one whose predecessors
     * are not all there yet (they wait on the fence's last rung) waits there too */
    const char *rung = f->rung;
    int rung_index = f->rung_index, waits = 0, changed = f->nq != had;
    if (f->action != EG_ACT_LADDER) {
        int k = eg_gw_rung_slot(gw, f->wait_rung, r->part->origin);
        /* predecessors that do not come back within three of their rung's delays and a grace since
         * the last placement are not waited for any longer: liveness over order, said
         * (fence_place_timeout) */
        int64_t wait_max = k >= 0 ? 3 * gw->rts[k].delay_ms + PLACE_GRACE_MS : 0, now = eg_wall_ms();
        int turn = eg_fences_placeable(f, id);
        if (!turn && k >= 0 && now - f->progress_ms <= wait_max) {
            waits = 1;
            gw->fencing->place_waits++;
            rung = f->wait_rung;
            rung_index = f->wait_index;
        } else {
            int before = f->nplaced, dbefore = f->ndurable;
            if (!turn) { /* no rung to wait on (a fence from an older record), or waited too long */
                while (!eg_fences_placeable(f, id) && f->nplaced < f->nq) f->nplaced++;
                /* those given up on count as durable when all before them are: not waited for again */
                if (f->ndurable == before) f->ndurable = f->nplaced;
                gw->fencing->place_timeouts++;
                eg_log_msg(EG_WARN, "fence_place_timeout",
                           "%s[%d]: %s is written to the %s before %d followers of its key that did not come back "
                           "from rung %s",
                           r->part->origin, (int)r->partition, id, eg_action_name(f->action), f->nplaced - before,
                           f->wait_rung[0] ? f->wait_rung : "-");
            }
            eg_fences_placed(f, id);
            if (f->nplaced != before) f->progress_ms = now;
            r->fence_placed = 1; /* durable at its lane write's durable outcome (eg_gw_fence_outcome) */
            changed |= f->ndurable != dbefore;
        }
    }
    if (changed) persist_r(gw, r, t);
    int k = f->action == EG_ACT_LADDER || waits ? eg_gw_rung_slot(gw, rung, r->part->origin) : -1;
    d->action = f->action == EG_ACT_LADDER || waits ? (k < 0 ? EG_ACT_DLQ : EG_ACT_LADDER) : f->action;
    eg_strlcpy(d->klass, "fenced", sizeof d->klass);
    eg_strlcpy(d->code, "fenced", sizeof d->code);
    eg_decision_set_reason(d, EG_RSN_FENCED);
    if (k >= 0) {
        eg_strlcpy(d->rung, rung, sizeof d->rung);
        d->rung_index = rung_index;
        d->delay_ms = gw->rts[k].delay_ms;
    }
    snprintf(d->message, sizeof d->message, "key fenced by %.300s (%s); follows it%s", f->head,
             f->parked ? "parked" : "released, not back yet",
             waits ? ", waiting on its rung for the followers before it to reach the DLQ" : "");
    eg_strlcpy(fl->fenced_by, f->head, sizeof fl->fenced_by);
    gw->fencing->fenced_total++;
}

/* Logs a change of key fence f's head (event, with the key's hash). */
static void log_fence(const char *event, const eg_record *r, const char *id, const eg_fence *f) {
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, event)) return;
    char kh[17];
    eg_fmt_hex64(eg_hash64(r->msg->key, r->msg->key_len), kh);
    eg_log_str(&l, "topic", r->part->origin);
    eg_log_int(&l, "partition", r->partition);
    eg_log_str(&l, "key_hash", kh);
    eg_log_str(&l, "id", id);
    if (f) {
        eg_log_str(&l, "head", f->head);
        eg_log_int(&l, "followers", f->nq);
    }
    eg_log_end(&l);
}

int eg_gw_fence_decided(eg_gw *gw, eg_record *r, eg_decision *d) {
    if (!eg_gw_fence_on(gw) || !r->msg->key || d->why == EG_RSN_FENCED) return 0;
    const void *key = r->msg->key;
    size_t len = r->msg->key_len;
    char id[EG_ID_MAX + 1];
    eg_record_id(r, id, sizeof id);
    int lane_dlq = d->action == EG_ACT_DLQ || d->action == EG_ACT_QUARANTINE;
    if (d->action == EG_ACT_LADDER || (lane_dlq && gw->cfg->fence == EG_FENCE_LADDER_DLQ)) {
        eg_fences *t = table_for(gw, r, 1);
        int isnew = !eg_fences_get(t, key, len);
        int rc = eg_fences_park(t, key, len, id, lane_dlq ? EG_FENCE_WHY_DLQ : EG_FENCE_WHY_LADDER, d->action, d->rung,
                                d->rung_index, eg_wall_ms());
        if (rc == EG_FENCE_FULL) {
            cap_hold(gw, r, d, isnew ? "a new key cannot be fenced" : "a record cannot join its key's fence");
            return 1;
        }
        if (isnew) log_fence("fenced", r, id, NULL);
        persist_r(gw, r, t);
        return 0;
    }
    if (lane_dlq || d->action == EG_ACT_IGNORE) {
        /* "ladder": a dead letter ends the fence as a success does, but only once it is durable
         * (eg_gw_fence_outcome): resolved at the decision, a lane write a revoke or a kill -9 took
         * left a fence state without it, and its next copy queued behind later records of its key
         * was dropped as resolved once they were (two records lost in a chaos seed) */
        eg_gw_fence_resolved(gw, r);
    }
    return 0;
}

void eg_gw_fence_resolved(eg_gw *gw, eg_record *r) {
    eg_fences *t = table_for(gw, r, 0);
    if (!t || !t->nkeys) return;
    char id[EG_ID_MAX + 1];
    eg_record_id(r, id, sizeof id);
    eg_fence *f = eg_fences_get(t, r->msg->key, r->msg->key_len);
    /* the head: its fence moves on at r's durable outcome (eg_gw_fence_outcome) */
    if (f && strcmp(f->head, id) == 0) r->fence_resolved = 1;
}

void eg_gw_fence_outcome(eg_gw *gw, eg_record *r) {
    if (!gw->fencing || !r->msg->key) return;
    eg_fences *t = table_for(gw, r, 0);
    if (!r->fence_resolved) { /* a placed follower: never a resolution, so no resolved offset raised */
        char id[EG_ID_MAX + 1];
        eg_record_id(r, id, sizeof id);
        eg_fence *f = t ? eg_fences_get(t, r->msg->key, r->msg->key_len) : NULL;
        if (f && eg_fences_durable(f, id)) persist_r(gw, r, t);
        return;
    }
    int resolved = 0;
    if (t && t->nkeys) {
        char id[EG_ID_MAX + 1];
        eg_record_id(r, id, sizeof id);
        if ((resolved = eg_fences_resolve(t, r->msg->key, r->msg->key_len, id)))
            log_fence("fence_resolved", r, id, eg_fences_get(t, r->msg->key, r->msg->key_len));
    }
    int64_t birth = birth_of(r);
    if (birth >= 0) {
        /* an ignore's outcome is its decision line: out before any instance may drop a copy of it */
        eg_log_flush();
        char rkey[EG_FENCE_REC_KEY_MAX];
        size_t rkl = eg_fence_rec_key(r->part->origin, r->partition, r->msg->key, r->msg->key_len, rkey);
        raise_done(gw, rkey, rkl, r->part->origin, r->partition, birth);
    }
    /* a fence still in force writes the mark with its next change; one resolved now or ended now,
     * with that change */
    if (t && (resolved || (birth >= 0 && !eg_fences_get(t, r->msg->key, r->msg->key_len)))) persist_r(gw, r, t);
}

void eg_gw_fence_revoked(eg_gw *gw, const char *topic, int32_t partition) {
    if (!gw->fencing) return;
    for (fpart **pp = &gw->fencing->parts; *pp; pp = &(*pp)->next) {
        fpart *f = *pp;
        if (f->partition != partition || strcmp(f->topic, topic) != 0) continue;
        if (f->t.nkeys)
            eg_log_msg(EG_WARN, "fences_dropped",
                       "%s[%d]: %d fenced keys (%d followers queued) handed over: the partition's next owner "
                       "rebuilds them from the fence topic",
                       topic, (int)partition, f->t.nkeys, f->t.nfollowers);
        *pp = f->next;
        eg_fences_free(&f->t);
        free(f->topic);
        free(f);
        return;
    }
}

/* Writes the claim of fp at its epoch (a fence_write without a topic,
 * counted in claims_pending until its report). */
static void send_claim(eg_gw *gw, const fpart *fp) {
    struct eg_gw_fencing *fg = gw->fencing;
    char rkey[EG_FENCE_REC_KEY_MAX], val[EG_FENCE_CLAIM_MAX], err[512];
    size_t vl = eg_fence_claim_format(fp->topic, fp->partition, fp->epoch, rkey, val);
    fence_write *w = eg_xcalloc(1, sizeof *w);
    w->gw = gw;
    w->claim = 1;
    if (eg_audit_write_at(fg->topic, fence_partition(gw, fp->topic, fp->partition), rkey, val, vl, on_written, w, err,
                          sizeof err) == 0) {
        fg->pending++;
        fg->writes++;
        fg->claims_pending++;
    } else {
        free(w);
        fg->write_failures++;
        eg_log_msg(EG_ERROR, "fence_write_failed", "a claim of %s[%d]: %s", fp->topic, (int)fp->partition, err);
    }
}

void eg_gw_fence_rebuild(eg_gw *gw) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !fg->topic) return;
    char err[512];
    int64_t t0 = eg_now_ms();
    if (eg_audit_catch_up(fg->topic, FENCE_CATCH_UP_MS, err, sizeof err) != 0)
        eg_log_msg(EG_ERROR, "fence_rebuild_incomplete",
                   "%s not read to its end: %s; fences are rebuilt from what was read", fg->name, err);
    /* each new source partition is claimed at an epoch above every claim read, and the claims are
     * acknowledged, before the topic is read to its end again and the fences rebuilt: a previous
     * owner's write that lands later lands after the claim, and every reader ignores it */
    int nfresh = 0;
    int32_t nfp = eg_audit_partitions(fg->topic);
    if (fg->nclaim_at != nfp) {
        fg->claim_at = eg_xrealloc(fg->claim_at, (size_t)(nfp > 0 ? nfp : 1) * sizeof *fg->claim_at);
        fg->nclaim_at = nfp;
    }
    for (int32_t i = 0; i < nfp; i++) fg->claim_at[i] = -1;
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (p->rung >= 0 || table_of(gw, p->topic, p->partition, 0)) continue;
        table_of(gw, p->topic, p->partition, 1);
        fpart *fp = part_of(gw, p->topic, p->partition);
        int64_t c = claimed(fg, p->topic, p->partition);
        fp->epoch = c < EG_FENCE_EPOCH_MAX ? c + 1 : c;
        fp->fresh = 1;
        send_claim(gw, fp);
        nfresh++;
    }
    if (!nfresh) return;
    int64_t until = eg_now_ms() + FENCE_CATCH_UP_MS;
    while (fg->claims_pending > 0 && eg_now_ms() < until) {
        eg_audit_poll(fg->topic);
        if (fg->claims_pending > 0) usleep(5 * 1000);
    }
    if (fg->claims_pending > 0)
        eg_log_msg(EG_ERROR, "fence_rebuild_incomplete", "%d claims of %s not acknowledged", fg->claims_pending,
                   fg->name);
    if (eg_audit_catch_up(fg->topic, FENCE_CATCH_UP_MS, err, sizeof err) != 0)
        eg_log_msg(EG_ERROR, "fence_rebuild_incomplete",
                   "%s not read to its end after the claims: %s; fences are rebuilt from what was read", fg->name, err);
    /* and at least past each claim: a previous owner's acknowledged writes are before it in its
     * partition, while the watermark a broker that has just been a stopped leader answers with can
     * be older (the chaos runner's seed 5: a rebuild read none of 36 fences and passed their
     * followers) */
    for (int32_t i = 0; i < nfp; i++) {
        int64_t left = until - eg_now_ms();
        if (fg->claim_at[i] >= 0 &&
            eg_audit_read_past(fg->topic, i, fg->claim_at[i], left > 1000 ? (int)left : 1000, err, sizeof err) != 0)
            eg_log_msg(EG_ERROR, "fence_rebuild_incomplete", "%s: %s; fences are rebuilt from what was read", fg->name,
                       err);
    }
    for (eg_part *p = gw->parts; p; p = p->next) {
        fpart *fp = p->rung < 0 ? part_of(gw, p->topic, p->partition) : NULL;
        if (!fp || !fp->fresh) continue;
        fp->fresh = 0;
        eg_fences *t = NULL;
        int n = 0, lost = 0;
        for (int i = 0; i < fg->nview; i++) {
            const eg_fence_rec *v = &fg->view[i];
            if (!v->topic[0] || v->partition != p->partition || strcmp(v->topic, p->topic) != 0) continue;
            if (!t) t = table_of(gw, p->topic, p->partition, 1);
            if (eg_fences_park(t, v->key, v->key_len, v->head, v->why, v->action, v->rung, v->rung_index,
                               v->since_ms) != EG_FENCE_OK) {
                lost++;
                continue;
            }
            eg_fence *f = eg_fences_get(t, v->key, v->key_len);
            f->parked = v->parked;
            for (int j = 0; j < v->nq; j++)
                if (eg_fences_follow(t, f, v->q[j]) != EG_FENCE_OK) lost++;
            f->nplaced = f->ndurable = v->nplaced < f->nq ? v->nplaced : f->nq;
            f->progress_ms = eg_wall_ms(); /* its followers on the rung come back within the bound from now */
            if (v->wait_rung[0]) {
                eg_strlcpy(f->wait_rung, v->wait_rung, sizeof f->wait_rung);
                f->wait_index = v->wait_index;
            }
            n++;
            /* changed last by an operation record: the owner writes the whole state again, so that
             * compaction cannot leave the operation alone under the key */
            if (v->op_last) persist(gw, (const fpart *)((const char *)t - offsetof(fpart, t)), v->key, v->key_len);
        }
        if (n || lost) {
            fg->rebuilt += (uint64_t)n;
            eg_log_msg(lost ? EG_ERROR : EG_INFO, lost ? "fence_rebuild_cap" : "fences_rebuilt",
                       "%s[%d]: %d fences rebuilt from %s in %lld ms%s", p->topic, (int)p->partition, n, fg->name,
                       (long long)(eg_now_ms() - t0), lost ? " (some past the caps were not)" : "");
        }
    }
}

void eg_gw_fence_flush(eg_gw *gw, const char *when, int read_first) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !fg->topic) return;
    char err[512];
    if (read_first && eg_audit_catch_up(fg->topic, FENCE_READ_MS, err, sizeof err) != 0)
        eg_log_msg(EG_WARN, "fence_flush_incomplete", "%s not read to its end at %s: %s", fg->name, when, err);
    if (fg->pending <= 0) return;
    int64_t until = eg_now_ms() + FENCE_FLUSH_MS;
    while (fg->pending > 0 && eg_now_ms() < until) {
        eg_audit_poll(fg->topic);
        if (fg->pending > 0) usleep(10 * 1000);
    }
    if (fg->pending > 0)
        eg_log_msg(EG_WARN, "fence_flush_incomplete", "%d fence writes not acknowledged at %s", fg->pending, when);
}

void eg_gw_fence_free(eg_gw *gw) {
    if (!gw->fencing) return;
    if (gw->fencing->topic) {
        eg_gw_fence_flush(gw, "the stop", 0);
        gw->fencing->closing = 1; /* the reports eg_audit_free serves write nothing more */
        eg_audit_free(gw->fencing->topic);
    }
    struct eg_gw_fencing *fg = gw->fencing;
    for (size_t i = 0; i < fg->ndefer; i++) eg_gw_part_unref(fg->defer[fg->doff + i].p); /* not finished */
    free(fg->defer);
    free(fg->acked);
    free(fg->claim_at);
    eg_fence_done_free(fg->done);
    for (int i = 0; i < gw->fencing->nview; i++) eg_fence_rec_clear(&gw->fencing->view[i]);
    free(gw->fencing->view);
    eg_strmap_free(&gw->fencing->view_at);
    eg_strmap_free(&gw->fencing->claims);
    eg_strmap_free(&gw->fencing->done_max);
    fpart *f = gw->fencing->parts;
    while (f) {
        fpart *n = f->next;
        eg_fences_free(&f->t);
        free(f->topic);
        free(f);
        f = n;
    }
    free(gw->fencing);
    gw->fencing = NULL;
}

void eg_gw_fence_metrics(eg_gw *gw, struct evbuffer *out) {
    if (!eg_gw_fence_on(gw)) return;
    static const char *const pl[] = {"topic", "partition"};
    eg_metric_header(out, "errgate_fenced_keys", "Keys fenced behind a parked record, by source partition.", "gauge");
    for (fpart *f = gw->fencing ? gw->fencing->parts : NULL; f; f = f->next) {
        char pn[16];
        snprintf(pn, sizeof pn, "%d", (int)f->partition);
        const char *pv[2] = {f->topic, pn};
        eg_metric_sample(out, "errgate_fenced_keys", 2, pl, pv, f->t.nkeys);
    }
    eg_metric_header(out, "errgate_fence_followers", "Records queued behind fenced keys, by source partition.",
                     "gauge");
    for (fpart *f = gw->fencing ? gw->fencing->parts : NULL; f; f = f->next) {
        char pn[16];
        snprintf(pn, sizeof pn, "%d", (int)f->partition);
        const char *pv[2] = {f->topic, pn};
        eg_metric_sample(out, "errgate_fence_followers", 2, pl, pv, f->t.nfollowers);
    }
    uint64_t ft = gw->fencing ? gw->fencing->fenced_total : 0, ch = gw->fencing ? gw->fencing->cap_holds : 0,
             rl = gw->fencing ? gw->fencing->released : 0;
    eg_metric_header(out, "errgate_records_fenced_total",
                     "Records that followed a parked record of their key (errgate.fenced-by).", "counter");
    eg_metric_sample(out, "errgate_records_fenced_total", 0, NULL, NULL, (double)ft);
    eg_metric_header(out, "errgate_fence_cap_holds_total",
                     "Decisions held because a partition's fence table was full (fence_cap).", "counter");
    eg_metric_sample(out, "errgate_fence_cap_holds_total", 0, NULL, NULL, (double)ch);
    eg_metric_header(out, "errgate_fence_releases_total",
                     "Fences lifted by an operator (POST /fences/release, here or through another instance).",
                     "counter");
    eg_metric_sample(out, "errgate_fence_releases_total", 0, NULL, NULL, (double)rl);
    eg_metric_header(out, "errgate_fence_place_waits_total",
                     "Followers of a dead-lettered head sent back to wait on a rung for the followers before them "
                     "to reach the DLQ (source.fence = \"ladder+dlq\").",
                     "counter");
    eg_metric_sample(out, "errgate_fence_place_waits_total", 0, NULL, NULL,
                     gw->fencing ? (double)gw->fencing->place_waits : 0);
    eg_metric_header(out, "errgate_fence_place_timeouts_total",
                     "Followers written to the DLQ ahead of followers before them that did not come back within "
                     "the place bound (fence_place_timeout).",
                     "counter");
    eg_metric_sample(out, "errgate_fence_place_timeouts_total", 0, NULL, NULL,
                     gw->fencing ? (double)gw->fencing->place_timeouts : 0);
    eg_metric_header(out, "errgate_fence_lane_waiting",
                     "Lane writes of keyed records waiting for the fence writes sent before them.", "gauge");
    eg_metric_sample(out, "errgate_fence_lane_waiting", 0, NULL, NULL, gw->fencing ? gw->fencing->lane_waiting : 0);
    eg_metric_header(out, "errgate_fence_lane_waits_total",
                     "Lane writes of keyed records that waited for the fence writes sent before them.", "counter");
    eg_metric_sample(out, "errgate_fence_lane_waits_total", 0, NULL, NULL,
                     gw->fencing ? (double)gw->fencing->lane_waits : 0);
    eg_metric_header(out, "errgate_fence_split_partitions",
                     "Rung partitions assigned here without their source partition: paused (fence_split).", "gauge");
    eg_metric_sample(out, "errgate_fence_split_partitions", 0, NULL, NULL, gw->split_parts);
    const struct eg_gw_fencing *fg = gw->fencing;
    static const char *const ol[] = {"op"};
    eg_metric_header(out, "errgate_fence_ops_applied_total",
                     "Release and resolve records (another instance's POST /fences/release, dlq resolve) applied to "
                     "a fence held here.",
                     "counter");
    for (int i = EG_FENCE_OP_RELEASE; i <= EG_FENCE_OP_RESOLVE; i++) {
        const char *ov[1] = {i == EG_FENCE_OP_RELEASE ? "release" : "resolve"};
        eg_metric_sample(out, "errgate_fence_ops_applied_total", 1, ol, ov, fg ? (double)fg->ops_applied[i] : 0);
    }
    eg_metric_header(out, "errgate_fence_releases_sent_total",
                     "Release records written for fences another instance holds (POST /fences/release).", "counter");
    eg_metric_sample(out, "errgate_fence_releases_sent_total", 0, NULL, NULL, fg ? (double)fg->ops_sent : 0);
    eg_metric_header(out, "errgate_fence_duplicates_dropped_total",
                     "Rung copies of records whose key's fence had resolved them already (written again, or taken "
                     "again after a rebalance), dropped instead of reaching the target again.",
                     "counter");
    eg_metric_sample(out, "errgate_fence_duplicates_dropped_total", 0, NULL, NULL, fg ? (double)fg->duplicates : 0);
    eg_metric_header(out, "errgate_fence_finishes_waiting",
                     "Records with an outcome whose offsets wait for fence writes to be acknowledged before they "
                     "are committed.",
                     "gauge");
    eg_metric_sample(out, "errgate_fence_finishes_waiting", 0, NULL, NULL, fg ? (double)fg->ndefer : 0);
    eg_metric_header(out, "errgate_fence_records_stale_total",
                     "Fence states written by a previous owner of a source partition and read after its next "
                     "owner's claim, ignored.",
                     "counter");
    eg_metric_sample(out, "errgate_fence_records_stale_total", 0, NULL, NULL, fg ? (double)fg->stale : 0);
    eg_metric_header(out, "errgate_fence_writes_total", "Fence changes written to the fence topic.", "counter");
    eg_metric_sample(out, "errgate_fence_writes_total", 0, NULL, NULL, fg ? (double)fg->writes : 0);
    eg_metric_header(out, "errgate_fence_write_failures_total",
                     "Fence changes the fence topic did not take (not durable).", "counter");
    eg_metric_sample(out, "errgate_fence_write_failures_total", 0, NULL, NULL, fg ? (double)fg->write_failures : 0);
    eg_metric_header(out, "errgate_fences_rebuilt_total", "Fences rebuilt from the fence topic at an assignment.",
                     "counter");
    eg_metric_sample(out, "errgate_fences_rebuilt_total", 0, NULL, NULL, fg ? (double)fg->rebuilt : 0);
    static const char *const rl1[] = {"reason"};
    eg_metric_header(out, "errgate_fence_records_refused_total",
                     "Records of the fence topic refused and never applied, by reason.", "counter");
    for (int i = 0; i < NREFUSALS; i++) {
        const char *rv[1] = {refusal_names[i]};
        eg_metric_sample(out, "errgate_fence_records_refused_total", 1, rl1, rv, fg ? (double)fg->refused[i] : 0);
    }
}

/* Appends fence f of partition fp as a JSON object. */
static void fence_json(struct evbuffer *out, const fpart *fp, const eg_fence *f, int64_t now) {
    char kh[17];
    eg_fmt_hex64(f->hash, kh);
    evbuffer_add_printf(out, "{\"topic\":");
    eg_json_str(out, fp->topic);
    evbuffer_add_printf(out, ",\"partition\":%d,\"key\":", (int)fp->partition);
    eg_json_strn(out, (const char *)f->key, f->key_len < LIST_KEY_MAX ? f->key_len : LIST_KEY_MAX);
    evbuffer_add_printf(out, ",\"key_bytes\":%zu,\"key_hash\":\"%s\",\"head\":", f->key_len, kh);
    eg_json_str(out, f->head);
    evbuffer_add_printf(out, ",\"parked\":%s,\"why\":\"%s\",\"lane\":\"%s\",\"rung\":", f->parked ? "true" : "false",
                        f->why == EG_FENCE_WHY_DLQ ? "dlq" : "ladder", eg_action_name(f->action));
    eg_json_str(out, f->rung);
    evbuffer_add_printf(out, ",\"age_ms\":%lld,\"followers\":%d,\"queue\":[", (long long)(now - f->since_ms), f->nq);
    for (int i = 0; i < f->nq && i < LIST_FOLLOWERS_MAX; i++) {
        if (i) evbuffer_add(out, ",", 1);
        eg_json_str(out, f->q[f->qoff + i]);
    }
    evbuffer_add(out, "]}", 2);
}

/* The operator's release of key[0..len) for the fences this instance does
 * not hold: for each fence of the key in the view whose partition has no
 * table here, a release record (fence_op.h, by `by`) is written under its
 * record key, which its owner applies when it reads it (and every later
 * owner finds the fence ended). *sent: records queued, *failed: not. */
static void send_releases(eg_gw *gw, const void *key, size_t len, const char *by, int *sent, int *failed) {
    struct eg_gw_fencing *fg = gw->fencing;
    if (!fg || !fg->topic) return;
    for (int i = 0; i < fg->nview; i++) {
        const eg_fence_rec *v = &fg->view[i];
        if (!v->topic[0] || v->key_len != len || (len && memcmp(v->key, key, len) != 0)) continue;
        if (table_of(gw, v->topic, v->partition, 0)) continue; /* held here: released above */
        char rkey[EG_FENCE_KEY_MAX], val[EG_FENCE_OP_VALUE_MAX], err[512];
        eg_fence_key(v->topic, v->partition, key, len, rkey);
        size_t vlen = eg_fence_op_format(EG_FENCE_OP_RELEASE, v->head, by[0] ? by : "unknown", eg_wall_ms(), val);
        fence_write *w = eg_xcalloc(1, sizeof *w); /* no topic: an operation record, never written again */
        w->gw = gw;
        if (vlen && eg_audit_write_at(fg->topic, fence_partition(gw, v->topic, v->partition), rkey, val, vlen,
                                      on_written, w, err, sizeof err) == 0) {
            fg->pending++;
            fg->writes++;
            fg->ops_sent++;
            (*sent)++;
        } else {
            free(w);
            fg->write_failures++;
            (*failed)++;
            eg_log_msg(EG_ERROR, "fence_write_failed", "a release of %s[%d]'s fence: %s", v->topic, (int)v->partition,
                       vlen ? err : "its head is not a legal id");
        }
    }
}

int eg_gw_fence_request(eg_gw *gw, int method, const char *path, const char *body, size_t len, struct evbuffer *out) {
    int release = strcmp(path, "/fences/release") == 0;
    if (!release && method != EG_ADMIN_GET && method != EG_ADMIN_HEAD) {
        evbuffer_add_printf(out, "{\"error\":\"use GET\"}");
        return 405;
    }
    if (release && method != EG_ADMIN_POST) {
        evbuffer_add_printf(out, "{\"error\":\"use POST\"}");
        return 405;
    }
    if (!eg_gw_fence_on(gw)) {
        evbuffer_add_printf(out, "{\"error\":\"fencing is off (source.fence, with ordering = \\\"key\\\")\"}");
        return 404;
    }
    if (!release) {
        static const char *const modes[] = {"off", "ladder", "ladder+dlq"};
        int64_t now = eg_wall_ms();
        evbuffer_add_printf(out, "{\"mode\":\"%s\",\"max_keys\":%d,\"fences\":[", modes[gw->cfg->fence],
                            gw->cfg->fence_max_keys);
        int n = 0;
        for (fpart *fp = gw->fencing ? gw->fencing->parts : NULL; fp; fp = fp->next) {
            size_t cur = 0;
            for (eg_fence *f; (f = eg_fences_next(&fp->t, &cur));) {
                if (n++) evbuffer_add(out, ",", 1);
                fence_json(out, fp, f, now);
            }
        }
        evbuffer_add(out, "]}", 2);
        return 200;
    }
    char key[1024], by[128] = "";
    if (eg_override_form_field(body, len, "key", key, sizeof key) != 0) {
        evbuffer_add_printf(out, "{\"error\":\"a form body with key=KEY (at most %d bytes) is needed\"}",
                            (int)sizeof key - 1);
        return 400;
    }
    eg_override_form_field(body, len, "by", by, sizeof by);
    int n = 0;
    for (fpart *fp = gw->fencing ? gw->fencing->parts : NULL; fp; fp = fp->next) {
        const eg_fence *f = eg_fences_get(&fp->t, key, strlen(key));
        if (f) release_floor(gw, fp->topic, fp->partition, key, strlen(key), f->head, f->q + f->qoff, f->nq);
        if (eg_fences_release(&fp->t, key, strlen(key))) {
            n++;
            persist(gw, fp, key, strlen(key));
        }
    }
    if (gw->fencing) gw->fencing->released += (uint64_t)n;
    int sent = 0, failed = 0;
    send_releases(gw, key, strlen(key), by, &sent, &failed);
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "fence_release")) {
        char kh[17];
        eg_fmt_hex64(eg_hash64(key, strlen(key)), kh);
        eg_log_str(&l, "key_hash", kh);
        eg_log_str(&l, "by", by[0] ? by : "unknown");
        eg_log_int(&l, "released", n);
        eg_log_int(&l, "sent", sent);
        eg_log_end(&l);
    }
    if (failed && !n && !sent) {
        evbuffer_add_printf(out, "{\"error\":\"the release could not be written to the fence topic\"}");
        return 503;
    }
    evbuffer_add_printf(out, "{\"released\":%d,\"sent\":%d}", n, sent);
    return n || sent ? 200 : 404;
}
