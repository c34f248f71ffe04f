/* gw_admin.c — what `errgate run` shows about itself: the metrics registry
 * and its scrape-time gauges, the admin views (/readyz, /policy, /lanes),
 * librdkafka statistics (consumer lag) and the end-of-run summary, which
 * reads the registry (each statistic is counted once, there). (The reload
 * path POST /reload shares with SIGHUP and the file watch is gw_reload.c.)
 * Metrics are declared as tables: the families the loop updates
 * (families[]) and the series computed at scrape time (part_gauges[],
 * target_gauges[], spill_gauges[]).
 *
 * The admin endpoint runs on the loop's event base, so these handlers read
 * the gateway's state between two events without locks. Per-record paths
 * bump plain integers through pointers cached in the partition; labelled
 * series are looked up only on failure paths. */
#include "gw.h"
#include "log.h"
#include "redact.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (int)(sizeof a / sizeof a[0])

/* Splits "name@version" into its parts (version "" when absent). */
static void policy_name_version(const eg_policy *p, char *name, size_t nlen, char *ver, size_t vlen) {
    const char *id = eg_policy_id(p);
    const char *at = strchr(id, '@');
    size_t n = at ? (size_t)(at - id) : strlen(id);
    if (n >= nlen) n = nlen - 1;
    memcpy(name, id, n);
    name[n] = '\0';
    eg_strlcpy(ver, at ? at + 1 : "", vlen);
}

/* librdkafka statistics (served by the consumer poll, on the loop thread):
 * picks each partition's consumer_lag and fetch_state, then lets the fetch
 * watch (gw_unstarted.c) act on the states. A flat scan keyed on the last seen
 * "topic" and "partition" fields; bounded by the JSON's length. Returns 0
 * so that librdkafka frees the JSON. */
int eg_gw_on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    eg_gw *gw = opaque;
    if (!pthread_equal(pthread_self(), gw->loop_thread) || gw->closed) return 0;
    char topic[256] = "";
    long long partition = -1;
    const char *end = json + len;
    for (const char *q = memchr(json, '"', len); q && q < end; q = memchr(q + 1, '"', (size_t)(end - q - 1))) {
        size_t rest = (size_t)(end - q);
        if (rest > 9 && memcmp(q, "\"topic\":\"", 9) == 0) {
            const char *v = q + 9, *e = memchr(v, '"', (size_t)(end - v));
            if (!e) break;
            size_t n = (size_t)(e - v) < sizeof topic - 1 ? (size_t)(e - v) : sizeof topic - 1;
            memcpy(topic, v, n);
            topic[n] = '\0';
            q = e;
        } else if (rest > 12 && memcmp(q, "\"partition\":", 12) == 0) {
            partition = strtoll(q + 12, NULL, 10);
        } else if (rest > 15 && memcmp(q, "\"fetch_state\":\"", 15) == 0) {
            const char *v = q + 15, *e = memchr(v, '"', (size_t)(end - v));
            if (!e) break;
            eg_part *p =
                partition >= 0 && partition <= INT32_MAX ? eg_gw_part_find(gw, topic, (int32_t)partition) : NULL;
            if (p) eg_gw_fetch_state(p, v, (size_t)(e - v));
            q = e;
        } else if (rest > 15 && memcmp(q, "\"consumer_lag\":", 15) == 0) {
            long long lag = strtoll(q + 15, NULL, 10);
            if (partition >= 0 && partition <= INT32_MAX) {
                eg_part *p = eg_gw_part_find(gw, topic, (int32_t)partition);
                if (p) p->consumer_lag = lag;
            }
        }
        if (q + 1 >= end) break;
    }
    eg_gw_fetchwatch(gw);
    return 0;
}

/* Readiness (see admin.h): false before the first assignment, while
 * stopping, and while lane writes have been failing for too long. */
static int gw_ready(void *arg, char *why, size_t whylen) {
    eg_gw *gw = arg;
    if (gw->stopping) {
        eg_strlcpy(why, "stopping", whylen);
        return 0;
    }
    if (!eg_gw_incident_ready(gw, why, whylen)) return 0;
    if (!gw->assigned_once) {
        eg_strlcpy(why, "no partition assignment yet", whylen);
        return 0;
    }
    int64_t failing = gw->lane_failing_since_ms ? eg_now_ms() - gw->lane_failing_since_ms : 0;
    if (gw->lane_failing && failing > gw->cfg->ready_lane_failure_ms) {
        snprintf(why, whylen, "lane writes failing for %lld ms (%d records)", (long long)failing, gw->lane_failing);
        return 0;
    }
    return 1;
}

