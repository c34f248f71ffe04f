/* gateway.c — `errgate run`: consume, call the target, ask the policy, write
 * lanes, commit contiguous prefixes.
 *
 * One libevent loop owns everything here. librdkafka's consumer queue (group
 * events, with the main queue forwarded into it), each assigned partition's
 * own message queue, and the lane producer's queue signal the loop through
 * rd_kafka_queue_io_event_enable pipes; the loop takes one message at a time
 * (no consume_batch: with pause/resume it loses or repeats messages in
 * librdkafka 2.0.2), a fair share per partition per pass. Delays are libevent
 * timers; a waiting partition is a paused partition, and a poll tick keeps
 * polling when nothing else wakes the loop, so group membership never
 * suffers from a long retry or hold.
 *
 * A record moves PENDING (its partition's queue) -> RUNNABLE (eligible under
 * the ordering) -> IN_TARGET -> done, or -> WAIT_RETRY -> RUNNABLE again, or
 * -> LANE_WRITE (-> LANE_BACKOFF -> LANE_WRITE ...) -> done. "Done" marks its
 * offset finished in the partition's tracker, and only then: a lane write is
 * done by its delivery report, never by being queued. Commits take the
 * tracker's contiguous prefix: periodically (async), on revoke and at
 * shutdown (sync).
 *
 * Ordering: "partition" lets one record of a partition be active (runnable,
 * in the target or waiting to retry) at a time; "key" lets one record per key
 * be active (records without a key are free); "none" lets all go.
 *
 * Bounded memory: a partition at its in-flight cap (or any partition while
 * the gateway is at its total cap) is simply not drained until it is down to
 * half of it; librdkafka stops prefetching when the partition's queue holds
 * queued.min.messages (errgate's default: 20,000) or queued.max.messages.kbytes
 * (default 4 MiB). Pausing is for waiting: a partition is paused while any
 * reason holds (a record on hold, an in-place retry under partition
 * ordering, a failing lane write, stopping) and resumed when none does.
 *
 * Ownership: the gateway owns every record; a target or the lanes borrow one
 * for one operation. A revoked partition's records are freed at once unless
 * borrowed; borrowed ones are freed when they come back, without touching
 * the (dead) partition's offsets. A partition struct lives while its
 * assignment or any record refers to it.
 *
 * Observability: the admin endpoint (admin.h) runs on the same event base,
 * so its handlers read the loop's state between two events without locks.
 * Counters live in a metrics registry (metrics.h) owned here; per-record
 * paths bump plain integers through pointers cached in the partition, and
 * labelled series are looked up only on failure paths. Gauges (in-flight,
 * lags, readiness) are computed at scrape time. Consumer lag comes from
 * librdkafka's statistics, served by the consumer poll on this thread.
 * POST /reload and SIGHUP share one reload path (do_reload). */
#include "admin.h"
#include "cli.h"
#include "config.h"
#include "keyset.h"
#include "lanes.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "redact.h"
#include "record.h"
#include "target.h"
#include "tracker.h"
#include "util.h"

#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Why a partition is paused. Backlog is not a reason: a partition with too
 * many unfinished records is simply not drained (see drain_partitions), so
 * librdkafka's prefetch stays and fetching resumes without a round trip. */
enum {
    PAUSE_HOLD = 1 << 0,
    PAUSE_RETRY = 1 << 1,  /* in-place retry under partition ordering */
    PAUSE_LANE = 1 << 2,   /* a lane write is failing */
    PAUSE_STOP = 1 << 3,
};

#define LANE_BACKOFF_MIN_MS 100
#define LANE_BACKOFF_MAX_MS 5000
#define POLL_BUDGET 1000     /* messages taken per loop pass, over all partitions */
#define POLL_TICK_MS 1000    /* keep polling (group membership) even when idle */

struct eg_gw;

typedef struct eg_part {
    char *topic;
    int32_t partition;
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
    int64_t dlq, quarantined, ignored, stops, policy_errors, lane_failures;
    int64_t commits, commit_failures;
    int64_t first_ms, last_ms;
} eg_stats;

/* The registry's families and unlabelled counters the loop bumps. */
typedef struct eg_gw_metrics {
    eg_family *received, *processed, *failed, *dead, *quarantined, *lane_failures;
    eg_family *decision_seconds, *target_seconds, *reloads;
    uint64_t *succeeded, *retried, *exhausted, *ignored, *held, *fallbacks, *stops;
    uint64_t *commits, *commit_failures;
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
    char last_reload_error[512];   /* "" after a good reload or none */
    int64_t last_reload_ms;        /* wall-clock ms of the last attempt, 0 none */
} eg_gw;

/* ------------------------------------------------------------------ lists */

static void q_append(eg_record **head, eg_record **tail, eg_record *r) {
    r->qnext = NULL;
    r->qprev = *tail;
    if (*tail) (*tail)->qnext = r;
    else *head = r;
    *tail = r;
}

static void q_remove(eg_record **head, eg_record **tail, eg_record *r) {
    if (r->qprev) r->qprev->qnext = r->qnext;
    else *head = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev;
    else *tail = r->qprev;
    r->qnext = r->qprev = NULL;
}

/* ------------------------------------------------------------- partitions */

static eg_part *part_find(eg_gw *gw, const char *topic, int32_t partition) {
    for (eg_part *p = gw->parts; p; p = p->next)
        if (p->partition == partition && strcmp(p->topic, topic) == 0) return p;
    return NULL;
}

static void part_unref(eg_part *p) {
    if (--p->refs > 0) return;
    eg_tracker_free(&p->trk);
    eg_keyset_free(&p->keys);
    free(p->topic);
    free(p);
}

static void log_pause(eg_part *p, const char *event, unsigned reasons) {
    static const char *const names[] = {"hold", "retry", "lane", "stop"};
    char why[96] = "";
    for (int i = 0; i < 4; i++)
        if (reasons & (1u << i)) {
            if (why[0]) strcat(why, ",");
            strcat(why, names[i]);
        }
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, event)) return;
    eg_log_str(&l, "topic", p->topic);
    eg_log_int(&l, "partition", p->partition);
    eg_log_str(&l, "reasons", why);
    eg_log_end(&l);
}

/* Recomputes the pause reasons of p and applies a change to the consumer. */
static void part_update_pause(eg_gw *gw, eg_part *p) {
    if (p->revoked || gw->closed) return;
    unsigned m = (p->holding ? PAUSE_HOLD : 0) | (p->retry_wait ? PAUSE_RETRY : 0) |
                 (p->lane_failing ? PAUSE_LANE : 0) | (gw->stopping ? PAUSE_STOP : 0);
    int want = m != 0;
    unsigned old = p->pause;
    p->pause = m;
    if (want == p->paused) return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
    rd_kafka_resp_err_t err = want ? rd_kafka_pause_partitions(gw->rk, l)
                                   : rd_kafka_resume_partitions(gw->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        eg_log_msg(EG_WARN, want ? "pause_failed" : "resume_failed", "%s[%d]: %s", p->topic,
                   (int)p->partition, rd_kafka_err2str(err));
        return;
    }
    p->paused = want;
    log_pause(p, want ? "pause" : "resume", want ? m : old);
}

/* True when p may take more records from its queue: under both in-flight
 * caps and not paused. */
static int part_has_room(eg_gw *gw, eg_part *p) {
    return !p->revoked && !p->paused && p->q && p->unfinished < gw->cfg->max_inflight &&
           gw->unfinished < gw->cfg->max_inflight_total;
}

/* A record of p left: if p (or the gateway) had stopped draining at a cap
 * and is now well below it, schedule a drain. */
