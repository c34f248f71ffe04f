/* test_ktxn.c — the transaction steps (src/lib/ktxn.c) as far as a process
 * without a real cluster can show them: the configuration they set and
 * refuse, the embedded broker's detection (librdkafka's mock cluster, whose
 * transactions are not real, so errgate refuses the mode there), and the
 * result classes of init, begin, commit and abort on the mock, which
 * accepts the transaction protocol. What a transaction guarantees
 * (fencing, abort markers, offsets) is proved on a real cluster:
 * e2e/test_kafka_txn_lanes and e2e/test_kafka_replay_txn. */
#include "ktxn.h"
#include "tap.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <string.h>

/* A producer on bootstrap, transactional with id when id is not NULL. */
static rd_kafka_t *producer(const char *bootstrap, const char *id) {
    char e[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, e, sizeof e);
    rd_kafka_conf_set(c, "log_level", "0", e, sizeof e);
    if (id && eg_ktxn_conf(c, id, 10000, e, sizeof e) != 0) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    if (!rk) rd_kafka_conf_destroy(c);
    return rk;
}

int main(void) {
    char err[512], v[64];
    size_t vlen;

    rd_kafka_conf_t *c = rd_kafka_conf_new();
    CHECK(eg_ktxn_conf(c, "errgate.g.a", 60000, err, sizeof err) == 0, "eg_ktxn_conf accepts an id and a timeout");
    vlen = sizeof v;
    CHECK(rd_kafka_conf_get(c, "transactional.id", v, &vlen) == RD_KAFKA_CONF_OK && !strcmp(v, "errgate.g.a"),
          "it sets transactional.id (%s)", v);
    vlen = sizeof v;
    CHECK(rd_kafka_conf_get(c, "transaction.timeout.ms", v, &vlen) == RD_KAFKA_CONF_OK && !strcmp(v, "60000"),
          "it sets transaction.timeout.ms (%s)", v);
    err[0] = '\0';
    CHECK(eg_ktxn_conf(c, "errgate.g.a", 10, err, sizeof err) == -1 && strstr(err, "transaction.timeout.ms"),
          "a timeout librdkafka refuses is refused, naming the key (%s)", err);
    rd_kafka_conf_destroy(c);

    /* nothing listens on port 1: no cluster id, so not the mock */
    rd_kafka_t *none = producer("127.0.0.1:1", NULL);
    CHECK(none && eg_ktxn_on_mock(none, 300) == 0, "a cluster that does not answer is not taken for the mock");
    if (none) rd_kafka_destroy(none);

    /* the embedded broker: librdkafka's mock cluster */
    rd_kafka_t *host = producer("", NULL);
    rd_kafka_mock_cluster_t *mc = host ? rd_kafka_mock_cluster_new(host, 3) : NULL;
    CHECK(mc != NULL, "a mock cluster starts");
    if (!mc) return TAP_DONE();
    const char *bs = rd_kafka_mock_cluster_bootstraps(mc);
    rd_kafka_t *rk = producer(bs, "errgate.test.one");
    CHECK(rk && eg_ktxn_on_mock(rk, 5000) == 1, "the mock cluster is recognised by its cluster id");
    err[0] = '\0';
    CHECK(rk && eg_ktxn_init(rk, 10000, err, sizeof err) == 0, "init_transactions on the mock (%s)", err);
    CHECK(rk && eg_ktxn_begin(rk, err, sizeof err) == EG_KTXN_OK, "begin");
    CHECK(rk && rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END) == 0,
          "a write in the transaction");
    err[0] = '\0';
    CHECK(rk && eg_ktxn_commit(rk, NULL, NULL, 10000, err, sizeof err) == EG_KTXN_OK,
          "commit without offsets: EG_KTXN_OK (%s)", err);
    CHECK(rk && eg_ktxn_begin(rk, err, sizeof err) == EG_KTXN_OK, "a second transaction begins");
    CHECK(rk && eg_ktxn_abort(rk, 10000, err, sizeof err) == EG_KTXN_ABORTED, "abort: EG_KTXN_ABORTED");
    err[0] = '\0';
    CHECK(rk && eg_ktxn_begin(rk, err, sizeof err) == EG_KTXN_OK && eg_ktxn_begin(rk, err, sizeof err) != EG_KTXN_OK &&
              strstr(err, "begin_transaction"),
          "a begin inside an open transaction fails, naming the step (%s)", err);
    if (rk) {
        eg_ktxn_abort(rk, 10000, err, sizeof err);
        rd_kafka_destroy(rk);
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
    return TAP_DONE();
}
