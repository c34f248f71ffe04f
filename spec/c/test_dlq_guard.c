/* test_dlq_guard.c — the dead-letter flood guard's arithmetic, with explicit
 * time: the limit is max_per_second × window_s and the decision past it
 * trips; refused decisions still count; the window slides by whole seconds;
 * re-arming needs both the cooldown and the rate back under; reset re-arms
 * at once and empties the window; topics are independent; the event hook
 * sees every trip and re-arm. */
#include "dlq_guard.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static char trail[512]; /* "T:topic:count R:topic X:topic ..." from the hook */

static void hook(void *arg, const char *topic, int tripped, int reset, uint64_t count) {
    size_t n = strlen(trail);
    snprintf(trail + n, sizeof trail - n, "%s:%s:%llu ",
             tripped ? "T"
             : reset ? "X"
                     : "R",
             topic, (unsigned long long)count);
}

static void mk(eg_dlq_guard *g, double rate, int window_s, int cooldown_s) {
    eg_dlq_guard_cfg c = {.max_per_second = rate, .window_s = window_s, .cooldown_s = cooldown_s};
    char err[128];
    trail[0] = 0;
    if (eg_dlq_guard_init(g, &c, hook, NULL, err, sizeof err) != 0) printf("# init: %s\n", err);
}