static void maybe_unblock(eg_gw *gw, eg_part *p) {
    if ((p->blocked && p->unfinished <= gw->cfg->max_inflight / 2) ||
        (gw->blocked && gw->unfinished <= gw->cfg->max_inflight_total / 2)) {
        p->blocked = 0;
        gw->blocked = 0;
        if (!gw->closed) event_active(gw->cev, EV_READ, 0);
    }
}

/* --------------------------------------------------------------- records */

static int is_active(const eg_record *r) {
    return r->state == EG_RS_RUNNABLE || r->state == EG_RS_IN_TARGET || r->state == EG_RS_WAIT_RETRY;
}

static void leave_active(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->active--;
    if (gw->cfg->ordering == EG_ORDER_KEY) eg_keyset_dec(&p->keys, r->key_hash);
}

static void unhold(eg_record *r) {
    if (r->holding) {
        r->holding = 0;
        r->part->holding--;
    }
}

/* Frees a record that is not borrowed, undoing every count it holds. Its
 * offset is not marked finished (see finish_record for that). */
static void free_record(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    if (r->state == EG_RS_PENDING) q_remove(&p->pend_head, &p->pend_tail, r);
    if (r->state == EG_RS_RUNNABLE) q_remove(&gw->runq_head, &gw->runq_tail, r);
    if (is_active(r)) leave_active(gw, r);
    unhold(r);
    if (r->state == EG_RS_WAIT_RETRY && gw->cfg->ordering == EG_ORDER_PARTITION &&
        r->decision.action == EG_ACT_RETRY)
        p->retry_wait--;
    if (r->lane_failing) {
        p->lane_failing--;
        if (--gw->lane_failing == 0) gw->lane_failing_since_ms = 0;
    }
    if (r->aprev) r->aprev->anext = r->anext;
    else gw->all = r->anext;
    if (r->anext) r->anext->aprev = r->aprev;
    if (r->timer) event_free(r->timer);
    eg_failure_clear(&r->failure);
    rd_kafka_message_destroy(r->msg);
    p->unfinished--;
    gw->unfinished--;
    free(r);
    part_update_pause(gw, p);
    maybe_unblock(gw, p);
    part_unref(p);
}

static void pump(eg_gw *gw, eg_part *p);
static void dispatch(eg_gw *gw);

/* The record has a durable outcome: mark its offset finished, free it, and
 * let its partition move on. */
static void finish_record(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->refs++; /* keep p across free_record */
    if (!p->revoked) eg_tracker_finish(&p->trk, r->seq);
    (*p->processed)++;
    gw->st.last_ms = eg_now_ms();
    free_record(gw, r);
    pump(gw, p);
    part_unref(p);
    dispatch(gw);
}

/* Drops a record without an outcome (revoked partition, shutdown): it will
 * be consumed again by whoever owns the partition next. */
static void abandon_record(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->refs++;
    free_record(gw, r);
    pump(gw, p);
    part_unref(p);
}

static void make_runnable(eg_gw *gw, eg_record *r) {
    r->state = EG_RS_RUNNABLE;
    q_append(&gw->runq_head, &gw->runq_tail, r);
}

/* Moves the records of p that the ordering allows into the run queue. */
static void pump(eg_gw *gw, eg_part *p) {
    if (p->revoked || gw->stopping || p->holding) return;
    eg_record *r = p->pend_head;
    while (r) {
        eg_record *next = r->qnext;
        int ok;
        switch (gw->cfg->ordering) {
        case EG_ORDER_PARTITION: ok = p->active == 0; break;
        case EG_ORDER_KEY: ok = eg_keyset_get(&p->keys, r->key_hash) == 0; break;
        default: ok = 1; break;
        }
        if (ok) {
            q_remove(&p->pend_head, &p->pend_tail, r);
            p->active++;
            if (gw->cfg->ordering == EG_ORDER_KEY) eg_keyset_inc(&p->keys, r->key_hash);
            make_runnable(gw, r);
        } else if (gw->cfg->ordering == EG_ORDER_PARTITION) {
            break;
        }
        r = next;
    }
}

/* Hands runnable records to the target while it has capacity, then lets a
 * synchronous target deliver its results. Completions call dispatch again;
 * a nested call only asks the running one for another round, so a chain of
 * records (partition ordering) is a loop, not a recursion. */
static void dispatch_round(eg_gw *gw);
static void dispatch(eg_gw *gw) {
    if (gw->dispatching) {
        gw->dispatch_again = 1;
        return;
    }
    gw->dispatching = 1;
    do {
        gw->dispatch_again = 0;
        dispatch_round(gw);
        if (gw->target->ops->flush) gw->target->ops->flush(gw->target);
    } while (gw->dispatch_again);
    gw->dispatching = 0;
}

static void dispatch_round(eg_gw *gw) {
    while (gw->runq_head && !gw->stopping && gw->target->ops->available(gw->target) > 0) {
        eg_record *r = gw->runq_head;
        q_remove(&gw->runq_head, &gw->runq_tail, r);
        r->state = EG_RS_IN_TARGET;
        r->attempt++;
        if (gw->target->ops->submit(gw->target, r) != 0) {
            r->attempt--;
            r->state = EG_RS_RUNNABLE;
            r->qnext = gw->runq_head;
            if (gw->runq_head) gw->runq_head->qprev = r;
            else gw->runq_tail = r;
            gw->runq_head = r;
            break;
        }
    }
}

/* ------------------------------------------------------------- decisions */

static void log_decision(eg_gw *gw, eg_record *r, const char *lane_topic) {
    const eg_decision *d = &r->decision;
    eg_level lv = d->fallback || d->action == EG_ACT_STOP ? EG_WARN : EG_INFO;
    eg_logline l;
    if (!eg_log_begin(&l, lv, "decision")) return;
    char id[320];
    eg_record_id(r, id, sizeof id);
    eg_log_str(&l, "topic", r->topic);
    eg_log_int(&l, "partition", r->partition);
    eg_log_int(&l, "offset", r->offset);
    eg_log_str(&l, "id", id);
    if (r->msg->key) {
        char kh[20];
        snprintf(kh, sizeof kh, "%016llx",
                 (unsigned long long)eg_hash64(r->msg->key, r->msg->key_len));
        eg_log_str(&l, "key_hash", kh);
    } else {
        eg_log_null(&l, "key_hash");
    }
    eg_log_str(&l, "kind", eg_failure_kind_name(r->failure.kind));
    if (r->failure.status) eg_log_int(&l, "status", r->failure.status);
    eg_log_str(&l, "class", d->klass);
    eg_log_str(&l, "code", d->code);
    eg_log_str(&l, "action", eg_action_name(d->action));
    eg_log_str(&l, "reason", d->reason);
    eg_log_int(&l, "attempt", r->attempt);
    if (lane_topic) eg_log_str(&l, "lane", lane_topic);
    else eg_log_null(&l, "lane");
    if (d->action == EG_ACT_RETRY || d->action == EG_ACT_HOLD) eg_log_int(&l, "delay_ms", d->delay_ms);
    eg_log_str(&l, "policy", eg_policy_id(gw->policy));
    eg_log_int(&l, "latency_ms", r->failure.latency_ms);
    if (d->fallback) {
        eg_log_int(&l, "fallback", 1);
        eg_log_str(&l, "error", d->message);
    }
    eg_log_end(&l);
}

static void on_timer(evutil_socket_t fd, short what, void *arg);
static void lane_write(eg_gw *gw, eg_record *r);

