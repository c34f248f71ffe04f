/* gateway.c — the record path of `errgate run`: consume, call the target,
 * ask the policy, write lanes, commit contiguous prefixes.
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
 * Reading order: the functions a record passes through, in that order.
 *   eg_gw_on_consumer_queue  the loop wakes: group events, then drain_partitions
 *   on_message               a message becomes a PENDING record of its partition
 *   pump                     PENDING -> RUNNABLE as the ordering allows (pump_rung: when due)
 *   dispatch                 RUNNABLE -> IN_TARGET (dispatch_round: breaker, budget, submit)
 *   eg_gw_on_target_done     success -> finish_record; failure -> decide
 *   decide                   asks the policy, then adjust, count, carry_out
 *   carry_out                retry/hold: arm_timer, on_timer -> RUNNABLE; lane: lane_write
 *   lane_write               LANE_WRITE (lane_failed: LANE_BACKOFF, on_timer; spill_record)
 *   eg_gw_on_lane_done       the lane's report: counts the outcome -> finish_record
 *   finish_record            the offset is finished in the tracker; the partition moves on
 *   commit_offsets           the tracker's contiguous prefix (commit tick, revoke, stop)
 * Around it: partitions (pause, caps), rebalance (assign, revoke) and the
 * stop (eg_gw_begin_stop, eg_gw_finish_stop).
 *
 * Setup, signals and teardown are gw_run.c, which registers this file's
 * entry points (gw.h) as callbacks; observability is gw_admin.c, reloading
 * gw_reload.c. This file calls none of them: it only bumps the metric
 * counters gw.h gives it. */
#include "cli.h"
#include "replay_headers.h"
#include "dlq_origin.h"
#include "gw.h"
#include "headers.h"
#include "log.h"
#include "refusal.h"
#include "replay_dest.h"
#include "util.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ lists */

static void q_append(eg_record **head, eg_record **tail, eg_record *r) {
    r->qnext = NULL;
    r->qprev = *tail;
    if (*tail) (*tail)->qnext = r;
    else *head = r;
    *tail = r;
}

static void q_prepend(eg_record **head, eg_record **tail, eg_record *r) {
    r->qprev = NULL;
    r->qnext = *head;
    if (*head) (*head)->qprev = r;
    else *tail = r;
    *head = r;
}

static void q_remove(eg_record **head, eg_record **tail, eg_record *r) {
    if (r->qprev) r->qprev->qnext = r->qnext;
    else *head = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev;
    else *tail = r->qprev;
    r->qnext = r->qprev = NULL;
}

/* The breaker's clock: read only when there is a breaker. */
static int64_t breaker_now(const eg_gw *gw) { return gw->breaker.cfg.enabled ? eg_now_ms() : 0; }

/* ------------------------------------------------------------- partitions */

eg_part *eg_gw_part_find(eg_gw *gw, const char *topic, int32_t partition) {
    for (eg_part *p = gw->parts; p; p = p->next)
        if (p->partition == partition && strcmp(p->topic, topic) == 0) return p;
    return NULL;
}

void eg_gw_part_unref(eg_part *p) {
    if (--p->refs > 0) return;
    if (p->due_ev) event_free(p->due_ev);
    eg_tracker_free(&p->trk);
    eg_keyset_free(&p->keys);
    free(p->topic);
    free(p);
}

static void log_pause(eg_part *p, const char *event, unsigned reasons) {
    static const char *const names[] = {"hold", "retry", "lane", "stop", "due", "operator", "split"};
    char why[96] = "";
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
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
    unsigned m =
        (p->holding ? PAUSE_HOLD : 0) | (p->retry_wait ? PAUSE_RETRY : 0) | (p->lane_failing ? PAUSE_LANE : 0) |
        (gw->stopping || gw->waiting ? PAUSE_STOP : 0) | (p->due_wait ? PAUSE_DUE : 0) | (p->split ? PAUSE_SPLIT : 0) |
        (gw->overrides.n && eg_overrides_paused(&gw->overrides, p->topic, p->partition, eg_wall_ms()) ? PAUSE_OPERATOR
                                                                                                      : 0);
    int want = m != 0;
    unsigned old = p->pause;
    p->pause = m;
    /* blocked: paused for anything but a rung's wait for its head record
     * (that is the rung working) or the shutdown */
    int blocking = (m & ~(unsigned)(PAUSE_DUE | PAUSE_STOP)) != 0 || gw->waiting;
    if (blocking && !p->blocked_since_ms) p->blocked_since_ms = eg_now_ms();
    else if (!blocking && p->blocked_since_ms) {
        p->blocked_ms += eg_now_ms() - p->blocked_since_ms;
        p->blocked_since_ms = 0;
    }
    if (want == p->paused) return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
    rd_kafka_resp_err_t err = want ? rd_kafka_pause_partitions(gw->rk, l) : rd_kafka_resume_partitions(gw->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        eg_log_msg(EG_WARN, want ? "pause_failed" : "resume_failed", "%s[%d]: %s", p->topic, (int)p->partition,
                   rd_kafka_err2str(err));
        return;
    }
    p->paused = want;
    log_pause(p, want ? "pause" : "resume", want ? m : old);
}

/* True when p may take more records from its queue: under both in-flight
 * caps and not paused. */
static int part_has_room(eg_gw *gw, eg_part *p) {
    return !p->revoked && !p->paused && p->q && p->unfinished < gw->cfg->max_inflight &&
           gw->unfinished < gw->cfg->max_inflight_total && !p->tracker_full;
}

/* A record of p left: if p (or the gateway) had stopped draining at a cap
 * and is now well below it, schedule a drain. */
static void maybe_unblock(eg_gw *gw, eg_part *p) {
    if (p->tracker_full && eg_tracker_pending(&p->trk) <= (uint64_t)gw->cfg->max_tracked / 2) {
        p->tracker_full = 0;
        eg_log_msg(EG_INFO, "tracker_resumed", "%s[%d]: %llu offsets tracked, reading again", p->topic,
                   (int)p->partition, (unsigned long long)eg_tracker_pending(&p->trk));
        if (!gw->closed) event_active(gw->cev, EV_READ, 0);
    }
    if ((p->blocked && p->unfinished <= gw->cfg->max_inflight / 2) ||
        (gw->blocked && gw->unfinished <= gw->cfg->max_inflight_total / 2)) {
        p->blocked = 0;
        gw->blocked = 0;
        if (!gw->closed) event_active(gw->cev, EV_READ, 0);
    }
}

/* p's tracker spans source.max_tracked offsets (a record far behind the
 * newest read one is still unfinished): stop reading p until half of that
 * span is finished, so the tracker never grows past the cap. */
static void check_tracker(eg_gw *gw, eg_part *p) {
    if (p->tracker_full || eg_tracker_pending(&p->trk) < (uint64_t)gw->cfg->max_tracked) return;
    p->tracker_full = 1;
    (*gw->m.tracker_full)++;
    eg_log_msg(EG_WARN, "tracker_full",
               "%s[%d]: %llu offsets tracked since the oldest unfinished one (@%lld); "
               "not reading until half are finished",
               p->topic, (int)p->partition, (unsigned long long)eg_tracker_pending(&p->trk),
               (long long)eg_tracker_commit_point(&p->trk));
}

/* --------------------------------------------------------------- records */

static int is_active(const eg_record *r) {
    return r->state == EG_RS_RUNNABLE || r->state == EG_RS_IN_TARGET || r->state == EG_RS_WAIT_RETRY;
}

static void leave_active(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->active--;
    if (gw->cfg->ordering == EG_ORDER_KEY && p->rung < 0) eg_keyset_dec(&p->keys, r->key_hash);
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
    if (r->state == EG_RS_LANE_TXN) eg_gw_txn_unlink(gw, r);
    if (r->state == EG_RS_FENCE_WAIT) eg_gw_fence_lane_unlink(gw, r);
    if (is_active(r)) leave_active(gw, r);
    unhold(r);
    if (r->state == EG_RS_WAIT_RETRY && gw->cfg->ordering == EG_ORDER_PARTITION &&
        r->fail->decision.action == EG_ACT_RETRY)
        p->retry_wait--;
    if (r->lane_failing) {
        p->lane_failing--;
        if (--gw->lane_failing == 0) gw->lane_failing_since_ms = 0;
    }
    if (r->aprev) r->aprev->anext = r->anext;
    else gw->all = r->anext;
    if (r->anext) r->anext->aprev = r->aprev;
    if (r->timer) event_free(r->timer);
    if (r->budget_req) eg_budget_request_end(eg_budgets_at(&gw->budgets, r->budget_slot));
    if (r->fail) {
        if (r->fail->retrying) eg_budgets_retry_end(&gw->budgets, r->budget_slot);
        eg_failure_clear(&r->fail->failure);
        free(r->fail->prot_value);
        eg_slab_put(&gw->fails, r->fail);
    }
    rd_kafka_message_destroy(r->msg);
    p->unfinished--;
    gw->unfinished--;
    eg_slab_put(&gw->records, r);
    part_update_pause(gw, p);
    maybe_unblock(gw, p);
    eg_gw_part_unref(p);
}

static void pump(eg_gw *gw, eg_part *p);
static void dispatch(eg_gw *gw);

