/* breaker.h — circuit breaker for one target (resilience4j / Envoy semantics).
 *
 * Closed: every request may go; each outcome enters a count-based sliding
 * window of the last `window` outcomes (a byte ring, O(1) per outcome). Once
 * the window holds at least `min_calls` outcomes and failures / outcomes >=
 * `failure_ratio`, the breaker opens. Open: nothing may go; after `open_ms`
 * the next allow() or poll() turns it half-open. Half-open: at most
 * `half_open_probes` requests (probes) may be out at once; a probe failure
 * re-opens at once for a fresh `open_ms`, and `half_open_probes` probe
 * successes close it with an empty window. Time is passed in (monotonic ms),
 * so nothing here reads a clock.
 *
 * Late outcomes: allow() hands out a pass naming the state period (epoch) it
 * was granted in; every transition starts a new epoch. An outcome whose pass
 * is from an earlier epoch — a request sent before the breaker opened that
 * answers while it is open or half-open, or a probe of a half-open period
 * that already ended — is stale: it is counted in `stale` and otherwise
 * ignored (no window entry, no probe slot, no re-opening). While open no pass
 * of the current epoch exists, so every outcome recorded then is stale.
 *
 * Transitions call the optional hook given to init (for logs and metrics)
 * and are counted by target state. Ownership: the breaker owns its ring. */
#ifndef EG_BREAKER_H
#define EG_BREAKER_H

#include "record.h"

#include <stddef.h>
#include <stdint.h>

typedef struct eg_breaker_cfg {
    int enabled;          /* 0: always closed, allow everything */
    int window;           /* sliding window of the last N outcomes (count-based), default 50 */
    int min_calls;        /* no opening before this many outcomes in the window, default 20 */
    double failure_ratio; /* open when failures/outcomes >= this, default 0.5 */
    int open_ms;          /* how long to stay open before half-open, default 5000 */
    int half_open_probes; /* concurrent probe requests allowed in half-open, default 2 */
} eg_breaker_cfg;

struct eg_breaker;
/* Called after every transition; b->state is already `to`. On closed -> open
 * the window (b->failures, b->outcomes) still shows what opened it. */
typedef void (*eg_breaker_hook)(void *ud, const struct eg_breaker *b, eg_breaker_state from, eg_breaker_state to,
                                int64_t now_ms);

typedef struct eg_breaker {
    eg_breaker_cfg cfg;
    eg_breaker_hook hook; /* may be NULL */
    void *ud;
    unsigned char *ring; /* cfg.window outcomes, 1 = failure */
    int head;            /* next slot to write */
    int outcomes;        /* outcomes in the window (<= cfg.window) */
    int failures;        /* failures among them */
    eg_breaker_state state;
    uint32_t epoch;          /* current state period, never 0 */
    int64_t opened_ms;       /* when it last opened */
    int probes_out;          /* half-open: probes allowed and not yet recorded */
    int probe_ok;            /* half-open: probe successes this period */
    uint64_t transitions[3]; /* transitions counted by target state */
    uint64_t stale;          /* outcomes ignored as late (see above) */
} eg_breaker;

/* Fills c with the defaults (enabled, 50, 20, 0.5, 5000, 2). */
void eg_breaker_cfg_defaults(eg_breaker_cfg *c);

/* Validates c: 0 if usable, else -1 with a one-line message naming the field
 * in err. Rules: window >= 1, 1 <= min_calls <= window, 0 < failure_ratio <= 1,
 * open_ms >= 0, half_open_probes >= 1. A disabled config is always usable. */
int eg_breaker_cfg_check(const eg_breaker_cfg *c, char *err, size_t errlen);

/* Initialises b closed with an empty window (copying cfg). hook/ud may be
 * NULL. Returns -1 (b untouched, message in err) when cfg fails the check. */
int eg_breaker_init(eg_breaker *b, const eg_breaker_cfg *cfg, eg_breaker_hook hook, void *ud, char *err, size_t errlen);
void eg_breaker_free(eg_breaker *b);

/* May a request be sent now? Applies the open -> half-open transition when
 * open_ms has passed, then: closed (or disabled) -> yes; half-open with a free
 * probe slot -> yes, taking the slot; otherwise no. Returns 0 for no, or a
 * nonzero pass the caller keeps with the request for record()/release(). */
uint32_t eg_breaker_allow(eg_breaker *b, int64_t now_ms);

/* The outcome of a request that allow() let through with `pass`. Closed: the
 * outcome enters the window and may open the breaker. Half-open: frees the
 * probe slot; a failure re-opens (open_ms counted from now), the
 * half_open_probes-th success closes and empties the window. Returns 1 if the
 * outcome counted, 0 if it was stale or the breaker is disabled. */
int eg_breaker_record(eg_breaker *b, uint32_t pass, int failed, int64_t now_ms);

/* A request let through with `pass` ends without an outcome worth judging
 * (cancelled, its partition revoked): frees its probe slot if it holds one
 * of the current half-open period; records nothing. */
void eg_breaker_release(eg_breaker *b, uint32_t pass);

/* Applies the time-based transition (open -> half-open once open_ms has
 * passed) without taking a probe slot; returns the state after it. */
eg_breaker_state eg_breaker_poll(eg_breaker *b, int64_t now_ms);

/* The state as of the last call that took a time (no transition applied). */
eg_breaker_state eg_breaker_state_of(const eg_breaker *b);

/* Milliseconds until an open breaker may turn half-open; 0 unless open. */
int64_t eg_breaker_open_remaining_ms(const eg_breaker *b, int64_t now_ms);

/* How many transitions led into state s. */
uint64_t eg_breaker_transitions(const eg_breaker *b, eg_breaker_state s);

#endif
