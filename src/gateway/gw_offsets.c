/* gw_offsets.c — a source message that is not the next offset its partition
 * expects: a jump is fetched again before it is believed.
 *
 * The tracker (tracker.h) commits one past the longest finished prefix of
 * what it was given, so an offset range the consumer never handed over is
 * committed over as if it had been processed. Such jumps are legitimate on
 * a compacted topic, past a transaction's control records (one offset per
 * commit marker) and past an aborted transaction's records under
 * read_committed: the log has nothing there to give. They are not when the
 * client skipped a batch the log does hold (make chaos, embedded seed 5: 160
 * records of one partition never reached their gateway, which committed
 * over them; the cause in librdkafka was never found).
 *
 * So the first time a partition's messages jump from offset N to O > N, the
 * message at O is dropped and the partition is sought back to N (a probe):
 * librdkafka drops what it had fetched before the seek (its queues skip
 * messages below the partition's version barrier) and fetches from N again. The next
 * message of the partition decides: an offset in N..O-1 means the client had
 * skipped records the log holds (logged as source_offset_refetched, counted,
 * and taken in order); an offset at or past O means the log holds nothing
 * below it, and the jump is taken as a gap (source_offset_gap, as before).
 * A partition whose probes found GAP_PROBES_REAL real gaps in a row (a
 * transactional or compacted source) takes later jumps without a probe, so
 * such a source pays a few re-fetches per assignment, not one per
 * transaction. While a probe is under way the partition's commit point
 * stays at the tracker's (librdkafka's position already went past O).
 *
 * A message below the next expected offset (read again after a re-fetch or
 * a re-assignment) is dropped as already seen, counted and logged. */
#include "gw.h"
#include "log.h"

/* real gaps in a row after which a partition's jumps are believed */
#define GAP_PROBES_REAL 3

/* Seeks p back to `offset`, without waiting: librdkafka raises the
 * partition's version barrier in this call (rd_kafka_toppar_op_seek), so no
 * message fetched before it is handed over after it, and its fetcher starts
 * again at `offset` when it serves the seek. (A blocking seek waited up to
 * its timeout with the loop stopped, and on a loaded machine timed out with
 * the seek still under way.) Returns 0, or -1 with the error logged. */
static int seek_back(eg_gw *gw, eg_part *p, int64_t offset) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = offset;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(gw->rk, l, 0);
    rd_kafka_resp_err_t err = e ? rd_kafka_error_code(e) : l->elems[0].err;
    if (e) rd_kafka_error_destroy(e);
    rd_kafka_topic_partition_list_destroy(l);
    if (!err || err == RD_KAFKA_RESP_ERR__IN_PROGRESS) return 0;
    eg_log_msg(EG_WARN, "source_offset_probe_failed", "%s[%d]: seek to %lld: %s; the jump is taken as a gap", p->topic,
               (int)p->partition, (long long)offset, rd_kafka_err2str(err));
    return -1;
}

int eg_gw_source_offset(eg_gw *gw, eg_part *p, int64_t offset) {
    int64_t next = p->trk.next_offset;
    if (p->probe_from >= 0 && offset < p->probe_at && offset >= next) {
        /* the re-fetch gave what the jump had skipped (a jump past `next`
         * still, if the log has nothing at `next` itself, is probed below) */
        (*gw->m.offset_refetched)++;
        eg_log_msg(EG_WARN, "source_offset_refetched",
                   "%s[%d]: offsets from %lld were skipped by the consumer (it jumped to %lld) and are taken now",
                   p->topic, (int)p->partition, (long long)p->probe_from, (long long)p->probe_at);
        p->probe_from = -1;
        p->gaps_real = 0;
    }
    if (next < 0 || offset == next) return 0;
    if (offset < next) {
        (*gw->m.offset_behind)++;
        eg_log_msg(EG_INFO, "source_offset_behind", "%s[%d]: offset %lld again after %lld; dropped as seen", p->topic,
                   (int)p->partition, (long long)offset, (long long)next - 1);
        return 1;
    }
    if (p->probe_from == next) {
        /* the re-fetch from `next` came back past it: the log has nothing there */
        p->probe_from = -1;
        p->gaps_real++;
    } else if (p->gaps_real < GAP_PROBES_REAL) {
        if (seek_back(gw, p, next) == 0) {
            (*gw->m.offset_probes)++;
            eg_log_msg(EG_INFO, "source_offset_probe",
                       "%s[%d]: offsets %lld..%lld not delivered; fetching from %lld again", p->topic,
                       (int)p->partition, (long long)next, (long long)offset - 1, (long long)next);
            p->probe_from = next;
            p->probe_at = offset;
            return 1;
        }
    }
    (*gw->m.offset_gaps)++;
    eg_log_msg(EG_WARN, "source_offset_gap", "%s[%d]: offsets %lld..%lld never delivered; next is %lld", p->topic,
               (int)p->partition, (long long)next, (long long)offset - 1, (long long)offset);
    return 0;
}

int eg_gw_source_probing(const eg_part *p) { return p->probe_from >= 0; }
