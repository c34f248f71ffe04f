/* test_shadow.c — the shadow policy (shadow.c): the agreement table (cells,
 * up to 5 example ids per disagreement only, the "_overflow" class past the
 * cell cap, its JSON and `errgate ctl shadow`'s text rendering); a real
 * candidate against the shipped default policy (the table and the metrics
 * add up to the failures offered, the examples are the records' ids, a
 * candidate that reads the record sees the copied headers); the queue cap
 * (skips counted "behind"); a refused reload keeps the candidate, a good one
 * replaces it and empties the table; hostile candidates (syntax and load
 * errors refused; a raising route, an endless loop, a string.rep bomb, a
 * memory bomb, metatable tricks, a wrong return type, and every
 * decide-time attack of spec/hostile/policy/) are counted as shadow errors
 * within a bound, and the live policy's decisions stay what they were; and
 * on an event loop, a looping candidate takes at most about its
 * shadow_cpu_percent of the time. */
#include "json.h"
#include "ctl_shadow.h"
#include "shadow.h"
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_MS 10
#ifdef TAP_ASAN
#define DECIDE_LIMIT_MS 3000
#else
#define DECIDE_LIMIT_MS 1000
#endif

static char g_dir[64];
static eg_registry *g_reg;

static const char *write_file(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
    return path;
}

static eg_failure http(int status) {
    return (eg_failure){.kind = EG_FK_HTTP, .status = status, .retry_after_ms = -1, .latency_ms = 3};
}

static eg_ctx first_attempt(void) {
    return (eg_ctx){.attempt = 1,
                    .ordering = EG_ORDER_PARTITION,
                    .now_ms = 1700000000000,
                    .first_failure_ms = 1700000000000,
                    .breaker = "closed",
                    .retry_budget = 1};
}

/* A copied record t/0/offset, with the header x-tenant: tenant when given. */
static eg_shadow_rec rec_at(int64_t offset, const char *tenant) {
    eg_shadow_rec r;
    memset(&r, 0, sizeof r);
    r.topic = eg_xstrdup("t");
    r.offset = offset;
    snprintf(r.id, sizeof r.id, "t/0/%lld", (long long)offset);
    if (tenant) {
        r.nh = 1;
        r.hname = eg_xcalloc(1, sizeof *r.hname);
        r.hval = eg_xcalloc(1, sizeof *r.hval);
        r.hlen = eg_xcalloc(1, sizeof *r.hlen);
        r.hname[0] = eg_xstrdup("x-tenant");
        r.hval[0] = eg_xstrdup(tenant);
        r.hlen[0] = strlen(tenant);
    }
    return r;
}

/* A shadow of the candidate at path, with a registry of its own (g_reg;
 * the previous shadow must be freed). */
static eg_shadow *shadow_of(const char *path, struct event_base *base, int cpu_percent) {
    eg_registry_free(g_reg);
    g_reg = eg_registry_new();
    eg_shadow_cfg c = {path, TIMEOUT_MS, EG_POLICY_MEM_LIMIT, cpu_percent};
    return eg_shadow_new(&c, base, g_reg);
}

/* The live policy decides f, and the shadow is offered the same. */
static eg_decision live_and_offer(eg_policy *live, eg_shadow *s, eg_failure f, int64_t offset, const char *tenant) {
    eg_ctx c = first_attempt();
    eg_decision d;
    eg_policy_decide(live, &f, NULL, &c, &d);
    eg_shadow_rec r = rec_at(offset, tenant);
    eg_shadow_offer_rec(s, &f, &r, &c, &d);
    return d;
}

static char *json_of(const eg_shadow *s) {
    struct evbuffer *b = evbuffer_new();
    eg_shadow_json(s, b);
    return eg_json_take(b);
}

/* The text `errgate ctl shadow` prints for json (malloc'ed). */
static char *printed(const char *json, int *rc) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    *rc = eg_shadow_print(json, f);
    fclose(f);
    return buf;
}

/* The value of the series `name{labels}` in the registry's rendering. */
static double metric(const char *series) {
    struct evbuffer *b = evbuffer_new();
    eg_registry_render(g_reg, b);
    evbuffer_add(b, "", 1);
    const char *text = (const char *)evbuffer_pullup(b, -1);
    double v = -1;
    for (const char *p = strstr(text, series); p; p = strstr(p + 1, series))
        if ((p == text || p[-1] == '\n') && p[strlen(series)] == ' ') {
            v = strtod(p + strlen(series) + 1, NULL);
            break;
        }
    evbuffer_free(b);
    return v;
}

