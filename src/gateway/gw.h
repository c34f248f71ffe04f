/* gw.h — the gateway's internal state, shared by the files of `errgate run`
 * (gw_run.c: setup, signals, teardown; gateway.c: the record path from
 * consume to commit; gw_admin.c: metrics, admin views, statistics, the
 * summary; gw_reload.c: the reload path; gw_incident.c: flood guard,
 * stop-and-wait, overrides; gw_colocate.c: rung partitions with their source partitions under
 * fencing; gw_fence.c: per-key fences; gw_rungs.c: rung topics; gw_txn.c: the
 * transactions of lanes.transactional, called by gw_run.c and gateway.c, calling none
 * of them). Nothing outside
 * those files includes it. Calls run one way: gw_run.c -> gw_admin.c -> gw_reload.c ->
 * gateway.c -> gw_incident.c -> gw_colocate.c -> gw_fence.c -> gw_rungs.c (each may call those after
 * it; the partition helpers eg_gw_part_find and eg_gw_part_unref are everyone's).
 *
 * Locality: everything here is owned and touched by the event-loop thread
 * only (librdkafka's statistics callback checks it runs there); a policy
 * build's worker thread touches only its own build (see gw_reload.c). */
#ifndef EG_GW_H
#define EG_GW_H

#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>

#include "admin.h"
#include "audit.h"
#include "breaker.h"
#include "budget.h"
#include "budget_keys.h"
#include "adaptive.h"
#include "ratelimit.h"
#include "config.h"
#include "dlq_guard.h"
#include "kconf.h"
#include "keyset.h"
#include "lanes.h"
#include "log_sample.h"
#include "slab.h"
#include "metrics.h"
#include "override.h"
#include "policy.h"
#include "shadow.h"
#include "record.h"
#include "spill.h"
#include "strmap.h"
#include "target.h"
#include "tracker.h"

/* Why a partition is paused. Backlog is not a reason: a partition with too
 * many unfinished records is simply not drained (see drain_partitions), so
 * librdkafka's prefetch stays and fetching resumes without a round trip. */
enum {
    PAUSE_HOLD = 1 << 0,
    PAUSE_RETRY = 1 << 1, /* in-place retry under partition ordering */
    PAUSE_LANE = 1 << 2,  /* a lane write is failing */
    PAUSE_STOP = 1 << 3,
    PAUSE_DUE = 1 << 4,      /* a rung partition's head record is not due yet */
    PAUSE_OPERATOR = 1 << 5, /* a pause override is in force */
    PAUSE_SPLIT = 1 << 6,    /* a rung partition whose source partition is not assigned here (gw_colocate.c) */
};

/* lanes.transactional (gw_txn.c): the records decided to a lane write that
 * wait for the next transaction (state EG_RS_LANE_TXN, linked through
 * qnext/qprev), the records written in the open one, and the counts the
 * summary and the logs give. */
typedef struct eg_gw_txn {
    int on;              /* the lane producer is transactional */
    int busy;            /* a transaction is running (re-entry from its delivery reports) */
    int fatal;           /* the producer is fenced or broken: nothing is committed any more */
    char fatal_why[800]; /* why, when fatal */
    eg_record *wait_head, *wait_tail;
    eg_record **open; /* the records written in the running transaction */
    int nopen, capopen;
    uint64_t commits, aborts, records;
    int64_t ms_total, ms_max; /* wall time of the commits (begin to commit_transaction's return) */
} eg_gw_txn;

/* How long one transaction may take (flush, offsets, commit), then it aborts. */
#define TXN_STEP_TIMEOUT_MS 30000

/* The loop's ticks, budgets and waits. */
#define POLL_BUDGET 1000         /* messages taken per loop pass, over all partitions */
#define POLL_SHARE_MIN 64        /* ... but at least this many per partition */
#define POLL_TICK_MS 1000        /* keep polling (group membership) even when idle */
#define COMMIT_REFRESH_MS 10000  /* an offset that did not move is committed again this often */
#define LANE_BACKOFF_MIN_MS 100  /* a failed lane write's first back-off, doubling ... */
#define LANE_BACKOFF_MAX_MS 5000 /* ... up to this; also how often an unspillable write is checked */
#define LANE_BACKOFF_MAX_SHIFT 6 /* doublings counted (the shift stays in range) */
#define DEFAULT_HOLD_MS 1000     /* a hold the C core decides, when no delay was given */
#define STOP_DRAIN_TICK_MS 20    /* while stopping: how often in-flight work is checked */
#define STOP_PURGE_WAIT_MS 2000  /* at the stop: wait for the lanes' queued writes */
#define SPILL_DRAIN_IDLE_MS 1000 /* the spill drainer's step when idle (eg_spill_drain_attach) */
#define SPILL_STOP_WAIT_MS 2000  /* at teardown: wait for the drainer's deliveries */
#define TEARDOWN_MAX_MS 15000    /* after the loop: the teardown ends the process by then */
#define POLICY_WATCH_MS 1000     /* how often the policy file is checked for a change */