/* The record's outcome is durable: with fencing, its fence moves on first
 * (the head of its key's fence resolves it now), then its offset is marked
 * finished once the fence writes sent so far (that change too) are
 * acknowledged. (A record written in a transaction was marked finished
 * when it began to wait for it: gw_txn.c.) */
static void outcome_durable(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    if (p->revoked) return;
    if (r->fence_resolved || r->fence_placed) eg_gw_fence_outcome(gw, r);
    r->fence_resolved = r->fence_placed = 0;
    if (!(r->fail && r->fail->txn)) eg_gw_fence_finish(gw, p, r->seq);
}

/* The record has a durable outcome: mark its offset finished
 * (outcome_durable), free it, and let its partition move on. */
static void finish_record(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->refs++; /* keep p across free_record */
    outcome_durable(gw, r);
    (*p->processed)++;
    gw->last_finish_ms = eg_now_ms();
    free_record(gw, r);
    pump(gw, p);
    eg_gw_part_unref(p);
    dispatch(gw);
}

/* Drops a record without an outcome (revoked partition, shutdown): it will
 * be consumed again by whoever owns the partition next. */
static void abandon_record(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    p->refs++;
    free_record(gw, r);
    pump(gw, p);
    eg_gw_part_unref(p);
}

static void make_runnable(eg_gw *gw, eg_record *r) {
    r->state = EG_RS_RUNNABLE;
    q_append(&gw->runq_head, &gw->runq_tail, r);
}

static void on_due(evutil_socket_t fd, short what, void *arg);

/* A rung partition: moves its due records, in offset order, into the run
 * queue; at the first one not due, pauses the partition until it is. */
static void pump_rung(eg_gw *gw, eg_part *p) {
    int64_t now = eg_wall_ms();
    eg_record *r;
    while ((r = p->pend_head)) {
        int64_t due = eg_gw_rung_due(gw, p, r, now);
        if (due > now) {
            if (!p->due_ev) p->due_ev = evtimer_new(gw->base, on_due, p);
            struct timeval tv = eg_gw_tv(due - now);
            evtimer_add(p->due_ev, &tv);
            break;
        }
        q_remove(&p->pend_head, &p->pend_tail, r);
        p->active++;
        make_runnable(gw, r);
    }
    int waiting = r != NULL;
    if (waiting != p->due_wait) {
        p->due_wait = waiting;
        part_update_pause(gw, p);
    }
}