/* Records waiting for a write to lane topic `topic` (in flight or backing off). */
static int lane_pending(eg_gw *gw, const char *topic) {
    int n = 0;
    for (eg_record *r = gw->all; r; r = r->anext) {
        if (r->state != EG_RS_LANE_WRITE && r->state != EG_RS_LANE_BACKOFF) continue;
        const eg_decision *d = &r->fail->decision;
        if (strcmp(eg_lanes_topic(gw->lanes, (eg_lane)eg_lane_of(d->action), r->part->origin, d->rung), topic) == 0)
            n++;
    }
    return n;
}

/* Scrape-time series, each a table of (name, type, help, getter): per
 * assigned partition (labels topic, partition; a getter returning < 0
 * skips the partition), per target (label target), and of the spill
 * journal and its drainer (a uint64_t field of their statistics). */
typedef struct part_gauge {
    const char *name, *type, *help;
    double (*get)(eg_gw *gw, const eg_part *p);
} part_gauge;

typedef struct target_gauge {
    const char *name, *type, *help;
    double (*get)(eg_gw *gw);
} target_gauge;

typedef struct spill_gauge {
    const char *name, *type, *help;
    int drainer; /* 1: a field of eg_spill_drain_stats, 0: of eg_spill_stats */
    size_t off;  /* of that uint64_t field */
} spill_gauge;

static double committed_offset_lag(eg_gw *gw, const eg_part *p) {
    int64_t lo = 0, hi = 0;
    if (rd_kafka_get_watermark_offsets(gw->rk, p->topic, p->partition, &lo, &hi) != 0 || hi < 0) return -1;
    int64_t base = p->committed >= 0 ? p->committed : lo;
    return (double)(hi > base ? hi - base : 0);
}
static double tracked_offsets(eg_gw *gw, const eg_part *p) { return (double)eg_tracker_pending(&p->trk); }
static double consumer_lag(eg_gw *gw, const eg_part *p) { return p->consumer_lag < 0 ? -1 : (double)p->consumer_lag; }
static double blocked_seconds(eg_gw *gw, const eg_part *p) { /* the block in progress counts too */
    int64_t since = p->blocked_since_ms;
    return (double)(p->blocked_ms + (since ? eg_now_ms() - since : 0)) / 1000.0;
}

static const part_gauge part_gauges[] = {
    {"errgate_committed_offset_lag", "gauge", "High watermark minus the committed offset, per assigned partition.",
     committed_offset_lag},
    {"errgate_tracked_offsets", "gauge", "Offsets tracked per assigned partition (oldest unfinished to newest read).",
     tracked_offsets},
    {"errgate_consumer_lag", "gauge", "Consumer lag per assigned partition, from librdkafka statistics.", consumer_lag},
    {"errgate_partition_blocked_seconds_total", "counter",
     "Time an assigned partition spent paused behind a failing record (hold, in-place retry under partition "
     "ordering, failing lane write, stop, operator pause; not a rung's wait for its due time), since its assignment.",
     blocked_seconds},
};

static double breaker_state(eg_gw *gw) { return eg_breaker_poll(&gw->breaker, eg_now_ms()); }
static double retries_active(eg_gw *gw) { return (double)gw->budgets.retries; }
static double retry_budget_limit(eg_gw *gw) { return (double)eg_budget_limit(eg_budgets_at(&gw->budgets, 0)); }
static double retry_budget_refused(eg_gw *gw) { return (double)gw->budgets.refused; }
static double retry_budget_keys(eg_gw *gw) { return (double)gw->budgets.nkeys; }
static double retry_budget_evicted(eg_gw *gw) { return (double)gw->budgets.evicted; }
static double retry_budget_overflowed(eg_gw *gw) { return (double)gw->budgets.overflowed; }
static double rate_wait_seconds(eg_gw *gw) { /* the wait in progress counts too */
    int64_t since = gw->limits.wait_since_ns;
    return gw->limits.wait_s + (since ? (double)(eg_now_ns() - since) / 1e9 : 0);
}
static double rate_per_second(eg_gw *gw) { return gw->limits.rate ? gw->limits.bucket.rate : 0; }
static double concurrency_limit(eg_gw *gw) {
    if (gw->limits.adaptive) return eg_aimd_limit(&gw->limits.aimd);
    return gw->cfg->target_kind == EG_TARGET_HTTP ? gw->cfg->http_concurrency : -1;
}

