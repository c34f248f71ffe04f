/* dlq_origin.c — the original coordinates of a DLQ record in any dialect
 * (see dlq_origin.h). Header names and encodings, from each system's
 * sources:
 *   errgate  src/lib/headers.h: original.topic, .partition, .offset (decimal),
 *            .timestamp (RFC 3339), .consumer.group
 *   spring   spring-kafka KafkaHeaders / DeadLetterPublishingRecoverer:
 *            kafka_dlt-original-topic, -partition (4-byte big-endian int),
 *            -offset, -timestamp (8-byte big-endian longs),
 *            -consumer-group; decimal text is accepted too (non-Java
 *            writers). Spring's non-blocking retries (@RetryableTopic) name
 *            them without "dlt-" on the retry and DLT topics they write
 *            (KafkaHeaders.ORIGINAL_TOPIC "kafka_original-topic", -partition,
 *            -offset, -timestamp; the group stays
 *            kafka_dlt-original-consumer-group), met on real Spring 4.1
 *            records: the kafka_dlt- set when its topic is legal, else that one
 *   connect  Kafka Connect DeadLetterQueueReporter: __connect.errors.topic,
 *            .partition, .offset (String.valueOf)
 *   streams  Kafka Streams ExceptionHandlerUtils (KIP-1034):
 *            __streams.errors.topic, .partition, .offset (String.valueOf);
 *            Connect and Streams state no timestamp: their dead letter
 *            carries the failed record's as its own (eg_dlq_origin_adopt_at)
 *   share-group  Kafka 4.4.0 ShareGroupDLQStateManager (KIP-1191):
 *            __dlq.errors.topic, .partition, .offset (toString), .group;
 *            the dead letter is stamped when the broker writes it and
 *            carries none of the record's own headers
 *   x-dlq-metadata  JSON: original_topic, original_consumer_group (strings),
 *            original_timestamp: epoch milliseconds as a decimal string (the
 *            form errgate's profile writes since issue 29) or a JSON number
 *            (the form it wrote before: old lane records hold it)
 *
 * Foreign bytes, one rule per field (a value that breaks it is unknown, as
 * if the dialect did not state it; nothing is cut or repaired, so nothing
 * forged survives): the topic is a legal Kafka topic name (1 to 249 of
 * [A-Za-z0-9._-]), else the dialect states no origin and the next one is
 * tried; the group is 1 to 255 bytes of UTF-8 text without control
 * characters; the partition is 0 to 2^31-1, the offset 0 to 10^18-1, the
 * timestamp 0 to 9999-12-31T23:59:59.999Z. Of a repeated header, the last
 * value counts (eg_headers_get); an empty or NULL value is absent. */
#include "dlq_origin.h"
#include "headers.h"
#include "json.h"
#include "config.h"
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

/* The latest time a timestamp may state: 9999-12-31T23:59:59.999Z. */
#define TS_MAX 253402300799999LL

