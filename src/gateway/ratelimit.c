/* ratelimit.c — the token bucket (see ratelimit.h). Refilling is done on
 * demand from the time passed in: tokens = min(burst, tokens + rate x dt). */
#include "ratelimit.h"

#include <math.h>

/* The tokens b holds at now_ns (not stored). */
static double level(const eg_tbucket *b, int64_t now_ns) {
    double t = b->tokens;
    if (now_ns > b->last_ns) t += b->rate * (double)(now_ns - b->last_ns) / 1e9;
    return t < b->burst ? t : b->burst;
}

int eg_tbucket_init(eg_tbucket *b, double rate, double burst, int64_t now_ns) {
    if (!(rate > 0) || !(burst >= 1) || !isfinite(rate) || !isfinite(burst)) return -1;
    b->rate = rate;
    b->burst = burst;
    b->tokens = burst;
    b->last_ns = now_ns;
    return 0;
}

int64_t eg_tbucket_wait_ns(const eg_tbucket *b, int64_t now_ns) {
    double t = level(b, now_ns);
    if (t >= 1) return 0;
    double ns = ceil((1 - t) * 1e9 / b->rate);
    return ns < 1 ? 1 : ns > 9e15 ? (int64_t)9e15 : (int64_t)ns;
}

int eg_tbucket_take(eg_tbucket *b, int64_t now_ns) {
    double t = level(b, now_ns);
    if (now_ns > b->last_ns) b->last_ns = now_ns;
    b->tokens = t;
    if (t < 1) return 0;
    b->tokens = t - 1;
    return 1;
}