static const target_gauge target_gauges[] = {
    {"errgate_breaker_state", "gauge",
     "Circuit breaker state per target: 0 closed, 1 open, 2 half-open (always 0 when disabled).", breaker_state},
    {"errgate_retries_active", "gauge", "In-place retries waiting or in the target (counted against the retry budget).",
     retries_active},
    {"errgate_retry_budget_limit", "gauge", "In-place retries the budget allows now (-1: no budget).",
     retry_budget_limit},
    {"errgate_retry_budget_refused_total", "counter",
     "Retry decisions refused by the retry budget (escalated to a ladder or a hold).", retry_budget_refused},
    {"errgate_retry_budget_keys", "gauge", "Keys with a retry budget of their own (target.retry_budget.key).",
     retry_budget_keys},
    {"errgate_retry_budget_key_evictions_total", "counter",
     "Idle keys whose budget was forgotten for a new key (max_keys reached).", retry_budget_evicted},
    {"errgate_retry_budget_key_overflow_total", "counter",
     "Lookups of a new key that found every tracked key busy and counted in the shared key \"*\".",
     retry_budget_overflowed},
    {"errgate_target_rate_wait_seconds_total", "counter",
     "Time records waited for the target's rate limit (target.rate), in seconds.", rate_wait_seconds},
    {"errgate_target_rate_per_second", "gauge", "The target's rate limit (target.rate.per_second; 0: none).",
     rate_per_second},
    {"errgate_target_concurrency_limit", "gauge",
     "Attempts that may be in the target at once: the adaptive limit (target.adaptive), else the target's "
     "concurrency (-1: none).",
     concurrency_limit},
};

#define JOURNAL(field) 0, offsetof(eg_spill_stats, field)
#define DRAINER(field) 1, offsetof(eg_spill_drain_stats, field)
static const spill_gauge spill_gauges[] = {
    {"errgate_spill_bytes_pending", "gauge", "Bytes in the spill journal's segments.", JOURNAL(bytes_pending)},
    {"errgate_spill_segments", "gauge", "Segments in the spill journal.", JOURNAL(segments)},
    {"errgate_spill_frames_drained_total", "counter", "Journal records delivered to their lane by the drainer.",
     DRAINER(frames_drained)},
    {"errgate_spill_drain_failures_total", "counter", "Failed deliveries of journal records (each retried).",
     DRAINER(frames_failed)},
    {"errgate_spill_corrupt_frames_total", "counter", "Corrupt or torn journal frames met (reported, never applied).",
     DRAINER(corrupt_frames)},
    {"errgate_spill_frames_refused_total", "counter",
     "Journal records Kafka refused for good: sent as stubs, or set aside when refused again.",
     DRAINER(frames_refused)},
    {"errgate_spill_frames_set_aside_total", "counter",
     "Journal records whose stub was refused too, kept in *.eg.refused files.", DRAINER(frames_set_aside)},
    {"errgate_spill_drain_producer_replaced_total", "counter",
     "Spill drain producers replaced after a fatal error (at most 3 in 10 minutes; then the drainer stops).",
     DRAINER(producers_replaced)},
};

