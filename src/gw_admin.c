/* gw_admin.c — what `errgate run` shows about itself: the metrics registry
 * and its scrape-time gauges, the admin views (/readyz, /policy, /lanes),
 * librdkafka statistics (consumer lag), the end-of-run summary, and the one
 * reload path shared by SIGHUP, a change of the policy file and POST
 * /reload (eg_gw_reload).
 *
 * The admin endpoint runs on the loop's event base, so these handlers read
 * the gateway's state between two events without locks. Per-record paths
 * bump plain integers through pointers cached in the partition; labelled
 * series are looked up only on failure paths. */
#include "gw.h"
#include "log.h"
#include "redact.h"
#include "sha256.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
 * picks each partition's consumer_lag. A flat scan keyed on the last seen
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
        } else if (rest > 15 && memcmp(q, "\"consumer_lag\":", 15) == 0) {
            long long lag = strtoll(q + 15, NULL, 10);
            if (partition >= 0 && partition <= INT32_MAX) {
                eg_part *p = eg_gw_part_find(gw, topic, (int32_t)partition);
                if (p) p->consumer_lag = lag;
            }
        }
        if (q + 1 >= end) break;
    }
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

static void gw_metrics(void *arg, struct evbuffer *out) {
    eg_gw *gw = arg;
    eg_registry_render(gw->reg, out);
    static const char *const tp[] = {"topic", "partition"};
    char pbuf[16], name[128], ver[128], target[512];
    eg_metric_header(out, "errgate_inflight_records", "Records consumed and not yet finished.", "gauge");
    eg_metric_sample(out, "errgate_inflight_records", 0, NULL, NULL, gw->unfinished);
    eg_metric_header(out, "errgate_committed_offset_lag",
                     "High watermark minus the committed offset, per assigned partition.", "gauge");
    for (eg_part *p = gw->parts; p; p = p->next) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_get_watermark_offsets(gw->rk, p->topic, p->partition, &lo, &hi) != 0 || hi < 0) continue;
        int64_t base = p->committed >= 0 ? p->committed : lo;
        snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
        const char *v[2] = {p->topic, pbuf};
        eg_metric_sample(out, "errgate_committed_offset_lag", 2, tp, v, (double)(hi > base ? hi - base : 0));
    }
    eg_metric_header(out, "errgate_tracked_offsets",
                     "Offsets tracked per assigned partition (oldest unfinished to newest read).", "gauge");
    for (eg_part *p = gw->parts; p; p = p->next) {
        snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
        const char *v[2] = {p->topic, pbuf};
        eg_metric_sample(out, "errgate_tracked_offsets", 2, tp, v, (double)eg_tracker_pending(&p->trk));
    }
    eg_metric_header(out, "errgate_consumer_lag",
                     "Consumer lag per assigned partition, from librdkafka statistics.", "gauge");
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (p->consumer_lag < 0) continue;
        snprintf(pbuf, sizeof pbuf, "%d", (int)p->partition);
        const char *v[2] = {p->topic, pbuf};
        eg_metric_sample(out, "errgate_consumer_lag", 2, tp, v, (double)p->consumer_lag);
    }
    const char *t = gw->cfg->target_kind == EG_TARGET_HTTP ? gw->cfg->http_url : gw->cfg->lua_target;
    eg_redact(t, strlen(t), target, sizeof target);
    static const char *const tl[] = {"target"};
    const char *tv[1] = {target};
    eg_metric_header(out, "errgate_breaker_state",
                     "Circuit breaker state per target: 0 closed, 1 open, 2 half-open (always 0 when disabled).",
                     "gauge");
    eg_metric_sample(out, "errgate_breaker_state", 1, tl, tv, eg_breaker_poll(&gw->breaker, eg_now_ms()));
    eg_metric_header(out, "errgate_retries_active",
                     "In-place retries waiting or in the target (counted against the retry budget).", "gauge");
    eg_metric_sample(out, "errgate_retries_active", 1, tl, tv, (double)gw->budget.retries);
    eg_metric_header(out, "errgate_retry_budget_limit",
                     "In-place retries the budget allows now (-1: no budget).", "gauge");
    eg_metric_sample(out, "errgate_retry_budget_limit", 1, tl, tv, (double)eg_budget_limit(&gw->budget));
    eg_metric_header(out, "errgate_retry_budget_refused_total",
                     "Retry decisions refused by the retry budget (escalated to a ladder or a hold).", "counter");
    eg_metric_sample(out, "errgate_retry_budget_refused_total", 1, tl, tv, (double)gw->budget.refused);
    policy_name_version(gw->policy, name, sizeof name, ver, sizeof ver);
    static const char *const pl[] = {"name", "version"};
    const char *pv[2] = {name, ver};
    eg_metric_header(out, "errgate_policy_info", "The policy deciding now (always 1).", "gauge");
    eg_metric_sample(out, "errgate_policy_info", 2, pl, pv, 1);
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
    if (gw->spill) {
        eg_spill_stats js;
        eg_spill_drain_stats ds;
        eg_spill_stats_get(gw->spill, &js);
        eg_spill_drain_stats_get(gw->drain, &ds);
        eg_metric_header(out, "errgate_spill_bytes_pending", "Bytes in the spill journal's segments.", "gauge");
        eg_metric_sample(out, "errgate_spill_bytes_pending", 0, NULL, NULL, (double)js.bytes_pending);
        eg_metric_header(out, "errgate_spill_segments", "Segments in the spill journal.", "gauge");
        eg_metric_sample(out, "errgate_spill_segments", 0, NULL, NULL, (double)js.segments);
        eg_metric_header(out, "errgate_spill_frames_drained_total",
                         "Journal records delivered to their lane by the drainer.", "counter");
        eg_metric_sample(out, "errgate_spill_frames_drained_total", 0, NULL, NULL, (double)ds.frames_drained);
        eg_metric_header(out, "errgate_spill_drain_failures_total",
                         "Failed deliveries of journal records (each retried).", "counter");
        eg_metric_sample(out, "errgate_spill_drain_failures_total", 0, NULL, NULL, (double)ds.frames_failed);
        eg_metric_header(out, "errgate_spill_corrupt_frames_total",
                         "Corrupt or torn journal frames met (reported, never applied).", "counter");
        eg_metric_sample(out, "errgate_spill_corrupt_frames_total", 0, NULL, NULL, (double)ds.corrupt_frames);
    }
    char why[128];
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
                            eg_lane_name(ls.lane), (unsigned long long)ls.written,
                            (unsigned long long)ls.failed, lane_pending(gw, ls.topic));
    }
    evbuffer_add_printf(out, "]}");
}