/* ms as a libevent timeout. */
static inline struct timeval eg_gw_tv(int64_t ms) {
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

struct eg_gw;
typedef struct eg_gw_reloader eg_gw_reloader; /* gw_reload.c */

/* A retry rung topic the gateway consumes: one per source topic and rung
 * name. Rungs are never forgotten while the process runs (records may sit
 * in a rung a reload removed); a rung the policy no longer names keeps its
 * last delay. */
typedef struct eg_rungtopic {
    char *topic;      /* e.g. "payments.retry.30s" */
    char *origin;     /* the source topic, e.g. "payments" */
    char rung[40];    /* the rung's name */
    int64_t delay_ms; /* current delay */
} eg_rungtopic;

typedef struct eg_part {
    char *topic;
    int32_t partition;
    int rung;           /* index into gw->rts for a rung partition, -1 for a source */
    const char *origin; /* the source topic lanes expand with (owned by gw or = topic) */
    int due_wait;       /* paused until the head record is due */
    struct event *due_ev;
    int refs; /* the assignment + each record */
    int revoked;
    eg_tracker trk;
    eg_record *pend_head, *pend_tail;
    int active;     /* records RUNNABLE, IN_TARGET or WAIT_RETRY */
    int unfinished; /* records alive */
    int holding;
    int retry_wait; /* in-place retries waiting under partition ordering */
    int lane_failing;
    int64_t blocked_since_ms; /* monotonic ms it was paused for a blocking reason (not PAUSE_DUE), 0 when not */
    int64_t blocked_ms;       /* ms paused so, before blocked_since_ms (errgate_partition_blocked_seconds_total) */
    unsigned pause;           /* reasons applied */
    int paused;               /* state applied to the consumer */
    rd_kafka_queue_t *q;      /* the partition's own message queue */
    int blocked;              /* draining stopped at a cap; resume below half of it */
    int tracker_full;         /* draining stopped at source.max_tracked offsets tracked */
    int split;                /* a rung partition without its source partition, under source.fence (gw_colocate.c) */
    int64_t committed;        /* last committed offset, -1 none */
    int64_t commit_sent_ms;   /* monotonic ms this partition's offset was last sent in a commit, 0 never */
    eg_keyset keys;           /* active keys (ordering = key) */
    uint64_t *received;       /* metric counters of the topic (registry-owned) */
    uint64_t *processed;
    int64_t consumer_lag; /* from librdkafka statistics, -1 unknown */
    int64_t assigned_ms;  /* monotonic time of the assignment (or the fetch watch's re-assignment) */
    int unstarted;        /* statistics reports in a row with the fetcher not started (gw_unstarted.c) */
    int64_t probe_from;   /* a jump being fetched again: the offset expected, -1 none (gw_offsets.c) */
    int64_t probe_at;     /* the offset the jump went to */
    int gaps_real;        /* probes in a row that found the jump in the log */
    struct eg_gw *gw;     /* the owner, for timer callbacks */
    struct eg_part *next;
} eg_part;

/* The registry's families and unlabelled counters the loop bumps (each
 * statistic is counted here once; the end-of-run summary reads them). */
typedef struct eg_gw_metrics {
    eg_family *received, *processed, *failed, *dead, *quarantined, *laddered, *spilled, *lane_failures;
    eg_family *decision_seconds, *target_seconds, *reloads, *breaker_transitions;
    eg_family *lane_refusals, *lane_stubs;         /* by lane and error; by lane */
    eg_family *poison, *recovered, *dead_by_topic; /* by source topic (the seeds' metrics, gateway.c) */
    uint64_t *succeeded, *retried, *exhausted, *ignored, *held, *fallbacks, *stops;
    uint64_t *commits, *commit_failures;
    uint64_t *payload_unprotectable; /* protection asked for and not applicable: written otherwise (lanes.c) */
    uint64_t *claims_refused;        /* source records whose errgate.id/original.* were not signed (gw_claims.c) */
    uint64_t *bad_ids, *tracker_full, *excluded_topics, *rejoins, *fetch_restarts, *fetch_wakeups;
    uint64_t *offset_gaps, *offset_behind;      /* source messages past a jump in offsets, or below the last taken */
    uint64_t *offset_probes, *offset_refetched; /* jumps fetched again; of those, skipped records found */
} eg_gw_metrics;

typedef struct eg_gw {
    eg_config *cfg;
    struct event_base *base;
    rd_kafka_t *rk;
    rd_kafka_queue_t *cq;
    int cpipe[2];
    struct event *cev, *commit_ev, *drain_ev, *sig_ev[3];
    eg_lanes *lanes;
    eg_target *target;
    eg_spill *spill;       /* the spill journal (lanes.spill), or NULL */
    eg_spill_drain *drain; /* its drainer */
    eg_breaker breaker;    /* the target's circuit breaker */
    eg_budgets budgets;    /* the target's retry budgets: one, or one per key (budget_keys.h) */
    struct {
        int rate;              /* target.rate: bucket in force */
        eg_tbucket bucket;     /* attempts towards the target */
        int adaptive;          /* target.adaptive: aimd in force */
        eg_aimd aimd;          /* the adaptive concurrency limit */
        struct event *ev;      /* the wait for the bucket's next token */
        int64_t wait_since_ns; /* when dispatching began to wait for a token, 0 not waiting */
        double wait_s;         /* seconds spent waiting for tokens (the counter) */
    } limits;                  /* gw_limits.c */
    eg_policy *policy;
    eg_part *parts;
    eg_record *runq_head, *runq_tail;
    eg_record *all; /* every live record */
    int unfinished;
    int blocked;                     /* draining stopped at the total cap */
    int dispatching, dispatch_again; /* dispatch() trampoline */
    struct event *poll_ev;
    int stopping;
    int closed;
    int exit_code;
    int64_t drain_deadline_ms;
    int64_t succeeded_first;  /* successes at the first attempt (the summary's split of m.succeeded) */
    int64_t first_receive_ms; /* monotonic ms of the first record received, 0 before */
    int64_t last_finish_ms;   /* ... and of the last one finished: the summary's active time */
    eg_registry *reg;
    eg_gw_metrics m;
    eg_admin *admin;
    pthread_t loop_thread;
    int assigned_once;             /* the group gave us an assignment (maybe empty) */
    int lane_failing;              /* records whose lane write is failing */
    int64_t lane_failing_since_ms; /* when lane_failing went above 0, 0 when 0 */
    eg_rungtopic *rts;             /* rung topics consumed (see eg_rungtopic) */
    int nrts;
    struct event *watch_ev;  /* policy file watch */
    int64_t policy_mtime_ns; /* last seen modification time and size of the file */
    int64_t policy_size;
    char last_reload_error[512];       /* "" after a good reload or none */
    int64_t last_reload_ms;            /* wall-clock ms of the last attempt, 0 none */
    eg_gw_reloader *reloader;          /* policy builds off the loop (set up at the start) */
    eg_sampler declog;                 /* decision-log sampling (log.decisions) */
    eg_slab records, fails;            /* eg_record and eg_fail objects, reused */
    int waiting;                       /* on_stop = "wait": a stop was decided; paused until resumed */
    char wait_why[256];                /* what stopped it (readiness, logs) */
    eg_dlq_guard guard;                /* the dead-letter flood guard (cfg->guard_enabled) */
    eg_overrides overrides;            /* operator overrides in force */
    struct event *override_ev;         /* their expiry tick */
    eg_shadow *shadow;                 /* the shadow policy (cfg->shadow_policy), or NULL */
    eg_audit *audit;                   /* the audit topic the overrides come from */
    struct eg_gw_coverage *coverage;   /* the assignment check (gw_coverage.c), NULL when off */
    struct eg_gw_fetchwake *fetchwake; /* the fetchers' wake-up (gw_fetch_wakeup.c), NULL when off */
    struct eg_ov_req *ov_reqs;         /* admin requests waiting for their audit record (gw_incident.c) */
    uint64_t control_refused[8];       /* audit records refused, by reason (gw_incident.c's refusal names) */
    eg_strmap ov_latest;               /* keyed: override name -> the latest change time applied (gw_incident.c) */
    int overrides_changed;             /* set by gw_incident.c: pauses and rung due times are to follow */
    struct {
        int32_t partition;
        int64_t offset;
        int rearmed;
    } last_reset;                  /* the last dlq-guard reset record read: where, and the guards it re-armed here */
    eg_gw_txn txn;                 /* lanes.transactional (gw_txn.c) */
    struct eg_gw_fencing *fencing; /* source.fence's tables and counts (gw_fence.c), NULL before the first */
    struct event *fence_lane_ev;   /* lane writes that waited for fence writes go (gateway.c; gw_fence.c wakes it) */
    int split_parts;               /* rung partitions split from their source partition (gw_colocate.c) */
    int coloc_off;                 /* the assignment is not co-located: the cluster's metadata is asked again */
    int64_t coloc_asked_ms;        /* monotonic ms it was last asked */
    int coloc_asks;                /* asks since the assignment (gw_colocate.c bounds them) */
    uint64_t lane_seq;             /* lane writes begun (eg_fail.lane_seq, gateway.c) */
} eg_gw;

/* gateway.c: the record path. Entry points, registered by gw_run.c. */

/* Target completion (target.h): success finishes the record, a failure
 * asks the policy (decide) and carries the decision out. */
void eg_gw_on_target_done(eg_record *r, eg_failure *f, int cancelled, void *arg);
/* Lane delivery report (lanes.h): the record's lane outcome is durable, or
 * the write backs off and is made again. */
void eg_gw_on_lane_done(eg_record *r, rd_kafka_resp_err_t err, void *arg);
/* The lane producer's fatal error (lanes.h): stop, exit EG_EXIT_FAIL. */
void eg_gw_on_lane_fatal(const char *reason, void *arg);
/* The consumer's queues signalled (fd >= 0, the pipe) or a poll tick
 * (fd -1): serve group events, then take messages. */
void eg_gw_on_consumer_queue(evutil_socket_t fd, short what, void *arg);
/* librdkafka callbacks of the consumer (opaque: the gateway). */
void eg_gw_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque);
void eg_gw_on_commit_result(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
                            void *opaque);
