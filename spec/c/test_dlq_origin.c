/* test_dlq_origin.c — dlq_origin.c: the original coordinates of a DLQ
 * record in each dialect (errgate, Spring's big-endian binary, Connect,
 * Streams, share group, x-dlq-metadata), errgate's own first; garbage
 * values are unknown (-1), never misread; adopt adds errgate's original.*
 * only when absent. */
#include "dlq_origin.h"
#include "headers.h"
#include "lane_profiles.h"
#include "luavm.h"
#include "record.h"
#include "tap.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

static void add(rd_kafka_headers_t *h, const char *n, const void *v, size_t len) {
    rd_kafka_header_add(h, n, -1, v, (ssize_t)len);
}
static void adds(rd_kafka_headers_t *h, const char *n, const char *v) { add(h, n, v, strlen(v)); }

static const char *last(rd_kafka_headers_t *h, const char *n) {
    static char buf[300];
    size_t len = 0;
    const void *v = eg_headers_get(h, n, &len);
    if (!v) return "(absent)";
    memcpy(buf, v, len < sizeof buf - 1 ? len : sizeof buf - 1);
    buf[len < sizeof buf - 1 ? len : sizeof buf - 1] = '\0';
    return buf;
}

/* Issue 28: the origin is the read dialect's only. */
static void read_dialect(void) {
    eg_dlq_origin o;
    /* a Spring DLT record whose failed record carried original.* (the recoverer copies headers) */
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    adds(h, EG_H_ORIG_TOPIC, "errgate.audit");
    adds(h, EG_H_ORIG_PARTITION, "0");
    adds(h, "kafka_dlt-original-topic", "orders");
    add(h, "kafka_dlt-original-partition", "\x00\x00\x00\x02", 4);
    adds(h, "kafka_dlt-exception-fqcn", "java.lang.NullPointerException");
    CHECK(eg_dlq_dialect(h, "auto") && !strcmp(eg_dlq_dialect(h, "auto"), "spring"), "read as spring");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "spring") && !strcmp(o.topic, "orders") &&
              o.partition == 2,
          "a copied original.topic is not the origin of a Spring record (%s)", o.topic);
    CHECK(eg_dlq_origin_read_as(h, "errgate", &o) == 0 && !strcmp(o.topic, "errgate.audit"),
          "read as errgate, it would be the errgate one");
    CHECK(eg_dlq_origin_read_as(h, "connect", &o) == -1 && !o.format, "a dialect the record does not state: none");
    eg_dlq_origin_settle(h, "auto");
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "(absent)") && !strcmp(last(h, EG_H_ORIG_PARTITION), "(absent)") &&
              !strcmp(last(h, "kafka_dlt-original-topic"), "orders"),
          "settle drops the copied original.* of a record read as spring, and nothing else");
    eg_dlq_origin_adopt(h);
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "orders") && !strcmp(last(h, EG_H_ORIG_PARTITION), "2"),
          "then adopt writes Spring's");
    rd_kafka_headers_destroy(h);

    /* read as errgate (errgate.id): its original.* stay */
    h = rd_kafka_headers_new(8);
    adds(h, EG_H_ID, "x/0/1");
    adds(h, EG_H_ORIG_TOPIC, "payments");
    adds(h, "__connect.errors.topic", "other");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.topic, "payments"), "read as errgate: original.topic");
    eg_dlq_origin_settle(h, "auto");
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "payments"), "settle keeps errgate's own when read as errgate");
    eg_dlq_origin_settle(h, "connect");
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "(absent)"), "but not when the inbox reads connect");
    rd_kafka_headers_destroy(h);

    /* the lane writer's headers: its own error.code, the source's foreign ones */
    h = rd_kafka_headers_new(8);
    adds(h, "__streams.errors.exception", "a.B: m");
    adds(h, "__streams.errors.topic", "s");
    adds(h, "kafka_dlt-original-topic", "forged");
    adds(h, EG_H_CODE, "B");
    CHECK(!strcmp(eg_dlq_dialect(h, "foreign"), "streams") && !strcmp(eg_dlq_dialect(h, "auto"), "errgate"),
          "foreign skips errgate's markers");
    eg_dlq_origin_adopt(h);
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "s"), "adopt takes the read foreign dialect's, not the first stated (%s)",
          last(h, EG_H_ORIG_TOPIC));
    rd_kafka_headers_destroy(h);
    CHECK(eg_dlq_dialect(NULL, "auto") == NULL, "NULL headers: no dialect");
}