static void arm_timer(eg_gw *gw, eg_record *r, int64_t ms) {
    if (!r->timer) r->timer = evtimer_new(gw->base, on_timer, r);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(r->timer, &tv);
}

static void begin_stop(eg_gw *gw, int code, const char *why);

/* The target failed r: ask the policy and carry the decision out. */
static void decide(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    int64_t now = eg_now_ms();
    if (!r->first_failure_ms) r->first_failure_ms = now;
    eg_ctx ctx = {.attempt = r->attempt,
                  .last_class = r->class_attempts ? r->decision.klass : NULL,
                  .class_attempts = r->class_attempts,
                  .ordering = gw->cfg->ordering,
                  .now_ms = now,
                  .first_failure_ms = r->first_failure_ms,
                  .last_delay_ms = r->class_attempts ? r->decision.delay_ms : 0};
    eg_decision d;
    int64_t t0 = eg_now_ns();
    eg_policy_decide(gw->policy, &r->failure, r, &ctx, &d);
    eg_hist_observe(eg_histogram(gw->m.decision_seconds, NULL), (double)(eg_now_ns() - t0) / 1e9);
    if (d.action == EG_ACT_LADDER) {
        /* Retry ladders need rung topics, which this version does not run. */
        char why[256];
        snprintf(why, sizeof why, "ladder decision (class %s) is not available; holding", d.klass);
        memset(&d, 0, sizeof d);
        d.action = EG_ACT_HOLD;
        d.fallback = 1;
        d.delay_ms = 1000;
        eg_strlcpy(d.klass, "policy_error", sizeof d.klass);
        eg_strlcpy(d.code, "ladder_unavailable", sizeof d.code);
        eg_strlcpy(d.reason, "policy_error", sizeof d.reason);
        eg_strlcpy(d.message, why, sizeof d.message);
    }
    if (d.fallback) {
        gw->st.policy_errors++;
        (*gw->m.fallbacks)++;
    }
    {
        const char *fv[2] = {d.klass, d.code};
        (*eg_counter(gw->m.failed, fv))++;
        if (strcmp(d.reason, "exhausted") == 0) (*gw->m.exhausted)++;
    }
    r->class_attempts = r->class_attempts && strcmp(d.klass, r->decision.klass) == 0 ? r->class_attempts + 1 : 1;
    r->decision = d;
    gw->st.failures++;

    switch (d.action) {
    case EG_ACT_RETRY:
    case EG_ACT_HOLD:
        log_decision(gw, r, NULL);
        if (gw->stopping) {
            abandon_record(gw, r);
            return;
        }
        r->state = EG_RS_WAIT_RETRY;
        if (d.action == EG_ACT_RETRY) {
            gw->st.retries++;
            (*gw->m.retried)++;
            unhold(r);
            if (gw->cfg->ordering == EG_ORDER_PARTITION) p->retry_wait++;
        } else {
            gw->st.holds++;
            (*gw->m.held)++;
            if (!r->holding) {
                r->holding = 1;
                p->holding++;
            }
        }
        part_update_pause(gw, p);
        arm_timer(gw, r, d.delay_ms);
        pump(gw, p); /* a hold that became a retry frees the partition's queue */
        return;
    case EG_ACT_DLQ:
    case EG_ACT_QUARANTINE:
        unhold(r);
        leave_active(gw, r);
        log_decision(gw, r,
                     eg_lanes_topic(gw->lanes, d.action == EG_ACT_DLQ ? EG_LANE_DLQ : EG_LANE_QUARANTINE, r->topic));
        lane_write(gw, r);
        pump(gw, p);
        return;
    case EG_ACT_IGNORE:
        log_decision(gw, r, NULL);
        unhold(r);
        leave_active(gw, r);
        r->state = EG_RS_STOPPED; /* not active, not queued: free_record undoes nothing more */
        gw->st.ignored++;
        (*gw->m.ignored)++;
        finish_record(gw, r);
        return;
    case EG_ACT_STOP:
    default:
        log_decision(gw, r, NULL);
        leave_active(gw, r);
        r->state = EG_RS_STOPPED;
        gw->st.stops++;
        (*gw->m.stops)++;
        begin_stop(gw, 3, "the policy decided stop");
        return;
    }
}

static void on_target_done(eg_record *r, eg_failure *f, int cancelled, void *arg) {
    eg_gw *gw = arg;
    if (cancelled || r->part->revoked) {
        if (f) eg_failure_clear(f);
        abandon_record(gw, r);
        dispatch(gw);
        return;
    }
    if (!f) {
        if (r->attempt == 1) gw->st.succeeded_first++;
        else gw->st.succeeded_retry++;
        (*gw->m.succeeded)++;
        unhold(r);
        finish_record(gw, r);
        return;
    }
    eg_failure_clear(&r->failure);
    r->failure = *f; /* takes the strings */
    decide(gw, r);
    dispatch(gw);
}

/* ----------------------------------------------------------------- lanes */

static void lane_failed(eg_gw *gw, eg_record *r, rd_kafka_resp_err_t err) {
    eg_part *p = r->part;
    gw->st.lane_failures++;
    if (!r->lane_failing) {
        r->lane_failing = 1;
        p->lane_failing++;
        if (gw->lane_failing++ == 0) gw->lane_failing_since_ms = eg_now_ms();
        part_update_pause(gw, p);
    }
    r->lane_attempts++;
    int shift = r->lane_attempts - 1 < 6 ? r->lane_attempts - 1 : 6;
    int64_t delay = (int64_t)LANE_BACKOFF_MIN_MS << shift;
    if (delay > LANE_BACKOFF_MAX_MS) delay = LANE_BACKOFF_MAX_MS;
    eg_lane lane = r->decision.action == EG_ACT_DLQ ? EG_LANE_DLQ : EG_LANE_QUARANTINE;
    const char *lv[1] = {eg_lanes_topic(gw->lanes, lane, r->topic)};
    (*eg_counter(gw->m.lane_failures, lv))++;
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "lane_write_failed")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_str(&l, "lane", eg_lanes_topic(gw->lanes, lane, r->topic));
        eg_log_str(&l, "error", rd_kafka_err2name(err));
        eg_log_int(&l, "lane_attempt", r->lane_attempts);
        eg_log_int(&l, "retry_in_ms", delay);
        eg_log_end(&l);
    }
    r->state = EG_RS_LANE_BACKOFF;
    arm_timer(gw, r, delay);
}

static void lane_write(eg_gw *gw, eg_record *r) {
    eg_lane lane = r->decision.action == EG_ACT_DLQ ? EG_LANE_DLQ : EG_LANE_QUARANTINE;
    r->state = EG_RS_LANE_WRITE;
    rd_kafka_resp_err_t err = eg_lanes_write(gw->lanes, r, lane, eg_policy_id(gw->policy));
    if (err) lane_failed(gw, r, err);
}

