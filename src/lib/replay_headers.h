/* replay_headers.h — the headers of a replayed record and its loop guard,
 * shared by `errgate replay` and inbox mode's replay (replay_headers.c).
 * Pure: no Kafka client, no state. The caller owns what it is given and
 * what it gets back. */
#ifndef EG_REPLAY_HEADERS_H
#define EG_REPLAY_HEADERS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* The loop guard's default: a record replayed this many times is not
 * replayed again (`errgate replay --max-replays`, inbox mode's replay). */
#define EG_REPLAY_MAX_REPLAYS 3

/* The errgate.replays count carried by a header value (NULL: absent, 0).
 * Returns the count, or -1 when the value is not a non-negative integer. */
long eg_replays_parse(const void *val, size_t len);

/* The headers of a replayed record: every header of src (may be NULL) in
 * order, except errgate.protect (dropped: a replayed record holds its
 * payload as it came) and retry.count, replay.from-dlq, replay.timestamp and
 * errgate.replays, which are then set to "0", from ("lane/partition/offset"),
 * the RFC 3339 form of now_ms, and replays, and errgate.attempts, which is
 * written once, as the largest well-formed count (0 to 2^31-2) of its
 * values, or dropped when none is well-formed (non-numeric, negative,
 * huge, empty: the gateway counts afresh). original.*, errgate.id,
 * errgate.history and the error headers survive unchanged. The caller owns
 * the result (rd_kafka_producev takes it on success). */
rd_kafka_headers_t *eg_replay_headers(const rd_kafka_headers_t *src, const char *from, int64_t now_ms, long replays);

#endif
