/* test_prom_merge.c — the merge of Prometheus expositions (prom_merge.h):
 * two and three real gateway expositions (spec/fixtures/metrics/, captured
 * from `errgate run`'s /metrics: a key-ordered gateway, the payments example
 * with its ladder, a fenced gateway whose fence families only it has) and
 * two rendered here by metrics.c (escaped label values, histograms) and
 * one whose policy code holds a CR or is cut mid-character; a
 * summary; a conflicting TYPE (either order, untyped against typed); names
 * that would collide; a source label already there; hostile bytes (NUL, no
 * line feed at the end, CR, a 1 MB line, the line bound exactly, unbalanced
 * quotes and braces, label and HELP escapes, invalid UTF-8, bad values and
 * timestamps, duplicate labels and series) each with its exact drop count;
 * the bounds (families, input bytes) and bad arguments leaving the output
 * untouched. Every output is read back by prom_check.h's strict reader;
 * the three-fixture merge, the rendered one and the hostile one also by
 * `promtool check metrics`. */
#include "metrics.h"
#include "prom_check.h"
#include "prom_merge.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The file's bytes (caller frees), or NULL. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = 0;
    fclose(f);
    return s;
}

/* The evbuffer's text as a NUL-terminated string (caller frees); empties it. */
static char *take(struct evbuffer *b, size_t *len) {
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = 0;
    if (len) *len = n;
    return s;
}

static int g_rc;
static size_t g_dropped;

/* Merges n NUL-terminated bodies; the text (caller frees), rc in g_rc, the
 * drop count in g_dropped. */
static char *merge_str(const char *const *names, const char *const *bodies, int n, size_t *outlen) {
    size_t lens[16];
    for (int i = 0; i < n; i++) lens[i] = strlen(bodies[i]);
    struct evbuffer *b = evbuffer_new();
    g_dropped = 12345;
    g_rc = eg_prom_merge(names, bodies, lens, n, b, &g_dropped);
    char *s = take(b, outlen);
    evbuffer_free(b);
    return s;
}

/* pc_check's verdict on text, printed when it fails; the sample count. */
static long checked(const char *text, size_t len, const char *const *names, int n, long *counts) {
    char why[512] = "";
    long r = pc_check(text, len, names, n, counts, why, sizeof why);
    if (r < 0) printf("# strict reader: %s\n", why);
    return r;
}

/* Sample lines (not comments, not blank) of a clean exposition. */
static long sample_lines(const char *s) {
    long n = 0;
    for (const char *l = s; *l; l = strchr(l, '\n') + 1) {
        if (*l != '#' && *l != '\n') n++;
        if (!strchr(l, '\n')) break;
    }
    return n;
}

/* Lines starting with prefix. */
static int count_prefix(const char *s, const char *prefix) {
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *l = s; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, prefix, k)) n++;
    return n;
}

static const char *pos(const char *s, const char *needle) {
    const char *p = strstr(s, needle);
    return p ? p : s + strlen(s) + 1;
}

/* The lines of text with source="name" (a static buffer, overwritten by
 * the next call but one). */
static const char *only_source(const char *text, const char *name) {
    static char *bufs[2];
    static int which;
    char want[64];
    snprintf(want, sizeof want, "{source=\"%s\"", name);
    which ^= 1;
    free(bufs[which]);
    char *w = bufs[which] = malloc(strlen(text) + 1);
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        e = e ? e + 1 : l + strlen(l);
        const char *at = strstr(l, want);
        if (at && at < e) {
            memcpy(w, l, (size_t)(e - l));
            w += e - l;
        }
        l = e;
    }
    *w = 0;
    return bufs[which];
}

/* The exit code of `promtool check metrics` (Debian package prometheus, one
 * of `make deps`) on text: 0 clean, 3 parsed with lint remarks (no HELP,
 * a counter without _total), 1 not parsed; its remarks printed. */
