/* test_kconf.c — the outcome of a lane write's delivery report: an error is
 * kept, a report with an offset is a write, and a report without error and
 * without an offset (librdkafka's idempotent producer acknowledging a
 * failed batch by inference from a later one, as make chaos seeds 9 and 36
 * met on the embedded broker) is not taken as written. */
#include "kconf.h"
#include "tap.h"

#include <string.h>

static rd_kafka_message_t report(rd_kafka_resp_err_t err, int64_t offset) {
    rd_kafka_message_t m;
    memset(&m, 0, sizeof m);
    m.err = err;
    m.partition = 3;
    m.offset = offset;
    return m;
}

int main(void) {
    rd_kafka_message_t m = report(RD_KAFKA_RESP_ERR_NO_ERROR, 41);
    CHECK(eg_delivery_err(&m) == RD_KAFKA_RESP_ERR_NO_ERROR, "a report with an offset: written");
    m = report(RD_KAFKA_RESP_ERR_NO_ERROR, 0);
    CHECK(eg_delivery_err(&m) == RD_KAFKA_RESP_ERR_NO_ERROR, "offset 0 is an offset");
    m = report(RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_OFFSET_INVALID);
    CHECK(eg_delivery_err(&m) == RD_KAFKA_RESP_ERR__INCONSISTENT,
          "no error and no offset (an implicit acknowledgement): not written, to be written again");
    m = report(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_OFFSET_INVALID);
    CHECK(eg_delivery_err(&m) == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "an error is kept as it is");
    m = report(RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_OFFSET_INVALID);
    CHECK(eg_delivery_err(&m) == RD_KAFKA_RESP_ERR__PURGE_QUEUE, "a purge stays a purge");
    return TAP_DONE();
}
