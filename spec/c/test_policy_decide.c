/* test_policy_decide.c — the C decision path (policy.c over luavm.c): each
 * field of a decision read back for the shipped policies (dlq, retry,
 * over-budget hold, exhaustion, explicit class, redaction, breaker, ladder
 * rungs and Retry-After, a JSON body); the record handed to a policy only
 * when it reads it (a header rule, a route function seeing the whole ctx
 * and record); a policy that loops is stopped at its budget and the next
 * decision is normal again, more than once (the count hook is restored
 * after a timeout); a raising route, an invalid route answer and a policy
 * past its memory cap fall back to hold. Hostile policies: one that reaches
 * the shared Policy metatable through pol.__index and makes every lookup of
 * a missing field raise or loop, while its name and version are removed (the
 * C side reads them raw: the load neither dies nor hangs), and one that
 * hoards its whole memory cap so that the record's table cannot be built
 * (the decision falls back; the process lives). Records are real librdkafka
 * messages from an in-process mock cluster (headers are read through
 * librdkafka). */
#include "policy.h"
#include "record.h"
#include "tap.h"
#include "util.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ helpers */

static char g_dir[64];

/* Writes text to g_dir/name; returns the path (static buffer, one at a time). */
static const char *write_policy(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
    return path;
}

static eg_policy *load(const char *path, size_t mem_limit) {
    char err[512];
    eg_policy *p = eg_policy_load_capped(path, 50, mem_limit, err, sizeof err);
    if (!p) printf("# load %s: %s\n", path, err);
    return p;
}

#define BIG_HEADERS 1200
/* Three records produced to a mock cluster and consumed back: [0] carries
 * the header x-tenant: vip, [1] has no header, [2] has BIG_HEADERS headers of
 * 4000 bytes each (4.8 MB). Returns 0 on success. */
static int real_messages(rd_kafka_t **prod, rd_kafka_t **cons, rd_kafka_message_t *out[3]) {
    char err[512];
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(pc, "test.mock.num.brokers", "1", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(pc, "message.max.bytes", "10000000", err, sizeof err) != RD_KAFKA_CONF_OK)
        return -1;
    *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!*prod) return -1;
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(rd_kafka_handle_mock_cluster(*prod));
    if (rd_kafka_producev(*prod, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k1", 2),
                          RD_KAFKA_V_VALUE("v1", 2), RD_KAFKA_V_HEADER("x-tenant", "vip", -1), RD_KAFKA_V_END) ||
        rd_kafka_producev(*prod, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k2", 2),
                          RD_KAFKA_V_VALUE("v2", 2), RD_KAFKA_V_END))
        return -1;
    rd_kafka_headers_t *big = rd_kafka_headers_new(BIG_HEADERS);
    static char val[4000];
    memset(val, 'h', sizeof val);
    for (int i = 0; i < BIG_HEADERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "x-big-%d", i);
        memcpy(val, name, strlen(name)); /* distinct values: Lua interns strings */
        rd_kafka_header_add(big, name, -1, val, sizeof val);
    }
    if (rd_kafka_producev(*prod, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k3", 2),
                          RD_KAFKA_V_VALUE("v3", 2), RD_KAFKA_V_HEADERS(big), RD_KAFKA_V_END)) {
        rd_kafka_headers_destroy(big);
        return -1;
    }
    rd_kafka_flush(*prod, 10000);
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(cc, "bootstrap.servers", bootstrap, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "group.id", "policy-decide-test", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "fetch.max.bytes", "20000000", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "receive.message.max.bytes", "30000000", err, sizeof err) != RD_KAFKA_CONF_OK)
        return -1;
    *cons = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!*cons) return -1;
    rd_kafka_poll_set_consumer(*cons);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, "t", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(*cons, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    int got = 0;
    for (int i = 0; i < 200 && got < 3; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(*cons, 100);
        if (!m) continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        out[got++] = m;
    }
    return got == 3 ? 0 : -1;
}

static eg_record g_rec[3];

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

static eg_decision decide(eg_policy *p, eg_failure f, int rec, eg_ctx c) {
    eg_decision d;
    eg_policy_decide(p, &f, &g_rec[rec], &c, &d);
    return d;
}

/* ------------------------------------------------------------------- tests */