static void on_lane_done(eg_record *r, rd_kafka_resp_err_t err, void *arg) {
    eg_gw *gw = arg;
    if (r->part->revoked || (err && gw->stopping)) {
        abandon_record(gw, r);
        return;
    }
    if (err) {
        lane_failed(gw, r, err);
        return;
    }
    if (r->lane_failing) {
        eg_log_msg(EG_INFO, "lane_recovered", "%s[%d]@%lld written after %d failed attempts",
                   r->topic, (int)r->partition, (long long)r->offset, r->lane_attempts);
    }
    eg_lane lane = r->decision.action == EG_ACT_DLQ ? EG_LANE_DLQ : EG_LANE_QUARANTINE;
    const char *lv[2] = {eg_lanes_topic(gw->lanes, lane, r->topic), r->decision.reason};
    (*eg_counter(lane == EG_LANE_DLQ ? gw->m.dead : gw->m.quarantined, lv))++;
    if (r->decision.action == EG_ACT_DLQ) gw->st.dlq++;
    else gw->st.quarantined++;
    finish_record(gw, r);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    eg_record *r = arg;
    eg_part *p = r->part;
    eg_gw *gw = p->gw;
    /* timers only run on unborrowed records, which a revoke frees at once:
     * the partition here is always still assigned */
    if (r->state == EG_RS_LANE_BACKOFF) {
        lane_write(gw, r);
        return;
    }
    if (gw->stopping) {
        abandon_record(gw, r);
        return;
    }
    if (gw->cfg->ordering == EG_ORDER_PARTITION && r->decision.action == EG_ACT_RETRY) {
        p->retry_wait--;
        part_update_pause(gw, p);
    }
    make_runnable(gw, r);
    dispatch(gw);
}

/* --------------------------------------------------------------- commits */

/* Commits the finished prefix of every assigned partition that moved (or of
 * those in `only`, when given). Sync commits block the loop briefly: used
 * only on revoke and at shutdown. */
static void commit_offsets(eg_gw *gw, const rd_kafka_topic_partition_list_t *only, int sync) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (only && !rd_kafka_topic_partition_list_find(only, p->topic, p->partition)) continue;
        int64_t cp = eg_tracker_commit_point(&p->trk);
        if (cp < 0 || cp <= p->committed) continue;
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = cp;
    }
    if (l->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(l);
        return;
    }
    rd_kafka_resp_err_t err = rd_kafka_commit(gw->rk, l, !sync);
    if (sync) {
        if (err) {
            gw->st.commit_failures++;
            (*gw->m.commit_failures)++;
            eg_log_msg(EG_WARN, "commit_failed", "%s", rd_kafka_err2str(err));
        } else {
            for (int i = 0; i < l->cnt; i++) {
                eg_part *p = part_find(gw, l->elems[i].topic, l->elems[i].partition);
                if (p && l->elems[i].err == 0 && l->elems[i].offset > p->committed)
                    p->committed = l->elems[i].offset;
            }
            gw->st.commits++;
            (*gw->m.commits)++;
        }
    } else if (err) {
        gw->st.commit_failures++;
        (*gw->m.commit_failures)++;
        eg_log_msg(EG_WARN, "commit_failed", "%s", rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void on_commit_result(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *offsets, void *opaque) {
    eg_gw *gw = opaque;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
    if (err) {
        gw->st.commit_failures++;
        (*gw->m.commit_failures)++;
        eg_log_msg(EG_WARN, "commit_failed", "%s (retried at the next commit)", rd_kafka_err2str(err));
        return;
    }
    gw->st.commits++;
    (*gw->m.commits)++;
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        eg_part *p = part_find(gw, offsets->elems[i].topic, offsets->elems[i].partition);
        if (p && offsets->elems[i].err == 0 && offsets->elems[i].offset > p->committed)
            p->committed = offsets->elems[i].offset;
    }
}

static void on_commit_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    if (!gw->closed) commit_offsets(gw, NULL, 0);
}

/* ------------------------------------------------------------- rebalance */

static void assign_parts(eg_gw *gw, rd_kafka_topic_partition_list_t *parts) {
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (part_find(gw, tp->topic, tp->partition)) continue;
        eg_part *p = eg_xcalloc(1, sizeof *p);
        p->topic = eg_xstrdup(tp->topic);
        p->partition = tp->partition;
        p->refs = 1;
        p->gw = gw;
        p->committed = -1;
        p->consumer_lag = -1;
        const char *tv[1] = {p->topic};
        p->received = eg_counter(gw->m.received, tv);
        p->processed = eg_counter(gw->m.processed, tv);
        eg_tracker_init(&p->trk, (uint64_t)gw->cfg->max_inflight);
        p->next = gw->parts;
        gw->parts = p;
        eg_log_msg(EG_INFO, "assign", "%s[%d]", p->topic, (int)p->partition);
    }
    rd_kafka_resp_err_t err = rd_kafka_assign(gw->rk, parts);
    if (err) eg_log_msg(EG_ERROR, "assign_failed", "%s", rd_kafka_err2str(err));
    else gw->assigned_once = 1;
    /* each partition's messages go to its own queue, off the consumer queue
     * (librdkafka keeps it that way across fetch restarts), and wake the
     * loop through the same pipe */
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (!p->q && (p->q = rd_kafka_queue_get_partition(gw->rk, p->topic, p->partition))) {
            rd_kafka_queue_forward(p->q, NULL);
            rd_kafka_queue_io_event_enable(p->q, gw->cpipe[1], "1", 1);
        }
        part_update_pause(gw, p);
    }
    event_active(gw->cev, EV_READ, 0);
}

/* Drops the partition's queue reference (before the consumer is closed). */
static void part_release_queue(eg_part *p) {
    if (!p->q) return;
    rd_kafka_queue_io_event_enable(p->q, -1, NULL, 0);
    rd_kafka_queue_destroy(p->q);
    p->q = NULL;
}

/* Commits the finished prefix of the revoked partitions, drops their
 * unborrowed records, and forgets them. */
static void revoke_parts(eg_gw *gw, rd_kafka_topic_partition_list_t *parts) {
    commit_offsets(gw, parts, 1);
    for (int i = 0; i < parts->cnt; i++) {
        eg_part **pp = &gw->parts;
        while (*pp && !((*pp)->partition == parts->elems[i].partition &&
                        strcmp((*pp)->topic, parts->elems[i].topic) == 0))
            pp = &(*pp)->next;
        eg_part *p = *pp;
        if (!p) continue;
        *pp = p->next;
        p->revoked = 1;
        eg_log_msg(EG_INFO, "revoke", "%s[%d] committed=%lld", p->topic, (int)p->partition,
                   (long long)p->committed);
        eg_record *r = gw->all;
        while (r) {
            eg_record *next = r->anext;
            if (r->part == p && r->state != EG_RS_IN_TARGET && r->state != EG_RS_LANE_WRITE)
                free_record(gw, r);
            r = next;
        }
        part_release_queue(p);
        part_unref(p);
    }
    rd_kafka_assign(gw->rk, NULL);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    eg_gw *gw = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && !gw->closed) assign_parts(gw, parts);
    else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS || gw->closed) revoke_parts(gw, parts);
    else {
        eg_log_msg(EG_WARN, "rebalance_error", "%s", rd_kafka_err2str(err));
        rd_kafka_assign(rk, NULL);
    }
}

/* -------------------------------------------------------------- consumer */

static void on_message(eg_gw *gw, rd_kafka_message_t *m) {
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eg_log_msg(EG_WARN, "consumer_error", "%s%s%s", rd_kafka_err2str(m->err),
                       m->rkt ? " topic " : "", m->rkt ? rd_kafka_topic_name(m->rkt) : "");
        rd_kafka_message_destroy(m);
        return;
    }
    eg_part *p = part_find(gw, rd_kafka_topic_name(m->rkt), m->partition);
    uint64_t seq;
    if (!p || eg_tracker_add(&p->trk, m->offset, &seq) != 0) {
        /* not ours any more, or already seen: never count it twice */
        rd_kafka_message_destroy(m);
        return;
    }
    eg_record *r = eg_xcalloc(1, sizeof *r);
    r->msg = m;
    r->part = p;
    p->refs++;
    r->topic = p->topic;
    r->partition = p->partition;
    r->offset = m->offset;
    r->seq = seq;
    r->failure.retry_after_ms = -1;
    if (gw->cfg->ordering == EG_ORDER_KEY && m->key) r->key_hash = eg_hash64(m->key, m->key_len);
    r->anext = gw->all;
    if (gw->all) gw->all->aprev = r;
    gw->all = r;
    r->state = EG_RS_PENDING;
    q_append(&p->pend_head, &p->pend_tail, r);
    p->unfinished++;
    gw->unfinished++;
    gw->st.received++;
    (*p->received)++;
    if (!gw->st.first_ms) gw->st.first_ms = eg_now_ms();
    pump(gw, p);
}

