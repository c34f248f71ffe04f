/* gw_coverage.c — an assignment that leaves a subscribed topic unowned is
 * asked for again.
 *
 * The group leader assigns partitions from a metadata request of its own. A
 * topic that is missing at that moment (a broker briefly answering
 * UNKNOWN_TOPIC_OR_PART, a topic being re-created) counts as having no
 * partitions, so nobody gets any. librdkafka 2.0.2 rejoins the group only when
 * a member's *subscription* metadata changes; the assignor's request does not
 * update it, so when the members never saw the topic go, nothing ever
 * triggers a new assignment and the topic's partitions stay unowned until the
 * group rebalances for another reason (found by make chaos, seed 5: a rung
 * topic's 964 records waited for good). Kafka's Java consumer fixed the same
 * gap by refreshing metadata after an assignment that skipped a topic
 * (KAFKA-4779); here the gateway checks its own share instead.
 *
 * The check relies on the range assignor, the group's default protocol: a
 * member given at least one partition of a topic with P partitions has an
 * index below P among that topic's members, so it gets at least one partition
 * of every topic it subscribes with P or more. After each assignment, when
 * this gateway got some partitions of one subscribed topic (sources named in
 * the config and rung topics; regex sources are not checked) and none of
 * another, a timer (2 s, then doubling up to 30 s) asks the cluster for both
 * topics' partition counts:
 *   - the empty topic exists and has at least as many partitions as the
 *     smallest topic this gateway got a share of: the assignment was made from
 *     stale metadata. The gateway logs `assignment_incomplete`, counts it in
 *     errgate_group_rejoins_total and subscribes again, which makes the group
 *     rebalance (every partition is revoked first, as in any rebalance);
 *   - the empty topic is missing or has errors: asked again later;
 *   - otherwise the share is legitimately empty (fewer partitions than
 *     members): nothing to do.
 * After 5 rejoins in a row that did not cover the topics, the gateway stops
 * rejoining and logs `assignment_uneven` once (a group whose members
 * subscribe different topics, where the rule above does not hold); a covered
 * assignment starts the count again. With a partition.assignment.strategy
 * that does not start with "range", the check is off.
 *
 * The metadata request blocks the loop for at most 1.5 s; it is only made
 * after an assignment that looks incomplete. */
#include "gw.h"
#include "kcli.h"
#include "log.h"
#include "util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define COVERAGE_FIRST_MS 2000
#define COVERAGE_MAX_MS 30000
#define COVERAGE_META_MS 1500
#define COVERAGE_MAX_REJOINS 5

struct eg_gw_coverage {
    eg_gw *gw;
    struct event *ev;
    rd_kafka_topic_partition_list_t *assigned; /* the last assignment, NULL after a revoke */
    int64_t backoff_ms;                        /* the next check's delay */
    int rejoins;                               /* rejoins in a row without a covered assignment */
};

/* How many subscribed topics the check covers (see topic_at). */
static int topic_count(const eg_gw *gw) { return gw->cfg->ntopics + gw->nrts; }

/* The i-th checked topic: the named sources, then the rung topics; NULL
 * for a regex source. */
static const char *topic_at(const eg_gw *gw, int i) {
    if (i < gw->cfg->ntopics) return eg_topic_is_regex(gw->cfg->topics[i]) ? NULL : gw->cfg->topics[i];
    return gw->rts[i - gw->cfg->ntopics].topic;
}

/* Partitions of topic in list. */
static int share_of(const rd_kafka_topic_partition_list_t *list, const char *topic) {
    int n = 0;
    for (int i = 0; i < list->cnt; i++)
        if (strcmp(list->elems[i].topic, topic) == 0) n++;
    return n;
}

/* 1 when the assignment gave some checked topic partitions and another none. */
static int looks_incomplete(const eg_gw *gw, const rd_kafka_topic_partition_list_t *list) {
    int some = 0, none = 0;
    for (int i = 0; i < topic_count(gw); i++) {
        const char *t = topic_at(gw, i);
        if (!t) continue;
        if (share_of(list, t)) some = 1;
        else none = 1;
    }
    return some && none;
}

static void arm(eg_gw_coverage *c) {
    struct timeval tv = eg_gw_tv(c->backoff_ms);
    event_add(c->ev, &tv);
}

static void backoff(eg_gw_coverage *c) {
    c->backoff_ms = c->backoff_ms * 2 > COVERAGE_MAX_MS ? COVERAGE_MAX_MS : c->backoff_ms * 2;
}

