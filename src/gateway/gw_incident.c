/* gw_incident.c — the gateway's incident controls: the dead-letter flood
 * guard (dlq_guard), stop-and-wait (on_stop = "wait") and operator
 * overrides with expiry (override.c), shared by the group through the
 * audit topic (audit.c).
 *
 * Flood guard: every DLQ or quarantine decision is counted per source topic
 * by dlq_guard.c; while a topic's guard is tripped such a decision becomes a
 * hold (or a stop, dlq_guard.action) with reason `dlq_guard`, so a
 * downstream outage misclassified as permanent cannot drain a topic into
 * its DLQ. A trip, a re-arm and a reset are each one log line; the state is
 * the gauge errgate_dlq_guard_tripped{topic} and a /readyz reason.
 *
 * Overrides: an operator's change through any instance's admin endpoint is
 * written to the audit topic (audit.c), and every instance applies what it
 * reads there (on_audit): so the whole group sees one set of overrides, and
 * a restarted instance re-reads them before it consumes. The admin request
 * is answered once the record is acknowledged and read back here. Each
 * instance expires overrides by its own clock (logged once per instance);
 * an expired record is ignored when read. A pause override pauses the
 * matching assigned partitions; a rung override re-times a rung (gateway.c
 * and gw_rungs.c follow when gw->overrides_changed is set).
 *
 * Stop-and-wait: a stop decision with on_stop = "wait" leaves its record
 * unfinished (nothing committed past it), pauses every partition and turns
 * /readyz false with the reason, until POST /resume (gw_admin.c, which calls
 * eg_gw_redo_stopped) or SIGTERM (exit 0, offsets as at any stop).
 *
 * Called by gateway.c on the record path and by gw_admin.c for views and
 * control; calls nothing above it (gw.h's one-way order). Loop thread only. */
#include "gw.h"
#include "log.h"
#include "parse.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OVERRIDE_TICK_MS 1000                     /* how often expired overrides are removed (and logged) */
#define EG_CTL_REPLAY_WINDOW_MS (5LL * 60 * 1000) /* a signed record read live older than this: a replay */

/* Why an audit record was refused: the reason label of
 * errgate_control_records_refused_total (the index into control_refused). */
static const char *const refusals[] = {"malformed", "key_mismatch", "ttl_cap",       "delay_cap",
                                       "future",    "unsigned",     "bad_signature", "replayed"};
_Static_assert(sizeof refusals / sizeof refusals[0] ==
                   sizeof((eg_gw *)0)->control_refused / sizeof((eg_gw *)0)->control_refused[0],
               "one counter per refusal reason");

/* The guard's trips, re-arms and resets, logged. */
static void on_guard_event(void *arg, const char *topic, int tripped, int reset, uint64_t count) {
    eg_gw *gw = arg;
    eg_logline l;
    if (!eg_log_begin(&l, tripped ? EG_ERROR : EG_WARN, tripped ? "dlq_guard_tripped" : "dlq_guard_rearmed")) return;
    eg_log_str(&l, "topic", topic);
    eg_log_int(&l, "window_count", (int64_t)count);
    eg_log_int(&l, "window_s", gw->cfg->guard_window_s);
    eg_log_str(&l, "action", gw->cfg->guard_stop ? "stop" : "hold");
    if (tripped)
        eg_log_str(&l, "msg",
                   "dead letters above dlq_guard.max_per_second: DLQ and quarantine decisions of this "
                   "topic are held until it re-arms (errgate ctl dlq-guard reset)");
    else eg_log_str(&l, "by", reset ? "reset" : "cooldown");
    eg_log_end(&l);
}

/* Sets the flood guard up when the config has one. */
static int guard_start(eg_gw *gw, char *err, size_t errlen) {
    const eg_config *cfg = gw->cfg;
    if (!cfg->guard_enabled) return 0;
    eg_dlq_guard_cfg gc = {.max_per_second = cfg->guard_max_per_second,
                           .window_s = cfg->guard_window_s,
                           .cooldown_s = cfg->guard_cooldown_s};
    if (eg_dlq_guard_init(&gw->guard, &gc, on_guard_event, gw, err, errlen) != 0) return -1;
    for (int i = 0; i < cfg->ntopics; i++)
        if (!eg_topic_is_regex(cfg->topics[i])) eg_dlq_guard_watch(&gw->guard, cfg->topics[i]);
    return 0;
}

