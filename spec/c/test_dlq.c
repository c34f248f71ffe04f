/* test_dlq.c — the pure helpers of the DLQ commands (parse.c, json.c,
 * replay_filter.c, strmap.c, dlq_state.c, text.c): time, duration and count parsing,
 * the state topic's JSON (written, read back, hostile input), the replay
 * filters, the replayed record's headers, the string map against a
 * brute-force model, the lifecycle rule (latest status per id, not older
 * than the record), printable escaping and aligned tables. */
#include "dlq.h"
#include "headers.h"
#include "json.h"
#include "parse.h"
#include "tap.h"
#include "util.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* The value of the last header called name in h, as a string ("" absent). */
static const char *hget(rd_kafka_headers_t *h, const char *name) {
    static char buf[256];
    const void *v;
    size_t n;
    if (rd_kafka_header_get_last(h, name, &v, &n) != 0) return "";
    memcpy(buf, v, n < sizeof buf - 1 ? n : sizeof buf - 1);
    buf[n < sizeof buf - 1 ? n : sizeof buf - 1] = '\0';
    return buf;
}

static size_t hcount(rd_kafka_headers_t *h, const char *name) {
    const char *nm;
    const void *v;
    size_t n, c = 0;
    for (size_t i = 0; rd_kafka_header_get_all(h, i, &nm, &v, &n) == 0; i++) c += strcmp(nm, name) == 0;
    return c;
}