void eg_gw_on_consumer_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);
/* The commit interval's timer: commits what moved, asynchronously. */
void eg_gw_on_commit_tick(evutil_socket_t fd, short what, void *arg);
/* Stops taking new work with exit code `code` (the highest asked wins):
 * in-flight attempts and lane writes get shutdown_timeout_ms, then
 * eg_gw_finish_stop. */
void eg_gw_begin_stop(eg_gw *gw, int code, const char *why);
/* Cancels what is in flight, commits what is finished (sync), closes the
 * consumer and breaks the loop. Idempotent. */
void eg_gw_finish_stop(eg_gw *gw);
/* Teardown: frees every record and partition (after the target and the
 * lanes, which may borrow records, are gone). */
void eg_gw_drop_all(eg_gw *gw);

/* The assigned partition topic[partition], or NULL. */
eg_part *eg_gw_part_find(eg_gw *gw, const char *topic, int32_t partition);

/* Rung delays changed: every rung partition waiting for its head record
 * re-computes when that is due (and resumes if it is now). */
void eg_gw_rungs_recheck(eg_gw *gw);

/* Resumes after a wait (on_stop = "wait"): every record a stop decision
 * left unfinished goes to the target again as if it were new (attempt 1, no
 * class streak: the policy decides it from scratch), and consumption goes
 * on. */
