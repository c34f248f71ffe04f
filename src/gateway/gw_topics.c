/* gw_topics.c — the topics the gateway writes, made sure of at start.
 *
 * Before it subscribes, the gateway makes sure that every topic it will
 * write exists: for each source topic (not a regex), its DLQ and
 * quarantine lanes, its rung topics (the current policy's ladder, and in
 * inbox mode the replay rung) and, in inbox mode, its state topic
 * (`INBOX.state`, where an ignore is written as accepted loss). A missing
 * one is created through the Admin API with its source's partition count
 * (the largest, when sources share a lane), the cluster's default
 * replication factor, cleanup.policy=compact for a state topic and, with
 * lanes.retention, retention.ms for the other lanes (a state topic keeps
 * its items' states for good). With lanes.approval_window or
 * lanes.replay_window, each DLQ and quarantine lane's retention.ms is read
 * back and a lane that keeps records for less than the window is warned
 * about (lane_retention_short). So a
 * cluster that does not auto-create topics, or auto-creates them with one
 * partition (Kafka's default), still has every lane a record may go to, on
 * its source's partition number (DESIGN §4). An existing lane with fewer
 * partitions than its source is said once (its records go to partition %
 * count, lanes.c). What cannot be created (no controller, as on the
 * embedded broker; an ACL; a topic policy) is said and left to
 * auto-creation: the first write to a topic still missing then fails like
 * any lane write (retried, loud, nothing committed past it). Rung topics
 * that only a reload's new ladder names are not created here: they are
 * auto-created where the cluster allows it.
 *
 * Locality: the loop thread, before the loop runs (it blocks for the Admin
 * round trips, a few per topic at most). */
#include "gw.h"
#include "kcli.h"
#include "lane_state.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One topic to make sure of. */
typedef struct want {
    char *name;
    int partitions; /* the largest of its sources' */
    int compact;    /* a state topic: compacted, kept for good */
    int dead;       /* a DLQ or quarantine lane: its retention must outlast the windows */
    int created;    /* created now, here or by another member (await_created) */
} want;

/* Adds name (taken) to w, or raises the partitions of the entry already
 * there. */
static void add(want **w, int *n, char *name, int partitions, int compact, int dead) {
    for (int i = 0; i < *n; i++)
        if (strcmp((*w)[i].name, name) == 0) {
            if (partitions > (*w)[i].partitions) (*w)[i].partitions = partitions;
            free(name);
            return;
        }
    *w = eg_xrealloc(*w, (size_t)(*n + 1) * sizeof **w);
    (*w)[(*n)++] = (want){name, partitions, compact, dead, 0};
}

/* lanes.approval_window, lanes.replay_window: warns lane_retention_short
 * when the DLQ or quarantine lane `name` keeps records for less than the
 * longer window (its retention.ms as the cluster describes it; -1 is
 * "for good"). Said at debug level only when the cluster cannot be asked
 * (the embedded broker has no Admin API). */
static void check_retention(eg_gw *gw, const char *name) {
    const eg_config *cfg = gw->cfg;
    int64_t window =
        (int64_t)(cfg->lane_appr_win_s > cfg->lane_replay_win_s ? cfg->lane_appr_win_s : cfg->lane_replay_win_s) * 1000;
    if (window <= 0) return;
    char v[32], err[512];
    if (eg_topic_config(gw->rk, name, "retention.ms", v, sizeof v, err, sizeof err) != 0) {
        eg_log_msg(EG_DEBUG, "lane_retention_unknown", "%s", err);
        return;
    }
    char *end = NULL;
    long long ms = strtoll(v, &end, 10);
    if (end == v || *end || ms < 0) return; /* -1: kept for good */
    if (ms < window)
        eg_log_msg(EG_WARN, "lane_retention_short",
                   "%s keeps records for %lld ms (retention.ms), less than lanes.%s (%lld ms): a dead letter may be "
                   "deleted before it is %s; raise the topic's retention.ms",
                   name, ms, cfg->lane_appr_win_s >= cfg->lane_replay_win_s ? "approval_window" : "replay_window",
                   (long long)window, cfg->lane_appr_win_s >= cfg->lane_replay_win_s ? "approved" : "replayed");
}

