/* lane_cases.c — a lane topic read back as recorded failures (see
 * lane_cases.h for the line format).
 *
 * One pass over the lane with kcli.h's reader; each record becomes one JSON
 * line in an evbuffer, which is flattened into one owned string at the end.
 * errgate's own headers (headers.h) are picked out by name; the headers
 * of every foreign DLQ dialect go as they are into "dlq", for the one
 * mapper of foreign failures (errgate.recorded.inbox, also behind inbox mode
 * and the DLQ commands), and the record's origin as dlq_origin.h reads it
 * (Spring's big-endian coordinates included) into "origin". Nothing is
 * interpreted here beyond bytes and origin: no profile is preferred, no
 * action inferred; errgate.recorded does that, where it is unit-tested. */
#include "lane_cases.h"
#include "dlq_origin.h"
#include "headers.h"
#include "json.h"
#include "record.h"
#include "util.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a header is copied into its profile object. */
typedef struct field {
    const char *header;
    const char *key;
} field;

static const field errgate_fields[] = {{EG_H_CLASS, "class"},
                                       {EG_H_CODE, "code"},
                                       {EG_H_MESSAGE, "message"},
                                       {EG_H_KIND, "kind"},
                                       {EG_H_STATUS, "status"},
                                       {EG_H_RETRY_AFTER, "retry_after_ms"},
                                       {EG_H_CLASS_HINT, "class_hint"},
                                       {EG_H_RETRY_COUNT, "retry_count"},
                                       {EG_H_ID, "id"},
                                       {EG_H_POLICY, "policy"},
                                       {EG_H_ACTION, "action"},
                                       {EG_H_REASON, "reason"},
                                       {EG_H_TIMESTAMP, "timestamp"},
                                       {EG_H_ORIG_TOPIC, "original_topic"},
                                       {EG_H_ORIG_PARTITION, "original_partition"},
                                       {EG_H_ORIG_OFFSET, "original_offset"},
                                       {NULL, NULL}};

/* errgate's lane headers that are not copied into the case at all (they
 * describe the lane journey, not the failure). */
static const char *const errgate_other[] = {EG_H_PREVIOUS,  EG_H_ORIG_TIMESTAMP, EG_H_ORIG_GROUP,
                                            EG_H_HISTORY,   EG_H_NOT_BEFORE,     EG_H_REPLAY_FROM,
                                            EG_H_REPLAY_TS, EG_H_REPLAYS,        NULL};

/* The headers of the foreign DLQ dialects errgate.recorded.inbox reads
 * (Spring Kafka KafkaHeaders.DLT_*, its retry topics' kafka_original-*,
 * kafka_exception-* and retry_topic-*, Kafka Connect DeadLetterQueueReporter,
 * Kafka Streams KIP-1034, share groups KIP-1191), by prefix, and the
 * x-dlq-metadata header. */
static const char *const dlq_prefixes[] = {"kafka_dlt-",        "kafka_original-",   "kafka_exception-", "retry_topic-",
                                           "__connect.errors.", "__streams.errors.", "__dlq.errors.",    NULL};
#define XDLQ_HEADER "x-dlq-metadata"

/* True for a foreign DLQ dialect's header. */
static int dlq_header(const char *name) {
    for (const char *const *p = dlq_prefixes; *p; p++)
        if (strncmp(name, *p, strlen(*p)) == 0) return 1;
    return strcmp(name, XDLQ_HEADER) == 0;
}

/* Appends v[0..n) as a JSON string when it is UTF-8 text, as {"hex": ".."}
 * otherwise, or null when v is NULL. Values longer than
 * EG_LANE_CASES_VALUE_MAX are cut (at a character boundary for text). */
static void put_value(struct evbuffer *b, const void *v, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = v;
    if (!v) {
        evbuffer_add(b, "null", 4);
        return;
    }
    if (n > EG_LANE_CASES_VALUE_MAX) {
        n = EG_LANE_CASES_VALUE_MAX;
        /* back to a character boundary: s[n] must not continue a character
         * (at most 3 bytes back, so binary values lose no more than that) */
        for (int k = 0; k < 3 && n > 0 && (s[n] & 0xc0) == 0x80; k++) n--;
    }
    if (memchr(s, 0, n) || !eg_utf8_valid(s, n)) {
        evbuffer_add(b, "{\"hex\":\"", 8);
        for (size_t i = 0; i < n; i++) {
            char two[2] = {hex[s[i] >> 4], hex[s[i] & 15]};
            evbuffer_add(b, two, 2);
        }
        evbuffer_add(b, "\"}", 2);
        return;
    }
    eg_json_strn(b, v, n);
}

/* Appends "key": */
static void put_key(struct evbuffer *b, const char *key) {
    put_value(b, key, strlen(key));
    evbuffer_add(b, ":", 1);
}

/* Appends ,"name":{...} with the fields of one profile that m carries;
 * nothing when it carries none. */
static void put_profile(struct evbuffer *b, const char *name, const field *fields, const rd_kafka_headers_t *h) {
    int n = 0;
    for (const field *f = fields; f->header; f++) {
        size_t len = 0;
        const void *v = eg_headers_get(h, f->header, &len);
        if (!v) continue;
        if (n++ == 0) evbuffer_add_printf(b, ",\"%s\":{", name);
        else evbuffer_add(b, ",", 1);
        put_key(b, f->key);
        put_value(b, v, len);
    }
    if (n) evbuffer_add(b, "}", 1);
}

/* True for the headers that belong to a profile (or to errgate's lane
 * journey) and so are not the record's own. */
