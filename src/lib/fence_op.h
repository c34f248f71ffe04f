/* fence_op.h — the fence topic's record keys and its operation records,
 * shared by the gateway (which holds the fences: gateway/fence_rec.h has
 * the state records) and the operator commands (which ask for a change).
 *
 * Record key of a fence: "TOPIC/PARTITION/" + the SHA-256 of the Kafka key
 * in lowercase hex: one per fenced key of a source partition, so that
 * compaction keeps the last record of each.
 *
 * Every record about the fences of one source partition (its states, its
 * owners' claims, operations on it) goes to one partition of the fence
 * topic, eg_fence_partition, so that a reader sees them in the order they
 * were written: a previous owner's write that lands after the next owner's
 * claim is known for what it is (gateway/fence_rec.h).
 *
 * An operation record asks the partition's owner to change a fence it
 * holds; it is written under the fence's record key (so it is ordered with
 * the fence's states, in one partition of the topic) by an instance that
 * does not own the partition (POST /fences/release) or by `errgate dlq
 * resolve`. Value: text lines, each ending in "\n":
 *   errgate-fence-op 1
 *   OP        release (lift the key's fence, its queue with it) or resolve
 *             (the record ID is resolved: a dead-lettered head lets its first
 *             follower go next; a dead-lettered follower leaves the queue)
 *   ID        an errgate.id (release: the head the asker saw)
 *   BY        who asked: 1 to EG_FENCE_OP_BY_MAX printable ASCII bytes
 *   AT        wall ms it was asked, decimal
 * Anyone who can produce to the topic can write one: the parser takes
 * nothing it does not check; the caller checks the signature when the
 * deployment has a control key (audit.h's reader). */
#ifndef EG_FENCE_OP_H
#define EG_FENCE_OP_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "record.h"

#define EG_FENCE_KEY_MAX (EG_TOPIC_NAME_MAX + 1 + 10 + 1 + 64 + 1)
#define EG_FENCE_OP_MAGIC "errgate-fence-op 1\n"
#define EG_FENCE_OP_BY_MAX 100
#define EG_FENCE_OP_VALUE_MAX (sizeof EG_FENCE_OP_MAGIC + 8 + EG_ID_MAX + EG_FENCE_OP_BY_MAX + 24)

typedef enum { EG_FENCE_OP_RELEASE = 1, EG_FENCE_OP_RESOLVE = 2 } eg_fence_opkind;

/* One operation as read from the topic. */
typedef struct eg_fence_op {
    char topic[EG_TOPIC_NAME_MAX + 1]; /* from the record key */
    int32_t partition;
    eg_fence_opkind op;
    char id[EG_ID_MAX + 1];
    char by[EG_FENCE_OP_BY_MAX + 1];
    int64_t at_ms;
} eg_fence_op;

/* The record key of the fence of key[0..len) of topic[partition] into out
 * (EG_FENCE_KEY_MAX bytes, NUL-terminated). Returns its length. */
size_t eg_fence_key(const char *topic, int32_t partition, const void *key, size_t len, char *out);

/* Parses a record key "TOPIC/PARTITION/HEX64": the topic into topic
 * (EG_TOPIC_NAME_MAX + 1 bytes) and *partition. Returns 0 or -1. */
int eg_fence_key_parse(const char *k, size_t n, char *topic, int32_t *partition);

/* The fence topic of a gateway whose control records are scoped `scope`
 * (eg_config.scope: the group, or GROUP.NAME for a source of several):
 * "SCOPE.fences" into out (EG_TOPIC_NAME_MAX + 1 bytes). Returns 0, or -1
 * when the name would be longer than Kafka allows. The one place the name
 * is made (the gateway, `dlq resolve`). */
int eg_fence_topic(const char *scope, char *out);

/* The partition of the fence topic (of nparts >= 1) that the records about
 * the fences of source partition topic[partition] go to. */
int32_t eg_fence_partition(const char *topic, int32_t partition, int32_t nparts);

/* 1 when val[0..vlen) starts like an operation record (its magic line). */
int eg_fence_op_is(const void *val, size_t vlen);

/* The value of operation op on record id, asked by `by` (cut to its first
 * EG_FENCE_OP_BY_MAX bytes, bytes outside printable ASCII replaced by '?',
 * "unknown" when empty) at at_ms, into out (EG_FENCE_OP_VALUE_MAX bytes).
 * Returns its length, or 0 when id is not a legal errgate.id. */
size_t eg_fence_op_format(eg_fence_opkind op, const char *id, const char *by, int64_t at_ms, char *out);

/* Parses an operation record: rkey[0..rklen), val[0..vlen). Returns 0 with
 * *out filled, or -1 with why ("bad_record_key", "malformed") for anything
 * else. */
int eg_fence_op_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, eg_fence_op *out, const char **why);

#endif