static void shipped_default(void) {
    eg_policy *p = load("policies/default.lua", 0);
    CHECK(p != NULL, "default.lua loads");
    if (!p) return;
    static char body[] = "bad request: field amount must be positive";
    eg_failure f = http(400);
    f.body = body;
    f.body_len = sizeof body - 1;
    eg_decision d = decide(p, f, 1, first_attempt());
    CHECK(d.action == EG_ACT_DLQ && !d.fallback && !strcmp(d.klass, "permanent") && !strcmp(d.code, "http_400") &&
              !strcmp(d.reason, "permanent") && d.why == EG_RSN_OTHER && !strcmp(d.message, "HTTP 400") &&
              d.delay_ms == 0,
          "400: dlq, permanent, http_400, reason permanent, message 'HTTP 400' (got %s %s %s %s '%s' %lld)",
          eg_action_name(d.action), d.klass, d.code, d.reason, d.message, (long long)d.delay_ms);

    d = decide(p, http(503), 1, first_attempt());
    CHECK(d.action == EG_ACT_RETRY && !strcmp(d.klass, "transient") && !strcmp(d.code, "http_503") &&
              !strcmp(d.reason, "transient") && d.delay_ms >= 0 && d.delay_ms <= 100,
          "503: retry, transient, first delay within 100 ms of full jitter (got %s %s %lld)", eg_action_name(d.action),
          d.klass, (long long)d.delay_ms);

    eg_ctx c = first_attempt();
    c.retry_budget = 0;
    d = decide(p, http(503), 1, c);
    CHECK(d.action == EG_ACT_HOLD && !strcmp(d.reason, "retry_budget") && d.why == EG_RSN_RETRY_BUDGET,
          "503 with no room in the retry budget: hold, reason retry_budget, read as EG_RSN_RETRY_BUDGET (got %s %s "
          "%d)",
          eg_action_name(d.action), d.reason, (int)d.why);

    c = first_attempt();
    c.attempt = 5;
    c.last_class = "transient";
    c.class_attempts = 4;
    c.last_delay_ms = 800;
    eg_failure t = {.kind = EG_FK_TIMEOUT, .retry_after_ms = -1, .latency_ms = 5000};
    d = decide(p, t, 1, c);
    CHECK(d.action == EG_ACT_DLQ && !strcmp(d.reason, "exhausted") && d.why == EG_RSN_EXHAUSTED &&
              !strcmp(d.code, "timeout") && !strcmp(d.message, "timeout after 5000 ms"),
          "fifth timeout: dlq, exhausted, code timeout, described message (got %s %s %s '%s')",
          eg_action_name(d.action), d.reason, d.code, d.message);

    f = http(503);
    f.class_hint = "permanent";
    f.code = "E42";
    d = decide(p, f, 1, first_attempt());
    CHECK(d.action == EG_ACT_DLQ && !strcmp(d.klass, "permanent") && !strcmp(d.code, "E42"),
          "an explicit class and code win (got %s %s %s)", eg_action_name(d.action), d.klass, d.code);

    f = http(418);
    f.message = "login password=hunter2&user=bob";
    for (int i = 0; i < 2; i++) { /* the second answer comes from the remembered one */
        d = decide(p, f, 1, first_attempt());
        CHECK(d.action == EG_ACT_DLQ && !strcmp(d.klass, "unknown") &&
                  !strcmp(d.message, "login password=[REDACTED]&user=bob"),
              "a secret in the message is redacted, call %d (got '%s')", i + 1, d.message);
    }

    c = first_attempt();
    c.breaker = "open";
    eg_failure co = {.kind = EG_FK_CIRCUIT_OPEN, .retry_after_ms = -1};
    d = decide(p, co, 1, c);
    CHECK(d.action == EG_ACT_HOLD && !strcmp(d.klass, "unavailable") && !strcmp(d.code, "circuit_open") &&
              d.delay_ms == 1000,
          "an open breaker: hold 1 s, unavailable, circuit_open (got %s %s %s %lld)", eg_action_name(d.action), d.klass,
          d.code, (long long)d.delay_ms);
    eg_policy_free(p);
}