/* The timer: asks for the checked topics' partition counts and rejoins,
 * asks again later, or stops, as the file comment says. */
static void on_check(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    eg_gw_coverage *c = arg;
    eg_gw *gw = c->gw;
    if (gw->stopping || gw->closed || !c->assigned) return;
    int n = topic_count(gw);
    /* handles make the topics "known locally", so one request covers them all */
    rd_kafka_topic_t **rkts = eg_xcalloc((size_t)n, sizeof *rkts);
    for (int i = 0; i < n; i++)
        if (topic_at(gw, i)) rkts[i] = rd_kafka_topic_new(gw->rk, topic_at(gw, i), NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(gw->rk, 0, NULL, &md, COVERAGE_META_MS);
    for (int i = 0; i < n; i++)
        if (rkts[i]) rd_kafka_topic_destroy(rkts[i]);
    free(rkts);
    if (err) {
        eg_log_msg(EG_WARN, "coverage_check_failed", "metadata: %s; asked again in %lld ms", rd_kafka_err2str(err),
                   (long long)c->backoff_ms * 2);
        backoff(c);
        arm(c);
        return;
    }
    /* the smallest topic this gateway has a share of */
    int pmin = INT_MAX;
    const char *had = NULL;
    for (int i = 0; i < n; i++) {
        const char *t = topic_at(gw, i);
        int p = t && share_of(c->assigned, t) ? eg_metadata_partitions(md, t) : -1;
        if (p > 0 && p < pmin) pmin = p, had = t;
    }
    const char *unowned = NULL;
    int unowned_p = 0, pending = 0;
    for (int i = 0; i < n && had; i++) {
        const char *t = topic_at(gw, i);
        if (!t || share_of(c->assigned, t)) continue;
        int p = eg_metadata_partitions(md, t);
        if (p < 0) pending = 1;
        else if (p >= pmin && !unowned) unowned = t, unowned_p = p;
    }
    if (unowned) {
        if (++c->rejoins > COVERAGE_MAX_REJOINS) {
            if (c->rejoins == COVERAGE_MAX_REJOINS + 1)
                eg_log_msg(EG_WARN, "assignment_uneven",
                           "%s: still none of its %d partitions assigned here after %d rejoins; "
                           "do all members subscribe the same topics? not rejoining again",
                           unowned, unowned_p, COVERAGE_MAX_REJOINS);
        } else {
            eg_log_msg(EG_WARN, "assignment_incomplete",
                       "%s: none of its %d partitions assigned here while %s (%d partitions) has a share; the "
                       "group leader assigned from stale metadata: rejoining the group",
                       unowned, unowned_p, had, pmin);
            (*gw->m.rejoins)++;
            char e[256];
            if (eg_gw_subscribe(gw, e, sizeof e) != 0) eg_log_msg(EG_ERROR, "rejoin_failed", "%s", e);
            backoff(c);
        }
    } else if (pending) {
        backoff(c);
        arm(c);
    }
    rd_kafka_metadata_destroy(md);
}

eg_gw_coverage *eg_gw_coverage_new(eg_gw *gw) {
    const char *s = eg_config_kafka(gw->cfg, "partition.assignment.strategy");
    if (s && strncmp(s, "range", 5) != 0) return NULL;
    eg_gw_coverage *c = eg_xcalloc(1, sizeof *c);
    c->gw = gw;
    c->ev = event_new(gw->base, -1, 0, on_check, c);
    c->backoff_ms = COVERAGE_FIRST_MS;
    return c;
}

void eg_gw_coverage_assigned(eg_gw_coverage *c, const rd_kafka_topic_partition_list_t *assigned) {
    if (!c) return;
    eg_gw_coverage_revoked(c);
    if (!looks_incomplete(c->gw, assigned)) {
        c->backoff_ms = COVERAGE_FIRST_MS;
        c->rejoins = 0;
        return;
    }
    c->assigned = rd_kafka_topic_partition_list_copy(assigned);
    arm(c);
}

void eg_gw_coverage_revoked(eg_gw_coverage *c) {
    if (!c) return;
    event_del(c->ev);
    if (c->assigned) rd_kafka_topic_partition_list_destroy(c->assigned);
    c->assigned = NULL;
}

void eg_gw_coverage_free(eg_gw_coverage *c) {
    if (!c) return;
    eg_gw_coverage_revoked(c);
    event_free(c->ev);
    free(c);
}
