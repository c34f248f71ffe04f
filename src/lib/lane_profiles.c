/* lane_profiles.c — the compatibility header profiles of lane records (see
 * lane_profiles.h, DESIGN §4).
 *
 * Each profile writes the header names and value encodings its system
 * writes, read from that system's sources:
 *
 * spring  spring-kafka, org.springframework.kafka.support.KafkaHeaders
 *         (names: PREFIX "kafka_" + "dlt-...") and
 *         org.springframework.kafka.listener.DeadLetterPublishingRecoverer
 *         (maybeAddOriginalHeaders, addExceptionInfoHeaders): topic, group,
 *         exception class, message and stack trace as UTF-8; partition as a
 *         4-byte big-endian int (ByteBuffer.putInt), offset and timestamp as
 *         8-byte big-endian longs (ByteBuffer.putLong); timestamp type as
 *         TimestampType.toString() ("CreateTime", "LogAppendTime").
 * connect Apache Kafka, connect/runtime/.../errors/DeadLetterQueueReporter
 *         (populateContextHeaders): "__connect.errors." + topic, partition,
 *         offset (decimal text), connector.name, task.id, stage, class.name,
 *         exception.class.name, exception.message, exception.stacktrace.
 * streams Apache Kafka, streams/.../errors/internals/ExceptionHandlerUtils
 *         (KIP-1034, buildDeadLetterQueueRecord in 4.4.0): "__streams.errors."
 *         + exception (exception.getClass().getName(): the class alone),
 *         message (getMessage()), stacktrace (printStackTrace's text, which
 *         starts "class: message"), topic, partition, offset (String.valueOf).
 *         Checked against Kafka's own constants by the anchor tool
 *         (spec/anchors/streams-connect, e2e/test_anchor_streams_connect).
 * x-dlq-metadata  one JSON object (a house format) of string members, as
 *         its consumers read them: original_headers (an object, the
 *         record's own headers, name -> value), original_topic,
 *         original_consumer_group, original_timestamp (epoch milliseconds
 *         as a decimal string, the record timestamp as Kafka states it; ""
 *         when unknown) and error_info ("CODE: MESSAGE", the
 *         Throwable.toString() form the streams profile writes; "CODE"
 *         without a message). Before issue 29 original_timestamp was a JSON
 *         number and error_info an object; errgate's readers take both.
 *
 * errgate is not a JVM: where a profile wants an exception class, errgate
 * writes the policy's error.code (the most specific name it has, e.g.
 * http_503 or NullPointerException after an inbox triage), and the stack
 * trace is the one line Throwable.printStackTrace starts with
 * ("CODE: MESSAGE"). Connect's connector.name is errgate.app (the
 * application: app.name, else metrics.pipeline, else the group), its
 * task.id "0", its stage "TASK_PUT" (the sink step that calls downstream),
 * its class.name "errgate". */
#include "lane_profiles.h"
#include "headers.h"
#include "json.h"
#include "parse.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char eg_profile_names[] = "spring, connect, streams, x-dlq-metadata";

/* spring-kafka KafkaHeaders.DLT_* */
#define SP_TOPIC "kafka_dlt-original-topic"
#define SP_PARTITION "kafka_dlt-original-partition"
#define SP_OFFSET "kafka_dlt-original-offset"
#define SP_TIMESTAMP "kafka_dlt-original-timestamp"
#define SP_TIMESTAMP_TYPE "kafka_dlt-original-timestamp-type"
#define SP_GROUP "kafka_dlt-original-consumer-group"
#define SP_FQCN "kafka_dlt-exception-fqcn"
#define SP_CAUSE "kafka_dlt-exception-cause-fqcn"
#define SP_MESSAGE "kafka_dlt-exception-message"
#define SP_STACKTRACE "kafka_dlt-exception-stacktrace"
/* Kafka Connect DeadLetterQueueReporter.ERROR_HEADER_* */
#define CN_TOPIC "__connect.errors.topic"
#define CN_PARTITION "__connect.errors.partition"
#define CN_OFFSET "__connect.errors.offset"
#define CN_CONNECTOR "__connect.errors.connector.name"
#define CN_TASK "__connect.errors.task.id"
#define CN_STAGE "__connect.errors.stage"
#define CN_CLASS "__connect.errors.class.name"
#define CN_EXCEPTION "__connect.errors.exception.class.name"
#define CN_MESSAGE "__connect.errors.exception.message"
#define CN_STACKTRACE "__connect.errors.exception.stacktrace"
/* Kafka Streams ExceptionHandlerUtils.HEADER_ERRORS_* */
#define ST_EXCEPTION "__streams.errors.exception"
#define ST_MESSAGE "__streams.errors.message"
#define ST_STACKTRACE "__streams.errors.stacktrace"
#define ST_TOPIC "__streams.errors.topic"
#define ST_PARTITION "__streams.errors.partition"
#define ST_OFFSET "__streams.errors.offset"
/* the x-dlq-metadata house format */
#define XDLQ "x-dlq-metadata"