/* Takes messages from the partitions' own queues, a fair share each, while
 * they have room. Returns 1 if some partition may still have more. */
static int drain_partitions(eg_gw *gw) {
    int nparts = 0, more = 0;
    for (eg_part *p = gw->parts; p; p = p->next) nparts++;
    int share = nparts ? POLL_BUDGET / nparts : 0;
    if (share < 64) share = 64;
    for (eg_part *p = gw->parts; p && !gw->closed; p = p->next) {
        int n = 0;
        while (n < share) {
            if (!part_has_room(gw, p)) {
                if (!p->paused && p->q) {
                    if (p->unfinished >= gw->cfg->max_inflight) p->blocked = 1;
                    else gw->blocked = 1;
                }
                break;
            }
            rd_kafka_message_t *m = rd_kafka_consume_queue(p->q, 0);
            if (!m) break;
            on_message(gw, m);
            n++;
        }
        if (n == share) more = 1;
        if (n) dispatch(gw);
    }
    return more;
}

/* The consumer's queues signalled (or the poll tick fired): serve group
 * events and commit results (rd_kafka_consumer_poll), then messages. */
static void on_consumer_queue(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    char buf[64];
    if (fd >= 0)
        while (read(fd, buf, sizeof buf) > 0) {}
    rd_kafka_message_t *m;
    for (int n = 0; !gw->closed && n < POLL_BUDGET && (m = rd_kafka_consumer_poll(gw->rk, 0)); n++)
        on_message(gw, m); /* errors; messages arrive on the partition queues */
    if (gw->closed) return;
    if (drain_partitions(gw)) event_active(gw->cev, EV_READ, 0); /* more may wait; let others run */
    dispatch(gw);
}

static void on_poll_tick(evutil_socket_t fd, short what, void *arg) {
    on_consumer_queue(-1, 0, arg);
}

static void on_consumer_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    eg_gw *gw = opaque;
    eg_log_msg(EG_WARN, "kafka_error", "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    if (err == RD_KAFKA_RESP_ERR__FATAL) begin_stop(gw, 1, "fatal consumer error");
}

/* -------------------------------------------------------------- shutdown */

static void finish_stop(eg_gw *gw) {
    if (gw->closed) return;
    if (gw->drain_ev) evtimer_del(gw->drain_ev);
    gw->target->ops->cancel_all(gw->target);
    eg_lanes_purge(gw->lanes, 2000);
    commit_offsets(gw, NULL, 1);
    gw->closed = 1;
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(gw->rk);
    if (err) eg_log_msg(EG_WARN, "close_failed", "%s", rd_kafka_err2str(err));
    event_base_loopbreak(gw->base);
}

static int busy(eg_gw *gw) {
    int n = gw->target->inflight + eg_lanes_outstanding(gw->lanes);
    for (eg_part *p = gw->parts; p; p = p->next) n += p->lane_failing;
    return n;
}

static void on_drain_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    if (busy(gw) == 0 || eg_now_ms() >= gw->drain_deadline_ms) {
        if (busy(gw)) eg_log_msg(EG_WARN, "shutdown_timeout", "%d operations abandoned", busy(gw));
        finish_stop(gw);
        return;
    }
    struct timeval tv = {0, 20000};
    evtimer_add(gw->drain_ev, &tv);
}

/* Stops taking new work; in-flight attempts and lane writes get
 * shutdown_timeout_ms to finish; then commit and close. */