/* Moves the records of p that the ordering allows into the run queue. */
static void pump(eg_gw *gw, eg_part *p) {
    if (p->revoked || gw->stopping || gw->waiting || p->holding) return;
    if (p->rung >= 0) {
        pump_rung(gw, p);
        return;
    }
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

static void circuit_open(eg_gw *gw, eg_record *r);

static void republish(eg_gw *gw, eg_record *r);
static void fence_follow(eg_gw *gw, eg_record *r);
static void fence_duplicate(eg_gw *gw, eg_record *r);
static void dispatch_round(eg_gw *gw) {
    while (gw->runq_head && !gw->stopping && !gw->waiting && gw->target->ops->available(gw->target) > 0) {
        eg_record *r = gw->runq_head;
        int replay = r->part->rung >= 0 && eg_gw_rung_is_replay(gw, r->part->rung);
        int fence = replay ? EG_GW_FENCE_PASS : eg_gw_fence_must_follow(gw, r);
        if (fence != EG_GW_FENCE_PASS) { /* its key is fenced: it follows, or is a copy already resolved */
            q_remove(&gw->runq_head, &gw->runq_tail, r);
            if (fence == EG_GW_FENCE_FOLLOW) fence_follow(gw, r);
            else fence_duplicate(gw, r);
            continue;
        }
        if (!replay && !eg_gw_limits_admit(gw)) break; /* rate or adaptive limit: the head waits (gw_limits.c) */
        q_remove(&gw->runq_head, &gw->runq_tail, r);
        if (replay) {
            republish(gw, r); /* inbox mode: a due replay goes out, no target call */
            continue;
        }
        uint32_t pass = eg_breaker_allow(&gw->breaker, breaker_now(gw));
        if (!pass) {
            circuit_open(gw, r);
            continue;
        }
        r->state = EG_RS_IN_TARGET;
        r->attempt++;
        r->breaker_pass = pass;
        /* a first attempt is a request in the retry budget's base (a record
         * held by the budget already counts as one) */
        int started = !(r->fail && r->fail->retrying) && !r->budget_req;
        if (started) {
            eg_budget_request_start(eg_budgets_at(&gw->budgets, eg_gw_budget_slot(gw, r)));
            r->budget_req = 1;
        }
        if (gw->target->ops->submit(gw->target, r) != 0) {
            eg_breaker_release(&gw->breaker, pass);
            if (started) {
                eg_budget_request_end(eg_budgets_at(&gw->budgets, r->budget_slot));
                r->budget_req = 0;
            }
            r->attempt--;
            r->state = EG_RS_RUNNABLE;
            q_prepend(&gw->runq_head, &gw->runq_tail, r); /* first in line again */
            break;
        }
        eg_gw_limits_sent(gw, r);
    }
}

void eg_gw_dispatch(eg_gw *gw) { dispatch(gw); }

/* ------------------------------------------------------------- decisions */

/* True when r is in its first life: consumed from its source, never on a
 * rung nor in a lane before (no retry.count, no errgate.attempts: a rung or
 * a replay gives it those). Decides the poison and recovered counters. */
static int first_life(const eg_record *r) {
    size_t n = 0;
    return r->part->rung < 0 && eg_record_retry_count(r) == 0 && !eg_header(r->msg, EG_H_ATTEMPTS, &n);
}

/* The record's failure state, allocated at its first failure. */
static eg_fail *fail_of(eg_gw *gw, eg_record *r) {
    if (!r->fail) {
        r->fail = eg_slab_get(&gw->fails);
        r->fail->failure.retry_after_ms = -1;
    }
    return r->fail;
}

/* The lane topic the record's decision writes to. */
static const char *lane_topic_of(eg_gw *gw, const eg_record *r) {
    const eg_decision *d = &r->fail->decision;
    const char *origin = d->action == EG_ACT_REPUBLISH ? d->replay_to : r->part->origin; /* OUT: "{topic}" */
    return eg_lanes_topic(gw->lanes, (eg_lane)eg_lane_of(d->action), origin, d->rung);
}

static void log_decision(eg_gw *gw, eg_record *r, const char *lane_topic) {
    const eg_decision *d = &r->fail->decision;
    const eg_failure *f = &r->fail->failure;
    eg_level lv = d->fallback || d->action == EG_ACT_STOP ? EG_WARN : EG_INFO;
    /* sampled per (topic, class, action) under a flood; an ignore's line is
     * its only durable explanation (guarantee 1): never folded */
    int64_t now = eg_wall_ms(); /* the line's ts is the second it was counted in */
    if (!eg_log_enabled(lv) || (d->action != EG_ACT_IGNORE &&
                                !eg_sampler_admit(&gw->declog, r->topic, d->klass, eg_action_name(d->action), lv, now)))
        return;
    eg_logline l;
    if (!eg_log_begin_at(&l, lv, "decision", now)) return;
    char id[320];
    eg_record_id(r, id, sizeof id);
    eg_log_str(&l, "topic", r->topic);
    eg_log_int(&l, "partition", r->partition);
    eg_log_int(&l, "offset", r->offset);
    eg_log_str(&l, "id", id);
    if (r->msg->key) {
        char kh[17];
        eg_fmt_hex64(eg_hash64(r->msg->key, r->msg->key_len), kh);
        eg_log_str(&l, "key_hash", kh);
    } else {
        eg_log_null(&l, "key_hash");
    }
    eg_log_int(&l, "value_bytes", (int64_t)r->msg->len);
    /* where a record that came back (from a rung, or replayed) was before */
    char prev[256];
    if (eg_header_str(r->msg, EG_H_PREVIOUS, prev, sizeof prev) == 0) eg_log_str(&l, "previous_topic", prev);
    eg_log_str(&l, "kind", eg_failure_kind_name(f->kind));
    if (f->status) eg_log_int(&l, "status", f->status);
    eg_log_str(&l, "class", d->klass);
    eg_log_str(&l, "code", d->code);
    eg_log_str(&l, "action", eg_action_name(d->action));
    eg_log_str(&l, "reason", d->reason);
    eg_log_int(&l, "attempt", r->attempt);
    if (lane_topic) eg_log_str(&l, "lane", lane_topic);
    else eg_log_null(&l, "lane");
    if (d->action == EG_ACT_LADDER) eg_log_int(&l, "rung", d->rung_index);
    if (d->action == EG_ACT_RETRY || d->action == EG_ACT_HOLD || d->action == EG_ACT_LADDER)
        eg_log_int(&l, "delay_ms", d->delay_ms);
    if (d->action == EG_ACT_RETRY && gw->budgets.cfg.enabled) {
        /* the admission: this retry made retries_active, under retry_limit */
        eg_log_int(&l, "retries_active", eg_budgets_at(&gw->budgets, r->budget_slot)->retries);
        eg_log_int(&l, "retry_limit", r->fail->budget_limit);
    }
    if (gw->budgets.keyed && (d->action == EG_ACT_RETRY || d->why == EG_RSN_RETRY_BUDGET)) {
        char bk[EG_BUDGET_KEY_MAX + 1];
        eg_gw_budget_name(gw, r, bk, sizeof bk);
        eg_log_str(&l, "budget_key", bk); /* whose budget admitted or refused it */
    }
    eg_log_str(&l, "policy", eg_policy_id(gw->policy));
    if (d->override[0]) eg_log_str(&l, "override", d->override);
    if (d->why == EG_RSN_FENCED) eg_log_str(&l, "fenced_by", r->fail->fenced_by);
    eg_log_int(&l, "latency_ms", f->latency_ms);
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
    struct timeval tv = eg_gw_tv(ms);
    evtimer_add(r->timer, &tv);
}

/* Replaces d with a hold the C core decided instead (logged as a fallback
 * with `code` and `why`). */
static void override_hold(eg_decision *d, eg_reason code, int64_t delay_ms, const char *why) {
    char klass[sizeof d->klass];
    eg_strlcpy(klass, d->klass, sizeof klass);
    memset(d, 0, sizeof *d);
    d->action = EG_ACT_HOLD;
    d->fallback = 1;
    d->delay_ms = delay_ms > 0 ? delay_ms : DEFAULT_HOLD_MS;
    eg_strlcpy(d->klass, klass, sizeof d->klass);
    eg_strlcpy(d->code, eg_reason_name(code), sizeof d->code);
    eg_decision_set_reason(d, code);
    eg_strlcpy(d->message, why, sizeof d->message);
}

/* What the C core does to a ladder decision before carrying it out: under
 * partition ordering the record waits in place for the rung's delay (the
 * ladder would let later records pass it), counting the rung as climbed; a
 * rung the gateway does not consume becomes a hold; Retry-After beyond the
 * rung's delay becomes the record's errgate.not-before. */
static void shape_ladder(eg_gw *gw, eg_record *r, eg_decision *d) {
    int k = eg_gw_rung_slot(gw, d->rung, r->part->origin);
    if (gw->cfg->ordering == EG_ORDER_PARTITION) {
        eg_log_msg(EG_INFO, "ladder_in_place", "%s[%d]@%lld: rung %s waits in place (ordering=partition)", r->topic,
                   (int)r->partition, (long long)r->offset, d->rung);
        d->action = EG_ACT_RETRY;
        r->fail->virtual_rungs++;
        return;
    }
    if (k < 0) {
        char why[160];
        snprintf(why, sizeof why, "ladder rung '%s' is not one the gateway consumes; holding", d->rung);
        override_hold(d, EG_RSN_UNKNOWN_RUNG, d->delay_ms, why);
        return;
    }
    if (d->delay_ms > gw->rts[k].delay_ms) d->not_before_ms = eg_wall_ms() + d->delay_ms;
}

/* A replay decision (inbox mode) waits on its source's replay rung until
 * `after` has passed (errgate.not-before), whatever the ordering: nothing
 * sleeps in memory. Without a replay rung (not inbox mode, or a regex
 * source) it becomes a hold. */
static void shape_replay(eg_gw *gw, eg_record *r, eg_decision *d) {
    for (int i = 0; i < gw->nrts; i++)
        if (eg_gw_rung_is_replay(gw, i) && strcmp(gw->rts[i].origin, r->part->origin) == 0) {
            eg_strlcpy(d->rung, gw->rts[i].rung, sizeof d->rung);
            d->not_before_ms = eg_wall_ms() + d->delay_ms;
            return;
        }
    override_hold(d, EG_RSN_UNKNOWN_RUNG, d->delay_ms, "replay needs source.inbox and a literal source topic; holding");
}

/* Appends the decision to the record's in-memory attempt history. */
static void remember(eg_fail *fl, const eg_decision *d) {
    eg_attempt *a = &fl->hist[fl->nhist++ % EG_HIST_MAX];
    a->t_ms = eg_wall_ms();
    a->action = d->action;
    eg_strlcpy(a->klass, d->klass, sizeof a->klass);
    eg_strlcpy(a->code, d->code, sizeof a->code);
}

/* Adjust: what the C core makes of the policy's decision d on r before it
 * is carried out. A ladder is shaped to the gateway (shape_ladder); a retry
 * takes a place in the target's retry budget or becomes a hold when there
 * is none (a decision the policy escalated for the budget counts as a
 * refusal); a hold for the budget keeps r in the budget's base; a retry or
 * hold of a record the breaker refused waits at least until it half-opens. */
static void adjust(eg_gw *gw, eg_record *r, const eg_ctx *ctx, eg_decision *d) {
    eg_fail *fl = r->fail;
    if (d->action == EG_ACT_LADDER) shape_ladder(gw, r, d);
    if (d->action == EG_ACT_REPLAY) shape_replay(gw, r, d);
    eg_gw_guard_adjust(gw, r, d);
    eg_gw_override_adjust(gw, r, d);
    eg_gw_fence_decided(gw, r, d);       /* parks or resolves r's key (source.fence); at the cap d becomes a hold */
    int slot = eg_gw_budget_slot(gw, r); /* by key: the record's own budget */
    if (d->action == EG_ACT_RETRY) {
        fl->budget_limit = eg_budget_limit(eg_budgets_at(&gw->budgets, slot));
        eg_budget_verdict v = eg_budgets_retry_take(&gw->budgets, slot, eg_now_ns());
        if (v == EG_BUDGET_ADMITTED) fl->retrying = 1;
        else {
            char why[EG_BUDGET_KEY_MAX + 160], bk[EG_BUDGET_KEY_MAX + 1];
            eg_gw_budget_name(gw, r, bk, sizeof bk);
            snprintf(why, sizeof why, "retry refused by the target's retry budget%s%s%s%s; holding",
                     bk[0] ? " of key '" : "", bk, bk[0] ? "'" : "",
                     v == EG_BUDGET_REFUSED_MINUTE ? " (per_minute used up)" : "");
            override_hold(d, EG_RSN_RETRY_BUDGET, d->delay_ms, why);
        }
    } else if (!ctx->retry_budget && d->why == EG_RSN_RETRY_BUDGET) {
        eg_budgets_count_refusal(&gw->budgets, slot); /* the policy escalated or held for the budget */
    }
    if (d->action == EG_ACT_HOLD && d->why == EG_RSN_RETRY_BUDGET && !r->budget_req) {
        /* still demand on the target: counted in the budget's base until sent */
        eg_budget_request_start(eg_budgets_at(&gw->budgets, slot));
        r->budget_req = 1;
    }
    if (fl->failure.kind == EG_FK_CIRCUIT_OPEN && (d->action == EG_ACT_HOLD || d->action == EG_ACT_RETRY)) {
        int64_t left = eg_breaker_open_remaining_ms(&gw->breaker, ctx->now_ms);
        if (d->delay_ms < left) d->delay_ms = left; /* nothing changes before the breaker half-opens */
    }
}

/* Count: the metrics of decision d. A lane decision's outcome is counted
 * when the lane acknowledges it (eg_gw_on_lane_done); a retry or hold met
 * while stopping is not carried out (carry_out), so not counted either. */
static void count(eg_gw *gw, const eg_decision *d) {
    if (d->fallback) (*gw->m.fallbacks)++;
    const char *fv[2] = {d->klass, d->code};
    (*eg_counter(gw->m.failed, fv))++;
    if (d->why == EG_RSN_EXHAUSTED) (*gw->m.exhausted)++;
    switch (d->action) {
    case EG_ACT_RETRY:
        if (!gw->stopping) (*gw->m.retried)++;
        break;
    case EG_ACT_HOLD:
        if (!gw->stopping) (*gw->m.held)++;
        break;
    case EG_ACT_DLQ:
    case EG_ACT_QUARANTINE:
    case EG_ACT_LADDER:
    case EG_ACT_REPLAY:
    case EG_ACT_REPUBLISH: break;
    case EG_ACT_IGNORE: (*gw->m.ignored)++; break;
    case EG_ACT_STOP:
    default: (*gw->m.stops)++; break;
    }
}

/* Carry out: r's decision (r->fail->decision) happens. A retry or hold
 * arms r's timer (while stopping, r is abandoned instead); a lane decision
 * writes r to its lane; ignore finishes r as a success does; stop leaves r
 * unfinished and stops the gateway. */
static void carry_out(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    const eg_decision *d = &r->fail->decision;
    switch (d->action) {
    case EG_ACT_RETRY:
    case EG_ACT_HOLD:
        log_decision(gw, r, NULL);
        if (gw->stopping) {
            abandon_record(gw, r);
            return;
        }
        r->state = EG_RS_WAIT_RETRY;
        if (d->action == EG_ACT_RETRY) {
            unhold(r);
            if (gw->cfg->ordering == EG_ORDER_PARTITION) p->retry_wait++;
        } else if (!r->holding) {
            r->holding = 1;
            p->holding++;
        }
        part_update_pause(gw, p);
        arm_timer(gw, r, d->delay_ms);
        pump(gw, p); /* a hold that became a retry frees the partition's queue */
        return;
    case EG_ACT_DLQ:
    case EG_ACT_QUARANTINE:
    case EG_ACT_LADDER:
    case EG_ACT_REPLAY:
    case EG_ACT_REPUBLISH:
        unhold(r);
        leave_active(gw, r);
        log_decision(gw, r, lane_topic_of(gw, r));
        lane_write(gw, r);
        pump(gw, p);
        return;
    case EG_ACT_IGNORE:
        if (eg_lanes_writes(gw->lanes, d->action)) { /* inbox mode: accepted-loss in <inbox>.state, durably */
            unhold(r);
            leave_active(gw, r);
            log_decision(gw, r, lane_topic_of(gw, r));
            lane_write(gw, r);
            pump(gw, p);
            return;
        }
        log_decision(gw, r, NULL);
        finish_record(gw, r); /* from IN_TARGET: free_record undoes its active and hold counts */
        return;
    case EG_ACT_STOP:
    default:
        log_decision(gw, r, NULL);
        leave_active(gw, r);
        r->state = EG_RS_STOPPED;
        if (!eg_gw_stop_wait(gw, r)) eg_gw_begin_stop(gw, EG_EXIT_STOP, "the policy decided stop");
        for (eg_part *q = gw->parts; q; q = q->next) part_update_pause(gw, q);
        return;
    }
}

/* The target failed r (r->fail->failure is set; r is IN_TARGET): ask the
 * policy, then adjust, count and carry out its decision, which becomes the
 * record's last one (its history keeps the last EG_HIST_MAX). */
static void decide(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    eg_fail *fl = r->fail;
    int64_t now = eg_now_ms();
    if (!fl->first_failure_ms) fl->first_failure_ms = now;
    eg_ctx ctx = {.attempt = r->attempt,
                  .last_class = fl->class_attempts ? fl->decision.klass : NULL,
                  .class_attempts = fl->class_attempts,
                  .ordering = gw->cfg->ordering,
                  .now_ms = now,
                  .first_failure_ms = fl->first_failure_ms,
                  .last_delay_ms = fl->class_attempts ? fl->decision.delay_ms : 0,
                  .retry_count = eg_record_retry_count(r) + fl->virtual_rungs,
                  .rung = p->rung >= 0 ? gw->rts[p->rung].rung : NULL,
                  .breaker = eg_breaker_state_name(eg_breaker_poll(&gw->breaker, now)),
                  .retry_budget =
                      eg_budget_allows_retry(eg_budgets_at(&gw->budgets, eg_gw_budget_slot(gw, r)), eg_now_ns())};
    eg_decision d;
    if (gw->cfg->inbox && p->rung < 0) {
        /* an inbox record's origin is its dialect's: original.* copied from the failed record go (dlq_origin.h) */
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(r->msg, &h) == 0) eg_dlq_origin_settle(h, gw->cfg->inbox);
    }
    int64_t t0 = eg_now_ns();
    eg_policy_decide(gw->policy, &fl->failure, r, &ctx, &d);
    eg_hist_observe(eg_histogram(gw->m.decision_seconds, NULL), (double)(eg_now_ns() - t0) / 1e9);
    if (gw->shadow) eg_shadow_offer(gw->shadow, &fl->failure, r, &ctx, &d); /* a copy, decided later */
    adjust(gw, r, &ctx, &d);
    count(gw, &d);
    fl->class_attempts = fl->class_attempts && strcmp(d.klass, fl->decision.klass) == 0 ? fl->class_attempts + 1 : 1;
    fl->decision = d;
    remember(fl, &d);
    carry_out(gw, r);
}