/* The format errgate.recorded.inbox(record, "auto") reads the headers
 * n[i] = v[i] as (its body's "format"), into out ("" when none). */
static void lua_format(eg_vm *vm, const char *const *n, const char *const *v, char *out, size_t outlen) {
    lua_State *L = vm->L;
    char err[256];
    out[0] = '\0';
    lua_getglobal(L, "require");
    lua_pushstring(L, "errgate.recorded");
    if (eg_vm_pcall(vm, 1, 1, err, sizeof err) != 0) {
        snprintf(out, outlen, "error: %s", err);
        return;
    }
    lua_getfield(L, -1, "inbox");
    lua_remove(L, -2);
    lua_createtable(L, 0, 1);
    lua_createtable(L, 0, 4);
    for (int i = 0; n[i]; i++) {
        lua_pushstring(L, v[i]);
        lua_setfield(L, -2, n[i]);
    }
    lua_setfield(L, -2, "headers");
    lua_pushstring(L, "auto");
    if (eg_vm_pcall(vm, 2, 1, err, sizeof err) != 0) {
        snprintf(out, outlen, "error: %s", err);
        return;
    }
    lua_getfield(L, -1, "body");
    const char *b = lua_tostring(L, -1), *f = b ? strstr(b, "{\"format\":\"") : NULL;
    if (f) {
        f += 11;
        size_t k = strcspn(f, "\"");
        snprintf(out, outlen, "%.*s", (int)k, f);
    }
    lua_pop(L, 2);
}