void eg_gw_guard_adjust(eg_gw *gw, const eg_record *r, eg_decision *d) {
    if (!gw->cfg->guard_enabled || (d->action != EG_ACT_DLQ && d->action != EG_ACT_QUARANTINE) ||
        !eg_policy_guarded(gw->policy, d->klass))
        return;
    const char *topic = r->part->origin;
    if (eg_dlq_guard_admit(&gw->guard, topic, eg_now_ms()) == EG_GUARD_PASS) return;
    snprintf(d->message, sizeof d->message, "%s refused by the dlq_guard of %s (above %g per second over %d s)",
             eg_action_name(d->action), topic, gw->cfg->guard_max_per_second, gw->cfg->guard_window_s);
    d->action = gw->cfg->guard_stop ? EG_ACT_STOP : EG_ACT_HOLD;
    d->delay_ms = gw->cfg->guard_stop ? 0 : DEFAULT_HOLD_MS;
    eg_decision_set_reason(d, EG_RSN_DLQ_GUARD);
}

int eg_gw_stop_wait(eg_gw *gw, const eg_record *r) {
    if (!gw->cfg->on_stop_wait || gw->stopping) return 0;
    const eg_decision *d = &r->fail->decision;
    if (!gw->waiting)
        snprintf(gw->wait_why, sizeof gw->wait_why,
                 "stopped at %s[%d]@%lld (class %s, reason %s): waiting for errgate "
                 "ctl resume",
                 r->topic, (int)r->partition, (long long)r->offset, d->klass, d->reason);
    gw->waiting = 1;
    eg_logline l;
    if (eg_log_begin(&l, EG_ERROR, "stop_wait")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_str(&l, "class", d->klass);
        eg_log_str(&l, "reason", d->reason);
        eg_log_str(&l, "msg",
                   "consumption paused, nothing committed past this record; resume with errgate ctl "
                   "resume, or SIGTERM to exit");
        eg_log_end(&l);
    }
    return 1;
}

int eg_gw_incident_ready(eg_gw *gw, char *why, size_t whylen) {
    if (gw->waiting) {
        eg_strlcpy(why, gw->wait_why, whylen);
        return 0;
    }
    if (!gw->cfg->guard_enabled) return 1;
    int64_t now = eg_now_ms();
    if (eg_dlq_guard_poll(&gw->guard, now) == 0) return 1;
    const char *topic;
    int tripped;
    uint64_t count;
    for (int i = 0; eg_dlq_guard_topic(&gw->guard, i, now, &topic, &tripped, &count) == 0; i++)
        if (tripped) {
            snprintf(why, whylen, "dlq_guard tripped for %s (%llu dead-letter decisions in %d s): dead letters %s",
                     topic, (unsigned long long)count, gw->cfg->guard_window_s,
                     gw->cfg->guard_stop ? "stop" : "are held");
            break;
        }
    return 0;
}

void eg_gw_incident_metrics(eg_gw *gw, struct evbuffer *out) {
    eg_metric_header(out, "errgate_overrides_active", "Operator overrides in force.", "gauge");
    eg_metric_sample(out, "errgate_overrides_active", 0, NULL, NULL, gw->overrides.n);
    static const char *const rl[] = {"topic", "reason"};
    eg_metric_header(out, "errgate_control_records_refused_total",
                     "Control records (audit topic) refused and never applied, by reason.", "counter");
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const char *rv[2] = {gw->cfg->audit_topic, refusals[i]};
        eg_metric_sample(out, "errgate_control_records_refused_total", 2, rl, rv, (double)gw->control_refused[i]);
    }
    static const char *const tl1[] = {"topic"};
    const char *tv1[] = {gw->cfg->audit_topic};
    eg_metric_header(out, "errgate_control_records_reread_total",
                     "Control records read again after the reader's position was reset below them (out of range).",
                     "counter");
    eg_metric_sample(out, "errgate_control_records_reread_total", 1, tl1, tv1, (double)eg_audit_reread(gw->audit));
    eg_metric_header(out, "errgate_waiting_for_operator",
                     "1 while a stop decision waits for errgate ctl resume (on_stop = wait).", "gauge");
    eg_metric_sample(out, "errgate_waiting_for_operator", 0, NULL, NULL, gw->waiting);
    if (!gw->cfg->guard_enabled) return;
    int64_t now = eg_now_ms();
    eg_dlq_guard_poll(&gw->guard, now);
    static const char *const tl[] = {"topic"};
    const char *topic;
    int tripped;
    uint64_t count;
    eg_metric_header(out, "errgate_dlq_guard_tripped",
                     "1 while the dead-letter flood guard of a source topic holds its dead letters.", "gauge");
    for (int i = 0; eg_dlq_guard_topic(&gw->guard, i, now, &topic, &tripped, &count) == 0; i++) {
        const char *tv[1] = {topic};
        eg_metric_sample(out, "errgate_dlq_guard_tripped", 1, tl, tv, tripped);
    }
}

