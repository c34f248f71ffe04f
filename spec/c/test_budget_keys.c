/* test_budget_keys.c — retry budgets by key and the per-minute cap, on a
 * clock driven by hand.
 *
 * per_minute: a bucket of per_minute retries refilled at per_minute a
 * minute, told apart from the share's refusal. Keys: each key spends its
 * own budget (a noisy key refused while a quiet one is admitted); records
 * without the key, and overlong values, share "*"; past max_keys the least
 * recently used idle key is evicted (its per-minute history forgotten), a
 * busy key never is, and with every key busy a new one counts in "*"; the
 * sums (retries active, refusals) stay right across evictions; the index
 * survives many evictions (every tracked key is found again). */
#include "budget_keys.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 1000000000LL

static int slot(eg_budgets *bs, const char *k, int64_t now) { return eg_budgets_slot(bs, k, k ? strlen(k) : 0, now); }

static void per_minute(void) {
    eg_budget b;
    eg_budget_cfg c = {.enabled = 1, .percent = 100, .min = 1000, .per_minute = 6};
    char err[128];
    CHECK(eg_budget_init(&b, &c, 0, err, sizeof err) == 0, "per_minute 6 with a share that never refuses");
    int n = 0;
    while (eg_budget_retry_take(&b, 0) == EG_BUDGET_ADMITTED) n++;
    CHECK(n == 6, "6 retries at once (%d)", n);
    CHECK(eg_budget_retry_take(&b, 0) == EG_BUDGET_REFUSED_MINUTE && b.refused == 2,
          "then refused as per_minute (counted)");
    CHECK(!eg_budget_allows_retry(&b, 9 * S) && eg_budget_allows_retry(&b, 10 * S),
          "one more 10 s later (6 a minute), not before");
    CHECK(eg_budget_retry_take(&b, 10 * S) == EG_BUDGET_ADMITTED, "and it is admitted");
    eg_budget_cfg s = {.enabled = 1, .percent = 0, .min = 1, .per_minute = 6};
    eg_budget_init(&b, &s, 0, err, sizeof err);
    CHECK(eg_budget_retry_take(&b, 0) == EG_BUDGET_ADMITTED && eg_budget_retry_take(&b, 0) == EG_BUDGET_REFUSED,
          "the share refuses first when it is full: told apart from per_minute");
    c.per_minute = -1;
    CHECK(eg_budget_cfg_check(&c, err, sizeof err) == -1 && strstr(err, "per_minute"), "negative per_minute: %s", err);
}

static void keys(void) {
    eg_budgets bs;
    eg_budget_cfg c = {.enabled = 1, .percent = 0, .min = 2, .per_minute = 0};
    char err[128];
    CHECK(eg_budgets_init(&bs, &c, 1, 0, 0, err, sizeof err) == -1 && strstr(err, "max_keys"),
          "max_keys 0 is refused: %s", err);
    CHECK(eg_budgets_init(&bs, &c, 1, 3, 0, err, sizeof err) == 0, "keyed, min 2 each, 3 keys at most");
    int noisy = slot(&bs, "noisy", 0), quiet = slot(&bs, "quiet", 0);
    CHECK(noisy > 0 && quiet > 0 && noisy != quiet && slot(&bs, "noisy", 0) == noisy, "one slot per key, found again");
    CHECK(!strcmp(eg_budgets_name(&bs, noisy), "noisy") && !strcmp(eg_budgets_name(&bs, 0), "*"), "named");
    int n = 0;
    for (int i = 0; i < 10; i++) n += eg_budgets_retry_take(&bs, noisy, 0) == EG_BUDGET_ADMITTED;
    CHECK(n == 2 && bs.refused == 8, "the noisy key spends its own 2 and is refused 8 times");
    CHECK(eg_budgets_retry_take(&bs, quiet, 0) == EG_BUDGET_ADMITTED &&
              eg_budgets_retry_take(&bs, quiet, 0) == EG_BUDGET_ADMITTED,
          "the quiet key still gets its 2");
    CHECK(bs.retries == 4, "retries active over every key: 4");
    CHECK(slot(&bs, NULL, 0) == 0, "no header: the shared key");
    char big[EG_BUDGET_KEY_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(slot(&bs, big, 0) == 0, "a value over %d bytes: the shared key", EG_BUDGET_KEY_MAX);
    CHECK(eg_budgets_slot(&bs, "a\0b", 3, 0) == 0, "a value with a NUL byte: the shared key");
    int third = slot(&bs, "third", 0);
    CHECK(third > 0 && bs.nkeys == 3, "a third key fills the table");
    int fourth = slot(&bs, "fourth", 0);
    CHECK(fourth == third && bs.evicted == 1 && bs.nkeys == 3,
          "a fourth takes the place of the idle one (third), not of the busy noisy and quiet");
    eg_budget_request_start(eg_budgets_at(&bs, fourth));
    int fifth = slot(&bs, "fifth", 0);
    CHECK(fifth == 0 && bs.overflowed == 1, "with every key busy a fifth counts in the shared key");
    CHECK(slot(&bs, "noisy", 0) == noisy && slot(&bs, "quiet", 0) == quiet, "busy keys keep their slots");
    eg_budgets_retry_end(&bs, noisy);
    eg_budgets_retry_end(&bs, noisy);
    CHECK(eg_budgets_retry_end(&bs, noisy) == -1 && bs.retries == 2, "an unmatched end is refused; sum 2");
    slot(&bs, "quiet", 0); /* quiet used after noisy: noisy is the least recently used idle one */
    eg_budgets_retry_end(&bs, quiet);
    eg_budgets_retry_end(&bs, quiet);
    int again = slot(&bs, "fifth", 0);
    CHECK(again == noisy && bs.evicted == 2, "once idle, the least recently used (noisy) makes room for fifth");
    CHECK(slot(&bs, "noisy", 0) == quiet && bs.evicted == 3 && bs.refused == 8,
          "noisy comes back fresh in quiet's place; refusals counted before stay in the sum");
    eg_budgets_free(&bs);

    /* many keys through a small table: the index stays consistent */
    eg_budgets_init(&bs, &c, 1, 8, 0, err, sizeof err);
    char k[32];
    int lost = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "tenant-%d", i % 37);
        int s = slot(&bs, k, 0);
        if (s <= 0 || strcmp(eg_budgets_name(&bs, s), k) != 0) lost++;
        for (int j = 1; j <= bs.max_keys; j++)
            if (bs.slots[j].live && slot(&bs, bs.slots[j].key, 0) != j) lost++;
    }
    CHECK(lost == 0 && bs.nkeys == 8, "5000 lookups over 37 keys in 8 slots: every tracked key found (%d lost)", lost);
    eg_budgets_free(&bs);

    CHECK(eg_budgets_init(&bs, &c, 0, 0, 0, err, sizeof err) == 0 && slot(&bs, "noisy", 0) == 0 &&
              !strcmp(eg_budgets_name(&bs, 0), ""),
          "not keyed: everything counts in the one budget");
    eg_budgets_free(&bs);
}

int main(void) {
    per_minute();
    keys();
    return TAP_DONE();
}
