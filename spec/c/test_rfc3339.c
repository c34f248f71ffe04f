/* test_rfc3339.c — eg_rfc3339 (util.c) formats without gmtime_r or printf:
 * it must agree with gmtime_r + strftime on every instant it is given, from
 * the year 0000 to 9999 (leap days, century and 400-year rules, times before
 * 1970), clamp instants beyond those years, and refuse a short buffer. */
#include "tap.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The reference: gmtime_r, strftime and the milliseconds by hand. */
static void reference(int64_t ms, char *out, size_t n) {
    int64_t sec = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    char day[40];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    if (tm.tm_year + 1900 < 1000) /* strftime's %Y does not pad years under 1000 */
        snprintf(day, sizeof day, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
    snprintf(out, n, "%s.%03dZ", day, (int)(ms - sec * 1000));
}

static int agrees(int64_t ms) {
    char got[64], want[64];
    eg_rfc3339(ms, got, sizeof got);
    reference(ms, want, sizeof want);
    if (strcmp(got, want) == 0) return 1;
    printf("# %lld: got %s, want %s\n", (long long)ms, got, want);
    return 0;
}

int main(void) {
    char buf[64];
    eg_rfc3339(1795838955123LL, buf, sizeof buf);
    CHECK(strcmp(buf, "2026-11-28T04:09:15.123Z") == 0, "a known instant (%s)", buf);
    eg_rfc3339(0, buf, sizeof buf);
    CHECK(strcmp(buf, "1970-01-01T00:00:00.000Z") == 0, "the epoch (%s)", buf);
    eg_rfc3339(-1, buf, sizeof buf);
    CHECK(strcmp(buf, "1969-12-31T23:59:59.999Z") == 0, "one millisecond before the epoch (%s)", buf);
    eg_rfc3339(951782400000LL, buf, sizeof buf);
    CHECK(strcmp(buf, "2000-02-29T00:00:00.000Z") == 0, "a 400-year leap day (%s)", buf);
    eg_rfc3339(4107542400000LL, buf, sizeof buf);
    CHECK(strcmp(buf, "2100-03-01T00:00:00.000Z") == 0, "2100 is not a leap year (%s)", buf);

    /* every day boundary (and a millisecond either side) from 1900 to 2200 */
    int ok = 1;
    for (int64_t d = -25567; d <= 84000 && ok; d++) {
        int64_t ms = d * 86400000LL;
        ok = agrees(ms) && agrees(ms - 1) && agrees(ms + 43200123);
    }
    CHECK(ok, "every day 1900..2200 agrees with gmtime_r");
    /* pseudo-random instants over the whole range 0000..9999 */
    uint64_t x = 88172645463325252ULL;
    const int64_t lo = -62167219200000LL, span = 253402300799999LL - lo + 1;
    ok = 1;
    for (int i = 0; i < 200000 && ok; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ok = agrees(lo + (int64_t)(x % (uint64_t)span));
    }
    CHECK(ok, "200,000 instants over the years 0000..9999 agree with gmtime_r");
    CHECK(agrees(lo) && agrees(253402300799999LL), "the first and the last instant of the range");

    eg_rfc3339(INT64_MAX, buf, sizeof buf);
    CHECK(strcmp(buf, "9999-12-31T23:59:59.999Z") == 0, "past the year 9999: the last instant (%s)", buf);
    eg_rfc3339(INT64_MIN, buf, sizeof buf);
    CHECK(strcmp(buf, "0000-01-01T00:00:00.000Z") == 0, "before the year 0000: the first instant (%s)", buf);
    memset(buf, 'x', sizeof buf);
    eg_rfc3339(0, buf, 24);
    CHECK(buf[0] == '\0' && buf[1] == 'x', "a buffer under 25 bytes gets \"\" and nothing past it");
    eg_rfc3339(0, buf, 25);
    CHECK(strlen(buf) == 24, "25 bytes hold the timestamp and its NUL");
    return TAP_DONE();
}