int main(void) {
    int64_t ms;
    /* ---- time ---- */
    CHECK(eg_parse_time_ms("2026-01-02T03:04:05Z", &ms) == 0 && ms == 1767323045000LL, "RFC 3339 UTC");
    CHECK(eg_parse_time_ms("2026-01-02T03:04:05.678Z", &ms) == 0 && ms == 1767323045678LL, "fractional seconds");
    CHECK(eg_parse_time_ms("2026-01-02T03:04:05.6789123z", &ms) == 0 && ms == 1767323045678LL,
          "more than ms digits are cut, lower-case z");
    CHECK(eg_parse_time_ms("2026-01-02T05:04:05+02:00", &ms) == 0 && ms == 1767323045000LL, "numeric offset");
    CHECK(eg_parse_time_ms("2026-01-02T00:04:05-03:00", &ms) == 0 && ms == 1767323045000LL, "negative offset");
    CHECK(eg_parse_time_ms("1767323045000", &ms) == 0 && ms == 1767323045000LL, "ms since the epoch");
    const char *bad_times[] = {"",
                               "yesterday",
                               "2026-01-02",
                               "2026-01-02T03:04:05",
                               "2026-13-02T03:04:05Z",
                               "2026-01-02T03:04:05Zx",
                               "2026-01-02T03:04:05.Z",
                               "2026-1-2T03:04:05Z",
                               "-5",
                               "12345678901234567890",
                               NULL};
    int bad = 0;
    for (const char **p = bad_times; *p; p++) bad += eg_parse_time_ms(*p, &ms) == 0;
    CHECK(bad == 0, "malformed times are refused (%d accepted)", bad);

    CHECK(eg_parse_duration_ms("90s", &ms) == 0 && ms == 90000 && eg_parse_duration_ms("250ms", &ms) == 0 &&
              ms == 250 && eg_parse_duration_ms("2d", &ms) == 0 && ms == 172800000 &&
              eg_parse_duration_ms("15", &ms) == 0 && ms == 15,
          "durations: units, a bare number is ms");
    const char *bad_durations[] = {"", "-1", "+1", "5x", "1.5s", "s", " 5s", "5 s", "99999999999999999999d", NULL};
    bad = 0;
    for (const char **p = bad_durations; *p; p++) bad += eg_parse_duration_ms(*p, &ms) == 0;
    CHECK(bad == 0, "malformed durations are refused (%d accepted)", bad);
    long n;
    CHECK(eg_parse_count("0", &n) == 0 && n == 0 && eg_parse_count("42", &n) == 0 && n == 42, "counts");
    CHECK(eg_parse_count("-1", &n) < 0 && eg_parse_count("1x", &n) < 0 && eg_parse_count("", &n) < 0 &&
              eg_parse_count(" 1", &n) < 0 && eg_parse_count("99999999999999999999", &n) < 0,
          "non-counts are refused");
    CHECK(eg_replays_parse(NULL, 0) == 0 && eg_replays_parse("3", 1) == 3 && eg_replays_parse("3x", 2) == -1 &&
              eg_replays_parse("", 0) == -1,
          "errgate.replays: absent 0, a count, else -1");

    /* ---- JSON ---- */
    char json[512], out[128];
    int len =
        eg_dlq_state_json(EG_DLQ_ACCEPTED_LOSS, "said \"ok\"\n\\", 1767323045678LL, "ann@h", -1, json, sizeof json);
    CHECK(len > 0 && strcmp(json, "{\"status\":\"accepted-loss\",\"reason\":\"said \\\"ok\\\"\\n\\\\\","
                                  "\"at\":\"2026-01-02T03:04:05.678Z\",\"by\":\"ann@h\"}") == 0,
          "state JSON escapes the reason: %s", json);
    CHECK(eg_json_get_str(json, (size_t)len, "reason", out, sizeof out) == 0 && strcmp(out, "said \"ok\"\n\\") == 0,
          "and reads it back unescaped");
    len =
        eg_dlq_state_json(EG_DLQ_CLOSED, "r\xc3\xa9gl\xc3\xa9 \xe2\x9c\x93", 0, "j\xc3\xb6rg@h", -1, json, sizeof json);
    CHECK(len > 0 && strstr(json, "\"reason\":\"r\xc3\xa9gl\xc3\xa9 \xe2\x9c\x93\"") &&
              strstr(json, "\"by\":\"j\xc3\xb6rg@h\"") &&
              eg_json_get_str(json, (size_t)len, "reason", out, sizeof out) == 0 &&
              !strcmp(out, "r\xc3\xa9gl\xc3\xa9 \xe2\x9c\x93"),
          "state JSON keeps a UTF-8 reason and operator as they are, and reads them back: %s", json);
    len = eg_dlq_state_json(EG_DLQ_ACCEPTED_LOSS, "said \"ok\"\n\\", 1767323045678LL, "ann@h", -1, json, sizeof json);
    CHECK(eg_json_get_str(json, (size_t)len, "status", out, sizeof out) == 0 && strcmp(out, "accepted-loss") == 0,
          "status read back");
    CHECK(eg_dlq_state_json(EG_DLQ_CLOSED, "r", 0, "b", -1, json, 20) < 0, "a value that does not fit is refused");
    const char *doc =
        " { \"a\": [1, {\"status\": \"x\"}], \"n\": -1.5e3, \"t\": true, \"status\" : \"clo\\u0073ed\" } ";
    CHECK(eg_json_get_str(doc, strlen(doc), "status", out, sizeof out) == 0 && strcmp(out, "closed") == 0,
          "only a top-level member counts; \\u escapes");
    const char *hostile[] = {"",
                             "[]",
                             "{",
                             "{\"status\"",
                             "{\"status\":}",
                             "{\"status\":\"open",
                             "{\"status\":1}",
                             "{\"a\":1,}",
                             "null",
                             "{\"a\":\"\\u12\"}",
                             NULL};
    bad = 0;
    for (const char **p = hostile; *p; p++) bad += eg_json_get_str(*p, strlen(*p), "status", out, sizeof out) == 0;
    CHECK(bad == 0, "malformed or status-less values are not read as a status (%d were)", bad);
    char deep[300];
    memset(deep, '[', sizeof deep);
    memcpy(deep, "{\"a\":", 5);
    CHECK(eg_json_get_str(deep, sizeof deep, "status", out, sizeof out) < 0,
          "deep nesting is refused, not recursed into");
    CHECK(eg_json_get_str("{\"status\":\"abcdefghij\"}", 23, "status", out, 5) == 0 && strcmp(out, "abcd") == 0,
          "long values are truncated");

    /* ---- filters ---- */
    eg_lane_view v = {.ts = 1000, .key = "k1", .keylen = 2, .klass = "transient", .code = "http_503"};
    eg_replay_filter f = {0};
    CHECK(eg_replay_filter_match(&f, &v), "no filter: everything");
    f.since_ms = 1000;
    f.until_ms = 1000;
    CHECK(eg_replay_filter_match(&f, &v), "since and until are inclusive");
    f.since_ms = 1001;
    CHECK(!eg_replay_filter_match(&f, &v), "older than --since: out");
    f.since_ms = 0, f.until_ms = 999;
    CHECK(!eg_replay_filter_match(&f, &v), "newer than --until: out");
    f.until_ms = 0, f.klass = "transient", f.code = "http_503", f.key = "k1";
    CHECK(eg_replay_filter_match(&f, &v), "class, code and key match exactly");
    f.klass = "transien";
    CHECK(!eg_replay_filter_match(&f, &v), "class is not a prefix match");
    f.klass = NULL, f.key = "k";
    CHECK(!eg_replay_filter_match(&f, &v), "key is not a prefix match");
    v.key = NULL, v.keylen = 0, f.key = "";
    CHECK(!eg_replay_filter_match(&f, &v), "a record without a key never matches --key");
    f.key = NULL, v.code = NULL;
    CHECK(!eg_replay_filter_match(&f, &v), "a record without error.code never matches --code");

    /* ---- replay headers ---- */
    rd_kafka_headers_t *src = rd_kafka_headers_new(8);
    rd_kafka_header_add(src, "trace", -1, "t1", -1);
    rd_kafka_header_add(src, EG_H_RETRY_COUNT, -1, "4", -1);
    rd_kafka_header_add(src, EG_H_ORIG_TOPIC, -1, "pay", -1);
    rd_kafka_header_add(src, EG_H_ID, -1, "pay/1/7", -1);
    rd_kafka_header_add(src, EG_H_HISTORY, -1, "\x91\x00", 2);
    rd_kafka_header_add(src, EG_H_REPLAYS, -1, "1", -1);
    rd_kafka_header_add(src, EG_H_REPLAY_FROM, -1, "old/0/0", -1);
    rd_kafka_header_add(src, "multi", -1, "a", -1);
    rd_kafka_header_add(src, "multi", -1, "b", -1);
    rd_kafka_headers_t *h = eg_replay_headers(src, "pay.dlq/2/9", 1767323045678LL, 2);
    CHECK(!strcmp(hget(h, EG_H_RETRY_COUNT), "0") && hcount(h, EG_H_RETRY_COUNT) == 1, "retry.count reset to 0, once");
    CHECK(!strcmp(hget(h, EG_H_REPLAY_FROM), "pay.dlq/2/9") && hcount(h, EG_H_REPLAY_FROM) == 1,
          "replay.from-dlq replaced, not appended");
    CHECK(!strcmp(hget(h, EG_H_REPLAY_TS), "2026-01-02T03:04:05.678Z"), "replay.timestamp in RFC 3339");
    CHECK(!strcmp(hget(h, EG_H_REPLAYS), "2") && hcount(h, EG_H_REPLAYS) == 1, "errgate.replays set, once");
    CHECK(!strcmp(hget(h, EG_H_ORIG_TOPIC), "pay") && !strcmp(hget(h, EG_H_ID), "pay/1/7") &&
              !strcmp(hget(h, "trace"), "t1") && hcount(h, "multi") == 2,
          "original.*, errgate.id and other headers survive (repeated ones too)");
    const void *hv;
    size_t hn;
    CHECK(rd_kafka_header_get_last(h, EG_H_HISTORY, &hv, &hn) == 0 && hn == 2 && !memcmp(hv, "\x91\x00", 2),
          "binary errgate.history survives byte for byte");
    CHECK(rd_kafka_header_cnt(h) == rd_kafka_header_cnt(src) + 1, "nothing else added (%zu headers)",
          rd_kafka_header_cnt(h));
    rd_kafka_headers_destroy(h);
    h = eg_replay_headers(NULL, "l/0/0", 0, 1);
    CHECK(rd_kafka_header_cnt(h) == 4, "a record without headers gets the 4 replay headers");
    rd_kafka_headers_destroy(h);
    rd_kafka_headers_destroy(src);

    /* a damaged errgate.attempts: written once, the largest well-formed count, or dropped */
    static const struct {
        const char *vals[3];
        const char *want; /* NULL: dropped */
    } att[] = {{{"5", NULL, NULL}, "5"},
               {{"x", NULL, NULL}, NULL},
               {{"-3", NULL, NULL}, NULL},
               {{"99999999999999999999", NULL, NULL}, NULL},
               {{"4294967296", NULL, NULL}, NULL},
               {{"", NULL, NULL}, NULL},
               {{"4", "garbage", NULL}, "4"},
               {{"2", "7", "3"}, "7"},
               {{"0", NULL, NULL}, "0"}};
    for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) {
        src = rd_kafka_headers_new(4);
        for (int j = 0; j < 3 && att[i].vals[j]; j++) rd_kafka_header_add(src, EG_H_ATTEMPTS, -1, att[i].vals[j], -1);
        h = eg_replay_headers(src, "l/0/0", 0, 1);
        size_t cnt = hcount(h, EG_H_ATTEMPTS);
        CHECK(att[i].want ? cnt == 1 && !strcmp(hget(h, EG_H_ATTEMPTS), att[i].want) : cnt == 0,
              "replayed errgate.attempts from '%s'%s: %s (%zu headers)", att[i].vals[0], att[i].vals[1] ? ", ..." : "",
              att[i].want ? att[i].want : "dropped", cnt);
        rd_kafka_headers_destroy(h);
        rd_kafka_headers_destroy(src);
    }

    /* ---- output columns ---- */
    static const struct {
        const char *in;
        size_t cap;
        const char *want;
    } col[] = {{"a b", 64, "a\\x20b"},
               {"", 64, "-"},
               {"plain", 64, "plain"},
               {"X reason=forged", 64, "X\\x20reason=forged"},
               {"ab cd ef", 12, "ab\\x20cd..."},
               {"\\x0a b", 9, "\\x0a..."},
               {"a b", 4, "..."}};
    for (size_t i = 0; i < sizeof col / sizeof col[0]; i++) {
        char buf[64];
        eg_strlcpy(buf, col[i].in, sizeof buf);
        eg_dlq_column(buf, col[i].cap);
        CHECK(!strcmp(buf, col[i].want) && strlen(buf) < col[i].cap, "column '%s' (cap %zu): '%s'", col[i].in,
              col[i].cap, buf);
    }

    /* ---- string map ---- */
    eg_strmap m = {0};
    CHECK(eg_strmap_get(&m, "x", 1) == -1, "empty map");
    enum { K = 5000 };
    char key[32];
    for (int i = 0; i < K; i++) {
        int kl = snprintf(key, sizeof key, "id/%d", i);
        eg_strmap_put(&m, key, (size_t)kl, i);
    }
    for (int i = 0; i < K; i += 2) {
        int kl = snprintf(key, sizeof key, "id/%d", i);
        eg_strmap_put(&m, key, (size_t)kl, -i - 10);
    }
    bad = 0;
    for (int i = 0; i < K; i++) {
        int kl = snprintf(key, sizeof key, "id/%d", i);
        bad += eg_strmap_get(&m, key, (size_t)kl) != (i % 2 ? i : -i - 10);
    }
    CHECK(bad == 0 && m.used == K, "map: %d keys through growth, overwrites kept (%d wrong)", K, bad);
    CHECK(eg_strmap_get(&m, "id/1\0x", 6) == -1 && eg_strmap_get(&m, "id/", 3) == -1, "lengths matter");
    eg_strmap_free(&m);

    /* ---- lifecycle ---- */
    eg_dlq_states s;
    memset(&s, 0, sizeof s);
    const char *closed = "{\"status\":\"closed\",\"reason\":\"\"}";
    const char *replayed = "{\"status\":\"replayed\"}";
    eg_dlq_states_apply(&s, "a", 1, closed, strlen(closed), 100);
    CHECK(eg_dlq_states_status(&s, "a", 100, 0) == EG_DLQ_CLOSED, "resolved at the record's own time");
    CHECK(eg_dlq_states_status(&s, "a", 101, 0) == EG_DLQ_OPEN, "a record newer than its resolution is open");
    CHECK(eg_dlq_states_status(&s, "b", 1, 0) == EG_DLQ_OPEN, "an id without a status is open");
    eg_dlq_states_apply(&s, "a", 1, replayed, strlen(replayed), 200);
    CHECK(eg_dlq_states_status(&s, "a", 150, 0) == EG_DLQ_REPLAYED, "the latest status wins");
    eg_dlq_states_apply(&s, "a", 1, NULL, 0, 300);
    CHECK(eg_dlq_states_status(&s, "a", 150, 0) == EG_DLQ_OPEN, "a tombstone reopens");
    eg_dlq_states_apply(&s, "c", 1, "{\"status\":\"open\"}", 17, 300);
    eg_dlq_states_apply(&s, "d", 1, "garbage", 7, 300);
    CHECK(eg_dlq_states_status(&s, "c", 1, 0) == EG_DLQ_OPEN && eg_dlq_states_status(&s, "d", 1, 0) == EG_DLQ_OPEN,
          "unknown statuses and bad values count as open");
    eg_dlq_states_apply(&s, "c", 1, "{\"status\":\"pending-approval\"}", 29, 300);
    CHECK(eg_dlq_states_status(&s, "c", 1, 0) == EG_DLQ_OPEN, "pending-approval is not a status a record holds");

    /* approval: pending until an approval not older than the record */
    const char *approved = "{\"status\":\"approved\",\"by\":\"ops\"}";
    CHECK(eg_dlq_states_status(&s, "p", 100, 1) == EG_DLQ_PENDING, "no status + approval required: pending-approval");
    CHECK(eg_dlq_states_status(&s, "p", 100, 0) == EG_DLQ_OPEN, "no status, no approval required: open");
    eg_dlq_states_apply(&s, "p", 1, approved, strlen(approved), 200);
    CHECK(eg_dlq_states_status(&s, "p", 150, 1) == EG_DLQ_APPROVED, "approved after the record: approved");
    CHECK(eg_dlq_states_status(&s, "p", 250, 1) == EG_DLQ_PENDING,
          "a copy dead-lettered after the approval waits for its own");
    eg_dlq_states_apply(&s, "p", 1, replayed, strlen(replayed), 300);
    CHECK(eg_dlq_states_status(&s, "p", 150, 1) == EG_DLQ_REPLAYED, "approved, then replayed: replayed");
    eg_dlq_states_apply(&s, "p", 1, NULL, 0, 400);
    CHECK(eg_dlq_states_status(&s, "p", 150, 1) == EG_DLQ_PENDING, "a tombstone reopens to pending-approval");

    /* copy A (t=100) approved and replayed; it failed again: copy B (t=400)
     * is approved (t=500). A stays replayed, B is approved, then replayed. */
    eg_dlq_states_apply(&s, "q", 1, approved, strlen(approved), 200);
    eg_dlq_states_apply(&s, "q", 1, replayed, strlen(replayed), 300);
    CHECK(eg_dlq_states_status(&s, "q", 400, 1) == EG_DLQ_PENDING, "the newer copy waits for its own approval");
    eg_dlq_states_apply(&s, "q", 1, approved, strlen(approved), 500);
    CHECK(eg_dlq_states_status(&s, "q", 100, 1) == EG_DLQ_REPLAYED,
          "approving the newer copy leaves the older one replayed");
    CHECK(eg_dlq_states_status(&s, "q", 400, 1) == EG_DLQ_APPROVED, "the newer copy is approved");
    /* the same after compaction: the approval (t=500, same key) is all that
     * is left of q's states; it carries the replayed status it superseded */
    eg_dlq_states cs;
    memset(&cs, 0, sizeof cs);
    const char *approved_prior = "{\"status\":\"approved\",\"by\":\"ops\",\"since\":\"1970-01-01T00:00:00.400Z\","
                                 "\"prior\":\"replayed\",\"prior_at\":\"1970-01-01T00:00:00.300Z\"}";
    eg_dlq_states_apply(&cs, "q", 1, approved_prior, strlen(approved_prior), 500);
    CHECK(eg_dlq_states_status(&cs, "q", 100, 1) == EG_DLQ_REPLAYED &&
              eg_dlq_states_status(&cs, "q", 400, 1) == EG_DLQ_APPROVED,
          "after compaction the approval alone keeps the older copy replayed and approves the newer one");
    const char *approved_future = "{\"status\":\"approved\",\"since\":\"1970-01-01T00:00:00.400Z\","
                                  "\"prior\":\"replayed\",\"prior_at\":\"1970-01-01T00:00:09.000Z\"}";
    const char *approved_open = "{\"status\":\"approved\",\"since\":\"1970-01-01T00:00:00.400Z\","
                                "\"prior\":\"open\",\"prior_at\":\"1970-01-01T00:00:00.300Z\"}";
    eg_dlq_states_apply(&cs, "f", 1, approved_future, strlen(approved_future), 500);
    eg_dlq_states_apply(&cs, "o", 1, approved_open, strlen(approved_open), 500);
    CHECK(eg_dlq_states_status(&cs, "f", 100, 1) == EG_DLQ_PENDING &&
              eg_dlq_states_status(&cs, "o", 100, 1) == EG_DLQ_PENDING,
          "a prior status later than its approval, or one that resolves nothing, is not taken");
    eg_dlq_states_free(&cs);
    eg_dlq_states_apply(&s, "q", 1, replayed, strlen(replayed), 600);
    CHECK(eg_dlq_states_status(&s, "q", 400, 1) == EG_DLQ_REPLAYED &&
              eg_dlq_states_status(&s, "q", 100, 1) == EG_DLQ_REPLAYED,
          "both copies replayed");
    /* an approval with "since" reaches no older copy, even with the status that
     * resolved that copy compacted away */
    const char *since_rec = "{\"status\":\"approved\",\"reason\":\"\",\"at\":\"1970-01-01T00:00:00.500Z\","
                            "\"by\":\"ops\",\"since\":\"1970-01-01T00:00:00.400Z\"}";
    eg_dlq_states_apply(&s, "r", 1, since_rec, strlen(since_rec), 500);
    CHECK(eg_dlq_states_status(&s, "r", 400, 1) == EG_DLQ_APPROVED &&
              eg_dlq_states_status(&s, "r", 450, 1) == EG_DLQ_APPROVED,
          "an approval applies from its since on");
    CHECK(eg_dlq_states_status(&s, "r", 100, 1) == EG_DLQ_PENDING, "and not to an older copy");
    eg_dlq_states_apply(&s, "q", 1, "{\"status\":\"nonsense\"}", 22, 700);
    CHECK(eg_dlq_states_status(&s, "q", 100, 0) == EG_DLQ_OPEN, "an unknown status forgets what came before");

    eg_dlq_states_free(&s);

    CHECK(eg_dlq_status_parse("accepted-loss") == EG_DLQ_ACCEPTED_LOSS && eg_dlq_status_parse("open") < 0 &&
              eg_dlq_status_parse("Closed") < 0 && eg_dlq_status_parse("approved") < 0 &&
              eg_dlq_status_parse("pending-approval") < 0,
          "statuses a resolve may set");
    int names_ok = 1;
    for (int i = 0; i < EG_DLQ__N; i++) names_ok &= eg_dlq_state_parse(eg_dlq_status_name((eg_dlq_status)i)) == i;
    CHECK(names_ok && eg_dlq_state_parse("pending-approval") == EG_DLQ_PENDING && eg_dlq_state_parse("x") < 0,
          "every state name parses back");
    CHECK(!eg_dlq_resolved(EG_DLQ_APPROVED) && !eg_dlq_resolved(EG_DLQ_PENDING) && eg_dlq_resolved(EG_DLQ_CLOSED),
          "approved and pending-approval are not resolved");

    /* ---- printable ---- */
    char pr[32];
    eg_printable("a\"b\\\n\x01\xff", 7, pr, sizeof pr);
    CHECK(!strcmp(pr, "a\\\"b\\\\\\n\\x01\\xff"), "escaped: %s", pr);
    eg_printable("0123456789abcdef", 16, pr, 10);
    CHECK(!strcmp(pr, "012345..."), "truncated with ...: %s", pr);
    eg_printable("\x01\x01\x01", 3, pr, 10);
    CHECK(strlen(pr) < 10 && !strcmp(pr, "\\x01..."), "escapes are never cut in half: %s", pr);

    /* ---- tables ---- */
    eg_table t;
    eg_table_init(&t, 3);
    const char *r1[] = {"NAME", "N", "X"}, *r2[] = {"transient", "12", NULL}, *r3[] = {"p", "3", "long"};
    eg_table_add(&t, r1);
    eg_table_add(&t, r2);
    eg_table_add(&t, r3);
    char *buf = NULL;
    size_t blen = 0;
    FILE *mem = open_memstream(&buf, &blen);
    eg_table_print(&t, 1u << 1, mem);
    fclose(mem);
    CHECK(!strcmp(buf, "NAME        N  X\ntransient  12  -\np           3  long\n"),
          "aligned table, right-aligned numbers, - for NULL");
    free(buf);
    eg_table_free(&t);
    return TAP_DONE();
}
