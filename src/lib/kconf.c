/* kconf.c — librdkafka client configurations (see kconf.h).
 *
 * The order of eg_kconf_build is the whole policy: the operator's `kafka`
 * table, then errgate's defaults for what the operator left unset, then the
 * fixed properties a client's guarantees rest on (idempotence and acks=all
 * for a lane write to be durable, for instance), which the operator cannot
 * turn off. librdkafka's syslog levels map onto errgate's four: 0-3 error,
 * 4 warn, 5-6 info, 7 debug. */
#include "kconf.h"
#include "log.h"
#include "redact.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* the first SASL authentication failure any client logged (see kconf.h) */
static atomic_int auth_claimed, auth_ready;
static char auth_msg[300];

int eg_kafka_auth_failure(char *buf, size_t buflen) {
    if (!atomic_load(&auth_ready)) return 0;
    snprintf(buf, buflen, "%s", auth_msg);
    return 1;
}

void eg_rdkafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    const char *sasl = strstr(buf, "SASL authentication error");
    /* a refusal by the broker, not a connection that went away in the
     * middle of it ("SaslAuthenticateRequest failed: Local: Broker
     * transport failure", seen as a client closes) */
    if (sasl && !strstr(sasl, "Local: ") && !atomic_exchange(&auth_claimed, 1)) {
        eg_redact(sasl, strlen(sasl), auth_msg, sizeof auth_msg);
        atomic_store(&auth_ready, 1);
    }
    eg_level lv = level <= 3 ? EG_ERROR : level == 4 ? EG_WARN : level <= 6 ? EG_INFO : EG_DEBUG;
    eg_logline l;
    if (!eg_log_begin(&l, lv, "rdkafka")) return;
    eg_log_str(&l, "client", rd_kafka_name(rk));
    eg_log_str(&l, "facility", fac);
    eg_log_str(&l, "msg", buf);
    eg_log_end(&l);
}

int eg_kconf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *err, size_t errlen) {
    char e[256];
    if (rd_kafka_conf_set(conf, k, v, e, sizeof e) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "kafka.%s: %s", k, e);
        return -1;
    }
    return 0;
}

rd_kafka_conf_t *eg_kconf_build(const eg_config *cfg, const char *const (*defaults)[2], const char *const (*fixed)[2],
                                char *err, size_t errlen) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    for (int i = 0; i < cfg->nkafka; i++)
        if (eg_kconf_set(conf, cfg->kafka[i].key, cfg->kafka[i].val, err, errlen) < 0) goto bad;
    for (int i = 0; defaults && defaults[i][0]; i++)
        if (!eg_config_kafka(cfg, defaults[i][0]) &&
            eg_kconf_set(conf, defaults[i][0], defaults[i][1], err, errlen) < 0)
            goto bad;
    for (int i = 0; fixed && fixed[i][0]; i++)
        if (eg_kconf_set(conf, fixed[i][0], fixed[i][1], err, errlen) < 0) goto bad;
    rd_kafka_conf_set_log_cb(conf, eg_rdkafka_log_cb);
    return conf;
bad:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

rd_kafka_conf_t *eg_lanes_producer_conf(const eg_config *cfg, const char *client_id, char *err, size_t errlen) {
    static const char *const defaults[][2] = {{"linger.ms", "5"}, {"message.timeout.ms", "30000"}, {NULL, NULL}};
    /* sticky partitioning off: otherwise librdkafka gives records without a
     * key to its sticky partitioner and never calls lanes.c's partitioner
     * for them */
    const char *const fixed[][2] = {{"sticky.partitioning.linger.ms", "0"},
                                    {"enable.idempotence", "true"},
                                    {"acks", "all"},
                                    {"client.id", client_id},
                                    {NULL, NULL}};
    return eg_kconf_build(cfg, defaults, fixed, err, errlen);
}

rd_kafka_resp_err_t eg_delivery_err(const rd_kafka_message_t *m) {
    if (m->err) return m->err;
    if (m->offset >= 0) return RD_KAFKA_RESP_ERR_NO_ERROR;
    eg_log_msg(EG_WARN, "ack_without_offset", "%s[%d]: delivered by inference, not confirmed: written again",
               m->rkt ? rd_kafka_topic_name(m->rkt) : "?", (int)m->partition);
    return RD_KAFKA_RESP_ERR__INCONSISTENT;
}

int eg_replace_allowed(const eg_replace_bound *b, int64_t now_ms) {
    return b->n < EG_PRODUCER_REPLACE_MAX ||
           now_ms - b->at[b->n % EG_PRODUCER_REPLACE_MAX] > EG_PRODUCER_REPLACE_WINDOW_MS;
}

void eg_replace_record(eg_replace_bound *b, int64_t now_ms) {
    b->at[b->n % EG_PRODUCER_REPLACE_MAX] = now_ms;
    b->n++;
}
