/* test_refusal.c — which produce errors are permanent refusals, and the stub
 * that stands in for a record too large for its lane. */
#include "refusal.h"
#include "tap.h"

#include <string.h>

static int hdr_is(const rd_kafka_headers_t *h, const char *name, const char *want) {
    const void *v;
    size_t n;
    if (rd_kafka_header_get_last(h, name, &v, &n) != 0) return want == NULL;
    return want && n == strlen(want) && memcmp(v, want, n) == 0;
}

int main(void) {
    CHECK(eg_refusal_of(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) == EG_REFUSAL_SIZE &&
              eg_refusal_of(RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE) == EG_REFUSAL_SIZE,
          "record too large: a size refusal");
    rd_kafka_resp_err_t perm[] = {RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                  RD_KAFKA_RESP_ERR_INVALID_RECORD, RD_KAFKA_RESP_ERR_POLICY_VIOLATION,
                                  RD_KAFKA_RESP_ERR__INVALID_ARG};
    int all = 1;
    for (size_t i = 0; i < sizeof perm / sizeof perm[0]; i++) all &= eg_refusal_of(perm[i]) == EG_REFUSAL_PERMANENT;
    CHECK(all, "invalid topic, no authorisation, invalid record, policy violation, bad argument: permanent");
    rd_kafka_resp_err_t trans[] = {RD_KAFKA_RESP_ERR_NO_ERROR,
                                   RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                                   RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
                                   RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
                                   RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
                                   RD_KAFKA_RESP_ERR__QUEUE_FULL,
                                   RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
                                   RD_KAFKA_RESP_ERR__TRANSPORT,
                                   RD_KAFKA_RESP_ERR__FATAL,
                                   (rd_kafka_resp_err_t)12345};
    all = 1;
    for (size_t i = 0; i < sizeof trans / sizeof trans[0]; i++) all &= eg_refusal_of(trans[i]) == EG_REFUSAL_NONE;
    CHECK(all, "a missing topic, time-outs, a down leader, unknown codes: transient (retried, spilled)");

    rd_kafka_headers_t *full = rd_kafka_headers_new(8);
    rd_kafka_header_add(full, "trace-id", -1, "abc", -1);
    rd_kafka_header_add(full, "original.topic", -1, "first", -1);
    rd_kafka_header_add(full, "original.topic", -1, "orders", -1);
    rd_kafka_header_add(full, "original.offset", -1, "42", -1);
    rd_kafka_header_add(full, "errgate.id", -1, "orders/1/42", -1);
    rd_kafka_header_add(full, "error.class", -1, "permanent", -1);
    rd_kafka_header_add(full, "big", -1, NULL, 0);
    char huge[EG_STUB_HEADER_MAX + 1];
    memset(huge, 'x', sizeof huge);
    rd_kafka_header_add(full, "errgate.reason", -1, huge, sizeof huge);
    size_t dropped = 0;
    rd_kafka_headers_t *h = eg_stub_headers(full, 6000, 10, &dropped);
    CHECK(hdr_is(h, "errgate.value-omitted", "6000") && hdr_is(h, "errgate.headers-omitted", "4") && dropped == 4,
          "the stub says the value's size and how many headers were dropped (%zu: the older duplicate too)", dropped);
    CHECK(hdr_is(h, "original.topic", "orders") && hdr_is(h, "original.offset", "42") &&
              hdr_is(h, "errgate.id", "orders/1/42") && hdr_is(h, "error.class", "permanent"),
          "it keeps the last of each errgate header: the coordinates and the error");
    CHECK(hdr_is(h, "trace-id", NULL) && hdr_is(h, "big", NULL) && hdr_is(h, "errgate.reason", NULL) &&
              hdr_is(h, "errgate.key-omitted", NULL) && rd_kafka_header_cnt(h) == 6,
          "it drops the source's headers, an errgate header over %d bytes, and keeps a short key", EG_STUB_HEADER_MAX);
    rd_kafka_headers_destroy(h);
    h = eg_stub_headers(NULL, 0, EG_STUB_KEY_MAX + 1, &dropped);
    char want[16];
    snprintf(want, sizeof want, "%d", EG_STUB_KEY_MAX + 1);
    CHECK(hdr_is(h, "errgate.key-omitted", want) && !eg_stub_keeps_key(EG_STUB_KEY_MAX + 1) &&
              eg_stub_keeps_key(EG_STUB_KEY_MAX) && dropped == 0 && hdr_is(h, "errgate.headers-omitted", "0"),
          "a key over %d bytes is dropped and its size said (no headers at all: 0 dropped)", EG_STUB_KEY_MAX);
    rd_kafka_headers_destroy(h);
    rd_kafka_headers_destroy(full);
    return TAP_DONE();
}