/* ------------------------------------------------------------ overrides */

/* An admin request whose change was written to the audit topic: answered
 * once this instance has read its record back (or at its deadline: it is
 * durable, and applies when read), or with 503 when the write failed. */
typedef struct eg_ov_req {
    eg_gw *gw;
    eg_admin_pending *ap;
    eg_override o; /* an override change, or (reset) nothing */
    int reset;     /* a dlq-guard reset: rearmed counts this instance's re-armed guards */
    int rearmed;
    const char *result; /* "set", "replaced", "cleared", "reset" */
    int32_t partition;
    int64_t offset;      /* -1 until acknowledged */
    int64_t deadline_ms; /* monotonic */
    struct eg_ov_req *next;
} eg_ov_req;

#define OV_APPLY_WAIT_MS 3000 /* after the acknowledgement: the longest wait to read it back */

/* Logs a change of the overrides (an operator's, a restore at start, or an
 * expiry). */
static void log_override(const char *event, const eg_override *o) {
    static const char *const kinds[] = {"", "class", "code", "topic", "rung", "pause"};
    eg_logline l;
    if (!eg_log_begin(&l, EG_WARN, event)) return;
    eg_log_str(&l, "name", o->name);
    eg_log_str(&l, "match", kinds[o->match]);
    eg_log_str(&l, "value", o->value);
    if (o->partition >= 0) eg_log_int(&l, "partition", o->partition);
    if (o->match == EG_OV_RUNG) eg_log_int(&l, "delay_ms", o->delay_ms);
    else if (o->match != EG_OV_PAUSE) eg_log_str(&l, "action", eg_action_name((eg_action)o->action));
    eg_log_str(&l, "reason", o->reason);
    eg_log_str(&l, "by", o->by);
    eg_log_int(&l, "expires_at_ms", o->expires_at_ms);
    eg_log_end(&l);
}

/* The overrides changed: the record path re-reads pauses and rung delays
 * on its next pass (gateway.c), woken now. */
static void overrides_changed(eg_gw *gw) {
    gw->overrides_changed = 1;
    if (gw->cev) event_active(gw->cev, EV_READ, 0);
}

