/* dlq_origin.h — where a dead-letter record was born, read from whichever
 * DLQ dialect it carries: errgate's own original.* headers, Spring Kafka's
 * kafka_dlt-original-*, Kafka Connect's __connect.errors.*, Kafka Streams'
 * __streams.errors.*, a share group's __dlq.errors.* or the x-dlq-metadata
 * JSON header. Used where errgate handles DLQs it did not write: inbox mode
 * (a normalized record keeps its true birth place) and `dlq tail|stats`.
 *
 * The failure itself (exception class, message) is not read here: that is
 * errgate.recorded's job (Lua), one mapper for every reader. */
#ifndef EG_DLQ_ORIGIN_H
#define EG_DLQ_ORIGIN_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

typedef struct eg_dlq_origin {
    const char *format; /* "errgate", "spring", "connect", "streams", "share-group", "x-dlq-metadata" */
    char topic[256];
    int64_t partition, offset; /* -1 when the dialect does not state it (or states garbage) */
    int64_t timestamp_ms;      /* -1 when unknown */
    char group[256];           /* "" when unknown */
} eg_dlq_origin;

/* Fills *o from the first dialect h carries (in the order above) whose
 * original topic is a non-empty string. Returns 0, or -1 (o->format NULL)
 * when h states no origin. h may be NULL. Never reads past a value. */
int eg_dlq_origin_read(const rd_kafka_headers_t *h, eg_dlq_origin *o);

/* 1 when s[0..n) is a legal Kafka topic name (1 to 249 of [A-Za-z0-9._-],
 * not "." or ".."): the rule every original topic read here must keep. */
int eg_dlq_topic_ok(const char *s, size_t n);

/* Inbox mode: when h has no original.topic yet and states a foreign origin,
 * adds errgate's original.topic, .partition, .offset, .timestamp (RFC 3339)
 * and .consumer.group headers from it (those the dialect states), so the
 * lane writer's written-once rule keeps them. */
void eg_dlq_origin_adopt(rd_kafka_headers_t *h);

#endif