/* ------------------------------------------------------------------ tests */

static void table(void) {
    eg_shadow_table t = {0};
    char id[32];
    for (int i = 0; i < 7; i++) {
        snprintf(id, sizeof id, "t/0/%d", i);
        eg_shadow_table_add(&t, "permanent", "dlq", "quarantine", id);
    }
    for (int i = 0; i < 3; i++) eg_shadow_table_add(&t, "transient", "retry", "retry", "t/1/9");
    eg_shadow_table_add(&t, "", "hold", "error", "t/2/0");
    CHECK(t.n == 3 && t.total == 11, "three cells, 11 decisions (n %d, total %llu)", t.n, (unsigned long long)t.total);
    CHECK(t.cells[0].count == 7 && t.cells[0].nex == 5 && !strcmp(t.cells[0].ex[0], "t/0/0") &&
              !strcmp(t.cells[0].ex[4], "t/0/4"),
          "a disagreement keeps its first 5 example ids of 7 (%d kept)", t.cells[0].nex);
    CHECK(t.cells[1].count == 3 && t.cells[1].nex == 0 && t.cells[1].ex == NULL, "an agreement keeps no examples");
    CHECK(!strcmp(t.cells[2].klass, "unknown"), "an empty class is counted as 'unknown'");
    struct evbuffer *b = evbuffer_new();
    eg_shadow_table_json(&t, b);
    evbuffer_add(b, "", 1);
    const char *j = (const char *)evbuffer_pullup(b, -1);
    CHECK(strstr(j, "{\"class\":\"permanent\",\"live\":\"dlq\",\"shadow\":\"quarantine\",\"agree\":false,\"count\":7,"
                    "\"examples\":[\"t/0/0\",\"t/0/1\",\"t/0/2\",\"t/0/3\",\"t/0/4\"]}") &&
              strstr(j, "{\"class\":\"transient\",\"live\":\"retry\",\"shadow\":\"retry\",\"agree\":true,\"count\":3,"
                        "\"examples\":[]}"),
          "the JSON cells: class, live, shadow, agree, count, examples (%s)", j);
    evbuffer_free(b);
    eg_shadow_table_clear(&t);
    for (int i = 0; i < EG_SHADOW_MAX_CELLS + 10; i++) {
        snprintf(id, sizeof id, "class-%d", i);
        eg_shadow_table_add(&t, id, "dlq", "dlq", NULL);
    }
    CHECK(t.n == EG_SHADOW_MAX_CELLS + 1 && !strcmp(t.cells[t.n - 1].klass, "_overflow") &&
              t.cells[t.n - 1].count == 10 && t.total == EG_SHADOW_MAX_CELLS + 10,
          "past %d cells, new classes are counted under _overflow (n %d, overflow %llu)", EG_SHADOW_MAX_CELLS, t.n,
          (unsigned long long)t.cells[t.n - 1].count);
    eg_shadow_table_clear(&t);
    int rc;
    char *out = printed("not json", &rc);
    CHECK(rc == -1, "ctl shadow refuses an answer that is not /shadow's");
    free(out);
}

static const char *CANDIDATE =
    "local policy = require \"errgate.policy\"\n"
    "return policy.define { name = \"candidate\", version = \"2\",\n"
    "  classify = {\n"
    "    { header = { \"x-tenant\", \"vip\" }, class = \"vip\" },\n"
    "    { status = { 502, 503, 504 }, class = \"transient\" },\n"
    "    { status = { 400, 404 }, class = \"permanent\" },\n"
    "    { class = \"unknown\" } },\n"
    "  retry = { transient = { attempts = 4, backoff = \"exponential\", base = \"100ms\",\n"
    "    max = \"5s\", jitter = \"full\" } },\n"
    "  route = { vip = \"ignore\", transient = { retry = \"transient\", exhausted = \"dlq\" },\n"
    "            permanent = \"quarantine\",\n"
    "            default = \"dlq\" } }\n";

