/* fuzz_headers.c — the header values the core reads as numbers or text:
 * retry.count, errgate.not-before, error.status, original.* (eg_uint_parse,
 * record.c), errgate.id (eg_id_valid), errgate.replays (eg_replays_parse), any value shown by `dlq
 * tail` (eg_printable) and read as a time (eg_parse_time_ms) or as a dlq
 * state document (eg_json_get_str, json.c). Input: a header list
 * (fuzz.h's format); every known name is looked up and every reader run on
 * its value, each answer checked against its contract. */
#include "dlq.h"
#include "fuzz.h"
#include "json.h"
#include "parse.h"
#include "record.h"
#include "text.h"

#include <inttypes.h>
#include <string.h>

/* The contract of eg_uint_parse, spelled out: 1..19 digits, <= INT64_MAX. */
static int64_t expect_uint(const uint8_t *v, size_t n) {
    if (!v || n == 0 || n > 19) return -1;
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return -1;
    char buf[20];
    memcpy(buf, v, n);
    buf[n] = '\0';
    const char *d = buf;
    while (d[0] == '0' && d[1]) d++;
    if (strlen(d) == 19 && strcmp(d, "9223372036854775807") > 0) return -1;
    return (int64_t)strtoull(d, NULL, 10);
}

/* The contract of eg_replays_parse for a present value: 1..23 digits
 * (leading zeros allowed) of a count up to 10^12. */
static long expect_count(const uint8_t *v, size_t n) {
    if (n == 0 || n >= 24) return -1;
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return -1;
    size_t z = 0;
    while (z + 1 < n && v[z] == '0') z++;
    if (n - z > 13) return -1;
    long long x = 0;
    for (size_t i = z; i < n; i++) x = x * 10 + (v[i] - '0');
    return x <= 1000000000000LL ? (long)x : -1;
}

static void check_printable(const void *v, size_t n) {
    static const size_t caps[] = {1, 3, 4, 5, 17, 300};
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        char out[300];
        memset(out, 'X', sizeof out);
        eg_printable(v, n, out, caps[k]);
        size_t len = strnlen(out, caps[k]);
        FZ_CHECK(len < caps[k], "eg_printable: no NUL within %zu bytes", caps[k]);
        for (size_t i = 0; i < len; i++)
            FZ_CHECK(out[i] >= 0x20 && out[i] < 0x7f, "eg_printable: byte %02x at %zu", (unsigned char)out[i], i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd_kafka_headers_t *h = fz_headers(data, size);
    for (size_t k = 0; k < fz_nheader_names; k++) {
        const char *name = fz_header_names[k];
        size_t n = 0;
        const uint8_t *v = eg_headers_get(h, name, &n);
        if (!v) n = 0;
        int64_t got = eg_uint_parse(v, n), want = expect_uint(v, n);
        FZ_CHECK(got == want, "eg_uint_parse(%s, %zu bytes) = %" PRId64 ", want %" PRId64, name, n, got, want);

        long r = eg_replays_parse(v, n);
        long rwant = v ? expect_count(v, n) : 0;
        FZ_CHECK(r == rwant, "eg_replays_parse = %ld, want %ld", r, rwant);

        if (!v) continue;
        check_printable(v, n);

        if (eg_id_valid(v, n)) { /* TOPIC/PARTITION/OFFSET of [a-zA-Z0-9._-] and digits */
            size_t slashes = 0;
            for (size_t i = 0; i < n; i++) {
                slashes += v[i] == '/';
                FZ_CHECK(v[i] == '/' || v[i] == '.' || v[i] == '_' || v[i] == '-' || (v[i] >= '0' && v[i] <= '9') ||
                             ((v[i] | 0x20) >= 'a' && (v[i] | 0x20) <= 'z'),
                         "eg_id_valid accepts byte %02x", v[i]);
            }
            FZ_CHECK(slashes == 2 && n <= EG_ID_MAX && v[n - 1] != '/', "eg_id_valid accepts '%.*s'", (int)n, v);
        }

        char *s = malloc(n + 1); /* NUL-terminated copy, as the command line readers get it */
        memcpy(s, v, n);
        s[n] = '\0';
        int64_t ms;
        (void)eg_parse_time_ms(s, &ms);
        long cnt;
        if (eg_parse_count(s, &cnt) == 0) FZ_CHECK(cnt >= 0, "eg_parse_count = %ld", cnt);
        free(s);

        char out[64];
        memset(out, 'X', sizeof out);
        if (eg_json_get_str((const char *)v, n, "state", out, sizeof out) == 0)
            FZ_CHECK(memchr(out, 0, sizeof out) != NULL, "eg_json_get_str: result not terminated");
        const char *raw = NULL;
        size_t rn = 0;
        if (eg_json_get_raw((const char *)v, n, "state", &raw, &rn) == 0)
            FZ_CHECK(raw >= (const char *)v && rn > 0 && raw + rn <= (const char *)v + n,
                     "eg_json_get_raw: value outside the text");
    }
    rd_kafka_headers_destroy(h);
    return 0;
}
