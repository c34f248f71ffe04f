/* refusal.c — permanent produce refusals and stub records (see refusal.h).
 *
 * The permanent set was chosen from rdkafka.h's error list: errors a produce
 * can meet that no amount of waiting heals without an operator changing the
 * topic, its ACLs, its configuration or errgate's. Everything else stays
 * transient, so an unknown or new error code keeps the old, safe behaviour
 * (retry and spill). */
#include "refusal.h"
#include "headers.h"

#include <stdio.h>

eg_refusal eg_refusal_of(rd_kafka_resp_err_t err) {
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE: return EG_REFUSAL_SIZE;
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_COMPRESSION_TYPE:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__BAD_MSG: return EG_REFUSAL_PERMANENT;
    default: return EG_REFUSAL_NONE;
    }
}

int eg_stub_keeps_key(size_t key_len) { return key_len <= EG_STUB_KEY_MAX; }

rd_kafka_headers_t *eg_stub_headers(const rd_kafka_headers_t *full, size_t value_len, size_t key_len, size_t *dropped) {
    static const char *const keep[] = {
        EG_H_CLASS,      EG_H_CODE,           EG_H_MESSAGE,     EG_H_TIMESTAMP,      EG_H_KIND,
        EG_H_STATUS,     EG_H_CLASS_HINT,     EG_H_RETRY_AFTER, EG_H_RETRY_COUNT,    EG_H_PREVIOUS,
        EG_H_ORIG_TOPIC, EG_H_ORIG_PARTITION, EG_H_ORIG_OFFSET, EG_H_ORIG_TIMESTAMP, EG_H_ORIG_GROUP,
        EG_H_ID,         EG_H_POLICY,         EG_H_ACTION,      EG_H_REASON,         EG_H_HISTORY,
        EG_H_NOT_BEFORE, EG_H_REPLAY_FROM,    EG_H_REPLAY_TS,   EG_H_REPLAYS,        NULL};
    size_t n = sizeof keep / sizeof keep[0] + 3;
    rd_kafka_headers_t *h = rd_kafka_headers_new(n);
    size_t total = full ? rd_kafka_header_cnt(full) : 0, kept = 0;
    for (const char *const *k = keep; *k && full; k++) {
        const void *v;
        size_t len;
        /* the last one of a name is the one readers take */
        if (rd_kafka_header_get_last(full, *k, &v, &len) == 0 && len <= EG_STUB_HEADER_MAX) {
            rd_kafka_header_add(h, *k, -1, v, v ? (ssize_t)len : -1);
            kept++;
        }
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", value_len);
    rd_kafka_header_add(h, EG_H_VALUE_OMITTED, -1, buf, -1);
    snprintf(buf, sizeof buf, "%zu", total - kept);
    rd_kafka_header_add(h, EG_H_HEADERS_OMITTED, -1, buf, -1);
    if (!eg_stub_keeps_key(key_len)) {
        snprintf(buf, sizeof buf, "%zu", key_len);
        rd_kafka_header_add(h, EG_H_KEY_OMITTED, -1, buf, -1);
    }
    if (dropped) *dropped = total - kept;
    return h;
}
