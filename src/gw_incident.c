/* gw_incident.c — the gateway's incident controls: the dead-letter flood
 * guard (dlq_guard), stop-and-wait (on_stop = "wait") and operator
 * overrides with expiry (override.c; this instance's only, for now).
 *
 * Flood guard: every DLQ or quarantine decision is counted per source topic
 * by dlq_guard.c; while a topic's guard is tripped such a decision becomes a
 * hold (or a stop, dlq_guard.action) with reason `dlq_guard`, so a
 * downstream outage misclassified as permanent cannot drain a topic into
 * its DLQ. A trip, a re-arm and a reset are each one log line; the state is
 * the gauge errgate_dlq_guard_tripped{topic} and a /readyz reason.
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
#include "util.h"

#include <stdio.h>
#include <string.h>

#define OVERRIDE_TICK_MS 1000 /* how often expired overrides are removed (and logged) */

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
    eg_strlcpy(d->reason, "dlq_guard", sizeof d->reason);
}

void eg_gw_guard_reset(eg_gw *gw, struct evbuffer *out) {
    int n = gw->cfg->guard_enabled ? eg_dlq_guard_reset(&gw->guard) : 0;
    evbuffer_add_printf(out, "{\"result\":\"reset\",\"enabled\":%s,\"rearmed\":%d}",
                        gw->cfg->guard_enabled ? "true" : "false", n);
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

/* Logs a change of the overrides (an operator's, or an expiry). */
static void log_override(const char *event, const eg_override *o) {
    eg_logline l;
    if (!eg_log_begin(&l, EG_WARN, event)) return;
    eg_log_str(&l, "name", o->name);
    eg_log_str(&l, "action", eg_action_name((eg_action)o->action));
    eg_log_str(&l, "reason", o->reason);
    eg_log_str(&l, "by", o->by);
    eg_log_int(&l, "expires_at_ms", o->expires_at_ms);
    eg_log_end(&l);
}

/* An override ran out: logged, and gone. */
static void on_override_expired(void *arg, const eg_override *o) { log_override("override_expired", o); }

/* The expiry tick: overrides end on time even when no decision looks. */
static void on_override_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    eg_overrides_expire(&gw->overrides, eg_wall_ms(), on_override_expired, gw);
}

int eg_gw_incident_start(eg_gw *gw, char *err, size_t errlen) {
    gw->override_ev = event_new(gw->base, -1, EV_PERSIST, on_override_tick, gw);
    struct timeval tv = eg_gw_tv(OVERRIDE_TICK_MS);
    event_add(gw->override_ev, &tv);
    return guard_start(gw, err, errlen);
}

void eg_gw_incident_free(eg_gw *gw) {
    if (gw->override_ev) event_free(gw->override_ev);
    gw->override_ev = NULL;
    eg_overrides_free(&gw->overrides);
    eg_dlq_guard_free(&gw->guard);
}

void eg_gw_override_adjust(eg_gw *gw, const eg_record *r, eg_decision *d) {
    if (gw->overrides.n == 0) return;
    const eg_override *o =
        eg_overrides_match(&gw->overrides, r->part->origin, r->partition, d->klass, d->code, eg_wall_ms());
    if (!o) return;
    if (!d->fallback) /* a fallback keeps its error as the message (and is still counted as one) */
        snprintf(d->message, sizeof d->message, "override %s (by %s): %s; the policy decided %s", o->name, o->by,
                 o->reason, eg_action_name(d->action));
    d->action = (eg_action)o->action;
    if ((d->action == EG_ACT_HOLD || d->action == EG_ACT_RETRY) && d->delay_ms <= 0) d->delay_ms = DEFAULT_HOLD_MS;
    eg_strlcpy(d->reason, "override", sizeof d->reason);
    eg_strlcpy(d->override, o->name, sizeof d->override);
}

int eg_gw_overrides_request(eg_gw *gw, int method, const char *path, const char *body, size_t len,
                            struct evbuffer *out) {
    int64_t now = eg_wall_ms();
    eg_overrides_expire(&gw->overrides, now, on_override_expired, gw);
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
        if (eg_override_parse(body, len, now, gw->cfg->override_max_ttl_ms, &o, err, sizeof err) != 0) {
            evbuffer_add_printf(out, "{\"error\":");
            eg_json_str(out, err);
            evbuffer_add(out, "}", 1);
            return 400;
        }
        int rc = eg_overrides_set(&gw->overrides, &o);
        if (rc < 0) {
            evbuffer_add_printf(out, "{\"error\":\"too many overrides in force (%d)\"}", EG_OVERRIDE_MAX);
            return 409;
        }
        log_override(rc ? "override_replaced" : "override_set", &o);
        evbuffer_add_printf(out, "{\"result\":\"%s\",\"override\":", rc ? "replaced" : "set");
        eg_override_json(&o, out);
        evbuffer_add(out, "}", 1);
        return 200;
    }
    if (method == EG_ADMIN_DELETE && name && *name) {
        eg_override o;
        if (eg_overrides_clear(&gw->overrides, name, &o) != 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "no override in force is called '%.64s'", name);
            evbuffer_add_printf(out, "{\"error\":");
            eg_json_str(out, msg);
            evbuffer_add(out, "}", 1);
            return 404;
        }
        log_override("override_cleared", &o);
        evbuffer_add_printf(out, "{\"result\":\"cleared\",\"override\":");
        eg_override_json(&o, out);
        evbuffer_add(out, "}", 1);
        return 200;
    }
    evbuffer_add_printf(out, "{\"error\":\"use GET or POST /overrides, DELETE /overrides/NAME\"}");
    return 405;
}