/* GET /metrics: the registry, then the scrape-time series. */
static void gw_metrics(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    eg_gw_fetchwake_sync(gw->fetchwake);
    eg_registry_render(gw->reg, out);
    char pbuf[16], name[128], ver[128], target[512];
    eg_metric_header(out, "errgate_inflight_records", "Records consumed and not yet finished.", "gauge");
    eg_metric_sample(out, "errgate_inflight_records", 0, NULL, NULL, gw->unfinished);
    static const char *const tp[] = {"topic", "partition"};
    for (int i = 0; i < NELEM(part_gauges); i++) {
        const part_gauge *g = &part_gauges[i];
        eg_metric_header(out, g->name, g->help, g->type);
        for (eg_part *p = gw->parts; p; p = p->next) {
            double v = g->get(gw, p);
            if (v < 0) continue;
            snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
            const char *lv[2] = {p->topic, pbuf};
            eg_metric_sample(out, g->name, 2, tp, lv, v);
        }
    }
    const char *t = gw->cfg->target_kind == EG_TARGET_HTTP ? gw->cfg->http_url : gw->cfg->lua_target;
    eg_redact(t, strlen(t), target, sizeof target);
    static const char *const tl[] = {"target"};
    const char *tv[1] = {target};
    for (int i = 0; i < NELEM(target_gauges); i++) {
        const target_gauge *g = &target_gauges[i];
        eg_metric_header(out, g->name, g->help, g->type);
        eg_metric_sample(out, g->name, 1, tl, tv, g->get(gw));
    }
    policy_name_version(gw->policy, name, sizeof name, ver, sizeof ver);
    static const char *const pl[] = {"name", "version"};
    const char *pv[2] = {name, ver};
    eg_metric_header(out, "errgate_policy_info", "The policy deciding now (always 1).", "gauge");
    eg_metric_sample(out, "errgate_policy_info", 2, pl, pv, 1);
    /* pipeline and stage: one info series to join on (job, instance), not two labels on every series */
    static const char *const il[] = {"pipeline", "stage"};
    static const char *const kinds[] = {"http", "lua", "inbox"};
    const char *iv[2] = {gw->cfg->metrics_pipeline ? gw->cfg->metrics_pipeline : gw->cfg->group,
                         gw->cfg->metrics_stage ? gw->cfg->metrics_stage : kinds[gw->cfg->target_kind]};
    eg_metric_header(out, "errgate_pipeline_info",
                     "The pipeline and stage this gateway serves (metrics.pipeline, metrics.stage; always 1).",
                     "gauge");
    eg_metric_sample(out, "errgate_pipeline_info", 2, il, iv, 1);
    eg_metric_header(out, "errgate_dead_letter_ratio_threshold",
                     "Dead letters per consumed record above which ErrgateDeadLetterRatio fires "
                     "(metrics.dead_letter_ratio).",
                     "gauge");
    eg_metric_sample(out, "errgate_dead_letter_ratio_threshold", 0, NULL, NULL, gw->cfg->metrics_dead_letter_ratio);
    eg_metric_header(out, "errgate_policy_loaded_timestamp_seconds", "When the current policy was loaded.", "gauge");
    eg_metric_sample(out, "errgate_policy_loaded_timestamp_seconds", 0, NULL, NULL,
                     (double)eg_policy_loaded_at(gw->policy) / 1000.0);
    eg_metric_header(out, "errgate_lane_pending_records",
                     "Records waiting for their lane write (in flight or backing off), per lane topic.", "gauge");
    static const char *const ll[] = {"lane"};
    eg_lane_stats ls;
    for (int i = 0; eg_lanes_stats(gw->lanes, i, &ls) == 0; i++) {
        const char *lv[1] = {ls.topic};
        eg_metric_sample(out, "errgate_lane_pending_records", 1, ll, lv, lane_pending(gw, ls.topic));
    }
    eg_metric_header(out, "errgate_lane_producer_replaced_total",
                     "Lane producers replaced in place after a fatal error (at most 3 in 10 minutes; one more stops "
                     "the gateway).",
                     "counter");
    eg_metric_sample(out, "errgate_lane_producer_replaced_total", 0, NULL, NULL, (double)eg_lanes_replaced(gw->lanes));
    if (gw->spill) {
        eg_spill_stats js;
        eg_spill_drain_stats ds;
        eg_spill_stats_get(gw->spill, &js);
        eg_spill_drain_stats_get(gw->drain, &ds);
        for (int i = 0; i < NELEM(spill_gauges); i++) {
            const spill_gauge *g = &spill_gauges[i];
            const char *st = g->drainer ? (const char *)&ds : (const char *)&js;
            uint64_t v;
            memcpy(&v, st + g->off, sizeof v);
            eg_metric_header(out, g->name, g->help, g->type);
            eg_metric_sample(out, g->name, 0, NULL, NULL, (double)v);
        }
    }
    eg_gw_incident_metrics(gw, out);
    eg_gw_fence_metrics(gw, out);
    char why[256];
    eg_metric_header(out, "errgate_ready", "1 when /readyz answers ready.", "gauge");
    eg_metric_sample(out, "errgate_ready", 0, NULL, NULL, gw_ready(gw, why, sizeof why));
}

static void gw_policy_json(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    char name[128], ver[128], ts[40];
    policy_name_version(gw->policy, name, sizeof name, ver, sizeof ver);
    evbuffer_add_printf(out, "{\"name\":");
    eg_json_str(out, name);
    evbuffer_add_printf(out, ",\"version\":");
    eg_json_str(out, ver);
    evbuffer_add_printf(out, ",\"id\":");
    eg_json_str(out, eg_policy_id(gw->policy));
    evbuffer_add_printf(out, ",\"path\":");
    eg_json_str(out, eg_policy_path(gw->policy));
    evbuffer_add_printf(out, ",\"sha256\":");
    eg_json_str(out, eg_policy_sha256(gw->policy));
    eg_rfc3339(eg_policy_loaded_at(gw->policy), ts, sizeof ts);
    evbuffer_add_printf(out, ",\"loaded_at\":");
    eg_json_str(out, ts);
    evbuffer_add_printf(out, ",\"loaded_at_ms\":%lld", (long long)eg_policy_loaded_at(gw->policy));
    evbuffer_add_printf(out, ",\"last_reload_attempt_ms\":");
    if (gw->last_reload_ms) evbuffer_add_printf(out, "%lld", (long long)gw->last_reload_ms);
    else evbuffer_add_printf(out, "null");
    evbuffer_add_printf(out, ",\"last_reload_error\":");
    if (gw->last_reload_error[0]) eg_json_str(out, gw->last_reload_error);
    else evbuffer_add_printf(out, "null");
    evbuffer_add_printf(out, "}");
}