/* The one reload path (POST /reload, SIGHUP, the file watch): on failure
 * the old policy keeps deciding and the error is kept for /policy; on
 * success new ladder rungs are subscribed to. */
static int policy_stat(const eg_gw *gw, int64_t *mtime_ns, int64_t *size);

int eg_gw_reload(void *arg, const char *trigger, char *err, size_t errlen) {
    eg_gw *gw = arg;
    /* the target's file-sourced settings (HTTP header values) are re-read too */
    if (gw->target->ops->reload && gw->target->ops->reload(gw->target, err, errlen) != 0)
        eg_log_msg(EG_WARN, "target_reload_failed", "%s (the previous values stay)", err);
    /* whatever the trigger, the file watch has now seen this version */
    policy_stat(gw, &gw->policy_mtime_ns, &gw->policy_size);
    char before[256];
    eg_strlcpy(before, eg_policy_id(gw->policy), sizeof before);
    gw->last_reload_ms = eg_wall_ms();
    int64_t t0 = eg_now_ms();
    if (eg_policy_reload(&gw->policy, err, errlen) != 0) {
        char clean[sizeof gw->last_reload_error];
        eg_redact(err, strlen(err), clean, sizeof clean);
        eg_strlcpy(gw->last_reload_error, clean, sizeof gw->last_reload_error);
        eg_strlcpy(err, clean, errlen);
        const char *v[1] = {"failure"};
        (*eg_counter(gw->m.reloads, v))++;
        eg_logline l;
        if (eg_log_begin(&l, EG_WARN, "reload")) {
            eg_log_str(&l, "result", "failed");
            eg_log_str(&l, "trigger", trigger);
            eg_log_str(&l, "policy", before);
            eg_log_str(&l, "error", clean);
            eg_log_end(&l);
        }
        return -1;
    }
    gw->last_reload_error[0] = '\0';
    if (eg_gw_rungs_sync(gw) && eg_gw_subscribe(gw, err, errlen) != 0)
        eg_log_msg(EG_ERROR, "subscribe_failed", "new rung topics: %s", err);
    eg_gw_rungs_recheck(gw); /* delays may have changed */
    const char *v[1] = {"success"};
    (*eg_counter(gw->m.reloads, v))++;
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "reload")) {
        eg_log_str(&l, "result", "ok");
        eg_log_str(&l, "trigger", trigger);
        eg_log_str(&l, "policy", eg_policy_id(gw->policy));
        eg_log_str(&l, "previous", before);
        eg_log_int(&l, "took_ms", eg_now_ms() - t0);
        eg_log_end(&l);
    }
    return 0;
}