static void begin_stop(eg_gw *gw, int code, const char *why) {
    if (code > gw->exit_code) gw->exit_code = code;
    if (gw->stopping) return;
    gw->stopping = 1;
    eg_log_msg(code ? EG_ERROR : EG_INFO, "stop", "%s; draining for at most %d ms", why,
               gw->cfg->shutdown_timeout_ms);
    for (eg_part *p = gw->parts; p; p = p->next) part_update_pause(gw, p);
    gw->drain_deadline_ms = eg_now_ms() + gw->cfg->shutdown_timeout_ms;
    gw->drain_ev = evtimer_new(gw->base, on_drain_tick, gw);
    on_drain_tick(-1, 0, gw);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    eg_gw *gw = arg;
    if (gw->stopping) {
        eg_log_msg(EG_WARN, "stop", "second signal: stopping now");
        finish_stop(gw);
        return;
    }
    begin_stop(gw, 0, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* ---------------------------------------------------------- observability */

/* The SHA-256 (hex) of the loaded policy file, for /policy. */
static const char *policy_sha256(const eg_policy *p) { return eg_policy_sha256(p); }

/* Splits "name@version" into its parts (version "" when absent). */
static void policy_name_version(const eg_policy *p, char *name, size_t nlen, char *ver, size_t vlen) {
    const char *id = eg_policy_id(p);
    const char *at = strchr(id, '@');
    size_t n = at ? (size_t)(at - id) : strlen(id);
    if (n >= nlen) n = nlen - 1;
    memcpy(name, id, n);
    name[n] = '\0';
    eg_strlcpy(ver, at ? at + 1 : "", vlen);
}

/* librdkafka statistics (served by the consumer poll, on the loop thread):
 * picks each partition's consumer_lag. A flat scan keyed on the last seen
 * "topic" and "partition" fields; bounded by the JSON's length. Returns 0
 * so that librdkafka frees the JSON. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    eg_gw *gw = opaque;
    if (!pthread_equal(pthread_self(), gw->loop_thread) || gw->closed) return 0;
    char topic[256] = "";
    long long partition = -1;
    const char *end = json + len;
    for (const char *q = memchr(json, '"', len); q && q < end; q = memchr(q + 1, '"', (size_t)(end - q - 1))) {
        size_t rest = (size_t)(end - q);
        if (rest > 9 && memcmp(q, "\"topic\":\"", 9) == 0) {
            const char *v = q + 9, *e = memchr(v, '"', (size_t)(end - v));
            if (!e) break;
            size_t n = (size_t)(e - v) < sizeof topic - 1 ? (size_t)(e - v) : sizeof topic - 1;
            memcpy(topic, v, n);
            topic[n] = '\0';
            q = e;
        } else if (rest > 12 && memcmp(q, "\"partition\":", 12) == 0) {
            partition = strtoll(q + 12, NULL, 10);
        } else if (rest > 15 && memcmp(q, "\"consumer_lag\":", 15) == 0) {
            long long lag = strtoll(q + 15, NULL, 10);
            if (partition >= 0 && partition <= INT32_MAX) {
                eg_part *p = part_find(gw, topic, (int32_t)partition);
                if (p) p->consumer_lag = lag;
            }
        }
        if (q + 1 >= end) break;
    }
    return 0;
}

/* Readiness (see admin.h): false before the first assignment, while
 * stopping, and while lane writes have been failing for too long. */
static int gw_ready(void *arg, char *why, size_t whylen) {
    eg_gw *gw = arg;
    if (gw->stopping) {
        eg_strlcpy(why, "stopping", whylen);
        return 0;
    }
    if (!gw->assigned_once) {
        eg_strlcpy(why, "no partition assignment yet", whylen);
        return 0;
    }
    int64_t failing = gw->lane_failing_since_ms ? eg_now_ms() - gw->lane_failing_since_ms : 0;
    if (gw->lane_failing && failing > gw->cfg->ready_lane_failure_ms) {
        snprintf(why, whylen, "lane writes failing for %lld ms (%d records)", (long long)failing, gw->lane_failing);
        return 0;
    }
    return 1;
}

/* Records waiting for a write to lane topic `topic` (in flight or backing off). */
static int lane_pending(eg_gw *gw, const char *topic) {
    int n = 0;
    for (eg_record *r = gw->all; r; r = r->anext) {
        if (r->state != EG_RS_LANE_WRITE && r->state != EG_RS_LANE_BACKOFF) continue;
        eg_lane lane = r->decision.action == EG_ACT_DLQ ? EG_LANE_DLQ : EG_LANE_QUARANTINE;
        if (strcmp(eg_lanes_topic(gw->lanes, lane, r->topic), topic) == 0) n++;
    }
    return n;
}

static void gw_metrics(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    eg_registry_render(gw->reg, out);
    static const char *const tp[] = {"topic", "partition"};
    char pbuf[16], name[128], ver[128], target[512];
    eg_metric_header(out, "errgate_inflight_records", "Records consumed and not yet finished.", "gauge");
    eg_metric_sample(out, "errgate_inflight_records", 0, NULL, NULL, gw->unfinished);
    eg_metric_header(out, "errgate_committed_offset_lag",
                     "High watermark minus the committed offset, per assigned partition.", "gauge");
    for (eg_part *p = gw->parts; p; p = p->next) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_get_watermark_offsets(gw->rk, p->topic, p->partition, &lo, &hi) != 0 || hi < 0) continue;
        int64_t base = p->committed >= 0 ? p->committed : lo;
        snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
        const char *v[2] = {p->topic, pbuf};
        eg_metric_sample(out, "errgate_committed_offset_lag", 2, tp, v, (double)(hi > base ? hi - base : 0));
    }
    eg_metric_header(out, "errgate_consumer_lag",
                     "Consumer lag per assigned partition, from librdkafka statistics.", "gauge");
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (p->consumer_lag < 0) continue;
        snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
        const char *v[2] = {p->topic, pbuf};
        eg_metric_sample(out, "errgate_consumer_lag", 2, tp, v, (double)p->consumer_lag);
    }
    const char *t = gw->cfg->target_kind == EG_TARGET_HTTP ? gw->cfg->http_url : gw->cfg->lua_target;
    eg_redact(t, strlen(t), target, sizeof target);
    static const char *const tl[] = {"target"};
    const char *tv[1] = {target};
    eg_metric_header(out, "errgate_breaker_state",
                     "Circuit breaker state per target: 0 closed, 1 open, 2 half-open (no breaker yet: always 0).",
                     "gauge");
    eg_metric_sample(out, "errgate_breaker_state", 1, tl, tv, 0);
    policy_name_version(gw->policy, name, sizeof name, ver, sizeof ver);
    static const char *const pl[] = {"name", "version"};
    const char *pv[2] = {name, ver};
    eg_metric_header(out, "errgate_policy_info", "The policy deciding now (always 1).", "gauge");
    eg_metric_sample(out, "errgate_policy_info", 2, pl, pv, 1);
    eg_metric_header(out, "errgate_policy_loaded_timestamp_seconds", "When the current policy was loaded.", "gauge");
    eg_metric_sample(out, "errgate_policy_loaded_timestamp_seconds", 0, NULL, NULL,
                     (double)eg_policy_loaded_at(gw->policy) / 1000.0);
    eg_metric_header(out, "errgate_lane_pending_records",
                     "Records waiting for their lane write (in flight or backing off), per lane topic.", "gauge");
    static const char *const ll[] = {"lane"};
    eg_lane_stats ls;
    for (int i = 0; eg_lanes_stats(gw->lanes, i, &ls) == 0; i++) {
        const char *lv[1] = {ls.topic};
        eg_metric_sample(out, "errgate_lane_pending_records", 1, ll, lv, lane_pending(gw, ls.topic));
    }
    char why[128];
    eg_metric_header(out, "errgate_ready", "1 when /readyz answers ready.", "gauge");
    eg_metric_sample(out, "errgate_ready", 0, NULL, NULL, gw_ready(gw, why, sizeof why));
}

static void gw_policy_json(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    char name[128], ver[128], ts[40];
    policy_name_version(gw->policy, name, sizeof name, ver, sizeof ver);
    evbuffer_add_printf(out, "{\"name\":");
    eg_json_str(out, name);
    evbuffer_add_printf(out, ",\"version\":");
    eg_json_str(out, ver);
    evbuffer_add_printf(out, ",\"id\":");
    eg_json_str(out, eg_policy_id(gw->policy));
    evbuffer_add_printf(out, ",\"path\":");
    eg_json_str(out, eg_policy_path(gw->policy));
    evbuffer_add_printf(out, ",\"sha256\":");
    eg_json_str(out, policy_sha256(gw->policy));
    eg_rfc3339(eg_policy_loaded_at(gw->policy), ts, sizeof ts);
    evbuffer_add_printf(out, ",\"loaded_at\":");
    eg_json_str(out, ts);
    evbuffer_add_printf(out, ",\"loaded_at_ms\":%lld", (long long)eg_policy_loaded_at(gw->policy));
    evbuffer_add_printf(out, ",\"last_reload_attempt_ms\":");
    if (gw->last_reload_ms) evbuffer_add_printf(out, "%lld", (long long)gw->last_reload_ms);
    else evbuffer_add_printf(out, "null");
    evbuffer_add_printf(out, ",\"last_reload_error\":");
    if (gw->last_reload_error[0]) eg_json_str(out, gw->last_reload_error);
    else evbuffer_add_printf(out, "null");
    evbuffer_add_printf(out, "}");
}

static void gw_lanes_json(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    evbuffer_add_printf(out, "{\"lanes\":[");
    eg_lane_stats ls;
    for (int i = 0; eg_lanes_stats(gw->lanes, i, &ls) == 0; i++) {
        evbuffer_add_printf(out, "%s{\"topic\":", i ? "," : "");
        eg_json_str(out, ls.topic);
        evbuffer_add_printf(out, ",\"lane\":\"%s\",\"written\":%llu,\"failed\":%llu,\"pending\":%d}",
                            ls.lane == EG_LANE_DLQ ? "dlq" : "quarantine", (unsigned long long)ls.written,
                            (unsigned long long)ls.failed, lane_pending(gw, ls.topic));
    }
    evbuffer_add_printf(out, "]}");
}

/* The one reload path (POST /reload, SIGHUP): on failure the old policy
 * keeps deciding and the error is kept for /policy. */
static int do_reload(void *arg, const char *trigger, char *err, size_t errlen) {
    eg_gw *gw = arg;
    char before[256];
    eg_strlcpy(before, eg_policy_id(gw->policy), sizeof before);
    gw->last_reload_ms = eg_wall_ms();
    int64_t t0 = eg_now_ms();
    if (eg_policy_reload(&gw->policy, err, errlen) != 0) {
        char clean[sizeof gw->last_reload_error];
        eg_redact(err, strlen(err), clean, sizeof clean);
        eg_strlcpy(gw->last_reload_error, clean, sizeof gw->last_reload_error);
        eg_strlcpy(err, clean, errlen);
        const char *v[1] = {"failure"};
        (*eg_counter(gw->m.reloads, v))++;
        eg_logline l;
        if (eg_log_begin(&l, EG_WARN, "reload")) {
            eg_log_str(&l, "result", "failed");
            eg_log_str(&l, "trigger", trigger);
            eg_log_str(&l, "policy", before);
            eg_log_str(&l, "error", clean);
            eg_log_end(&l);
        }
        return -1;
    }
    gw->last_reload_error[0] = '\0';
    const char *v[1] = {"success"};
    (*eg_counter(gw->m.reloads, v))++;
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "reload")) {
        eg_log_str(&l, "result", "ok");
        eg_log_str(&l, "trigger", trigger);
        eg_log_str(&l, "policy", eg_policy_id(gw->policy));
        eg_log_str(&l, "previous", before);
        eg_log_int(&l, "took_ms", eg_now_ms() - t0);
        eg_log_end(&l);
    }
    return 0;
}

