/* test_breaker.c — the circuit breaker's state machine, with explicit time.
 *
 * Table cases pin each rule (min_calls, the exact ratio, the sliding window,
 * open refusing, half-open probes, re-opening, closing, disabled, late
 * outcomes, release); a randomized run compares the closed-state window with
 * a brute-force model of the last N outcomes. A hook logs every transition. */
#include "breaker.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char trail[256]; /* "c>o o>h ..." from the hook */

static void hook(void *ud, const eg_breaker *b, eg_breaker_state from, eg_breaker_state to, int64_t now_ms) {
    static const char abbr[] = "coh";
    size_t n = strlen(trail);
    if (n + 5 < sizeof trail) {
        trail[n] = abbr[from];
        trail[n + 1] = '>';
        trail[n + 2] = abbr[to];
        trail[n + 3] = ' ';
        trail[n + 4] = 0;
    }
    (*(int *)ud)++;
}

static int calls;

static void mk(eg_breaker *b, int window, int min_calls, double ratio, int open_ms, int probes) {
    eg_breaker_cfg c = {.enabled = 1,
                        .window = window,
                        .min_calls = min_calls,
                        .failure_ratio = ratio,
                        .open_ms = open_ms,
                        .half_open_probes = probes};
    char err[128];
    trail[0] = 0;
    calls = 0;
    if (eg_breaker_init(b, &c, hook, &calls, err, sizeof err) != 0) abort();
}

/* Allows and records n outcomes at time t; returns how many were refused. */
static int feed(eg_breaker *b, int n, int failed, int64_t t) {
    int refused = 0;
    for (int i = 0; i < n; i++) {
        uint32_t p = eg_breaker_allow(b, t);
        if (!p) refused++;
        else eg_breaker_record(b, p, failed, t);
    }
    return refused;
}

static void config_checks(void) {
    eg_breaker_cfg d;
    char err[128] = "", want[64];
    eg_breaker_cfg_defaults(&d);
    CHECK(d.enabled == 1 && d.window == 50 && d.min_calls == 20 && d.failure_ratio == 0.5 && d.open_ms == 5000 &&
              d.half_open_probes == 2,
          "defaults are 50/20/0.5/5000/2");
    int rc = eg_breaker_cfg_check(&d, err, sizeof err);
    CHECK(rc == 0, "defaults pass the check");
    enum { NBAD = 6 };
    eg_breaker_cfg bad[NBAD] = {d, d, d, d, d, d};
    const char *field[NBAD] = {"window", "min_calls", "failure_ratio", "failure_ratio", "open_ms", "half_open_probes"};
    bad[0].window = 0;
    bad[1].min_calls = 51;
    bad[2].failure_ratio = 0;
    bad[3].failure_ratio = 1.5;
    bad[4].open_ms = -1;
    bad[5].half_open_probes = 0;
    for (int i = 0; i < NBAD; i++) {
        snprintf(want, sizeof want, "breaker %s ", field[i]);
        rc = eg_breaker_cfg_check(&bad[i], err, sizeof err);
        CHECK(rc == -1 && strncmp(err, want, strlen(want)) == 0, "bad %s is refused: %s", field[i], err);
    }
    bad[0].enabled = 0;
    rc = eg_breaker_cfg_check(&bad[0], err, sizeof err);
    CHECK(rc == 0, "a disabled config is not checked");
}

static void min_calls_and_ratio(void) {
    eg_breaker b;
    mk(&b, 10, 5, 0.5, 1000, 2);
    feed(&b, 4, 1, 0);
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED && b.failures == 4, "4 failures of 4 stay closed under min_calls 5");
    CHECK(eg_breaker_allow(&b, 0) != 0, "closed allows");
    eg_breaker_free(&b);

    /* ok successes then bad failures stay closed; one more failure opens
     * at exactly the ratio (in the 2nd case by sliding a success out). */
    static const struct {
        int window, min_calls;
        double ratio;
        int ok, bad;
    } t[] = {
        {20, 20, 0.5, 10, 9}, /* 9 of 19, under min_calls; then 10 of 20 */
        {10, 10, 0.3, 8, 2},  /* 2 of 10; then 3 of 10 */
    };
    for (int i = 0; i < 2; i++) {
        mk(&b, t[i].window, t[i].min_calls, t[i].ratio, 1000, 2);
        feed(&b, t[i].ok, 0, 0);
        feed(&b, t[i].bad, 1, 0);
        CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED, "%d ok, %d failed at ratio %g: closed", t[i].ok, t[i].bad,
              t[i].ratio);
        feed(&b, 1, 1, 0);
        CHECK(eg_breaker_state_of(&b) == EG_BR_OPEN && b.failures == t[i].bad + 1 && b.outcomes == t[i].window,
              "one more failure: %d of %d opens at exactly %g", b.failures, b.outcomes, t[i].ratio);
        CHECK(strcmp(trail, "c>o ") == 0 && eg_breaker_transitions(&b, EG_BR_OPEN) == 1,
              "hook saw closed->open once, counted (%s)", trail);
        eg_breaker_free(&b);
    }
}

