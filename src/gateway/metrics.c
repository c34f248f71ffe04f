/* metrics.c — the Prometheus registry (see metrics.h).
 *
 * Families form a list in registration order; each family's series form a
 * list in creation order, found by comparing label values (families have few
 * series and lookups happen off the hot path). Numbers are written in the
 * shortest of %.15g and %.17g that reads back exactly. */
#include "metrics.h"
#include "json.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct eg_series {
    char *values[EG_METRICS_MAX_LABELS];
    uint64_t counter;
    eg_hist hist;
    struct eg_series *next;
} eg_series;

struct eg_family {
    const char *name, *help;
    eg_metric_type type;
    int nlabels;
    const char *const *label_names;
    const double *bounds;
    int nbounds;
    eg_series *head, *tail;
    int nseries;
    struct eg_family *next;
};

struct eg_registry {
    eg_family *head, *tail;
};

static eg_family *g_target_latency;
/* Series of g_target_latency by the identity of the (literal) status class
 * string, so that the per-attempt observation does no string lookup. */
static struct {
    const char *key;
    eg_hist *hist;
} g_target_cache[8];

eg_registry *eg_registry_new(void) { return eg_xcalloc(1, sizeof(eg_registry)); }

void eg_registry_free(eg_registry *r) {
    if (!r) return;
    eg_family *f = r->head;
    while (f) {
        eg_family *fn = f->next;
        eg_series *s = f->head;
        while (s) {
            eg_series *sn = s->next;
            for (int i = 0; i < f->nlabels; i++) free(s->values[i]);
            free(s);
            s = sn;
        }
        free(f);
        f = fn;
    }
    free(r);
}

eg_family *eg_family_new(eg_registry *r, const char *name, const char *help, eg_metric_type type, int nlabels,
                         const char *const *label_names, const double *bounds, int nbounds) {
    eg_family *f = eg_xcalloc(1, sizeof *f);
    f->name = name;
    f->help = help;
    f->type = type;
    f->nlabels = nlabels < 0 ? 0 : nlabels > EG_METRICS_MAX_LABELS ? EG_METRICS_MAX_LABELS : nlabels;
    f->label_names = label_names;
    f->bounds = bounds;
    f->nbounds = nbounds > EG_METRICS_MAX_BUCKETS ? EG_METRICS_MAX_BUCKETS : nbounds;
    if (r->tail) r->tail->next = f;
    else r->head = f;
    r->tail = f;
    return f;
}

/* Finds or creates the series for values; past the cap, the overflow series. */
static eg_series *series(eg_family *f, const char *const *values) {
    static const char *const overflow[EG_METRICS_MAX_LABELS] = {"_overflow", "_overflow", "_overflow"};
    for (int pass = 0; pass < 2; pass++) {
        for (eg_series *s = f->head; s; s = s->next) {
            int same = 1;
            for (int i = 0; i < f->nlabels && same; i++) same = strcmp(s->values[i], values[i] ? values[i] : "") == 0;
            if (same) return s;
        }
        if (f->nseries < EG_METRICS_MAX_SERIES - 1 || (pass == 1 && f->nseries < EG_METRICS_MAX_SERIES)) break;
        values = overflow;
    }
    eg_series *s = eg_xcalloc(1, sizeof *s);
    for (int i = 0; i < f->nlabels; i++) s->values[i] = eg_xstrdup(values[i] ? values[i] : "");
    s->hist.bounds = f->bounds;
    s->hist.nbounds = f->nbounds;
    if (f->tail) f->tail->next = s;
    else f->head = s;
    f->tail = s;
    f->nseries++;
    return s;
}

uint64_t *eg_counter(eg_family *f, const char *const *values) { return &series(f, values)->counter; }

eg_hist *eg_histogram(eg_family *f, const char *const *values) { return &series(f, values)->hist; }

uint64_t eg_family_total(const eg_family *f) {
    uint64_t n = 0;
    if (f->type == EG_MT_COUNTER)
        for (const eg_series *s = f->head; s; s = s->next) n += s->counter;
    return n;
}

void eg_hist_observe(eg_hist *h, double v) {
    if (isnan(v)) return;
    int i = 0;
    while (i < h->nbounds && v > h->bounds[i]) i++;
    if (i < h->nbounds) h->buckets[i]++;
    h->count++;
    h->sum += v;
}

/* Appends a label value escaped per the exposition format, as text a
 * strict reader takes: backslash, double quote and newline escaped, other
 * control bytes as '?', a byte that does not start well-formed UTF-8 (a
 * policy's class cut mid-character, bytes of a record) as U+FFFD. */
