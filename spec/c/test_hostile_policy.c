/* test_hostile_policy.c — every hostile policy of spec/hostile/policy/
 * through the C path the gateway uses (eg_policy_load, eg_policy_decide:
 * sandbox, JIT off, count hook, watchdog, memory cap).
 *
 * Each file's first line says what it attacks and what must happen:
 * "refused at load" (eg_policy_load fails within LOAD_LIMIT_MS) or "falls
 * back to hold at decide" (it loads, and each of two decisions is the
 * fallback hold within DECIDE_LIMIT_MS, the budget being DECIDE_BUDGET_MS).
 * An optional second line "-- error: TEXT" names text the error must
 * contain (so an attack stopped by the wrong limit, say the budget instead
 * of the pattern guard, fails). The worst overshoot past each budget is
 * printed as a TAP comment. Decisions get a real record (produced to an
 * in-process mock cluster and consumed back), since a policy with a route
 * function reads it. */
#include "luavm.h"
#include "mock_message.h"
#include "policy.h"
#include "record.h"
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR_PATH "spec/hostile/policy"
#define DECIDE_BUDGET_MS 50
/* Limits: generous bounds past the budgets (the measured overshoots are
 * printed); a sanitizer build's allocator makes each big allocation and
 * free several times slower, so there they are wider. */
#ifdef TAP_ASAN
#define DECIDE_LIMIT_MS 3000
#define LOAD_LIMIT_MS 10000
#else
#define DECIDE_LIMIT_MS 1000
#define LOAD_LIMIT_MS 7000
#endif
#define MAX_FILES 256

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Reads the first two lines of path into l1 and l2 ("" when absent). */
static void head_lines(const char *path, char *l1, char *l2, size_t n) {
    l1[0] = l2[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(l1, (int)n, f)) (void)!fgets(l2, (int)n, f);
    fclose(f);
    l1[strcspn(l1, "\n")] = l2[strcspn(l2, "\n")] = '\0';
}

static double ms_since(int64_t t0) { return (double)(eg_now_ns() - t0) / 1e6; }

static double g_worst_load, g_worst_decide; /* the worst times seen, in ms */

/* Runs one attack file; rec is the record handed to decisions. */
static void attack(const char *path, eg_record *rec) {
    char l1[512], l2[512], err[1024] = "";
    head_lines(path, l1, l2, sizeof l1);
    const char *want = strncmp(l2, "-- error: ", 10) == 0 ? l2 + 10 : NULL;
    int at_load = strstr(l1, "refused at load") != NULL, at_decide = strstr(l1, "falls back to hold at decide") != NULL,
        loads = strstr(l1, "expect: loads") != NULL;
    CHECK(at_load + at_decide + loads == 1, "%s: the first line names one expected outcome", path);
    int64_t t0 = eg_now_ns();
    eg_policy *p = eg_policy_load(path, DECIDE_BUDGET_MS, err, sizeof err);
    double load_ms = ms_since(t0);
    if (load_ms > g_worst_load) g_worst_load = load_ms;
    printf("# %s: load %.0f ms%s%s\n", path, load_ms, p ? "" : ": ", p ? "" : err);
    if (at_load) {
        CHECK(!p && load_ms <= LOAD_LIMIT_MS && (!want || strstr(err, want)),
              "%s is refused at load within %d ms (%.0f ms)%s%s", path, LOAD_LIMIT_MS, load_ms,
              want ? ", with an error naming: " : "", want ? want : "");
        eg_policy_free(p);
        return;
    }
    CHECK(p != NULL && load_ms <= LOAD_LIMIT_MS, "%s loads (its attack waits for a decision) (%s)", path,
          p ? "ok" : err);
    if (!p) return;
    for (int i = 0; i < 2; i++) {
        eg_failure f = {.kind = EG_FK_HTTP, .status = 500, .retry_after_ms = -1, .latency_ms = 3};
        eg_ctx c = {.attempt = 1,
                    .ordering = EG_ORDER_PARTITION,
                    .now_ms = 1700000000000,
                    .first_failure_ms = 1700000000000,
                    .breaker = "closed",
                    .retry_budget = 1};
        eg_decision d;
        t0 = eg_now_ns();
        eg_policy_decide(p, &f, rec, &c, &d);
        double ms = ms_since(t0);
        if (ms > g_worst_decide) g_worst_decide = ms;
        printf("# %s: decision %d %.1f ms: %s\n", path, i + 1, ms, d.message);
        if (loads) /* the attack may or may not bite this record: bounded either way */
            CHECK(ms <= DECIDE_LIMIT_MS && (!d.fallback || d.action == EG_ACT_HOLD),
                  "%s: decision %d ends within %d ms, decided or held (%.1f ms, fallback=%d)", path, i + 1,
                  DECIDE_LIMIT_MS, ms, d.fallback);
        else
            CHECK(d.fallback && d.action == EG_ACT_HOLD && ms <= DECIDE_LIMIT_MS && (!want || strstr(d.message, want)),
                  "%s: decision %d falls back to hold within %d ms (%.1f ms, fallback=%d)%s%s", path, i + 1,
                  DECIDE_LIMIT_MS, ms, d.fallback, want ? ", naming: " : "", want ? want : "");
    }
    eg_policy_free(p);
}

/* argv[1], when given, runs only the files whose name contains it. */
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *only = argc > 1 ? argv[1] : NULL;
    rd_kafka_t *prod = NULL, *cons = NULL;
    rd_kafka_message_t *m = mock_message(&prod, &cons, "hostile-policy-test", "k", "h", "x");
    CHECK(m != NULL, "a record comes back from the mock cluster");
    DIR *d = opendir(DIR_PATH);
    CHECK(d != NULL, "%s exists", DIR_PATH);
    char *files[MAX_FILES];
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < MAX_FILES;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".lua") && (!only || strstr(e->d_name, only))) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", DIR_PATH, e->d_name);
            files[n++] = eg_xstrdup(path);
        }
    }
    if (d) closedir(d);
    qsort(files, (size_t)n, sizeof files[0], by_name);
    CHECK(only || n >= 20, "the corpus holds %d attacks", n);
    eg_record rec = {.msg = m, .topic = "t", .partition = 0, .offset = m ? m->offset : 0, .attempt = 1};
    for (int i = 0; i < n; i++) {
        if (m) attack(files[i], &rec);
        free(files[i]);
    }
    printf("# worst load %.0f ms (budget %d ms), worst decision %.1f ms (budget %d ms)\n", g_worst_load,
           EG_VM_LOAD_BUDGET_MS, g_worst_decide, DECIDE_BUDGET_MS);
    mock_message_free(m, prod, cons);
    return TAP_DONE();
}