static void window_slides(void) {
    eg_breaker b;
    mk(&b, 10, 5, 0.5, 1000, 2);
    feed(&b, 6, 0, 0);
    feed(&b, 4, 1, 0);
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED && b.failures == 4, "6 ok then 4 failed: closed, 4/10");
    feed(&b, 10, 0, 0);
    CHECK(b.failures == 0 && b.outcomes == 10, "10 successes push every old failure out (%d/%d)", b.failures,
          b.outcomes);
    feed(&b, 4, 1, 0);
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED, "4 new failures: 4/10, still closed");
    feed(&b, 1, 1, 0);
    CHECK(eg_breaker_state_of(&b) == EG_BR_OPEN, "the 5th new failure opens");
    eg_breaker_free(&b);
}

static void open_and_half_open(void) {
    eg_breaker b;
    mk(&b, 4, 2, 0.5, 1000, 2);
    uint32_t early = eg_breaker_allow(&b, 0); /* sent while closed, answers late */
    uint32_t early2 = eg_breaker_allow(&b, 0);
    uint32_t early3 = eg_breaker_allow(&b, 0);
    feed(&b, 2, 1, 100);
    CHECK(eg_breaker_state_of(&b) == EG_BR_OPEN, "2 failures of 2 open at t=100");
    CHECK(eg_breaker_allow(&b, 100) == 0 && eg_breaker_allow(&b, 1099) == 0, "open refuses until open_ms");
    CHECK(eg_breaker_open_remaining_ms(&b, 600) == 500 && eg_breaker_open_remaining_ms(&b, 5000) == 0,
          "500 ms left at t=600; 0 (not negative) once due but not yet polled");

    int r1 = eg_breaker_record(&b, early, 1, 700), r2 = eg_breaker_record(&b, early2, 0, 700);
    CHECK(r1 == 0 && r2 == 0, "late outcomes while open are ignored");
    CHECK(b.stale == 2 && eg_breaker_state_of(&b) == EG_BR_OPEN && eg_breaker_open_remaining_ms(&b, 700) == 400,
          "late outcomes neither re-open nor restart the open period");

    CHECK(eg_breaker_poll(&b, 1099) == EG_BR_OPEN, "poll at t=1099: still open");
    uint32_t p1 = eg_breaker_allow(&b, 1100);
    uint32_t p2 = eg_breaker_allow(&b, 1100);
    CHECK(p1 && p2 && eg_breaker_state_of(&b) == EG_BR_HALF_OPEN, "t=1100: half-open, 2 probes go");
    CHECK(eg_breaker_allow(&b, 1100) == 0, "a 3rd concurrent probe is refused");
    CHECK(eg_breaker_open_remaining_ms(&b, 1100) == 0, "open_remaining is 0 when not open");

    r1 = eg_breaker_record(&b, early3, 0, 1150);
    CHECK(r1 == 0 && b.probes_out == 2 && b.probe_ok == 0,
          "a pre-open request answering in half-open is neither a probe nor a success");
    eg_breaker_release(&b, early3);
    CHECK(b.probes_out == 2, "releasing a stale pass frees no probe slot");

    r1 = eg_breaker_record(&b, p1, 0, 1200);
    CHECK(r1 == 1 && b.probe_ok == 1, "probe 1 succeeds");
    uint32_t p3 = eg_breaker_allow(&b, 1200);
    CHECK(p3 != 0, "its slot is free again: probe 3 goes");
    r1 = eg_breaker_record(&b, p3, 1, 1300);
    CHECK(r1 == 1 && eg_breaker_state_of(&b) == EG_BR_OPEN, "probe 3 fails: open again at once");
    CHECK(eg_breaker_open_remaining_ms(&b, 1300) == 1000 && eg_breaker_allow(&b, 2299) == 0,
          "the open period restarts from the failure (1000 ms)");
    r1 = eg_breaker_record(&b, p2, 0, 1400);
    CHECK(r1 == 0 && b.stale == 4, "probe 2 of the ended half-open period is stale");

    uint32_t q1 = eg_breaker_allow(&b, 2300);
    uint32_t q2 = eg_breaker_allow(&b, 2300);
    CHECK(q1 && q2 && eg_breaker_state_of(&b) == EG_BR_HALF_OPEN, "t=2300: half-open again");
    eg_breaker_release(&b, q2);
    uint32_t q3 = eg_breaker_allow(&b, 2300);
    CHECK(q3 != 0 && eg_breaker_allow(&b, 2300) == 0, "a released probe frees its slot, once");
    eg_breaker_record(&b, q1, 0, 2400);
    CHECK(eg_breaker_state_of(&b) == EG_BR_HALF_OPEN, "1 probe success of 2: still half-open");
    eg_breaker_record(&b, q3, 0, 2400);
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED && b.outcomes == 0 && b.failures == 0,
          "2 probe successes close and clear the window");
    feed(&b, 1, 1, 2500);
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED, "1 failure after closing: under min_calls, closed");
    CHECK(strcmp(trail, "c>o o>h h>o o>h h>c ") == 0 && calls == 5, "hook trail: %s", trail);
    CHECK(eg_breaker_transitions(&b, EG_BR_OPEN) == 2 && eg_breaker_transitions(&b, EG_BR_HALF_OPEN) == 2 &&
              eg_breaker_transitions(&b, EG_BR_CLOSED) == 1,
          "transitions counted by target state");
    CHECK(strcmp(eg_breaker_state_name(EG_BR_HALF_OPEN), "half_open") == 0, "state names");
    eg_breaker_free(&b);
}