static void put_label_value(struct evbuffer *out, const char *v) {
    const unsigned char *p = (const unsigned char *)v;
    size_t left = strlen(v);
    while (left) {
        size_t k = eg_utf8_seq(p, left);
        if (*p == '\\') evbuffer_add(out, "\\\\", 2);
        else if (*p == '"') evbuffer_add(out, "\\\"", 2);
        else if (*p == '\n') evbuffer_add(out, "\\n", 2);
        else if (*p < 0x20 || *p == 0x7f) evbuffer_add(out, "?", 1);
        else if (k) evbuffer_add(out, p, k);
        else evbuffer_add(out, "\xef\xbf\xbd", 3);
        if (!k) k = 1;
        p += k;
        left -= k;
    }
}

/* Appends {a="x",b="y"[,extra_name="extra_value"]}, or nothing when empty. */
static void put_labels(struct evbuffer *out, int n, const char *const *names, const char *const *values,
                       const char *extra_name, const char *extra_value) {
    if (n == 0 && !extra_name) return;
    evbuffer_add(out, "{", 1);
    for (int i = 0; i < n; i++) {
        evbuffer_add_printf(out, "%s%s=\"", i ? "," : "", names[i]);
        put_label_value(out, values[i] ? values[i] : "");
        evbuffer_add(out, "\"", 1);
    }
    if (extra_name) {
        evbuffer_add_printf(out, "%s%s=\"", n ? "," : "", extra_name);
        put_label_value(out, extra_value);
        evbuffer_add(out, "\"", 1);
    }
    evbuffer_add(out, "}", 1);
}

/* The shortest of %.15g / %.17g that reads back as v. */
static void fmt_number(char *buf, size_t len, double v) {
    if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    snprintf(buf, len, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, len, "%.17g", v);
}

static void put_number(struct evbuffer *out, double v) {
    char buf[40];
    fmt_number(buf, sizeof buf, v);
    evbuffer_add_printf(out, "%s", buf);
}

void eg_metric_header(struct evbuffer *out, const char *name, const char *help, const char *type) {
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void eg_metric_sample(struct evbuffer *out, const char *name, int nlabels, const char *const *label_names,
                      const char *const *label_values, double value) {
    evbuffer_add_printf(out, "%s", name);
    put_labels(out, nlabels, label_names, label_values, NULL, NULL);
    evbuffer_add(out, " ", 1);
    put_number(out, value);
    evbuffer_add(out, "\n", 1);
}

static void render_hist(struct evbuffer *out, const eg_family *f, const eg_series *s) {
    const char *const *vals = (const char *const *)s->values;
    uint64_t cum = 0;
    char le[40];
    for (int i = 0; i <= f->nbounds; i++) {
        if (i < f->nbounds) {
            cum += s->hist.buckets[i];
            fmt_number(le, sizeof le, f->bounds[i]);
        } else {
            cum = s->hist.count;
            snprintf(le, sizeof le, "+Inf");
        }
        evbuffer_add_printf(out, "%s_bucket", f->name);
        put_labels(out, f->nlabels, f->label_names, vals, "le", le);
        evbuffer_add_printf(out, " %llu\n", (unsigned long long)cum);
    }
    evbuffer_add_printf(out, "%s_sum", f->name);
    put_labels(out, f->nlabels, f->label_names, vals, NULL, NULL);
    evbuffer_add(out, " ", 1);
    put_number(out, s->hist.sum);
    evbuffer_add_printf(out, "\n%s_count", f->name);
    put_labels(out, f->nlabels, f->label_names, vals, NULL, NULL);
    evbuffer_add_printf(out, " %llu\n", (unsigned long long)s->hist.count);
}

void eg_registry_render(const eg_registry *r, struct evbuffer *out) {
    for (const eg_family *f = r->head; f; f = f->next) {
        eg_metric_header(out, f->name, f->help, f->type == EG_MT_HISTOGRAM ? "histogram" : "counter");
        for (const eg_series *s = f->head; s; s = s->next) {
            if (f->type == EG_MT_HISTOGRAM) {
                render_hist(out, f, s);
                continue;
            }
            evbuffer_add_printf(out, "%s", f->name);
            put_labels(out, f->nlabels, f->label_names, (const char *const *)s->values, NULL, NULL);
            evbuffer_add_printf(out, " %llu\n", (unsigned long long)s->counter);
        }
    }
}

void eg_metrics_install_target_latency(eg_family *f) {
    g_target_latency = f;
    memset(g_target_cache, 0, sizeof g_target_cache);
}

void eg_metrics_observe_target(const char *status_class, double seconds) {
    if (!g_target_latency) return;
    size_t n = sizeof g_target_cache / sizeof g_target_cache[0], i = 0;
    while (i < n && g_target_cache[i].key && g_target_cache[i].key != status_class) i++;
    eg_hist *h;
    if (i < n && g_target_cache[i].key) {
        h = g_target_cache[i].hist;
    } else {
        const char *v[1] = {status_class};
        h = eg_histogram(g_target_latency, v);
        if (i < n) {
            g_target_cache[i].key = status_class;
            g_target_cache[i].hist = h;
        }
    }
    eg_hist_observe(h, seconds);
}