static void shipped_payments_pipeline(void) {
    eg_policy *p = load("policies/payments.lua", 0);
    CHECK(p != NULL, "payments.lua loads");
    if (p) {
        eg_ctx c = first_attempt();
        c.retry_count = 1;
        c.rung = "30s";
        eg_decision d = decide(p, http(503), 1, c);
        CHECK(d.action == EG_ACT_LADDER && !strcmp(d.rung, "5m") && d.rung_index == 2 && d.delay_ms == 300000 &&
                  !strcmp(d.klass, "transient"),
              "503 from rung 1: ladder to rung 2 '5m', 300000 ms (got %s %s %d %lld)", eg_action_name(d.action), d.rung,
              d.rung_index, (long long)d.delay_ms);
        eg_failure f = http(429);
        f.retry_after_ms = 7200000;
        d = decide(p, f, 1, first_attempt());
        CHECK(d.action == EG_ACT_LADDER && !strcmp(d.rung, "30s") && d.rung_index == 1 && d.delay_ms == 3600000,
              "429 with a 2 h Retry-After: first rung, delay capped at 1 h (got %s %s %d %lld)",
              eg_action_name(d.action), d.rung, d.rung_index, (long long)d.delay_ms);
        c = first_attempt();
        c.retry_count = 3;
        d = decide(p, http(503), 1, c);
        CHECK(d.action == EG_ACT_DLQ && !strcmp(d.reason, "exhausted") && d.rung[0] == '\0' && d.rung_index == 0,
              "past the last rung: dlq, exhausted, no rung (got %s %s '%s' %d)", eg_action_name(d.action), d.reason,
              d.rung, d.rung_index);
        eg_policy_free(p);
    }

    p = load("policies/pipeline.lua", 0);
    CHECK(p != NULL, "pipeline.lua loads");
    if (p) {
        static char body[] = " {\"error\": {\"code\": \"schema_mismatch\", \"message\": \"field x: bad schema\"}}";
        eg_failure f = http(400);
        f.body = body;
        f.body_len = sizeof body - 1;
        eg_decision d = decide(p, f, 1, first_attempt());
        CHECK(d.action == EG_ACT_QUARANTINE && !strcmp(d.klass, "schema") && !strcmp(d.code, "schema_mismatch") &&
                  !strcmp(d.message, "field x: bad schema"),
              "a JSON error body: its code classifies and its message is kept (got %s %s %s '%s')",
              eg_action_name(d.action), d.klass, d.code, d.message);
        eg_policy_free(p);
    }
}

static void record_when_read(void) {
    const char *path = write_policy(
        "header.lua",
        "local policy = require \"errgate.policy\"\n"
        "return policy.define { name = \"hdr\", version = \"1\",\n"
        "  classify = { { header = { \"x-tenant\", \"vip\" }, class = \"vip\" }, { class = \"other\" } },\n"
        "  route = { vip = \"ignore\", other = \"dlq\", default = \"dlq\" } }\n");
    eg_policy *p = load(path, 0);
    CHECK(p != NULL, "a policy with a header rule loads");
    if (p) {
        eg_decision a = decide(p, http(500), 0, first_attempt());
        eg_decision b = decide(p, http(500), 1, first_attempt());
        CHECK(a.action == EG_ACT_IGNORE && !strcmp(a.klass, "vip") && b.action == EG_ACT_DLQ &&
                  !strcmp(b.klass, "other"),
              "the header rule sees the record's headers (got %s/%s, %s/%s)", eg_action_name(a.action), a.klass,
              eg_action_name(b.action), b.klass);
        eg_policy_free(p);
    }

    path = write_policy("ctx.lua",
                        "local policy = require \"errgate.policy\"\n"
                        "return policy.define { name = \"ctx\", version = \"1\",\n"
                        "  classify = { { class = \"c\" } },\n"
                        "  route = function(f, record, ctx)\n"
                        "    local ok = ctx.attempt == 3 and ctx.last_class == \"c\" and ctx.class_attempts == 2\n"
                        "      and ctx.streak == 3 and ctx.ordering == \"key\" and ctx.breaker == \"half_open\"\n"
                        "      and ctx.rung == \"30s\" and ctx.retry_count == 2 and ctx.retry_budget == false\n"
                        "      and ctx.now_ms == 1700000000000 and ctx.first_failure_ms == 1699999999000\n"
                        "      and ctx.last_delay_ms == 250 and ctx.class == \"c\" and ctx.code == \"http_502\"\n"
                        "      and record.topic == \"t\" and record.partition == 0 and record.key == \"k1\"\n"
                        "      and record.id == \"t/0/\" .. record.offset and record.headers[\"x-tenant\"] == \"vip\"\n"
                        "      and f.kind == \"http\" and f.status == 502 and f.latency_ms == 3\n"
                        "    return ok and \"ignore\" or \"dlq\"\n"
                        "  end }\n");
    p = load(path, 0);
    CHECK(p != NULL, "a policy with a route function loads");
    if (p) {
        eg_ctx c = {.attempt = 3,
                    .last_class = "c",
                    .class_attempts = 2,
                    .ordering = EG_ORDER_KEY,
                    .now_ms = 1700000000000,
                    .first_failure_ms = 1699999999000,
                    .last_delay_ms = 250,
                    .retry_count = 2,
                    .rung = "30s",
                    .breaker = "half_open",
                    .retry_budget = 0};
        eg_decision d = decide(p, http(502), 0, c);
        CHECK(d.action == EG_ACT_IGNORE && !d.fallback,
              "a route function sees every ctx field, the failure and the record (got %s: %s)",
              eg_action_name(d.action), d.message);
        eg_policy_free(p);
    }
}

