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

/* The dialect errgate.recorded.inbox reads h as (the same markers as its
 * INBOX_READ: errgate: error.code or errgate.id; spring: an exception
 * header, kafka_dlt-exception-*, kafka_dlt-key-exception-* or (retry
 * topics) kafka_exception-*; connect: its exception headers or __connect.errors.topic;
 * streams: __streams.errors.exception or .topic; share-group:
 * __dlq.errors.topic; x-dlq-metadata: a JSON document), as one of the
 * format names above, or NULL when h carries none. format is "auto" (the
 * first the record carries, in the order above), "foreign" (the same
 * without errgate: for a lane record's headers, whose error.code is the
 * lane writer's own) or one format (that one, when h carries it). A spec
 * (c/test_dlq_origin) checks it against the Lua reader. */
const char *eg_dlq_dialect(const rd_kafka_headers_t *h, const char *format);

/* Fills *o with the origin dialect `format` (a format name; NULL or
 * unknown: none) states in h, and no other dialect's: a record's origin is
 * the one of the dialect it is read as, never a copied header of another
 * (issue 28: Spring's recoverer copies the failed record's headers, so a
 * Spring DLT record may carry an original.topic its producer set). Returns
 * 0, or -1 (o->format NULL) when that dialect states no legal origin. */
int eg_dlq_origin_read_as(const rd_kafka_headers_t *h, const char *format, eg_dlq_origin *o);

/* eg_dlq_origin_read_as(h, eg_dlq_dialect(h, "auto"), o): the origin of
 * the dialect h is read as; when h is read as none, the first foreign
 * dialect (in the order above, errgate's excluded) that states one. h may
 * be NULL. Never reads past a value. */
int eg_dlq_origin_read(const rd_kafka_headers_t *h, eg_dlq_origin *o);

/* Inbox mode, before a record's lane write: when h (the inbox record's own
 * headers, changed in place) is read as a dialect other than errgate's
 * under `format` (source.inbox), removes its original.* headers: they are
 * copies, not that dialect's statement, and the lane writer's
 * eg_dlq_origin_adopt then writes the dialect's own (or, when it states
 * none, the inbox record's coordinates). */
void eg_dlq_origin_settle(rd_kafka_headers_t *h, const char *format);

/* 1 when s[0..n) is a legal Kafka topic name (1 to 249 of [A-Za-z0-9._-],
 * not "." or ".."): the rule every original topic read here must keep. */
int eg_dlq_topic_ok(const char *s, size_t n);

/* Inbox mode: when h (a lane record's headers) has no original.topic yet
 * and the first foreign dialect it carries (eg_dlq_dialect "foreign"; none:
 * the first that states one) states an origin, adds errgate's original.topic, .partition, .offset,
 * .timestamp (RFC 3339) and .consumer.group headers from it (those the
 * dialect states), so the lane writer's written-once rule keeps them. */
void eg_dlq_origin_adopt(rd_kafka_headers_t *h);

/* eg_dlq_origin_adopt, told the inbox record's own timestamp (record_ts_ms:
 * its CreateTime, -1 unknown or LogAppendTime). Kafka Connect
 * (DeadLetterQueueReporter.report) and Kafka Streams
 * (ExceptionHandlerUtils.buildDeadLetterQueueRecord) write a dead letter
 * with the failed record's timestamp and state it nowhere else, so for those
 * two dialects it is the original.timestamp; a share group's dead letter is
 * stamped when the broker writes it, and the others state their own. */
void eg_dlq_origin_adopt_at(rd_kafka_headers_t *h, int64_t record_ts_ms);

#endif