static void gw_lanes_json(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    evbuffer_add_printf(out, "{\"lanes\":[");
    eg_lane_stats ls;
    for (int i = 0; eg_lanes_stats(gw->lanes, i, &ls) == 0; i++) {
        evbuffer_add_printf(out, "%s{\"topic\":", i ? "," : "");
        eg_json_str(out, ls.topic);
        evbuffer_add_printf(out, ",\"lane\":\"%s\",\"written\":%llu,\"failed\":%llu,\"pending\":%d}",
                            eg_lane_name(ls.lane), (unsigned long long)ls.written, (unsigned long long)ls.failed,
                            lane_pending(gw, ls.topic));
    }
    evbuffer_add_printf(out, "]}");
}

/* The families the loop updates, in exposition order: name, type, help,
 * labels (and bucket bounds for a histogram), and where the gateway keeps
 * it: the family itself (FAM), or the one counter of an unlabelled counter
 * family (CTR), at that field of gw->m. */
typedef struct family_def {
    const char *name;
    eg_metric_type type;
    const char *help;
    int nlabels;
    const char *const *labels;
    const double *bounds;
    int nbounds;
    size_t off;  /* offsetof(eg_gw_metrics, field) */
    int counter; /* 1: the field is a uint64_t *, 0: an eg_family * */
} family_def;

#define LABELS(a) NELEM(a), a
#define NO_LABELS 0, NULL
#define BOUNDS(b) b, NELEM(b)
#define NO_BOUNDS NULL, 0
#define FAM(field) offsetof(eg_gw_metrics, field), 0
#define CTR(field) offsetof(eg_gw_metrics, field), 1

static const char *const l_topic[] = {"topic"};
static const char *const l_cc[] = {"class", "code"};
static const char *const l_lr[] = {"lane", "reason"};
static const char *const l_lane[] = {"lane"};
static const char *const l_lane_err[] = {"lane", "error"};
static const char *const l_status[] = {"status_class"};
static const char *const l_result[] = {"result"};
static const char *const l_to[] = {"to"};
static const double dec_b[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                               0.0025,  0.005,    0.01,    0.025,  0.05,    0.1};
static const double tgt_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

