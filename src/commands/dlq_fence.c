/* dlq_fence.c — `errgate dlq resolve` and the gateway's key fences: an item
 * resolved without a replay may be the dead-lettered record a key is fenced
 * behind (source.fence = "ladder+dlq"); the gateway that owns its source
 * partition is told through the group's fence topic GROUP.fences with a
 * resolve record (fence_op.h) under the fence's record key: the owner lets
 * the key's next record go (the first follower, in order) or takes a
 * resolved follower off the queue; every later owner reads the fence so.
 *
 * The record is written only when it can matter: the item has a key, the
 * command has -c CONFIG (the group, hence the topic, and the config's
 * control key) whose source.fence is "ladder+dlq" under ordering = "key",
 * and GROUP.fences exists. It goes to the partition the gateway's own
 * writes about that source partition go to (eg_fence_partition), so that
 * it is ordered with the fence's states. Which fence the item heads, if any, is the
 * owner's to decide (it holds the fences): a resolve of a record that heads
 * none changes nothing. Signed with the control key when one is configured
 * (ctlsign.h, kind "fence"), like every fence record; unsigned otherwise,
 * which gateways with a control key refuse (logged and counted there). */
#include "ctlsign.h"
#include "dlq.h"
#include "fence_op.h"
#include "kcli.h"
#include "lane_state.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* Delivery report: *opaque is the write's error (-1 until it comes). */
static void on_written(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    *(int *)opaque = m->err;
}

/* The source topic and partition of errgate.id id ("TOPIC/PARTITION/OFFSET").
 * Returns 0 or -1. */
static int id_origin(const char *id, char *topic, int32_t *partition) {
    size_t n = strlen(id);
    if (!eg_id_valid(id, n)) return -1;
    const char *s2 = strrchr(id, '/'), *s1 = s2;
    while (s1 > id && s1[-1] != '/') s1--;
    if (s1 <= id) return -1;
    size_t tl = (size_t)(s1 - 1 - id);
    memcpy(topic, id, tl);
    topic[tl] = '\0';
    *partition = (int32_t)eg_uint_parse(s1, (size_t)(s2 - s1));
    return 0;
}

/* See dlq.h. */
int eg_dlq_fence_resolved(const eg_kcli *k, const char *id, const void *key, size_t klen, char *note, size_t notelen,
                          char *err, size_t errlen) {
    note[0] = '\0';
    if (!key) return 0; /* a record without a key is never fenced */
    if (!k->config) {
        snprintf(note, notelen,
                 "without -c CONFIG the gateway group is not known: if this item heads a key's fence (source.fence "
                 "= \"ladder+dlq\"), the key stays fenced until `errgate ctl fence release KEY`");
        return 0;
    }
    eg_config cfg = {0};
    if (eg_config_load_source(k->config, k->source, &cfg, err, errlen) != 0) return -1;
    int on = cfg.fence == EG_FENCE_LADDER_DLQ && cfg.ordering == EG_ORDER_KEY;
    char ftopic[EG_TOPIC_NAME_MAX + 1], topic[EG_TOPIC_NAME_MAX + 1];
    int fits = eg_fence_topic(cfg.scope, ftopic) == 0; /* the gateway's own (its source's, of several) */
    eg_config_free(&cfg);
    if (!on || !fits) return 0;
    int32_t partition;
    if (id_origin(id, topic, &partition) != 0) {
        snprintf(note, notelen, "--id %s is not an errgate.id (TOPIC/PARTITION/OFFSET): no fence is told", id);
        return 0;
    }
    eg_ctlkey ck;
    int keyed = eg_kcli_ctlkey(k, &ck, err, errlen);
    if (keyed < 0) return -1;
    int dr = -1;
    rd_kafka_t *rk = eg_dlq_producer(k, "errgate-dlq-fence", on_written, &dr, err, errlen);
    if (!rk) return -1;
    int rc = -1, parts = eg_topic_partitions(rk, ftopic, err, errlen);
    if (parts <= 0) {
        if (parts == 0) snprintf(note, notelen, "%s does not exist: no key was ever fenced", ftopic);
        rc = parts == 0 ? 0 : -1;
        goto out;
    }
    char rkey[EG_FENCE_KEY_MAX], val[EG_FENCE_OP_VALUE_MAX], by[128];
    eg_dlq_whoami(by, sizeof by);
    size_t kl = eg_fence_key(topic, partition, key, klen, rkey);
    size_t vl = eg_fence_op_format(EG_FENCE_OP_RESOLVE, id, by, eg_wall_ms(), val);
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    if (keyed) {
        char sig[EG_CTLSIGN_LEN + 1];
        eg_ctlsign_sign(&ck, "fence", rkey, kl, val, vl, sig);
        rd_kafka_header_add(h, EG_CTLSIGN_HEADER, -1, sig, EG_CTLSIGN_LEN);
    } else {
        snprintf(note, notelen,
                 "no control key configured: the resolve record in %s is unsigned (gateways with "
                 "control_key_file refuse it)",
                 ftopic);
    }
    /* the partition the gateway's fence writes of this source partition go to, so that this record
     * is ordered with the fence's states */
    int32_t fp = eg_fence_partition(topic, partition, parts);
    rd_kafka_resp_err_t x =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(ftopic), RD_KAFKA_V_PARTITION(fp),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(rkey, kl), RD_KAFKA_V_VALUE(val, vl),
                          RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_TIMESTAMP(eg_wall_ms()), RD_KAFKA_V_END);
    if (x) {
        rd_kafka_headers_destroy(h); /* the message's once queued */
        snprintf(err, errlen, "%s: %s", ftopic, rd_kafka_err2str(x));
        goto out;
    }
    rd_kafka_flush(rk, 30000);
    if (dr != 0) {
        snprintf(err, errlen, "%s: the resolve record was not confirmed: %s", ftopic,
                 dr < 0 ? "timed out" : rd_kafka_err2str((rd_kafka_resp_err_t)dr));
        goto out;
    }
    rc = 1;
out:
    memset(&ck, 0, sizeof ck);
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);
    rd_kafka_destroy(rk);
    return rc;
}
