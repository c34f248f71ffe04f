/* ktxn.h — the steps of one Kafka transaction on a librdkafka producer,
 * shared by the gateway's exactly-once lanes (lanes.c, gw_txn.c) and
 * `errgate replay --transactional` (cmd_replay.c).
 *
 * librdkafka sorts a failed transaction step into three classes
 * (rdkafka.h, "Transactional producer API"): retriable (the step timed out
 * or its outcome is unknown: call it again), abortable
 * (rd_kafka_error_txn_requires_abort: abort, then begin a new one) and fatal
 * (rd_kafka_error_is_fatal: the producer was fenced by a newer incarnation of
 * its transactional.id, or broke; it never writes again). Each step here does
 * the retries librdkafka allows and answers with one of three results, so the
 * callers only decide what their records do next. Every function blocks the
 * calling thread for at most about twice its timeout. */
#ifndef EG_KTXN_H
#define EG_KTXN_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

typedef enum {
    EG_KTXN_OK = 0,  /* done (committed, begun, initialised) */
    EG_KTXN_ABORTED, /* aborted (or never begun): nothing of it is visible to read_committed readers */
    EG_KTXN_FATAL    /* the producer is fenced or broken: it never writes again */
} eg_ktxn_result;

/* Sets transactional.id = id and transaction.timeout.ms = timeout_ms on a
 * producer configuration (before rd_kafka_new). Returns 0, or -1 with err
 * naming what (the key) was refused. */
int eg_ktxn_conf(rd_kafka_conf_t *conf, const char *id, int timeout_ms, char *err, size_t errlen);

/* 1 when rk is connected to librdkafka's mock cluster (the embedded broker,
 * `errgate broker`: its cluster id starts with "mockCluster"), whose
 * transactions are not real in librdkafka 2.0.2 (TxnOffsetCommit discarded,
 * no abort markers); 0 otherwise, also when the id cannot be read within
 * timeout_ms. */
int eg_ktxn_on_mock(rd_kafka_t *rk, int timeout_ms);

/* init_transactions: registers the transactional.id with its coordinator,
 * which fences the id's previous incarnation and aborts what it left open.
 * Asked again while retriable, up to timeout_ms in all. Returns 0, or -1
 * with err (the cluster has no transaction coordinator, an ACL, a timeout). */
int eg_ktxn_init(rd_kafka_t *rk, int timeout_ms, char *err, size_t errlen);

/* Opens a transaction. EG_KTXN_OK, else ABORTED or FATAL with err. */
eg_ktxn_result eg_ktxn_begin(rd_kafka_t *rk, char *err, size_t errlen);

/* Aborts the open transaction (once more when it timed out, as librdkafka
 * asks). EG_KTXN_ABORTED, or EG_KTXN_FATAL with err when it could not be
 * aborted: the producer is unusable then. */
eg_ktxn_result eg_ktxn_abort(rd_kafka_t *rk, int timeout_ms, char *err, size_t errlen);

/* Adds offsets (the next offsets to read, of consumer's group: its group
 * metadata, KIP-447) to the open transaction when offsets has entries, and
 * commits it; a commit whose outcome is unknown (retriable) is committed
 * again. On an abortable error aborts it: EG_KTXN_ABORTED with err; on a fatal
 * one (or an abort that failed) EG_KTXN_FATAL with err. consumer may be NULL
 * only when offsets is NULL or empty. */
eg_ktxn_result eg_ktxn_commit(rd_kafka_t *rk, rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets,
                              int timeout_ms, char *err, size_t errlen);

#endif
