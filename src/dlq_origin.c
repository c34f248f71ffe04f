/* dlq_origin.c — the original coordinates of a DLQ record in any dialect
 * (see dlq_origin.h). Header names and encodings, from each system's
 * sources:
 *   errgate  src/headers.h: original.topic, .partition, .offset (decimal),
 *            .timestamp (RFC 3339), .consumer.group
 *   spring   spring-kafka KafkaHeaders / DeadLetterPublishingRecoverer:
 *            kafka_dlt-original-topic, -partition (4-byte big-endian int),
 *            -offset, -timestamp (8-byte big-endian longs),
 *            -consumer-group; decimal text is accepted too (non-Java writers)
 *   connect  Kafka Connect DeadLetterQueueReporter: __connect.errors.topic,
 *            .partition, .offset (String.valueOf)
 *   streams  Kafka Streams ExceptionHandlerUtils (KIP-1034):
 *            __streams.errors.topic, .partition, .offset (String.valueOf)
 *   share-group  Kafka ShareGroupDLQRecordHelper (KIP-1191):
 *            __dlq.errors.topic, .partition, .offset (toString), .group
 *   x-dlq-metadata  JSON: original_topic, original_consumer_group (strings;
 *            original_timestamp is not read: its type is not fixed) */
#include "dlq_origin.h"
#include "headers.h"
#include "json.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* A decimal integer (optional '-', 1 to 18 digits), or -1. */
static int64_t dec(const void *v, size_t n) {
    const unsigned char *s = v;
    if (!s || n == 0 || n > 19) return -1;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == n) return -1;
    int64_t x = 0;
    for (size_t k = i; k < n; k++) {
        if (s[k] < '0' || s[k] > '9' || k - i >= 18) return -1;
        x = x * 10 + (s[k] - '0');
    }
    return i ? -x : x;
}

/* A big-endian integer of exactly `size` bytes (4: int, 8: long), else the
 * decimal reading. */
static int64_t be_or_dec(const void *v, size_t n, size_t size) {
    if (!v || n != size) return dec(v, n);
    const unsigned char *s = v;
    uint64_t u = 0;
    for (size_t i = 0; i < n; i++) u = (u << 8) | s[i];
    return n == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
}

/* Copies header `name` as a string into out; returns 1 when present and
 * non-empty. */
static int str(const rd_kafka_headers_t *h, const char *name, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = eg_headers_get(h, name, &n);
    out[0] = '\0';
    if (!v || n == 0) return 0;
    if (n >= outlen) n = outlen - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return memchr(out, '\0', n) == NULL;
}

static int64_t num(const rd_kafka_headers_t *h, const char *name, size_t be_size) {
    size_t n = 0;
    const void *v = eg_headers_get(h, name, &n);
    return be_size ? be_or_dec(v, n, be_size) : dec(v, n);
}

/* One text dialect: prefix + topic / partition / offset [/ group]. */
typedef struct dialect {
    const char *format, *topic, *partition, *offset, *group;
} dialect;

static const dialect texts[] = {
    {"connect", "__connect.errors.topic", "__connect.errors.partition", "__connect.errors.offset", NULL},
    {"streams", "__streams.errors.topic", "__streams.errors.partition", "__streams.errors.offset", NULL},
    {"share-group", "__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group"},
};

int eg_dlq_origin_read(const rd_kafka_headers_t *h, eg_dlq_origin *o) {
    memset(o, 0, sizeof *o);
    o->partition = o->offset = o->timestamp_ms = -1;
    if (!h) return -1;
    char ts[64];
    if (str(h, EG_H_ORIG_TOPIC, o->topic, sizeof o->topic)) {
        o->format = "errgate";
        o->partition = num(h, EG_H_ORIG_PARTITION, 0);
        o->offset = num(h, EG_H_ORIG_OFFSET, 0);
        if (!str(h, EG_H_ORIG_TIMESTAMP, ts, sizeof ts) || eg_parse_time_ms(ts, &o->timestamp_ms) != 0)
            o->timestamp_ms = -1;
        str(h, EG_H_ORIG_GROUP, o->group, sizeof o->group);
        return 0;
    }
    if (str(h, "kafka_dlt-original-topic", o->topic, sizeof o->topic)) {
        o->format = "spring";
        o->partition = num(h, "kafka_dlt-original-partition", 4);
        o->offset = num(h, "kafka_dlt-original-offset", 8);
        o->timestamp_ms = num(h, "kafka_dlt-original-timestamp", 8);
        str(h, "kafka_dlt-original-consumer-group", o->group, sizeof o->group);
        return 0;
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const dialect *d = &texts[i];
        if (!str(h, d->topic, o->topic, sizeof o->topic)) continue;
        o->format = d->format;
        o->partition = num(h, d->partition, 0);
        o->offset = num(h, d->offset, 0);
        if (d->group) str(h, d->group, o->group, sizeof o->group);
        return 0;
    }
    size_t n = 0;
    const char *x = eg_headers_get(h, "x-dlq-metadata", &n);
    if (x && eg_json_get_str(x, n, "original_topic", o->topic, sizeof o->topic) == 0 && o->topic[0]) {
        o->format = "x-dlq-metadata";
        if (eg_json_get_str(x, n, "original_consumer_group", o->group, sizeof o->group) != 0) o->group[0] = '\0';
        return 0;
    }
    o->topic[0] = '\0';
    return -1;
}

void eg_dlq_origin_adopt(rd_kafka_headers_t *h) {
    eg_dlq_origin o;
    size_t n;
    if (eg_headers_get(h, EG_H_ORIG_TOPIC, &n) || eg_dlq_origin_read(h, &o) != 0) return;
    char buf[64];
    rd_kafka_header_add(h, EG_H_ORIG_TOPIC, -1, o.topic, -1);
    if (o.partition >= 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)o.partition);
        rd_kafka_header_add(h, EG_H_ORIG_PARTITION, -1, buf, -1);
    }
    if (o.offset >= 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)o.offset);
        rd_kafka_header_add(h, EG_H_ORIG_OFFSET, -1, buf, -1);
    }
    if (o.timestamp_ms >= 0) {
        eg_rfc3339(o.timestamp_ms, buf, sizeof buf);
        rd_kafka_header_add(h, EG_H_ORIG_TIMESTAMP, -1, buf, -1);
    }
    if (o.group[0]) rd_kafka_header_add(h, EG_H_ORIG_GROUP, -1, o.group, -1);
}