/* eg_dlq_dialect agrees with the Lua reader it mirrors, case by case. */
static void agrees_with_lua(void) {
    setenv("ERRGATE_LUA_DIR", "lua", 0);
    char err[256];
    eg_vm *vm = eg_vm_new((size_t)16 << 20, err, sizeof err);
    CHECK(vm != NULL, "a VM for errgate.recorded (%s)", vm ? "" : err);
    if (!vm) return;
    static const char *const cases[][7] = {
        {"kafka_dlt-exception-fqcn", "a.B", NULL},
        {"kafka_dlt-exception-message", "m", "original.topic", "x", NULL},
        {"error.code", "E", "kafka_dlt-exception-fqcn", "a.B", NULL},
        {"errgate.id", "t/0/1", NULL},
        {"error.code", "", "__connect.errors.exception.class.name", "a.B", NULL},
        {"__connect.errors.topic", "t", NULL},
        {"__streams.errors.exception", "a.B: m", NULL},
        {"__streams.errors.topic", "t", "__dlq.errors.topic", "u", NULL},
        {"__dlq.errors.topic", "t", NULL},
        {"__dlq.errors.message", "m", NULL},
        {"x-dlq-metadata", "{\"original_topic\":\"t\"}", NULL},
        {"x-dlq-metadata", " [1]", NULL},
        {"x-dlq-metadata", "nope", NULL},
        {"kafka_dlt-original-topic", "t", "original.topic", "u", NULL},
        /* real Spring Kafka 4.1 records (spec/fixtures/spring/): a key that did not deserialize, a
         * record of a retry topic or of the DLT after them */
        {"kafka_dlt-key-exception-fqcn", "a.B", NULL},
        {"kafka_dlt-key-exception-message", "m", NULL},
        {"kafka_exception-fqcn", "a.B", "kafka_original-topic", "t", NULL},
        {"kafka_exception-cause-fqcn", "a.B", NULL},
        {"kafka_exception-message", "m", NULL},
        {"kafka_original-topic", "t", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *n[4] = {NULL}, *v[4] = {NULL};
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        for (int i = 0; cases[c][2 * i]; i++) {
            n[i] = cases[c][2 * i];
            v[i] = cases[c][2 * i + 1];
            adds(h, n[i], v[i]);
        }
        char lf[300];
        lua_format(vm, n, v, lf, sizeof lf);
        const char *cf = eg_dlq_dialect(h, "auto");
        CHECK(!strcmp(lf, cf ? cf : ""), "case %zu (%s=%s): C reads %s, Lua %s", c, n[0], v[0], cf ? cf : "none",
              lf[0] ? lf : "none");
        rd_kafka_headers_destroy(h);
    }
    eg_vm_free(vm);
}

/* Real Kafka 4.4.0 dead letters (spec/fixtures/streams-connect/dlq.jsonl,
 * written by the anchor tool spec/anchors/streams-connect): Streams and
 * Connect state no timestamp, their dead letter carries the failed record's
 * as its own, so adopt_at takes it for them; a share group's dead letter is
 * stamped when the broker writes it, so adopt_at leaves it out. */
static void real_kafka_dead_letters(void) {
    eg_dlq_origin o;
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    adds(h, "trace-id", "streams-1");
    adds(h, "__streams.errors.exception", "org.apache.kafka.common.errors.SerializationException");
    adds(h, "__streams.errors.message", "Size of data received by IntegerDeserializer is not 4");
    adds(h, "__streams.errors.topic", "anchor-streams-in");
    adds(h, "__streams.errors.partition", "0");
    adds(h, "__streams.errors.offset", "1");
    CHECK(eg_dlq_dialect(h, "auto") && !strcmp(eg_dlq_dialect(h, "auto"), "streams") &&
              eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.topic, "anchor-streams-in") && o.partition == 0 &&
              o.offset == 1 && o.timestamp_ms == -1,
          "streams 4.4.0: decimal text, no timestamp header");
    eg_dlq_origin_adopt_at(h, 1795822688001LL);
    CHECK(!strcmp(last(h, EG_H_ORIG_OFFSET), "1") && !strcmp(last(h, EG_H_ORIG_TIMESTAMP), "2026-11-27T23:38:08.001Z"),
          "streams: the dead letter's own CreateTime is the original timestamp (%s)", last(h, EG_H_ORIG_TIMESTAMP));
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__connect.errors.topic", "anchor-connect-in");
    adds(h, "__connect.errors.partition", "0");
    adds(h, "__connect.errors.offset", "2");
    adds(h, "__connect.errors.connector.name", "errgate-anchor-sink");
    adds(h, "__connect.errors.task.id", "0");
    adds(h, "__connect.errors.stage", "TASK_PUT");
    adds(h, "__connect.errors.class.name", "org.apache.kafka.connect.sink.SinkTask");
    adds(h, "__connect.errors.exception.class.name", "java.lang.IllegalStateException");
    adds(h, "__connect.errors.exception.message", "the sink refused record 2");
    eg_dlq_origin_adopt_at(h, -1);
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "anchor-connect-in") && !strcmp(last(h, EG_H_ORIG_TIMESTAMP), "(absent)") &&
              !strcmp(last(h, EG_H_ORIG_GROUP), "(absent)"),
          "connect: without a CreateTime no timestamp is made up, and the group is not the connector's name");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__dlq.errors.topic", "anchor-share-in");
    adds(h, "__dlq.errors.partition", "0");
    adds(h, "__dlq.errors.offset", "1");
    adds(h, "__dlq.errors.group", "errgate-anchor-share");
    adds(h, "__dlq.errors.delivery.count", "1");
    adds(h, "__dlq.errors.message", "Offset rejected by client.");
    eg_dlq_origin_adopt_at(h, 1795826303087LL);
    CHECK(!strcmp(last(h, EG_H_ORIG_OFFSET), "1") && !strcmp(last(h, EG_H_ORIG_GROUP), "errgate-anchor-share") &&
              !strcmp(last(h, EG_H_ORIG_TIMESTAMP), "(absent)"),
          "share group: the dead letter's time is when the broker wrote it, not the original's");
    rd_kafka_headers_destroy(h);
}

