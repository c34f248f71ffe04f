/* lanes.h — durable writes of failed records to lane topics (DLQ, quarantine,
 * retry rungs).
 *
 * One idempotent producer (acks=all) for every lane. A write is durable only
 * when its delivery report says so: the outcome of each write reaches the
 * gateway through the done callback, from the event loop (the producer's
 * queue is wired into libevent with rd_kafka_queue_io_event_enable). A lane
 * record keeps the source key and value bytes unchanged, goes to the source's
 * partition number when the lane has that many partitions (otherwise to
 * partition % count), and carries the source headers plus DESIGN §4's
 * (error.* replaced, original.* written once, errgate.history appended; a
 * rung write also increments retry.count). The record is borrowed from the
 * gateway until its done callback. */
#ifndef EG_LANES_H
#define EG_LANES_H

#include <event2/event.h>
#include <librdkafka/rdkafka.h>

#include "config.h"
#include "ctlsign.h"
#include "ktxn.h"
#include "record.h"

typedef struct eg_lanes eg_lanes;

/* OUT: a republished replay (inbox mode), to the topic the decision names.
 * STATE: an ignore in inbox mode, recorded as accepted-loss in the inbox's
 * lifecycle topic `<inbox>.state` (dlq.h), keyed by the item's id. */
typedef enum { EG_LANE_DLQ = 0, EG_LANE_QUARANTINE, EG_LANE_RETRY, EG_LANE_OUT, EG_LANE_STATE, EG_LANE__N } eg_lane;

/* The lane a decision writes to: dlq, quarantine or (ladder) a retry rung,
 * STATE for an ignore (written only in inbox mode: eg_lanes_writes); -1 for
 * actions that write nothing. */
int eg_lane_of(eg_action a);
/* 1 when the gateway carries out decision action a with a lane write:
 * every action eg_lane_of maps, but an ignore only in inbox mode. */
int eg_lanes_writes(const eg_lanes *l, eg_action a);
/* "dlq", "quarantine", "retry", "replay" or "state". */
const char *eg_lane_name(eg_lane lane);

typedef void (*eg_lane_done_fn)(eg_record *rec, rd_kafka_resp_err_t err, void *arg);
/* The producer hit a fatal error (rd_kafka_fatal_error) that is not
 * answered by replacing it (transactional mode, or more than
 * EG_PRODUCER_REPLACE_MAX replacements in EG_PRODUCER_REPLACE_WINDOW_MS (kconf.h), or no
 * producer could be created): nothing more will be written; reason names
 * the underlying error. A replaced producer's unconfirmed writes come back
 * through done with an error (purged), to be written again. */
typedef void (*eg_lane_fatal_fn)(const char *reason, void *arg);

/* Creates the producer. done and fatal (both given arg) are called on the
 * loop thread. Returns NULL with a message in err on bad config. */
eg_lanes *eg_lanes_new(const eg_config *cfg, struct event_base *base, eg_lane_done_fn done, eg_lane_fatal_fn fatal,
                       void *arg, char *err, size_t errlen);

/* Queues the write of rec (which has failed: rec->fail is set) to the lane
 * its decision names (for a ladder, the decision's rung), with the deciding
 * policy id. `origin` is the source topic the lane templates expand with:
 * the record's own topic, or, for a record consumed from a rung, the source
 * topic that rung belongs to. With rec->fail->lane_stub set it writes the
 * stub instead (refusal.h: no value, errgate headers only). Returns
 * RD_KAFKA_RESP_ERR_NO_ERROR when queued
 * (the outcome arrives through done), or the error when the producer refused
 * it at once (done is not called). */
rd_kafka_resp_err_t eg_lanes_write(eg_lanes *l, eg_record *rec, const char *origin, const char *policy_id);

/* Inbox mode's republish of rec (a due replay-rung record), which may hold
 * a protected value (errgate.protect, protect.h): an encrypted one is
 * decrypted with lanes.protect.key_file into rec->fail, and eg_lanes_body
 * then writes the plaintext. Returns 0 (nothing protected, or decrypted),
 * or -1 with why when it cannot go out as it came: a pointer or a masked
 * value, no key, another key, a changed byte. */
int eg_lanes_unprotect(const eg_lanes *l, eg_record *rec, char *why, size_t whylen);

/* Counts in *ctr (the gateway's errgate_payload_unprotectable_total; NULL:
 * not counted) each payload that could not be protected as asked. */
void eg_lanes_count_unprotectable(eg_lanes *l, uint64_t *ctr);

