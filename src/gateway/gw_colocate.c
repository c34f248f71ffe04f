/* gw_colocate.c — under source.fence, a rung partition is served only by the
 * gateway that owns its source partition.
 *
 * A rung record is judged against its source partition's fence table (a
 * rung record goes to its source's partition number: gw_fence.c), and only
 * that partition's owner holds the table. The group's range assignor gives
 * partition P of every topic to one member as long as every member's
 * subscription names the same topics, but librdkafka joins with the
 * subscribed topics its metadata shows at that moment: a member whose
 * metadata did not show a rung topic yet (just created by another gateway,
 * or in error while a broker was away) joins without it, and every
 * partition of that rung goes to the others. A gateway so handed a rung
 * partition without its source partition had no fence for its keys and
 * sent the records of a parked key straight to the target (the chaos
 * runner's per-key audit, kafka seed 5: src.retry.2s[6] on another gateway
 * than src[6], 49 inversions in 34 keys).
 *
 * At each assignment (eager: the whole of it) such a rung partition is
 * marked split: paused (reason `split`, errgate_fence_split_partitions),
 * nothing of it taken, and said (`fence_split`, with the partitions) until
 * an assignment brings it together with its source partition. A gateway
 * whose assignment is not co-located either way (a rung partition without
 * its source partition, or a source partition without a rung partition of
 * its number) asks the cluster for the metadata of every topic: a full
 * metadata answer updates librdkafka's effective subscription, and a member
 * that lacked a topic rejoins with it, so the next assignment co-locates.
 * It asks again every SPLIT_ASK_MS while a split lasts, at most SPLIT_ASKS
 * times per assignment (a rung topic with fewer partitions than its source
 * can never be co-located, and gw_topics.c says so at start): then says
 * `fence_split_lasts` once, and its split partitions stay paused, counted
 * by the gauge, until the next assignment.
 *
 * Locality: the event loop's (the assignment callback and the commit tick).
 * The metadata request blocks for at most SPLIT_META_MS. */
#include "gw.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* A split is asked about again this often, */
#define SPLIT_ASK_MS 5000
/* each metadata request waited for at most this long, */
#define SPLIT_META_MS 2000
/* and at most this many asks per assignment. */
#define SPLIT_ASKS 12

/* Asks the cluster for every topic's metadata (librdkafka updates the
 * group's effective subscription from a full answer). */
static void ask_metadata(eg_gw *gw) {
    gw->coloc_asked_ms = eg_now_ms();
    if (gw->coloc_asks++ == SPLIT_ASKS) {
        eg_log_msg(EG_WARN, "fence_split_lasts",
                   "the assignment is still not co-located after %d metadata asks %d s apart: not asked again "
                   "until the next assignment; %d rung partition(s) held here stay paused",
                   SPLIT_ASKS, SPLIT_ASK_MS / 1000, gw->split_parts);
        return;
    }
    if (gw->coloc_asks > SPLIT_ASKS) return;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(gw->rk, 1, NULL, &md, SPLIT_META_MS);
    if (err) eg_log_msg(EG_WARN, "fence_split_metadata", "asking the cluster's metadata: %s", rd_kafka_err2str(err));
    if (md) rd_kafka_metadata_destroy(md);
}

void eg_gw_colocate(eg_gw *gw) {
    gw->split_parts = 0;
    gw->coloc_off = 0;
    gw->coloc_asks = 0;
    if (!eg_gw_fence_on(gw)) return;
    char names[400] = "";
    size_t used = 0;
    int lacking = 0;
    for (eg_part *p = gw->parts; p; p = p->next) {
        if (p->rung >= 0) {
            p->split = !eg_gw_part_find(gw, p->origin, p->partition);
            if (!p->split) continue;
            if (gw->split_parts++ < 8 && used < sizeof names) {
                int n = snprintf(names + used, sizeof names - used, "%s%s[%d]", used ? ", " : "", p->topic,
                                 (int)p->partition);
                if (n > 0) used += (size_t)n;
            }
            continue;
        }
        for (int k = 0; k < gw->nrts && !lacking; k++)
            lacking = strcmp(gw->rts[k].origin, p->topic) == 0 && !eg_gw_part_find(gw, gw->rts[k].topic, p->partition);
    }
    if (gw->split_parts)
        eg_log_msg(EG_WARN, "fence_split",
                   "%d rung partition(s) assigned here without their source partition (%s%s): not served until an "
                   "assignment brings them together, since their keys' fences are held by the source partition's "
                   "owner (a member of the group joined without some topics its metadata did not show yet)",
                   gw->split_parts, names, gw->split_parts > 8 ? ", ..." : "");
    gw->coloc_off = gw->split_parts || lacking;
    if (gw->coloc_off) ask_metadata(gw);
}

void eg_gw_colocate_tick(eg_gw *gw) {
    if (gw->coloc_off && !gw->closed && !gw->stopping && eg_now_ms() - gw->coloc_asked_ms >= SPLIT_ASK_MS)
        ask_metadata(gw);
}