int main(void) {
    read_dialect();
    agrees_with_lua();
    real_kafka_dead_letters();
    eg_dlq_origin o;
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    CHECK(eg_dlq_origin_read(h, &o) == -1 && o.format == NULL, "no headers: no origin");
    CHECK(eg_dlq_origin_read(NULL, &o) == -1, "NULL headers: no origin");

    /* Spring: ByteBuffer.putInt(2), putLong(4711), putLong(1767225600000) */
    adds(h, "kafka_dlt-original-topic", "orders");
    add(h, "kafka_dlt-original-partition", "\x00\x00\x00\x02", 4);
    add(h, "kafka_dlt-original-offset", "\x00\x00\x00\x00\x00\x00\x12\x67", 8);
    add(h, "kafka_dlt-original-timestamp", "\x00\x00\x01\x9b\x76\xda\xa8\x00", 8);
    adds(h, "kafka_dlt-original-consumer-group", "orders-service");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "spring") && !strcmp(o.topic, "orders") &&
              o.partition == 2 && o.offset == 4711 && o.timestamp_ms == 1767225600000LL &&
              !strcmp(o.group, "orders-service"),
          "spring: big-endian partition, offset, timestamp (%s %lld %lld %lld %s)", o.format ? o.format : "-",
          (long long)o.partition, (long long)o.offset, (long long)o.timestamp_ms, o.group);
    eg_dlq_origin_adopt(h);
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "orders") && !strcmp(last(h, EG_H_ORIG_PARTITION), "2") &&
              !strcmp(last(h, EG_H_ORIG_OFFSET), "4711") &&
              !strcmp(last(h, EG_H_ORIG_TIMESTAMP), "2026-01-01T00:00:00.000Z") &&
              !strcmp(last(h, EG_H_ORIG_GROUP), "orders-service"),
          "adopt writes errgate's original.* from Spring's (timestamp %s)", last(h, EG_H_ORIG_TIMESTAMP));
    adds(h, EG_H_ID, "orders/2/4711"); /* read as errgate now (errgate.recorded's markers) */
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "errgate") && o.partition == 2 && o.offset == 4711 &&
              o.timestamp_ms == 1767225600000LL,
          "a record read as errgate: errgate's own headers, and they read back the same");
    size_t cnt = rd_kafka_header_cnt(h);
    eg_dlq_origin_adopt(h);
    CHECK(rd_kafka_header_cnt(h) == cnt, "adopt adds nothing when original.topic is there");
    rd_kafka_headers_destroy(h);

    /* the bytes of a real Spring Kafka 4.1 DLT record after @RetryableTopic's retries
     * (spec/fixtures/spring/retry.jsonl, rt2-dlt): the retry topics' names, without "dlt-" */
    h = rd_kafka_headers_new(8);
    adds(h, "kafka_original-topic", "rt2");
    add(h, "kafka_original-partition", "\x00\x00\x00\x00", 4);
    add(h, "kafka_original-offset", "\x00\x00\x00\x00\x00\x00\x00\x01", 8);
    add(h, "kafka_original-timestamp", "\x00\x00\x01\xa2\x1f\x93\x23\x04", 8);
    adds(h, "kafka_original-timestamp-type", "CreateTime");
    adds(h, "kafka_dlt-original-consumer-group", "spring-anchor-retry");
    add(h, "retry_topic-attempts", "\x00\x00\x00\x04", 4);
    adds(h, "kafka_exception-fqcn", "org.springframework.kafka.listener.ListenerExecutionFailedException");
    adds(h, "kafka_exception-cause-fqcn", "java.lang.IllegalStateException");
    adds(h, "kafka_exception-message", "Listener failed; payment for r2 declined");
    CHECK(eg_dlq_dialect(h, "auto") && !strcmp(eg_dlq_dialect(h, "auto"), "spring") && eg_dlq_origin_read(h, &o) == 0 &&
              !strcmp(o.topic, "rt2") && o.partition == 0 && o.offset == 1 && o.timestamp_ms == 0x1a21f932304LL &&
              !strcmp(o.group, "spring-anchor-retry"),
          "spring retry topics: kafka_original-* read (%s %lld %lld %lld %s)", o.topic, (long long)o.partition,
          (long long)o.offset, (long long)o.timestamp_ms, o.group);
    /* a later DeadLetterPublishingRecoverer's kafka_dlt- set wins, whole */
    adds(h, "kafka_dlt-original-topic", "rt2-dlt");
    add(h, "kafka_dlt-original-partition", "\x00\x00\x00\x03", 4);
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.topic, "rt2-dlt") && o.partition == 3 && o.offset == -1,
          "spring: the kafka_dlt-original-* set first, never mixed with kafka_original-*");
    rd_kafka_headers_destroy(h);

    /* a real key deserialization failure (spec/fixtures/spring/dlt.jsonl, sp-dlt offset 2) */
    h = rd_kafka_headers_new(8);
    adds(h, "kafka_dlt-key-exception-fqcn", "org.springframework.kafka.support.serializer.DeserializationException");
    adds(h, "kafka_dlt-exception-cause-fqcn", "org.springframework.kafka.support.serializer.DeserializationException");
    adds(h, "kafka_dlt-key-exception-message", "failed to deserialize");
    adds(h, "kafka_dlt-original-topic", "sp");
    add(h, "kafka_dlt-original-partition", "\x00\x00\x00\x00", 4);
    add(h, "kafka_dlt-original-offset", "\x00\x00\x00\x00\x00\x00\x00\x03", 8);
    CHECK(eg_dlq_dialect(h, "auto") && !strcmp(eg_dlq_dialect(h, "auto"), "spring") && eg_dlq_origin_read(h, &o) == 0 &&
              !strcmp(o.topic, "sp") && o.offset == 3,
          "spring: a key deserialization failure's record is read as spring");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "kafka_dlt-original-topic", "t");
    add(h, "kafka_dlt-original-partition", "\x00\x02", 2);
    adds(h, "kafka_dlt-original-offset", "12x");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && o.partition == -1 && o.offset == -1 && o.timestamp_ms == -1,
          "spring: a partition of 2 bytes and a non-number offset are unknown, not misread");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__connect.errors.topic", "orders");
    adds(h, "__connect.errors.partition", "1");
    adds(h, "__connect.errors.offset", "99");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "connect") && o.partition == 1 && o.offset == 99 &&
              !o.group[0],
          "connect: decimal text");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__connect.errors.topic", "");
    adds(h, "__streams.errors.topic", "clicks");
    adds(h, "__streams.errors.partition", "0");
    adds(h, "__streams.errors.offset", "-1");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "streams") && o.partition == 0 && o.offset == -1,
          "streams: an empty Connect topic is skipped; decimal text");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__dlq.errors.topic", "orders");
    adds(h, "__dlq.errors.partition", "3");
    adds(h, "__dlq.errors.offset", "77");
    adds(h, "__dlq.errors.group", "share-g");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "share-group") && o.partition == 3 && o.offset == 77 &&
              !strcmp(o.group, "share-g"),
          "share-group: topic, partition, offset, group");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "x-dlq-metadata",
         "{\"original_headers\":{\"a\":\"b\"},\"original_topic\":\"billing\","
         "\"original_consumer_group\":\"g1\",\"original_timestamp\":1767225600000}");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "x-dlq-metadata") && !strcmp(o.topic, "billing") &&
              !strcmp(o.group, "g1") && o.partition == -1 && o.timestamp_ms == 1767225600000LL,
          "x-dlq-metadata: topic, group and (a number: lanes written before issue 29) timestamp from the JSON");
    rd_kafka_headers_destroy(h);

    /* errgate's x-dlq-metadata profile writes every member but original_headers as a string, and
     * reads it back */
    h = rd_kafka_headers_new(8);
    adds(h, "trace-id", "t1");
    adds(h, EG_H_CODE, "http_503");
    adds(h, EG_H_MESSAGE, "Service \"Unavailable\"");
    adds(h, EG_H_ORIG_TOPIC, "billing");
    adds(h, EG_H_ORIG_PARTITION, "1");
    adds(h, EG_H_ORIG_OFFSET, "7");
    adds(h, EG_H_ORIG_TIMESTAMP, "2026-01-01T00:00:00.000Z");
    adds(h, EG_H_ORIG_GROUP, "g1");
    eg_profiles_add(h, EG_PROFILE_XDLQ, NULL);
    const char *x = last(h, "x-dlq-metadata");
    CHECK(x && !strcmp(x, "{\"original_headers\":{\"trace-id\":\"t1\"},\"original_topic\":\"billing\","
                          "\"original_consumer_group\":\"g1\",\"original_timestamp\":\"1767225600000\","
                          "\"error_info\":\"http_503: Service \\\"Unavailable\\\"\"}"),
          "x-dlq-metadata profile: strings only (%s)", x ? x : "none");
    CHECK(eg_dlq_origin_read_as(h, "x-dlq-metadata", &o) == 0 && !strcmp(o.topic, "billing") &&
              o.timestamp_ms == 1767225600000LL && !strcmp(o.group, "g1"),
          "x-dlq-metadata profile: read back by errgate's reader");
    rd_kafka_headers_destroy(h);
    h = rd_kafka_headers_new(4);
    adds(h, EG_H_CODE, "timeout");
    adds(h, EG_H_ORIG_TOPIC, "billing");
    eg_profiles_add(h, EG_PROFILE_XDLQ, NULL);
    x = last(h, "x-dlq-metadata");
    CHECK(x && strstr(x, "\"original_timestamp\":\"\",\"error_info\":\"timeout\"}"),
          "x-dlq-metadata profile: no timestamp is \"\", no message leaves the code alone (%s)", x ? x : "none");
    rd_kafka_headers_destroy(h);

    /* the form errgate's profile writes now: every member a string */
    h = rd_kafka_headers_new(8);
    adds(h, "x-dlq-metadata",
         "{\"original_headers\":{\"a\":\"b\"},\"original_topic\":\"billing\",\"original_consumer_group\":\"g1\","
         "\"original_timestamp\":\"1767225600000\",\"error_info\":\"http_503: Service Unavailable\"}");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.topic, "billing") && o.timestamp_ms == 1767225600000LL,
          "x-dlq-metadata: original_timestamp as a decimal string (%lld)", (long long)o.timestamp_ms);
    rd_kafka_headers_destroy(h);
    static const char *const bad_ts[] = {
        "\"\"", "\"-5\"", "\"12x\"", "1e3", "\"9999999999999999999\"", "null", "\"253402300800000\"", "{}"};
    for (size_t i = 0; i < sizeof bad_ts / sizeof bad_ts[0]; i++) {
        char doc[200];
        snprintf(doc, sizeof doc, "{\"original_topic\":\"t\",\"original_timestamp\":%s}", bad_ts[i]);
        h = rd_kafka_headers_new(2);
        adds(h, "x-dlq-metadata", doc);
        CHECK(eg_dlq_origin_read(h, &o) == 0 && o.timestamp_ms == -1, "x-dlq-metadata timestamp %s is unknown",
              bad_ts[i]);
        rd_kafka_headers_destroy(h);
    }

    h = rd_kafka_headers_new(8);
    adds(h, "x-dlq-metadata", "[\"original_topic\"]");
    CHECK(eg_dlq_origin_read(h, &o) == -1, "x-dlq-metadata that is not an object states nothing");
    rd_kafka_headers_destroy(h);

    /* hostile values: a topic that is no topic name makes the dialect state
     * nothing (the next one is tried), never a cut or repaired name */
    static const struct {
        const char *v;
        size_t n;
    } bad_topics[] = {{"\xff\xfe%.*+?[", 9}, {"orders\nx", 8}, {"ord ers", 7},
                      {"orders\0evil", 11},  {".", 1},         {"..", 2},
                      {"t\xc3\xa9", 3}};
    for (size_t i = 0; i < sizeof bad_topics / sizeof bad_topics[0]; i++) {
        h = rd_kafka_headers_new(8);
        add(h, "kafka_dlt-original-topic", bad_topics[i].v, bad_topics[i].n);
        adds(h, "__connect.errors.topic", "fallback");
        CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.format, "connect") && !strcmp(o.topic, "fallback"),
              "bad topic %zu is not a Spring origin (next dialect read)", i);
        rd_kafka_headers_destroy(h);
    }
    char big[300];
    memset(big, 'a', sizeof big);
    h = rd_kafka_headers_new(8);
    adds(h, EG_H_CODE, "E");
    add(h, EG_H_ORIG_TOPIC, big, 250);
    CHECK(eg_dlq_origin_read(h, &o) == -1 && !o.topic[0], "a 250-byte topic is no topic name (not cut to one)");
    add(h, EG_H_ORIG_TOPIC, big, 249);
    CHECK(eg_dlq_origin_read(h, &o) == 0 && strlen(o.topic) == 249,
          "249 bytes is (the last value of a repeated header counts)");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "__dlq.errors.topic", "orders");
    adds(h, "__dlq.errors.partition", "2147483648");
    adds(h, "__dlq.errors.offset", "1000000000000000000");
    add(h, "__dlq.errors.group", "g\x01roup", 6);
    add(h, "__dlq.errors.group", "group\0x", 7);
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !o.group[0], "a group with a NUL inside is unknown (%s)", o.group);
    rd_kafka_headers_destroy(h);
    h = rd_kafka_headers_new(8);
    adds(h, "__dlq.errors.topic", "orders");
    adds(h, "__dlq.errors.partition", "2147483648");
    adds(h, "__dlq.errors.offset", "1000000000000000000");
    add(h, "__dlq.errors.group", "g\x01roup", 6);
    CHECK(eg_dlq_origin_read(h, &o) == 0 && o.partition == -1 && o.offset == -1 && !o.group[0],
          "partition past 2^31-1, offset past 10^18-1, a group with a control byte: unknown (%lld %lld %s)",
          (long long)o.partition, (long long)o.offset, o.group);
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "kafka_dlt-original-topic", "orders");
    add(h, "kafka_dlt-original-partition", "\xff\xff\xff\xfe", 4);
    add(h, "kafka_dlt-original-timestamp", "\x7f\xff\xff\xff\xff\xff\xff\xff", 8);
    add(h, "kafka_dlt-original-consumer-group", "\xc3\x28", 2);
    add(h, "kafka_dlt-original-offset", NULL, 0);
    CHECK(eg_dlq_origin_read(h, &o) == 0 && o.partition == -1 && o.timestamp_ms == -1 && !o.group[0] && o.offset == -1,
          "spring: negative partition, a timestamp past year 9999, invalid UTF-8 group, NULL offset: unknown");
    eg_dlq_origin_adopt(h);
    CHECK(!strcmp(last(h, EG_H_ORIG_TOPIC), "orders") && !strcmp(last(h, EG_H_ORIG_PARTITION), "(absent)") &&
              !strcmp(last(h, EG_H_ORIG_TIMESTAMP), "(absent)") && !strcmp(last(h, EG_H_ORIG_GROUP), "(absent)"),
          "adopt writes only what is known");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(8);
    adds(h, "x-dlq-metadata", "{\"original_topic\":\"orders\\u0000evil\",\"original_consumer_group\":\"g\\u0007\"}");
    CHECK(eg_dlq_origin_read(h, &o) == -1, "x-dlq-metadata with an escaped NUL states nothing");
    rd_kafka_headers_destroy(h);
    h = rd_kafka_headers_new(8);
    adds(h, "x-dlq-metadata", "{\"original_topic\":\"orders\",\"original_consumer_group\":\"g\\u0007\"}");
    CHECK(eg_dlq_origin_read(h, &o) == 0 && !strcmp(o.topic, "orders") && !o.group[0],
          "x-dlq-metadata: a group with an escaped control character is unknown");
    rd_kafka_headers_destroy(h);
    return TAP_DONE();
}