/* A due record of a replay rung (inbox mode; r was runnable): republished
 * to its errgate.replay-to topic ("original": its original.topic) with
 * `errgate replay`'s headers, through the lane producer; no target call and
 * no policy call. The loop guard of `errgate replay` applies: a record
 * already replayed EG_REPLAY_MAX_REPLAYS times, or one without a topic to
 * go to, is dead-lettered instead (reason loop_guard / replay_no_topic).
 * So is one whose topic is internal or not allowed (replay_dest.h: reason
 * replay_refused; the rung record's bytes may come from anyone who can
 * produce), a stub, whose value was omitted (refusal.h: reason
 * replay_stub; republished, it would be an empty record), and a protected
 * value that cannot go out as it came (reason replay_protected: a pointer,
 * a masked value, an encrypted one without its key; eg_lanes_unprotect). */
static void republish(eg_gw *gw, eg_record *r) {
    eg_fail *fl = fail_of(gw, r);
    eg_failure_clear(&fl->failure);
    fl->failure.kind = EG_FK_RECORDED;
    fl->failure.retry_after_ms = -1;
    r->state = EG_RS_IN_TARGET; /* carry_out takes it from where a decision would */
    eg_decision d;
    memset(&d, 0, sizeof d);
    char to[256], prev[256];
    /* "original": a legal topic name (dlq_origin.h) other than the inbox the record was triaged from */
    if (eg_header_str(r->msg, EG_H_REPLAY_TO, to, sizeof to) == 0 && !strcmp(to, "original") &&
        (eg_header_str(r->msg, EG_H_ORIG_TOPIC, to, sizeof to) < 0 || !eg_dlq_topic_ok(to, strlen(to)) ||
         (eg_header_str(r->msg, EG_H_PREVIOUS, prev, sizeof prev) == 0 && !strcmp(prev, to))))
        to[0] = '\0';
    size_t n = 0;
    long replays = eg_replays_parse(eg_header(r->msg, EG_H_REPLAYS, &n), n);
    eg_header_str(r->msg, EG_H_CLASS, d.klass, sizeof d.klass);
    eg_header_str(r->msg, EG_H_CODE, d.code, sizeof d.code);
    char why[200], allow[300], pwhy[300];
    int stub = eg_header(r->msg, EG_H_VALUE_OMITTED, &n) != NULL;
    int internal = to[0] && eg_replay_internal(gw->cfg, to, why, sizeof why);
    if (!to[0] || replays < 0 || replays >= EG_REPLAY_MAX_REPLAYS) {
        d.action = EG_ACT_DLQ;
        eg_decision_set_reason(&d, to[0] ? EG_RSN_LOOP_GUARD : EG_RSN_REPLAY_NO_TOPIC);
        snprintf(d.message, sizeof d.message, "%s",
                 to[0] ? "replayed too often (errgate.replays); dead-lettered"
                       : "no errgate.replay-to topic; dead-lettered");
    } else if (stub) {
        d.action = EG_ACT_DLQ;
        eg_decision_set_reason(&d, EG_RSN_REPLAY_STUB);
        snprintf(d.message, sizeof d.message,
                 "a stub (errgate.value-omitted: its value was too large for the rung) is not republished to %s as "
                 "an empty record; dead-lettered",
                 to);
    } else if (eg_lanes_unprotect(gw->lanes, r, pwhy, sizeof pwhy) != 0) {
        d.action = EG_ACT_DLQ;
        eg_decision_set_reason(&d, EG_RSN_REPLAY_PROTECTED);
        snprintf(d.message, sizeof d.message, "not republished to %.249s: %.200s; dead-lettered", to, pwhy);
    } else if (internal || !eg_replay_allowed(gw->cfg, to)) {
        d.action = EG_ACT_DLQ;
        eg_decision_set_reason(&d, EG_RSN_REPLAY_REFUSED);
        if (!internal) eg_replay_allow_text(gw->cfg, allow, sizeof allow);
        /* bounded pieces: the message is cut, never the format's tail */
        snprintf(d.message, sizeof d.message, "replay to %.249s refused: %s%.200s; dead-lettered", to,
                 internal ? "it is " : "not in ", internal ? why : allow);
    } else {
        d.action = EG_ACT_REPUBLISH;
        eg_strlcpy(d.replay_to, to, sizeof d.replay_to);
        char ot[256];
        int64_t op = eg_header_uint(r->msg, EG_H_ORIG_PARTITION);
        d.out_partition =
            eg_header_str(r->msg, EG_H_ORIG_TOPIC, ot, sizeof ot) == 0 && !strcmp(ot, to) && op >= 0 && op <= INT32_MAX
                ? (int32_t)op
                : -1;
        eg_decision_set_reason(&d, EG_RSN_REPLAY);
    }
    fl->decision = d;
    remember(fl, &d);
    carry_out(gw, r);
}

/* r's key is fenced (gw_fence.c; r was runnable): it follows the parked
 * record of its key to that one's lane with errgate.fenced-by, or is held
 * when the fence table is full. No target call, no policy call. */
static void fence_follow(eg_gw *gw, eg_record *r) {
    eg_fail *fl = fail_of(gw, r);
    eg_gw_fence_follow(gw, r, fl);
    r->state = EG_RS_IN_TARGET; /* carry_out takes it from where a decision would */
    if (fl->decision.action == EG_ACT_HOLD) (*gw->m.held)++;
    carry_out(gw, r);
}

/* r is a copy of a record its key's fence resolved already (gw_fence.c
 * logged and counted it): its offset is finished, nothing else is done. */
static void fence_duplicate(eg_gw *gw, eg_record *r) {
    r->state = EG_RS_IN_TARGET; /* finish_record takes it from where an ignore would */
    finish_record(gw, r);
}

/* The breaker's failures: the target itself is in trouble (timeouts,
 * refused connections, 5xx, 429), not the record. */
static int target_trouble(const eg_failure *f) {
    return f && (f->kind == EG_FK_TIMEOUT || f->kind == EG_FK_CONNECT ||
                 (f->kind == EG_FK_HTTP && (f->status >= 500 || f->status == 429)));
}