static void bounded(void) {
    const char *path = write_policy(
        "loop.lua", "local policy = require \"errgate.policy\"\n"
                    "return policy.define { name = \"loop\", version = \"1\",\n"
                    "  classify = function(f)\n"
                    "    if f.status == 599 then while true do end end\n"
                    "    if f.status == 598 then local ok = pcall(function() while true do end end) end\n"
                    "    if f.status == 597 then error(\"boom\") end\n"
                    "    if f.status == 596 then local t = {} for i = 1, 1e9 do t[i] = (\"x\"):rep(64) .. i end end\n"
                    "    return \"c\"\n"
                    "  end,\n"
                    "  route = function(f) if f.status == 595 then return \"retry\" end return \"dlq\" end }\n");
    eg_policy *p = load(path, (size_t)8 << 20);
    CHECK(p != NULL, "a policy that can loop loads (8 MiB cap)");
    if (!p) return;
    for (int round = 1; round <= 2; round++) {
        int64_t t0 = eg_now_ms();
        eg_decision d = decide(p, http(599), 1, first_attempt());
        int64_t took = eg_now_ms() - t0;
        CHECK(d.fallback && d.action == EG_ACT_HOLD && strstr(d.message, "50 ms budget") && took < 1000,
              "round %d: a loop is stopped at the 50 ms budget and falls back (%lld ms, '%s')", round, (long long)took,
              d.message);
        d = decide(p, http(500), 1, first_attempt());
        CHECK(!d.fallback && d.action == EG_ACT_DLQ,
              "round %d: the next decision is normal again (got %s, fallback %d)", round, eg_action_name(d.action),
              d.fallback);
    }
    eg_decision d = decide(p, http(598), 1, first_attempt());
    CHECK(d.fallback && strstr(d.message, "budget"), "a loop inside the policy's own pcall still falls back ('%s')",
          d.message);
    d = decide(p, http(597), 1, first_attempt());
    CHECK(d.fallback && strstr(d.message, "boom"), "a raising classify falls back with its error ('%s')", d.message);
    d = decide(p, http(595), 1, first_attempt());
    CHECK(d.fallback && strstr(d.message, "invalid decision"), "an invalid route answer falls back ('%s')", d.message);
    d = decide(p, http(596), 1, first_attempt());
    CHECK(d.fallback && (strstr(d.message, "memory") || strstr(d.message, "budget")),
          "a table grown without bound is stopped (memory cap or budget) ('%s')", d.message);
    d = decide(p, http(500), 1, first_attempt());
    CHECK(!d.fallback && d.action == EG_ACT_DLQ, "and the VM still decides afterwards (got %s)",
          eg_action_name(d.action));
    eg_policy_free(p);
}

static void hostile_metatable(void) {
    /* 597: raise; 599: loop — on any missing field of any Policy object */
    for (int variant = 0; variant < 2; variant++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "local policy = require \"errgate.policy\"\n"
                 "local pol = policy.define { name = \"meta\", version = \"1\",\n"
                 "  classify = { { class = \"c\" } }, route = { default = \"dlq\" } }\n"
                 "local Policy = pol.__index\n"
                 "local methods = {}\n"
                 "for k, v in pairs(Policy) do methods[k] = v end\n"
                 "pol.name, pol.version, pol.id = nil, nil, nil\n"
                 "Policy.__index = function(t, k)\n"
                 "  if methods[k] ~= nil then return methods[k] end\n"
                 "  %s\n"
                 "end\n"
                 "return pol\n",
                 variant == 0 ? "error(\"trap: \" .. tostring(k))" : "while true do end");
        const char *path = write_policy("meta.lua", text);
        int64_t t0 = eg_now_ms();
        char err[512] = "";
        eg_policy *p = eg_policy_load_capped(path, 50, 0, err, sizeof err);
        int64_t took = eg_now_ms() - t0;
        CHECK(p != NULL || took < 12000,
              "%s: a __index trap on the Policy metatable neither kills nor hangs the load (%lld ms, %s)",
              variant == 0 ? "raise" : "loop", (long long)took, p ? eg_policy_id(p) : err);
        if (!p) continue;
        CHECK(strncmp(eg_policy_id(p), "unnamed@0+", 10) == 0, "%s: the id is read raw (no metamethod ran): %s",
              variant == 0 ? "raise" : "loop", eg_policy_id(p));
        eg_decision d = decide(p, http(500), 0, first_attempt());
        CHECK(d.action == EG_ACT_DLQ || d.fallback, "%s: it still decides (%s, fallback %d: %s)",
              variant == 0 ? "raise" : "loop", eg_action_name(d.action), d.fallback, d.message);
        eg_policy_free(p);
    }
}