static const family_def families[] = {
    {"errgate_records_received_total", EG_MT_COUNTER, "Records consumed, by source topic.", LABELS(l_topic), NO_BOUNDS,
     FAM(received)},
    {"errgate_records_processed_total", EG_MT_COUNTER,
     "Records finished with a durable outcome (success, lane write, ignore), by source topic.", LABELS(l_topic),
     NO_BOUNDS, FAM(processed)},
    {"errgate_records_succeeded_total", EG_MT_COUNTER, "Records the target accepted.", NO_LABELS, NO_BOUNDS,
     CTR(succeeded)},
    {"errgate_records_failed_total", EG_MT_COUNTER, "Failed target attempts, by the class and code the policy gave.",
     LABELS(l_cc), NO_BOUNDS, FAM(failed)},
    {"errgate_records_retried_total", EG_MT_COUNTER, "In-place retries decided.", NO_LABELS, NO_BOUNDS, CTR(retried)},
    {"errgate_records_retry_exhausted_total", EG_MT_COUNTER, "Decisions taken because the retries were exhausted.",
     NO_LABELS, NO_BOUNDS, CTR(exhausted)},
    {"errgate_records_dead_lettered_total", EG_MT_COUNTER,
     "Records written to a DLQ lane (acknowledged), by lane topic and reason.", LABELS(l_lr), NO_BOUNDS, FAM(dead)},
    {"errgate_records_quarantined_total", EG_MT_COUNTER,
     "Records written to a quarantine lane (acknowledged), by lane topic and reason.", LABELS(l_lr), NO_BOUNDS,
     FAM(quarantined)},
    {"errgate_records_laddered_total", EG_MT_COUNTER,
     "Records written to a retry rung (acknowledged), by rung topic and reason.", LABELS(l_lr), NO_BOUNDS,
     FAM(laddered)},
    {"errgate_records_spilled_total", EG_MT_COUNTER,
     "Lane records written to the spill journal instead (durable; drained later), by lane topic.", LABELS(l_lane),
     NO_BOUNDS, FAM(spilled)},
    {"errgate_records_ignored_total", EG_MT_COUNTER, "Records ignored by decision.", NO_LABELS, NO_BOUNDS,
     CTR(ignored)},
    {"errgate_records_held_total", EG_MT_COUNTER, "Hold decisions.", NO_LABELS, NO_BOUNDS, CTR(held)},
    {"errgate_stop_decisions_total", EG_MT_COUNTER, "Stop decisions.", NO_LABELS, NO_BOUNDS, CTR(stops)},
    {"errgate_policy_fallbacks_total", EG_MT_COUNTER, "Decisions where the policy failed and the fallback applied.",
     NO_LABELS, NO_BOUNDS, CTR(fallbacks)},
    {"errgate_records_poison_total", EG_MT_COUNTER,
     "Poison records: dead-lettered or quarantined at their first failure, never retried nor laddered, by source "
     "topic.",
     LABELS(l_topic), NO_BOUNDS, FAM(poison)},
    {"errgate_records_recovered_total", EG_MT_COUNTER,
     "Records the target accepted after failing before (retried in place, from a rung, or replayed), by source topic.",
     LABELS(l_topic), NO_BOUNDS, FAM(recovered)},
    {"errgate_records_dead_lettered_by_topic_total", EG_MT_COUNTER,
     "Records written to a DLQ lane (acknowledged), by source topic: the numerator of the dead-letter ratio.",
     LABELS(l_topic), NO_BOUNDS, FAM(dead_by_topic)},
    {"errgate_lane_write_failures_total", EG_MT_COUNTER, "Failed lane writes, by lane topic.", LABELS(l_lane),
     NO_BOUNDS, FAM(lane_failures)},
    {"errgate_lane_refusals_total", EG_MT_COUNTER,
     "Lane writes Kafka refused for good (never spilled), by lane topic and error.", LABELS(l_lane_err), NO_BOUNDS,
     FAM(lane_refusals)},
    {"errgate_lane_values_omitted_total", EG_MT_COUNTER,
     "Records too large for their lane written as stubs (errgate.value-omitted).", LABELS(l_lane), NO_BOUNDS,
     FAM(lane_stubs)},
    {"errgate_commits_total", EG_MT_COUNTER, "Successful offset commits.", NO_LABELS, NO_BOUNDS, CTR(commits)},
    {"errgate_commit_failures_total", EG_MT_COUNTER, "Failed offset commits.", NO_LABELS, NO_BOUNDS,
     CTR(commit_failures)},
    {"errgate_payload_unprotectable_total", EG_MT_COUNTER,
     "DLQ or quarantine payloads that could not be protected as asked (not JSON for mask, no paths, no key) and "
     "were written as a pointer or encrypted instead (errgate.protect says which).",
     NO_LABELS, NO_BOUNDS, CTR(payload_unprotectable)},
    {"errgate_source_claims_refused_total", EG_MT_COUNTER,
     "Source records whose errgate.id or original.* headers were not signed by an errgate replay (taken away).",
     NO_LABELS, NO_BOUNDS, CTR(claims_refused)},
    {"errgate_bad_ids_total", EG_MT_COUNTER, "Source records whose errgate.id header was malformed (ignored).",
     NO_LABELS, NO_BOUNDS, CTR(bad_ids)},
    {"errgate_tracker_full_total", EG_MT_COUNTER, "Times a partition stopped being read at source.max_tracked.",
     NO_LABELS, NO_BOUNDS, CTR(tracker_full)},
    {"errgate_excluded_partitions_total", EG_MT_COUNTER,
     "Assigned partitions of lane-shaped topics not consumed as source.", NO_LABELS, NO_BOUNDS, CTR(excluded_topics)},
    {"errgate_group_rejoins_total", EG_MT_COUNTER,
     "Times the gateway rejoined its group because an assignment left a subscribed topic unowned.", NO_LABELS,
     NO_BOUNDS, CTR(rejoins)},
    {"errgate_fetch_restarts_total", EG_MT_COUNTER,
     "Times the gateway assigned its partitions again because librdkafka never started fetching one.", NO_LABELS,
     NO_BOUNDS, CTR(fetch_restarts)},
    {"errgate_source_offset_gaps_total", EG_MT_COUNTER,
     "Source messages whose offset jumped past the next one expected, taken as a gap the log holds nothing in "
     "(compaction, transaction markers, aborted transactions: each is logged as source_offset_gap).",
     NO_LABELS, NO_BOUNDS, CTR(offset_gaps)},
    {"errgate_source_offset_probes_total", EG_MT_COUNTER,
     "Jumps in a source partition's offsets fetched again from the offset expected before being taken as gaps "
     "(source_offset_probe).",
     NO_LABELS, NO_BOUNDS, CTR(offset_probes)},
    {"errgate_source_offset_refetched_total", EG_MT_COUNTER,
     "Probes that found records the consumer had skipped and the log holds: taken then, never committed over "
     "(source_offset_refetched).",
     NO_LABELS, NO_BOUNDS, CTR(offset_refetched)},
    {"errgate_source_offset_behind_total", EG_MT_COUNTER,
     "Source messages below the last offset taken from their partition, dropped as already seen.", NO_LABELS, NO_BOUNDS,
     CTR(offset_behind)},
    {"errgate_fetch_wakeups_total", EG_MT_COUNTER,
     "Times the gateway asked its leaders for end offsets to wake librdkafka's fetchers (source.fetch_wakeup_ms).",
     NO_LABELS, NO_BOUNDS, CTR(fetch_wakeups)},
    {"errgate_policy_reloads_total", EG_MT_COUNTER, "Policy reload attempts, by result.", LABELS(l_result), NO_BOUNDS,
     FAM(reloads)},
    {"errgate_breaker_transitions_total", EG_MT_COUNTER, "Circuit breaker transitions, by the state entered.",
     LABELS(l_to), NO_BOUNDS, FAM(breaker_transitions)},
    {"errgate_decision_duration_seconds", EG_MT_HISTOGRAM, "Time the policy took to decide on one failure.", NO_LABELS,
     BOUNDS(dec_b), FAM(decision_seconds)},
    {"errgate_target_request_duration_seconds", EG_MT_HISTOGRAM,
     "Target attempt latency, by status class (2xx..5xx, timeout, connect).", LABELS(l_status), BOUNDS(tgt_b),
     FAM(target_seconds)},
};