/* The breaker refused r: the policy decides what an open circuit means. */
static void circuit_open(eg_gw *gw, eg_record *r) {
    eg_fail *fl = fail_of(gw, r);
    eg_failure_clear(&fl->failure);
    fl->failure.kind = EG_FK_CIRCUIT_OPEN;
    fl->failure.message = eg_xstrdup("circuit open");
    r->state = EG_RS_IN_TARGET; /* decide() takes it from where a target failure would */
    decide(gw, r);
}

void eg_gw_on_target_done(eg_record *r, eg_failure *f, int cancelled, void *arg) {
    eg_gw *gw = arg;
    if (r->budget_req) {
        eg_budget_request_end(eg_budgets_at(&gw->budgets, r->budget_slot));
        r->budget_req = 0;
    }
    if (r->fail && r->fail->retrying) {
        eg_budgets_retry_end(&gw->budgets, r->budget_slot);
        r->fail->retrying = 0;
    }
    eg_gw_limits_done(gw, r, f, cancelled);
    if (cancelled) eg_breaker_release(&gw->breaker, r->breaker_pass);
    else eg_breaker_record(&gw->breaker, r->breaker_pass, target_trouble(f), breaker_now(gw));
    if (cancelled || r->part->revoked) {
        if (f) eg_failure_clear(f);
        abandon_record(gw, r);
        dispatch(gw);
        return;
    }
    if (!f) {
        if (r->attempt == 1) gw->succeeded_first++;
        (*gw->m.succeeded)++;
        if (r->attempt > 1 || !first_life(r)) {
            const char *tv[1] = {r->part->origin};
            (*eg_counter(gw->m.recovered, tv))++;
        }
        unhold(r);
        eg_gw_fence_resolved(gw, r); /* the parked record of its key: the next one may go */
        finish_record(gw, r);
        return;
    }
    eg_fail *fl = fail_of(gw, r);
    eg_failure_clear(&fl->failure);
    fl->failure = *f; /* takes the strings */
    decide(gw, r);
    dispatch(gw);
}

/* ----------------------------------------------------------------- lanes */

/* Ms left before r's unacknowledged lane write is spilled (the journal is
 * on and the write began after_ms ago), or -1 without a journal or when
 * the lane refused the write for good (spilling it would only move the
 * refusal to the drainer after its offset was committed). */
static int64_t spill_in(eg_gw *gw, const eg_record *r) {
    if (!gw->spill || r->fail->lane_refused) return -1;
    int64_t left = r->fail->lane_first_ms + gw->cfg->spill_after_ms - eg_now_ms();
    return left > 0 ? left : 0;
}

/* Clears r's lane-failure counts (its write is durable or abandoned). */
static void lane_ok(eg_gw *gw, eg_record *r) {
    if (!r->lane_failing) return;
    r->lane_failing = 0;
    r->part->lane_failing--;
    if (--gw->lane_failing == 0) gw->lane_failing_since_ms = 0;
    part_update_pause(gw, r->part);
}

/* Appends r's lane record to the journal, which then counts as durable.
 * A write still in flight stays with the producer (the record is freed by
 * its report; if that succeeds too, the record is written twice:
 * at-least-once). Returns 0 when spilled. */
static int spill_one(eg_gw *gw, eg_record *r) {
    const char *topic;
    eg_lane_body b;
    eg_lanes_body(gw->lanes, r, eg_policy_id(gw->policy), &b);
    rd_kafka_headers_t *h = eg_lanes_record(gw->lanes, r, r->part->origin, eg_policy_id(gw->policy), &b, &topic);
    eg_spill_rec sr = {.topic = topic,
                       .partition = r->partition,
                       .timestamp_ms = eg_wall_ms(),
                       .key = b.key,
                       .key_len = b.key_len,
                       .value = b.value,
                       .value_len = b.value_len,
                       .kheaders = h};
    char err[512];
    int rc = eg_spill_append(gw->spill, &sr, err, sizeof err);
    rd_kafka_headers_destroy(h);
    eg_logline l;
    if (eg_log_begin(&l, rc ? EG_ERROR : EG_WARN, rc ? "spill_failed" : "spilled")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_str(&l, "lane", topic);
        if (rc) eg_log_str(&l, "error", err);
        eg_log_end(&l);
    }
    if (rc) return -1;
    const char *lv[1] = {topic};
    (*eg_counter(gw->m.spilled, lv))++;
    r->fail->spilled = 1;
    lane_ok(gw, r);
    if (r->state == EG_RS_LANE_WRITE) {
        /* durable now; the record itself waits for the producer's report */
        outcome_durable(gw, r);
        (*r->part->processed)++;
    } else {
        finish_record(gw, r);
    }
    return 0;
}

/* The unacknowledged, spillable lane write to r's lane partition begun
 * first before r's, or NULL. */
static eg_record *spill_before(eg_gw *gw, const eg_record *r) {
    eg_record *best = NULL;
    const char *lane = lane_topic_of(gw, r);
    for (eg_record *q = gw->all; q; q = q->anext) {
        if (q == r || !q->fail || q->fail->spilled || !q->fail->lane_seq || q->fail->lane_seq >= r->fail->lane_seq ||
            (best && q->fail->lane_seq >= best->fail->lane_seq) || q->partition != r->partition || q->part->revoked ||
            spill_in(gw, q) < 0 || (q->state != EG_RS_LANE_WRITE && q->state != EG_RS_LANE_BACKOFF) ||
            strcmp(lane_topic_of(gw, q), lane) != 0)
            continue;
        best = q;
    }
    return best;
}

/* r's lane write has not been acknowledged within lanes.spill.after_ms:
 * the unacknowledged writes to its lane partition begun before it are
 * spilled first, in the order they began, then r, so that the journal
 * (drained in order) keeps a lane partition's order, as the producer does
 * (a key's followers behind its dead letter: timers due in one millisecond
 * fire in any order). Returns 0 when r is spilled, -1 when the journal
 * refused it or one before it. */
static int spill_record(eg_gw *gw, eg_record *r) {
    for (eg_record *q; (q = spill_before(gw, r));)
        if (spill_one(gw, q) != 0) return -1;
    return spill_one(gw, r);
}

/* r's lane write failed with err (at_produce: refused by the producer at
 * once, else in its delivery report). A size refusal of the record is
 * answered at once with its stub (refusal.h). Anything else backs off and
 * writes again: a transient error may be spilled after after_ms, a
 * permanent refusal (or a refused stub) is a loud hold: never spilled,
 * nothing committed past it, its partition paused, logged at error level
 * on every back-off step and counted, retried until the lane takes it. */
static void lane_failed(eg_gw *gw, eg_record *r, rd_kafka_resp_err_t err, int at_produce) {
    eg_part *p = r->part;
    eg_fail *fl = r->fail;
    const char *lane = lane_topic_of(gw, r);
    eg_refusal rf = eg_refusal_of(err);
    fl->lane_refused = rf != EG_REFUSAL_NONE;
    int stub = rf == EG_REFUSAL_SIZE && !fl->lane_stub;
    int64_t delay = 0;
    if (fl->lane_refused) {
        const char *lv[2] = {lane, rd_kafka_err2name(err)};
        (*eg_counter(gw->m.lane_refusals, lv))++;
    }
    if (!stub) {
        const char *lv[1] = {lane};
        (*eg_counter(gw->m.lane_failures, lv))++;
        if (!r->lane_failing) {
            r->lane_failing = 1;
            p->lane_failing++;
            if (gw->lane_failing++ == 0) gw->lane_failing_since_ms = eg_now_ms();
            part_update_pause(gw, p);
        }
        fl->lane_attempts++;
        int shift = fl->lane_attempts - 1 < LANE_BACKOFF_MAX_SHIFT ? fl->lane_attempts - 1 : LANE_BACKOFF_MAX_SHIFT;
        delay = (int64_t)LANE_BACKOFF_MIN_MS << shift;
        if (delay > LANE_BACKOFF_MAX_MS) delay = LANE_BACKOFF_MAX_MS;
        int64_t spill = spill_in(gw, r);
        if (spill >= 0 && spill < delay) delay = spill; /* the timer spills it (on_timer) */
    }
    eg_logline l;
    if (eg_log_begin(&l, fl->lane_refused ? EG_ERROR : EG_WARN,
                     fl->lane_refused ? "lane_write_refused" : "lane_write_failed")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_str(&l, "lane", lane);
        eg_log_str(&l, "error", rd_kafka_err2name(err));
        eg_log_str(&l, "when", at_produce ? "produce" : "delivery");
        if (stub) {
            eg_log_int(&l, "value_bytes", (int64_t)r->msg->len);
            eg_log_str(&l, "next", "stub");
        } else {
            if (fl->lane_refused) {
                eg_log_int(&l, "stub", fl->lane_stub);
                eg_log_str(&l, "next", "hold: not spilled, nothing committed past it, retried");
            }
            eg_log_int(&l, "lane_attempt", fl->lane_attempts);
            eg_log_int(&l, "retry_in_ms", delay);
        }
        eg_log_end(&l);
    }
    if (stub) { /* at once: the lane record without value and source headers */
        fl->lane_stub = 1;
        lane_write(gw, r);
        return;
    }
    r->state = EG_RS_LANE_BACKOFF;
    arm_timer(gw, r, delay);
}

static void lane_go(eg_gw *gw, eg_record *r);