/* Stats the policy file into *mtime_ns and *size; -1 when it cannot. */
static int policy_stat(const eg_gw *gw, int64_t *mtime_ns, int64_t *size) {
    struct stat st;
    if (stat(eg_policy_path(gw->policy), &st) != 0) return -1;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    *size = (int64_t)st.st_size;
    return 0;
}

/* Once a second: a policy file whose modification time or size changed,
 * and whose content differs from the policy deciding now, is reloaded (once
 * per change: a broken edit is not retried until the file changes again). */
static void on_watch(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    int64_t mt, sz;
    char sha[65];
    if (gw->stopping || policy_stat(gw, &mt, &sz) != 0) return;
    if (mt == gw->policy_mtime_ns && sz == gw->policy_size) return;
    gw->policy_mtime_ns = mt;
    gw->policy_size = sz;
    if (eg_sha256_file_hex(eg_policy_path(gw->policy), sha) == 0 && strcmp(sha, eg_policy_sha256(gw->policy)) == 0)
        return; /* touched, not changed */
    char err[1024];
    eg_gw_reload(gw, "file", err, sizeof err);
}

void eg_gw_watch_start(eg_gw *gw) {
    if (policy_stat(gw, &gw->policy_mtime_ns, &gw->policy_size) != 0) return;
    gw->watch_ev = event_new(gw->base, -1, EV_PERSIST, on_watch, gw);
    struct timeval tv = {EG_POLICY_WATCH_MS / 1000, (EG_POLICY_WATCH_MS % 1000) * 1000};
    event_add(gw->watch_ev, &tv);
}

void eg_gw_on_sighup(evutil_socket_t sig, short what, void *arg) {
    char err[1024];
    eg_gw_reload(arg, "sighup", err, sizeof err);
}