static void hostile_memory(void) {
    /* a policy that reads the record, under a 4 MiB cap: record [2]'s table
     * (4.8 MB of headers) does not fit, and building it fails inside the C
     * side's own pushes, before any Lua runs */
    const char *path = write_policy(
        "hoard.lua",
        "local policy = require \"errgate.policy\"\n"
        "return policy.define { name = \"big\", version = \"1\",\n"
        "  classify = { { header = { \"x-tenant\", \"vip\" }, class = \"vip\" }, { class = \"other\" } },\n"
        "  route = { vip = \"dlq\", other = \"dlq\", default = \"dlq\" } }\n");
    eg_policy *p = load(path, (size_t)4 << 20);
    CHECK(p != NULL, "a policy that reads the record loads under a 4 MiB cap");
    if (!p) return;
    int fell = 0;
    eg_decision d;
    for (int i = 0; i < 3; i++) {
        d = decide(p, http(500), 2, first_attempt());
        fell += d.fallback && d.action == EG_ACT_HOLD && strstr(d.message, "memory") != NULL;
    }
    CHECK(fell == 3, "a record whose table exceeds the cap falls back to hold, every time (%d/3: '%s')", fell,
          d.message);
    d = decide(p, http(500), 0, first_attempt());
    CHECK(!d.fallback && d.action == EG_ACT_DLQ && !strcmp(d.klass, "vip"),
          "and the next record is decided normally (%s/%s, fallback %d)", eg_action_name(d.action), d.klass,
          d.fallback);
    eg_policy_free(p);
}

/* The reason table: every core reason's wire name parses back to it, a
 * policy's own text is EG_RSN_OTHER, no text is EG_RSN_NONE, and setting a
 * reason writes its wire text; the wire texts are the ones lanes carry. */
static void reason_names(void) {
    int round = 1;
    for (int r = EG_RSN_OTHER + 1; r < EG_RSN__N; r++) {
        const char *n = eg_reason_name((eg_reason)r);
        if (!n || !*n || eg_reason_parse(n) != (eg_reason)r) round = 0;
        for (int k = EG_RSN_OTHER + 1; k < r; k++)
            if (n && !strcmp(n, eg_reason_name((eg_reason)k))) round = 0; /* one name per reason */
    }
    CHECK(round, "each core reason has one wire name, which parses back to it");
    CHECK(eg_reason_parse("permanent") == EG_RSN_OTHER && eg_reason_parse("Exhausted") == EG_RSN_OTHER &&
              eg_reason_parse("exhausted ") == EG_RSN_OTHER,
          "a policy's own reason (and a near miss of a core one) is EG_RSN_OTHER");
    CHECK(eg_reason_parse("") == EG_RSN_NONE && eg_reason_parse(NULL) == EG_RSN_NONE, "no reason is EG_RSN_NONE");
    CHECK(!strcmp(eg_reason_name(EG_RSN_EXHAUSTED), "exhausted") &&
              !strcmp(eg_reason_name(EG_RSN_RETRY_BUDGET), "retry_budget") &&
              !strcmp(eg_reason_name(EG_RSN_DLQ_GUARD), "dlq_guard") &&
              !strcmp(eg_reason_name(EG_RSN_REPLAY_REFUSED), "replay_refused"),
          "the wire names are unchanged");
    eg_decision d = {.why = EG_RSN_OTHER};
    eg_strlcpy(d.reason, "mine", sizeof d.reason);
    eg_decision_set_reason(&d, EG_RSN_OTHER);
    CHECK(!strcmp(d.reason, "mine") && d.why == EG_RSN_OTHER, "setting EG_RSN_OTHER keeps the policy's text");
    eg_decision_set_reason(&d, EG_RSN_DLQ_GUARD);
    CHECK(!strcmp(d.reason, "dlq_guard") && d.why == EG_RSN_DLQ_GUARD, "setting a core reason writes its text");
}