void eg_gw_redo_stopped(eg_gw *gw);

/* Hands runnable records to the target as far as it and the limits allow
 * (for timers of other files: a wait that ended). */
void eg_gw_dispatch(eg_gw *gw);

/* gw_limits.c: the limits towards the target (rate, adaptive concurrency)
 * and the retry budgets' keys; the file comment says how they fit the
 * record path. */
/* Sets up the retry budgets, the token bucket and the adaptive limit of
 * gw->cfg. Returns 0, or -1 with err. */
int eg_gw_limits_open(eg_gw *gw, char *err, size_t errlen);
/* Frees what eg_gw_limits_open set up (fine when it did not run). */
void eg_gw_limits_close(eg_gw *gw);
/* Whether one more attempt may go to the target now. When the rate is
 * what stops it, a timer calls eg_gw_dispatch when a token is there; the
 * adaptive limit is waited out by the completions, which dispatch. */
int eg_gw_limits_admit(eg_gw *gw);
/* r's attempt went to the target: takes its token, notes when it went. */
void eg_gw_limits_sent(eg_gw *gw, eg_record *r);
/* r's attempt came back (f NULL: success): feeds the adaptive limit. */
void eg_gw_limits_done(eg_gw *gw, eg_record *r, const eg_failure *f, int cancelled);
/* The budget slot r counts in: the one it already holds a count in, else
 * its key's now (r->budget_slot is set). */
int eg_gw_budget_slot(eg_gw *gw, eg_record *r);
/* The name of r's budget slot for logs and messages, printable (bytes
 * outside printable ASCII as '?'); "" when the budget has no key. */
