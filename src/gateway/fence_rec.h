/* fence_rec.h — the records of the fence topic GROUP.fences: one per fenced
 * key of a source partition, the fence's whole state, so that the
 * partition's next owner rebuilds its fences from the compacted topic.
 *
 * Record key: "TOPIC/PARTITION/" + the SHA-256 of the Kafka key in hex (so
 * compaction keeps one record per fence and a fence that ends is a
 * tombstone under the same key). Value: text lines, each ending in "\n":
 *   errgate-fence 1
 *   TOPIC                       the source topic (a legal topic name)
 *   PARTITION                   decimal, 0 .. 2^31-1
 *   KEYHEX                      the key's bytes in lowercase hex (0 .. 64 KiB of key)
 *   HEAD                        the head record's errgate.id
 *   PARKED WHY ACTION RUNG INDEX SINCE AT
 *                               0|1, ladder|dlq, ladder|dlq|quarantine, the
 *                               rung's name or "-", 0 .. 1000, wall ms, wall ms
 *   N                           followers, 0 .. EG_FENCE_REC_MAX_FOLLOWERS
 *   ID                          N lines, errgate.ids, none twice nor the head
 *   done OFFSET                 optional: the highest source offset of the
 *                               key's records resolved so far (fence_done.h)
 *   released OFFSET             optional: the key's release floor (fence_done.h)
 *   epoch N                     optional: the writer's ownership epoch of the
 *                               source partition (below), 1 .. EG_FENCE_EPOCH_MAX
 *   placed N RUNG INDEX         optional (a state only): the first N followers
 *                               are durably in the fence's lane (fence.h's
 *                               ndurable), the others wait
 *                               on rung RUNG ("-": none) number INDEX (fence.h)
 * A fence that ends is the value EG_FENCE_REC_END, optionally followed by
 * the lines "done OFFSET", "released OFFSET" and "epoch N" (a record, not a
 * tombstone: a tombstone carries no signature, so with a control key it is
 * not believed). Records without them (written before they existed) read
 * done -1, released -1 and epoch 0.
 *
 * Claims: a gateway that is assigned a source partition writes, before it
 * rebuilds the partition's fences, a claim under the record key
 * "TOPIC/PARTITION/claim" with the value "errgate-fence-claim 1\nN\n": its
 * epoch N, one more than any it has read for the partition, which its own
 * records then carry. All records about a source partition go to one
 * partition of the topic (fence_op.h), so a reader sees a previous owner's
 * write that lands after the claim (it was in flight while that owner was
 * cut off: a broker stopped, a revoke that did not wait long enough) after
 * the claim, with a lower epoch, and ignores it.
 * Anyone who can produce to the topic can write one: the parser takes
 * nothing it does not check (sizes, grammar, the record key matching the
 * value), and the caller verifies the signature when the deployment has a
 * control key (audit.h). The topic also holds operation records (release,
 * resolve: fence_op.h) under the same record keys; this parser refuses
 * them (the caller tells them apart with eg_fence_op_is). */
#ifndef EG_FENCE_REC_H
#define EG_FENCE_REC_H

#include <stddef.h>
#include <stdint.h>

#include "fence.h"
#include "fence_op.h"

#define EG_FENCE_REC_MAX_FOLLOWERS EG_FENCE_MAX_QUEUE /* queued ids per key */
#define EG_FENCE_REC_END "errgate-fence-end 1\n"
#define EG_FENCE_REC_MAX_KEY 65536     /* key bytes a durable fence holds */
#define EG_FENCE_REC_MAX_VALUE 1000000 /* value bytes */
#define EG_FENCE_REC_KEY_MAX EG_FENCE_KEY_MAX
#define EG_FENCE_EPOCH_MAX 9007199254740992LL /* 2^53: a forged claim cannot overflow the next one */
#define EG_FENCE_CLAIM_MAX 48                 /* a claim's value bytes */

/* One fence as read from the topic. Owns key and q. */
typedef struct eg_fence_rec {
    char topic[EG_TOPIC_NAME_MAX + 1];
    int32_t partition;
    unsigned char *key;
    size_t key_len;
    char head[EG_ID_MAX + 1];
    int parked;
    eg_fence_why why;
    eg_action action;
    char rung[40];
    int rung_index;
    int64_t since_ms, at_ms;
    char **q;
    int nq;
    int64_t done;     /* the done line's offset, -1 without one */
    int64_t released; /* the released line's offset, -1 without one */
    int64_t epoch;    /* the epoch line's, 0 without one */
    int nplaced;      /* the placed line's (0 without one) */
    char wait_rung[40];
    int wait_index;
    int op_last; /* the reader's: an operation record (fence_op.h) changed it last, not its owner */
} eg_fence_rec;

/* The record key of the fence of key[0..len) of topic[partition] into out
 * (EG_FENCE_REC_KEY_MAX bytes, NUL-terminated). Returns its length. */
size_t eg_fence_rec_key(const char *topic, int32_t partition, const void *key, size_t len, char *out);

/* The value of fence f of topic[partition] at wall time at_ms, with the
 * done line when done >= 0, the released line when released >= 0 and the
 * epoch line when epoch > 0: a malloc'd
 * buffer (*vlen bytes, not NUL-terminated), or NULL when it would exceed
 * EG_FENCE_REC_MAX_VALUE or the key EG_FENCE_REC_MAX_KEY (not durable). */
char *eg_fence_rec_format(const char *topic, int32_t partition, const eg_fence *f, int64_t done, int64_t released,
                          int64_t epoch, int64_t at_ms, size_t *vlen);

/* The value of a fence's end into out (EG_FENCE_REC_END_MAX bytes), with the
 * same optional lines. Returns its length. */
#define EG_FENCE_REC_END_MAX 128
size_t eg_fence_rec_end(int64_t done, int64_t released, int64_t epoch, char *out);

/* A claim of topic[partition] at epoch (1 .. EG_FENCE_EPOCH_MAX): its record
 * key into rkey (EG_FENCE_REC_KEY_MAX bytes) and its value into val
 * (EG_FENCE_CLAIM_MAX bytes). Returns the value's length. */
size_t eg_fence_claim_format(const char *topic, int32_t partition, int64_t epoch, char *rkey, char *val);

/* When rkey[0..rklen) is a claim's record key: parses the claim (topic
 * into topic, EG_TOPIC_NAME_MAX + 1 bytes, *partition, *epoch) and returns 1,
 * or -1 with why when it or its value is malformed. Returns 0 for any
 * other record key. */
int eg_fence_claim_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, char *topic, int32_t *partition,
                         int64_t *epoch, const char **why);

/* Parses a record of the topic: rkey[0..rklen) and val[0..vlen) (val NULL: a
 * tombstone). Returns 1 for a fence (*out filled; eg_fence_rec_clear it),
 * 0 for an end or a tombstone (out->topic and out->partition from the record key,
 * out->done and out->released from an end's lines, else -1; nothing to free), or -1 with why (a short reason, no input bytes) for
 * anything malformed, oversized or inconsistent. */
int eg_fence_rec_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, eg_fence_rec *out,
                       const char **why);

/* Frees what a parse filled (fine on a zeroed or cleared rec). */
void eg_fence_rec_clear(eg_fence_rec *r);

#endif
