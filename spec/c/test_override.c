/* test_override.c — operator overrides: the form parser (every field, its
 * refusals naming the field: unknown field or action, missing TTL or
 * reason, TTL above the maximum, two matchers), replacing by name, the
 * first match winning, topic:partition matching, expiry at its time, and
 * clearing. */
#include "override.h"
#include "record.h"
#include "tap.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>

static char err[256];
static eg_override o;
#define MAXTTL (24LL * 3600 * 1000)

static int parse(const char *body) {
    err[0] = 0;
    return eg_override_parse(body, strlen(body), 1000000, MAXTTL, &o, err, sizeof err);
}

static int expired_n;
static void on_expired(void *arg, const eg_override *x) {
    expired_n++;
    strcat((char *)arg, x->name);
}

int main(void) {
    CHECK(parse("name=slow5m&class=transient&action=hold&ttl=1h&reason=provider+down&by=ana%40sre") == 0,
          "a full override parses (%s)", err);
    CHECK(o.match == EG_OV_CLASS && !strcmp(o.value, "transient") && o.action == EG_ACT_HOLD &&
              o.expires_at_ms == 1000000 + 3600000 && !strcmp(o.reason, "provider down") && !strcmp(o.by, "ana@sre"),
          "its fields: class, action, expiry now+ttl, decoded reason and author");
    CHECK(parse("name=t&topic=payments:3&action=dlq&ttl=90s&reason=r") == 0 && o.match == EG_OV_TOPIC &&
              !strcmp(o.value, "payments") && o.partition == 3 && !strcmp(o.by, "unknown"),
          "topic:partition, and an unnamed author");
    CHECK(parse("name=t&topic=payments&action=ignore&ttl=1m&reason=r") == 0 && o.partition == -1,
          "a topic without partition matches all");
    struct {
        const char *body, *want;
    } bad[] = {
        {"class=x&action=hold&ttl=1h&reason=r", "name: required"},
        {"name=a b&class=x&action=hold&ttl=1h&reason=r", "name: required"},
        {"name=a&action=hold&ttl=1h&reason=r", "exactly one of class, code, topic, rung, pause (got 0)"},
        {"name=a&class=x&code=y&action=hold&ttl=1h&reason=r", "exactly one of class, code, topic, rung, pause (got 2)"},
        {"name=a&class=x&action=explode&ttl=1h&reason=r", "action: unknown action 'explode'"},
        {"name=a&class=x&action=ladder&ttl=1h&reason=r", "action: unknown action 'ladder'"},
        {"name=a&class=x&ttl=1h&reason=r", "action: required"},
        {"name=a&class=x&action=hold&reason=r", "ttl: required"},
        {"name=a&class=x&action=hold&ttl=soon&reason=r", "ttl: required, a duration such as 30m or 1h, got soon"},
        {"name=a&class=x&action=hold&ttl=25h&reason=r", "ttl: 25h is above the maximum (86400 s)"},
        {"name=a&class=x&action=hold&ttl=1h", "reason: required"},
        {"name=a&class=x&action=hold&ttl=1h&reason=", "reason: required"},
        {"name=a&class=x&action=hold&ttl=1h&reason=r&color=red", "unknown field 'color'"},
        {"name=a&class=x&class=y&action=hold&ttl=1h&reason=r", "class given twice"},
        {"name=a&class=%zz&action=hold&ttl=1h&reason=r", "class: malformed"},
        {"name=a&class=%0a&action=hold&ttl=1h&reason=r", "class: malformed"},
        {"name=a&topic=:3&action=hold&ttl=1h&reason=r", "topic: expected TOPIC or TOPIC:PARTITION"},
        {"name=a&topic=t:x&action=hold&ttl=1h&reason=r", "topic: expected TOPIC or TOPIC:PARTITION"},
        {"name=a&rung=5m&ttl=1h&reason=r", "delay: required with rung"},
        {"name=a&rung=5m&delay=soon&ttl=1h&reason=r", "delay: required with rung, a duration such as 15m, got soon"},
        {"name=a&rung=5m&delay=15m&action=hold&ttl=1h&reason=r", "action: a rung override takes a delay"},
        {"name=a&class=x&action=hold&delay=15m&ttl=1h&reason=r", "delay: only a rung override"},
        {"name=a&pause=t:1&action=hold&ttl=1h&reason=r", "action: a pause override takes no action"},
        {"name=a&pause=t:z&ttl=1h&reason=r", "pause: expected TOPIC or TOPIC:PARTITION"},
        {"name=a&rung=5m&pause=t&delay=1s&ttl=1h&reason=r", "exactly one of class, code, topic, rung, pause (got 2)"},
        {"name=a&rung=5m&delay=15m&reason=r", "ttl: required"},
        {"name=a&pause=t&ttl=1h", "reason: required"},
        {"name=a&class=x&action=replay&ttl=1h&reason=r", "action: unknown action 'replay'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(bad[i].body) == -1 && strstr(err, bad[i].want), "refused: %s -> %s", bad[i].body, err);

    CHECK(parse("name=slow&rung=5m&delay=15m&ttl=1h&reason=provider+slow") == 0 && o.match == EG_OV_RUNG &&
              !strcmp(o.value, "5m") && o.delay_ms == 900000,
          "a rung override: the rung and its new delay (%s)", err);
    CHECK(parse("name=p&pause=payments:2&ttl=1h&reason=r") == 0 && o.match == EG_OV_PAUSE &&
              !strcmp(o.value, "payments") && o.partition == 2,
          "a pause override: topic and partition (%s)", err);

    /* the audit record: written and read back, field for field */
    const char *specs[] = {"name=a1&class=trans+ient&action=hold&ttl=1h&reason=r%C3%A9+%22q%22&by=ana",
                           "name=a2&topic=pay:3&action=dlq&ttl=90s&reason=r",
                           "name=a3&rung=5m&delay=15m&ttl=1h&reason=r", "name=a4&pause=p%26q:1&ttl=1h&reason=r",
                           "name=a5&code=http_503&action=ignore&ttl=1h&reason=r"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        CHECK(parse(specs[i]) == 0, "parses: %s (%s)", specs[i], err);
        eg_override in = o, back;
        struct evbuffer *b = evbuffer_new();
        eg_override_audit_json(&in, "grp", i == 1 ? 2000000 : 0, b);
        size_t n = evbuffer_get_length(b);
        char *json = (char *)evbuffer_pullup(b, -1);
        char group[64];
        int64_t cleared = -1;
        int rc = eg_override_from_audit(json, n, &back, group, sizeof group, &cleared, err, sizeof err);
        CHECK(rc == 0 && !strcmp(group, "grp") && !strcmp(back.name, in.name) && back.match == in.match &&
                  !strcmp(back.value, in.value) && back.partition == in.partition && back.action == in.action &&
                  back.delay_ms == in.delay_ms && !strcmp(back.reason, in.reason) && !strcmp(back.by, in.by) &&
                  back.set_at_ms == in.set_at_ms && back.expires_at_ms == in.expires_at_ms &&
                  cleared == (i == 1 ? 2000000 : 0),
              "audit record round trip: %.*s (%s)", (int)n, json, rc ? err : "ok");
        evbuffer_free(b);
    }
    struct {
        const char *json, *want;
    } badj[] = {
        {"[]", "no string \"group\""},
        {"{\"group\":\"g\",\"name\":\"n\",\"spec\":\"class=x\",\"reason\":\"r\",\"by\":\"b\","
         "\"at\":\"2026-01-01T00:00:00Z\",\"expires_at\":\"2026-01-01T01:00:00Z\"}",
         "action: required"},
        {"{\"group\":\"g\",\"name\":\"n\",\"spec\":\"class=x&action=hold&ttl=1h\",\"reason\":\"r\",\"by\":\"b\","
         "\"at\":\"2026-01-01T00:00:00Z\",\"expires_at\":\"2026-01-01T01:00:00Z\"}",
         "spec: holds more than the matcher"},
        {"{\"group\":\"g\",\"name\":\"n\",\"spec\":\"class=x&action=hold\",\"reason\":\"r\",\"by\":\"b\","
         "\"at\":\"yesterday\",\"expires_at\":\"2026-01-01T01:00:00Z\"}",
         "not RFC 3339"},
        {"{\"group\":\"g\",\"name\":\"a b\",\"spec\":\"class=x&action=hold\",\"reason\":\"r\",\"by\":\"b\","
         "\"at\":\"2026-01-01T00:00:00Z\",\"expires_at\":\"2026-01-01T01:00:00Z\"}",
         "name: not a name"},
    };
    for (size_t i = 0; i < sizeof badj / sizeof badj[0]; i++) {
        char group[64];
        int64_t cleared;
        eg_override back;
        err[0] = 0;
        CHECK(eg_override_from_audit(badj[i].json, strlen(badj[i].json), &back, group, sizeof group, &cleared, err,
                                     sizeof err) == -1 &&
                  strstr(err, badj[i].want),
              "a bad audit record is refused: %s", err);
    }

    eg_overrides t = {0};
    parse("name=a&class=transient&action=hold&ttl=10s&reason=r");
    CHECK(eg_overrides_set(&t, &o, NULL) == 0, "added");
    parse("name=b&code=http_503&action=dlq&ttl=20s&reason=r");
    eg_overrides_set(&t, &o, NULL);
    parse("name=c&topic=pay:1&action=ignore&ttl=30s&reason=r");
    eg_overrides_set(&t, &o, NULL);
    const eg_override *m = eg_overrides_match(&t, "pay", 1, "transient", "http_503", 1000001);
    CHECK(m && !strcmp(m->name, "a"), "the first set that matches wins (a)");
    m = eg_overrides_match(&t, "pay", 1, "other", "http_503", 1000001);
    CHECK(m && !strcmp(m->name, "b"), "by code (b)");
    m = eg_overrides_match(&t, "pay", 1, "other", "x", 1000001);
    CHECK(m && !strcmp(m->name, "c"), "by topic and partition (c)");
    CHECK(!eg_overrides_match(&t, "pay", 2, "other", "x", 1000001), "another partition: none");
    parse("name=a&class=semantic&action=quarantine&ttl=10s&reason=again");
    CHECK(eg_overrides_set(&t, &o, NULL) == 1 && t.n == 3 && !strcmp(t.v[0].value, "semantic"),
          "setting a name again replaces it in place");
    m = eg_overrides_match(&t, "pay", 1, "transient", "x", 1000001);
    CHECK(m && !strcmp(m->name, "c"), "after the replace, transient on pay[1] falls to c");
    CHECK(!eg_overrides_match(&t, "q", 0, "semantic", "x", 1000000 + 10000), "not in force at its expiry");
    parse("name=r&rung=5m&delay=15m&ttl=40s&reason=r");
    eg_overrides_set(&t, &o, NULL);
    parse("name=p&pause=pay:1&ttl=40s&reason=r");
    eg_overrides_set(&t, &o, NULL);
    m = eg_overrides_rung(&t, "5m", 1000001);
    CHECK(m && m->delay_ms == 900000 && !eg_overrides_rung(&t, "30s", 1000001), "the rung override of 5m, none of 30s");
    CHECK(eg_overrides_paused(&t, "pay", 1, 1000001) && !eg_overrides_paused(&t, "pay", 0, 1000001) &&
              !eg_overrides_paused(&t, "pay", 1, 1000000 + 40000),
          "pay[1] is paused, pay[0] is not, nor pay[1] at the expiry");
    CHECK(!eg_overrides_match(&t, "pay", 0, "5m", "5m", 1000001), "rung and pause overrides never match a decision");
    eg_overrides_clear(&t, "r", NULL);
    eg_overrides_clear(&t, "p", NULL);
    char names[64] = "";
    expired_n = 0;
    CHECK(eg_overrides_expire(&t, 1000000 + 20000, on_expired, names) == 2 && !strcmp(names, "ab") && t.n == 1,
          "expiry removes a and b at 20 s, told in order (%s)", names);
    eg_override got;
    CHECK(eg_overrides_clear(&t, "c", &got) == 0 && !strcmp(got.name, "c") && t.n == 0, "clear removes c");
    CHECK(eg_overrides_clear(&t, "c", NULL) == -1, "clearing again: none");
    for (int i = 0; i < EG_OVERRIDE_MAX; i++) {
        snprintf(o.name, sizeof o.name, "n%d", i);
        eg_overrides_set(&t, &o, NULL);
    }
    snprintf(o.name, sizeof o.name, "one-more");
    eg_override gone;
    CHECK(eg_overrides_set(&t, &o, &gone) == 2 && t.n == EG_OVERRIDE_MAX && !strcmp(gone.name, "n0"),
          "a full table of unsigned overrides evicts the oldest for a new one (%s)", gone.name);
    for (int i = 0; i < t.n; i++) t.v[i].trusted = 1;
    snprintf(o.name, sizeof o.name, "two-more");
    CHECK(eg_overrides_set(&t, &o, NULL) == -1 && eg_overrides_trusted(&t) == EG_OVERRIDE_MAX,
          "a table full of signed overrides is bounded (%d)", EG_OVERRIDE_MAX);
    t.v[7].trusted = 0;
    CHECK(eg_overrides_set(&t, &o, &gone) == 2 && !strcmp(gone.name, "n8"), "only an unsigned one is evicted (%s)",
          gone.name);
    eg_overrides_free(&t);

    /* read-side checks: what a writer may not set is refused on read */
    const char *why = "";
    parse("name=ok&class=x&action=hold&ttl=1h&reason=r");
    CHECK(eg_override_check(&o, 0, 1000000, MAXTTL, &why, err, sizeof err) == 0, "a good override passes (%s)", err);
    o.expires_at_ms = 253402300799000LL; /* 9999-12-31 */
    CHECK(eg_override_check(&o, 0, 1000000, MAXTTL, &why, err, sizeof err) == -1 && !strcmp(why, "ttl_cap"),
          "an expiry in the year 9999 is above the TTL cap (%s)", err);
    o.expires_at_ms = o.set_at_ms;
    CHECK(eg_override_check(&o, 0, 1000000, MAXTTL, &why, err, sizeof err) == -1 && !strcmp(why, "ttl_cap"),
          "an expiry not after its set time is refused");
    parse("name=ok&class=x&action=hold&ttl=1h&reason=r");
    CHECK(eg_override_check(&o, 0, 1000000 - EG_OVERRIDE_SKEW_MS - 1, MAXTTL, &why, err, sizeof err) == -1 &&
              !strcmp(why, "future"),
          "an `at` more than the skew ahead of the reader's clock is refused (%s)", err);
    CHECK(eg_override_check(&o, 1000000 + EG_OVERRIDE_SKEW_MS + 1, 1000000, MAXTTL, &why, err, sizeof err) == -1 &&
              !strcmp(why, "future"),
          "so is a cleared_at that far ahead");
    parse("name=ok&rung=5m&delay=15m&ttl=1h&reason=r");
    o.delay_ms = 100000000000000LL; /* ~3 million years */
    CHECK(eg_override_check(&o, 0, 1000000, MAXTTL, &why, err, sizeof err) == -1 && !strcmp(why, "delay_cap"),
          "a rung delay above the cap is refused (%s)", err);
    CHECK(parse("name=a&rung=5m&delay=25h&ttl=1h&reason=r") == -1 && strstr(err, "delay: 25h is above the maximum"),
          "and refused on write too (%s)", err);
    CHECK(eg_override_add_ms(INT64_MAX - 5, 100000000000000LL) == INT64_MAX && eg_override_add_ms(5, 7) == 12 &&
              eg_override_add_ms(INT64_MIN + 5, -100) == INT64_MIN,
          "time + delay saturates, never wraps");
    return TAP_DONE();
}
