/* budget.c — per-target retry budget (see budget.h for the formula). */
#include "budget.h"
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void eg_budget_cfg_defaults(eg_budget_cfg *c) {
    *c = (eg_budget_cfg){.enabled = 1, .percent = EG_DEF_BUDGET_PERCENT, .min = EG_DEF_BUDGET_MIN};
}

int eg_budget_cfg_check(const eg_budget_cfg *c, char *err, size_t errlen) {
    if (!c->enabled) return 0;
    if (!(c->percent >= 0 && c->percent <= 100))
        snprintf(err, errlen, "retry budget percent must be in [0, 100] (got %g)", c->percent);
    else if (c->min < 0) snprintf(err, errlen, "retry budget min must be >= 0 (got %d)", c->min);
    else if (c->per_minute < 0) snprintf(err, errlen, "retry budget per_minute must be >= 0 (got %d)", c->per_minute);
    else return 0;
    return -1;
}

int eg_budget_init(eg_budget *b, const eg_budget_cfg *cfg, int64_t now_ns, char *err, size_t errlen) {
    if (eg_budget_cfg_check(cfg, err, errlen) != 0) return -1;
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    if (cfg->per_minute > 0) eg_tbucket_init(&b->minute, cfg->per_minute / 60.0, cfg->per_minute, now_ns);
    return 0;
}

/* Whether per_minute has a retry left at now_ns (always, without a cap). */
static int minute_allows(const eg_budget *b, int64_t now_ns) {
    return b->cfg.per_minute <= 0 || eg_tbucket_wait_ns(&b->minute, now_ns) == 0;
}

void eg_budget_request_start(eg_budget *b) { b->requests++; }

int eg_budget_request_end(eg_budget *b) {
    if (b->requests <= 0) return -1;
    b->requests--;
    return 0;
}

int64_t eg_budget_limit(const eg_budget *b) {
    if (!b->cfg.enabled) return -1;
    int64_t share = (int64_t)floor(b->cfg.percent * (double)(b->requests + b->retries) / 100.0);
    return share > b->cfg.min ? share : b->cfg.min;
}

/* Whether the share has room for one more retry. */
static int share_allows(const eg_budget *b) { return !b->cfg.enabled || b->retries + 1 <= eg_budget_limit(b); }

int eg_budget_allows_retry(const eg_budget *b, int64_t now_ns) {
    return !b->cfg.enabled || (share_allows(b) && minute_allows(b, now_ns));
}

eg_budget_verdict eg_budget_retry_take(eg_budget *b, int64_t now_ns) {
    if (b->cfg.enabled && (!share_allows(b) || !minute_allows(b, now_ns))) {
        b->refused++;
        return share_allows(b) ? EG_BUDGET_REFUSED_MINUTE : EG_BUDGET_REFUSED;
    }
    if (b->cfg.enabled && b->cfg.per_minute > 0) eg_tbucket_take(&b->minute, now_ns);
    b->retries++;
    return EG_BUDGET_ADMITTED;
}

void eg_budget_count_refusal(eg_budget *b) { b->refused++; }

int eg_budget_retry_end(eg_budget *b) {
    if (b->retries <= 0) return -1;
    b->retries--;
    return 0;
}
