/* test_log_sample.c — the decision-log sampler: the first per_second lines
 * of a (topic, class, action) key in a second are kept, the rest folded;
 * the second's decision_summary names only keys that folded, and kept plus
 * folded add up to the decisions exactly, also when the keys overflow the
 * table and the summary needs several lines; "all" keeps everything; the
 * summary is written when a later second starts, by a flush after the
 * second, or at once at exit. stderr is redirected to a file and read back. */
#include "log.h"
#include "log_sample.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/errgate-sampletest.XXXXXX";
static int saved_fd = -1;

/* Sends stderr to a fresh file. */
static void capture(void) {
    int fd = mkstemp(path);
    saved_fd = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* Restores stderr; returns what was written (static), and the line count. */
static const char *captured(int *lines) {
    static char buf[1 << 16];
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    FILE *f = fopen(path, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    memcpy(path + strlen(path) - 6, "XXXXXX", 6);
    buf[n] = '\0';
    *lines = 0;
    for (size_t i = 0; i < n; i++) *lines += buf[i] == '\n';
    return buf;
}

/* The number after the first `"name":` at or after s, or -1. */
static long long num_after(const char *s, const char *name) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(s, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

/* How often needle occurs in s. */
static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

int main(void) {
    static eg_sampler s;
    eg_log_setup(EG_INFO, 0);

    /* one second: 10 of key A, 2 of key B, 5 of key C, per_second 3 */
    capture();
    eg_sampler_init(&s, 3);
    int kept_a = 0, kept_b = 0, kept_c = 0;
    for (int i = 0; i < 10; i++) kept_a += eg_sampler_admit(&s, "src", "permanent", "dlq", EG_INFO, 5000 + i);
    for (int i = 0; i < 2; i++) kept_b += eg_sampler_admit(&s, "src", "transient", "retry", EG_INFO, 5100 + i);
    for (int i = 0; i < 5; i++) kept_c += eg_sampler_admit(&s, "other", "permanent", "dlq", EG_WARN, 5200 + i);
    int64_t folded = eg_sampler_flush(&s, 5999); /* the second is not over */
    int lines;
    const char *out = captured(&lines);
    CHECK(kept_a == 3 && kept_b == 2 && kept_c == 3, "the first 3 lines per key are kept (%d %d %d)", kept_a, kept_b,
          kept_c);
    CHECK(folded == 0 && lines == 0, "nothing is written while the second lasts: %s", out);

    capture();
    kept_a = eg_sampler_admit(&s, "src", "permanent", "dlq", EG_INFO, 6000); /* the next second */
    out = captured(&lines);
    CHECK(kept_a == 1, "a new second starts its counts afresh");
    CHECK(lines == 1 && strstr(out, "\"event\":\"decision_summary\"") && strstr(out, "\"level\":\"warn\""),
          "the next second writes one summary, at the level of the loudest folded line: %s", out);
    CHECK(num_after(out, "per_second") == 3 && num_after(out, "logged") == 6 && num_after(out, "folded") == 9,
          "its totals: 6 logged, 9 folded by keys that folded");
    CHECK(strstr(out, "{\"topic\":\"src\",\"class\":\"permanent\",\"action\":\"dlq\",\"logged\":3,\"folded\":7}") &&
              strstr(out, "{\"topic\":\"other\",\"class\":\"permanent\",\"action\":\"dlq\",\"logged\":3,\"folded\":2}"),
          "each folding key is named with its counts: %s", out);
    CHECK(!strstr(out, "\"transient\""), "a key that folded nothing is not named");
    CHECK(strstr(out, "\"second\":\"1970-01-01T00:00:05.000Z\"") != NULL, "the summary names its second");

    /* flush after the second, and at exit */
    capture();
    for (int i = 0; i < 5; i++) eg_sampler_admit(&s, "src", "permanent", "dlq", EG_INFO, 6001 + i);
    CHECK(eg_sampler_flush(&s, 7000) == 3, "a flush after the second reports its 3 folded lines");
    CHECK(eg_sampler_flush(&s, 7000) == 0, "... once");
    for (int i = 0; i < 4; i++) eg_sampler_admit(&s, "src", "permanent", "dlq", EG_INFO, 9000 + i);
    CHECK(eg_sampler_flush(&s, -1) == 1, "a flush at exit writes the second still running");
    out = captured(&lines);
    CHECK(lines == 2, "two summaries written (%d)", lines);

    /* "all": everything kept, nothing written */
    capture();
    eg_sampler_init(&s, 0);
    int kept = 0;
    for (int i = 0; i < 5000; i++) kept += eg_sampler_admit(&s, "src", "permanent", "dlq", EG_INFO, 1000 + i / 10);
    CHECK(kept == 5000 && eg_sampler_flush(&s, -1) == 0, "log.decisions = \"all\" keeps every line");
    out = captured(&lines);
    CHECK(lines == 0, "and writes no summary");

    /* 300 keys of which 128 fit the table: the rest share the key "*";
     * the summary spans several lines whose totals add up */
    capture();
    eg_sampler_init(&s, 1);
    kept = 0;
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < 300; k++) {
            char klass[32];
            snprintf(klass, sizeof klass, "class-%03d", k);
            kept += eg_sampler_admit(&s, "payments.orders.v1", klass, "quarantine", EG_INFO, 42000);
        }
    folded = eg_sampler_flush(&s, -1);
    out = captured(&lines);
    CHECK(kept == EG_SAMPLE_KEYS + 1 && folded == 900 - kept, "kept %d, folded %lld of 900", kept, (long long)folded);
    long long sum_logged = 0, sum_folded = 0;
    int entries = 0;
    for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
        sum_logged += num_after(l, "logged");
        sum_folded += num_after(l, "folded");
        const char *end = strchr(l, '\n');
        for (const char *e = strstr(l, "{\"topic\""); e && e < end; e = strstr(e + 1, "{\"topic\"")) entries++;
        if (!end[1]) break;
    }
    CHECK(lines > 1 && !strstr(out, "truncated"), "the keys span %d whole lines", lines);
    CHECK(entries == EG_SAMPLE_KEYS + 1 && count(out, "\"topic\":\"*\",\"class\":\"*\",\"action\":\"*\"") == 1,
          "every key once, the overflow key \"*\" among them (%d)", entries);
    CHECK(sum_logged + sum_folded == 900 && sum_folded == folded, "the lines' totals add up: %lld + %lld", sum_logged,
          sum_folded);

    /* names are escaped and redacted like every log value */
    capture();
    eg_sampler_init(&s, 1);
    eg_sampler_admit(&s, "src", "we\"ird\n", "dlq", EG_INFO, 1000);
    eg_sampler_admit(&s, "src", "we\"ird\n", "dlq", EG_INFO, 1000);
    eg_sampler_admit(&s, "src", "password=hunter2", "dlq", EG_INFO, 1000);
    eg_sampler_admit(&s, "src", "password=hunter2", "dlq", EG_INFO, 1000);
    eg_sampler_flush(&s, -1);
    out = captured(&lines);
    CHECK(strstr(out, "\"class\":\"we\\\"ird\\n\"") != NULL, "a class name is JSON-escaped: %s", out);
    CHECK(!strstr(out, "hunter2"), "and redacted");
    return TAP_DONE();
}
