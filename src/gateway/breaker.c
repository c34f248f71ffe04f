/* breaker.c — per-target circuit breaker (see breaker.h).
 *
 * The ratio test divides (failures / outcomes >= failure_ratio) rather than
 * multiplying, so a ratio met exactly (10 of 20 at 0.5, 3 of 10 at 0.3) is
 * met in double arithmetic too: the quotient and the configured ratio are
 * both the correctly rounded value of the same decimal. */
#include "breaker.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eg_breaker_cfg_defaults(eg_breaker_cfg *c) {
    *c = (eg_breaker_cfg){.enabled = 1,
                          .window = EG_DEF_BREAKER_WINDOW,
                          .min_calls = EG_DEF_BREAKER_MIN_CALLS,
                          .failure_ratio = EG_DEF_BREAKER_FAILURE_RATIO,
                          .open_ms = EG_DEF_BREAKER_OPEN_MS,
                          .half_open_probes = EG_DEF_BREAKER_PROBES};
}

int eg_breaker_cfg_check(const eg_breaker_cfg *c, char *err, size_t errlen) {
    if (!c->enabled) return 0;
    if (c->window < 1) snprintf(err, errlen, "breaker window must be >= 1 (got %d)", c->window);
    else if (c->min_calls < 1 || c->min_calls > c->window)
        snprintf(err, errlen, "breaker min_calls must be between 1 and window %d (got %d)", c->window, c->min_calls);
    else if (!(c->failure_ratio > 0 && c->failure_ratio <= 1))
        snprintf(err, errlen, "breaker failure_ratio must be in (0, 1] (got %g)", c->failure_ratio);
    else if (c->open_ms < 0) snprintf(err, errlen, "breaker open_ms must be >= 0 (got %d)", c->open_ms);
    else if (c->half_open_probes < 1)
        snprintf(err, errlen, "breaker half_open_probes must be >= 1 (got %d)", c->half_open_probes);
    else return 0;
    return -1;
}

int eg_breaker_init(eg_breaker *b, const eg_breaker_cfg *cfg, eg_breaker_hook hook, void *ud, char *err,
                    size_t errlen) {
    if (eg_breaker_cfg_check(cfg, err, errlen) != 0) return -1;
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    b->hook = hook;
    b->ud = ud;
    b->ring = cfg->enabled ? eg_xcalloc((size_t)cfg->window, 1) : NULL;
    b->state = EG_BR_CLOSED;
    b->epoch = 1;
    return 0;
}

void eg_breaker_free(eg_breaker *b) {
    free(b->ring);
    memset(b, 0, sizeof *b);
}

static void clear_window(eg_breaker *b) {
    memset(b->ring, 0, (size_t)b->cfg.window);
    b->head = b->outcomes = b->failures = 0;
}

/* Moves to state `to`, starting a new epoch (0 is skipped: it means "no"). */
static void transition(eg_breaker *b, eg_breaker_state to, int64_t now_ms) {
    eg_breaker_state from = b->state;
    b->state = to;
    if (++b->epoch == 0) b->epoch = 1;
    b->probes_out = b->probe_ok = 0;
    if (to == EG_BR_OPEN) b->opened_ms = now_ms;
    if (to == EG_BR_CLOSED) clear_window(b);
    b->transitions[to]++;
    if (b->hook) b->hook(b->ud, b, from, to, now_ms);
}

eg_breaker_state eg_breaker_poll(eg_breaker *b, int64_t now_ms) {
    if (b->state == EG_BR_OPEN && now_ms - b->opened_ms >= b->cfg.open_ms) transition(b, EG_BR_HALF_OPEN, now_ms);
    return b->state;
}

uint32_t eg_breaker_allow(eg_breaker *b, int64_t now_ms) {
    if (!b->cfg.enabled) return b->epoch;
    switch (eg_breaker_poll(b, now_ms)) {
    case EG_BR_CLOSED: return b->epoch;
    case EG_BR_HALF_OPEN:
        if (b->probes_out >= b->cfg.half_open_probes) return 0;
        b->probes_out++;
        return b->epoch;
    case EG_BR_OPEN: break;
    }
    return 0;
}

/* Closed: pushes one outcome into the ring, evicting the oldest when full,
 * then opens if the window is big enough and the ratio is met. */
static void record_closed(eg_breaker *b, int failed, int64_t now_ms) {
    unsigned char f = failed ? 1 : 0;
    if (b->outcomes == b->cfg.window) b->failures -= b->ring[b->head];
    else b->outcomes++;
    b->ring[b->head] = f;
    b->failures += f;
    if (++b->head == b->cfg.window) b->head = 0;
    if (b->outcomes >= b->cfg.min_calls && (double)b->failures / b->outcomes >= b->cfg.failure_ratio)
        transition(b, EG_BR_OPEN, now_ms);
}

int eg_breaker_record(eg_breaker *b, uint32_t pass, int failed, int64_t now_ms) {
    if (!b->cfg.enabled) return 0;
    if (pass != b->epoch) { /* includes every outcome recorded while open */
        b->stale++;
        return 0;
    }
    if (b->state == EG_BR_CLOSED) {
        record_closed(b, failed, now_ms);
        return 1;
    }
    if (b->probes_out > 0) b->probes_out--;
    if (failed) transition(b, EG_BR_OPEN, now_ms);
    else if (++b->probe_ok >= b->cfg.half_open_probes) transition(b, EG_BR_CLOSED, now_ms);
    return 1;
}

void eg_breaker_release(eg_breaker *b, uint32_t pass) {
    if (b->cfg.enabled && b->state == EG_BR_HALF_OPEN && pass == b->epoch && b->probes_out > 0) b->probes_out--;
}

eg_breaker_state eg_breaker_state_of(const eg_breaker *b) { return b->state; }

int64_t eg_breaker_open_remaining_ms(const eg_breaker *b, int64_t now_ms) {
    if (b->state != EG_BR_OPEN) return 0;
    int64_t left = b->opened_ms + b->cfg.open_ms - now_ms;
    return left > 0 ? left : 0;
}

uint64_t eg_breaker_transitions(const eg_breaker *b, eg_breaker_state s) {
    return (unsigned)s < 3 ? b->transitions[s] : 0;
}