/* Answers r with code and a body, unlinks and frees it. */
static void ov_req_answer(eg_ov_req *r, int code, struct evbuffer *b) {
    for (eg_ov_req **pp = &r->gw->ov_reqs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    eg_admin_answer(r->ap, code, b);
    free(r);
}

/* Answers every request whose record was read back here, or whose wait is
 * over. */
static void ov_reqs_check(eg_gw *gw) {
    int64_t now = eg_now_ms();
    for (eg_ov_req *r = gw->ov_reqs, *next; r; r = next) {
        next = r->next;
        if (r->offset < 0) continue;
        int applied = eg_audit_applied(gw->audit, r->partition, r->offset);
        if (!applied && now < r->deadline_ms) continue;
        if (!applied)
            eg_log_msg(EG_WARN, "audit_not_read_back",
                       "%s: written to the audit topic, not read back within %d ms; it applies once read",
                       r->reset ? "dlq-guard reset" : r->o.name, OV_APPLY_WAIT_MS);
        struct evbuffer *b = evbuffer_new();
        if (r->reset) {
            if (gw->last_reset.partition == r->partition && gw->last_reset.offset == r->offset)
                r->rearmed = gw->last_reset.rearmed; /* its own record, read back (maybe before its report) */
            evbuffer_add_printf(b, "{\"result\":\"reset\",\"enabled\":%s,\"rearmed\":%d}",
                                gw->cfg->guard_enabled ? "true" : "false", r->rearmed);
        } else {
            evbuffer_add_printf(b, "{\"result\":\"%s\",\"override\":", r->result);
            eg_override_json(&r->o, b);
            evbuffer_add_printf(b, ",\"applied\":%s}", applied ? "true" : "false");
        }
        ov_req_answer(r, 200, b);
    }
}

/* The audit write of an admin request was acknowledged or failed. */
static void on_ov_written(void *req, int32_t partition, int64_t offset, const char *err) {
    eg_ov_req *r = req;
    if (err) {
        char msg[400];
        snprintf(msg, sizeof msg, "cannot write the change to the audit topic %s: %s; nothing changed",
                 r->gw->cfg->audit_topic, err);
        eg_log_msg(EG_ERROR, "audit_write_failed", "%s: %s", r->reset ? "dlq-guard reset" : r->o.name, msg);
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{\"error\":");
        eg_json_str(b, msg);
        evbuffer_add(b, "}", 1);
        ov_req_answer(r, 503, b);
        return;
    }
    r->partition = partition;
    r->offset = offset;
    r->deadline_ms = eg_now_ms() + OV_APPLY_WAIT_MS;
    ov_reqs_check(r->gw);
}

#define GUARD_RESET_KEY "!dlq-guard-reset" /* after "GROUP/"; no override name starts with '!' */

static void refuse(eg_gw *gw, const eg_audit_rec *r, const char *reason, const char *why);

/* 1 when a live record of a keyed deployment, written at at_ms, is too
 * old to be a fresh change: a signed record produced again later (a
 * replay) is refused for it. At start, when the topic is re-read, old
 * records are the state in force and pass. */
static int stale(const eg_audit_rec *r, int64_t at_ms, int64_t now) {
    return r->keyed && r->live && at_ms < now - EG_CTL_REPLAY_WINDOW_MS;
}

/* A dlq-guard reset record of this group: read live (not when re-read at
 * start: it is past), every tripped guard of this instance re-arms. */
static void on_guard_reset_record(eg_gw *gw, const eg_audit_rec *r) {
    char group[256], by[80] = "unknown", at[64];
    int64_t at_ms = 0, now = eg_wall_ms();
    if (eg_json_get_str(r->val, r->vlen, "group", group, sizeof group) != 0 || strcmp(group, gw->cfg->scope) != 0 ||
        eg_json_get_str(r->val, r->vlen, "at", at, sizeof at) != 0 || eg_parse_time_ms(at, &at_ms) != 0) {
        refuse(gw, r, "malformed", "not a dlq-guard reset of this group with its time");
        return;
    }
    if (at_ms > now + EG_OVERRIDE_SKEW_MS) {
        refuse(gw, r, "future", "at: more than 5 minutes in the future");
        return;
    }
    if (stale(r, at_ms, now)) {
        refuse(gw, r, "replayed", "a signed reset older than the replay window");
        return;
    }
    eg_json_get_str(r->val, r->vlen, "by", by, sizeof by);
    int n = r->live && gw->cfg->guard_enabled ? eg_dlq_guard_reset(&gw->guard) : 0;
    if (r->live) eg_log_msg(EG_WARN, "dlq_guard_reset", "by %s, through the audit topic: %d guard(s) re-armed", by, n);
    gw->last_reset.partition = r->partition;
    gw->last_reset.offset = r->offset;
    gw->last_reset.rearmed = n;
    ov_reqs_check(gw);
}

/* An audit record refused: counted under reason (one of refusals[]),
 * logged (the log's per-event rate limit bounds a flood), never applied.
 * One read again after a reset was refused when first read: not again. */
static void refuse(eg_gw *gw, const eg_audit_rec *r, const char *reason, const char *why) {
    if (r->reread) return;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (!strcmp(refusals[i], reason)) gw->control_refused[i]++;
    eg_logline l;
    if (!eg_log_begin(&l, EG_WARN, "control_record_refused")) return;
    eg_log_str(&l, "topic", gw->cfg->audit_topic);
    eg_log_int(&l, "partition", r->partition);
    eg_log_int(&l, "offset", r->offset);
    eg_log_str(&l, "reason", reason);
    eg_log_str(&l, "msg", why);
    eg_log_end(&l);
}

/* One record of the audit topic: an override of this group set, replaced
 * or cleared (an expired one is ignored: each instance expires its own).
 * Records of other groups are not ours to judge (skipped silently); one of
 * ours that audit.c found unsigned, badly signed or replayed (a keyed
 * deployment), malformed, keyed under another name than its own, past
 * what a writer may set (eg_override_check), or live and older than the
 * replay window is refused. */
static void on_audit(void *arg, const eg_audit_rec *r) {
    eg_gw *gw = arg;
    size_t gl = strlen(gw->cfg->scope), klen = r->klen;
    const char *key = r->key;
    if (!key || klen <= gl || memcmp(key, gw->cfg->scope, gl) != 0 || key[gl] != '/') return;
    if (!r->val) return; /* a tombstone: compaction's, nothing to apply */
    if (r->refusal) {
        refuse(gw, r, r->refusal,
               !strcmp(r->refusal, "unsigned")   ? "no errgate.sig header, and control_key_file is set"
               : !strcmp(r->refusal, "replayed") ? "its signature was already read: a copy produced again"
                                                 : "its errgate.sig does not verify with the deployment's key");
        return;
    }
    if (klen == gl + 1 + strlen(GUARD_RESET_KEY) && !memcmp(key + gl + 1, GUARD_RESET_KEY, klen - gl - 1)) {
        on_guard_reset_record(gw, r);
        return;
    }
    eg_override o;
    char group[256], err[320];
    const char *why;
    int64_t cleared, now = eg_wall_ms();
    if (eg_override_from_audit(r->val, r->vlen, &o, group, sizeof group, &cleared, err, sizeof err) != 0) {
        refuse(gw, r, "malformed", err);
        return;
    }
    if (strcmp(group, gw->cfg->scope) != 0) {
        refuse(gw, r, "key_mismatch", "its group is not the one its key names");
        return;
    }
    if (klen != gl + 1 + strlen(o.name) || memcmp(key + gl + 1, o.name, klen - gl - 1) != 0) {
        refuse(gw, r, "key_mismatch", "its key is not GROUP/NAME of the override it holds");
        return;
    }
    if (eg_override_check(&o, cleared, now, gw->cfg->override_max_ttl_ms, &why, err, sizeof err) != 0) {
        refuse(gw, r, why, err);
        return;
    }
    if (stale(r, cleared ? cleared : o.set_at_ms, now)) {
        refuse(gw, r, "replayed", "a signed change older than the replay window, read live");
        return;
    }
    /* a signed change older than the latest one applied to its name (beyond the clocks' skew) is a copy
     * produced again: at start too, where compaction may have removed the original it copies */
    int64_t when = cleared ? cleared : o.set_at_ms, latest = -1;
    size_t nl = strlen(o.name);
    if (r->keyed && (latest = eg_strmap_get(&gw->ov_latest, o.name, nl)) >= 0 && when < latest - EG_OVERRIDE_SKEW_MS) {
        if (!r->reread) /* read again after a reset, it is only older: no copy, and no change */
            refuse(gw, r, "replayed", "a signed change older than the one in force for its name");
        ov_reqs_check(gw);
        return;
    }
    if (r->keyed && when > latest) eg_strmap_put(&gw->ov_latest, o.name, nl, when);
    o.trusted = r->keyed;
    int changed = 0, live = r->live;
    int same = 0; /* read again after a reset: what is in force already is no change, said nowhere */
    for (int i = 0; r->reread && !cleared && i < gw->overrides.n; i++)
        same |= eg_override_same(&gw->overrides.v[i], &o);
    if (same) {
        ov_reqs_check(gw);
        return;
    }
    if (cleared) {
        eg_override old;
        if (eg_overrides_clear(&gw->overrides, o.name, &old) == 0) {
            log_override("override_cleared", &old);
            changed = 1;
        }
    } else if (o.expires_at_ms <= now) {
        changed = eg_overrides_clear(&gw->overrides, o.name, NULL) == 0; /* a replaced one ended too */
    } else {
        eg_override gone;
        int rc = eg_overrides_set(&gw->overrides, &o, &gone);
        if (rc < 0) eg_log_msg(EG_ERROR, "override_refused", "%s: too many overrides in force", o.name);
        else log_override(!live ? "override_restored" : rc == 1 ? "override_replaced" : "override_set", &o);
        if (rc == 2) log_override("override_evicted", &gone);
        changed = rc >= 0;
    }
    if (changed && (live || r->reread)) overrides_changed(gw);
    ov_reqs_check(gw);
}

/* An override ran out: logged, and gone. */
static void on_override_expired(void *arg, const eg_override *o) { log_override("override_expired", o); }

/* The expiry tick: overrides end on time even when no decision looks; the
 * audit topic is served (a safety net for its wake-ups) and requests past
 * their wait are answered. */
static void on_override_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    if (eg_overrides_expire(&gw->overrides, eg_wall_ms(), on_override_expired, gw) > 0) overrides_changed(gw);
    eg_audit_poll(gw->audit);
    ov_reqs_check(gw);
}

