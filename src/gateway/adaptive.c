/* adaptive.c — the AIMD concurrency limit (see adaptive.h for the rules). */
#include "adaptive.h"

int eg_aimd_init(eg_aimd *a, const eg_aimd_cfg *cfg) {
    if (cfg->min < 1 || cfg->max < cfg->min || !(cfg->tolerance >= 1)) return -1;
    *a = (eg_aimd){.cfg = *cfg, .limit = cfg->min, .slow_start = 1, .base_prev_ns = -1, .base_cur_ns = -1};
    return 0;
}

int eg_aimd_limit(const eg_aimd *a) { return (int)a->limit; }

/* The baseline: the lowest latency of the two windows, -1 before any. */
static int64_t baseline(const eg_aimd *a) {
    if (a->base_prev_ns < 0) return a->base_cur_ns;
    if (a->base_cur_ns < 0) return a->base_prev_ns;
    return a->base_cur_ns < a->base_prev_ns ? a->base_cur_ns : a->base_prev_ns;
}

void eg_aimd_success(eg_aimd *a, int64_t sent_ns, int inflight_at_send, int64_t latency_ns) {
    (void)sent_ns;
    if (latency_ns < 0) latency_ns = 0;
    int64_t base = baseline(a);
    if (a->base_cur_ns < 0 || latency_ns < a->base_cur_ns) a->base_cur_ns = latency_ns;
    if (++a->cur_n >= EG_AIMD_WINDOW) {
        a->base_prev_ns = a->base_cur_ns;
        a->base_cur_ns = -1;
        a->cur_n = 0;
    }
    int holds = base < 0 || (double)latency_ns <= a->cfg.tolerance * (double)base;
    int used = 2 * inflight_at_send >= (int)a->limit;
    if (!holds || !used || a->limit >= a->cfg.max) return;
    a->limit += a->slow_start ? 1.0 : 1.0 / a->limit;
    if (a->limit > a->cfg.max) a->limit = a->cfg.max;
    a->raises++;
}

void eg_aimd_overload(eg_aimd *a, int64_t sent_ns, int64_t now_ns) {
    if (a->backoff_ns && sent_ns < a->backoff_ns) return; /* the same congestion event */
    a->slow_start = 0;
    a->backoff_ns = now_ns > 0 ? now_ns : 1;
    double l = a->limit / 2;
    a->limit = l < a->cfg.min ? a->cfg.min : (int)l;
    a->backoffs++;
}
