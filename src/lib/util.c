/* util.c — clocks, checked allocation and string helpers (see util.h). */
#include "util.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t eg_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t eg_now_ms(void) { return eg_now_ns() / 1000000; }

int64_t eg_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec eg_mono_deadline(int64_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void eg_cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Writes the n-digit decimal of v (0 <= v < 10^n) at p. */
static char *digits(char *p, int v, int n) {
    for (int i = n - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
    return p + n;
}

void eg_rfc3339(int64_t wall_ms, char *out, size_t outlen) {
    /* Every dead letter formats two instants (now and the record's own
     * timestamp, a different second), so no gmtime_r/snprintf here: the
     * proleptic Gregorian date of a day count, in integers (the "civil from
     * days" algorithm), for years 0000..9999. */
    if (outlen < 25) {
        if (outlen) out[0] = '\0';
        return;
    }
    /* out of RFC 3339's years: the nearest instant inside them */
    const int64_t first = -62167219200000LL, last = 253402300799999LL; /* 0000-01-01, 9999-12-31T23:59:59.999 */
    wall_ms = wall_ms < first ? first : wall_ms > last ? last : wall_ms;
    int64_t sec = wall_ms >= 0 ? wall_ms / 1000 : (wall_ms - 999) / 1000; /* floor */
    int ms = (int)(wall_ms - sec * 1000);
    int64_t days = sec >= 0 ? sec / 86400 : (sec - 86399) / 86400;
    int sod = (int)(sec - days * 86400);
    int64_t z = days + 719468; /* days since 0000-03-01 */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11], from March */
    int day = (int)(doy - (153 * mp + 2) / 5 + 1);
    int month = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t year = yoe + era * 400 + (month <= 2);
    char *p = digits(out, (int)year, 4);
    *p++ = '-';
    p = digits(p, month, 2);
    *p++ = '-';
    p = digits(p, day, 2);
    *p++ = 'T';
    p = digits(p, sod / 3600, 2);
    *p++ = ':';
    p = digits(p, sod / 60 % 60, 2);
    *p++ = ':';
    p = digits(p, sod % 60, 2);
    *p++ = '.';
    p = digits(p, ms, 3);
    *p++ = 'Z';
    *p = '\0';
}

size_t eg_fmt_i64(int64_t v, char *out, size_t outlen) {
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) tmp[n++] = '-';
    if (n >= outlen) return outlen ? (out[0] = '\0', 0) : 0;
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

void eg_fmt_hex64(uint64_t v, char out[17]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4) out[i] = hex[v & 15];
    out[16] = '\0';
}

static void oom(size_t n) {
    eg_log_flush(); /* the lines before it, buffered on the loop thread */
    fprintf(stderr, "{\"level\":\"error\",\"event\":\"oom\",\"bytes\":%zu}\n", n);
    abort();
}

void *eg_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *eg_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}

void *eg_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *eg_xstrdup(const char *s) { return eg_xstrndup(s, strlen(s)); }

char *eg_xstrndup(const char *s, size_t n) {
    char *p = eg_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void eg_strlcpy(char *dst, const char *src, size_t dstlen) {
    if (dstlen == 0) return;
    size_t n = strlen(src);
    if (n >= dstlen) n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

uint64_t eg_hash64(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}