int eg_gw_incident_start(eg_gw *gw, char *err, size_t errlen) {
    gw->last_reset.offset = -1;
    if (!(gw->audit = eg_audit_open(gw->cfg, gw->base, on_audit, gw, err, errlen))) return -1;
    gw->override_ev = event_new(gw->base, -1, EV_PERSIST, on_override_tick, gw);
    struct timeval tv = eg_gw_tv(OVERRIDE_TICK_MS);
    event_add(gw->override_ev, &tv);
    return guard_start(gw, err, errlen);
}

void eg_gw_incident_free(eg_gw *gw) {
    if (gw->override_ev) event_free(gw->override_ev);
    gw->override_ev = NULL;
    eg_audit_free(gw->audit); /* unacknowledged writes answer 503 */
    gw->audit = NULL;
    while (gw->ov_reqs) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{\"error\":\"the gateway is shutting down\"}");
        ov_req_answer(gw->ov_reqs, 503, b);
    }
    eg_overrides_free(&gw->overrides);
    eg_strmap_free(&gw->ov_latest);
    eg_dlq_guard_free(&gw->guard);
}

void eg_gw_override_adjust(eg_gw *gw, const eg_record *r, eg_decision *d) {
    if (gw->overrides.n == 0) return;
    int64_t now = eg_wall_ms();
    if (d->action == EG_ACT_LADDER) {
        const eg_override *ro = eg_overrides_rung(&gw->overrides, d->rung, now);
        if (ro) {
            d->delay_ms = ro->delay_ms;
            d->not_before_ms = eg_override_add_ms(now, ro->delay_ms);
            eg_strlcpy(d->override, ro->name, sizeof d->override);
        }
    }
    const eg_override *o = eg_overrides_match(&gw->overrides, r->part->origin, r->partition, d->klass, d->code, now);
    if (!o) return;
    if (!d->fallback) /* a fallback keeps its error as the message (and is still counted as one) */
        snprintf(d->message, sizeof d->message, "override %s (by %s): %s; the policy decided %s", o->name, o->by,
                 o->reason, eg_action_name(d->action));
    d->action = (eg_action)o->action;
    if ((d->action == EG_ACT_HOLD || d->action == EG_ACT_RETRY) && d->delay_ms <= 0) d->delay_ms = DEFAULT_HOLD_MS;
    eg_decision_set_reason(d, EG_RSN_OVERRIDE);
    eg_strlcpy(d->override, o->name, sizeof d->override);
}