void eg_gw_budget_name(const eg_gw *gw, const eg_record *r, char *out, size_t outlen);

/* gw_coverage.c: an assignment that leaves a subscribed topic unowned is
 * asked for again (the file comment says when). */
typedef struct eg_gw_coverage eg_gw_coverage;
/* The check, or NULL when partition.assignment.strategy is not range. */
eg_gw_coverage *eg_gw_coverage_new(eg_gw *gw);
/* An assignment arrived (the group's, before topics are excluded): checks
 * it, later, if it looks incomplete. */
void eg_gw_coverage_assigned(eg_gw_coverage *c, const rd_kafka_topic_partition_list_t *assigned);
/* The assignment was revoked: any pending check is dropped. */
void eg_gw_coverage_revoked(eg_gw_coverage *c);
/* Frees c (NULL is fine). */
void eg_gw_coverage_free(eg_gw_coverage *c);

/* gw_offsets.c: a source message at `offset` of p, checked against the
 * offset p's tracker expects next. Returns 0 to take it, 1 to drop it: a
 * message below the next expected (seen), or past a jump that p is now
 * fetching again from the expected offset (a probe: the client may have
 * skipped records the log holds). Counts and logs both. */
int eg_gw_source_offset(eg_gw *gw, eg_part *p, int64_t offset);
/* 1 while p's jump is being fetched again: its commit point must not take
 * librdkafka's position, which went past the jump. */
int eg_gw_source_probing(const eg_part *p);

/* gw_unstarted.c: an assigned partition librdkafka never starts fetching
 * is assigned again (the file comment says when). */
/* Notes p's fetch state as a statistics report gives it (state: len bytes,
 * not NUL-terminated). */
void eg_gw_fetch_state(eg_part *p, const char *state, size_t len);
/* After a statistics report: assigns the whole assignment again when a
 * partition has not started for long enough. */
void eg_gw_fetchwatch(eg_gw *gw);

/* gw_fetch_wakeup.c: librdkafka's broker threads are woken while records are
 * taken, so a drained prefetch queue is refilled within interval_ms (the
 * file comment says why). */
typedef struct eg_gw_fetchwake eg_gw_fetchwake;
/* Starts the asking thread for consumer rk (borrowed; it must outlive the
 * result). counter (errgate_fetch_wakeups_total) is set by _sync. Returns
 * NULL when interval_ms is 0 or the thread cannot start (logged). */
eg_gw_fetchwake *eg_gw_fetchwake_new(rd_kafka_t *rk, int interval_ms, uint64_t *counter);
/* The loop took n records (w NULL is fine). */
void eg_gw_fetchwake_taken(eg_gw_fetchwake *w, int n);
/* Copies the asks made so far into the counter (w NULL is fine). */
void eg_gw_fetchwake_sync(eg_gw_fetchwake *w);
/* Stops and joins the thread, then frees w (NULL is fine); before the
 * consumer is closed. */
void eg_gw_fetchwake_free(eg_gw_fetchwake *w);

/* Drops a reference to p (the last one frees it). */
void eg_gw_part_unref(eg_part *p);

/* gw_fence.c: per-key fencing (source.fence; the file comment says how it
 * fits the record path). */
/* 1 when source.fence is in force (ordering = key and not "off"). */
int eg_gw_fence_on(const eg_gw *gw);
/* What becomes of r (keyed, about to go to the target): EG_GW_FENCE_PASS
 * (it goes), EG_GW_FENCE_FOLLOW (it must follow a parked record of its
 * key: eg_gw_fence_follow), EG_GW_FENCE_DUPLICATE (a copy of a record of
 * its key that resolved already: it is dropped, logged and counted here;
 * the caller finishes it). */
enum { EG_GW_FENCE_PASS = 0, EG_GW_FENCE_FOLLOW = 1, EG_GW_FENCE_DUPLICATE = 2 };
int eg_gw_fence_must_follow(eg_gw *gw, eg_record *r);
/* Fills fl->decision for r, which must follow (eg_gw_fence_must_follow):
 * a write to the parked record's lane with reason fenced and
 * fl->fenced_by, or a hold (fence_cap) when the queue is full. */
void eg_gw_fence_follow(eg_gw *gw, eg_record *r, eg_fail *fl);
/* The policy's decision d on r (adjusted): parks or resolves r's key as
 * the mode says. Returns 1 when the fence table is full and d became a
 * hold (fence_cap), else 0. */
int eg_gw_fence_decided(eg_gw *gw, eg_record *r, eg_decision *d);
/* r succeeded (or, under "ladder", was decided to the DLQ, the quarantine
 * or an ignore): when r is the head of its key's fence, the fence moves on
 * at r's durable outcome (r->fence_resolved). */
