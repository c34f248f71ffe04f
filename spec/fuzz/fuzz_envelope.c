/* fuzz_envelope.c — the envelope read from outside bytes (envelope.c): the
 * input is a target's message for the normaliser and the fingerprint, a
 * payload for the schema id, and an errgate.history value and a time
 * header for the first-failure reading. The normalised text must be
 * NUL-terminated within its buffer, at most twice the (capped) input (a
 * placeholder is at most twice what it replaces: "0x1" is "<hex>"), hold no
 * byte below 0x21 but single spaces between tokens, and neither start nor
 * end with a space; the fingerprint
 * is 16 hex digits and the same for the same bytes; the schema id is -1 or
 * the big-endian id behind a 0 byte; a history time is -1 or positive. */
#include "envelope.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char out[EG_ENV_MSG_MAX * 3 + 1];
    size_t n = eg_env_normalise((const char *)data, size, out, sizeof out);
    size_t capped = size < EG_ENV_MSG_MAX ? size : EG_ENV_MSG_MAX;
    FZ_CHECK(n < sizeof out && out[n] == 0 && strlen(out) == n, "not one NUL-terminated text of %zu bytes", n);
    FZ_CHECK(n <= 2 * capped, "%zu bytes out of %zu", n, capped);
    FZ_CHECK(!n || (out[0] != ' ' && out[n - 1] != ' '), "leading or trailing blank");
    for (size_t i = 0; i < n; i++)
        FZ_CHECK((unsigned char)out[i] > 0x20 || (out[i] == ' ' && out[i + 1] != ' '), "byte %02x at %zu",
                 (unsigned char)out[i], i);
    char a[EG_ENV_FP_LEN + 1], b[EG_ENV_FP_LEN + 1];
    eg_env_fingerprint("code", (const char *)data, size, a);
    eg_env_fingerprint("code", (const char *)data, size, b);
    FZ_CHECK(strlen(a) == EG_ENV_FP_LEN && strspn(a, "0123456789abcdef") == EG_ENV_FP_LEN && !strcmp(a, b),
             "fingerprint %s", a);
    int64_t id = eg_env_schema_id(data, size);
    if (size >= 5 && data[0] == 0) {
        uint32_t want = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
        FZ_CHECK(id == (want && want <= INT32_MAX ? (int64_t)want : -1), "schema id %lld", (long long)id);
    } else {
        FZ_CHECK(id == -1, "schema id %lld without the magic byte", (long long)id);
    }
    int64_t t = eg_env_history_first(data, size);
    FZ_CHECK(t == -1 || t > 0, "history time %lld", (long long)t);
    t = eg_env_ms_parse(data, size);
    FZ_CHECK(t == -1 || t > 0, "ms %lld", (long long)t);
    return 0;
}