/* A JSON {"error": msg} into out; returns code. */
static int ov_error(struct evbuffer *out, int code, const char *msg) {
    evbuffer_add_printf(out, "{\"error\":");
    eg_json_str(out, msg);
    evbuffer_add(out, "}", 1);
    return code;
}

/* 1 when the gateway consumes a rung of that name (for some source). */
static int known_rung(const eg_gw *gw, const char *rung) {
    for (int i = 0; i < gw->nrts; i++)
        if (!strcmp(gw->rts[i].rung, rung)) return 1;
    return 0;
}

/* Writes value v (freed) under key to the audit topic for the admin
 * request r (owned from here) and defers its answer. Returns
 * EG_ADMIN_DEFERRED, or 503 with out when it cannot be queued. */
static int audit_request(eg_gw *gw, const char *key, struct evbuffer *v, eg_ov_req *r, struct evbuffer *out) {
    char err[320];
    r->gw = gw;
    r->offset = -1;
    size_t vlen = evbuffer_get_length(v);
    int rc = eg_audit_write(gw->audit, key, evbuffer_pullup(v, -1), vlen, on_ov_written, r, err, sizeof err);
    evbuffer_free(v);
    if (rc != 0) {
        free(r);
        return ov_error(out, 503, err);
    }
    r->ap = eg_admin_defer(gw->admin);
    r->next = gw->ov_reqs;
    gw->ov_reqs = r;
    return EG_ADMIN_DEFERRED;
}

/* Writes o (cleared at cleared_at_ms when > 0) to the audit topic for an
 * admin request (see audit_request). */
