/* record.h — the types that travel between subsystems: a consumed record,
 * the failure a target reported, and the decision a policy returned.
 *
 * Ownership (one rule): the gateway owns every eg_record from consume to its
 * durable outcome; targets and lanes borrow it for exactly one operation and
 * hand it back through their completion callback. An eg_failure owns its
 * strings; eg_failure_clear frees them. */
#ifndef EG_RECORD_H
#define EG_RECORD_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "config.h"
#include "protect.h"

/* CIRCUIT_OPEN: the record was not sent because the target's breaker is
 * open; the policy decides what that means (the shipped ones hold).
 * RECORDED: inbox mode (source.inbox): the record is a failure some other
 * system recorded on a DLQ; no target was called. */
typedef enum {
    EG_FK_HTTP = 0,
    EG_FK_TIMEOUT,
    EG_FK_CONNECT,
    EG_FK_LUA,
    EG_FK_CIRCUIT_OPEN,
    EG_FK_RECORDED
} eg_failure_kind;

typedef struct eg_failure {
    eg_failure_kind kind;
    int status;       /* HTTP status, 0 when none */
    char *code;       /* Error-Code, or NULL */
    char *class_hint; /* Error-Class, or NULL */
    char *message;    /* or NULL */
    char *body;       /* response body, capped (EG_BODY_CAP), or NULL */
    size_t body_len;
    int64_t retry_after_ms; /* -1 when absent */
    int64_t latency_ms;
} eg_failure;

#define EG_BODY_CAP 4096

void eg_failure_clear(eg_failure *f);
const char *eg_failure_kind_name(eg_failure_kind k);

/* The states of a target's circuit breaker (breaker.h), as a policy sees
 * them in ctx.breaker. */
typedef enum { EG_BR_CLOSED = 0, EG_BR_OPEN = 1, EG_BR_HALF_OPEN = 2 } eg_breaker_state;
#define EG_BR__N (EG_BR_HALF_OPEN + 1)

/* "closed", "open" or "half_open" (for logs, metrics and ctx.breaker). */
const char *eg_breaker_state_name(eg_breaker_state s);

typedef enum {
    EG_ACT_RETRY = 0,
    EG_ACT_LADDER,
    EG_ACT_DLQ,
    EG_ACT_QUARANTINE,
    EG_ACT_IGNORE,
    EG_ACT_HOLD,
    EG_ACT_STOP,
    EG_ACT_REPLAY,    /* inbox mode: to the replay rung, republished when due (to replay_to) */
    EG_ACT_REPUBLISH, /* the C core's, never a policy's: a due replay-rung record goes out */
    EG_ACT__N
} eg_action;

const char *eg_action_name(eg_action a);
/* Returns the action named s, or -1. */
int eg_action_parse(const char *s);

/* The reasons the C core gives or acts on. A decision's reason travels as
 * text at the edges (the policy's answer, the decision log, the
 * errgate.reason header, an accepted-loss state, metrics labels); inside the
 * core it is one of these, so the core branches on a value and never on a
 * string. EG_RSN_NONE: no reason (the class stands in for it on the wire);
 * EG_RSN_OTHER: a text of the policy's own, kept as it is in
 * eg_decision.reason. The wire names are the table in record.c. */