/* Builds the registry and the families the loop updates. */
void eg_gw_metrics_new(eg_gw *gw) {
    static const char *const l_topic[] = {"topic"};
    static const char *const l_cc[] = {"class", "code"};
    static const char *const l_lr[] = {"lane", "reason"};
    static const char *const l_lane[] = {"lane"};
    static const char *const l_status[] = {"status_class"};
    static const char *const l_result[] = {"result"};
    static const double dec_b[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                   0.0025, 0.005, 0.01, 0.025, 0.05, 0.1};
    static const double tgt_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                   0.5, 1, 2.5, 5, 10, 30};
    eg_registry *r = gw->reg = eg_registry_new();
    eg_gw_metrics *m = &gw->m;
    m->received = eg_family_new(r, "errgate_records_received_total", "Records consumed, by source topic.",
                                EG_MT_COUNTER, 1, l_topic, NULL, 0);
    m->processed = eg_family_new(r, "errgate_records_processed_total",
                                 "Records finished with a durable outcome (success, lane write, ignore), by source topic.",
                                 EG_MT_COUNTER, 1, l_topic, NULL, 0);
    m->succeeded = eg_counter(eg_family_new(r, "errgate_records_succeeded_total",
                                            "Records the target accepted.", EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->failed = eg_family_new(r, "errgate_records_failed_total",
                              "Failed target attempts, by the class and code the policy gave.", EG_MT_COUNTER, 2,
                              l_cc, NULL, 0);
    m->retried = eg_counter(eg_family_new(r, "errgate_records_retried_total", "In-place retries decided.",
                                          EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->exhausted = eg_counter(eg_family_new(r, "errgate_records_retry_exhausted_total",
                                            "Decisions taken because the retries were exhausted.", EG_MT_COUNTER, 0,
                                            NULL, NULL, 0), NULL);
    m->dead = eg_family_new(r, "errgate_records_dead_lettered_total",
                            "Records written to a DLQ lane (acknowledged), by lane topic and reason.", EG_MT_COUNTER, 2,
                            l_lr, NULL, 0);
    m->quarantined = eg_family_new(r, "errgate_records_quarantined_total",
                                   "Records written to a quarantine lane (acknowledged), by lane topic and reason.",
                                   EG_MT_COUNTER, 2, l_lr, NULL, 0);
    m->laddered = eg_family_new(r, "errgate_records_laddered_total",
                                "Records written to a retry rung (acknowledged), by rung topic and reason.",
                                EG_MT_COUNTER, 2, l_lr, NULL, 0);
    m->spilled = eg_family_new(r, "errgate_records_spilled_total",
                               "Lane records written to the spill journal instead (durable; drained later), by lane topic.",
                               EG_MT_COUNTER, 1, l_lane, NULL, 0);
    m->ignored = eg_counter(eg_family_new(r, "errgate_records_ignored_total", "Records ignored by decision.",
                                          EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->held = eg_counter(eg_family_new(r, "errgate_records_held_total", "Hold decisions.", EG_MT_COUNTER, 0, NULL,
                                       NULL, 0), NULL);
    m->stops = eg_counter(eg_family_new(r, "errgate_stop_decisions_total", "Stop decisions.", EG_MT_COUNTER, 0,
                                        NULL, NULL, 0), NULL);
    m->fallbacks = eg_counter(eg_family_new(r, "errgate_policy_fallbacks_total",
                                            "Decisions where the policy failed and the fallback applied.",
                                            EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->lane_failures = eg_family_new(r, "errgate_lane_write_failures_total", "Failed lane writes, by lane topic.",
                                     EG_MT_COUNTER, 1, l_lane, NULL, 0);
    m->commits = eg_counter(eg_family_new(r, "errgate_commits_total", "Successful offset commits.", EG_MT_COUNTER,
                                          0, NULL, NULL, 0), NULL);
    m->commit_failures = eg_counter(eg_family_new(r, "errgate_commit_failures_total", "Failed offset commits.",
                                                  EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->bad_ids = eg_counter(eg_family_new(r, "errgate_bad_ids_total",
                                          "Source records whose errgate.id header was malformed (ignored).",
                                          EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->tracker_full = eg_counter(eg_family_new(r, "errgate_tracker_full_total",
                                               "Times a partition stopped being read at source.max_tracked.",
                                               EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->excluded_topics = eg_counter(eg_family_new(r, "errgate_excluded_partitions_total",
                                                  "Assigned partitions of lane-shaped topics not consumed as source.",
                                                  EG_MT_COUNTER, 0, NULL, NULL, 0), NULL);
    m->reloads = eg_family_new(r, "errgate_policy_reloads_total", "Policy reload attempts, by result.", EG_MT_COUNTER,
                               1, l_result, NULL, 0);
    static const char *const l_to[] = {"to"};
    m->breaker_transitions = eg_family_new(r, "errgate_breaker_transitions_total",
                                           "Circuit breaker transitions, by the state entered.", EG_MT_COUNTER, 1,
                                           l_to, NULL, 0);
    m->decision_seconds = eg_family_new(r, "errgate_decision_duration_seconds",
                                        "Time the policy took to decide on one failure.", EG_MT_HISTOGRAM, 0, NULL,
                                        dec_b, (int)(sizeof dec_b / sizeof dec_b[0]));
    m->target_seconds = eg_family_new(r, "errgate_target_request_duration_seconds",
                                      "Target attempt latency, by status class (2xx..5xx, timeout, connect).",
                                      EG_MT_HISTOGRAM, 1, l_status, tgt_b, (int)(sizeof tgt_b / sizeof tgt_b[0]));
    /* series that exist from the start, so dashboards see zeros */
    const char *ok[1] = {"success"}, *bad[1] = {"failure"};
    eg_counter(m->reloads, ok);
    eg_counter(m->reloads, bad);
    eg_histogram(m->decision_seconds, NULL);
    for (int i = 0; i < gw->cfg->ntopics; i++) {
        const char *tv[1] = {gw->cfg->topics[i]};
        eg_counter(m->received, tv);
        eg_counter(m->processed, tv);
    }
    eg_metrics_install_target_latency(m->target_seconds);
}

void eg_gw_on_breaker(void *arg, const eg_breaker *b, eg_breaker_state from, eg_breaker_state to,
                      int64_t now_ms) {
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

/* Starts the admin endpoint when configured. */
int eg_gw_admin_start(eg_gw *gw, char *err, size_t errlen) {
    if (!gw->cfg->admin_enabled) return 0;
    static const eg_admin_ops ops = {gw_metrics, gw_ready, gw_policy_json, gw_lanes_json, eg_gw_reload};
    gw->admin = eg_admin_new(gw->base, gw->cfg->admin_listen, gw->cfg->admin_token_file,
                             gw->cfg->admin_max_connections, &ops, gw, err, errlen);
    return gw->admin ? 0 : -1;
}


void eg_gw_log_summary(eg_gw *gw) {
    eg_logline l;
    if (!eg_log_begin(&l, EG_INFO, "summary")) return;
    const eg_stats *s = &gw->st;
    eg_log_int(&l, "received", s->received);
    eg_log_int(&l, "succeeded_first", s->succeeded_first);
    eg_log_int(&l, "succeeded_retry", s->succeeded_retry);
    eg_log_int(&l, "failures", s->failures);
    eg_log_int(&l, "retries", s->retries);
    eg_log_int(&l, "holds", s->holds);
    eg_log_int(&l, "dlq", s->dlq);
    eg_log_int(&l, "laddered", s->laddered);
    eg_log_int(&l, "spilled", s->spilled);
    eg_log_int(&l, "quarantined", s->quarantined);
    eg_log_int(&l, "ignored", s->ignored);
    eg_log_int(&l, "stops", s->stops);
    eg_log_int(&l, "policy_errors", s->policy_errors);
    eg_log_int(&l, "lane_failures", s->lane_failures);
    eg_log_int(&l, "commits", s->commits);
    eg_log_int(&l, "commit_failures", s->commit_failures);
    int64_t done = s->succeeded_first + s->succeeded_retry + s->dlq + s->quarantined + s->ignored;
    double secs = s->last_ms > s->first_ms ? (double)(s->last_ms - s->first_ms) / 1000.0 : 0;
    eg_log_dbl(&l, "active_seconds", secs);
    eg_log_dbl(&l, "records_per_second", secs > 0 ? (double)done / secs : 0);
    eg_log_int(&l, "exit_code", gw->exit_code);
    eg_log_end(&l);
}