/* The loop: lane writes whose fence writes are acknowledged go out. */
static void on_fence_lanes(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    eg_gw *gw = arg;
    for (eg_record *r; (r = eg_gw_fence_lane_next(gw));) lane_go(gw, r);
}

/* Writes r to its lane: under fencing, after the fence writes sent before
 * it (eg_gw_fence_lane_wait). */
static void lane_write(eg_gw *gw, eg_record *r) {
    if (gw->fencing && !gw->fence_lane_ev) gw->fence_lane_ev = event_new(gw->base, -1, 0, on_fence_lanes, gw);
    if (gw->fence_lane_ev && eg_gw_fence_lane_wait(gw, r)) return;
    lane_go(gw, r);
}

static void lane_go(eg_gw *gw, eg_record *r) {
    if (gw->txn.on) { /* written by the next commit's transaction */
        eg_gw_txn_wait(gw, r);
        return;
    }
    if (!r->fail->lane_first_ms) {
        r->fail->lane_first_ms = eg_now_ms();
        r->fail->lane_seq = ++gw->lane_seq;
    }
    r->state = EG_RS_LANE_WRITE;
    rd_kafka_resp_err_t err = eg_lanes_write(gw->lanes, r, r->part->origin, eg_policy_id(gw->policy));
    if (err) {
        lane_failed(gw, r, err, 1);
        return;
    }
    int64_t spill = spill_in(gw, r);
    if (spill >= 0) arm_timer(gw, r, spill); /* unacknowledged by then: spill (on_timer) */
}

static void lane_written(eg_gw *gw, eg_record *r);

void eg_gw_on_lane_done(eg_record *r, rd_kafka_resp_err_t err, void *arg) {
    eg_gw *gw = arg;
    if (r->fail->txn) { /* its outcome is its transaction's */
        if (eg_gw_txn_on_done(gw, r, err)) {
            abandon_record(gw, r);
            dispatch(gw);
        }
        return;
    }
    if (r->fail->spilled) {
        /* its outcome is the journal's; only the record is left to free */
        if (!err)
            eg_log_msg(EG_INFO, "lane_written_after_spill", "%s[%d]@%lld is in the lane and the journal", r->topic,
                       (int)r->partition, (long long)r->offset);
        abandon_record(gw, r);
        dispatch(gw);
        return;
    }
    if (r->part->revoked || (err && gw->stopping)) {
        abandon_record(gw, r);
        return;
    }
    if (err) {
        lane_failed(gw, r, err, 0);
        return;
    }
    lane_written(gw, r);
}

/* r's lane record is durable (acknowledged, or committed in a transaction):
 * count it, then finish r. */
static void lane_written(eg_gw *gw, eg_record *r) {
    const eg_decision *d = &r->fail->decision;
    if (r->lane_failing) {
        eg_log_msg(EG_INFO, "lane_recovered", "%s[%d]@%lld written after %d failed attempts", r->topic,
                   (int)r->partition, (long long)r->offset, r->fail->lane_attempts);
    }
    if (r->fail->lane_stub) {
        const char *sv[1] = {lane_topic_of(gw, r)};
        (*eg_counter(gw->m.lane_stubs, sv))++;
        eg_logline l;
        if (eg_log_begin(&l, EG_ERROR, "lane_value_omitted")) {
            eg_log_str(&l, "topic", r->topic);
            eg_log_int(&l, "partition", r->partition);
            eg_log_int(&l, "offset", r->offset);
            eg_log_str(&l, "lane", sv[0]);
            eg_log_int(&l, "value_bytes", (int64_t)r->msg->len);
            eg_log_str(&l, "msg",
                       "written as a stub without value and source headers: fetch the record from "
                       "the source by its coordinates while the source retains it");
            eg_log_end(&l);
        }
    }
    const char *lv[2] = {lane_topic_of(gw, r), d->reason}, *tv[1] = {r->part->origin};
    if ((d->action == EG_ACT_DLQ || d->action == EG_ACT_QUARANTINE) && r->attempt <= 1 && first_life(r) &&
        !r->fail->virtual_rungs && d->why != EG_RSN_FENCED)
        (*eg_counter(gw->m.poison, tv))++;
    switch (d->action) {
    case EG_ACT_DLQ:
        (*eg_counter(gw->m.dead, lv))++;
        (*eg_counter(gw->m.dead_by_topic, tv))++;
        break;
    case EG_ACT_QUARANTINE: (*eg_counter(gw->m.quarantined, lv))++; break;
    case EG_ACT_REPUBLISH: break; /* not a lane: the decision log says replay, then republish */
    case EG_ACT_IGNORE: break;    /* inbox mode's accepted-loss state record: counted as ignored */
    default: (*eg_counter(gw->m.laddered, lv))++; break;
    }
    finish_record(gw, r);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    eg_record *r = arg;
    eg_part *p = r->part;
    eg_gw *gw = p->gw;
    /* a revoke frees unborrowed records at once, so only a record whose
     * lane write is in flight (the spill timer) can see a revoked partition:
     * its report frees it */
    if (r->state == EG_RS_LANE_WRITE || r->state == EG_RS_LANE_BACKOFF) {
        if (r->fail->spilled || p->revoked) return;
        if (spill_in(gw, r) == 0 && spill_record(gw, r) == 0) return;
        if (r->state == EG_RS_LANE_WRITE) {
            /* could not spill: the producer keeps trying; check again later */
            arm_timer(gw, r, LANE_BACKOFF_MAX_MS);
            return;
        }
        lane_write(gw, r);
        return;
    }
    if (gw->stopping) {
        abandon_record(gw, r);
        return;
    }
    if (gw->cfg->ordering == EG_ORDER_PARTITION && r->fail->decision.action == EG_ACT_RETRY) {
        p->retry_wait--;
        part_update_pause(gw, p);
    }
    make_runnable(gw, r);
    dispatch(gw);
}

/* A rung partition's head record is due (or the timer of a partition that
 * has since been revoked fired): serve what is due, then drain. */
static void on_due(evutil_socket_t fd, short what, void *arg) {
    eg_part *p = arg;
    eg_gw *gw = p->gw;
    if (p->revoked || gw->closed) return;
    pump(gw, p);
    dispatch(gw);
    event_active(gw->cev, EV_READ, 0);
}

void eg_gw_redo_stopped(eg_gw *gw) {
    gw->waiting = 0;
    for (eg_record *r = gw->all; r; r = r->anext) {
        if (r->state != EG_RS_STOPPED) continue;
        eg_part *p = r->part;
        r->attempt = 0;
        if (r->fail) { /* from scratch: no streak, no first failure, no rungs waited in place */
            r->fail->class_attempts = 0;
            r->fail->first_failure_ms = 0;
            r->fail->virtual_rungs = 0;
        }
        p->active++;
        if (gw->cfg->ordering == EG_ORDER_KEY && p->rung < 0) eg_keyset_inc(&p->keys, r->key_hash);
        make_runnable(gw, r);
    }
    for (eg_part *p = gw->parts; p; p = p->next) {
        part_update_pause(gw, p);
        pump(gw, p);
    }
    dispatch(gw);
    if (!gw->closed) event_active(gw->cev, EV_READ, 0);
}

void eg_gw_rungs_recheck(eg_gw *gw) {
    for (eg_part *p = gw->parts; p; p = p->next)
        if (p->rung >= 0 && p->due_wait && !p->revoked) {
            evtimer_del(p->due_ev);
            pump(gw, p);
        }
    dispatch(gw);
    if (!gw->closed) event_active(gw->cev, EV_READ, 0);
}

/* --------------------------------------------------------------- commits */

/* Commits the finished prefix of every assigned partition that moved (or of
 * those in `only`, when given). Sync commits block the loop briefly: used
 * only on revoke (`only`: the revoked partitions) and at shutdown.
 *
 * An offset that did not move is committed again on a tick when
 * COMMIT_REFRESH_MS passed since it was last sent, and at shutdown. The group's
 * committed offset can go back under its owner: a previous owner's commit
 * that librdkafka deferred while the coordinator was unavailable is sent
 * when the coordinator is back, with the member's *current* generation, and
 * the broker accepts a commit from any member of the generation for any
 * partition (found by make chaos, seed 24: two partitions' committed offsets
 * went back ~580 records after a rebalance and stayed there, their lag stuck;
 * a restart would have redelivered those records). The owner's refresh
 * brings the offset back within that interval. A revoke's commit sends only
 * what moved: the group is rebalancing then, and the broker refuses it. */
/* The offset to commit for p: its tracker's commit point, or, with nothing
 * unfinished (nothing delivered yet included), librdkafka's position when
 * that is past it. A transactional
 * producer's control records (commit markers) take offsets the consumer
 * never delivers; librdkafka's position steps over them (also over the
 * last one, at the partition's end), and committing it lets the group's
 * lag reach 0 (e2e/test_kafka_txn_source). The position is the next offset
 * librdkafka would hand over, past every message it handed over: not while
 * a jump is being fetched again (gw_offsets.c), whose message was handed
 * over and dropped. */
static int64_t commit_point(eg_gw *gw, const eg_part *p) {
    int64_t cp = eg_tracker_commit_point(&p->trk);
    /* nothing tracked yet (cp < 0) is no reason to stop: a partition holding
     * only records of aborted transactions delivers nothing, and its position
     * passes them with the abort marker (chaos, --transactional: a rung whose
     * records were all aborted by a kill -9 kept its lag for ever) */
    if (eg_tracker_pending(&p->trk) != 0 || p->unfinished != 0 || eg_gw_source_probing(p)) return cp;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
    if (rd_kafka_position(gw->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].offset > cp) cp = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return cp;
}