static void agreement(eg_policy *live) {
    eg_shadow *s = shadow_of(write_file("candidate.lua", CANDIDATE), NULL, 100);
    for (int i = 0; i < 6; i++) live_and_offer(live, s, http(400), i, NULL);
    for (int i = 6; i < 10; i++) live_and_offer(live, s, http(503), i, NULL);
    live_and_offer(live, s, http(404), 10, "vip");
    CHECK(eg_shadow_pending(s) == 11, "11 failures offered are queued, none decided yet (%d)", eg_shadow_pending(s));
    CHECK(eg_shadow_drain(s, (int64_t)1000000000) == 11 && eg_shadow_pending(s) == 0, "a drain decides them all");
    char *j = json_of(s);
    CHECK(strstr(j, "\"candidate\":\"candidate@2+") && strstr(j, "\"decided\":11") && strstr(j, "\"errors\":0") &&
              strstr(j, "\"table_total\":11"),
          "/shadow: the candidate's id, 11 decided, no error (%s)", j);
    CHECK(strstr(j, "{\"class\":\"permanent\",\"live\":\"dlq\",\"shadow\":\"quarantine\",\"agree\":false,\"count\":6,"
                    "\"examples\":[\"t/0/0\",\"t/0/1\",\"t/0/2\",\"t/0/3\",\"t/0/4\"]}"),
          "permanent: live dlq vs shadow quarantine, 6, the first 5 record ids as examples");
    CHECK(strstr(j, "{\"class\":\"transient\",\"live\":\"retry\",\"shadow\":\"retry\",\"agree\":true,\"count\":4,"
                    "\"examples\":[]}"),
          "transient: both retry, 4, no examples");
    CHECK(strstr(j, "{\"class\":\"permanent\",\"live\":\"dlq\",\"shadow\":\"ignore\",\"agree\":false,\"count\":1,"
                    "\"examples\":[\"t/0/10\"]}"),
          "the candidate reads the copied record: its vip header rule sends t/0/10 to ignore");
    CHECK(metric("errgate_shadow_decisions_total{class=\"permanent\",live=\"dlq\",shadow=\"quarantine\"}") == 6 &&
              metric("errgate_shadow_decisions_total{class=\"transient\",live=\"retry\",shadow=\"retry\"}") == 4 &&
              metric("errgate_shadow_decisions_total{class=\"permanent\",live=\"dlq\",shadow=\"ignore\"}") == 1,
          "errgate_shadow_decisions_total{class,live,shadow} counts the same");
    int rc;
    char *text = printed(j, &rc);
    CHECK(rc == 0 && strstr(text, "candidate: candidate@2+") && strstr(text, "decided 11 (errors 0)") &&
              strstr(text, "t/0/0 t/0/1 t/0/2 t/0/3 t/0/4") && strstr(text, "transient") && strstr(text, "quarantine"),
          "ctl shadow prints the table with the examples:\n%s", text);
    free(text);
    free(j);

    /* the queue's cap: the rest is skipped and counted */
    for (int i = 0; i < EG_SHADOW_QUEUE + 7; i++) live_and_offer(live, s, http(503), 100 + i, NULL);
    double behind = metric("errgate_shadow_skipped_total{reason=\"behind\"}");
    CHECK(eg_shadow_pending(s) == EG_SHADOW_QUEUE && behind == 7, "past %d queued, failures are skipped: %.0f 'behind'",
          EG_SHADOW_QUEUE, behind);
    eg_shadow_drain(s, (int64_t)10 * 1000000000);

    /* a refused reload keeps the candidate; a good one replaces it */
    eg_policy *none = NULL;
    eg_shadow_swap(s, &none, "policy x.lua: syntax error near 'end'", "file");
    j = json_of(s);
    CHECK(strstr(j, "\"candidate\":\"candidate@2+") && strstr(j, "\"last_error\":\"policy x.lua: syntax error") &&
              metric("errgate_shadow_reloads_total{result=\"failure\"}") == 1,
          "a refused candidate: the previous one stays, the error is shown and counted");
    free(j);
    char err[512];
    eg_policy *fresh = eg_policy_load(write_file("candidate2.lua", CANDIDATE), TIMEOUT_MS, err, sizeof err);
    eg_shadow_swap(s, &fresh, NULL, "sighup");
    j = json_of(s);
    CHECK(fresh == NULL && strstr(j, "\"table_total\":0") && strstr(j, "\"last_error\":\"\""),
          "a good reload takes the candidate over and starts its table afresh");
    free(j);
    eg_shadow_free(s);
}