int eg_dlq_topic_ok(const char *s, size_t n) {
    if (n == 0 || n > EG_TOPIC_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* 1 when s[0..n) is UTF-8 text without control characters (NUL, C0, DEL). */
static int text_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return eg_utf8_valid(s, n);
}

/* 1 when out (NUL-terminated) keeps its field's rule: is_topic, a topic
 * name, else text (see the file comment); empties out otherwise. */
static int keep(char *out, int is_topic) {
    size_t n = strlen(out);
    if (n && (is_topic ? eg_dlq_topic_ok(out, n) : text_ok(out, n))) return 1;
    out[0] = '\0';
    return 0;
}

/* Copies header `name` into out when it is present, fits whole and keeps
 * its rule (is_topic: a topic name, else text); returns 1 then, else 0 with
 * out empty. */
static int str(const rd_kafka_headers_t *h, const char *name, char *out, size_t outlen, int is_topic) {
    size_t n = 0;
    const void *v = eg_headers_get(h, name, &n);
    out[0] = '\0';
    if (!v || n == 0 || n >= outlen) return 0;
    memcpy(out, v, n);
    out[n] = '\0';
    if (strlen(out) != n) out[0] = '\0'; /* a NUL inside */
    return keep(out, is_topic);
}

/* x in [0, max], else -1. */
static int64_t within(int64_t x, int64_t max) { return x >= 0 && x <= max ? x : -1; }

/* Header `name` as a number in [0, max] (be_size: Spring's big-endian
 * encoding of that many bytes, or decimal), else -1. */
static int64_t num(const rd_kafka_headers_t *h, const char *name, size_t be_size, int64_t max) {
    size_t n = 0;
    const void *v = eg_headers_get(h, name, &n);
    return within(be_size ? be_or_dec(v, n, be_size) : dec(v, n), max);
}

#define PART_MAX INT32_MAX
#define OFF_MAX 999999999999999999LL

/* One text dialect: prefix + topic / partition / offset [/ group]. */
typedef struct dialect {
    const char *format, *topic, *partition, *offset, *group;
} dialect;

static const dialect texts[] = {
    {"connect", "__connect.errors.topic", "__connect.errors.partition", "__connect.errors.offset", NULL},
    {"streams", "__streams.errors.topic", "__streams.errors.partition", "__streams.errors.offset", NULL},
    {"share-group", "__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group"},
};

/* 1 when h carries header `name` with a non-empty value (the last one). */
static int has(const rd_kafka_headers_t *h, const char *name) {
    size_t n = 0;
    return eg_headers_get(h, name, &n) != NULL && n > 0;
}

/* 1 when h's x-dlq-metadata reads as a JSON document (an object or an
 * array: what errgate.json decodes to a table). */
static int xdlq_doc(const rd_kafka_headers_t *h) {
    size_t n = 0;
    const char *x = eg_headers_get(h, "x-dlq-metadata", &n);
    size_t i = 0;
    while (x && i < n && (x[i] == ' ' || x[i] == '\t' || x[i] == '\n' || x[i] == '\r')) i++;
    return x && i < n && (x[i] == '{' || x[i] == '[');
}

/* The markers by which errgate.recorded.inbox's INBOX_READ knows a dialect
 * (a record carries the dialect when it has any of them, non-empty). */
static const struct {
    const char *format, *marks[9];
} dialects[] = {
    {"errgate", {"error.code", "errgate.id", NULL}},
    {"spring",
     {"kafka_dlt-exception-fqcn", "kafka_dlt-exception-cause-fqcn", "kafka_dlt-exception-message",
      "kafka_dlt-key-exception-fqcn", "kafka_dlt-key-exception-message", "kafka_exception-fqcn",
      "kafka_exception-cause-fqcn", "kafka_exception-message", NULL}},
    {"connect",
     {"__connect.errors.exception.class.name", "__connect.errors.exception.message", "__connect.errors.topic", NULL}},
    {"streams", {"__streams.errors.exception", "__streams.errors.topic", NULL}},
    {"share-group", {"__dlq.errors.topic", NULL}},
    {"x-dlq-metadata", {NULL}},
};
#define NDIALECTS (sizeof dialects / sizeof dialects[0])

/* 1 when h carries dialect i's markers. */
static int carries(const rd_kafka_headers_t *h, size_t i) {
    if (!strcmp(dialects[i].format, "x-dlq-metadata")) return xdlq_doc(h);
    for (const char *const *m = dialects[i].marks; *m; m++)
        if (has(h, *m)) return 1;
    return 0;
}

/* The dialect format names, for a static pointer to return. */
static const char *known(const char *format) {
    for (size_t i = 0; format && i < NDIALECTS; i++)
        if (!strcmp(dialects[i].format, format)) return dialects[i].format;
    return NULL;
}

const char *eg_dlq_dialect(const rd_kafka_headers_t *h, const char *format) {
    if (!h) return NULL;
    int any = !format || !strcmp(format, "auto"), foreign = format && !strcmp(format, "foreign");
    for (size_t i = foreign ? 1 : 0; i < NDIALECTS; i++)
        if ((any || foreign || !strcmp(format, dialects[i].format)) && carries(h, i)) return dialects[i].format;
    return NULL;
}

/* x-dlq-metadata's original_timestamp in the document x (n bytes): a
 * string of decimal epoch ms, or a bare number (older errgate lanes),
 * within [0, TS_MAX]; else -1. */
static int64_t xdlq_time(const char *x, size_t n) {
    const char *v;
    size_t vn;
    if (eg_json_get_raw(x, n, "original_timestamp", &v, &vn) != 0) return -1;
    if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') v++, vn -= 2;
    return within(dec(v, vn), TS_MAX);
}

int eg_dlq_origin_read_as(const rd_kafka_headers_t *h, const char *format, eg_dlq_origin *o) {
    memset(o, 0, sizeof *o);
    o->partition = o->offset = o->timestamp_ms = -1;
    format = known(format);
    if (!h || !format) return -1;
    char ts[64];
    if (!strcmp(format, "errgate")) {
        if (!str(h, EG_H_ORIG_TOPIC, o->topic, sizeof o->topic, 1)) return -1;
        o->format = format;
        o->partition = num(h, EG_H_ORIG_PARTITION, 0, PART_MAX);
        o->offset = num(h, EG_H_ORIG_OFFSET, 0, OFF_MAX);
        if (!str(h, EG_H_ORIG_TIMESTAMP, ts, sizeof ts, 0) || eg_parse_time_ms(ts, &o->timestamp_ms) != 0)
            o->timestamp_ms = -1;
        o->timestamp_ms = within(o->timestamp_ms, TS_MAX);
        str(h, EG_H_ORIG_GROUP, o->group, sizeof o->group, 0);
        return 0;
    }
    if (!strcmp(format, "spring")) {
        /* the DLT recoverer's names, else the retry topics' (one set whole, never mixed) */
        static const char *const sets[2][4] = {
            {"kafka_dlt-original-topic", "kafka_dlt-original-partition", "kafka_dlt-original-offset",
             "kafka_dlt-original-timestamp"},
            {"kafka_original-topic", "kafka_original-partition", "kafka_original-offset", "kafka_original-timestamp"}};
        for (size_t k = 0; k < 2; k++) {
            if (!str(h, sets[k][0], o->topic, sizeof o->topic, 1)) continue;
            o->format = format;
            o->partition = num(h, sets[k][1], 4, PART_MAX);
            o->offset = num(h, sets[k][2], 8, OFF_MAX);
            o->timestamp_ms = num(h, sets[k][3], 8, TS_MAX);
            str(h, "kafka_dlt-original-consumer-group", o->group, sizeof o->group, 0);
            return 0;
        }
        return -1;
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const dialect *d = &texts[i];
        if (strcmp(d->format, format)) continue;
        if (!str(h, d->topic, o->topic, sizeof o->topic, 1)) return -1;
        o->format = format;
        o->partition = num(h, d->partition, 0, PART_MAX);
        o->offset = num(h, d->offset, 0, OFF_MAX);
        if (d->group) str(h, d->group, o->group, sizeof o->group, 0);
        return 0;
    }
    size_t n = 0;
    const char *x = eg_headers_get(h, "x-dlq-metadata", &n);
    /* a string cut by the reader is longer than a topic name may be: refused as such; an
     * escaped NUL would end a string early: a document with one states nothing */
    if (x && !memmem(x, n, "\\u0000", 6) && eg_json_get_str(x, n, "original_topic", o->topic, sizeof o->topic) == 0 &&
        keep(o->topic, 1)) {
        o->format = format;
        if (eg_json_get_str(x, n, "original_consumer_group", o->group, sizeof o->group) != 0 ||
            strlen(o->group) >= sizeof o->group - 1)
            o->group[0] = '\0';
        keep(o->group, 0);
        o->timestamp_ms = xdlq_time(x, n);
        return 0;
    }
    o->topic[0] = '\0';
    return -1;
}

int eg_dlq_origin_read(const rd_kafka_headers_t *h, eg_dlq_origin *o) {
    const char *d = eg_dlq_dialect(h, "auto");
    if (d) return eg_dlq_origin_read_as(h, d, o);
    /* read as no dialect: the first foreign one that states an origin (never errgate's, which
     * anyone producing the failed record could have set) */
    for (size_t i = 1; i < NDIALECTS; i++)
        if (eg_dlq_origin_read_as(h, dialects[i].format, o) == 0) return 0;
    return -1;
}

/* The errgate original.* header names. */
static const char *const orig_names[] = {EG_H_ORIG_TOPIC, EG_H_ORIG_PARTITION, EG_H_ORIG_OFFSET, EG_H_ORIG_TIMESTAMP,
                                         EG_H_ORIG_GROUP};

void eg_dlq_origin_settle(rd_kafka_headers_t *h, const char *format) {
    const char *d = eg_dlq_dialect(h, format);
    if (!h || (d && !strcmp(d, "errgate"))) return;
    for (size_t i = 0; i < sizeof orig_names / sizeof orig_names[0]; i++) rd_kafka_header_remove(h, orig_names[i]);
}

void eg_dlq_origin_adopt(rd_kafka_headers_t *h) { eg_dlq_origin_adopt_at(h, -1); }

void eg_dlq_origin_adopt_at(rd_kafka_headers_t *h, int64_t record_ts_ms) {
    eg_dlq_origin o;
    size_t n;
    /* h is a lane record's: its error.code is the lane writer's own, so the
     * dialect is the first foreign one it carries */
    if (eg_headers_get(h, EG_H_ORIG_TOPIC, &n)) return;
    const char *d = eg_dlq_dialect(h, "foreign");
    int rc = -1;
    for (size_t i = 1; i < NDIALECTS && rc != 0; i++) /* read as none: the first that states one */
        if (!d || !strcmp(d, dialects[i].format)) rc = eg_dlq_origin_read_as(h, dialects[i].format, &o);
    if (rc != 0) return;
    /* Connect's and Streams' dead letters carry the failed record's timestamp as their own */
    if (o.timestamp_ms < 0 && (!strcmp(o.format, "connect") || !strcmp(o.format, "streams")))
        o.timestamp_ms = within(record_ts_ms, TS_MAX);
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