int main(void) {
    eg_dlq_guard g;
    char err[128];
    eg_dlq_guard_cfg bad = {.max_per_second = 0, .window_s = 10, .cooldown_s = 1};
    CHECK(eg_dlq_guard_init(&g, &bad, NULL, NULL, err, sizeof err) == -1 && strstr(err, "max_per_second"),
          "a zero rate is refused: %s", err);
    bad = (eg_dlq_guard_cfg){.max_per_second = 1, .window_s = 0, .cooldown_s = 1};
    CHECK(eg_dlq_guard_init(&g, &bad, NULL, NULL, err, sizeof err) == -1, "a zero window is refused");

    /* limit 2/s over 5 s = 10 decisions in the window */
    mk(&g, 2, 5, 30);
    int64_t t = 1000000;
    int pass = 0;
    for (int i = 0; i < 10; i++) pass += eg_dlq_guard_admit(&g, "a", t + i * 100) == EG_GUARD_PASS;
    CHECK(pass == 10, "the first 10 in the window pass (%d)", pass);
    CHECK(eg_dlq_guard_admit(&g, "a", t + 1000) == EG_GUARD_TRIP, "the 11th trips the guard and is refused");
    CHECK(strcmp(trail, "T:a:11 ") == 0, "the hook saw the trip with the window's count (%s)", trail);
    CHECK(eg_dlq_guard_admit(&g, "a", t + 1100) == EG_GUARD_REFUSED, "while tripped, the next one is refused");
    CHECK(eg_dlq_guard_admit(&g, "b", t + 1100) == EG_GUARD_PASS, "another topic has its own window");
    CHECK(eg_dlq_guard_poll(&g, t + 2000) == 1, "poll: one topic tripped");
    /* past the window but inside the cooldown: still tripped */
    CHECK(eg_dlq_guard_poll(&g, t + 20000) == 1, "the window emptied, but the cooldown (30 s) holds it tripped");
    CHECK(eg_dlq_guard_admit(&g, "a", t + 29000) == EG_GUARD_REFUSED, "still refused at 29 s");
    /* at 31 s the window (27..31) holds the one at 29 s: under the limit */
    trail[0] = 0;
    CHECK(eg_dlq_guard_admit(&g, "a", t + 31000) == EG_GUARD_PASS, "after the cooldown with the rate under: passes");
    CHECK(strcmp(trail, "R:a:1 ") == 0, "the hook saw the re-arm (%s)", trail);
    eg_dlq_guard_free(&g);

    /* a storm that goes on keeps it tripped past the cooldown: refused
     * decisions are demand too */
    mk(&g, 1, 2, 1); /* limit 2 in 2 s */
    t = 5000000;
    eg_dlq_guard_admit(&g, "s", t);
    eg_dlq_guard_admit(&g, "s", t + 10);
    CHECK(eg_dlq_guard_admit(&g, "s", t + 20) == EG_GUARD_TRIP, "limit 2 in 2 s: the third trips");
    int refused = 0;
    for (int i = 1; i <= 40; i++) refused += eg_dlq_guard_admit(&g, "s", t + 20 + i * 100) != EG_GUARD_PASS;
    CHECK(refused == 40, "10/s of demand for 4 s stays refused past the 1 s cooldown (%d of 40)", refused);
    CHECK(eg_dlq_guard_poll(&g, t + 4100) == 1, "still tripped while the window is over the limit");
    CHECK(eg_dlq_guard_poll(&g, t + 7000) == 0, "re-armed once the window emptied");
    eg_dlq_guard_free(&g);

    /* the window slides by whole seconds */
    mk(&g, 1, 3, 0); /* limit 3 in 3 s */
    t = 9000000;
    eg_dlq_guard_admit(&g, "w", t);        /* second 9000 */
    eg_dlq_guard_admit(&g, "w", t + 1000); /* 9001 */
    eg_dlq_guard_admit(&g, "w", t + 2000); /* 9002 */
    CHECK(eg_dlq_guard_admit(&g, "w", t + 3000) == EG_GUARD_PASS, "9003: the count of 9000 left the window");
    CHECK(eg_dlq_guard_admit(&g, "w", t + 3500) == EG_GUARD_TRIP, "9003 again: 4 in 9001..9003 trips");
    const char *name;
    int tripped;
    uint64_t count;
    CHECK(eg_dlq_guard_topic(&g, 0, t + 3500, &name, &tripped, &count) == 0 && strcmp(name, "w") == 0 && tripped &&
              count == 4,
          "topic 0 is w, tripped, 4 in the window (%llu)", (unsigned long long)count);
    CHECK(eg_dlq_guard_topic(&g, 1, t, &name, &tripped, &count) == -1, "no second topic");
    /* cooldown 0: re-arms as soon as the rate is back under */
    CHECK(eg_dlq_guard_poll(&g, t + 3900) == 1, "9003: still 4 in the window, tripped");
    CHECK(eg_dlq_guard_poll(&g, t + 4000) == 0, "9004: 3 in 9002..9004 is not above the limit: re-armed (cooldown 0)");
    eg_dlq_guard_free(&g);

    /* reset re-arms every topic at once and empties the windows */
    mk(&g, 1, 10, 3600);
    t = 100000;
    eg_dlq_guard_watch(&g, "x");
    for (int i = 0; i < 11; i++) eg_dlq_guard_admit(&g, "y", t);
    CHECK(eg_dlq_guard_poll(&g, t) == 1, "y tripped (limit 10)");
    trail[0] = 0;
    CHECK(eg_dlq_guard_reset(&g) == 1, "reset re-arms the one tripped topic");
    CHECK(strcmp(trail, "X:y:0 ") == 0, "the hook saw the reset (%s)", trail);
    CHECK(eg_dlq_guard_topic(&g, 1, t, &name, &tripped, &count) == 0 && !tripped && count == 0,
          "y is armed with an empty window");
    pass = 0;
    for (int i = 0; i < 10; i++) pass += eg_dlq_guard_admit(&g, "y", t + 10) == EG_GUARD_PASS;
    CHECK(pass == 10 && eg_dlq_guard_admit(&g, "y", t + 10) == EG_GUARD_TRIP, "after reset, the limit applies afresh");
    CHECK(eg_dlq_guard_topic(&g, 0, t, &name, &tripped, &count) == 0 && strcmp(name, "x") == 0 && !tripped,
          "a watched topic exists from the start, armed");
    /* fractional rates: 0.5/s over 4 s = 2 */
    eg_dlq_guard_free(&g);
    mk(&g, 0.5, 4, 0);
    eg_dlq_guard_admit(&g, "f", t);
    eg_dlq_guard_admit(&g, "f", t);
    CHECK(eg_dlq_guard_admit(&g, "f", t) == EG_GUARD_TRIP, "0.5/s over 4 s: the third trips");
    eg_dlq_guard_free(&g);
    return TAP_DONE();
}