static void disabled(void) {
    eg_breaker b;
    eg_breaker_cfg c = {.enabled = 0};
    char err[64];
    int rc = eg_breaker_init(&b, &c, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "disabled init ignores the rest");
    int refused = feed(&b, 1000, 1, 0);
    CHECK(refused == 0, "disabled: 1000 failures, none refused");
    uint32_t p = eg_breaker_allow(&b, 0);
    int r = eg_breaker_record(&b, p, 1, 0);
    CHECK(p != 0 && r == 0 && b.outcomes == 0, "disabled: outcomes are not recorded");
    CHECK(eg_breaker_state_of(&b) == EG_BR_CLOSED && eg_breaker_transitions(&b, EG_BR_OPEN) == 0,
          "disabled: still closed, no transitions");
    eg_breaker_free(&b);
}

/* Random outcomes against a model: everything since the last close, of
 * which the last `window` decide. Checks the state after every outcome. */
static void random_model(void) {
    enum { W = 16, MIN = 8, N = 20000 };
    eg_breaker b;
    mk(&b, W, MIN, 0.375, 0, 1);
    unsigned char *hist = malloc(N);
    int n = 0, mismatches = 0, opens = 0;
    srand(7);
    for (int i = 0; i < N; i++) {
        uint32_t p = eg_breaker_allow(&b, i);
        if (!p) {
            mismatches++;
            continue;
        } /* open_ms 0: never refuses here */
        int f = rand() % 100 < (i / 2000 % 2 ? 45 : 25);
        eg_breaker_state before = eg_breaker_state_of(&b);
        eg_breaker_record(&b, p, f, i);
        if (before == EG_BR_HALF_OPEN) { /* one probe decides */
            if (eg_breaker_state_of(&b) != (f ? EG_BR_OPEN : EG_BR_CLOSED)) mismatches++;
            n = 0;
            continue;
        }
        hist[n++] = (unsigned char)f;
        int k = n < W ? n : W, fails = 0;
        for (int j = n - k; j < n; j++) fails += hist[j];
        int want_open = k >= MIN && fails * 8 >= 3 * k;
        if (want_open) {
            opens++;
            n = 0;
        }
        if (eg_breaker_state_of(&b) != (want_open ? EG_BR_OPEN : EG_BR_CLOSED)) mismatches++;
    }
    CHECK(mismatches == 0 && opens > 50,
          "20000 random outcomes: state equals the model after each "
          "(%d mismatches, %d opens)",
          mismatches, opens);
    free(hist);
    eg_breaker_free(&b);
}

int main(void) {
    config_checks();
    min_calls_and_ratio();
    window_slides();
    open_and_half_open();
    disabled();
    random_model();
    return TAP_DONE();
}
