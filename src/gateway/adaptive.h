/* adaptive.h — an adaptive concurrency limit towards the target (AIMD).
 *
 * The limit starts at `min` and is raised while the target keeps its
 * latency, lowered when it says it is overloaded:
 *   - a success whose latency is at most `tolerance` x the baseline raises
 *     the limit, when the limit was in use (the attempt found at least half
 *     of it in flight: raising an unused limit proves nothing): by 1 per
 *     success until the first back-off (slow start, as TCP), then by
 *     1/limit per success (+1 per limit's worth of successes: additive);
 *   - a success slower than that leaves the limit as it is;
 *   - an overload signal (a timeout, HTTP 429 or 503) halves it
 *     (multiplicative decrease), at most down to `min`, once per congestion
 *     event: an attempt sent before the last back-off does not back off
 *     again (the attempts of one burst fail together);
 *   - other failures (a 400, a refused connection, a 500) leave it alone.
 * The baseline is the lowest success latency of the last two windows of
 * EG_AIMD_WINDOW successes, so it follows a target that got slower for
 * good. The limit never leaves [min, max].
 *
 * Time is passed in (monotonic ns); nothing here reads a clock. An eg_aimd
 * owns no memory. */
#ifndef EG_ADAPTIVE_H
#define EG_ADAPTIVE_H

#include <stdint.h>

#define EG_AIMD_WINDOW 100

typedef struct eg_aimd_cfg {
    int min, max;     /* 1 <= min <= max */
    double tolerance; /* >= 1: latency up to tolerance x baseline "holds" */
} eg_aimd_cfg;

typedef struct eg_aimd {
    eg_aimd_cfg cfg;
    double limit;
    int slow_start;       /* no back-off yet */
    int64_t backoff_ns;   /* when the limit was last lowered, 0 never */
    int64_t base_prev_ns; /* lowest latency of the previous window, -1 none */
    int64_t base_cur_ns;  /* ... of the window being filled, -1 none */
    int cur_n;            /* successes in that window */
    uint64_t raises, backoffs;
} eg_aimd;

/* Fills a at the start (limit = min). Returns -1 when cfg is unusable. */
int eg_aimd_init(eg_aimd *a, const eg_aimd_cfg *cfg);

/* The current limit: attempts that may be in flight at once. */
int eg_aimd_limit(const eg_aimd *a);

/* An attempt sent at sent_ns, with inflight_at_send attempts in flight
 * when it went (itself included), succeeded after latency_ns. */
void eg_aimd_success(eg_aimd *a, int64_t sent_ns, int inflight_at_send, int64_t latency_ns);

/* An attempt sent at sent_ns failed with an overload signal at now_ns. */
void eg_aimd_overload(eg_aimd *a, int64_t sent_ns, int64_t now_ns);

#endif