static int promtool(const char *text, size_t len) {
    char path[] = "/tmp/eg-prom-merge-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "promtool check metrics <%s >%s.out 2>&1; rc=$?; sed 's/^/# promtool: /' %s.out; rm -f %s.out; exit $rc",
             path, path, path, path);
    int rc = system(cmd);
    unlink(path);
    return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

static void test_real(void) {
    static const char *const names[] = {"orders", "payments", "refunds"};
    static const char *const files[] = {"spec/fixtures/metrics/orders.prom", "spec/fixtures/metrics/payments.prom",
                                        "spec/fixtures/metrics/refunds.prom"};
    char *body[3];
    size_t lens[3];
    for (int i = 0; i < 3; i++) body[i] = slurp(files[i], &lens[i]);
    if (!body[0] || !body[1] || !body[2]) {
        CHECK(0, "the fixtures are readable (run from the repository's root)");
        return;
    }
    struct evbuffer *b = evbuffer_new();
    size_t dropped = 99, len;
    /* two inputs */
    int rc = eg_prom_merge(names, (const char *const *)body, lens, 2, b, &dropped);
    char *two = take(b, &len);
    long counts[3];
    long total = checked(two, len, names, 2, counts);
    CHECK(rc == 0 && dropped == 0, "two real expositions merge, nothing dropped (rc %d, %zu dropped)", rc, dropped);
    CHECK(total == sample_lines(body[0]) + sample_lines(body[1]), "the strict reader reads every sample back (%ld)",
          total);
    CHECK(counts[0] == sample_lines(body[0]) && counts[1] == sample_lines(body[1]),
          "each source has its samples: orders %ld of %ld, payments %ld of %ld", counts[0], sample_lines(body[0]),
          counts[1], sample_lines(body[1]));
    CHECK(count_prefix(two, "# TYPE ") == count_prefix(body[0], "# TYPE ") &&
              count_prefix(two, "# HELP ") == count_prefix(body[0], "# HELP "),
          "one TYPE and one HELP per family (%d families)", count_prefix(two, "# TYPE "));
    CHECK(!strncmp(two,
                   "# HELP errgate_records_received_total Records consumed, by source topic.\n"
                   "# TYPE errgate_records_received_total counter\n"
                   "errgate_records_received_total{source=\"orders\",topic=\"src\"} 400\n"
                   "errgate_records_received_total{source=\"payments\",topic=\"payments\"} 300\n",
                   strlen("# HELP errgate_records_received_total Records consumed, by source topic.\n"
                          "# TYPE errgate_records_received_total counter\n"
                          "errgate_records_received_total{source=\"orders\",topic=\"src\"} 400\n"
                          "errgate_records_received_total{source=\"payments\",topic=\"payments\"} 300\n")),
          "the first family: HELP, TYPE, orders' sample, then payments'");
    const char *h = strstr(two, "# TYPE errgate_target_request_duration_seconds histogram\n");
    const char *hend = h ? strstr(h, "\n# HELP") : NULL;
    CHECK(h && hend && pos(h, "{source=\"orders\",status_class=\"2xx\",le=\"0.001\"}") < hend &&
              pos(h, "errgate_target_request_duration_seconds_count{source=\"orders\",status_class=\"2xx\"}") <
                  pos(h, "errgate_target_request_duration_seconds_bucket{source=\"payments\"") &&
              pos(h, "errgate_target_request_duration_seconds_count{source=\"payments\"") < hend,
          "a histogram's buckets, sum and count stay in its block, orders' before payments'");
    /* the families in the order of the first input */
    int same_order = 1;
    for (const char *l = body[0], *o = two; (l = strstr(l, "# TYPE ")); l++) {
        const char *e = strchr(l, '\n');
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)(e - l + 1), l);
        const char *at = strstr(o, line);
        if (!at) same_order = 0;
        else o = at;
    }
    CHECK(same_order, "families in the order they first appear");

    /* three inputs: the fence families only refunds has come last */
    rc = eg_prom_merge(names, (const char *const *)body, lens, 3, b, &dropped);
    char *three = take(b, &len);
    total = checked(three, len, names, 3, counts);
    CHECK(rc == 0 && dropped == 0 && total == sample_lines(body[0]) + sample_lines(body[1]) + sample_lines(body[2]),
          "three real expositions: every sample, nothing dropped (%ld samples, %zu dropped)", total, dropped);
    CHECK(counts[2] == sample_lines(body[2]), "refunds has its %ld samples", counts[2]);
    const char *fk = strstr(three, "# TYPE errgate_fenced_keys gauge\n");
    CHECK(fk && fk > strstr(three, "# TYPE errgate_ready gauge\n") &&
              strstr(fk, "errgate_fenced_keys{source=\"refunds\",topic=\"fenced\",partition=\"0\"}") &&
              !strstr(three, "errgate_fenced_keys{source=\"orders\"") &&
              count_prefix(three, "# TYPE ") == count_prefix(body[2], "# TYPE "),
          "a family only one input has: after the shared ones, its samples only (%d families)",
          count_prefix(three, "# TYPE "));
    CHECK(promtool(three, len) == 0, "promtool check metrics accepts the merge of the three, lint clean");

    /* a merged exposition merged again: every sample already has a source */
    const char *again_names[] = {"again"};
    const char *again[] = {three};
    size_t again_len[] = {len};
    rc = eg_prom_merge(again_names, again, again_len, 1, b, &dropped);
    char *s = take(b, &len);
    CHECK(rc == 0 && (long)dropped == total && count_prefix(s, "errgate_") == 0,
          "merged output merged again: all %zu samples dropped (they carry a source label)", dropped);
    free(s);

    /* a later body never changes what an earlier one contributes */
    static const char *const conflicting = "# TYPE errgate_records_received_total gauge\n"
                                           "errgate_records_received_total 1\n"
                                           "# TYPE errgate_decision_duration_seconds_bucket counter\n"
                                           "errgate_decision_duration_seconds_bucket 2\n"
                                           "# TYPE errgate_ready gauge\nerrgate_ready 0\nextra_family 1\n";
    const char *mixed[] = {body[0], conflicting};
    size_t mlens[] = {lens[0], strlen(conflicting)};
    rc = eg_prom_merge(names, mixed, mlens, 2, b, &dropped);
    char *with = take(b, &len);
    size_t d2 = dropped;
    rc |= eg_prom_merge(names, (const char *const *)body, lens, 1, b, &dropped);
    char *alone = take(b, &len);
    CHECK(rc == 0 && d2 == 4 && !strcmp(only_source(with, "orders"), only_source(alone, "orders")) &&
              strstr(with, "\nerrgate_ready{source=\"payments\"} 0\n") &&
              strstr(with, "# TYPE extra_family untyped\nextra_family{source=\"payments\"} 1\n") &&
              !strstr(with, "errgate_decision_duration_seconds_bucket{source=\"payments\""),
          "a later body typing a family otherwise (gauge against counter, a counter named as a histogram's "
          "bucket) loses those lines (%zu dropped), keeps the others, and the first body's samples are as merged "
          "alone",
          d2);
    free(with);
    free(alone);
    free(two);
    free(three);
    evbuffer_free(b);
    for (int i = 0; i < 3; i++) free(body[i]);
}

