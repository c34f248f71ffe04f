/* test_budget.c — the retry budget's formula and gauges.
 *
 * limit = max(min, floor(percent * (requests + retries) / 100)); a retry is
 * admitted while retries + 1 <= limit. Cases: the floor at low traffic, the
 * percentage at high traffic (retries count in the base), an exact share that
 * naive double arithmetic gets wrong, refusals counted, a finished retry
 * freeing its place, counts that never go negative, and disabled. */
#include "budget.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void mk(eg_budget *b, double percent, int min) {
    eg_budget_cfg c = {.enabled = 1, .percent = percent, .min = min};
    char err[128];
    if (eg_budget_init(b, &c, 0, err, sizeof err) != 0) abort();
}

/* Takes retries until one is refused; returns how many were admitted. */
static int take_all(eg_budget *b) {
    int n = 0;
    while (eg_budget_retry_take(b, 0)) n++;
    return n;
}

static void config_checks(void) {
    eg_budget_cfg c;
    char err[128] = "";
    eg_budget_cfg_defaults(&c);
    CHECK(c.enabled == 1 && c.percent == 20 && c.min == 3, "defaults are 20%%, min 3");
    CHECK(eg_budget_cfg_check(&c, err, sizeof err) == 0, "defaults pass the check");
    c.percent = 101;
    CHECK(eg_budget_cfg_check(&c, err, sizeof err) == -1 && strstr(err, "percent"),
          "percent 101 is refused, naming percent: %s", err);
    eg_budget_cfg_defaults(&c);
    c.min = -1;
    CHECK(eg_budget_cfg_check(&c, err, sizeof err) == -1 && strstr(err, "min"), "negative min is refused: %s", err);
}

static void low_traffic_floor(void) {
    eg_budget b;
    mk(&b, 20, 3);
    eg_budget_request_start(&b);
    eg_budget_request_start(&b);
    CHECK(eg_budget_limit(&b) == 3, "2 active at 20%%: the floor 3 applies");
    int n = take_all(&b);
    CHECK(n == 3, "exactly 3 retries admitted (%d)", n);
    CHECK(b.retries == 3 && b.refused == 1, "gauge 3 retries active, 1 refusal counted");
    CHECK(!eg_budget_allows_retry(&b, 0) && b.refused == 1, "asking allows_retry counts no refusal");
    int rc = eg_budget_retry_end(&b);
    CHECK(rc == 0 && eg_budget_allows_retry(&b, 0), "a finished retry frees its place");
    rc = eg_budget_retry_take(&b, 0);
    CHECK(rc == 1 && !eg_budget_allows_retry(&b, 0), "which one retry takes again");
}

static void high_traffic_percent(void) {
    eg_budget b;
    mk(&b, 20, 3);
    for (int i = 0; i < 100; i++) eg_budget_request_start(&b);
    CHECK(eg_budget_limit(&b) == 20, "100 active at 20%%: limit 20");
    /* retries join the base: r + 1 <= floor(0.2 * (100 + r)) holds up to r = 23 */
    int n = take_all(&b);
    CHECK(n == 24 && eg_budget_limit(&b) == 24, "24 retries admitted (%d; base 124, limit 24)", n);
    for (int i = 0; i < 60; i++) eg_budget_request_end(&b);
    CHECK(eg_budget_limit(&b) == 12 && b.retries == 24, "traffic falls: limit 12, admitted retries kept");
    uint64_t before = b.refused;
    int rc = eg_budget_retry_take(&b, 0);
    CHECK(rc == 0 && b.refused == before + 1, "over the new limit: refused, counted");
    for (int i = 0; i < 12; i++) eg_budget_retry_end(&b);
    CHECK(b.retries == 12 && !eg_budget_allows_retry(&b, 0), "12 left of limit floor(0.2*52)=10: still full");
    for (int i = 0; i < 3; i++) eg_budget_retry_end(&b);
    CHECK(eg_budget_limit(&b) == 9 && !eg_budget_allows_retry(&b, 0), "9 left, limit floor(0.2*49)=9: full");
    eg_budget_retry_end(&b);
    CHECK(eg_budget_allows_retry(&b, 0), "8 left, limit floor(0.2*48)=9: one more fits");

    mk(&b, 29, 0);
    for (int i = 0; i < 100; i++) eg_budget_request_start(&b);
    CHECK(eg_budget_limit(&b) == 29, "29%% of 100 is 29 (0.29 * 100 would floor to 28)");
}

static void never_negative(void) {
    eg_budget b;
    mk(&b, 20, 0);
    int rc = eg_budget_retry_take(&b, 0);
    CHECK(eg_budget_limit(&b) == 0 && rc == 0, "min 0, idle: no retry fits");
    int r1 = eg_budget_request_end(&b), r2 = eg_budget_retry_end(&b);
    CHECK(r1 == -1 && r2 == -1, "unmatched ends are refused");
    CHECK(b.requests == 0 && b.retries == 0 && eg_budget_limit(&b) == 0, "counts stay at 0");
    eg_budget_request_start(&b);
    r1 = eg_budget_request_end(&b);
    r2 = eg_budget_request_end(&b);
    CHECK(r1 == 0 && r2 == -1, "one start, one end");
}

static void disabled(void) {
    eg_budget b;
    eg_budget_cfg c = {.enabled = 0, .percent = -5};
    char err[64];
    int rc = eg_budget_init(&b, &c, 0, err, sizeof err);
    CHECK(rc == 0, "disabled init ignores the rest");
    int n = 0;
    for (int i = 0; i < 500; i++) n += eg_budget_retry_take(&b, 0);
    CHECK(n == 500 && b.refused == 0 && b.retries == 500 && eg_budget_limit(&b) == -1,
          "disabled: 500 retries admitted, gauge kept, limit -1");
}

int main(void) {
    config_checks();
    low_traffic_floor();
    high_traffic_percent();
    never_negative();
    disabled();
    return TAP_DONE();
}