void eg_gw_fence_resolved(eg_gw *gw, eg_record *r);
/* r has its durable outcome. The head of its key's fence (r->fence_resolved:
 * a success, its dead letter written, an ignore): the fence moves on (its
 * first follower is the released head, or it ends) and r's copies are
 * duplicates from now on (the key's resolved offset is raised), both in one
 * fence write. A follower placed in a dead-letter lane (r->fence_placed):
 * its placement is durable, written when it extends the durable prefix
 * (eg_fences_durable). Called before the record's offset is finished
 * (eg_gw_fence_finish), so that the offset waits for that write. */
void eg_gw_fence_outcome(eg_gw *gw, eg_record *r);
/* Marks p's record seq finished in its tracker once every fence write sent
 * so far is acknowledged (at once when none is in flight), so that no
 * offset is committed before the fence changes of the records below it
 * are durable. Holds a reference to p meanwhile. */
void eg_gw_fence_finish(eg_gw *gw, eg_part *p, uint64_t seq);
/* A lane write of r (a rung, the DLQ, the quarantine) is about to go out:
 * when r has a key and fence writes are in flight (or lane writes wait
 * already), r waits for every fence write sent before (state
 * EG_RS_FENCE_WAIT, listed) and 1 is returned; once they are acknowledged
 * gw->fence_lane_ev (the caller's, made before) is activated and
 * eg_gw_fence_lane_next gives the waiting records back in the order they
 * waited. 0: write it now. So a copy of a record on a rung or in the DLQ is
 * never more recent than the durable fence state that lists it. */
int eg_gw_fence_lane_wait(eg_gw *gw, eg_record *r);
/* The first waiting record whose fence writes are all acknowledged, off
 * the list (its lane write is to go out now), or NULL. */
eg_record *eg_gw_fence_lane_next(eg_gw *gw);
/* r (EG_RS_FENCE_WAIT) is being freed: it leaves the list. */
void eg_gw_fence_lane_unlink(eg_gw *gw, eg_record *r);
/* The source partition topic[partition] was revoked: its fences go. */
void eg_gw_fence_revoked(eg_gw *gw, const char *topic, int32_t partition);
/* GET /fences and POST /fences/release (form: key=K[&by=NAME]); appends
 * JSON to out, returns the HTTP status. */
int eg_gw_fence_request(eg_gw *gw, int method, const char *path, const char *body, size_t len, struct evbuffer *out);
/* The scrape-time series of fencing (nothing when it is off). */
void eg_gw_fence_metrics(eg_gw *gw, struct evbuffer *out);
/* Opens the fence topic GROUP.fences and reads it to its end (when
 * fencing is on). Returns 0 or -1 with err: the gateway must not start
 * without the fences in force. */
int eg_gw_fence_start(eg_gw *gw, char *err, size_t errlen);
/* 1 when topic is the group's fence topic (never consumed as a source). */
int eg_gw_fence_topic_is(const eg_gw *gw, const char *topic);
/* An assignment: reads the fence topic to its end, then rebuilds the table
 * of every assigned source partition that has none. */
void eg_gw_fence_rebuild(eg_gw *gw);
/* With read_first, reads the fence topic to its end (up to FENCE_READ_MS)
 * so that a release written just before is applied; then waits (up to
 * FENCE_FLUSH_MS, serving reports) until every fence write is acknowledged
 * or failed; when names the occasion in the warning that says some were
 * not. Called before partitions are handed over (revoke, reading first)
 * and at the teardown, so the next owner's rebuild reads them. */
void eg_gw_fence_flush(eg_gw *gw, const char *when, int read_first);
/* Waits for the fence writes in flight (bounded), frees the tables and
 * the topic's clients (teardown). */
void eg_gw_fence_free(eg_gw *gw);

/* gw_colocate.c: under source.fence, a rung partition is served only by its
 * source partition's owner. At an assignment (the whole of it): marks each
 * rung partition whose source partition is not assigned here split (the
 * caller pauses it), says so, and asks the cluster's metadata again when
 * the assignment is not co-located either way. */
void eg_gw_colocate(eg_gw *gw);
/* The commit tick: asks the metadata again while not co-located. */
void eg_gw_colocate_tick(eg_gw *gw);

/* gw_incident.c: the operator's incident controls. */

/* Sets up the dead-letter flood guard when the config has one, reads the
 * audit topic to its end (the overrides in force) and follows it, and arms
 * the overrides' expiry tick. Returns 0 or -1 with err. */
