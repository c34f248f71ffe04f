/* fuzz_http_error.c — what a target's error response says, as the policy
 * reads it: the Error-Code and Error-Class headers, the message and the
 * body, whose JSON `{"error": {"class", "code", "message"}}` or
 * `{"error": "text"}` errgate.failure mines with errgate.json (lua/errgate/
 * failure.lua), all through the C decision path (eg_policy_decide, the
 * entry point the gateway uses). The HTTP client's own reading of the
 * response is in target_http.c and is not covered here.
 *
 * Input: byte 0 the failure kind, bytes 1-2 the HTTP status (big-endian),
 * byte 3 the policy (even: policies/default.lua, odd: policies/payments.lua),
 * then up to four NUL-separated fields: code, class hint, message, body
 * (a missing field is absent). The decision must name a real action and
 * hold NUL-terminated strings. */
#include "fuzz.h"
#include "luavm.h"
#include "policy.h"
#include "record.h"

#include <string.h>

static eg_policy *g_pol[2];
static eg_record g_rec;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    static const char *const files[2] = {"default.lua", "payments.lua"};
    for (int i = 0; i < 2; i++) {
        char path[4200], err[512];
        snprintf(path, sizeof path, "%s/../policies/%s", eg_lua_dir(), files[i]);
        g_pol[i] = eg_policy_load(path, 50, err, sizeof err);
        FZ_CHECK(g_pol[i] != NULL, "%s", err);
    }
    const rd_kafka_message_t *m = fz_message();
    g_rec.msg = (rd_kafka_message_t *)m;
    g_rec.topic = "orders";
    g_rec.partition = m->partition;
    g_rec.offset = m->offset;
    return 0;
}

static int terminated(const char *s, size_t n) { return memchr(s, 0, n) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_pol[0]) LLVMFuzzerInitialize(NULL, NULL);
    if (size < 4) return 0;
    eg_failure f = {.kind = (eg_failure_kind)(data[0] % 5),
                    .status = data[1] << 8 | data[2],
                    .retry_after_ms = -1,
                    .latency_ms = 7};
    eg_policy *p = g_pol[data[3] & 1];
    char *fields[4] = {0};
    size_t lens[4] = {0};
    const uint8_t *q = data + 4, *end = data + size;
    for (int i = 0; i < 4 && q <= end; i++) {
        const uint8_t *z = i < 3 ? memchr(q, 0, (size_t)(end - q)) : NULL;
        size_t n = z ? (size_t)(z - q) : (size_t)(end - q);
        fields[i] = malloc(n + 1);
        memcpy(fields[i], q, n);
        fields[i][n] = '\0';
        lens[i] = n;
        if (!z) break;
        q = z + 1;
    }
    f.code = fields[0];
    f.class_hint = fields[1];
    f.message = fields[2];
    f.body = fields[3];
    f.body_len = lens[3];
    eg_ctx ctx = {.attempt = 1,
                  .ordering = EG_ORDER_PARTITION,
                  .now_ms = 1700000000000,
                  .first_failure_ms = 1700000000000,
                  .breaker = "closed",
                  .retry_budget = 1};
    eg_decision d;
    memset(&d, 'X', sizeof d);
    eg_policy_decide(p, &f, &g_rec, &ctx, &d);
    FZ_CHECK((unsigned)d.action < EG_ACT__N, "action %d", (int)d.action);
    FZ_CHECK(terminated(d.klass, sizeof d.klass) && terminated(d.code, sizeof d.code) &&
                 terminated(d.reason, sizeof d.reason) && terminated(d.message, sizeof d.message) &&
                 terminated(d.rung, sizeof d.rung),
             "a decision string is not terminated");
    FZ_CHECK(d.delay_ms >= 0, "delay %lld", (long long)d.delay_ms);
    for (int i = 0; i < 4; i++) free(fields[i]);
    return 0;
}
