/* ktxn.c — the steps of one Kafka transaction (ktxn.h): librdkafka's
 * transactional producer API with its three error classes mapped to
 * EG_KTXN_OK / ABORTED / FATAL. Stateless: the producer holds the
 * transaction's state; nothing here allocates beyond librdkafka's error
 * objects, which are destroyed before returning. */
#include "ktxn.h"

#include "util.h"

#include <stdio.h>
#include <string.h>

int eg_ktxn_conf(rd_kafka_conf_t *conf, const char *id, int timeout_ms, char *err, size_t errlen) {
    char e[256], t[32];
    snprintf(t, sizeof t, "%d", timeout_ms);
    if (rd_kafka_conf_set(conf, "transactional.id", id, e, sizeof e) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "transaction.timeout.ms", t, e, sizeof e) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "%s", e);
        return -1;
    }
    return 0;
}

int eg_ktxn_on_mock(rd_kafka_t *rk, int timeout_ms) {
    char *cid = rd_kafka_clusterid(rk, timeout_ms);
    int mock = cid && !strncmp(cid, "mockCluster", 11);
    if (cid) rd_kafka_mem_free(rk, cid);
    return mock;
}

/* Takes e: its class (fatal, else aborted) and "step: NAME: text" in err. */
static eg_ktxn_result classify(rd_kafka_error_t *e, const char *step, char *err, size_t errlen) {
    eg_ktxn_result r = rd_kafka_error_is_fatal(e) ? EG_KTXN_FATAL : EG_KTXN_ABORTED;
    snprintf(err, errlen, "%s: %s: %s", step, rd_kafka_error_name(e), rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return r;
}

int eg_ktxn_init(rd_kafka_t *rk, int timeout_ms, char *err, size_t errlen) {
    int64_t until = eg_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - eg_now_ms();
        rd_kafka_error_t *e = rd_kafka_init_transactions(rk, left > 1000 ? (int)left : 1000);
        if (!e) return 0;
        if (rd_kafka_error_is_retriable(e) && eg_now_ms() < until) {
            rd_kafka_error_destroy(e);
            continue;
        }
        classify(e, "init_transactions", err, errlen);
        return -1;
    }
}

eg_ktxn_result eg_ktxn_begin(rd_kafka_t *rk, char *err, size_t errlen) {
    rd_kafka_error_t *e = rd_kafka_begin_transaction(rk);
    return e ? classify(e, "begin_transaction", err, errlen) : EG_KTXN_OK;
}

eg_ktxn_result eg_ktxn_abort(rd_kafka_t *rk, int timeout_ms, char *err, size_t errlen) {
    rd_kafka_error_t *e = rd_kafka_abort_transaction(rk, timeout_ms);
    if (e && rd_kafka_error_is_retriable(e)) { /* timed out: abort again, as librdkafka asks */
        rd_kafka_error_destroy(e);
        e = rd_kafka_abort_transaction(rk, timeout_ms);
    }
    if (!e) return EG_KTXN_ABORTED;
    classify(e, "abort_transaction", err, errlen); /* an abort that cannot finish: unusable */
    return EG_KTXN_FATAL;
}

eg_ktxn_result eg_ktxn_commit(rd_kafka_t *rk, rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets,
                              int timeout_ms, char *err, size_t errlen) {
    rd_kafka_error_t *e = NULL;
    const char *step = "send_offsets_to_transaction";
    if (offsets && offsets->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(consumer);
        e = rd_kafka_send_offsets_to_transaction(rk, offsets, md, timeout_ms);
        if (e && rd_kafka_error_is_retriable(e)) { /* timed out: sending again is allowed */
            rd_kafka_error_destroy(e);
            e = rd_kafka_send_offsets_to_transaction(rk, offsets, md, timeout_ms);
        }
        rd_kafka_consumer_group_metadata_destroy(md);
    }
    if (!e) {
        step = "commit_transaction";
        e = rd_kafka_commit_transaction(rk, timeout_ms);
        if (e && rd_kafka_error_is_retriable(e)) { /* its outcome is unknown: committing again is allowed */
            rd_kafka_error_destroy(e);
            e = rd_kafka_commit_transaction(rk, timeout_ms);
        }
    }
    if (!e) return EG_KTXN_OK;
    /* abortable, or retriable twice over: abort; fatal: nothing more */
    if (classify(e, step, err, errlen) == EG_KTXN_FATAL) return EG_KTXN_FATAL;
    size_t n = strlen(err);
    char aerr[256];
    if (eg_ktxn_abort(rk, timeout_ms, aerr, sizeof aerr) == EG_KTXN_FATAL) {
        snprintf(err + n, errlen - n, "; %s", aerr);
        return EG_KTXN_FATAL;
    }
    return EG_KTXN_ABORTED;
}