/* A hostile candidate: refused at load (want_load 0) or counted as an
 * error at each decision within the bound; the live decisions unchanged. */
static void hostile_one(eg_policy *live, const char *name, const char *path, int loads) {
    eg_shadow *s = shadow_of(path, NULL, 100);
    char *j = json_of(s);
    int has = strstr(j, "\"candidate\":null") == NULL;
    free(j);
    eg_decision before[3], after[3];
    int codes[3] = {400, 503, 422};
    for (int i = 0; i < 3; i++) before[i] = live_and_offer(live, s, http(codes[i]), i, "vip");
    if (!loads) {
        CHECK(!has && eg_shadow_pending(s) == 0, "%s: refused at load, nothing queued", name);
        eg_shadow_free(s);
        return;
    }
    CHECK(has, "%s: loads (its attack waits for a decision)", name);
    double e0 = metric("errgate_shadow_errors_total");
    int64_t worst = 0;
    for (int i = 0; i < 3; i++) {
        int64_t t0 = eg_now_ms();
        eg_shadow_drain(s, 1);
        int64_t took = eg_now_ms() - t0;
        if (took > worst) worst = took;
    }
    CHECK(metric("errgate_shadow_errors_total") - e0 == 3 && worst <= DECIDE_LIMIT_MS,
          "%s: 3 shadow errors counted, each within %d ms (worst %lld ms)", name, DECIDE_LIMIT_MS, (long long)worst);
    j = json_of(s);
    CHECK(strstr(j, "\"shadow\":\"error\"") && strstr(j, "\"errors\":3"), "%s: the table shows shadow 'error'", name);
    free(j);
    int same = 1;
    for (int i = 0; i < 3; i++) {
        eg_failure f = http(codes[i]);
        eg_ctx c = first_attempt();
        eg_policy_decide(live, &f, NULL, &c, &after[i]);
        same = same && after[i].action == before[i].action && !after[i].fallback &&
               !strcmp(after[i].klass, before[i].klass);
    }
    CHECK(same, "%s: the live policy decides as before", name);
    eg_shadow_free(s);
}

#define PRELUDE "local policy = require \"errgate.policy\"\n"