/* Two expositions rendered by metrics.c (the registry and the scrape-time
 * writers), hostile label values included. */
static void test_rendered(void) {
    static const char *const ln[] = {"class", "code"};
    static const double bounds[] = {0.1, 1};
    struct evbuffer *bb[2];
    char *text[2];
    for (int i = 0; i < 2; i++) {
        eg_registry *r = eg_registry_new();
        eg_family *c = eg_family_new(r, "t_failed_total", "Failures.", EG_MT_COUNTER, 2, ln, NULL, 0);
        eg_family *h = eg_family_new(r, "t_seconds", "Latency.", EG_MT_HISTOGRAM, 0, NULL, bounds, 2);
        const char *v1[2] = {"transient", i ? "plain" : "a\"b\\c\nd"};
        *eg_counter(c, v1) += 3 + i;
        eg_hist_observe(eg_histogram(h, NULL), 0.05);
        eg_hist_observe(eg_histogram(h, NULL), 5);
        bb[i] = evbuffer_new();
        eg_registry_render(r, bb[i]);
        static const char *const gl[] = {"topic"};
        const char *gv[] = {i ? "t\\1" : "t0"};
        eg_metric_header(bb[i], "t_lag", "Lag.", "gauge");
        eg_metric_sample(bb[i], "t_lag", 1, gl, gv, 1.5 + i);
        text[i] = take(bb[i], NULL);
        evbuffer_free(bb[i]);
        eg_registry_free(r);
    }
    const char *names[] = {"a", "b"};
    size_t len;
    char *s = merge_str(names, (const char *const *)text, 2, &len);
    long counts[2];
    long total = checked(s, len, names, 2, counts);
    CHECK(g_rc == 0 && g_dropped == 0 && total == 14 && counts[0] == 7 && counts[1] == 7,
          "two renders of metrics.c merge whole (%ld samples, %zu dropped)", total, g_dropped);
    CHECK(promtool(s, len) == 0, "promtool check metrics accepts it, lint clean");
    CHECK(strstr(s, "t_failed_total{source=\"a\",class=\"transient\",code=\"a\\\"b\\\\c\\nd\"} 3\n") &&
              strstr(s, "t_failed_total{source=\"b\",class=\"transient\",code=\"plain\"} 4\n"),
          "escaped label values pass through as escaped");
    CHECK(strstr(s, "# TYPE t_seconds histogram\nt_seconds_bucket{source=\"a\",le=\"0.1\"} 1\n"
                    "t_seconds_bucket{source=\"a\",le=\"1\"} 1\nt_seconds_bucket{source=\"a\",le=\"+Inf\"} 2\n"
                    "t_seconds_sum{source=\"a\"} 5.05\nt_seconds_count{source=\"a\"} 2\n"
                    "t_seconds_bucket{source=\"b\",le=\"0.1\"} 1\n") != NULL,
          "a histogram: a's buckets, sum and count, then b's, in one block");
    CHECK(strstr(s, "# HELP t_lag Lag.\n# TYPE t_lag gauge\nt_lag{source=\"a\",topic=\"t0\"} 1.5\n"
                    "t_lag{source=\"b\",topic=\"t\\\\1\"} 2.5\n") != NULL,
          "scrape-time gauges (eg_metric_header, eg_metric_sample)");
    free(s);
    free(text[0]);
    free(text[1]);
}