typedef enum {
    EG_RSN_NONE = 0,
    EG_RSN_OTHER,
    EG_RSN_EXHAUSTED,        /* "exhausted": a retry schedule or ladder used up */
    EG_RSN_RETRY_BUDGET,     /* "retry_budget": escalated or held for the target's retry budget */
    EG_RSN_DLQ_GUARD,        /* "dlq_guard": a dead letter the flood guard held */
    EG_RSN_OVERRIDE,         /* "override": an operator override replaced the action */
    EG_RSN_POLICY_ERROR,     /* "policy_error": the fallback hold */
    EG_RSN_UNKNOWN_RUNG,     /* "unknown_rung": a ladder or replay rung the gateway does not consume */
    EG_RSN_LOOP_GUARD,       /* "loop_guard": replayed too often */
    EG_RSN_REPLAY_NO_TOPIC,  /* "replay_no_topic": a replay-rung record without a destination */
    EG_RSN_REPLAY_STUB,      /* "replay_stub": a stub is not republished */
    EG_RSN_REPLAY_REFUSED,   /* "replay_refused": a destination internal or not allowed */
    EG_RSN_REPLAY,           /* "replay": a due replay-rung record republished */
    EG_RSN_REPLAY_PROTECTED, /* "replay_protected": a protected value it cannot republish as it came */
    EG_RSN_FENCED,           /* "fenced": its key is fenced (source.fence); it follows the parked record */
    EG_RSN_FENCE_CAP,        /* "fence_cap": a ladder or dead letter held, its partition's fences at the cap */
    EG_RSN__N
} eg_reason;

/* The wire name of r ("" for EG_RSN_NONE, NULL for EG_RSN_OTHER: its text
 * is the decision's own). */
const char *eg_reason_name(eg_reason r);
/* The reason named s: EG_RSN_NONE for NULL or "", EG_RSN_OTHER for a text
 * that names none of the core's. */
eg_reason eg_reason_parse(const char *s);

typedef struct eg_decision {
    eg_action action;
    char klass[64];
    char code[128];
    char reason[64]; /* the reason's text, as it goes on the wire */
    eg_reason why;   /* the same reason, as the core branches on it */
    char message[512];
    int64_t delay_ms;
    int fallback;          /* 1: the policy failed and the fallback applied */
    char rung[40];         /* ladder: the rung's name ("30s"), "" otherwise */
    int rung_index;        /* ladder: 1-based rung number */
    int64_t not_before_ms; /* ladder: earliest due time (wall ms) when Retry-After
                              pushed it past the rung's delay, else 0; replay:
                              when it is due */
    char replay_to[256];   /* replay: "original" or a topic; republish: the topic */
    int32_t out_partition; /* republish: the original partition when replay_to is
                              the original topic, else -1 (the lane rule) */
    int approval;          /* dlq/quarantine: the route entry asks for approval before replay */
    char override[65];     /* the operator override that replaced the policy's action, or "" */
    int protect;           /* dlq/quarantine: the route entry's protect, eg_prot_mode + 1; 0: the lane's */
    /* the class's envelope in the policy (eg_policy_class_env), filled after
     * every decision: its route entry's remediation hint ("" none), whether
     * it is retryable (1, 0; -1: the policy cannot tell, a route function)
     * and the steps of the ladder it climbs (0: none or unknown) */
    char hint[256];
    int retryable;
    int ladder_steps;
} eg_decision;

/* Sets d's reason to the core's reason r (its text and its value). */
void eg_decision_set_reason(eg_decision *d, eg_reason r);

/* Attempt context handed to the policy with each failure. */
typedef struct eg_ctx {
    int attempt;            /* attempts so far, including the failed one */
    const char *last_class; /* class of the previous decision, or NULL */
    int class_attempts;     /* consecutive failures with last_class */
    eg_ordering ordering;
    int64_t now_ms;
    int64_t first_failure_ms;
    int64_t last_delay_ms; /* delay of the previous retry/hold, 0 if none */
    int retry_count;       /* rungs climbed (retry.count header + in-place ladder steps) */
    const char *rung;      /* the rung the record came from, or NULL */
    const char *breaker;   /* "closed", "open" or "half_open" */
    int retry_budget;      /* 1: one more in-place retry fits the target's budget */
} eg_ctx;

