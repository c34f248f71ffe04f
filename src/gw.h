/* gw.h — the gateway's internal state, shared by the files of `errgate run`
 * (gateway.c: the loop, records, decisions, lanes, commits; gw_admin.c:
 * metrics, admin views, statistics and the reload path). Nothing outside
 * those files includes it.
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
#include "breaker.h"
#include "budget.h"
#include "config.h"
#include "kconf.h"
#include "keyset.h"
#include "lanes.h"
#include "metrics.h"
#include "policy.h"
#include "record.h"
#include "spill.h"
#include "target.h"
#include "tracker.h"

/* Why a partition is paused. Backlog is not a reason: a partition with too
 * many unfinished records is simply not drained (see drain_partitions), so
 * librdkafka's prefetch stays and fetching resumes without a round trip. */
enum {
    PAUSE_HOLD = 1 << 0,
    PAUSE_RETRY = 1 << 1,  /* in-place retry under partition ordering */
    PAUSE_LANE = 1 << 2,   /* a lane write is failing */
    PAUSE_STOP = 1 << 3,
    PAUSE_DUE = 1 << 4,    /* a rung partition's head record is not due yet */
};

#define LANE_BACKOFF_MIN_MS 100
#define LANE_BACKOFF_MAX_MS 5000
#define POLL_BUDGET 1000     /* messages taken per loop pass, over all partitions */
#define POLL_TICK_MS 1000    /* keep polling (group membership) even when idle */

struct eg_gw;
typedef struct eg_gw_reloader eg_gw_reloader; /* gw_reload.c */

/* A retry rung topic the gateway consumes: one per source topic and rung
 * name. Rungs are never forgotten while the process runs (records may sit
 * in a rung a reload removed); a rung the policy no longer names keeps its
 * last delay. */
typedef struct eg_rungtopic {
    char *topic;         /* e.g. "payments.retry.30s" */
    char *origin;        /* the source topic, e.g. "payments" */
    char rung[40];       /* the rung's name */
    int64_t delay_ms;    /* current delay */
} eg_rungtopic;

typedef struct eg_part {
    char *topic;
    int32_t partition;
    int rung;            /* index into gw->rts for a rung partition, -1 for a source */
    const char *origin;  /* the source topic lanes expand with (owned by gw or = topic) */
    int due_wait;        /* paused until the head record is due */
    struct event *due_ev;
    int refs;            /* the assignment + each record */
    int revoked;
    eg_tracker trk;
    eg_record *pend_head, *pend_tail;
    int active;          /* records RUNNABLE, IN_TARGET or WAIT_RETRY */
    int unfinished;      /* records alive */
    int holding;
    int retry_wait;      /* in-place retries waiting under partition ordering */
    int lane_failing;
    unsigned pause;      /* reasons applied */
    int paused;          /* state applied to the consumer */
    rd_kafka_queue_t *q; /* the partition's own message queue */
    int blocked;         /* draining stopped at a cap; resume below half of it */
    int tracker_full;    /* draining stopped at source.max_tracked offsets tracked */
    int64_t committed;   /* last committed offset, -1 none */
    eg_keyset keys;      /* active keys (ordering = key) */
    uint64_t *received;  /* metric counters of the topic (registry-owned) */
    uint64_t *processed;
    int64_t consumer_lag; /* from librdkafka statistics, -1 unknown */
    struct eg_gw *gw;    /* the owner, for timer callbacks */
    struct eg_part *next;
} eg_part;

typedef struct eg_stats {
    int64_t received, succeeded_first, succeeded_retry, failures, retries, holds;
    int64_t dlq, quarantined, laddered, spilled, ignored, stops, policy_errors, lane_failures;
    int64_t commits, commit_failures;
    int64_t first_ms, last_ms;
} eg_stats;