int eg_gw_incident_start(eg_gw *gw, char *err, size_t errlen);
/* Frees what eg_gw_incident_start set up. */
void eg_gw_incident_free(eg_gw *gw);
/* Applies the first operator override in force that matches r's decision
 * d: its action replaces the policy's (reason "override", d->override
 * names it); a ladder decision to a rung with a rung override in force
 * takes its delay (errgate.not-before = now + delay, d->override names
 * it). Runs after the flood guard: an operator's explicit action wins over
 * it. */
void eg_gw_override_adjust(eg_gw *gw, const eg_record *r, eg_decision *d);
/* The admin's /overrides routes: GET lists, POST sets (a form body, see
 * override.h), DELETE /overrides/NAME clears. A change is written to the
 * audit topic and answered once this instance has read it back (or with
 * 503 when it cannot be written): returns EG_ADMIN_DEFERRED then, else
 * appends JSON to out and returns the HTTP status. */
int eg_gw_overrides_request(eg_gw *gw, int method, const char *path, const char *body, size_t len,
                            struct evbuffer *out);
/* Adjusts a DLQ or quarantine decision d of r to the flood guard: while the
 * source topic's guard is tripped it becomes a hold (or a stop) with reason
 * dlq_guard; any other decision is left alone. */
void eg_gw_guard_adjust(eg_gw *gw, const eg_record *r, eg_decision *d);
/* A stop decision on r: returns 0 when the gateway is to stop (on_stop =
 * "exit", or while shutting down anyway), or 1 when it waits for an
 * operator's resume (on_stop = "wait"; gw->waiting set, logged: the caller
 * pauses the partitions). */
int eg_gw_stop_wait(eg_gw *gw, const eg_record *r);
/* An operator's reset of the flood guards (POST /dlq-guard/reset; body: a
 * form with an optional `by`): written to the audit topic, so every
 * instance of the group re-arms its tripped guards when it reads it, and
 * answered (EG_ADMIN_DEFERRED) once read back here with how many this
 * instance re-armed; else 503 with out. */
int eg_gw_guard_reset(eg_gw *gw, const char *body, size_t len, struct evbuffer *out);
/* Readiness of the incident controls: 0 with why while waiting after a stop
 * or while a flood guard is tripped, else 1. */
int eg_gw_incident_ready(eg_gw *gw, char *why, size_t whylen);
/* The scrape-time series of the incident controls. */
void eg_gw_incident_metrics(eg_gw *gw, struct evbuffer *out);

/* gw_claims.c: with a control key, takes errgate.id and original.* away
 * from r, read from p, when they are not signed by an errgate replay
 * (provenance.h); r's headers are read (eg_record_read_headers) before. */
void eg_gw_check_claims(eg_gw *gw, const eg_part *p, eg_record *r);

/* gw_topics.c */

/* Makes sure every lane, rung and (inbox mode) state topic of the source
 * topics exists, creating a missing one with its source's partition count
 * (state topics compacted); says what it could not do. Call after
 * eg_gw_rungs_sync, before the loop runs. */
void eg_gw_topics_ensure(eg_gw *gw);

/* gw_rungs.c */

/* Adds the rung topics of the current policy (one per source topic and
 * rung) and updates the delays of known ones. Returns 1 when topics were
 * added (the subscription must be renewed), else 0. */
int eg_gw_rungs_sync(eg_gw *gw);
/* Subscribes to the source topics and every rung topic. Returns 0 or -1. */
int eg_gw_subscribe(eg_gw *gw, char *err, size_t errlen);
/* True when rung topic k is a source's replay rung (inbox mode: rung
 * EG_REPLAY_RUNG, where replay decisions wait until due). */
int eg_gw_rung_is_replay(const eg_gw *gw, int k);
#define EG_REPLAY_RUNG "replay"
/* The rung topic index of `topic`, or -1 for a source topic. */
int eg_gw_rung_of(const eg_gw *gw, const char *topic);
/* The rung named rung of source topic origin that the gateway consumes
 * (index into gw->rts), or -1. */
int eg_gw_rung_slot(const eg_gw *gw, const char *rung, const char *origin);
/* When r (consumed from rung partition p) is due, in wall-clock ms: its
 * timestamp plus the rung's current delay, or its errgate.not-before when
 * that is later, capped at timestamp + not_before_max_ms (logged); a
 * timestamp more than that cap ahead of now is ignored (due at once). */
int64_t eg_gw_rung_due(const eg_gw *gw, const eg_part *p, const eg_record *r, int64_t now);
void eg_gw_rungs_free(eg_gw *gw);