/* The topics just created (w's entries marked created) reach the brokers'
 * metadata a moment after the creation is acknowledged. librdkafka joins
 * the group with the subscribed topics its metadata shows: a gateway that
 * joined before a rung topic showed would join without it, and the group's
 * range assignor would give that rung's partitions to the other members,
 * apart from their source partitions (gw_colocate.c). Waits up to
 * CREATED_VISIBLE_MS for every one to show, and says how many did not. */
#define CREATED_VISIBLE_MS 10000
static void await_created(eg_gw *gw, const want *w, int n) {
    int64_t until = eg_now_ms() + CREATED_VISIBLE_MS;
    int missing = 1;
    while (missing && eg_now_ms() < until) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(gw->rk, 1, NULL, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR && md) {
            missing = 0;
            for (int i = 0; i < n; i++) missing += w[i].created && eg_metadata_partitions(md, w[i].name) < 0;
        }
        if (md) rd_kafka_metadata_destroy(md);
        if (missing) usleep(200 * 1000);
    }
    if (missing)
        eg_log_msg(EG_WARN, "lane_topics_not_shown",
                   "%d topic(s) created at start not in the cluster's metadata after %d ms: the group may assign "
                   "them apart from their sources until the next rebalance",
                   missing, CREATED_VISIBLE_MS);
}

void eg_gw_topics_ensure(eg_gw *gw) {
    const eg_config *cfg = gw->cfg;
    want *w = NULL;
    int n = 0, uncontrolled = 0;
    char err[512], note[700];
    for (int t = 0; t < cfg->ntopics; t++) {
        const char *src = cfg->topics[t];
        if (eg_topic_is_regex(src)) continue;
        int parts = eg_topic_partitions(gw->rk, src, err, sizeof err);
        if (parts <= 0) continue; /* missing or not asked: the source's own checks say so */
        add(&w, &n, eg_lane_topic(cfg->lane_dlq, src, NULL), parts, 0, 1);
        add(&w, &n, eg_lane_topic(cfg->lane_quarantine, src, NULL), parts, 0, 1);
        for (int k = 0; k < gw->nrts; k++)
            if (strcmp(gw->rts[k].origin, src) == 0) add(&w, &n, eg_xstrdup(gw->rts[k].topic), parts, 0, 0);
        if (cfg->inbox) {
            char st[512];
            eg_dlq_state_topic(src, st, sizeof st);
            add(&w, &n, eg_xstrdup(st), parts, 1, 0);
        }
    }
    int created = 0;
    for (int i = 0; i < n; i++) {
        int had = 0;
        int64_t retention_ms = w[i].compact ? 0 : (int64_t)cfg->lane_retention_s * 1000;
        int r = eg_topic_ensure(gw->rk, w[i].name, w[i].partitions, w[i].compact, retention_ms, &had, note, sizeof note,
                                err, sizeof err);
        char ret[48] = "";
        if (retention_ms > 0) snprintf(ret, sizeof ret, ", retention.ms=%lld", (long long)retention_ms);
        if (r < 0) eg_log_msg(EG_WARN, "lane_topic_unknown", "%s: %s", w[i].name, err);
        else if (r == 1) {
            eg_log_msg(EG_INFO, "lane_topic_created", "%s: %d partitions%s%s", w[i].name, w[i].partitions,
                       w[i].compact ? ", cleanup.policy=compact" : "", ret);
            w[i].created = 1;
            created++;
        } else if (note[0] && strstr(note, "no reachable controller")) uncontrolled++;
        else if (note[0]) eg_log_msg(EG_WARN, "lane_topic_not_created", "%s", note);
        else if (!had) {
            w[i].created = 1; /* another member created it meanwhile (it already exists), not shown yet */
            created++;
        } else if (had < w[i].partitions)
            eg_log_msg(EG_WARN, "lane_partitions",
                       "%s has %d partitions, its source %d: records of a source partition >= %d go to "
                       "that number %% %d",
                       w[i].name, had, w[i].partitions, had, had);
        if (w[i].dead && r >= 0) check_retention(gw, w[i].name);
    }
    if (created) await_created(gw, w, n);
    for (int i = 0; i < n; i++) free(w[i].name);
    if (uncontrolled)
        eg_log_msg(EG_INFO, "lane_topics_not_created",
                   "%d missing lane topic(s) not created: the cluster names no controller for Admin requests "
                   "(the embedded broker has none); they are auto-created on their first write",
                   uncontrolled);
    free(w);
}