typedef enum {
    EG_RS_PENDING = 0, /* waiting in its partition's queue */
    EG_RS_RUNNABLE,    /* eligible, waiting for target capacity */
    EG_RS_IN_TARGET,
    EG_RS_WAIT_RETRY,   /* retry or hold timer armed */
    EG_RS_LANE_WRITE,   /* produce in flight */
    EG_RS_LANE_BACKOFF, /* lane write failed; re-produce timer armed */
    EG_RS_STOPPED,      /* the policy decided stop on it: not active, never
                            finished (consumed again by the next owner) */
    EG_RS_LANE_TXN,     /* lanes.transactional: decided to a lane write that waits for
                            the next transaction (gw_txn.c) */
    EG_RS_FENCE_WAIT    /* source.fence: decided to a lane write that waits for the fence
                            writes sent before it (gw_fence.c, eg_gw_fence_lane_wait) */
} eg_rstate;

/* One failed attempt, as errgate.history keeps it. */
typedef struct eg_attempt {
    int64_t t_ms; /* wall clock */
    eg_action action;
    char klass[32];
    char code[48];
} eg_attempt;

#define EG_HIST_MAX 8

/* What a record carries once it has failed; allocated at its first failure
 * (the happy path never pays for it) and freed with the record. */
typedef struct eg_fail {
    eg_failure failure;   /* the last failure */
    eg_decision decision; /* the last decision */
    int64_t first_failure_ms;
    int class_attempts; /* consecutive failures with decision.klass */
    int lane_attempts;
    int64_t lane_first_ms; /* monotonic ms of the first lane write attempt, 0 before */
    uint64_t lane_seq;     /* the gateway's order of that attempt (1, 2, ...): the spill order */
    int spilled;           /* in the spill journal: durable, offset finished */
    int lane_stub;         /* the lane refused its size: write the stub (refusal.h) */
    int lane_refused;      /* the last lane error was a permanent refusal: never spill */
    int txn;               /* lanes.transactional: EG_TXN_* state of its write (gw_txn.c), 0: none */
    int txn_err;           /* its delivery report's error in the running transaction */
    int virtual_rungs;     /* ladder steps taken in place (ordering = partition) */
    int retrying;          /* counted as an active retry in the target's budget */
    int64_t budget_limit;  /* the budget's limit when the last retry was admitted */
    int nhist;             /* attempts so far; the last EG_HIST_MAX are kept */
    eg_attempt hist[EG_HIST_MAX];
    /* payload protection (protect.h), made once per lane write so that a
     * retried or spilled write holds the same bytes (lanes.c) */
    int prot_lane;             /* the lane + 1 it was made for; 0: not made */
    int prot_mode;             /* eg_prot_mode applied; NONE: the payload as it came */
    unsigned char *prot_value; /* owned; the lane value (NULL with prot_len 0: none) */
    size_t prot_len;
    char prot_hdr[EG_PROT_HDR_MAX]; /* the errgate.protect value, "" for none */
    char fenced_by[EG_TOPIC_NAME_MAX +
                   32]; /* (EG_ID_MAX + 1) a fenced record's errgate.fenced-by: the parked record's id, "" none */
} eg_fail;

struct eg_part;
struct event;

typedef struct eg_record {
    rd_kafka_message_t *msg; /* owned: key, value and headers live here */
    struct eg_part *part;    /* counted reference */
    const char *topic;       /* the partition's topic name (lives as long as part) */
    int32_t partition;
    int64_t offset;
    uint64_t seq;      /* tracker sequence number */
    uint64_t key_hash; /* 0 when the record has no key */
    eg_rstate state;
    int attempt;                     /* target attempts so far */
    int holding;                     /* counted in the partition's hold count */
    int lane_failing;                /* counted in the partition's lane-failure count */
    int budget_req;                  /* an attempt counted as a request in the retry budget */
    int budget_slot;                 /* the budget (budget_keys.h) its request or retry is counted in */
    int64_t sent_ns;                 /* monotonic ns its attempt went to the target (adaptive limit), 0 none */
    int sent_inflight;               /* attempts in flight when it went, itself included */
    uint32_t breaker_pass;           /* the breaker's pass for the attempt in the target */
    eg_fail *fail;                   /* owned; NULL until the first failure */
    struct event *timer;             /* retry, hold or lane back-off */
    struct eg_record *qprev, *qnext; /* pending, runnable, transaction or fence wait list */
    struct eg_record *aprev, *anext; /* the gateway's list of all records */
    rd_kafka_headers_t *hdrs;        /* msg's headers (owned by msg), NULL: none; valid when hdrs_read */
    int hdrs_read;                   /* eg_record_read_headers ran */
    int fence_resolved;              /* the head of its key's fence: resolves it at its durable outcome (gw_fence.c) */
    int fence_placed;                /* a follower placed in its fence's dead-letter lane: durably so at its outcome */
    uint64_t fence_wseq;             /* EG_RS_FENCE_WAIT: the last fence write it waits for */
} eg_record;

