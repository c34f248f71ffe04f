/* gw_limits.c — what keeps the gateway from overwhelming its target beyond
 * the breaker: a rate limit (target.rate, a token bucket: ratelimit.h), an
 * adaptive concurrency limit (target.adaptive, AIMD: adaptive.h) and the
 * retry budgets by key (target.retry_budget.key: budget_keys.h).
 *
 * How they fit the record path (gateway.c): dispatch_round asks
 * eg_gw_limits_admit before it takes the run queue's head. With no token,
 * the head stays where it is (so the ordering gates, which decided what is
 * runnable, are untouched: nothing is reordered, only delayed) and a timer
 * is armed for the moment the next token is there; the loop meanwhile goes
 * on polling, committing and serving the group, as for any other wait.
 * Every attempt towards the target passes there: first attempts, in-place
 * retries and records of the retry rungs, which the same gateway consumes,
 * so the ladder obeys the same bucket. Due replays of inbox mode call no
 * target and take no token (they are republished, not sent). A token is
 * taken only by an attempt the target accepted (eg_gw_limits_sent), so a
 * record the breaker refuses costs none. With the adaptive limit, admit
 * also asks that fewer attempts than the limit be in the target; a
 * completion frees a place and dispatches again. The time spent waiting
 * for tokens is counted from the first refusal to the timer
 * (errgate_target_rate_wait_seconds_total).
 *
 * Budgets by key: a record's key is the value of the configured header,
 * read when the record first needs a count (its first attempt, or a retry
 * decision) and kept in r->budget_slot while it holds one (a busy slot is
 * never given to another key, budget_keys.h). */
#include "gw.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static void on_token(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    if (gw->limits.wait_since_ns) {
        gw->limits.wait_s += (double)(eg_now_ns() - gw->limits.wait_since_ns) / 1e9;
        gw->limits.wait_since_ns = 0;
    }
    eg_gw_dispatch(gw);
}

int eg_gw_limits_open(eg_gw *gw, char *err, size_t errlen) {
    const eg_config *cfg = gw->cfg;
    int64_t now = eg_now_ns();
    eg_budget_cfg uc = {.enabled = cfg->budget_enabled,
                        .percent = cfg->budget_percent,
                        .min = cfg->budget_min,
                        .per_minute = cfg->budget_per_minute};
    if (eg_budgets_init(&gw->budgets, &uc, cfg->budget_enabled && cfg->budget_key_header != NULL, cfg->budget_max_keys,
                        now, err, errlen) != 0)
        return -1;
    if (cfg->rate_enabled) {
        if (eg_tbucket_init(&gw->limits.bucket, cfg->rate_per_second, cfg->rate_burst, now) != 0) {
            snprintf(err, errlen, "target.rate: per_second must be > 0 and burst >= 1");
            return -1;
        }
        gw->limits.rate = 1;
        gw->limits.ev = evtimer_new(gw->base, on_token, gw);
    }
    if (cfg->adaptive_enabled) {
        eg_aimd_cfg ac = {.min = cfg->adaptive_min, .max = cfg->adaptive_max, .tolerance = cfg->adaptive_tolerance};
        if (eg_aimd_init(&gw->limits.aimd, &ac) != 0) {
            snprintf(err, errlen, "target.adaptive: min must be in [1, max] and tolerance >= 1");
            return -1;
        }
        gw->limits.adaptive = 1;
    }
    return 0;
}

void eg_gw_limits_close(eg_gw *gw) {
    if (gw->limits.ev) event_free(gw->limits.ev);
    gw->limits.ev = NULL;
    eg_budgets_free(&gw->budgets);
}

int eg_gw_limits_admit(eg_gw *gw) {
    if (gw->limits.adaptive && gw->target->inflight >= eg_aimd_limit(&gw->limits.aimd)) return 0;
    if (!gw->limits.rate) return 1;
    int64_t now = eg_now_ns();
    int64_t wait = eg_tbucket_wait_ns(&gw->limits.bucket, now);
    if (wait == 0) return 1;
    if (!gw->limits.wait_since_ns) gw->limits.wait_since_ns = now;
    if (!evtimer_pending(gw->limits.ev, NULL)) {
        int64_t us = (wait + 999) / 1000;
        struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
        evtimer_add(gw->limits.ev, &tv);
    }
    return 0;
}

void eg_gw_limits_sent(eg_gw *gw, eg_record *r) {
    if (!gw->limits.rate && !gw->limits.adaptive) return;
    int64_t now = eg_now_ns();
    if (gw->limits.rate) eg_tbucket_take(&gw->limits.bucket, now);
    r->sent_ns = now;
    r->sent_inflight = gw->target->inflight;
}

/* The target says it is overloaded: a timeout, 429 or 503. */
static int overloaded(const eg_failure *f) {
    return f->kind == EG_FK_TIMEOUT || (f->kind == EG_FK_HTTP && (f->status == 429 || f->status == 503));
}

void eg_gw_limits_done(eg_gw *gw, eg_record *r, const eg_failure *f, int cancelled) {
    int64_t sent = r->sent_ns;
    r->sent_ns = 0;
    if (!gw->limits.adaptive || cancelled || !sent) return;
    int64_t now = eg_now_ns();
    int before = eg_aimd_limit(&gw->limits.aimd);
    if (!f) eg_aimd_success(&gw->limits.aimd, sent, r->sent_inflight, now - sent);
    else if (overloaded(f)) eg_aimd_overload(&gw->limits.aimd, sent, now);
    int after = eg_aimd_limit(&gw->limits.aimd);
    if (after < before) {
        eg_logline l;
        if (eg_log_begin(&l, EG_INFO, "concurrency_backoff")) {
            eg_log_int(&l, "from", before);
            eg_log_int(&l, "to", after);
            eg_log_str(&l, "kind", eg_failure_kind_name(f->kind));
            if (f->status) eg_log_int(&l, "status", f->status);
            eg_log_end(&l);
        }
    }
}

int eg_gw_budget_slot(eg_gw *gw, eg_record *r) {
    if (r->budget_req || (r->fail && r->fail->retrying)) return r->budget_slot;
    const void *v = NULL;
    size_t n = 0;
    if (gw->budgets.keyed) {
        eg_record_read_headers(r);
        v = eg_headers_get(eg_record_headers(r), gw->cfg->budget_key_header, &n);
    }
    r->budget_slot = eg_budgets_slot(&gw->budgets, v, n, eg_now_ns());
    return r->budget_slot;
}

void eg_gw_budget_name(const eg_gw *gw, const eg_record *r, char *out, size_t outlen) {
    if (!outlen) return;
    const char *k = eg_budgets_name(&gw->budgets, r->budget_slot);
    size_t i = 0;
    for (; k[i] && i + 1 < outlen; i++) out[i] = k[i] >= 0x20 && k[i] < 0x7f ? k[i] : '?';
    out[i] = '\0';
}
