/* test_metrics.c — the Prometheus registry: exposition lines, label
 * escaping, cumulative histogram buckets, the series cap with its overflow
 * series, a family's total, and the admin token comparison. */
#include "admin.h"
#include "metrics.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* The rendered registry as a fresh NUL-terminated string (caller frees). */
static char *render(eg_registry *r) {
    struct evbuffer *b = evbuffer_new();
    eg_registry_render(r, b);
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    evbuffer_free(b);
    return s;
}

int main(void) {
    static const char *const ln[] = {"class", "code"};
    static const double bounds[] = {0.1, 1};
    eg_registry *r = eg_registry_new();
    eg_family *c = eg_family_new(r, "t_failed_total", "Failures.", EG_MT_COUNTER, 2, ln, NULL, 0);
    eg_family *h = eg_family_new(r, "t_seconds", "Latency.", EG_MT_HISTOGRAM, 0, NULL, bounds, 2);
    const char *v1[2] = {"transient", "a\"b\\c\nd"};
    uint64_t *p = eg_counter(c, v1);
    (*p) += 3;
    CHECK(eg_counter(c, v1) == p, "the same labels give the same series");
    eg_hist *hh = eg_histogram(h, NULL);
    eg_hist_observe(hh, 0.05);
    eg_hist_observe(hh, 0.5);
    eg_hist_observe(hh, 5);
    char *s = render(r);
    CHECK(strstr(s, "# HELP t_failed_total Failures.\n# TYPE t_failed_total counter\n") != NULL, "HELP and TYPE lines");
    CHECK(strstr(s, "t_failed_total{class=\"transient\",code=\"a\\\"b\\\\c\\nd\"} 3\n") != NULL,
          "label values are escaped");
    CHECK(strstr(s, "t_seconds_bucket{le=\"0.1\"} 1\n") != NULL, "first bucket, shortest form");
    CHECK(strstr(s, "t_seconds_bucket{le=\"1\"} 2\n") != NULL, "buckets are cumulative");
    CHECK(strstr(s, "t_seconds_bucket{le=\"+Inf\"} 3\n") != NULL && strstr(s, "t_seconds_count 3\n") != NULL,
          "+Inf bucket and count");
    CHECK(strstr(s, "t_seconds_sum 5.55") != NULL, "sum");
    free(s);
    char code[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(code, sizeof code, "c%d", i);
        const char *v[2] = {"x", code};
        (*eg_counter(c, v))++;
    }
    s = render(r);
    int lines = 0;
    for (char *q = s; (q = strstr(q, "\nt_failed_total{")) != NULL; q++) lines++;
    CHECK(lines == EG_METRICS_MAX_SERIES, "series are capped (%d)", lines);
    CHECK(strstr(s, "t_failed_total{class=\"_overflow\",code=\"_overflow\"} ") != NULL, "overflow series");
    free(s);
    CHECK(eg_family_total(c) == 1003, "a family's total counts every series, overflow included (%llu)",
          (unsigned long long)eg_family_total(c));
    CHECK(eg_family_total(h) == 0, "a histogram family has no counter total");
    eg_registry_free(r);

    CHECK(eg_token_equal("secret", 6, "secret", 6), "token: equal");
    CHECK(!eg_token_equal("secret", 6, "secreT", 6), "token: one byte differs");
    CHECK(!eg_token_equal("secret", 6, "secre", 5), "token: prefix");
    CHECK(!eg_token_equal("secret", 6, "secretx", 7), "token: longer");
    CHECK(!eg_token_equal("", 0, "", 0), "token: empty never matches");
    return TAP_DONE();
}