/* Builds the registry and the families the loop updates (families[]). */
void eg_gw_metrics_new(eg_gw *gw) {
    eg_registry *r = gw->reg = eg_registry_new();
    eg_gw_metrics *m = &gw->m;
    for (int i = 0; i < NELEM(families); i++) {
        const family_def *d = &families[i];
        eg_family *f = eg_family_new(r, d->name, d->help, d->type, d->nlabels, d->labels, d->bounds, d->nbounds);
        char *at = (char *)m + d->off;
        if (d->counter) *(uint64_t **)(void *)at = eg_counter(f, NULL);
        else *(eg_family **)(void *)at = f;
    }
    /* series that exist from the start, so dashboards see zeros */
    const char *ok[1] = {"success"}, *bad[1] = {"failure"};
    eg_counter(m->reloads, ok);
    eg_counter(m->reloads, bad);
    eg_histogram(m->decision_seconds, NULL);
    for (int i = 0; i < gw->cfg->ntopics; i++) {
        const char *tv[1] = {gw->cfg->topics[i]};
        eg_counter(m->received, tv);
        eg_counter(m->processed, tv);
        if (tv[0][0] == '^') continue; /* a pattern is no topic */
        eg_counter(m->poison, tv);
        eg_counter(m->recovered, tv);
        eg_counter(m->dead_by_topic, tv);
    }
    eg_metrics_install_target_latency(m->target_seconds);
}

void eg_gw_on_breaker(void *arg, const eg_breaker *b, eg_breaker_state from, eg_breaker_state to, int64_t now_ms) {
    eg_gw *gw = arg;
    const char *v[1] = {eg_breaker_state_name(to)};
    (*eg_counter(gw->m.breaker_transitions, v))++;
    eg_logline l;
    if (!eg_log_begin(&l, to == EG_BR_OPEN ? EG_WARN : EG_INFO, "breaker")) return;
    eg_log_str(&l, "from", eg_breaker_state_name(from));
    eg_log_str(&l, "to", eg_breaker_state_name(to));
    eg_log_int(&l, "window_outcomes", b->outcomes);
    eg_log_int(&l, "window_failures", b->failures);
    if (to == EG_BR_OPEN) eg_log_int(&l, "open_ms", b->cfg.open_ms);
    eg_log_end(&l);
}

