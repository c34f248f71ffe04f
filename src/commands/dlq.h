/* dlq.h — what the DLQ operations commands share (`errgate replay`,
 * `errgate dlq stats|tail|resolve`): their plumbing (dlq_cli.c), what a
 * replay does to one record (replay_filter.c), replay's --where (where.c)
 * and the lifecycle statuses read and written by hand (dlq_state.c;
 * the states and their rule: lane_state.h). They read lanes with
 * kcli.h's reader, parse times and counts with parse.h, print with text.h
 * and count with strmap.h.
 *
 * Ownership: every function documents what it borrows; returned heap
 * memory belongs to the caller unless said otherwise. */
#ifndef EG_DLQ_H
#define EG_DLQ_H

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ctlsign.h"
#include "kcli.h"
#include "lane_state.h"
#include "replay_headers.h"
#include "strmap.h"

/* ---- command plumbing (dlq_cli.c) -------------------------------------- */

/* Set to 1 by SIGINT or SIGTERM between eg_dlq_catch_signals() and
 * eg_dlq_release_signals() (which restores the previous handlers). */
extern volatile sig_atomic_t eg_dlq_stop;
void eg_dlq_catch_signals(void);
void eg_dlq_release_signals(void);

/* Header `name` of m as escaped printable text (eg_printable) into out,
 * "-" when absent. */
void eg_dlq_header_text(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen);

/* Makes printable text s (eg_printable's output, capacity cap) one
 * column of a DLQ command's line or table, in place: a space becomes \x20
 * (so a foreign value cannot forge the next `name=value` column), an empty
 * value "-"; past cap the text is cut (never inside an escape) and ends
 * in "...". */
void eg_dlq_column(char *s, size_t cap);

/* eg_kcli_opt for a command's argument loop: returns 1 when argv[*i] was a
 * connection option (consumed), 0 when it is something else, -1 with
 * "OPTION needs a value" in why. */
int eg_dlq_conn_opt(eg_kcli *k, int argc, char **argv, int *i, char *why, size_t whylen);

/* A producer for the DLQ commands: the connection settings of k,
 * idempotent, acks=all, keys partitioned with murmur2 (as Java clients do),
 * message.timeout.ms 30 s unless the config sets it, delivery reports to dr
 * with opaque. Returns NULL with err. */
rd_kafka_t *eg_dlq_producer(const eg_kcli *k, const char *client_id,
                            void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *), void *opaque, char *err,
                            size_t errlen);
/* The same producer, transactional when txn_id is not NULL (its
 * transactional.id, transaction.timeout.ms EG_DLQ_TXN_TIMEOUT_MS; the caller
 * calls eg_ktxn_init before its first transaction, ktxn.h). */
#define EG_DLQ_TXN_TIMEOUT_MS 60000
rd_kafka_t *eg_dlq_producer_txn(const eg_kcli *k, const char *client_id, const char *txn_id,
                                void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *), void *opaque, char *err,
                                size_t errlen);

/* `dlq resolve` of item id whose lane record has key[0..klen) (NULL: none)
 * tells the group of k's config (-c) that it is resolved: a resolve record
 * (fence_op.h) in GROUP.fences, signed with k's control key when there is
 * one, for a gateway that fences the key behind it (dlq_fence.c). Returns
 * 1 when the record was written and acknowledged, 0 when none was needed or
 * possible (note says why, "" when nothing is to be said), -1 with err. */
int eg_dlq_fence_resolved(const eg_kcli *k, const char *id, const void *key, size_t klen, char *note, size_t notelen,
                          char *err, size_t errlen);

/* `errgate dlq watch` (dlq_watch.c), dispatched by `errgate dlq`: argv[0]
 * is "dlq", argv[1] "watch". Returns the exit code. */
int eg_cmd_dlq_watch(int argc, char **argv);

/* ---- one replayed record (replay_filter.c) ----------------------------- */

/* What the replay filters look at, borrowed from one lane record. NULL
 * strings are absent headers. */
typedef struct eg_lane_view {
    int64_t ts; /* the lane record's timestamp, ms since the epoch */
    const void *key;
    size_t keylen;     /* key may be NULL (no key) */
    const char *klass; /* error.class */
    const char *code;  /* error.code */
} eg_lane_view;

