/* kconf.h — librdkafka client configurations built from errgate's config.
 *
 * Every Kafka client errgate creates (the gateway's consumer, the lane
 * producer, the spill drain's producer, the commands' clients through
 * kcli.h) gets its rd_kafka_conf_t here, so that they agree on three
 * things: the config's `kafka` properties come first and win over errgate's
 * defaults, the properties errgate cannot work without are set last and win
 * over everything, and librdkafka's log lines go into errgate's log. A bad
 * property is reported as "kafka.KEY: why", naming the key as the operator
 * wrote it. Nothing here creates a client: the caller adds its callbacks
 * and calls rd_kafka_new. */
#ifndef EG_KCONF_H
#define EG_KCONF_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* rd_kafka_conf_set with errgate's message: "kafka.KEY: why". Returns 0 or
 * -1 with err filled. */
int eg_kconf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *err, size_t errlen);

/* A client configuration: the config's kafka properties, then each of
 * defaults ({key, value} pairs ending with {NULL, NULL}; may be NULL) the
 * config does not set, then every one of fixed (same form), and errgate's
 * log callback. Returns NULL with err ("kafka.KEY: why") on a bad property.
 * The caller owns it. */
rd_kafka_conf_t *eg_kconf_build(const eg_config *cfg, const char *const (*defaults)[2], const char *const (*fixed)[2],
                                char *err, size_t errlen);

/* The lane producer's configuration (lanes.c; the spill drain uses the same
 * for its own producer): the config's kafka properties, idempotent,
 * acks=all, sticky partitioning off (so that lanes.c's partitioner sees
 * every record), client.id client_id, errgate's log callback. Returns NULL
 * with err on a bad property. The caller owns it. */
rd_kafka_conf_t *eg_lanes_producer_conf(const eg_config *cfg, const char *client_id, char *err, size_t errlen);

/* The outcome of a lane write's delivery report: m->err, or
 * RD_KAFKA_RESP_ERR__INCONSISTENT for a report without error and without an
 * offset. librdkafka's idempotent producer reports a batch that failed as
 * delivered once a later batch of its partition succeeded
 * (rd_kafka_dr_implicit_ack), and gives it no offset: that inference holds
 * only on a broker that refuses batches out of sequence, which the embedded
 * broker does not. Such a write is not confirmed: write it again (a
 * duplicate lane record at worst). */
rd_kafka_resp_err_t eg_delivery_err(const rd_kafka_message_t *m);

/* Whether any librdkafka client of this process failed SASL
 * authentication, refused by a broker (seen in its log lines,
 * eg_rdkafka_log_cb; a local error during the exchange, such as the
 * connection closing, is not a refusal): the first such message
 * (redacted) into buf, and 1; else 0. A command that failed
 * says it in its last line (main.c), so that a wrong password does not end
 * as a bare "broker transport failure". Thread-safe. */
int eg_kafka_auth_failure(char *buf, size_t buflen);

/* Routes librdkafka's log lines into errgate's log (event "rdkafka", with
 * the client name and facility); set on every client's configuration. May
 * be called on librdkafka's threads. */
void eg_rdkafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* The bound on replacing a producer in place after a fatal error (the lane
 * producer, lanes.c; the audit producer, audit.c; the spill drain's,
 * spill_drain.c): at most EG_PRODUCER_REPLACE_MAX replacements within
 * EG_PRODUCER_REPLACE_WINDOW_MS; one more means the fault is not passing
 * (the owner stops and says a restart is needed). The ring holds the
 * monotonic times of the last replacements; zero-initialise it. */
#define EG_PRODUCER_REPLACE_MAX 3
#define EG_PRODUCER_REPLACE_WINDOW_MS 600000
typedef struct eg_replace_bound {
    int64_t at[EG_PRODUCER_REPLACE_MAX];
    uint64_t n; /* replacements since the start */
} eg_replace_bound;

/* 1 when a replacement at now_ms stays within the bound, else 0. */
int eg_replace_allowed(const eg_replace_bound *b, int64_t now_ms);
/* Records a replacement made at now_ms. */
void eg_replace_record(eg_replace_bound *b, int64_t now_ms);

#endif