/* What metrics.c writes for a policy's code with a control byte or cut
 * mid-character (record.h keeps 128 bytes of a code, 64 of a class, cut by
 * bytes): the control byte as '?', the cut byte as U+FFFD, so the line is
 * one a strict reader takes (promtool refuses a whole exposition for one
 * invalid UTF-8 label value, every source's samples with it): nothing is
 * dropped by the merge. */
static void test_rendered_odd_codes(void) {
    static const char *const ln[] = {"class", "code"};
    eg_registry *r = eg_registry_new();
    eg_family *c = eg_family_new(r, "t_failed_total", "Failures.", EG_MT_COUNTER, 2, ln, NULL, 0);
    const char *ok[2] = {"transient", "http_503"}, *cr[2] = {"transient", "a\rb"}, *cut[2] = {"transient", "caf\xc3"};
    (*eg_counter(c, ok))++;
    (*eg_counter(c, cr))++;
    (*eg_counter(c, cut))++;
    struct evbuffer *b = evbuffer_new();
    eg_registry_render(r, b);
    char *text = take(b, NULL);
    const char *names[] = {"a"}, *bodies[] = {text};
    size_t len;
    char *s = merge_str(names, bodies, 1, &len);
    CHECK(g_rc == 0 && g_dropped == 0 && checked(s, len, names, 1, NULL) == 3 &&
              strstr(s, "t_failed_total{source=\"a\",class=\"transient\",code=\"http_503\"} 1\n") &&
              strstr(s, "code=\"a?b\"} 1\n") && strstr(s, "code=\"caf\xef\xbf\xbd\"} 1\n"),
          "metrics.c writes a code with a CR as '?' and one cut mid-character with U+FFFD: the merge keeps all "
          "three (%zu dropped)",
          g_dropped);
    int raw = promtool(text, strlen(text)), merged = promtool(s, len);
    CHECK((raw == 0 || raw == 3) && (merged == 0 || merged == 3),
          "promtool parses the gateway's text (exit %d) and the merge (exit %d)", raw, merged);
    free(s);
    free(text);
    evbuffer_free(b);
    eg_registry_free(r);
}

