/* test_envelope.c — the envelope computed from a record's bytes
 * (envelope.h): the normaliser (numbers, hex ids, UUIDs, quoted values,
 * IPv4 and IPv6 addresses each become their placeholder; words, apostrophes
 * and times are not mistaken for them), the fingerprint (a thousand
 * messages of one bug share one, another code or another message shape
 * differs, hostile bytes: NULs, control bytes, non-UTF-8, a message past the
 * cap), the Confluent wire-format schema id (magic byte and big-endian id;
 * short, wrong magic, id 0 and ids past INT32_MAX refused), the first
 * failure of an errgate.history value (the earliest t, malformed entries
 * skipped, hostile msgpack refused before it is decoded) and time headers. */
#include "envelope.h"
#include "tap.h"

#include <msgpack.h>
#include <stdio.h>
#include <string.h>

static const char *norm(const char *s) {
    static char out[512];
    eg_env_normalise(s, strlen(s), out, sizeof out);
    return out;
}

static void test_normalise(void) {
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"order 41 failed", "order # failed"},
        {"took 12.5ms", "took #ms"},
        {"user42 not found", "user# not found"},
        {"id 3f2504e0-4f89-11d3-9a0c-0305e82c3301 gone", "id <uuid> gone"},
        {"ptr 0x7ffe12ab crashed", "ptr <hex> crashed"},
        {"trace a1b2c3d4e5f60789 failed", "trace <hex> failed"},
        {"connect 10.0.0.7:9092 refused", "connect <ip> refused"},
        {"from 192.168.1.1, again", "from <ip>, again"},
        {"host fe80::1ff:fe23:4567:890a down", "host <ip> down"},
        {"host ::1 down", "host <ip> down"},
        {"field 'email' invalid", "field <q> invalid"},
        {"value \"a \\\"b\\\" c\" rejected", "value <q> rejected"},
        {"can't parse 'x'", "can't parse <q>"},
        {"deadline exceeded", "deadline exceeded"},
        {"at 12:30:45", "at #:#:#"},
        {"  lots\t\tof\r\n blanks  ", "lots of blanks"},
        {"error: code: bad", "error: code: bad"},
        {"unclosed 'quote here", "unclosed 'quote here"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = norm(cases[i].in);
        CHECK(strcmp(got, cases[i].want) == 0, "normalise \"%s\" -> \"%s\" (got \"%s\")", cases[i].in, cases[i].want,
              got);
    }
    char small[6];
    size_t n = eg_env_normalise("order 41 failed", 15, small, sizeof small);
    CHECK(n == 5 && strcmp(small, "order") == 0, "a small buffer is cut and NUL-terminated (%zu \"%s\")", n, small);
    n = eg_env_normalise(NULL, 10, small, sizeof small);
    CHECK(n == 0 && small[0] == 0, "NULL message: empty");
}

static void fp(const char *code, const char *msg, char out[EG_ENV_FP_LEN + 1]) {
    eg_env_fingerprint(code, msg, msg ? strlen(msg) : 0, out);
}

static void test_fingerprint(void) {
    char a[EG_ENV_FP_LEN + 1], b[EG_ENV_FP_LEN + 1];
    fp("http_500", "order 1 failed at 10.0.0.1:9092 (trace 3f2504e0-4f89-11d3-9a0c-0305e82c3301)", a);
    CHECK(strlen(a) == EG_ENV_FP_LEN && strspn(a, "0123456789abcdef") == EG_ENV_FP_LEN, "16 hex digits: %s", a);
    int same = 1;
    for (int i = 0; i < 1000; i++) {
        char msg[200];
        snprintf(msg, sizeof msg, "order %d failed at 10.0.%d.%d:%d (trace %08x-4f89-11d3-9a0c-%012x)", i * 7919,
                 i % 256, (i * 13) % 256, 9000 + i, (unsigned)(i * 2654435761u), (unsigned)i);
        fp("http_500", msg, b);
        if (strcmp(a, b) != 0) same = 0;
    }
    CHECK(same, "a thousand copies of one bug (ids, addresses, traces differ) share one fingerprint");
    fp("http_400", "order 1 failed at 10.0.0.1:9092 (trace 3f2504e0-4f89-11d3-9a0c-0305e82c3301)", b);
    CHECK(strcmp(a, b) != 0, "another code: another fingerprint");
    fp("http_500", "order 1 rejected at 10.0.0.1:9092 (trace 3f2504e0-4f89-11d3-9a0c-0305e82c3301)", b);
    CHECK(strcmp(a, b) != 0, "another message shape: another fingerprint");
    fp(NULL, NULL, a);
    fp("", "", b);
    CHECK(strcmp(a, b) == 0, "no code and no message: the fingerprint of empty ones");
    fp("x", "ab", a);
    fp("xa", "b", b);
    CHECK(strcmp(a, b) != 0, "code and message are separated (x|ab differs from xa|b)");
    /* hostile bytes: NULs, controls, non-UTF-8 */
    const char bin[] = "bad\0byte\x01\xff\xfe 42";
    char c1[EG_ENV_FP_LEN + 1], c2[EG_ENV_FP_LEN + 1];
    eg_env_fingerprint("c", bin, sizeof bin - 1, c1);
    const char bin2[] = "bad\0byte\x01\xff\xfe 97";
    eg_env_fingerprint("c", bin2, sizeof bin2 - 1, c2);
    CHECK(strcmp(c1, c2) == 0 && strlen(c1) == EG_ENV_FP_LEN, "binary messages with NULs are read to their length");
    static char big[EG_ENV_MSG_MAX * 3];
    memset(big, 'a', sizeof big);
    eg_env_fingerprint("c", big, sizeof big, c1);
    eg_env_fingerprint("c", big, EG_ENV_MSG_MAX, c2);
    CHECK(strcmp(c1, c2) == 0, "only the first %d bytes of a message count", EG_ENV_MSG_MAX);
}