static int profile_header(const char *name) {
    if (dlq_header(name)) return 1;
    for (const field *f = errgate_fields; f->header; f++)
        if (strcmp(name, f->header) == 0) return 1;
    for (const char *const *p = errgate_other; *p; p++)
        if (strcmp(name, *p) == 0) return 1;
    return 0;
}

/* Appends ,"NAME":{...}: the headers (names that are UTF-8 text), the last
 * value of each name, that are a foreign DLQ dialect's (dlq = 1; stack
 * traces left out) or the record's own (dlq = 0). */
static void put_headers(struct evbuffer *b, const rd_kafka_headers_t *h, int dlq) {
    evbuffer_add_printf(b, ",\"%s\":{", dlq ? "dlq" : "headers");
    int n = 0;
    if (h) {
        const char *name;
        const void *v;
        size_t len;
        for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &v, &len) == 0; i++) {
            /* a name that is not text cannot be a JSON key (nor matched by a policy) */
            if ((dlq ? !dlq_header(name) || strstr(name, "stacktrace") : profile_header(name)) ||
                !eg_utf8_valid(name, strlen(name)))
                continue;
            /* the last value wins: skip a name already written */
            int seen = 0;
            const char *prev;
            const void *pv;
            size_t plen;
            for (size_t j = 0; j < i && !seen; j++)
                if (rd_kafka_header_get_all(h, j, &prev, &pv, &plen) == 0 && strcmp(prev, name) == 0) seen = 1;
            if (seen) continue;
            v = eg_headers_get(h, name, &len);
            if (n++) evbuffer_add(b, ",", 1);
            put_key(b, name);
            put_value(b, v, len);
        }
    }
    evbuffer_add(b, "}", 1);
}

/* Appends ,"origin":{format, topic, partition, offset, timestamp, group}
 * (the known ones) when h states where the record was born (dlq_origin.h). */
static void put_origin(struct evbuffer *b, const rd_kafka_headers_t *h) {
    eg_dlq_origin o;
    if (eg_dlq_origin_read(h, &o) != 0) return;
    evbuffer_add_printf(b, ",\"origin\":{\"format\":\"%s\",\"topic\":", o.format);
    put_value(b, o.topic, strlen(o.topic));
    const struct {
        const char *k;
        int64_t v;
    } nums[] = {{"partition", o.partition}, {"offset", o.offset}, {"timestamp", o.timestamp_ms}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (nums[i].v >= 0) evbuffer_add_printf(b, ",\"%s\":%lld", nums[i].k, (long long)nums[i].v);
    if (o.group[0]) {
        evbuffer_add(b, ",\"group\":", 9);
        put_value(b, o.group, strlen(o.group));
    }
    evbuffer_add(b, "}", 1);
}

void eg_lane_cases_put_headers(struct evbuffer *b, const rd_kafka_headers_t *h) {
    put_profile(b, "errgate", errgate_fields, h);
    put_headers(b, h, 1);
    put_origin(b, h);
    put_headers(b, h, 0);
}

typedef struct reader {
    struct evbuffer *buf;
    long records;
    long limit;
    int limited;
} reader;

static int on_record(const rd_kafka_message_t *m, void *arg) {
    reader *r = arg;
    struct evbuffer *b = r->buf;
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    evbuffer_add(b, "{\"lane\":{\"topic\":", 17);
    const char *topic = rd_kafka_topic_name(m->rkt);
    put_value(b, topic, strlen(topic));
    evbuffer_add_printf(b, ",\"partition\":%d,\"offset\":%lld,\"timestamp\":%lld},\"key\":", (int)m->partition,
                        (long long)m->offset, (long long)ts);
    put_value(b, m->key, m->key_len);
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) != 0) h = NULL;
    eg_lane_cases_put_headers(b, h);
    evbuffer_add(b, "}\n", 2);
    r->records++;
    if (r->limit > 0 && r->records >= r->limit) {
        r->limited = 1;
        return 1;
    }
    return 0;
}

int eg_lane_cases_read(rd_kafka_conf_t *conf, const char *topic, const eg_lane_cases_opts *opts, eg_lane_cases *out,
                       char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    reader r = {.buf = evbuffer_new(), .limit = opts->limit};
    eg_lread lr;
    int rc = eg_lread_open(&lr, conf, NULL, topic, err, errlen) == 0 ? 0 : -1;
    if (rc == 0 && opts->since_ms > 0) rc = eg_lread_seek_time(&lr, opts->since_ms, err, errlen);
    if (rc == 0) rc = eg_lread_start(&lr, 0, err, errlen);
    for (int k = 0; rc == 0 && k != 2;) {
        rd_kafka_message_t *m = NULL;
        k = eg_lread_next(&lr, 200, &m, err, errlen);
        if (k < 0) rc = -1;
        if (k != 1) continue;
        rd_kafka_timestamp_type_t tt;
        /* a broker that cannot seek by time leaves earlier records in */
        int stop = opts->since_ms > 0 && rd_kafka_message_timestamp(m, &tt) < opts->since_ms ? 0 : on_record(m, &r);
        rd_kafka_message_destroy(m);
        if (stop) k = 2;
    }
    eg_lread_close(&lr);
    if (rc != 0) {
        evbuffer_free(r.buf);
        return -1;
    }
    size_t n = evbuffer_get_length(r.buf);
    out->text = eg_xmalloc(n + 1);
    evbuffer_remove(r.buf, out->text, n);
    out->text[n] = '\0';
    out->len = n;
    out->records = r.records;
    out->limited = r.limited;
    evbuffer_free(r.buf);
    return 0;
}

void eg_lane_cases_free(eg_lane_cases *c) {
    free(c->text);
    memset(c, 0, sizeof *c);
}