static const struct {
    const char *name;
    unsigned bit;
} profiles[] = {{"spring", EG_PROFILE_SPRING},
                {"connect", EG_PROFILE_CONNECT},
                {"streams", EG_PROFILE_STREAMS},
                {"x-dlq-metadata", EG_PROFILE_XDLQ}};

unsigned eg_profile_bit(const char *name) {
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (strcmp(name, profiles[i].name) == 0) return profiles[i].bit;
    return 0;
}

/* The headers each profile writes afresh at every lane write. */
static const char *const spring_replaced[] = {SP_FQCN, SP_CAUSE, SP_MESSAGE, SP_STACKTRACE, NULL};
static const char *const connect_replaced[] = {CN_CONNECTOR, CN_TASK,    CN_STAGE,      CN_CLASS,
                                               CN_EXCEPTION, CN_MESSAGE, CN_STACKTRACE, NULL};
static const char *const streams_replaced[] = {ST_EXCEPTION, ST_MESSAGE, ST_STACKTRACE, NULL};
static const char *const xdlq_replaced[] = {XDLQ, NULL};

static int in(const char *const *names, const char *name) {
    for (; *names; names++)
        if (strcmp(*names, name) == 0) return 1;
    return 0;
}

int eg_profile_replaced(unsigned mask, const char *name) {
    return ((mask & EG_PROFILE_SPRING) && in(spring_replaced, name)) ||
           ((mask & EG_PROFILE_CONNECT) && in(connect_replaced, name)) ||
           ((mask & EG_PROFILE_STREAMS) && in(streams_replaced, name)) ||
           ((mask & EG_PROFILE_XDLQ) && in(xdlq_replaced, name));
}

/* The value of header `name` in h as a NUL-terminated string in buf
 * (truncated to buflen - 1), or "" when absent. Returns buf. */
static const char *get(const rd_kafka_headers_t *h, const char *name, char *buf, size_t buflen) {
    const void *v;
    size_t n;
    buf[0] = '\0';
    if (rd_kafka_header_get_last(h, name, &v, &n) == 0 && v) {
        if (n >= buflen) n = buflen - 1;
        memcpy(buf, v, n);
        buf[n] = '\0';
    }
    return buf;
}

static int has(const rd_kafka_headers_t *h, const char *name) {
    const void *v;
    size_t n;
    return rd_kafka_header_get_last(h, name, &v, &n) == 0;
}

static void add(rd_kafka_headers_t *h, const char *name, const char *val) { rd_kafka_header_add(h, name, -1, val, -1); }

/* Adds a header the profile writes once (an original-record field): only
 * when h does not carry it yet. */
static void add_once(rd_kafka_headers_t *h, const char *name, const void *val, ssize_t n) {
    if (!has(h, name)) rd_kafka_header_add(h, name, -1, val, n);
}

/* Big-endian bytes of v, as java.nio.ByteBuffer writes them. */
static void be32(int32_t v, unsigned char out[4]) {
    uint32_t u = (uint32_t)v;
    for (int i = 3; i >= 0; i--, u >>= 8) out[i] = (unsigned char)(u & 0xff);
}
static void be64(int64_t v, unsigned char out[8]) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--, u >>= 8) out[i] = (unsigned char)(u & 0xff);
}

/* The facts every profile is written from. */
typedef struct facts {
    char code[256], message[1024];
    char topic[256], partition[16], offset[32], group[256], app[256];
    int64_t timestamp; /* ms since the epoch, -1 when unknown */
    char trace[1300];  /* "CODE: MESSAGE" (Throwable.toString) */
} facts;

static void read_facts(const rd_kafka_headers_t *h, facts *f) {
    char ts[64];
    get(h, EG_H_CODE, f->code, sizeof f->code);
    get(h, EG_H_MESSAGE, f->message, sizeof f->message);
    get(h, EG_H_ORIG_TOPIC, f->topic, sizeof f->topic);
    get(h, EG_H_ORIG_PARTITION, f->partition, sizeof f->partition);
    get(h, EG_H_ORIG_OFFSET, f->offset, sizeof f->offset);
    get(h, EG_H_ORIG_GROUP, f->group, sizeof f->group);
    if (!*get(h, EG_H_APP, f->app, sizeof f->app)) memcpy(f->app, f->group, sizeof f->app);
    if (eg_parse_time_ms(get(h, EG_H_ORIG_TIMESTAMP, ts, sizeof ts), &f->timestamp) != 0) f->timestamp = -1;
    if (f->message[0]) snprintf(f->trace, sizeof f->trace, "%s: %s", f->code, f->message);
    else snprintf(f->trace, sizeof f->trace, "%s", f->code);
}

static long long num(const char *s) { return strtoll(s, NULL, 10); }