/* lanes.transactional: the offsets l and the lane records of the records
 * below them commit in one transaction (gw_txn.c); on success the records
 * are settled as a delivery report would; a fatal error stops the gateway. */
static void commit_txn(eg_gw *gw, const rd_kafka_topic_partition_list_t *l) {
    eg_txn_result res = eg_gw_txn_run(gw, l);
    if (res != EG_TXN_OK) {
        (*gw->m.commit_failures)++;
        if (res == EG_TXN_FATAL || gw->txn.fatal) eg_gw_begin_stop(gw, EG_EXIT_FAIL, gw->txn.fatal_why);
        return;
    }
    (*gw->m.commits)++;
    for (int i = 0; i < l->cnt; i++) {
        eg_part *p = eg_gw_part_find(gw, l->elems[i].topic, l->elems[i].partition);
        if (p && l->elems[i].offset > p->committed) p->committed = l->elems[i].offset;
    }
    int n = gw->txn.nopen;
    eg_record **open = gw->txn.open;
    gw->txn.open = NULL; /* settling may decide and queue new records: they go to the waiting list */
    gw->txn.nopen = gw->txn.capopen = 0;
    for (int i = 0; i < n; i++) lane_written(gw, open[i]);
    free(open);
}

static void commit_offsets(eg_gw *gw, const rd_kafka_topic_partition_list_t *only, int sync) {
    if (gw->txn.on && (gw->txn.busy || gw->txn.fatal)) return; /* fenced or broken: nothing more is committed */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    int64_t now = eg_now_ms();
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (only && !rd_kafka_topic_partition_list_find(only, p->topic, p->partition)) continue;
        int64_t cp = commit_point(gw, p);
        if (cp < 0 || cp < p->committed) continue;
        /* unmoved: again at the stop's commit, and on ticks once the interval passed */
        int refresh = sync ? only == NULL : now - p->commit_sent_ms >= COMMIT_REFRESH_MS;
        if (cp == p->committed && !refresh) continue;
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = cp;
        p->commit_sent_ms = now;
    }
    if (l->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(l);
        return;
    }
    /* the decision lines of the records behind these offsets leave the log
     * buffer first: an ignored record's line is its only durable outcome,
     * and a kill -9 after the commit must not take it along */
    eg_log_flush();
    if (gw->txn.on) {
        commit_txn(gw, l);
        rd_kafka_topic_partition_list_destroy(l);
        return;
    }
    rd_kafka_resp_err_t err = rd_kafka_commit(gw->rk, l, !sync);
    if (sync) {
        if (err) {
            (*gw->m.commit_failures)++;
            eg_log_msg(EG_WARN, "commit_failed", "%s", rd_kafka_err2str(err));
        } else {
            for (int i = 0; i < l->cnt; i++) {
                const rd_kafka_topic_partition_t *e = &l->elems[i];
                eg_part *p = eg_gw_part_find(gw, e->topic, e->partition);
                if (e->err)
                    eg_log_msg(EG_WARN, "commit_failed", "%s[%d]@%lld: %s", e->topic, (int)e->partition,
                               (long long)e->offset, rd_kafka_err2str(e->err));
                else if (p && e->offset > p->committed) p->committed = e->offset;
            }
            (*gw->m.commits)++;
        }
    } else if (err) {
        (*gw->m.commit_failures)++;
        eg_log_msg(EG_WARN, "commit_failed", "%s", rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

void eg_gw_on_commit_result(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
                            void *opaque) {
    eg_gw *gw = opaque;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
    if (err) {
        (*gw->m.commit_failures)++;
        eg_log_msg(EG_WARN, "commit_failed", "%s (retried at the next commit)", rd_kafka_err2str(err));
        return;
    }
    (*gw->m.commits)++;
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        eg_part *p = eg_gw_part_find(gw, offsets->elems[i].topic, offsets->elems[i].partition);
        if (p && offsets->elems[i].err == 0 && offsets->elems[i].offset > p->committed)
            p->committed = offsets->elems[i].offset;
    }
}

void eg_gw_on_commit_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    if (gw->closed) return;
    commit_offsets(gw, NULL, 0);
    eg_gw_colocate_tick(gw);
}

/* ------------------------------------------------------------- rebalance */

/* True when `topic` came in through a regex source but is one of the
 * gateway's own lanes (the DLQ, quarantine or a rung of one of its source
 * topics): never consumed as source (config.c refuses the regexes it can
 * tell; this is the defence for the rest). Literal source topics and the
 * rung topics the gateway reads are never excluded. */
static int excluded_topic(const eg_gw *gw, const char *topic, const char **lane) {
    for (int i = 0; i < gw->cfg->ntopics; i++)
        if (strcmp(gw->cfg->topics[i], topic) == 0) return 0;
    if (strcmp(topic, gw->cfg->audit_topic) == 0) { /* operator changes, read by audit.c */
        *lane = "audit";
        return 1;
    }
    if (eg_gw_fence_topic_is(gw, topic)) { /* fences, read by gw_fence.c */
        *lane = "fence";
        return 1;
    }
    return eg_gw_rung_of(gw, topic) < 0 && eg_config_own_lane(gw->cfg, topic, lane);
}

static void assign_parts(eg_gw *gw, rd_kafka_topic_partition_list_t *all) {
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(all->cnt);
    for (int i = 0; i < all->cnt; i++) {
        const char *lane = NULL;
        if (!excluded_topic(gw, all->elems[i].topic, &lane)) {
            rd_kafka_topic_partition_list_add(parts, all->elems[i].topic, all->elems[i].partition);
            continue;
        }
        (*gw->m.excluded_topics)++;
        eg_log_msg(EG_WARN, "excluded_partition",
                   "%s[%d]: a source regex matched this %s lane of a source topic; not consumed", all->elems[i].topic,
                   (int)all->elems[i].partition, lane);
    }
    /* librdkafka keeps a partition's application pause across a revoke and
     * a re-assignment to the same consumer: a partition this gateway paused
     * before it was revoked would come back paused, with no reason of ours
     * to resume it, and never be read again. Every partition new to the
     * gateway is resumed once assigned; part_update_pause re-pauses it if
     * needed. */
    rd_kafka_topic_partition_list_t *fresh = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (eg_gw_part_find(gw, tp->topic, tp->partition)) continue;
        rd_kafka_topic_partition_list_add(fresh, tp->topic, tp->partition);
        eg_part *p = eg_xcalloc(1, sizeof *p);
        p->topic = eg_xstrdup(tp->topic);
        p->partition = tp->partition;
        p->refs = 1;
        p->gw = gw;
        p->rung = eg_gw_rung_of(gw, p->topic);
        p->origin = p->rung >= 0 ? gw->rts[p->rung].origin : p->topic;
        p->committed = -1;
        p->probe_from = -1;
        p->consumer_lag = -1;
        p->assigned_ms = eg_now_ms();
        const char *tv[1] = {p->topic};
        p->received = eg_counter(gw->m.received, tv);
        p->processed = eg_counter(gw->m.processed, tv);
        eg_tracker_init(&p->trk, (uint64_t)gw->cfg->max_inflight);
        p->next = gw->parts;
        gw->parts = p;
        eg_log_msg(EG_INFO, "assign", "%s[%d]", p->topic, (int)p->partition);
    }
    eg_gw_fence_rebuild(gw); /* the new source partitions' fences, before any of their records is taken */
    eg_gw_colocate(gw);      /* a rung partition without its source partition is paused (split) */
    rd_kafka_resp_err_t err = rd_kafka_assign(gw->rk, parts);
    if (err) eg_log_msg(EG_ERROR, "assign_failed", "%s", rd_kafka_err2str(err));
    else gw->assigned_once = 1;
    if (!err && fresh->cnt && (err = rd_kafka_resume_partitions(gw->rk, fresh)))
        eg_log_msg(EG_WARN, "resume_failed", "newly assigned partitions: %s", rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(fresh);
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
    rd_kafka_topic_partition_list_destroy(parts);
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
    eg_gw_fence_flush(gw, "a revoke", 1); /* the next owner rebuilds the fences from what is acknowledged */
    commit_offsets(gw, parts, 1);
    for (int i = 0; i < parts->cnt; i++) {
        eg_part **pp = &gw->parts;
        while (*pp &&
               !((*pp)->partition == parts->elems[i].partition && strcmp((*pp)->topic, parts->elems[i].topic) == 0))
            pp = &(*pp)->next;
        eg_part *p = *pp;
        if (!p) continue;
        *pp = p->next;
        p->revoked = 1;
        eg_log_msg(EG_INFO, "revoke", "%s[%d] committed=%lld", p->topic, (int)p->partition, (long long)p->committed);
        if (p->rung < 0) eg_gw_fence_revoked(gw, p->topic, p->partition);
        eg_record *r = gw->all;
        while (r) {
            eg_record *next = r->anext;
            if (r->part == p && r->state != EG_RS_IN_TARGET && r->state != EG_RS_LANE_WRITE) free_record(gw, r);
            r = next;
        }
        part_release_queue(p);
        eg_gw_part_unref(p);
    }
    rd_kafka_assign(gw->rk, NULL);
    gw->split_parts = 0;
    gw->coloc_off = 0;
}

