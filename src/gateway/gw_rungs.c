/* gw_rungs.c — the retry ladder's consuming side: which rung topics the
 * gateway reads, and when a rung record is due.
 *
 * A ladder decision writes the record to `lanes.retry` expanded with the
 * source topic and the rung's name ("payments.retry.30s"). The gateway
 * consumes those topics in its own group, next to the sources. A rung
 * partition is served in offset order: while its head record is not due
 * (record timestamp + the rung's current delay, or errgate.not-before when
 * Retry-After pushed it later) the partition is paused and a timer resumes
 * it (gateway.c); nothing sleeps, other partitions and group membership go
 * on. errgate.not-before is trusted up to source.not_before_max_ms past the
 * record's timestamp (default 24 h): a hostile or absurd value cannot park a
 * rung partition for good. Delays come from the policy, so a reload that
 * changes a rung's delay applies to every record still waiting in that rung,
 * and so does a rung override (`ctl override set --rung R --delay D`) while
 * it is in force.
 *
 * A regex source has no rung topics (its topics are known only at
 * assignment): a ladder decision for its records becomes a hold
 * (unknown_rung, gateway.c).
 *
 * Topics missing on the cluster: the rung topics are subscribed by name;
 * those of the ladder at start are created by gw_topics.c where the
 * cluster lets it; a rung that only a reload names, on a cluster that does
 * not auto-create topics, must be created beforehand (the first ladder
 * write to a missing one fails like any lane write: retried, loud, nothing
 * committed past it). */
#include "gw.h"
#include "headers.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eg_gw_rung_of(const eg_gw *gw, const char *topic) {
    for (int i = 0; i < gw->nrts; i++)
        if (strcmp(gw->rts[i].topic, topic) == 0) return i;
    return -1;
}

int eg_gw_rung_slot(const eg_gw *gw, const char *rung, const char *origin) {
    for (int i = 0; rung && rung[0] && i < gw->nrts; i++)
        if (strcmp(gw->rts[i].rung, rung) == 0 && strcmp(gw->rts[i].origin, origin) == 0) return i;
    return -1;
}

int eg_gw_rung_is_replay(const eg_gw *gw, int k) {
    return gw->cfg->inbox && k >= 0 && k < gw->nrts && strcmp(gw->rts[k].rung, EG_REPLAY_RUNG) == 0;
}

int eg_gw_rungs_sync(eg_gw *gw) {
    const eg_rung *prungs;
    int np = eg_policy_rungs(gw->policy, &prungs), added = 0;
    if (np < 0) np = 0;
    /* inbox mode: the replay rung too (delay 0: a replay is due at its errgate.not-before) */
    eg_rung *rungs = eg_xcalloc((size_t)np + 1, sizeof *rungs);
    if (np) memcpy(rungs, prungs, (size_t)np * sizeof *rungs);
    int n = np;
    if (gw->cfg->inbox) {
        eg_strlcpy(rungs[n].name, EG_REPLAY_RUNG, sizeof rungs[n].name);
        rungs[n++].delay_ms = 0;
    }
    for (int t = 0; t < gw->cfg->ntopics; t++)
        for (int i = 0; i < n && !eg_topic_is_regex(gw->cfg->topics[t]); i++) {
            char *name = eg_lane_topic(gw->cfg->lane_retry, gw->cfg->topics[t], rungs[i].name);
            int k = eg_gw_rung_of(gw, name);
            if (k >= 0) {
                if (gw->rts[k].delay_ms != rungs[i].delay_ms)
                    eg_log_msg(EG_INFO, "rung_delay", "%s: %lld ms -> %lld ms", name, (long long)gw->rts[k].delay_ms,
                               (long long)rungs[i].delay_ms);
                gw->rts[k].delay_ms = rungs[i].delay_ms;
                free(name);
                continue;
            }
            gw->rts = eg_xrealloc(gw->rts, (size_t)(gw->nrts + 1) * sizeof *gw->rts);
            eg_rungtopic *rt = &gw->rts[gw->nrts++];
            rt->topic = name;
            rt->origin = eg_xstrdup(gw->cfg->topics[t]);
            eg_strlcpy(rt->rung, rungs[i].name, sizeof rt->rung);
            rt->delay_ms = rungs[i].delay_ms;
            eg_log_msg(EG_INFO, "rung", "%s (delay %lld ms) for %s", name, (long long)rt->delay_ms, rt->origin);
            added = 1;
        }
    free(rungs);
    return added;
}

int eg_gw_subscribe(eg_gw *gw, char *err, size_t errlen) {
    const eg_config *cfg = gw->cfg;
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(cfg->ntopics + gw->nrts);
    for (int i = 0; i < cfg->ntopics; i++)
        rd_kafka_topic_partition_list_add(topics, cfg->topics[i], RD_KAFKA_PARTITION_UA);
    for (int i = 0; i < gw->nrts; i++)
        rd_kafka_topic_partition_list_add(topics, gw->rts[i].topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t rerr = rd_kafka_subscribe(gw->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (rerr) {
        snprintf(err, errlen, "subscribe: %s", rd_kafka_err2str(rerr));
        return -1;
    }
    return 0;
}

int64_t eg_gw_rung_due(const eg_gw *gw, const eg_part *p, const eg_record *r, int64_t now) {
    int64_t cap = gw->cfg->not_before_max_ms;
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(r->msg, &tt);
    if (ts < 0) ts = 0; /* no timestamp: due at once */
    if (ts > now + cap) {
        /* a timestamp this far ahead was not written by a sane clock */
        eg_log_msg(EG_WARN, "rung_timestamp_ignored",
                   "%s[%d]@%lld: timestamp %lld is more than %lld ms ahead; "
                   "due now",
                   r->topic, (int)r->partition, (long long)r->offset, (long long)ts, (long long)cap);
        ts = 0;
    }
    int64_t delay = gw->rts[p->rung].delay_ms;
    const eg_override *o = gw->overrides.n ? eg_overrides_rung(&gw->overrides, gw->rts[p->rung].rung, now) : NULL;
    if (o) delay = o->delay_ms;                  /* an operator re-timed the rung */
    int64_t due = eg_override_add_ms(ts, delay); /* saturates: a huge delay is never due, not due now */
    int64_t nb = eg_header_uint(r->msg, EG_H_NOT_BEFORE);
    if (nb > eg_override_add_ms(ts, cap)) {
        eg_log_msg(EG_WARN, "not_before_capped",
                   "%s[%d]@%lld: %s %lld is more than %lld ms past the record's "
                   "timestamp; capped",
                   r->topic, (int)r->partition, (long long)r->offset, EG_H_NOT_BEFORE, (long long)nb, (long long)cap);
        nb = eg_override_add_ms(ts, cap);
    }
    return nb > due ? nb : due;
}

void eg_gw_rungs_free(eg_gw *gw) {
    for (int i = 0; i < gw->nrts; i++) {
        free(gw->rts[i].topic);
        free(gw->rts[i].origin);
    }
    free(gw->rts);
    gw->rts = NULL;
    gw->nrts = 0;
}
