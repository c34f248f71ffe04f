/* ratelimit.h — a token bucket (the target's rate limit, a retry budget's
 * per-minute cap).
 *
 * The bucket holds at most `burst` tokens and gains `rate` tokens a second,
 * continuously; one request takes one token. Full at the start, so a burst
 * of `burst` requests goes at once and then `rate` a second: over any span
 * of t seconds at most burst + rate x t requests are admitted. Tokens are a
 * double (fractions accumulate); a request needs a whole token.
 *
 * Time is passed in (monotonic ns), so nothing here reads a clock and tests
 * drive it by hand. A clock that goes back adds nothing (and does not move
 * the bucket's notion of now back). A bucket owns no memory. */
#ifndef EG_RATELIMIT_H
#define EG_RATELIMIT_H

#include <stdint.h>

typedef struct eg_tbucket {
    double rate;     /* tokens a second, > 0 */
    double burst;    /* capacity, >= 1 */
    double tokens;   /* now held, 0..burst */
    int64_t last_ns; /* when tokens was last brought up to date */
} eg_tbucket;

/* Fills b: full (burst tokens) at now_ns. rate must be > 0 and burst >= 1
 * (the config refuses anything else); returns -1 and leaves b alone if not. */
int eg_tbucket_init(eg_tbucket *b, double rate, double burst, int64_t now_ns);

/* How long (ns) until one token is there at now_ns: 0 when one is there
 * now. Counts nothing, takes nothing. */
int64_t eg_tbucket_wait_ns(const eg_tbucket *b, int64_t now_ns);

/* Takes one token at now_ns if there is one (returns 1), else returns 0
 * and takes nothing. */
int eg_tbucket_take(eg_tbucket *b, int64_t now_ns);

#endif