/* The registry's families and unlabelled counters the loop bumps. */
typedef struct eg_gw_metrics {
    eg_family *received, *processed, *failed, *dead, *quarantined, *laddered, *spilled, *lane_failures;
    eg_family *decision_seconds, *target_seconds, *reloads, *breaker_transitions;
    eg_family *lane_refusals, *lane_stubs; /* by lane and error; by lane */
    uint64_t *succeeded, *retried, *exhausted, *ignored, *held, *fallbacks, *stops;
    uint64_t *commits, *commit_failures;
    uint64_t *bad_ids, *tracker_full, *excluded_topics;
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
    eg_spill *spill;         /* the spill journal (lanes.spill), or NULL */
    eg_spill_drain *drain;   /* its drainer */
    eg_breaker breaker;      /* the target's circuit breaker */
    eg_budget budget;        /* the target's retry budget */
    eg_policy *policy;
    eg_part *parts;
    eg_record *runq_head, *runq_tail;
    eg_record *all;          /* every live record */
    int unfinished;
    int blocked;             /* draining stopped at the total cap */
    int dispatching, dispatch_again; /* dispatch() trampoline */
    struct event *poll_ev;
    int stopping;
    int closed;
    int exit_code;
    int64_t drain_deadline_ms;
    eg_stats st;
    eg_registry *reg;
    eg_gw_metrics m;
    eg_admin *admin;
    pthread_t loop_thread;
    int assigned_once;       /* the group gave us an assignment (maybe empty) */
    int lane_failing;        /* records whose lane write is failing */
    int64_t lane_failing_since_ms; /* when lane_failing went above 0, 0 when 0 */
    eg_rungtopic *rts;       /* rung topics consumed (see eg_rungtopic) */
    int nrts;
    struct event *watch_ev;  /* policy file watch */
    int64_t policy_mtime_ns; /* last seen modification time and size of the file */
    int64_t policy_size;
    char last_reload_error[512];   /* "" after a good reload or none */
    int64_t last_reload_ms;        /* wall-clock ms of the last attempt, 0 none */
    eg_gw_reloader *reloader;      /* policy builds off the loop, NULL before the first */
} eg_gw;

/* gateway.c */

/* The assigned partition topic[partition], or NULL. */
eg_part *eg_gw_part_find(eg_gw *gw, const char *topic, int32_t partition);

/* Rung delays changed: every rung partition waiting for its head record
 * re-computes when that is due (and resumes if it is now). */
void eg_gw_rungs_recheck(eg_gw *gw);

/* gw_rungs.c */

/* Adds the rung topics of the current policy (one per source topic and
 * rung) and updates the delays of known ones. Returns 1 when topics were
 * added (the subscription must be renewed), else 0. */
int eg_gw_rungs_sync(eg_gw *gw);
/* Subscribes to the source topics and every rung topic. Returns 0 or -1. */
int eg_gw_subscribe(eg_gw *gw, char *err, size_t errlen);
/* The rung topic index of `topic`, or -1 for a source topic. */
int eg_gw_rung_of(const eg_gw *gw, const char *topic);
/* When r (consumed from rung partition p) is due, in wall-clock ms: its
 * timestamp plus the rung's current delay, or its errgate.not-before when
 * that is later, capped at timestamp + not_before_max_ms (logged); a
 * timestamp more than that cap ahead of now is ignored (due at once). */
int64_t eg_gw_rung_due(const eg_gw *gw, const eg_part *p, const eg_record *r, int64_t now);
void eg_gw_rungs_free(eg_gw *gw);

/* gw_admin.c */

/* Builds the metrics registry and the families the loop updates. */
void eg_gw_metrics_new(eg_gw *gw);
/* Breaker transition hook: logs and counts. */
void eg_gw_on_breaker(void *gw, const eg_breaker *b, eg_breaker_state from, eg_breaker_state to, int64_t now_ms);
/* Starts the admin endpoint when the config has one. Returns 0 or -1 with err. */
int eg_gw_admin_start(eg_gw *gw, char *err, size_t errlen);
/* librdkafka statistics callback (consumer lag per partition). */
int eg_gw_on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque);
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
/* Starts watching the policy file (a change reloads it). */
void eg_gw_watch_start(eg_gw *gw);
#define EG_POLICY_WATCH_MS 1000
/* SIGHUP: the shared reload path. */
void eg_gw_on_sighup(evutil_socket_t sig, short what, void *arg);
/* The end-of-run summary log line. */
void eg_gw_log_summary(eg_gw *gw);

#endif
