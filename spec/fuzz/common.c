/* common.c — helpers shared by the fuzz targets (see fuzz.h). */
#include "fuzz.h"

#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fz_header_names[] = {"retry.count",
                                       "errgate.not-before",
                                       "errgate.replays",
                                       "errgate.id",
                                       "errgate.history",
                                       "error.class",
                                       "error.code",
                                       "error.message",
                                       "error.kind",
                                       "error.status",
                                       "error.retry-after-ms",
                                       "error.class-hint",
                                       "error.timestamp",
                                       "original.topic",
                                       "original.partition",
                                       "original.offset",
                                       "original.timestamp",
                                       "errgate.policy",
                                       "errgate.action",
                                       "errgate.reason",
                                       "previous.topic",
                                       "replay.from-dlq",
                                       "kafka_dlt-exception-fqcn",
                                       "kafka_dlt-exception-cause-fqcn",
                                       "kafka_dlt-exception-message",
                                       "kafka_dlt-original-topic",
                                       "kafka_dlt-original-partition",
                                       "kafka_dlt-original-offset",
                                       "kafka_dlt-original-consumer-group",
                                       "kafka_dlt-exception-stacktrace",
                                       "__connect.errors.exception.class.name",
                                       "__connect.errors.exception.message",
                                       "__connect.errors.topic",
                                       "__connect.errors.partition",
                                       "__connect.errors.offset",
                                       "__connect.errors.connector.name",
                                       "__connect.errors.task.id",
                                       "__connect.errors.stage",
                                       "__connect.errors.class.name",
                                       "__connect.errors.exception.stacktrace",
                                       "x-tenant",
                                       "traceparent",
                                       "original.consumer.group",
                                       "errgate.provenance",
                                       "errgate.claims-refused"};
const size_t fz_nheader_names = sizeof fz_header_names / sizeof fz_header_names[0];

rd_kafka_headers_t *fz_headers(const uint8_t *data, size_t size) {
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    size_t i = 0;
    while (i < size) {
        const char *name;
        size_t nlen;
        uint8_t b = data[i++];
        if (b < 0x80) {
            name = fz_header_names[b % fz_nheader_names];
            nlen = strlen(name);
        } else {
            nlen = b & 0x7f;
            if (nlen > size - i) nlen = size - i;
            name = (const char *)data + i;
            i += nlen;
        }
        const void *v = NULL;
        size_t vlen = 0;
        if (i < size) {
            uint8_t l = data[i++];
            if (l == 0xfe && size - i >= 2) {
                vlen = (size_t)data[i] << 8 | data[i + 1];
                i += 2;
            } else if (l != 0xff) {
                vlen = l;
            }
            if (l != 0xff) {
                if (vlen > size - i) vlen = size - i;
                v = data + i;
                i += vlen;
            }
        }
        rd_kafka_header_add(h, name, (ssize_t)nlen, v, (ssize_t)vlen);
    }
    return h;
}

static rd_kafka_t *g_prod, *g_cons;
static rd_kafka_message_t *g_msg;

static void die(const char *what, const char *err) {
    fprintf(stderr, "fuzz: mock cluster: %s: %s\n", what, err);
    abort();
}

const rd_kafka_message_t *fz_message(void) {
    if (g_msg) return g_msg;
    char err[512];
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(pc, "test.mock.num.brokers", "1", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(pc, "log_level", "0", err, sizeof err) != RD_KAFKA_CONF_OK)
        die("conf", err);
    if (!(g_prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err))) die("producer", err);
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(rd_kafka_handle_mock_cluster(g_prod));
    if (rd_kafka_producev(g_prod, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k1", 2),
                          RD_KAFKA_V_VALUE("v1", 2), RD_KAFKA_V_HEADER("x-tenant", "vip", -1),
                          RD_KAFKA_V_HEADER("error.code", "http_400", -1), RD_KAFKA_V_END))
        die("produce", "refused");
    rd_kafka_flush(g_prod, 10000);
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(cc, "bootstrap.servers", bootstrap, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "group.id", "fuzz", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "log_level", "0", err, sizeof err) != RD_KAFKA_CONF_OK)
        die("conf", err);
    if (!(g_cons = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err))) die("consumer", err);
    rd_kafka_poll_set_consumer(g_cons);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, "orders", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(g_cons, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    for (int i = 0; i < 300 && !g_msg; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(g_cons, 100);
        if (m && !m->err) g_msg = m;
        else if (m) rd_kafka_message_destroy(m);
    }
    if (!g_msg) die("consume", "no record within 30 s");
    return g_msg;
}

static char g_tmp[256];

static void rm_tmp(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", g_tmp);
}

const char *fz_tmpdir(void) {
    if (g_tmp[0]) return g_tmp;
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/errgate-fuzz.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(rm_tmp);
    return g_tmp;
}
