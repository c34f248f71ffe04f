/* gw_unstarted.c — an assigned partition that librdkafka never starts
 * fetching is assigned again.
 *
 * librdkafka 2.0.2 starts fetching an assigned partition once it knows where
 * to begin: it asks the group coordinator for the assignment's committed
 * offsets. When that OffsetFetch fails for good (an error it does not retry,
 * its retries used up, a coordinator that went away meanwhile), it reports a
 * consumer error and leaves the partitions assigned but not started, "until
 * the application unassigns it and possibly re-assigns it"
 * (rdkafka_assignment.c). Nothing else notices: the member heartbeats, no
 * other member owns the partitions, and their records wait for good (found
 * by make test: e2e/test_crash's last gateway drained 7 of its 8 partitions
 * and left the 536 records of the eighth for 240 s; one OffsetFetch error
 * reproduces it, e2e/test_fetch_not_started).
 *
 * librdkafka's statistics (every statistics.interval.ms; errgate's default
 * is 5 s) give each partition's fetch state. A partition of this gateway's
 * assignment found "none" or "stopped" (not started, or stopped and not
 * started again) in two reports in a row, at least FETCHWATCH_GRACE_MS after
 * it was assigned, makes the gateway assign its whole assignment again (the
 * eager protocol allows no smaller change): librdkafka stops every partition
 * and starts it at its committed offset, asking the coordinator again.
 * Records already read are not taken twice (a partition's tracker refuses an
 * offset it has seen) and records in flight finish as usual. The gateway
 * logs `fetch_not_started` naming the partitions, counts it in
 * errgate_fetch_restarts_total, and gives the new assignment the same grace
 * before it can happen again. With statistics.interval.ms = 0 the watch is
 * off. */
#include "gw.h"
#include "log.h"
#include "util.h"

#include <string.h>

#define FETCHWATCH_GRACE_MS 10000
#define FETCHWATCH_REPORTS 2

void eg_gw_fetch_state(eg_part *p, const char *state, size_t len) {
    int idle = (len == 4 && memcmp(state, "none", 4) == 0) || (len == 7 && memcmp(state, "stopped", 7) == 0);
    p->unstarted = idle ? p->unstarted + 1 : 0;
}

void eg_gw_fetchwatch(eg_gw *gw) {
    if (gw->stopping || gw->closed || !gw->parts) return;
    int64_t now = eg_now_ms();
    char names[512] = "";
    size_t used = 0;
    int stuck = 0, total = 0;
    for (eg_part *p = gw->parts; p; p = p->next) {
        total++;
        if (p->unstarted < FETCHWATCH_REPORTS || now - p->assigned_ms < FETCHWATCH_GRACE_MS) continue;
        if (stuck++ < 8 && used < sizeof names) {
            int n =
                snprintf(names + used, sizeof names - used, "%s%s[%d]", used ? ", " : "", p->topic, (int)p->partition);
            if (n > 0) used += (size_t)n;
        }
    }
    if (!stuck) return;
    rd_kafka_topic_partition_list_t *all = rd_kafka_topic_partition_list_new(total);
    for (eg_part *p = gw->parts; p; p = p->next) {
        rd_kafka_topic_partition_list_add(all, p->topic, p->partition);
        p->unstarted = 0;
        p->assigned_ms = now;
    }
    eg_log_msg(EG_WARN, "fetch_not_started",
               "%d assigned partition(s) never started fetching (%s%s; librdkafka leaves a partition so after its "
               "committed offset could not be fetched): assigning the %d partitions again",
               stuck, names, stuck > 8 ? ", ..." : "", total);
    (*gw->m.fetch_restarts)++;
    rd_kafka_resp_err_t err = rd_kafka_assign(gw->rk, all);
    if (err) eg_log_msg(EG_ERROR, "assign_failed", "assigning again: %s", rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(all);
}
