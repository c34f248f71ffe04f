/* mock_message.h — one real consumed record for C unit tests: produced to
 * librdkafka's in-process mock cluster (one broker) and consumed back, so
 * that its headers, key and timestamp are read through librdkafka as the
 * gateway reads them. Header-only: each test includes it once. */
#ifndef EG_TEST_MOCK_MESSAGE_H
#define EG_TEST_MOCK_MESSAGE_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <string.h>

/* Produces one record to topic "t" partition 0 (key, or none when NULL;
 * value "v"; the header hname: hval) and consumes it back in group `group`.
 * Returns the message (the caller frees it all with mock_message_free),
 * or NULL on failure. */
static rd_kafka_message_t *mock_message(rd_kafka_t **prod, rd_kafka_t **cons, const char *group, const char *key,
                                        const char *hname, const char *hval) {
    char err[512];
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(pc, "test.mock.num.brokers", "1", err, sizeof err) != RD_KAFKA_CONF_OK) return NULL;
    if (!(*prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err))) return NULL;
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(rd_kafka_handle_mock_cluster(*prod));
    if (rd_kafka_producev(*prod, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_KEY(key, key ? strlen(key) : 0), RD_KAFKA_V_VALUE("v", 1),
                          RD_KAFKA_V_HEADER(hname, hval, -1), RD_KAFKA_V_END))
        return NULL;
    rd_kafka_flush(*prod, 10000);
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(cc, "bootstrap.servers", bootstrap, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "group.id", group, err, sizeof err) != RD_KAFKA_CONF_OK)
        return NULL;
    if (!(*cons = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err))) return NULL;
    rd_kafka_poll_set_consumer(*cons);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, "t", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(*cons, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    for (int i = 0; i < 200; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(*cons, 100);
        if (m && !m->err) return m;
        if (m) rd_kafka_message_destroy(m);
    }
    return NULL;
}

/* Destroys what mock_message made (any of them may be NULL). */
static void mock_message_free(rd_kafka_message_t *m, rd_kafka_t *prod, rd_kafka_t *cons) {
    if (m) rd_kafka_message_destroy(m);
    if (cons) {
        rd_kafka_consumer_close(cons);
        rd_kafka_destroy(cons);
    }
    if (prod) rd_kafka_destroy(prod);
}

#endif
