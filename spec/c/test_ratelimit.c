/* test_ratelimit.c — the target's rate limit (token bucket) and adaptive
 * concurrency limit (AIMD), on a clock driven by hand.
 *
 * Token bucket: full at the start (burst at once), then rate a second; the
 * wait it announces is exactly when the next token is there; over every
 * window of a long simulated run the admitted count stays within burst +
 * rate x window, and the long-run rate is the configured one; a clock that
 * goes back adds nothing; bad parameters are refused.
 * AIMD: slow start from min, additive raise after the first back-off, one
 * halving per congestion event (attempts sent before the back-off do not
 * halve again), the floor and the ceiling, a slow success does not raise,
 * an unused limit does not rise. */
#include "adaptive.h"
#include "ratelimit.h"
#include "tap.h"

#include <stdlib.h>

#define MS 1000000LL
#define S 1000000000LL

static void bucket_basics(void) {
    eg_tbucket b;
    CHECK(eg_tbucket_init(&b, 0, 5, 0) == -1, "a rate of 0 is refused");
    CHECK(eg_tbucket_init(&b, -1, 5, 0) == -1, "a negative rate is refused");
    CHECK(eg_tbucket_init(&b, 10, 0.5, 0) == -1, "a burst below 1 is refused");
    CHECK(eg_tbucket_init(&b, 10, 5, 0) == 0, "rate 10/s, burst 5");
    int n = 0;
    while (eg_tbucket_take(&b, 0)) n++;
    CHECK(n == 5, "a full bucket gives the burst at once (%d)", n);
    int64_t w = eg_tbucket_wait_ns(&b, 0);
    CHECK(w == 100 * MS, "empty: the next token is 100 ms away (%lld ns)", (long long)w);
    w = eg_tbucket_wait_ns(&b, 99 * MS);
    CHECK(!eg_tbucket_take(&b, 99 * MS) && w >= 1 * MS && w <= 1 * MS + 1000, "not at 99 ms; 1 ms left (%lld ns)",
          (long long)w);
    CHECK(eg_tbucket_take(&b, 100 * MS), "a token at 100 ms");
    CHECK(!eg_tbucket_take(&b, 100 * MS), "and only one");
    CHECK(!eg_tbucket_take(&b, 50 * MS) && eg_tbucket_wait_ns(&b, 50 * MS) == 100 * MS,
          "a clock that went back adds nothing (still 100 ms from the last take)");
    CHECK(eg_tbucket_take(&b, 200 * MS), "the next one 100 ms later");
    n = 0;
    while (eg_tbucket_take(&b, 100 * S)) n++;
    CHECK(n == 5, "a long quiet spell refills to the burst only (%d)", n);
}

/* A simulated sender that tries every 1 ms for 20 s at rate 50, burst 10:
 * admitted times, then every window checked against burst + rate x t. */
static void bucket_windows(void) {
    eg_tbucket b;
    eg_tbucket_init(&b, 50, 10, 0);
    static int64_t at[2000];
    int n = 0;
    for (int64_t t = 0; t <= 20 * S && n < 2000; t += MS)
        if (eg_tbucket_take(&b, t)) at[n++] = t;
    CHECK(n == 10 + 50 * 20 || n == 10 + 50 * 20 + 1, "20 s at 50/s with burst 10: %d admitted (1010 expected)", n);
    int worst_i = 0, worst_j = 0;
    double worst = -1e9;
    for (int i = 0; i < n; i++)
        for (int j = i; j < n && j < i + 200; j++) {
            double allowed = 10 + 50.0 * (double)(at[j] - at[i]) / S;
            double over = (j - i + 1) - allowed;
            if (over > worst) worst = over, worst_i = i, worst_j = j;
        }
    CHECK(worst <= 1e-9, "every window holds at most burst + rate x t (worst excess %.3f: %d..%d)", worst, worst_i,
          worst_j);
    double rate = (double)(n - 10) / ((double)(at[n - 1] - at[10]) / S);
    CHECK(rate > 49 && rate < 51.1, "after the burst the rate is 50/s (%.2f)", rate);
}