static void hostile(eg_policy *live) {
    static const struct {
        const char *name, *text;
        int loads;
    } cases[] = {
        {"syntax error", PRELUDE "return policy.define { name = \"x\", version = \"1\", route = { default = \n", 0},
        {"error at load", PRELUDE "error(\"not today\")\n", 0},
        {"raising route",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = { { class = \"c\" } }, route = function() error(\"boom\") end }\n",
         1},
        {"endless loop",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = function() while true do end end, route = { default = \"dlq\" } }\n",
         1},
        {"string.rep bomb",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = function() local s = ('x'):rep(1e6)\n"
                 "    while true do s = s:rep(2):sub(1, 4e6):upper() end end,\n"
                 "  route = { default = \"dlq\" } }\n",
         1},
        {"memory bomb",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = function() local t = {} for i = 1, 1e9 do t[i] = ('y'):rep(64) .. i end "
                 "end,\n  route = { default = \"dlq\" } }\n",
         1},
        {"metatable trick",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = { { class = \"c\" } },\n"
                 "  route = function() return setmetatable({}, { __index = function() while true "
                 "do end end,\n    __tostring = function() while true do end end }) end }\n",
         1},
        {"wrong return type",
         PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                 "  classify = { { class = \"c\" } }, route = function() return 42 end }\n",
         1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        hostile_one(live, cases[i].name, write_file("hostile.lua", cases[i].text), cases[i].loads);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every decide-time attack of spec/hostile/policy/ as a candidate. */
static void hostile_corpus(eg_policy *live) {
    DIR *d = opendir("spec/hostile/policy");
    CHECK(d != NULL, "spec/hostile/policy/ is there");
    if (!d) return;
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;)
        if (strstr(e->d_name, ".lua")) names[n++] = eg_xstrdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        char path[512], l1[512] = "";
        snprintf(path, sizeof path, "spec/hostile/policy/%s", names[i]);
        FILE *f = fopen(path, "r");
        if (f && !fgets(l1, sizeof l1, f)) l1[0] = '\0';
        if (f) fclose(f);
        if (strstr(l1, "falls back to hold at decide")) {
            hostile_one(live, names[i], path, 1);
            ran++;
        }
        free(names[i]);
    }
    CHECK(ran >= 10, "%d decide-time attacks ran as candidates", ran);
}

/* The cost the decision point pays (the live decision, then the copy
 * queued for the shadow) and a shadow decision's own cost, measured over
 * 20,000 failures with the record-reading candidate; printed for the man page (Shadow policy). */
static void bench(eg_policy *live) {
    eg_shadow *s = shadow_of(write_file("candidate.lua", CANDIDATE), NULL, 100);
    int64_t t_live = 0, t_offer = 0, t_drain = 0;
    const int rounds = 40, per = 500;
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < per; i++) {
            eg_failure f = http(i % 2 ? 400 : 503);
            eg_ctx c = first_attempt();
            eg_decision d;
            int64_t t0 = eg_now_ns();
            eg_policy_decide(live, &f, NULL, &c, &d);
            int64_t t1 = eg_now_ns();
            eg_shadow_rec r = rec_at(k * per + i, "std");
            eg_shadow_offer_rec(s, &f, &r, &c, &d);
            t_live += t1 - t0;
            t_offer += eg_now_ns() - t1;
        }
        int64_t t0 = eg_now_ns();
        eg_shadow_drain(s, (int64_t)10 * 1000000000);
        t_drain += eg_now_ns() - t0;
    }
    double n = rounds * per;
    printf("# bench: live decision %.2f us, shadow copy at the decision point %.2f us (%.0f%% of it), "
           "shadow decision off the path %.2f us, per failure (%d failures)\n",
           (double)t_live / n / 1e3, (double)t_offer / n / 1e3, 100.0 * (double)t_offer / (double)t_live,
           (double)t_drain / n / 1e3, rounds * per);
    CHECK(t_offer < 2 * t_live, "the copy at the decision point costs less than twice the live decision itself");
    eg_shadow_free(s);
}

static void on_stop(evutil_socket_t fd, short what, void *arg) { event_base_loopbreak(arg); }

/* On a loop, a candidate that always runs to its budget takes at most about
 * cpu_percent of the time. */
static void share(eg_policy *live) {
    const char *path = write_file("loop.lua", PRELUDE "return policy.define { name = \"x\", version = \"1\",\n"
                                                      "  classify = function() while true do end end,\n"
                                                      "  route = { default = \"dlq\" } }\n");
    struct event_base *base = event_base_new();
    eg_shadow *s = shadow_of(path, base, 10);
    for (int i = 0; i < 100; i++) live_and_offer(live, s, http(400), i, NULL);
    struct event *stop = evtimer_new(base, on_stop, base);
    struct timeval tv = {1, 0};
    evtimer_add(stop, &tv);
    double e0 = metric("errgate_shadow_errors_total");
    int64_t t0 = eg_now_ms();
    event_base_dispatch(base);
    int64_t wall = eg_now_ms() - t0;
    double ran = metric("errgate_shadow_errors_total") - e0;
    /* each call runs TIMEOUT_MS (+ up to a watchdog tick): 10% of 1 s is
     * about 10 calls; 25 would be 25% or more of the loop */
    CHECK(ran >= 2 && ran <= 25, "in %lld ms, a looping candidate at 10%% ran %.0f decisions of %d ms (~%.0f%%)",
          (long long)wall, ran, TIMEOUT_MS, ran * TIMEOUT_MS * 100.0 / (double)wall);
    event_free(stop);
    eg_shadow_free(s);
    event_base_free(base);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    eg_strlcpy(g_dir, "/tmp/eg-shadow.XXXXXX", sizeof g_dir);
    if (!mkdtemp(g_dir)) return 1;
    char err[512];
    eg_policy *live = eg_policy_load("policies/default.lua", 50, err, sizeof err);
    CHECK(live && !eg_policy_reads_record(live), "the live policy (default.lua) loads and does not read records");
    if (!live) return TAP_DONE();
    table();
    agreement(live);
    hostile(live);
    hostile_corpus(live);
    share(live);
    bench(live);
    eg_policy_free(live);
    eg_registry_free(g_reg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", g_dir);
    return TAP_DONE();
}
