/* fuzz_lane_cases.c — the header readers of `policy test --from-topic`
 * (lane_cases.c): errgate's own lane headers, the foreign DLQ dialects'
 * (kafka_dlt-*, __connect.errors.*, __streams.errors.*, __dlq.errors.*,
 * x-dlq-metadata) and their origin (dlq_origin.c: Spring's binary
 * big-endian partition and offset). Input:
 * a header list (fuzz.h's format). The JSON the reader writes must be one
 * well-formed object whatever the bytes (checked with json.c's scanner:
 * a member before and after it must both be found). */
#include "json.h"
#include "fuzz.h"
#include "lane_cases.h"

#include <event2/buffer.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd_kafka_headers_t *h = fz_headers(data, size);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, "{\"first\":\"a\"", 12);
    eg_lane_cases_put_headers(b, h);
    evbuffer_add(b, ",\"last\":\"z\"}", 12);
    size_t n = evbuffer_get_length(b);
    const char *json = (const char *)evbuffer_pullup(b, -1);
    char out[8];
    FZ_CHECK(eg_json_get_str(json, n, "first", out, sizeof out) == 0 && !strcmp(out, "a") &&
                 eg_json_get_str(json, n, "last", out, sizeof out) == 0 && !strcmp(out, "z"),
             "not one JSON object: %.*s", (int)(n > 2000 ? 2000 : n), json);
    for (size_t i = 0; i < n; i++)
        FZ_CHECK((unsigned char)json[i] >= 0x20, "raw control byte %02x at %zu", (unsigned char)json[i], i);
    evbuffer_free(b);
    rd_kafka_headers_destroy(h);
    return 0;
}