/* The key and value of the lane record rec's decision writes: the
 * record's own (borrowed from rec->msg), its protected value for a DLQ or
 * quarantine lane with protection (lanes.protect or the route's protect:
 * made once into rec->fail, borrowed from there; protect.h), or, for a STATE write, the item id
 * and the accepted-loss state JSON, built into the struct's buffers (valid
 * while it lives). */
typedef struct eg_lane_body {
    const void *key, *value;
    size_t key_len, value_len;
    int built; /* key and value are the buffers below (a producer must copy them) */
    char kbuf[320], vbuf[1536];
} eg_lane_body;
void eg_lanes_body(const eg_lanes *l, const eg_record *rec, const char *policy_id, eg_lane_body *b);

/* The lane record rec's decision would write, without writing it: its
 * topic (*topic, valid while l lives) and its headers (the caller owns them:
 * rd_kafka_headers_destroy) for the key and value b (eg_lanes_body's), a
 * state record's signature included. For the spill journal. */
rd_kafka_headers_t *eg_lanes_record(eg_lanes *l, const eg_record *rec, const char *origin, const char *policy_id,
                                    const eg_lane_body *b, const char **topic);

/* The lane topic name for a source topic (and rung name, for EG_LANE_RETRY). */
const char *eg_lanes_topic(eg_lanes *l, eg_lane lane, const char *origin, const char *rung);

/* Per lane topic counters: writes acknowledged, writes that failed
 * (refused at once or reported failed; purges at shutdown are not failures),
 * writes queued or in flight now. */
typedef struct eg_lane_stats {
    const char *topic; /* borrowed, valid until the next eg_lanes call */
    eg_lane lane;
    uint64_t written, failed;
    int inflight;
} eg_lane_stats;

/* Fills *out for the i-th lane topic used so far; returns 0, or -1 past the
 * last one. */
int eg_lanes_stats(const eg_lanes *l, int i, eg_lane_stats *out);

/* Number of writes queued or in flight. */
int eg_lanes_outstanding(const eg_lanes *l);

/* Abandons every queued and in-flight write: their done callbacks run with an
 * error before this returns (waits at most timeout_ms for the reports). */
void eg_lanes_purge(eg_lanes *l, int timeout_ms);

void eg_lanes_free(eg_lanes *l);

/* Transactions (lanes.transactional; see DESIGN, exactly-once lanes). With
 * it, eg_lanes_new makes the producer transactional (transactional.id
 * errgate.GROUP.INSTANCE), refuses librdkafka's mock cluster (the embedded
 * broker: its transactions are not real) and calls init_transactions, which
 * fences the instance's previous incarnation and aborts what it left open.
 * Every eg_lanes_write then belongs to the transaction opened by
 * eg_lanes_txn_begin, and is durable only when eg_lanes_txn_commit says
 * EG_TXN_OK, whatever its delivery report said. */
typedef eg_ktxn_result eg_txn_result;  /* the steps are ktxn.h's */
#define EG_TXN_OK EG_KTXN_OK           /* committed */
#define EG_TXN_ABORTED EG_KTXN_ABORTED /* aborted (or never begun): invisible to read_committed readers */
#define EG_TXN_FATAL EG_KTXN_FATAL     /* the producer is fenced or broken: it never writes again */

/* 1 when the producer is transactional. */
int eg_lanes_transactional(const eg_lanes *l);
/* Producers replaced after a fatal error since the start (lanes.c). */
uint64_t eg_lanes_replaced(const eg_lanes *l);
/* The deployment's control key (control_key_file; n == 0: none), for the gateway's checks. */
const eg_ctlkey *eg_lanes_ctlkey(const eg_lanes *l);
/* Opens a transaction. EG_TXN_ABORTED (with err) when none could be opened. */
eg_txn_result eg_lanes_txn_begin(eg_lanes *l, char *err, size_t errlen);
/* Waits up to timeout_ms for every write of the open transaction to be
 * reported (their done callbacks run from here, on the loop thread).
 * Returns the number of writes still unreported. */
int eg_lanes_txn_flush(eg_lanes *l, int timeout_ms);
/* Adds offsets (next offsets to read, of consumer's group) to the open
 * transaction and commits it; on any error aborts it (err says why). */
eg_txn_result eg_lanes_txn_commit(eg_lanes *l, rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets,
                                  int timeout_ms, char *err, size_t errlen);
/* Aborts the open transaction (err says why when it could not). */
eg_txn_result eg_lanes_txn_abort(eg_lanes *l, int timeout_ms, char *err, size_t errlen);

#endif
