/* parse.c — values an operator types on a command line (see parse.h):
 * times (RFC 3339 or ms since the epoch), durations and counts. Strict: no
 * sign, no spaces, nothing after the value (a duration's unit aside); what
 * is not exactly one of them is refused, never guessed at. */
#include "parse.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads exactly n decimal digits at *p into *v and advances *p. */
static int digits(const char **p, int n, int *v) {
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

int eg_parse_time_ms(const char *s, int64_t *ms) {
    if (!s || !*s) return -1;
    const char *p = s;
    while (isdigit((unsigned char)*p)) p++;
    if (!*p) { /* a bare number: ms since the epoch */
        if (p - s > 15) return -1;
        *ms = strtoll(s, NULL, 10);
        return 0;
    }
    p = s;
    int Y, M, D, h, m, sec, frac_ms = 0;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D) ||
        (*p != 'T' && *p != 't' && *p != ' ') || !*p++ || digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) ||
        *p++ != ':' || digits(&p, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return -1;
    if (*p == '.') {
        p++;
        int nd = 0, scale = 100;
        while (isdigit((unsigned char)*p)) {
            if (nd < 3) frac_ms += (*p - '0') * scale;
            scale /= 10;
            nd++;
            p++;
        }
        if (nd == 0) return -1;
    }
    int64_t off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59) return -1;
        off_s = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p) return -1;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - off_s) * 1000 + frac_ms;
    return 0;
}

int eg_parse_count(const char *s, long *out) {
    if (!s || !isdigit((unsigned char)*s)) return -1;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v > 1000000000000ULL) return -1;
    *out = (long)v;
    return 0;
}

int eg_parse_duration_ms(const char *s, int64_t *ms) {
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {"", 1}};
    char *end = NULL;
    if (!s || !isdigit((unsigned char)*s)) return -1; /* strtoull would take a sign or spaces */
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || v > (unsigned long long)INT64_MAX / 86400000) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            *ms = (int64_t)v * units[i].mult;
            return 0;
        }
    return -1;
}

int eg_parse_duration_text(const char *s, int64_t *ms, const char **why) {
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    if (strlen(s) > 64) {
        *why = "text too long";
        return -1;
    }
    double total = 0;
    int parts = 0;
    while (isspace((unsigned char)*s)) s++;
    while (*s) {
        if (!isdigit((unsigned char)*s)) {
            *why = "want e.g. \"100ms\", \"5s\", \"1m30s\"";
            return -1;
        }
        double v = 0;
        for (; isdigit((unsigned char)*s); s++) v = v * 10 + (*s - '0');
        if (*s == '.') {
            double scale = 0.1;
            for (s++; isdigit((unsigned char)*s); s++, scale /= 10) v += (*s - '0') * scale;
        }
        while (isspace((unsigned char)*s)) s++;
        const char *u = s;
        while (isalpha((unsigned char)*s)) s++;
        size_t ulen = (size_t)(s - u);
        if (ulen == 0) {
            *why = "a unit is required (ms, s, m, h, d)";
            return -1;
        }
        double mult = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].unit) == ulen && strncmp(u, units[i].unit, ulen) == 0) mult = units[i].mult;
        if (mult == 0) {
            *why = "unknown unit (ms, s, m, h, d)";
            return -1;
        }
        total += v * mult;
        parts++;
        while (isspace((unsigned char)*s)) s++;
    }
    if (parts == 0) {
        *why = "empty";
        return -1;
    }
    if (!(total < 9e15)) { /* 64 digits of number can exceed any int64 */
        *why = "too large";
        return -1;
    }
    *ms = (int64_t)floor(total + 0.5);
    return 0;
}