static int ov_write(eg_gw *gw, const eg_override *o, int64_t cleared_at_ms, const char *result, struct evbuffer *out) {
    char key[400];
    snprintf(key, sizeof key, "%s/%s", gw->cfg->scope, o->name);
    struct evbuffer *v = evbuffer_new();
    eg_override_audit_json(o, gw->cfg->scope, cleared_at_ms, v);
    eg_ov_req *r = eg_xcalloc(1, sizeof *r);
    r->o = *o;
    r->result = result;
    return audit_request(gw, key, v, r, out);
}

int eg_gw_guard_reset(eg_gw *gw, const char *body, size_t len, struct evbuffer *out) {
    char key[400], at[40], by[80];
    snprintf(key, sizeof key, "%s/%s", gw->cfg->scope, GUARD_RESET_KEY);
    if (eg_override_form_field(body, len, "by", by, sizeof by) != 0 || !by[0]) eg_strlcpy(by, "unknown", sizeof by);
    eg_rfc3339(eg_wall_ms(), at, sizeof at);
    struct evbuffer *v = evbuffer_new();
    evbuffer_add_printf(v, "{\"group\":");
    eg_json_str(v, gw->cfg->scope);
    evbuffer_add_printf(v, ",\"event\":\"dlq-guard-reset\",\"by\":");
    eg_json_str(v, by);
    evbuffer_add_printf(v, ",\"at\":\"%s\"}", at);
    eg_ov_req *r = eg_xcalloc(1, sizeof *r);
    r->reset = 1;
    r->result = "reset";
    return audit_request(gw, key, v, r, out);
}

int eg_gw_overrides_request(eg_gw *gw, int method, const char *path, const char *body, size_t len,
                            struct evbuffer *out) {
    int64_t now = eg_wall_ms();
    if (eg_overrides_expire(&gw->overrides, now, on_override_expired, gw) > 0) overrides_changed(gw);
    const char *name = path[10] == '/' ? path + 11 : NULL;
    if (method == EG_ADMIN_GET && !name) {
        evbuffer_add_printf(out, "{\"overrides\":[");
        for (int i = 0; i < gw->overrides.n; i++) {
            if (i) evbuffer_add(out, ",", 1);
            eg_override_json(&gw->overrides.v[i], out);
        }
        evbuffer_add(out, "]}", 2);
        return 200;
    }
    if (method == EG_ADMIN_POST && !name) {
        eg_override o;
        char err[320];
        if (eg_override_parse(body, len, now, gw->cfg->override_max_ttl_ms, &o, err, sizeof err) != 0)
            return ov_error(out, 400, err);
        if (o.match == EG_OV_CLASS && !eg_policy_knows_class(gw->policy, o.value)) {
            char classes[200];
            eg_policy_classes(gw->policy, classes, sizeof classes);
            snprintf(err, sizeof err, "class: unknown class '%.64s' (the policy's classes: %s)", o.value, classes);
            return ov_error(out, 400, err);
        }
        if (o.match == EG_OV_RUNG && !known_rung(gw, o.value)) {
            snprintf(err, sizeof err, "rung: unknown rung '%s' (not one the policy's ladders name)", o.value);
            return ov_error(out, 400, err);
        }
        int exists = 0;
        for (int i = 0; i < gw->overrides.n; i++) exists |= !strcmp(gw->overrides.v[i].name, o.name);
        /* only overrides signed with the deployment's key fill the table for an operator: unsigned ones are
         * evicted for a new one when it is read back (eg_overrides_set) */
        if (!exists && eg_overrides_trusted(&gw->overrides) >= EG_OVERRIDE_MAX) {
            snprintf(err, sizeof err, "too many overrides in force (%d)", EG_OVERRIDE_MAX);
            return ov_error(out, 409, err);
        }
        return ov_write(gw, &o, 0, exists ? "replaced" : "set", out);
    }
    if (method == EG_ADMIN_DELETE && name && *name) {
        for (int i = 0; i < gw->overrides.n; i++)
            if (!strcmp(gw->overrides.v[i].name, name)) return ov_write(gw, &gw->overrides.v[i], now, "cleared", out);
        char msg[160];
        snprintf(msg, sizeof msg, "no override in force is called '%.64s'", name);
        return ov_error(out, 404, msg);
    }
    evbuffer_add_printf(out, "{\"error\":\"use GET or POST /overrides, DELETE /overrides/NAME\"}");
    return 405;
}