/* gw_run.c */

/* Builds the gateway of config cfg (borrowed: it must outlive gw) into gw:
 * metrics, breaker, retry budget, policy, target, lanes, spill journal,
 * incident controls, admin endpoint, the consumer (not subscribed: see
 * eg_gw_subscribe), the commit and poll timers. target NULL builds the
 * configured one (target.h); any other target is taken (freed by
 * eg_gw_close, also when this fails) and wired to the gateway: its base,
 * done and done_arg are set here. Returns 0, or -1 with err; either way
 * eg_gw_close frees what was built. Runs on the thread that will run the
 * loop. */
int eg_gw_open(eg_gw *gw, eg_config *cfg, eg_target *target, char *err, size_t errlen);
/* Frees everything eg_gw_open built, in dependency order (whatever part of
 * it exists); not cfg. */
void eg_gw_close(eg_gw *gw);

/* gw_admin.c */

/* Builds the metrics registry and the families the loop updates. */
void eg_gw_metrics_new(eg_gw *gw);
/* Breaker transition hook: logs and counts. */
void eg_gw_on_breaker(void *gw, const eg_breaker *b, eg_breaker_state from, eg_breaker_state to, int64_t now_ms);
/* The admin control endpoints (eg_admin_ops.control): POST /resume,
 * POST /dlq-guard/reset, /overrides (eg_gw_overrides_request) and GET
 * /shadow (eg_shadow_json; 404 without a shadow_policy). */
int eg_gw_control(void *gw, int method, const char *path, const char *body, size_t len, struct evbuffer *out);
/* Starts the admin endpoint when the config has one. Returns 0 or -1 with err. */
int eg_gw_admin_start(eg_gw *gw, char *err, size_t errlen);
/* librdkafka statistics callback (consumer lag and fetch state per
 * partition, then the fetch watch). */
int eg_gw_on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque);
/* The end-of-run summary log line, read from the metrics registry. */
void eg_gw_log_summary(eg_gw *gw);

/* gw_reload.c */

/* The one reload path (SIGHUP, file change, POST /reload): starts building
 * the policy file afresh off the loop, or, while a build runs, asks for one
 * more after it. Never waits. When the build that serves this request ends
 * (swapped in, or refused and the old policy kept), done(req, rc, err) runs
 * on the loop (done may be NULL). On success the rung topics follow the new
 * policy. */
void eg_gw_reload_request(void *gw, const char *trigger, eg_admin_reload_done done, void *req);
/* Ends reloading: joins a running build (bounded by the load budget), drops
 * its result and answers every waiter with an error. Call before the admin
 * endpoint is freed. */
void eg_gw_reload_stop(eg_gw *gw);
/* Sets up the reloader and starts watching the policy file (a change
 * reloads it). */
void eg_gw_watch_start(eg_gw *gw);
/* SIGHUP: the shared reload path. */
void eg_gw_on_sighup(evutil_socket_t sig, short what, void *arg);

/* gw_txn.c: lanes.transactional (the file comment says how). States of a
 * record's lane write in eg_fail.txn: */
enum { EG_TXW_NONE = 0, EG_TXW_WAIT, EG_TXW_WRITING, EG_TXW_REPORTED, EG_TXW_ORPHAN };
/* After the lanes are up: gw->txn.on follows the lane producer. */
void eg_gw_txn_start(eg_gw *gw);
/* r (its failure decided to a lane write; no longer active) waits for the
 * next transaction; its offset is finished in its tracker now. */
void eg_gw_txn_wait(eg_gw *gw, eg_record *r);
/* r is being freed: it leaves the waiting list (no-op unless EG_RS_LANE_TXN). */
void eg_gw_txn_unlink(eg_gw *gw, eg_record *r);
/* The delivery report of r (r->fail->txn set). Returns 1 when the caller
 * abandons r (its transaction aborted and its partition was revoked or the
 * gateway stops), else 0 (r stays with gw_txn.c). */
int eg_gw_txn_on_done(eg_gw *gw, eg_record *r, rd_kafka_resp_err_t err);
/* One transaction: the waiting records below offsets' entries, then the
 * offsets, committed. EG_TXN_OK: gw->txn.open[0..nopen) are written and
 * committed (the caller settles them and sets nopen to 0); otherwise they
 * wait again (or when reported) and nothing moved. Logged. */
eg_txn_result eg_gw_txn_run(eg_gw *gw, const rd_kafka_topic_partition_list_t *offsets);
/* Frees what gw->txn holds (the records are the gateway's). */
void eg_gw_txn_free(eg_gw *gw);

#endif