/* The C filters of `errgate replay`; an unset field selects everything. */
typedef struct eg_replay_filter {
    int64_t since_ms;  /* > 0: ts >= since_ms */
    int64_t until_ms;  /* > 0: ts <= until_ms */
    const char *klass; /* exact error.class */
    const char *code;  /* exact error.code */
    const char *key;   /* exact key bytes (a record without a key never matches) */
} eg_replay_filter;

/* 1 when the record passes every set filter, else 0. */
int eg_replay_filter_match(const eg_replay_filter *f, const eg_lane_view *v);

/* ---- --where (where.c) --------------------------------------------------- */

/* A compiled `--where` expression (lua/errgate/where.lua) in its own
 * bounded Lua VM: the policy sandbox, JIT off, budget_ms of wall clock per
 * record, the policies' memory cap. */
typedef struct eg_where eg_where;

/* Compiles expr. Returns NULL with a one-line err ("--where:1: ..."). */
eg_where *eg_where_new(const char *expr, int budget_ms, char *err, size_t errlen);

/* Evaluates the expression on m (headers, topic, partition, offset,
 * timestamp, key; strings cut at 64 KiB). Returns 1 when it matches, 0 when
 * not, -1 with err (a Lua error, the budget, the memory cap). */
int eg_where_eval(eg_where *w, const rd_kafka_message_t *m, char *err, size_t errlen);

void eg_where_free(eg_where *w);

/* ---- lifecycle state (dlq_state.c) -------------------------------------- */

/* The latest statuses of every id in a state topic: the latest resolving
 * one and the latest approval, since the id's last tombstone. */
typedef struct eg_dlq_states {
    eg_strmap ids;      /* id -> index into the arrays */
    unsigned char *rst; /* the latest resolving status (EG_DLQ_OPEN: none) */
    int64_t *rts;       /* when it was written (state record timestamp) */
    int64_t *ats;       /* when the latest approval was written (-1: none) */
    int64_t *afrom;     /* its "since": the oldest lane record it approves (-1: any) */
    char **aby;         /* who wrote the latest approval (its "by"; NULL: none), owned */
    size_t n, cap;
    size_t refused; /* state records ignored by eg_dlq_states_load: unsigned or badly signed, with a key */
    eg_ctlkey key;  /* the control key they were checked with (n == 0: none); signs what the reader writes */

    /* annotations (`dlq annotate`): state records keyed EG_DLQ_ANNOTATION_PREFIX + id,
     * the latest value per id (a JSON object, owned; NULL: removed by a tombstone) */
    eg_strmap anns;
    char **annv;
    size_t nann, capann;
} eg_dlq_states;

/* Applies one state record (in the order they were written): value NULL is
 * a tombstone (open again); a value without a status a state record may
 * hold (approved, replayed, accepted-loss, closed) counts as one. */
void eg_dlq_states_apply(eg_dlq_states *s, const char *id, size_t idlen, const void *val, size_t vallen, int64_t ts);

/* Reads the whole state topic of lane (no topic: no statuses). With a
 * control key (eg_kcli_ctlkey), a record whose errgate.sig does not verify
 * (kind "state", ctlsign.h) is ignored and counted in s->refused (one warn
 * line says how many). Returns 0 or -1 with err. */
int eg_dlq_states_load(const eg_kcli *k, const char *lane, eg_dlq_states *s, char *err, size_t errlen);

/* The state of a lane record with this id and timestamp (see the lifecycle
 * rule above): the latest resolving status that applies, else approved when
 * an approval applies, else EG_DLQ_PENDING when pending is set (the record
 * requires approval), else EG_DLQ_OPEN. */
eg_dlq_status eg_dlq_states_status(const eg_dlq_states *s, const char *id, int64_t rec_ts, int pending);

/* The state of lane record m: its item id (into id, idlen), its timestamp
 * and its errgate.approval header, looked up in s. */
eg_dlq_status eg_dlq_item_state(const eg_dlq_states *s, const rd_kafka_message_t *m, char *id, size_t idlen);

void eg_dlq_states_free(eg_dlq_states *s);