static void test_types(void) {
    size_t len;
    const char *names[] = {"a", "b", "c"};
    /* a summary from two inputs; a bare sample without quantile is dropped */
    const char *sum[] = {"# HELP s A summary.\n# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 3\n",
                         "# TYPE s summary\n# HELP s Other text.\ns{quantile=\"0.99\"} 4\ns 5\ns_count 6\n"};
    char *s = merge_str(names, sum, 2, &len);
    CHECK(g_rc == 0 && g_dropped == 1 && checked(s, len, names, 2, NULL) == 5 &&
              !strcmp(s, "# HELP s A summary.\n# TYPE s summary\ns{source=\"a\",quantile=\"0.5\"} 1\n"
                         "s_sum{source=\"a\"} 2\ns_count{source=\"a\"} 3\ns{source=\"b\",quantile=\"0.99\"} 4\n"
                         "s_count{source=\"b\"} 6\n"),
          "a summary: one block, the first HELP, a bare sample without quantile dropped (%zu)", g_dropped);
    free(s);
    /* conflicting TYPE: counter first; a gauge and an untyped body lose theirs */
    const char *conf[] = {"# TYPE x counter\nx 1\n", "# HELP x Other.\n# TYPE x gauge\nx 2\nx{k=\"v\"} 3\ny 1\n",
                          "x 4\n# TYPE y untyped\ny 7\n"};
    s = merge_str(names, conf, 3, &len);
    CHECK(g_rc == 0 && g_dropped == 5 && checked(s, len, names, 3, NULL) == 3 &&
              !strcmp(s, "# TYPE x counter\nx{source=\"a\"} 1\n# TYPE y untyped\ny{source=\"b\"} 1\n"
                         "y{source=\"c\"} 7\n"),
          "conflicting TYPE: the first body's wins; the others' HELP, TYPE and samples dropped (%zu)", g_dropped);
    free(s);
    /* untyped first, then a typed body */
    const char *conf2[] = {"x 1\n", "# TYPE x counter\nx 2\n"};
    s = merge_str(names, conf2, 2, &len);
    CHECK(g_rc == 0 && g_dropped == 2 && !strcmp(s, "# TYPE x untyped\nx{source=\"a\"} 1\n"),
          "a body without TYPE makes the family untyped; a later counter is dropped (%zu)", g_dropped);
    free(s);
    /* names that collide: a summary's _count against a counter, both orders */
    const char *col[] = {"# TYPE k summary\nk_count 1\n", "# TYPE k_count counter\nk_count 2\nk_count{a=\"1\"} 3\n"};
    s = merge_str(names, col, 2, &len);
    CHECK(g_rc == 0 && g_dropped == 3 && checked(s, len, names, 2, NULL) == 1,
          "a counter named as a summary's count "
          "is dropped (%zu)",
          g_dropped);
    free(s);
    const char *col2[] = {"# TYPE k_count counter\nk_count 2\n", "# TYPE k summary\nk_count 1\nk_sum 1\n"};
    s = merge_str(names, col2, 2, &len);
    CHECK(g_rc == 0 && g_dropped == 3 && checked(s, len, names, 2, NULL) == 1 && !strstr(s, "TYPE k summary"),
          "a summary whose count would be an existing counter is dropped with its samples (%zu)", g_dropped);
    free(s);
    /* within one body: a second TYPE, a TYPE after samples, a second HELP */
    const char *dup[] = {"# HELP d One.\n# HELP d Two.\n# TYPE d gauge\n# TYPE d gauge\nd 1\nu 2\n# TYPE u gauge\n"};
    s = merge_str(names, dup, 1, &len);
    CHECK(g_rc == 0 && g_dropped == 3 &&
              !strcmp(s, "# HELP d One.\n# TYPE d gauge\nd{source=\"a\"} 1\n"
                         "# TYPE u untyped\nu{source=\"a\"} 2\n"),
          "a second HELP or TYPE in one body, a TYPE after the samples: dropped (%zu)", g_dropped);
    free(s);
    /* blanks the format allows, normalised; HELP escapes kept as given */
    const char *ws[] = {"# HELP e a \\\\ b \\n c\t\n#TYPE e gauge\n  e { a = \"1\" , b=\"2\" , }\t 7 \t123  \n"
                        "# HELP f bad \\\" quote\n"};
    s = merge_str(names, ws, 1, &len);
    CHECK(g_rc == 0 && g_dropped == 1 && checked(s, len, names, 1, NULL) == 1 &&
              !strcmp(s, "# HELP e a \\\\ b \\n c\t\n# TYPE e gauge\ne{source=\"a\",a=\"1\",b=\"2\"} 7 123\n"),
          "blanks around names, labels, value and timestamp normalised; HELP text as given (\\\\ \\n), "
          "a HELP with \\\" dropped (%zu)",
          g_dropped);
    free(s);
    /* a histogram: a bucket without le or with a bad one, the bare name */
    const char *hist[] = {"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket 1\nh_bucket{le=\"x\"} 1\nh 3\nh_sum 1\n"
                          "h_count 1\nh_bucket{le=\"+Inf\"} 1\n",
                          "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_total 9\n"};
    s = merge_str(names, hist, 2, &len);
    CHECK(g_rc == 0 && g_dropped == 3 && checked(s, len, names, 2, NULL) == 6 &&
              strstr(s, "# TYPE h_total untyped\nh_total{source=\"b\"} 9\n"),
          "a histogram: buckets without a float le and the bare name dropped (%zu); h_total is a family of its own",
          g_dropped);
    free(s);
}