/* Reads the record's headers once and keeps them in r->hdrs: librdkafka
 * parses a consumed message's headers on every call while it has none,
 * with an allocation each time, and a record's headers are asked for
 * several times on its way (id, retry.count, lane headers). */
void eg_record_read_headers(eg_record *r);

/* The record's header list (NULL: none), from r->hdrs once read. */
const rd_kafka_headers_t *eg_record_headers(const eg_record *r);

/* Fills *rec as a read-only view of the consumed message m (topic,
 * partition, offset, msg; nothing else set), for code that hands a message
 * to Lua as a record (eg_vm_push_record) without the gateway. */
void eg_record_view(eg_record *rec, const rd_kafka_message_t *m);

/* The last header called name on m: its value and length, or NULL when
 * absent (a present header with a NULL value also gives NULL). */
const void *eg_header(const rd_kafka_message_t *m, const char *name, size_t *len);

/* The same lookup in a header list (h may be NULL: no headers). */
const void *eg_headers_get(const rd_kafka_headers_t *h, const char *name, size_t *len);

/* v[0..n) (v may be NULL) as a non-negative decimal integer: 1 to 19 ASCII
 * digits and nothing else (no sign, no blanks). Returns it, or -1 when v is
 * NULL, empty, not such a number, or larger than INT64_MAX. */
int64_t eg_uint_parse(const void *v, size_t n);

/* The last header called name as a NUL-terminated string (truncated to
 * outlen - 1 bytes). Returns 0, or -1 (out = "") when absent. */
int eg_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen);

/* The header called name on m as a non-negative decimal integer
 * (eg_uint_parse), or -1 when absent or not such a number. */
int64_t eg_header_uint(const rd_kafka_message_t *m, const char *name);

/* The record's retry.count header (rungs climbed): 0 when absent or
 * unreadable, at most EG_RETRY_COUNT_MAX. */
#define EG_RETRY_COUNT_MAX 1000000
int eg_record_retry_count(const eg_record *r);

/* The errgate.id of a record: its errgate.id header when it has a
 * well-formed one (it came back from a lane or a replay), else its own
 * "topic/partition/offset", into out. */
void eg_record_id(const eg_record *r, char *out, size_t outlen);

/* errgate.id grammar, the form the gateway writes: TOPIC "/" PARTITION "/"
 * OFFSET, TOPIC 1 to 249 of [a-zA-Z0-9._-], PARTITION 1 to 10 decimal
 * digits, OFFSET 1 to 19; nothing else (no spaces, no control bytes). */
#define EG_ID_MAX (EG_TOPIC_NAME_MAX + 1 + 10 + 1 + 19)
_Static_assert(sizeof(((eg_fail *)0)->fenced_by) == EG_ID_MAX + 1, "fenced_by holds an errgate.id");
/* Returns 1 when the n bytes at v are a well-formed errgate.id. */
int eg_id_valid(const void *v, size_t n);
/* Returns 1 when r carries an errgate.id header that is not well-formed
 * (it is ignored: the record's id comes from its coordinates). */
int eg_record_has_bad_id(const eg_record *r);

#endif
