/* audit.h — the audit topic (admin.audit_topic, default errgate.audit):
 * every operator change is a record there, and every gateway instance
 * reads the whole topic, so a change made through one instance applies to
 * the whole group and survives restarts.
 *
 * The topic is compacted (created with cleanup.policy=compact when missing
 * and the cluster serves Admin requests; librdkafka's mock cluster does
 * not, and auto-creates it uncompacted). Records are keyed by what they
 * change (for an override "GROUP/NAME"), so compaction keeps the last state
 * of each; the value is the owner's (override.h's audit record).
 *
 * This file is only the Kafka side: a producer whose writes are durable
 * when their delivery report says so (idempotent, acks=all), and a
 * consumer of its own, outside any group (it assigns every partition from
 * the beginning and never commits), read to its end before the gateway
 * starts and then followed on the loop. Loop thread only. */
#ifndef EG_AUDIT_H
#define EG_AUDIT_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct eg_audit eg_audit;

/* One record read: key and value bytes (either may be NULL), where it is,
 * live = 0 while the topic is re-read at start, 1 after; reread = 1 for a
 * record at an offset already read (the position was reset below it: the
 * state it holds is most likely in force already; live is 0); keyed = 1 when
 * the deployment has a control key, and then refusal is NULL for a record
 * whose signature is good and new, else why it must not be applied
 * ("unsigned", "malformed", "bad_signature", "replayed"). Without a key,
 * refusal is always NULL. Valid during the call only. */
typedef struct eg_audit_rec {
    const char *key, *val;
    size_t klen, vlen;
    int32_t partition;
    int64_t offset;
    int live, reread, keyed;
    const char *refusal;
} eg_audit_rec;
typedef void (*eg_audit_apply)(void *arg, const eg_audit_rec *r);
#define EG_AUDIT_SEEN 4096 /* signatures remembered, to refuse a record produced again */
/* A write's outcome: err NULL when the broker acknowledged it at
 * partition/offset, else why it failed. */
typedef void (*eg_audit_written)(void *req, int32_t partition, int64_t offset, const char *err);

/* Opens the audit topic of cfg (admin.audit_topic): creates it compacted
 * when missing (a note is logged when it cannot), reads every partition
 * from the beginning to the end it had when asked, calling apply(live 0)
 * for each record, within EG_AUDIT_START_MS; then follows it on base
 * (apply with live 1). Returns NULL with err when the topic cannot be read
 * to its end in time: the gateway must not start without the overrides in
 * force. */
eg_audit *eg_audit_open(const eg_config *cfg, struct event_base *base, eg_audit_apply apply, void *arg, char *err,
                        size_t errlen);
/* Long enough for leader elections of a cluster losing two brokers in a row
 * (at 30 s, a gateway started during a broker's restart and another's
 * SIGSTOP gave up: the chaos runner's fence seed 2). */
#define EG_AUDIT_START_MS 60000
/* The same for another compacted control topic of the gateway (the fence
 * topic GROUP.fences): topic is its name, kind the signatures' kind
 * (ctlsign.h: "audit", "fence"). */
eg_audit *eg_audit_open_topic(const eg_config *cfg, const char *topic, const char *kind, struct event_base *base,
                              eg_audit_apply apply, void *arg, char *err, size_t errlen);
/* Reads every partition up to the high watermark it has now, applying
 * each record (live), blocking up to timeout_ms: so that what was written
 * before the call is known when it returns. Returns 0 or -1 with err. */
int eg_audit_catch_up(eg_audit *a, int timeout_ms, char *err, size_t errlen);
/* Reads partition `partition` until the record at `offset` (one this
 * process wrote and had acknowledged) has been read and applied, blocking
 * up to timeout_ms: a lower bound on the partition's end that a stale
 * leader's watermark cannot lower. Returns 0 or -1 with err. */
int eg_audit_read_past(eg_audit *a, int32_t partition, int64_t offset, int timeout_ms, char *err, size_t errlen);
#define EG_AUDIT_WRITE_TIMEOUT_MS 5000 /* a write not acknowledged by then fails */

/* Writes key/value (copied) to the topic, signed (header errgate.sig) when
 * the deployment has a control key; done(req, ...) runs once, on the
 * loop, with the delivery report (or at eg_audit_free, with an error).
 * Returns 0, or -1 with err when it cannot even be queued (done not
 * called). */
int eg_audit_write(eg_audit *a, const char *key, const void *val, size_t vlen, eg_audit_written done, void *req,
                   char *err, size_t errlen);
/* The same to partition `partition` of the topic (0 .. eg_audit_partitions
 * - 1) instead of the one the key hashes to. */
int eg_audit_write_at(eg_audit *a, int32_t partition, const char *key, const void *val, size_t vlen,
                      eg_audit_written done, void *req, char *err, size_t errlen);
/* The topic's partition count (as read at the open). */
int32_t eg_audit_partitions(const eg_audit *a);
/* Records read again after an out-of-range reset, since the start. */
uint64_t eg_audit_reread(const eg_audit *a);
/* 1 when the record at partition/offset has been read and applied here. */
int eg_audit_applied(const eg_audit *a, int32_t partition, int64_t offset);
/* Serves what the consumer and the producer have (also done on their
 * queues' wake-ups; call it from a tick as a safety net). */
void eg_audit_poll(eg_audit *a);
/* Fails the writes not acknowledged yet (done with an error), closes both
 * clients and frees a (NULL is fine). */
void eg_audit_free(eg_audit *a);

#endif