static void test_hostile(void) {
    size_t len;
    const char *names[] = {"a", "b"};
    /* each line below the first two is dropped (comment: why) */
    static const char body[] = "ok 1\n"
                               "ok{l=\"x\\\\y\\\"z\\nw\",m=\"\t\xc3\xa9\"} 2 1700000000000\n"
                               "\n   \n# a comment\n#\n" /* not counted */
                               "# HELP\n"
                               "nul 1\0junk\n"
                               "cr 1\r\n"
                               "q{a=\"b} 1\n"
                               "q{a=\"b\\\"} 1\n"
                               "q{a=\"b\" 1\n"
                               "q a=\"b\"} 1\n"
                               "q}} 1\n"
                               "q{{a=\"b\"}} 1\n"
                               "q{a=b} 1\n"
                               "e{a=\"\\t\"} 1\n"
                               "e{a=\"\\x\"} 1\n"
                               "u{a=\"\xff\"} 1\n"
                               "u{a=\"\xc0\x80\"} 1\n"
                               "u{a=\"\xed\xa0\x80\"} 1\n"
                               "v abc\n"
                               "v 0x10\n"
                               "v Infinity\n"
                               "v 1 2 3\n"
                               "v 1 99999999999999999999\n"
                               "v 1 9223372036854775808\n"
                               "v{a=\"1\"}1\n"
                               "v\n"
                               "9v 1\n"
                               "d{a=\"1\",a=\"2\"} 1\n"
                               "d{__name__=\"x\"} 1\n"
                               "s{source=\"evil\"} 1\n"
                               "s{a=\"1\",source=\"evil\"} 1\n"
                               "ok 3\n"
                               "ok{m=\"\t\xc3\xa9\",l=\"x\\\\y\\\"z\\nw\"} 4\n"
                               "# HELP hb bad \\t escape\n"
                               "# TYPE tb countr\n"
                               "# TYPE tb counter extra\n"
                               "# HELP 9x text\n"
                               "bel\x07 1\n"
                               "cut 12";
    const char *bodies[] = {body, "ok 5\nok{a=\"1\",b=\"2\"} 1\nok{b=\"2\",a=\"1\"} 1\nv{a=\"1\",} -Inf\n"};
    size_t lens[] = {sizeof body - 1, strlen(bodies[1])};
    struct evbuffer *b = evbuffer_new();
    size_t dropped = 0;
    int rc = eg_prom_merge(names, bodies, lens, 2, b, &dropped);
    char *s = take(b, &len);
    CHECK(rc == 0 && dropped == 37, "hostile lines each dropped and counted (%zu of 37)", dropped);
    int prc = promtool(s, len);
    CHECK(checked(s, len, names, 2, NULL) == 5 && (prc == 0 || prc == 3),
          "the output is strict exposition text, and promtool parses it (exit %d: 3 is its lint, no HELP)", prc);
    CHECK(!strcmp(s, "# TYPE ok untyped\nok{source=\"a\"} 1\n"
                     "ok{source=\"a\",l=\"x\\\\y\\\"z\\nw\",m=\"\t\xc3\xa9\"} 2 1700000000000\n"
                     "ok{source=\"b\"} 5\nok{source=\"b\",a=\"1\",b=\"2\"} 1\n# TYPE v untyped\n"
                     "v{source=\"b\",a=\"1\"} -Inf\n"),
          "what is kept: the lines around, label escapes as given, a trailing comma normalised away; a series "
          "again (also in another label order) dropped");
    free(s);

    /* a 1 MB line between two good ones, and one at the end without '\n' */
    size_t big = 1u << 20;
    char *mb = malloc(big + 64);
    strcpy(mb, "a 1\nbig{x=\"");
    size_t at = strlen(mb);
    memset(mb + at, 'x', big);
    strcpy(mb + at + big, "\"} 1\nb 2\nbig 3");
    const char *one[] = {mb};
    size_t mlen = strlen(mb);
    rc = eg_prom_merge(names, one, &mlen, 1, b, &dropped);
    s = take(b, &len);
    CHECK(rc == 0 && dropped == 2 &&
              !strcmp(s, "# TYPE a untyped\na{source=\"a\"} 1\n# TYPE b untyped\n"
                         "b{source=\"a\"} 2\n"),
          "a 1 MB line and a last line without '\\n' dropped, the lines around kept (%zu)", dropped);
    free(s);
    memset(mb + at, 'y', big); /* the same without any '\n' at all */
    mb[at + big] = 0;
    mlen = strlen(mb + 4);
    one[0] = mb + 4;
    rc = eg_prom_merge(names, one, &mlen, 1, b, &dropped);
    CHECK(rc == 0 && dropped == 1 && evbuffer_get_length(b) == 0, "a 1 MB body without a line feed: one line dropped");
    free(mb);

    /* the line bound exactly: EG_PROM_MAX_LINE bytes with the '\n' kept, one more dropped */
    for (int extra = 0; extra < 2; extra++) {
        size_t total = EG_PROM_MAX_LINE + (size_t)extra;
        char *l = malloc(total + 1);
        memcpy(l, "m{x=\"", 5);
        memset(l + 5, 'z', total - 5 - 5);
        memcpy(l + total - 5, "\"} 1\n", 5);
        l[total] = 0;
        const char *lb[] = {l};
        rc = eg_prom_merge(names, lb, &total, 1, b, &dropped);
        s = take(b, &len);
        CHECK(rc == 0 && dropped == (size_t)extra && (len > 0) == !extra && checked(s, len, names, 1, NULL) == !extra,
              "a line of %zu bytes with its '\\n': %s", total, extra ? "dropped" : "kept");
        free(s);
        free(l);
    }
    evbuffer_free(b);
}

