/* fuzz_audit.c — the audit topic's record reader (override.c:
 * eg_override_from_audit). The audit topic is shared by every gateway of a
 * cluster, and anything with write access to it can put any bytes there:
 * a damaged or hostile value must be refused with a reason, never crash or
 * half-apply. Input: one record value. Contract checked: a refusal names a
 * reason; an accepted record is a well-formed override (a match kind, a
 * name, NUL-terminated strings, an action or a delay as its kind needs,
 * an expiry after it was set) that the writer (eg_override_audit_json)
 * encodes back into a record the reader accepts as the same override. */
#include "fuzz.h"
#include "override.h"

#include <event2/buffer.h>
#include <string.h>

/* 1 when the fixed-size string field s (size bytes) is NUL-terminated. */
static int terminated(const char *s, size_t size) { return memchr(s, '\0', size) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eg_override o, back;
    char group[256], group2[256], err[256] = "";
    int64_t cleared = -7, cleared2 = -7;
    if (eg_override_from_audit((const char *)data, size, &o, group, sizeof group, &cleared, err, sizeof err) != 0) {
        FZ_CHECK(err[0] != '\0', "a refused record without a reason");
        return 0;
    }
    FZ_CHECK(terminated(o.name, sizeof o.name) && terminated(o.value, sizeof o.value) &&
                 terminated(o.reason, sizeof o.reason) && terminated(o.by, sizeof o.by) &&
                 terminated(group, sizeof group),
             "an unterminated string field");
    FZ_CHECK(o.name[0] != '\0', "an override without a name");
    FZ_CHECK(o.match >= EG_OV_CLASS && o.match <= EG_OV_PAUSE, "match kind %d", (int)o.match);
    /* 0 is a delay: the rung's records are due at once (an incident's "drain it now") */
    FZ_CHECK(o.match != EG_OV_RUNG || o.delay_ms >= 0, "a rung override with a negative delay");
    FZ_CHECK(o.match == EG_OV_RUNG || o.match == EG_OV_PAUSE || o.action != 0, "a matcher without an action");
    FZ_CHECK(cleared >= 0, "cleared_at %lld", (long long)cleared);
    struct evbuffer *b = evbuffer_new();
    eg_override_audit_json(&o, group, cleared, b);
    size_t n = evbuffer_get_length(b);
    char *json = (char *)evbuffer_pullup(b, -1);
    int rc = eg_override_from_audit(json, n, &back, group2, sizeof group2, &cleared2, err, sizeof err);
    FZ_CHECK(rc == 0, "its own encoding is refused: %s: %.*s", err, (int)n, json);
    FZ_CHECK(!strcmp(o.name, back.name) && o.match == back.match && !strcmp(o.value, back.value) &&
                 o.partition == back.partition && o.action == back.action && o.delay_ms == back.delay_ms &&
                 !strcmp(group, group2) && cleared == cleared2,
             "round trip changed it: %.*s", (int)n, json);
    evbuffer_free(b);
    return 0;
}
