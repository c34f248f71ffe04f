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

void eg_rfc3339(int64_t wall_ms, char *out, size_t outlen) {
    /* one gmtime_r per second and thread: log lines and lane headers ask often */
    static _Thread_local int64_t cached_sec = -1;
    static _Thread_local char prefix[80];
    int64_t sec = wall_ms / 1000;
    if (sec != cached_sec) {
        time_t t = (time_t)sec;
        struct tm tm;
        gmtime_r(&t, &tm);
        snprintf(prefix, sizeof prefix, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        cached_sec = sec;
    }
    int ms = (int)(wall_ms % 1000);
    size_t n = strlen(prefix); /* no printf per call: every log line and lane header comes here */
    if (outlen < n + 6) {
        if (outlen) out[0] = '\0';
        return;
    }
    memcpy(out, prefix, n);
    char *p = out + n;
    *p++ = '.', *p++ = (char)('0' + ms / 100), *p++ = (char)('0' + ms / 10 % 10), *p++ = (char)('0' + ms % 10);
    *p++ = 'Z', *p = '\0';
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
