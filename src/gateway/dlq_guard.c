/* dlq_guard.c — the dead-letter flood guard's arithmetic (see dlq_guard.h).
 *
 * Each topic keeps window_s one-second buckets in a ring: bucket i holds the
 * count of second sec[i]; a bucket whose second is not the one asked for is
 * stale and restarts at 0. The window's count at second s is the sum of the
 * buckets of seconds s - window_s + 1 .. s. Topics are a small array,
 * searched linearly: a gateway has a handful of source topics. */
#include "dlq_guard.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eg_guard_topic {
    char *topic;
    int64_t *sec;    /* the second each bucket counts, window_s of them */
    uint64_t *count; /* its count */
    int tripped;
    int64_t tripped_ms;
};

int eg_dlq_guard_init(eg_dlq_guard *g, const eg_dlq_guard_cfg *cfg, eg_dlq_guard_event on_event, void *arg, char *err,
                      size_t errlen) {
    memset(g, 0, sizeof *g);
    if (!(cfg->max_per_second > 0) || cfg->window_s < 1 || cfg->window_s > 3600 || cfg->cooldown_s < 0) {
        snprintf(err, errlen, "dlq_guard: max_per_second must be > 0, window_s 1..3600, cooldown_s >= 0");
        return -1;
    }
    g->cfg = *cfg;
    g->limit = cfg->max_per_second * cfg->window_s;
    g->on_event = on_event;
    g->arg = arg;
    return 0;
}

void eg_dlq_guard_free(eg_dlq_guard *g) {
    for (int i = 0; i < g->ntopics; i++) {
        free(g->topics[i].topic);
        free(g->topics[i].sec);
        free(g->topics[i].count);
    }
    free(g->topics);
    g->topics = NULL;
    g->ntopics = 0;
}

/* The entry of topic, added when new. */
static eg_guard_topic *topic_of(eg_dlq_guard *g, const char *topic) {
    for (int i = 0; i < g->ntopics; i++)
        if (strcmp(g->topics[i].topic, topic) == 0) return &g->topics[i];
    g->topics = eg_xrealloc(g->topics, (size_t)(g->ntopics + 1) * sizeof *g->topics);
    eg_guard_topic *t = &g->topics[g->ntopics++];
    memset(t, 0, sizeof *t);
    t->topic = eg_xstrdup(topic);
    t->sec = eg_xcalloc((size_t)g->cfg.window_s, sizeof *t->sec);
    t->count = eg_xcalloc((size_t)g->cfg.window_s, sizeof *t->count);
    for (int i = 0; i < g->cfg.window_s; i++) t->sec[i] = -1;
    return t;
}

void eg_dlq_guard_watch(eg_dlq_guard *g, const char *topic) { topic_of(g, topic); }

/* The seconds of now_ms, never negative. */
static int64_t second_of(int64_t now_ms) { return now_ms > 0 ? now_ms / 1000 : 0; }

/* The window's count at now_ms. */
static uint64_t window_count(const eg_dlq_guard *g, const eg_guard_topic *t, int64_t now_ms) {
    int64_t s = second_of(now_ms);
    uint64_t n = 0;
    for (int i = 0; i < g->cfg.window_s; i++)
        if (t->sec[i] >= 0 && t->sec[i] > s - g->cfg.window_s && t->sec[i] <= s) n += t->count[i];
    return n;
}

/* Re-arms t when its cooldown passed and the window is back under the limit. */
static void maybe_rearm(eg_dlq_guard *g, eg_guard_topic *t, int64_t now_ms) {
    if (!t->tripped || now_ms - t->tripped_ms < (int64_t)g->cfg.cooldown_s * 1000) return;
    uint64_t n = window_count(g, t, now_ms);
    if ((double)n > g->limit) return;
    t->tripped = 0;
    if (g->on_event) g->on_event(g->arg, t->topic, 0, 0, n);
}

eg_guard_verdict eg_dlq_guard_admit(eg_dlq_guard *g, const char *topic, int64_t now_ms) {
    eg_guard_topic *t = topic_of(g, topic);
    maybe_rearm(g, t, now_ms);
    int64_t s = second_of(now_ms);
    int b = (int)(s % g->cfg.window_s);
    if (t->sec[b] != s) {
        t->sec[b] = s;
        t->count[b] = 0;
    }
    t->count[b]++;
    if (t->tripped) return EG_GUARD_REFUSED;
    uint64_t n = window_count(g, t, now_ms);
    if ((double)n <= g->limit) return EG_GUARD_PASS;
    t->tripped = 1;
    t->tripped_ms = now_ms;
    if (g->on_event) g->on_event(g->arg, t->topic, 1, 0, n);
    return EG_GUARD_TRIP;
}

int eg_dlq_guard_poll(eg_dlq_guard *g, int64_t now_ms) {
    int n = 0;
    for (int i = 0; i < g->ntopics; i++) {
        maybe_rearm(g, &g->topics[i], now_ms);
        n += g->topics[i].tripped;
    }
    return n;
}

int eg_dlq_guard_reset(eg_dlq_guard *g) {
    int n = 0;
    for (int i = 0; i < g->ntopics; i++) {
        eg_guard_topic *t = &g->topics[i];
        for (int k = 0; k < g->cfg.window_s; k++) {
            t->sec[k] = -1;
            t->count[k] = 0;
        }
        if (!t->tripped) continue;
        t->tripped = 0;
        n++;
        if (g->on_event) g->on_event(g->arg, t->topic, 0, 1, 0);
    }
    return n;
}

int eg_dlq_guard_topic(const eg_dlq_guard *g, int i, int64_t now_ms, const char **topic, int *tripped,
                       uint64_t *count) {
    if (i < 0 || i >= g->ntopics) return -1;
    *topic = g->topics[i].topic;
    *tripped = g->topics[i].tripped;
    *count = window_count(g, &g->topics[i], now_ms);
    return 0;
}