static void add_spring(rd_kafka_headers_t *h, const facts *f, const rd_kafka_message_t *m) {
    unsigned char b4[4], b8[8];
    add_once(h, SP_TOPIC, f->topic, -1);
    be32((int32_t)num(f->partition), b4);
    add_once(h, SP_PARTITION, b4, 4);
    be64(num(f->offset), b8);
    add_once(h, SP_OFFSET, b8, 8);
    if (!has(h, SP_TIMESTAMP)) {
        rd_kafka_timestamp_type_t tt = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        if (m) rd_kafka_message_timestamp(m, &tt);
        be64(f->timestamp, b8);
        rd_kafka_header_add(h, SP_TIMESTAMP, -1, b8, 8);
        /* org.apache.kafka.common.record.TimestampType.toString() */
        add(h, SP_TIMESTAMP_TYPE,
            tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME ? "LogAppendTime"
            : tt == RD_KAFKA_TIMESTAMP_CREATE_TIME   ? "CreateTime"
                                                     : "NoTimestampType");
    }
    add_once(h, SP_GROUP, f->group, -1);
    add(h, SP_FQCN, f->code);
    if (f->message[0]) add(h, SP_MESSAGE, f->message); /* Spring: only when getMessage() != null */
    add(h, SP_STACKTRACE, f->trace);
}

static void add_connect(rd_kafka_headers_t *h, const facts *f) {
    add_once(h, CN_TOPIC, f->topic, -1);
    add_once(h, CN_PARTITION, f->partition, -1);
    add_once(h, CN_OFFSET, f->offset, -1);
    add(h, CN_CONNECTOR, f->app); /* errgate.app: the application, the group by default */
    add(h, CN_TASK, "0");
    add(h, CN_STAGE, "TASK_PUT");
    add(h, CN_CLASS, "errgate");
    add(h, CN_EXCEPTION, f->code);
    add(h, CN_MESSAGE, f->message);
    add(h, CN_STACKTRACE, f->trace);
}

static void add_streams(rd_kafka_headers_t *h, const facts *f) {
    add(h, ST_EXCEPTION, f->code); /* getClass().getName(): the class alone, as Kafka 4.4.0 writes it */
    add(h, ST_MESSAGE, f->message);
    add(h, ST_STACKTRACE, f->trace);
    add_once(h, ST_TOPIC, f->topic, -1);
    add_once(h, ST_PARTITION, f->partition, -1);
    add_once(h, ST_OFFSET, f->offset, -1);
}

/* True for the headers that are not the original record's own: errgate's
 * (headers.h) and every profile's. */
static int foreign_or_errgate(const char *name) {
    static const char *const prefixes[] = {"error.",
                                           "retry.",
                                           "previous.",
                                           "original.",
                                           "errgate.",
                                           "replay.",
                                           "kafka_dlt-",
                                           "kafka_original-",
                                           "kafka_exception-",
                                           "retry_topic-",
                                           "__connect.errors.",
                                           "__streams.errors.",
                                           "__dlq.errors.",
                                           XDLQ,
                                           NULL};
    for (const char *const *p = prefixes; *p; p++)
        if (strncmp(name, *p, strlen(*p)) == 0) return 1;
    return 0;
}

static void member(struct evbuffer *b, const char *name, const char *val, int comma) {
    if (comma) evbuffer_add(b, ",", 1);
    eg_json_str(b, name);
    evbuffer_add(b, ":", 1);
    eg_json_str(b, val);
}

/* x-dlq-metadata: {"original_headers":{name:value,...},"original_topic":...,
 * "original_consumer_group":...,"original_timestamp":"MS"|"",
 * "error_info":"CODE: MESSAGE"}. original_headers holds the record's own
 * headers (later duplicates win), values as UTF-8 text (bytes that are not
 * become U+FFFD). */
static void add_xdlq(rd_kafka_headers_t *h, const facts *f) {
    struct evbuffer *b = evbuffer_new();
    if (!b) return;
    evbuffer_add_printf(b, "{\"original_headers\":{");
    const char *name;
    const void *val;
    size_t size;
    int n = 0;
    for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &size) == 0; i++) {
        if (foreign_or_errgate(name)) continue;
        if (n++) evbuffer_add(b, ",", 1);
        eg_json_str(b, name);
        evbuffer_add(b, ":", 1);
        eg_json_strn(b, val ? val : "", val ? size : 0);
    }
    evbuffer_add(b, "}", 1);
    member(b, "original_topic", f->topic, 1);
    member(b, "original_consumer_group", f->group, 1);
    char ms[24] = "";
    if (f->timestamp >= 0) snprintf(ms, sizeof ms, "%lld", (long long)f->timestamp);
    member(b, "original_timestamp", ms, 1);
    member(b, "error_info", f->trace, 1);
    evbuffer_add(b, "}", 1);
    size_t len = evbuffer_get_length(b);
    rd_kafka_header_add(h, XDLQ, -1, evbuffer_pullup(b, -1), (ssize_t)len);
    evbuffer_free(b);
}

void eg_profiles_add(rd_kafka_headers_t *h, unsigned mask, const rd_kafka_message_t *m) {
    if (!mask) return;
    facts f;
    read_facts(h, &f);
    if (mask & EG_PROFILE_XDLQ) add_xdlq(h, &f); /* first: original_headers are h's before the others */
    if (mask & EG_PROFILE_SPRING) add_spring(h, &f, m);
    if (mask & EG_PROFILE_CONNECT) add_connect(h, &f);
    if (mask & EG_PROFILE_STREAMS) add_streams(h, &f);
}