/* A decider's action and reason are read back by the VM's string, not by
 * comparing text: each core reason a route names comes back as its value,
 * and an action and a reason built at run time (not literals of the file)
 * are read as well as literal ones. */
static void decided_names(void) {
    char text[2048], list[1024] = "";
    size_t o = 0;
    for (int r = EG_RSN_OTHER + 1; r < EG_RSN__N; r++)
        o += (size_t)snprintf(list + o, sizeof list - o, "\"%s\", ", eg_reason_name((eg_reason)r));
    snprintf(text, sizeof text,
             "local policy = require \"errgate.policy\"\n"
             "local reasons = { %s}\n"
             "return policy.define { name = \"names\", version = \"1\",\n"
             "  classify = function(f) return \"c\" end,\n"
             "  route = function(f)\n"
             "    if f.status == 600 then return { action = table.concat({ \"dl\", \"q\" }),\n"
             "                                    reason = table.concat({ \"exh\", \"austed\" }) } end\n"
             "    if f.status == 599 then return { action = \"dlq\", reason = \"mine\" } end\n"
             "    return { action = \"dlq\", reason = reasons[f.status - 600] } end }\n",
             list);
    eg_policy *p = load(write_policy("names.lua", text), 0);
    CHECK(p != NULL, "a policy naming every core reason loads");
    if (!p) return;
    int all = 1;
    for (int r = EG_RSN_OTHER + 1; r < EG_RSN__N; r++) {
        eg_decision d = decide(p, http(600 + r - EG_RSN_OTHER), 1, first_attempt());
        if (d.fallback || d.action != EG_ACT_DLQ || d.why != (eg_reason)r ||
            strcmp(d.reason, eg_reason_name((eg_reason)r))) {
            all = 0;
            printf("# reason %s: got action %s, why %d, reason '%s', fallback %d ('%s')\n",
                   eg_reason_name((eg_reason)r), eg_action_name(d.action), (int)d.why, d.reason, d.fallback, d.message);
        }
    }
    CHECK(all, "each core reason a route answers is read as its value");
    eg_decision d = decide(p, http(600), 1, first_attempt());
    CHECK(!d.fallback && d.action == EG_ACT_DLQ && d.why == EG_RSN_EXHAUSTED,
          "an action and a reason made at run time are read (got %s, why %d, fallback %d '%s')",
          eg_action_name(d.action), (int)d.why, d.fallback, d.message);
    d = decide(p, http(599), 1, first_attempt());
    CHECK(!d.fallback && d.why == EG_RSN_OTHER && !strcmp(d.reason, "mine"),
          "a reason of the policy's own is EG_RSN_OTHER with its text (got why %d '%s')", (int)d.why, d.reason);
    eg_policy_free(p);
}

int main(void) {
    reason_names();
    eg_strlcpy(g_dir, "/tmp/eg-policy-decide.XXXXXX", sizeof g_dir);
    if (!mkdtemp(g_dir)) return 1;
    rd_kafka_t *prod = NULL, *cons = NULL;
    rd_kafka_message_t *m[3] = {NULL, NULL, NULL};
    int ok = real_messages(&prod, &cons, m) == 0;
    rd_kafka_headers_t *bh = NULL;
    ok = ok && rd_kafka_message_headers(m[2], &bh) == RD_KAFKA_RESP_ERR_NO_ERROR &&
         rd_kafka_header_cnt(bh) == BIG_HEADERS;
    CHECK(ok, "three records come back from the mock cluster, the third with its %d headers", BIG_HEADERS);
    if (ok) {
        for (int i = 0; i < 3; i++) {
            g_rec[i] = (eg_record){.msg = m[i], .topic = "t", .partition = 0, .offset = m[i]->offset, .attempt = 1};
        }
        shipped_default();
        shipped_payments_pipeline();
        record_when_read();
        bounded();
        hostile_metatable();
        hostile_memory();
        decided_names();
    }
    for (int i = 0; i < 3; i++)
        if (m[i]) rd_kafka_message_destroy(m[i]);
    if (cons) {
        rd_kafka_consumer_close(cons);
        rd_kafka_destroy(cons);
    }
    if (prod) rd_kafka_destroy(prod);
    const char *names[] = {"header.lua", "ctx.lua", "loop.lua", "meta.lua", "hoard.lua", "names.lua"};
    char path[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
    return TAP_DONE();
}
