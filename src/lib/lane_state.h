/* lane_state.h — the lifecycle state of a dead letter, shared by the
 * gateway (which writes accepted-loss records and the approval header) and
 * the DLQ commands (which read and set statuses): the names of the states,
 * the state topic of a lane, the JSON of a state record, the item id of a
 * lane record, and the compacted state topic made sure of (lane_state.c).
 *
 * Lifecycle. The status of a DLQ item lives in the compacted topic
 * `<LANE>.state`, keyed by the item's errgate.id (the lane coordinates
 * "lane/partition/offset" for a record that has no errgate.id), value a JSON
 * object {"status":..,"reason":..,"at":RFC 3339,"by":"user@host"}; a
 * tombstone (null value) reopens the item.
 *
 * States: open -> (pending-approval -> approved) -> replayed | accepted-loss
 * | closed. A state record holds approved, replayed, accepted-loss or closed
 * (the last three resolve the item). A state record applies to the lane
 * records of its id written at or before it: a record replayed, failed
 * again and dead-lettered anew is open again, while its older copy stays
 * resolved. Of the records that apply, the latest resolving one wins (so an
 * approval of the newer copy leaves the older copy replayed), else an
 * approval. An approval names in "since" the timestamp of the oldest lane
 * record it approves and does not apply to older ones, so that it never
 * reaches an older copy, even once compaction has removed the status that
 * resolved that copy. A tombstone forgets every earlier status. A lane
 * record with no
 * state record that applies is pending-approval when it carries
 * the header errgate.approval: required (written by the gateway on lanes
 * that require approval, lanes.dlq_approval / lanes.quarantine_approval, or
 * for a route entry with approval = true), else open.
 *
 * Ownership: the caller owns every buffer; nothing is kept. */
#ifndef EG_LANE_STATE_H
#define EG_LANE_STATE_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    EG_DLQ_OPEN = 0,
    EG_DLQ_PENDING,  /* pending-approval */
    EG_DLQ_APPROVED, /* approved, not yet replayed */
    EG_DLQ_REPLAYED, /* from here on: resolved */
    EG_DLQ_ACCEPTED_LOSS,
    EG_DLQ_CLOSED,
    EG_DLQ__N
} eg_dlq_status;

/* 1 for the statuses that resolve an item (replayed, accepted-loss, closed). */
#define eg_dlq_resolved(s) ((s) >= EG_DLQ_REPLAYED)

const char *eg_dlq_status_name(eg_dlq_status s);
/* The resolution status named s (replayed, accepted-loss or closed), or -1. */
int eg_dlq_status_parse(const char *s);
/* Any state named s (open, pending-approval, approved, replayed,
 * accepted-loss, closed), or -1. */
int eg_dlq_state_parse(const char *s);

/* "<lane>.state" into out. */
void eg_dlq_state_topic(const char *lane, char *out, size_t outlen);

/* The JSON value of a state record, {status, reason, at, by[, since]}
 * (since: the RFC 3339 form of since_ms, written when since_ms >= 0).
 * Returns its length, or -1 when it does not fit in outlen. reason may be
 * NULL (written as ""). */
int eg_dlq_state_json(eg_dlq_status s, const char *reason, int64_t at_ms, const char *by, int64_t since_ms, char *out,
                      size_t outlen);

/* "user@host" of the operator, into out. */
void eg_dlq_whoami(char *out, size_t outlen);

/* The item id of a lane record: its errgate.id, or "topic/partition/offset"
 * of the lane record itself when it has none. */
void eg_dlq_item_id(const rd_kafka_message_t *m, char *out, size_t outlen);

/* Makes sure the state topic exists before it is written: when absent, it is
 * created with cleanup.policy=compact and `partitions` partitions through
 * the Admin API. When the cluster cannot create it (no reachable controller,
 * as on librdkafka's mock cluster, or CreateTopics refused), a one-line note
 * saying so is written into note and 0 is returned: the first write
 * auto-creates it without compaction where the cluster allows that. Returns
 * -1 with err only when the cluster cannot be asked at all. */
int eg_dlq_state_ensure(rd_kafka_t *rk, const char *topic, int partitions, char *note, size_t notelen, char *err,
                        size_t errlen);

#endif