static void test_schema_id(void) {
    const unsigned char ok[] = {0, 0, 0, 0x01, 0x2c, 'a', 'v', 'r', 'o'};
    CHECK(eg_env_schema_id(ok, sizeof ok) == 300, "magic 0 + id 300: 300");
    const unsigned char bare[] = {0, 0, 0, 0, 7};
    CHECK(eg_env_schema_id(bare, sizeof bare) == 7, "five bytes (an empty record body): id 7");
    const unsigned char big[] = {0, 0x7f, 0xff, 0xff, 0xff, 1};
    CHECK(eg_env_schema_id(big, sizeof big) == 2147483647, "the largest id (INT32_MAX)");
    const unsigned char neg[] = {0, 0x80, 0, 0, 1, 1};
    CHECK(eg_env_schema_id(neg, sizeof neg) == -1, "an id past INT32_MAX is no id");
    const unsigned char zero[] = {0, 0, 0, 0, 0, 1};
    CHECK(eg_env_schema_id(zero, sizeof zero) == -1, "id 0 is no id");
    const unsigned char magic[] = {1, 0, 0, 0, 5, 1};
    CHECK(eg_env_schema_id(magic, sizeof magic) == -1, "magic byte 1: not wire format");
    CHECK(eg_env_schema_id("{\"a\":1}", 7) == -1, "JSON: not wire format");
    CHECK(eg_env_schema_id(ok, 4) == -1, "four bytes: too short");
    CHECK(eg_env_schema_id(NULL, 10) == -1 && eg_env_schema_id(ok, 0) == -1, "no payload: no id");
}

/* Packs [{t = ts[0], class = "x"}, ...] (t omitted where ts[i] is 0, a
 * string where it is -1) into sb. */
static void pack_hist(msgpack_sbuffer *sb, const int64_t *ts, int n) {
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        msgpack_pack_map(&pk, ts[i] ? 2 : 1);
        msgpack_pack_str(&pk, 5);
        msgpack_pack_str_body(&pk, "class", 5);
        msgpack_pack_str(&pk, 1);
        msgpack_pack_str_body(&pk, "x", 1);
        if (!ts[i]) continue;
        msgpack_pack_str(&pk, 1);
        msgpack_pack_str_body(&pk, "t", 1);
        if (ts[i] == -1) {
            msgpack_pack_str(&pk, 2);
            msgpack_pack_str_body(&pk, "no", 2);
        } else msgpack_pack_int64(&pk, ts[i]);
    }
}

static void test_history_first(void) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int64_t ts[] = {1700000005000, 1700000001000, 0, -1, 1700000009000};
    pack_hist(&sb, ts, 5);
    CHECK(eg_env_history_first(sb.data, sb.size) == 1700000001000, "the earliest t; entries without one skipped");
    CHECK(eg_env_history_first(sb.data, sb.size - 1) == -1, "a cut header: none");
    msgpack_sbuffer_clear(&sb);
    int64_t none[] = {0, -1};
    pack_hist(&sb, none, 2);
    CHECK(eg_env_history_first(sb.data, sb.size) == -1, "no entry with a t: none");
    msgpack_sbuffer_destroy(&sb);
    const unsigned char huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff}; /* array32 claiming 2^32-1 entries */
    CHECK(eg_env_history_first(huge, sizeof huge) == -1, "an array claiming 4G entries is refused before decoding");
    CHECK(eg_env_history_first("junk", 4) == -1, "not msgpack: none");
    CHECK(eg_env_history_first(NULL, 0) == -1, "absent: none");
    const unsigned char negt[] = {0x91, 0x81, 0xa1, 't', 0xff}; /* [{t: -1}] */
    CHECK(eg_env_history_first(negt, sizeof negt) == -1, "a negative t is no time");
}

static void test_ms_parse(void) {
    CHECK(eg_env_ms_parse("1700000000000", 13) == 1700000000000, "decimal ms");
    CHECK(eg_env_ms_parse("0", 1) == -1, "0 is no time");
    CHECK(eg_env_ms_parse("-5", 2) == -1 && eg_env_ms_parse(" 5", 2) == -1 && eg_env_ms_parse("5x", 2) == -1,
          "signs, blanks and letters refused");
    CHECK(eg_env_ms_parse("99999999999999999", 17) == -1, "too long");
    CHECK(eg_env_ms_parse("1000000000000001", 16) == -1, "past 10^15");
    CHECK(eg_env_ms_parse(NULL, 0) == -1, "absent");
}

int main(void) {
    test_normalise();
    test_fingerprint();
    test_schema_id();
    test_history_first();
    test_ms_parse();
    return TAP_DONE();
}