static void test_bounds(void) {
    struct evbuffer *b = evbuffer_new();
    size_t dropped = 7;
    evbuffer_add(b, "before\n", 7);
    /* families: EG_PROM_MAX_FAMILIES fit, one more does not */
    for (int extra = 0; extra < 2; extra++) {
        struct evbuffer *t = evbuffer_new();
        for (int i = 0; i < EG_PROM_MAX_FAMILIES + extra; i++) evbuffer_add_printf(t, "f%d 1\n", i);
        size_t n = evbuffer_get_length(t);
        char *body = take(t, NULL);
        const char *names[] = {"a"}, *bodies[] = {body};
        struct evbuffer *o = evbuffer_new();
        int rc = eg_prom_merge(names, bodies, &n, 1, extra ? b : o, &dropped);
        CHECK(extra ? rc == -1 && evbuffer_get_length(b) == 7 : rc == 0 && dropped == 0, "%d families: %s",
              EG_PROM_MAX_FAMILIES + extra, extra ? "-1, nothing appended" : "merged");
        free(body);
        evbuffer_free(o);
        evbuffer_free(t);
    }
    /* input bytes: EG_PROM_MAX_INPUT in all is merged, one more is not */
    size_t half = EG_PROM_MAX_INPUT / 2;
    char *big = malloc(half + 1);
    memset(big, '\n', half + 1);
    const char *names[] = {"a", "b"}, *bodies[] = {big, big};
    size_t lens[] = {half, half};
    int rc = eg_prom_merge(names, bodies, lens, 2, b, &dropped);
    CHECK(rc == 0 && evbuffer_get_length(b) == 7, "%u bytes in all: merged", EG_PROM_MAX_INPUT);
    lens[1] = half + 1;
    rc = eg_prom_merge(names, bodies, lens, 2, b, &dropped);
    CHECK(rc == -1 && evbuffer_get_length(b) == 7, "one byte more: -1, nothing appended");
    free(big);
    /* wrong arguments */
    const char *one[] = {"x 1\n", "x 1\n"};
    size_t ol[] = {4, 4};
    const char *same[] = {"a", "a"}, *empty[] = {""}, *nul[] = {NULL}, *cr[] = {"a\rb"}, *bad[] = {"\xff"};
    CHECK(eg_prom_merge(same, one, ol, 2, b, NULL) == -1 && eg_prom_merge(empty, one, ol, 1, b, NULL) == -1 &&
              eg_prom_merge(nul, one, ol, 1, b, NULL) == -1 && eg_prom_merge(cr, one, ol, 1, b, NULL) == -1 &&
              eg_prom_merge(bad, one, ol, 1, b, NULL) == -1 && eg_prom_merge(names, one, ol, -1, b, NULL) == -1 &&
              evbuffer_get_length(b) == 7,
          "a name twice, empty, NULL, with a CR, not UTF-8, n < 0: -1, nothing appended");
    CHECK(eg_prom_merge(NULL, NULL, NULL, 0, b, NULL) == 0 && evbuffer_get_length(b) == 7, "no input: empty output");
    /* a source name the format must escape */
    const char *odd[] = {"q\"b\\s\nn"};
    size_t len;
    char *s = merge_str(odd, one, 1, &len);
    CHECK(g_rc == 0 && !strcmp(s, "# TYPE x untyped\nx{source=\"q\\\"b\\\\s\\nn\"} 1\n") &&
              checked(s, len, odd, 1, NULL) == 1,
          "a source name is escaped (\\\" \\\\ \\n)");
    free(s);
    evbuffer_free(b);
}

int main(void) {
    test_real();
    test_rendered();
    test_rendered_odd_codes();
    test_types();
    test_hostile();
    test_bounds();
    return TAP_DONE();
}