int eg_gw_control(void *arg, int method, const char *path, const char *body, size_t len, struct evbuffer *out) {
    eg_gw *gw = arg;
    int resume = strcmp(path, "/resume") == 0;
    int overrides = strcmp(path, "/overrides") == 0 || strncmp(path, "/overrides/", 11) == 0;
    int shadow = strcmp(path, "/shadow") == 0;
    int fences = strcmp(path, "/fences") == 0 || strcmp(path, "/fences/release") == 0;
    if (!resume && !overrides && !shadow && !fences && strcmp(path, "/dlq-guard/reset") != 0) return 0;
    if (!out) return 200;
    if (fences) return eg_gw_fence_request(gw, method, path, body, len, out);
    if (shadow && method != EG_ADMIN_GET && method != EG_ADMIN_HEAD) {
        evbuffer_add_printf(out, "{\"error\":\"use GET\"}");
        return 405;
    }
    if (shadow && gw->shadow) eg_shadow_json(gw->shadow, out);
    else if (shadow) evbuffer_add_printf(out, "{\"error\":\"no shadow_policy is configured\"}");
    if (shadow) return gw->shadow ? 200 : 404;
    if (overrides) return eg_gw_overrides_request(gw, method, path, body, len, out);
    if (method != EG_ADMIN_POST) {
        evbuffer_add_printf(out, "{\"error\":\"use POST\"}");
        return 405;
    }
    if (!resume) return eg_gw_guard_reset(gw, body, len, out);
    if (!gw->waiting || gw->stopping) {
        evbuffer_add_printf(out, "{\"error\":\"%s\"}",
                            gw->stopping ? "the gateway is shutting down" : "not waiting: no stop to resume from");
        return 409;
    }
    evbuffer_add_printf(out, "{\"result\":\"resumed\",\"from\":");
    eg_json_str(out, gw->wait_why);
    evbuffer_add(out, "}", 1);
    eg_log_msg(EG_WARN, "resume", "an operator resumed (%s); the stopped records are decided again", gw->wait_why);
    eg_gw_redo_stopped(gw);
    return 200;
}

/* Starts the admin endpoint when configured. */
int eg_gw_admin_start(eg_gw *gw, char *err, size_t errlen) {
    if (!gw->cfg->admin_enabled) return 0;
    static const eg_admin_ops ops = {gw_metrics,           gw_ready,     gw_policy_json, gw_lanes_json,
                                     eg_gw_reload_request, eg_gw_control};
    const eg_config *c = gw->cfg;
    gw->admin = c->admin_fd >= 0 ? eg_admin_new_fd(gw->base, c->admin_fd, c->admin_token_file, c->admin_max_connections,
                                                   &ops, gw, err, errlen)
                                 : eg_admin_new(gw->base, c->admin_listen, c->admin_token_file,
                                                c->admin_max_connections, &ops, gw, err, errlen);
    return gw->admin ? 0 : -1;
}

void eg_gw_log_summary(eg_gw *gw) {
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, "summary")) return;
    const eg_gw_metrics *m = &gw->m;
    int64_t succeeded = (int64_t)*m->succeeded, first = gw->succeeded_first;
    int64_t dlq = (int64_t)eg_family_total(m->dead), quarantined = (int64_t)eg_family_total(m->quarantined);
    eg_log_int(&l, "received", (int64_t)eg_family_total(m->received));
    eg_log_int(&l, "succeeded_first", first);
    eg_log_int(&l, "succeeded_retry", succeeded - first);
    eg_log_int(&l, "failures", (int64_t)eg_family_total(m->failed));
    eg_log_int(&l, "retries", (int64_t)*m->retried);
    eg_log_int(&l, "holds", (int64_t)*m->held);
    eg_log_int(&l, "dlq", dlq);
    eg_log_int(&l, "laddered", (int64_t)eg_family_total(m->laddered));
    eg_log_int(&l, "spilled", (int64_t)eg_family_total(m->spilled));
    eg_log_int(&l, "quarantined", quarantined);
    eg_log_int(&l, "ignored", (int64_t)*m->ignored);
    eg_log_int(&l, "stops", (int64_t)*m->stops);
    eg_log_int(&l, "policy_errors", (int64_t)*m->fallbacks);
    eg_log_int(&l, "lane_failures", (int64_t)eg_family_total(m->lane_failures));
    eg_log_int(&l, "commits", (int64_t)*m->commits);
    eg_log_int(&l, "commit_failures", (int64_t)*m->commit_failures);
    if (gw->txn.on) { /* lanes.transactional: its transactions, and how long a commit took */
        eg_log_int(&l, "txn_commits", (int64_t)gw->txn.commits);
        eg_log_int(&l, "txn_aborts", (int64_t)gw->txn.aborts);
        eg_log_int(&l, "txn_records", (int64_t)gw->txn.records);
        eg_log_dbl(&l, "txn_commit_ms_mean", gw->txn.commits ? (double)gw->txn.ms_total / (double)gw->txn.commits : 0);
        eg_log_int(&l, "txn_commit_ms_max", gw->txn.ms_max);
    }
    int64_t done = succeeded + dlq + quarantined + (int64_t)*m->ignored;
    double secs =
        gw->last_finish_ms > gw->first_receive_ms ? (double)(gw->last_finish_ms - gw->first_receive_ms) / 1000.0 : 0;
    eg_log_dbl(&l, "active_seconds", secs);
    eg_log_dbl(&l, "records_per_second", secs > 0 ? (double)done / secs : 0);
    eg_log_int(&l, "exit_code", gw->exit_code);
    eg_log_end(&l);
}
