/* metrics.h — a small Prometheus registry: counters and histograms with
 * label sets, rendered in the text exposition format (version 0.0.4).
 *
 * A family (name, help, type, label names) holds one series per distinct
 * label-value tuple. A series is created on first use (one allocation, on
 * the failure paths only; the hot path caches the returned pointer) and lives
 * as long as the registry, so pointers to it stay valid. A family holds at
 * most EG_METRICS_MAX_SERIES series: further tuples share one series whose
 * label values are all "_overflow", which keeps memory bounded whatever a
 * policy returns as class or code. Counters are plain integers updated from
 * the event-loop thread only; rendering happens on the same thread.
 *
 * Gauges computed at scrape time (lag, in-flight, info) are written by the
 * caller with eg_metric_header and eg_metric_sample, which escape label
 * values (backslash, double quote, newline). The registry owns its families;
 * eg_registry_free releases everything. */
#ifndef EG_METRICS_H
#define EG_METRICS_H

#include <event2/buffer.h>
#include <stdint.h>

#define EG_METRICS_MAX_SERIES 256
#define EG_METRICS_MAX_LABELS 3
#define EG_METRICS_MAX_BUCKETS 20

typedef enum { EG_MT_COUNTER = 0, EG_MT_HISTOGRAM } eg_metric_type;

typedef struct eg_registry eg_registry;
typedef struct eg_family eg_family;

typedef struct eg_hist {
    uint64_t buckets[EG_METRICS_MAX_BUCKETS]; /* non-cumulative counts per bound */
    uint64_t count;
    double sum;
    const double *bounds; /* the family's upper bounds (borrowed) */
    int nbounds;
} eg_hist;

eg_registry *eg_registry_new(void);
void eg_registry_free(eg_registry *r);

/* Adds a family. label_names has nlabels entries (0..EG_METRICS_MAX_LABELS);
 * bounds (ascending, at most EG_METRICS_MAX_BUCKETS) only for histograms.
 * name, help, label names and bounds must outlive the registry (literals).
 * Returns the family, owned by the registry. */
eg_family *eg_family_new(eg_registry *r, const char *name, const char *help, eg_metric_type type, int nlabels,
                         const char *const *label_names, const double *bounds, int nbounds);

/* The counter of a counter family for the label values (nlabels strings;
 * NULL for an unlabelled family). Never NULL; stable for the registry's life. */
uint64_t *eg_counter(eg_family *f, const char *const *values);
/* The histogram of a histogram family for the label values. Never NULL. */
eg_hist *eg_histogram(eg_family *f, const char *const *values);
void eg_hist_observe(eg_hist *h, double v);
/* The sum of a counter family's series (the overflow series included): the
 * family's total whatever its labels. 0 for a histogram family. */
uint64_t eg_family_total(const eg_family *f);

/* Appends every family, in registration order, with HELP and TYPE lines. */
void eg_registry_render(const eg_registry *r, struct evbuffer *out);

/* Scrape-time helpers: a HELP + TYPE pair, and one sample line. */
void eg_metric_header(struct evbuffer *out, const char *name, const char *help, const char *type);
void eg_metric_sample(struct evbuffer *out, const char *name, int nlabels, const char *const *label_names,
                      const char *const *label_values, double value);

/* Target latency, observed by the target implementations themselves. The
 * gateway installs its histogram family (labels: status_class) once at start
 * and uninstalls it (NULL) before freeing the registry; observing with no
 * family installed does nothing. status_class must be a string literal (its
 * address is the cache key). Loop thread only. */
void eg_metrics_install_target_latency(eg_family *f);
void eg_metrics_observe_target(const char *status_class, double seconds);

#endif