static void on_sighup(evutil_socket_t sig, short what, void *arg) {
    char err[1024];
    do_reload(arg, "sighup", err, sizeof err);
}

/* Builds the registry and the families the loop updates. */
static void metrics_new(eg_gw *gw) {
    static const char *const l_topic[] = {"topic"};
    static const char *const l_cc[] = {"class", "code"};
    static const char *const l_lr[] = {"lane", "reason"};
    static const char *const l_lane[] = {"lane"};
    static const char *const l_status[] = {"status_class"};
    static const char *const l_result[] = {"result"};
    static const double dec_b[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                   0.0025, 0.005, 0.01, 0.025, 0.05, 0.1};
    static const double tgt_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                   0.5, 1, 2.5, 5, 10, 30};
    eg_registry *r = gw->reg = eg_registry_new();
    eg_gw_metrics *m = &gw->m;
    m->received = eg_family_new(r, "errgate_records_received_total", "Records consumed, by source topic.",
                                EG_MT_COUNTER, 1, l_topic, NULL, 0);
    m->processed = eg_family_new(r, "errgate_records_processed_total",
                                 "Records finished with a durable outcome (success, lane write, ignore), by source topic.",
                                 EG_MT_COUNTER, 1, l_topic, NULL, 0);
    m->succeeded = eg_counter(eg_family_new(r, "errgate_records_succeeded_total",
                                            "Records the target accepted.", EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->failed = eg_family_new(r, "errgate_records_failed_total",
                              "Failed target attempts, by the class and code the policy gave.", EG_MT_COUNTER, 2,
                              l_cc, NULL, 0);
    m->retried = eg_counter(eg_family_new(r, "errgate_records_retried_total", "In-place retries decided.",
                                          EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->exhausted = eg_counter(eg_family_new(r, "errgate_records_retry_exhausted_total",
                                            "Decisions taken because the retries were exhausted.", EG_MT_COUNTER, 0,
                                            NULL, NULL, 0), NULL);
    m->dead = eg_family_new(r, "errgate_records_dead_lettered_total",
                            "Records written to a DLQ lane (acknowledged), by lane topic and reason.", EG_MT_COUNTER, 2,
                            l_lr, NULL, 0);
    m->quarantined = eg_family_new(r, "errgate_records_quarantined_total",
                                   "Records written to a quarantine lane (acknowledged), by lane topic and reason.",
                                   EG_MT_COUNTER, 2, l_lr, NULL, 0);
    m->ignored = eg_counter(eg_family_new(r, "errgate_records_ignored_total", "Records ignored by decision.",
                                          EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->held = eg_counter(eg_family_new(r, "errgate_records_held_total", "Hold decisions.", EG_MT_COUNTER, 0, NULL,
                                       NULL, 0), NULL);
    m->stops = eg_counter(eg_family_new(r, "errgate_stop_decisions_total", "Stop decisions.", EG_MT_COUNTER, 0,
                                        NULL, NULL, 0), NULL);
    m->fallbacks = eg_counter(eg_family_new(r, "errgate_policy_fallbacks_total",
                                            "Decisions where the policy failed and the fallback applied.",
                                            EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->lane_failures = eg_family_new(r, "errgate_lane_write_failures_total", "Failed lane writes, by lane topic.",
                                     EG_MT_COUNTER, 1, l_lane, NULL, 0);
    m->commits = eg_counter(eg_family_new(r, "errgate_commits_total", "Successful offset commits.", EG_MT_COUNTER,
                                          0, NULL, NULL, 0), NULL);
    m->commit_failures = eg_counter(eg_family_new(r, "errgate_commit_failures_total", "Failed offset commits.",
                                                  EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->reloads = eg_family_new(r, "errgate_policy_reloads_total", "Policy reload attempts, by result.", EG_MT_COUNTER,
                               1, l_result, NULL, 0);
    m->decision_seconds = eg_family_new(r, "errgate_decision_duration_seconds",
                                        "Time the policy took to decide on one failure.", EG_MT_HISTOGRAM, 0, NULL,
                                        dec_b, (int)(sizeof dec_b / sizeof dec_b[0]));
    m->target_seconds = eg_family_new(r, "errgate_target_request_duration_seconds",
                                      "Target attempt latency, by status class (2xx..5xx, timeout, connect).",
                                      EG_MT_HISTOGRAM, 1, l_status, tgt_b, (int)(sizeof tgt_b / sizeof tgt_b[0]));
    /* series that exist from the start, so dashboards see zeros */
    const char *ok[1] = {"success"}, *bad[1] = {"failure"};
    eg_counter(m->reloads, ok);
    eg_counter(m->reloads, bad);
    eg_histogram(m->decision_seconds, NULL);
    for (int i = 0; i < gw->cfg->ntopics; i++) {
        const char *tv[1] = {gw->cfg->topics[i]};
        eg_counter(m->received, tv);
        eg_counter(m->processed, tv);
    }
    eg_metrics_install_target_latency(m->target_seconds);
}

/* Starts the admin endpoint when configured. */
static int admin_start(eg_gw *gw, char *err, size_t errlen) {
    if (!gw->cfg->admin_enabled) return 0;
    static const eg_admin_ops ops = {gw_metrics, gw_ready, gw_policy_json, gw_lanes_json, do_reload};
    gw->admin = eg_admin_new(gw->base, gw->cfg->admin_listen, gw->cfg->admin_token_file, &ops, gw, err, errlen);
    return gw->admin ? 0 : -1;
}

/* ------------------------------------------------------------------ setup */

static int consumer_new(eg_gw *gw, char *err, size_t errlen) {
    const eg_config *cfg = gw->cfg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char e[512];
    struct { const char *k, *v; } fixed[] = {
        {"group.id", cfg->group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
    };
    for (int i = 0; i < cfg->nkafka; i++)
        if (rd_kafka_conf_set(conf, cfg->kafka[i].key, cfg->kafka[i].val, e, sizeof e) != RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "kafka.%s: %s", cfg->kafka[i].key, e);
            rd_kafka_conf_destroy(conf);
            return -1;
        }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        rd_kafka_conf_set(conf, fixed[i].k, fixed[i].v, e, sizeof e);
    if (!eg_config_kafka(cfg, "auto.offset.reset")) rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", e, sizeof e);
    /* prefetch per partition: librdkafka's defaults (100,000 messages, 64 MiB)
     * would dwarf the in-flight caps */
    if (!eg_config_kafka(cfg, "queued.min.messages")) rd_kafka_conf_set(conf, "queued.min.messages", "20000", e, sizeof e);
    if (!eg_config_kafka(cfg, "queued.max.messages.kbytes"))
        rd_kafka_conf_set(conf, "queued.max.messages.kbytes", "4096", e, sizeof e);
    if (!eg_config_kafka(cfg, "client.id")) rd_kafka_conf_set(conf, "client.id", "errgate", e, sizeof e);
    if (!eg_config_kafka(cfg, "statistics.interval.ms"))
        rd_kafka_conf_set(conf, "statistics.interval.ms", "5000", e, sizeof e); /* consumer lag metric */
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    rd_kafka_conf_set_opaque(conf, gw);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, on_commit_result);
    rd_kafka_conf_set_error_cb(conf, on_consumer_error);
    rd_kafka_conf_set_log_cb(conf, eg_rdkafka_log_cb);
    gw->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!gw->rk) {
        snprintf(err, errlen, "cannot create the consumer: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_poll_set_consumer(gw->rk);
    gw->cq = rd_kafka_queue_get_consumer(gw->rk);
    if (pipe2(gw->cpipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %m");
        return -1;
    }
    rd_kafka_queue_io_event_enable(gw->cq, gw->cpipe[1], "1", 1);
    gw->cev = event_new(gw->base, gw->cpipe[0], EV_READ | EV_PERSIST, on_consumer_queue, gw);
    event_add(gw->cev, NULL);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(cfg->ntopics);
    for (int i = 0; i < cfg->ntopics; i++)
        rd_kafka_topic_partition_list_add(topics, cfg->topics[i], RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t rerr = rd_kafka_subscribe(gw->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (rerr) {
        snprintf(err, errlen, "subscribe: %s", rd_kafka_err2str(rerr));
        return -1;
    }
    return 0;
}

static void log_summary(eg_gw *gw) {
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, "summary")) return;
    const eg_stats *s = &gw->st;
    eg_log_int(&l, "received", s->received);
    eg_log_int(&l, "succeeded_first", s->succeeded_first);
    eg_log_int(&l, "succeeded_retry", s->succeeded_retry);
    eg_log_int(&l, "failures", s->failures);
    eg_log_int(&l, "retries", s->retries);
    eg_log_int(&l, "holds", s->holds);
    eg_log_int(&l, "dlq", s->dlq);
    eg_log_int(&l, "quarantined", s->quarantined);
    eg_log_int(&l, "ignored", s->ignored);
    eg_log_int(&l, "stops", s->stops);
    eg_log_int(&l, "policy_errors", s->policy_errors);
    eg_log_int(&l, "lane_failures", s->lane_failures);
    eg_log_int(&l, "commits", s->commits);
    eg_log_int(&l, "commit_failures", s->commit_failures);
    int64_t done = s->succeeded_first + s->succeeded_retry + s->dlq + s->quarantined + s->ignored;
    double secs = s->last_ms > s->first_ms ? (double)(s->last_ms - s->first_ms) / 1000.0 : 0;
    eg_log_dbl(&l, "active_seconds", secs);
    eg_log_dbl(&l, "records_per_second", secs > 0 ? (double)done / secs : 0);
    eg_log_int(&l, "exit_code", gw->exit_code);
    eg_log_end(&l);
}

static void gateway_free(eg_gw *gw) {
    eg_admin_free(gw->admin);
    gw->admin = NULL;
    /* borrowers first: the producer may still point into records' messages */
    if (gw->target) gw->target->ops->destroy(gw->target);
    if (gw->lanes) eg_lanes_free(gw->lanes);
    gw->target = NULL;
    gw->lanes = NULL;
    while (gw->all) free_record(gw, gw->all);
    while (gw->parts) {
        eg_part *p = gw->parts;
        gw->parts = p->next;
        part_release_queue(p);
        part_unref(p);
    }
    if (gw->cq) rd_kafka_queue_destroy(gw->cq);
    if (gw->rk) rd_kafka_destroy(gw->rk);
    eg_policy_free(gw->policy);
    if (gw->cev) event_free(gw->cev);
    if (gw->commit_ev) event_free(gw->commit_ev);
    if (gw->poll_ev) event_free(gw->poll_ev);
    if (gw->drain_ev) event_free(gw->drain_ev);
    for (int i = 0; i < 3; i++)
        if (gw->sig_ev[i]) event_free(gw->sig_ev[i]);
    if (gw->cpipe[0] > 0) close(gw->cpipe[0]);
    if (gw->cpipe[1] > 0) close(gw->cpipe[1]);
    if (gw->base) event_base_free(gw->base);
    eg_metrics_install_target_latency(NULL);
    eg_registry_free(gw->reg);
    gw->reg = NULL;
}

static void usage(void) {
    fprintf(stderr, "usage: errgate run -c CONFIG\n");
}

int eg_cmd_run(int argc, char **argv) {
    const char *cfgpath = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) cfgpath = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    if (!cfgpath) {
        usage();
        return 2;
    }
    char err[1024];
    eg_config cfg;
    if (eg_config_load(cfgpath, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "errgate: %s\n", err); /* one plain line: nothing started yet */
        return 2;
    }
    eg_level lv = strcmp(cfg.log_level, "debug") == 0 ? EG_DEBUG : strcmp(cfg.log_level, "warn") == 0 ? EG_WARN
                  : strcmp(cfg.log_level, "error") == 0 ? EG_ERROR : EG_INFO;
    eg_log_setup(lv, strcmp(cfg.log_format, "text") == 0);
    signal(SIGPIPE, SIG_IGN);

    eg_gw gw;
    memset(&gw, 0, sizeof gw);
    gw.cfg = &cfg;
    int rc = 2;
    gw.base = event_base_new();
    gw.loop_thread = pthread_self();
    metrics_new(&gw);
    if (!(gw.policy = eg_policy_load(cfg.policy, cfg.policy_timeout_ms, err, sizeof err)) ||
        !(gw.target = eg_target_new(&cfg, gw.base, on_target_done, &gw, err, sizeof err)) ||
        !(gw.lanes = eg_lanes_new(&cfg, gw.base, on_lane_done, &gw, err, sizeof err)) ||
        admin_start(&gw, err, sizeof err) != 0 || consumer_new(&gw, err, sizeof err) != 0) {
        fprintf(stderr, "errgate: %s\n", err);
        goto out;
    }
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "start")) {
        eg_log_str(&l, "group", cfg.group);
        eg_log_str(&l, "policy", eg_policy_id(gw.policy));
        eg_log_str(&l, "target", cfg.target_kind == EG_TARGET_HTTP ? cfg.http_url : cfg.lua_target);
        eg_log_str(&l, "ordering", eg_ordering_name(cfg.ordering));
        eg_log_end(&l);
    }
    gw.commit_ev = event_new(gw.base, -1, EV_PERSIST, on_commit_tick, &gw);
    struct timeval ci = {cfg.commit_interval_ms / 1000, (cfg.commit_interval_ms % 1000) * 1000};
    event_add(gw.commit_ev, &ci);
    gw.poll_ev = event_new(gw.base, -1, EV_PERSIST, on_poll_tick, &gw);
    struct timeval pt = {POLL_TICK_MS / 1000, (POLL_TICK_MS % 1000) * 1000};
    event_add(gw.poll_ev, &pt);
    gw.sig_ev[0] = evsignal_new(gw.base, SIGTERM, on_signal, &gw);
    gw.sig_ev[1] = evsignal_new(gw.base, SIGINT, on_signal, &gw);
    gw.sig_ev[2] = evsignal_new(gw.base, SIGHUP, on_sighup, &gw);
    event_add(gw.sig_ev[0], NULL);
    event_add(gw.sig_ev[1], NULL);
    event_add(gw.sig_ev[2], NULL);
    event_base_dispatch(gw.base);
    rc = gw.exit_code;
    log_summary(&gw);
out:
    gateway_free(&gw);
    eg_config_free(&cfg);
    return rc;
}