void eg_gw_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque) {
    eg_gw *gw = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && !gw->closed) {
        assign_parts(gw, parts);
        eg_gw_coverage_assigned(gw->coverage, parts);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS || gw->closed) {
        eg_gw_coverage_revoked(gw->coverage);
        revoke_parts(gw, parts);
    } else {
        eg_log_msg(EG_WARN, "rebalance_error", "%s", rd_kafka_err2str(err));
        rd_kafka_assign(rk, NULL);
    }
}

/* -------------------------------------------------------------- consumer */

/* A consumer error by which the broker refuses the group's settings for
 * good: librdkafka 2.0.2 tries to join again every few seconds for ever,
 * so the gateway would wait unready with nothing said but a warning a
 * line. Before the first assignment (nothing consumed) it stops with
 * exit 2, as for any config error; later (the broker's settings changed
 * under a running group) with exit 1, committing what is finished. */
static void group_refused(eg_gw *gw, rd_kafka_resp_err_t err) {
    const char *why = NULL;
    switch (err) {
    case RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT:
        why = "the broker refuses kafka[\"session.timeout.ms\"] (outside its group.min.session.timeout.ms .. "
              "group.max.session.timeout.ms)";
        break;
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        why = "the broker refuses the group: not authorized (an ACL on the group)";
        break;
    case RD_KAFKA_RESP_ERR_INCONSISTENT_GROUP_PROTOCOL:
        why = "the broker refuses the group: its other members use another partition assignment strategy";
        break;
    default: return;
    }
    eg_log_msg(EG_ERROR, "group_refused", "group %s: %s", gw->cfg->group, why);
    eg_gw_begin_stop(gw, gw->assigned_once ? EG_EXIT_FAIL : EG_EXIT_USAGE, "the broker refuses the group");
}

/* A message from p's own queue, or (p NULL) from the consumer queue, where
 * it is looked up. */
static void on_message(eg_gw *gw, eg_part *p, rd_kafka_message_t *m) {
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eg_log_msg(EG_WARN, "consumer_error", "%s%s%s", rd_kafka_err2str(m->err), m->rkt ? " topic " : "",
                       m->rkt ? rd_kafka_topic_name(m->rkt) : "");
        group_refused(gw, m->err);
        rd_kafka_message_destroy(m);
        return;
    }
    if (!p) p = eg_gw_part_find(gw, rd_kafka_topic_name(m->rkt), m->partition);
    uint64_t seq;
    if (!p || eg_gw_source_offset(gw, p, m->offset) || eg_tracker_add(&p->trk, m->offset, &seq) != 0) {
        /* not ours any more, or already seen: never count it twice */
        rd_kafka_message_destroy(m);
        return;
    }
    eg_record *r = eg_slab_get(&gw->records);
    r->msg = m;
    r->part = p;
    p->refs++;
    r->topic = p->topic;
    r->partition = p->partition;
    r->offset = m->offset;
    r->seq = seq;
    eg_record_read_headers(r);
    eg_gw_check_claims(gw, p, r);
    if (eg_record_has_bad_id(r)) {
        (*gw->m.bad_ids)++;
        eg_log_msg(EG_WARN, "bad_id",
                   "%s[%d]@%lld: malformed %s header ignored; the record's id is its own "
                   "coordinates",
                   p->topic, (int)p->partition, (long long)m->offset, EG_H_ID);
    }
    check_tracker(gw, p);
    if (gw->cfg->ordering == EG_ORDER_KEY && p->rung < 0 && m->key) r->key_hash = eg_hash64(m->key, m->key_len);
    r->anext = gw->all;
    if (gw->all) gw->all->aprev = r;
    gw->all = r;
    r->state = EG_RS_PENDING;
    q_append(&p->pend_head, &p->pend_tail, r);
    p->unfinished++;
    gw->unfinished++;
    (*p->received)++;
    if (!gw->first_receive_ms) gw->first_receive_ms = eg_now_ms();
    pump(gw, p);
}

/* Takes messages from the partitions' own queues, a fair share each, while
 * they have room. Returns 1 if some partition may still have more. */
static int drain_partitions(eg_gw *gw) {
    int nparts = 0, more = 0, taken = 0;
    for (eg_part *p = gw->parts; p; p = p->next) nparts++;
    int share = nparts ? POLL_BUDGET / nparts : 0;
    if (share < POLL_SHARE_MIN) share = POLL_SHARE_MIN;
    for (eg_part *p = gw->parts; p && !gw->closed; p = p->next) {
        int n = 0;
        while (n < share) {
            if (!part_has_room(gw, p)) {
                if (!p->paused && p->q && !p->tracker_full) {
                    if (p->unfinished >= gw->cfg->max_inflight) p->blocked = 1;
                    else gw->blocked = 1;
                }
                break;
            }
            rd_kafka_message_t *m = rd_kafka_consume_queue(p->q, 0);
            if (!m) break;
            if (!m->err) taken++; /* a record, not a consumer error event */
            on_message(gw, p, m);
            n++;
        }
        if (n == share) more = 1;
        if (n) dispatch(gw);
    }
    eg_gw_fetchwake_taken(gw->fetchwake, taken); /* NULL once the stop closed the consumer */
    return more;
}

/* Operator overrides changed (gw_incident.c): pauses and rung due times follow. */
static void overrides_changed(eg_gw *gw) {
    gw->overrides_changed = 0;
    for (eg_part *p = gw->parts; p; p = p->next) part_update_pause(gw, p);
    eg_gw_rungs_recheck(gw);
}

/* The consumer's queues signalled (or the poll tick fired): serve group
 * events and commit results (rd_kafka_consumer_poll), then messages. */

void eg_gw_on_consumer_queue(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    char buf[64];
    if (fd >= 0)
        while (read(fd, buf, sizeof buf) > 0) {}
    rd_kafka_message_t *m;
    for (int n = 0; !gw->closed && n < POLL_BUDGET && (m = rd_kafka_consumer_poll(gw->rk, 0)); n++)
        on_message(gw, NULL, m); /* errors; messages arrive on the partition queues */
    if (gw->closed) return;
    if (gw->overrides_changed) overrides_changed(gw);
    if (drain_partitions(gw)) event_active(gw->cev, EV_READ, 0); /* more may wait; let others run */
    dispatch(gw);
}

/* The lane producer hit a fatal error lanes.c does not replace it for (a
 * transactional producer's: fenced; or the replacements' bound reached):
 * stop, commit only what is finished, exit 1. */
void eg_gw_on_lane_fatal(const char *reason, void *arg) {
    eg_gw *gw = arg;
    if (gw->txn.on) { /* a fenced transactional producer: nothing more may be committed */
        if (!gw->txn.fatal) snprintf(gw->txn.fatal_why, sizeof gw->txn.fatal_why, "%s", reason);
        gw->txn.fatal = 1;
        if (gw->txn.busy) return; /* the running transaction aborts, then commit_txn stops the gateway */
    }
    eg_gw_begin_stop(gw, EG_EXIT_FAIL, reason);
}

void eg_gw_on_consumer_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    eg_gw *gw = opaque;
    eg_log_msg(EG_WARN, "kafka_error", "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    if (err == RD_KAFKA_RESP_ERR__FATAL) eg_gw_begin_stop(gw, EG_EXIT_FAIL, "fatal consumer error");
}

/* -------------------------------------------------------------- shutdown */

void eg_gw_finish_stop(eg_gw *gw) {
    if (gw->closed) return;
    if (gw->drain_ev) evtimer_del(gw->drain_ev);
    gw->target->ops->cancel_all(gw->target);
    eg_lanes_purge(gw->lanes, STOP_PURGE_WAIT_MS);
    commit_offsets(gw, NULL, 1);
    gw->closed = 1;
    eg_gw_fetchwake_free(gw->fetchwake); /* its thread asks through the consumer */
    gw->fetchwake = NULL;
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
        eg_gw_finish_stop(gw);
        return;
    }
    struct timeval tv = eg_gw_tv(STOP_DRAIN_TICK_MS);
    evtimer_add(gw->drain_ev, &tv);
}

/* Stops taking new work; in-flight attempts and lane writes get
 * shutdown_timeout_ms to finish; then commit and close. */
void eg_gw_begin_stop(eg_gw *gw, int code, const char *why) {
    if (code > gw->exit_code) gw->exit_code = code;
    if (gw->stopping) return;
    gw->stopping = 1;
    eg_log_msg(code ? EG_ERROR : EG_INFO, "stop", "%s; draining for at most %d ms", why, gw->cfg->shutdown_timeout_ms);
    for (eg_part *p = gw->parts; p; p = p->next) part_update_pause(gw, p);
    gw->drain_deadline_ms = eg_now_ms() + gw->cfg->shutdown_timeout_ms;
    gw->drain_ev = evtimer_new(gw->base, on_drain_tick, gw);
    on_drain_tick(-1, 0, gw);
}

void eg_gw_drop_all(eg_gw *gw) {
    while (gw->all) free_record(gw, gw->all);
    while (gw->parts) {
        eg_part *p = gw->parts;
        gw->parts = p->next;
        part_release_queue(p);
        eg_gw_part_unref(p);
    }
}