static void aimd(void) {
    eg_aimd a;
    eg_aimd_cfg bad = {.min = 0, .max = 4, .tolerance = 2};
    CHECK(eg_aimd_init(&a, &bad) == -1, "min 0 is refused");
    eg_aimd_cfg c = {.min = 2, .max = 20, .tolerance = 2};
    CHECK(eg_aimd_init(&a, &c) == 0 && eg_aimd_limit(&a) == 2, "starts at min (2)");
    int64_t t = 0;
    for (int i = 0; i < 5; i++) eg_aimd_success(&a, t, eg_aimd_limit(&a), 10 * MS);
    CHECK(eg_aimd_limit(&a) == 7, "slow start: +1 per success in use (7 after 5)");
    eg_aimd_success(&a, t, 1, 10 * MS);
    CHECK(eg_aimd_limit(&a) == 7, "a success that found the limit mostly unused does not raise it");
    eg_aimd_success(&a, t, 7, 25 * MS);
    CHECK(eg_aimd_limit(&a) == 7, "a success slower than 2 x the lowest latency does not raise it");
    eg_aimd_success(&a, t, 7, 20 * MS);
    CHECK(eg_aimd_limit(&a) == 8, "one within 2 x does");
    t = 1 * S;
    eg_aimd_overload(&a, t - 10 * MS, t);
    CHECK(eg_aimd_limit(&a) == 4, "an overload halves it (8 -> 4)");
    eg_aimd_overload(&a, t - 5 * MS, t + 1 * MS);
    CHECK(eg_aimd_limit(&a) == 4 && a.backoffs == 1, "an attempt sent before that back-off does not halve again");
    eg_aimd_overload(&a, t + 2 * MS, t + 3 * MS);
    CHECK(eg_aimd_limit(&a) == 2, "one sent after it does (4 -> 2)");
    eg_aimd_overload(&a, t + 4 * MS, t + 5 * MS);
    CHECK(eg_aimd_limit(&a) == 2, "never below min");
    /* + 1/limit each: 2 -> 2.5 -> 2.9 -> 3.24 -> 3.55 -> 3.83 -> 4.09 */
    for (int i = 0; i < 2; i++) eg_aimd_success(&a, t, 2, 10 * MS);
    CHECK(eg_aimd_limit(&a) == 2, "after a back-off: additive, 1/limit a success (2 successes: still 2)");
    eg_aimd_success(&a, t, 2, 10 * MS);
    CHECK(eg_aimd_limit(&a) == 3, "the third makes 3");
    for (int i = 0; i < 2; i++) eg_aimd_success(&a, t, 3, 10 * MS);
    CHECK(eg_aimd_limit(&a) == 3, "two more: still 3");
    eg_aimd_success(&a, t, 3, 10 * MS);
    CHECK(eg_aimd_limit(&a) == 4, "the third makes 4");
    for (int i = 0; i < 2000; i++) eg_aimd_success(&a, t, eg_aimd_limit(&a), 10 * MS);
    CHECK(eg_aimd_limit(&a) == 20, "never above max (%d)", eg_aimd_limit(&a));
    /* the baseline follows a target that got slower for good */
    for (int i = 0; i < 2 * EG_AIMD_WINDOW + 1; i++) eg_aimd_success(&a, t, 1, 100 * MS);
    eg_aimd_overload(&a, 10 * S, 10 * S);
    double before = a.limit;
    eg_aimd_success(&a, t, eg_aimd_limit(&a), 150 * MS);
    CHECK(a.limit > before, "two windows later 150 ms is within 2 x the new lowest (100 ms): it raises");
}

int main(void) {
    bucket_basics();
    bucket_windows();
    aimd();
    return TAP_DONE();
}