/* The key prefix of an item's annotation in LANE.state: "annotation:ID". */
#define EG_DLQ_ANNOTATION_PREFIX "annotation:"
/* At most this many bytes of an annotation's value are kept. */
#define EG_DLQ_ANNOTATION_MAX 4096

/* Applies one annotation record of item id (the key without its prefix):
 * val NULL (a tombstone) removes it; a value that is not a JSON object of
 * at most EG_DLQ_ANNOTATION_MAX bytes is ignored. */
void eg_dlq_states_annotate(eg_dlq_states *s, const char *id, size_t idlen, const void *val, size_t vallen);

/* The string member `field` ("owner", "severity", "note", "by", "at") of
 * item id's annotation into out (eg_json_get_str). Returns 0, or -1 when
 * the item has no annotation or it has no such string. */
int eg_dlq_states_annotation(const eg_dlq_states *s, const char *id, const char *field, char *out, size_t outlen);

/* `errgate dlq annotate` (dlq_annotate.c), dispatched by `errgate dlq`:
 * argv[0] is "dlq", argv[1] "annotate". Returns the exit code. */
int eg_cmd_dlq_annotate(int argc, char **argv);

/* Who approved the item id (the "by" of its latest approval), or NULL. */
const char *eg_dlq_states_approver(const eg_dlq_states *s, const char *id);

/* 1 when the identities a and b name the same person for the four-eyes
 * rule: equal, or equal before an '@' ("alice" and "alice@host"), case
 * folded. An empty identity matches nothing. */
int eg_dlq_same_person(const char *a, const char *b);

/* New headers for the state record (id, value json of n bytes): the
 * signature errgate.sig (kind "state") when key has one, else none. The
 * caller owns them (rd_kafka_producev takes them once it succeeds). */
rd_kafka_headers_t *eg_dlq_state_headers(const eg_ctlkey *key, const char *id, const char *json, size_t n);

/* A writer of state records to LANE.state, for the commands that set
 * statuses by hand (`dlq resolve`, `dlq approve`): its own producer
 * (eg_dlq_producer), the topic made sure of (eg_dlq_state_ensure), and the
 * outcome of every write counted from its delivery report. */
typedef struct eg_dlq_writer {
    rd_kafka_t *rk;
    char topic[512];
    char by[300]; /* the author written in every record */
    long inflight, written, failed;
    rd_kafka_resp_err_t last_err; /* of the last failed write */
    eg_ctlkey key;                /* the control key its records are signed with; n == 0: unsigned */
    /* the statuses read before (borrowed, may be NULL): an approval of an
     * id carries the resolving status it supersedes (see eg_dlq_writer_put) */
    const eg_dlq_states *known;
} eg_dlq_writer;

/* Opens w for lane (partitions: of the lane, for a state topic it creates)
 * with author by (NULL: eg_dlq_whoami). A note from eg_dlq_state_ensure is
 * left in note ("" when none). Returns 0, or -1 with err (w closed). */
int eg_dlq_writer_open(eg_dlq_writer *w, const eg_kcli *k, const char *lane, int partitions, const char *by, char *note,
                       size_t notelen, char *err, size_t errlen);

/* Queues the state record {status, reason, at: now, by[, since]} keyed by
 * id (since: the RFC 3339 form of since_ms, when >= 0). An approval of an
 * id that w->known holds a resolving status for (a replayed older copy)
 * also carries it, {prior, prior_at}: the approval replaces that record
 * under compaction (same key), and the older copy must stay resolved
 * (eg_dlq_states_apply restores it). The JSON written is
 * copied into json (may be NULL) when it fits. Returns 0, or -1 when the
 * producer refused it at once (counted as failed). */
int eg_dlq_writer_put(eg_dlq_writer *w, const char *id, eg_dlq_status st, const char *reason, int64_t since_ms,
                      char *json, size_t jsonlen);

/* Waits up to timeout_ms for every queued write's report. Returns the
 * number of writes that failed or were never confirmed. */
long eg_dlq_writer_flush(eg_dlq_writer *w, int timeout_ms);

void eg_dlq_writer_close(eg_dlq_writer *w);

#endif
