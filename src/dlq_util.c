/* dlq_util.c — what the DLQ commands share (see dlq.h): their plumbing
 * (signals, connection options, the producer), then pure helpers: time and
 * count parsing, the small JSON the state topic needs, printable escaping
 * for `dlq tail`, the replay filters, the replayed record's headers, a
 * string map and aligned tables. The pure helpers neither talk to Kafka nor
 * keep state, and are unit-tested in spec/c/test_dlq_util.c. */
#include "dlq.h"
#include "headers.h"
#include "util.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t eg_dlq_stop;
static struct sigaction old_int, old_term;

static void on_signal(int sig) {
    (void)sig;
    eg_dlq_stop = 1;
}

void eg_dlq_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    eg_dlq_stop = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
}

void eg_dlq_release_signals(void) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}

int eg_dlq_conn_opt(eg_kcli *k, int argc, char **argv, int *i, char *why, size_t whylen) {
    const char *o = argv[*i];
    int r = eg_kcli_opt(k, argc, argv, i);
    if (r < 0) snprintf(why, whylen, "%s needs a value", o);
    return r;
}

rd_kafka_t *eg_dlq_producer(const eg_kcli *k, const char *client_id,
                            void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *),
                            void *opaque, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = eg_kcli_conf(k, client_id, err, errlen);
    if (!conf) return NULL;
    char e[512], v[64];
    size_t vlen = sizeof v;
    int bad = rd_kafka_conf_set(conf, "enable.idempotence", "true", e, sizeof e) ||
              rd_kafka_conf_set(conf, "acks", "all", e, sizeof e) ||
              rd_kafka_conf_set(conf, "partitioner", "murmur2_random", e, sizeof e);
    /* librdkafka waits 300 s by default; a command should say sooner */
    if (!bad && rd_kafka_conf_get(conf, "message.timeout.ms", v, &vlen) == RD_KAFKA_CONF_OK &&
        !strcmp(v, "300000"))
        bad = rd_kafka_conf_set(conf, "message.timeout.ms", "30000", e, sizeof e);
    if (bad) {
        snprintf(err, errlen, "producer: %s", e);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, opaque);
    rd_kafka_conf_set_dr_msg_cb(conf, dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!rk) {
        snprintf(err, errlen, "cannot create the producer: %s", e);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

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
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' ') || !*p++ ||
        digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' || digits(&p, 2, &sec))
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

/* The escaped form of byte c into esc (at least 8 bytes); returns its
 * length. json: control characters as \\u00XX and other bytes as they are;
 * else control characters and bytes >= 0x7f as \\xNN. */
static size_t esc_byte(unsigned char c, char *esc, int json) {
    if (c == '"' || c == '\\') return (size_t)snprintf(esc, 8, "\\%c", c);
    if (c == '\n') return (size_t)snprintf(esc, 8, "\\n");
    if (c == '\t') return (size_t)snprintf(esc, 8, "\\t");
    if (c == '\r') return (size_t)snprintf(esc, 8, "\\r");
    if (c < 0x20 || c == 0x7f) return (size_t)snprintf(esc, 8, json ? "\\u%04x" : "\\x%02x", c);
    if (c > 0x7f && !json) return (size_t)snprintf(esc, 8, "\\x%02x", c);
    esc[0] = (char)c;
    return 1;
}

int eg_json_put_str(char *out, size_t outlen, size_t *len, const char *s, size_t n) {
    size_t o = *len;
    if (o + 1 >= outlen) return -1;
    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        char esc[8];
        size_t k = esc_byte((unsigned char)s[i], esc, 1);
        if (o + k + 2 > outlen) return -1;
        memcpy(out + o, esc, k);
        o += k;
    }
    if (o + 2 > outlen) return -1;
    out[o++] = '"';
    out[o] = '\0';
    *len = o;
    return 0;
}

/* JSON scanning: p walks text up to end. Each skip returns the position
 * after the value, or NULL when the text is malformed. */
static const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Skips a string starting at its opening quote; if out, unescapes into it. */
static const char *jstring(const char *p, const char *end, char *out, size_t outlen) {
    size_t o = 0;
    if (p >= end || *p != '"') return NULL;
    for (p++; p < end; p++) {
        char c = *p;
        if (c == '"') {
            if (out && outlen) out[o] = '\0';
            return p + 1;
        }
        if (c == '\\') {
            if (++p >= end) return NULL;
            switch (*p) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v = 0;
                if (end - p < 5) return NULL;
                for (int i = 1; i <= 4; i++) {
                    if (!isxdigit((unsigned char)p[i])) return NULL;
                    v = v * 16 + (unsigned)(isdigit((unsigned char)p[i]) ? p[i] - '0' : (tolower((unsigned char)p[i]) - 'a' + 10));
                }
                p += 4;
                c = v < 0x80 ? (char)v : '?';
                break;
            }
            default: c = *p; break; /* \" \\ \/ */
            }
        }
        if (out && o + 1 < outlen) out[o++] = c;
    }
    return NULL;
}

static const char *jvalue(const char *p, const char *end, int depth);

static const char *jcontainer(const char *p, const char *end, int depth) {
    char close = *p == '{' ? '}' : ']';
    int object = *p == '{';
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (object) {
            p = jstring(p, end, NULL, 0);
            if (!p) return NULL;
            p = ws(p, end);
            if (p >= end || *p != ':') return NULL;
            p = ws(p + 1, end);
        }
        p = jvalue(p, end, depth + 1);
        if (!p) return NULL;
        p = ws(p, end);
        if (p < end && *p == ',') { p = ws(p + 1, end); continue; }
        if (p < end && *p == close) return p + 1;
        return NULL;
    }
}

static const char *jvalue(const char *p, const char *end, int depth) {
    if (p >= end || depth > 64) return NULL;
    if (*p == '"') return jstring(p, end, NULL, 0);
    if (*p == '{' || *p == '[') return jcontainer(p, end, depth);
    const char *q = p;
    while (q < end && (isalnum((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.')) q++;
    return q > p ? q : NULL; /* number, true, false, null: not checked further */
}

int eg_json_get_str(const char *json, size_t len, const char *field, char *out, size_t outlen) {
    const char *end = json + len, *p = ws(json, end);
    int found = -1;
    if (p >= end || *p != '{') return -1;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return -1;
    while (p < end) {
        char name[128];
        p = jstring(p, end, name, sizeof name);
        if (!p) return -1;
        p = ws(p, end);
        if (p >= end || *p != ':') return -1;
        p = ws(p + 1, end);
        if (strcmp(name, field) == 0 && p < end && *p == '"') {
            p = jstring(p, end, out, outlen); /* the last member of a name wins */
            found = 0;
        } else {
            p = jvalue(p, end, 1);
        }
        if (!p) return -1;
        p = ws(p, end);
        if (p < end && *p == ',') { p = ws(p + 1, end); continue; }
        if (p < end && *p == '}') return found;
        return -1;
    }
    return -1;
}

void eg_printable(const void *bytes, size_t n, char *out, size_t outlen) {
    const unsigned char *b = bytes;
    size_t o = 0, room = outlen >= 4 ? outlen - 4 : 0; /* keeps space for "..." */
    if (!outlen) return;
    for (size_t i = 0; i < n; i++) {
        char esc[8];
        size_t k = esc_byte(b[i], esc, 0);
        if (o + k > room) {
            if (room) memcpy(out + o, "...", 3), o += 3;
            break;
        }
        memcpy(out + o, esc, k);
        o += k;
    }
    out[o] = '\0';
}

int eg_replay_filter_match(const eg_replay_filter *f, const eg_lane_view *v) {
    if (f->since_ms > 0 && v->ts < f->since_ms) return 0;
    if (f->until_ms > 0 && v->ts > f->until_ms) return 0;
    if (f->klass && (!v->klass || strcmp(f->klass, v->klass) != 0)) return 0;
    if (f->code && (!v->code || strcmp(f->code, v->code) != 0)) return 0;
    if (f->key && (!v->key || v->keylen != strlen(f->key) || memcmp(v->key, f->key, v->keylen) != 0))
        return 0;
    return 1;
}

long eg_replays_parse(const void *val, size_t len) {
    if (!val) return 0;
    char buf[24];
    /* a NUL inside would end the text early: "0\0junk" is not a count */
    if (len == 0 || len >= sizeof buf || memchr(val, 0, len)) return -1;
    memcpy(buf, val, len);
    buf[len] = '\0';
    long n;
    return eg_parse_count(buf, &n) == 0 ? n : -1;
}

/* True for the headers a replay sets afresh. */
static int rewritten(const char *name) {
    return !strcmp(name, EG_H_RETRY_COUNT) || !strcmp(name, EG_H_REPLAY_FROM) ||
           !strcmp(name, EG_H_REPLAY_TS) || !strcmp(name, EG_H_REPLAYS);
}

rd_kafka_headers_t *eg_replay_headers(const rd_kafka_headers_t *src, const char *from,
                                      int64_t now_ms, long replays) {
    size_t cnt = src ? rd_kafka_header_cnt(src) : 0;
    rd_kafka_headers_t *h = rd_kafka_headers_new(cnt + 4);
    const char *name;
    const void *val;
    size_t size;
    for (size_t i = 0; src && rd_kafka_header_get_all(src, i, &name, &val, &size) == 0; i++)
        if (!rewritten(name)) rd_kafka_header_add(h, name, -1, val, (ssize_t)size);
    char ts[40], n[24];
    eg_rfc3339(now_ms, ts, sizeof ts);
    snprintf(n, sizeof n, "%ld", replays);
    rd_kafka_header_add(h, EG_H_RETRY_COUNT, -1, "0", 1);
    rd_kafka_header_add(h, EG_H_REPLAY_FROM, -1, from, -1);
    rd_kafka_header_add(h, EG_H_REPLAY_TS, -1, ts, -1);
    rd_kafka_header_add(h, EG_H_REPLAYS, -1, n, -1);
    return h;
}

/* ---- string map ---------------------------------------------------------- */

static size_t slot_of(const eg_strmap *m, const char *key, size_t n) {
    size_t i = (size_t)eg_hash64(key, n) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == n && memcmp(m->keys[i], key, n) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

int64_t eg_strmap_get(const eg_strmap *m, const char *key, size_t n) {
    if (!m->cap) return -1;
    size_t i = slot_of(m, key, n);
    return m->keys[i] ? m->vals[i] : -1;
}

static void grow(eg_strmap *m) {
    eg_strmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 64;
    g.keys = eg_xcalloc(g.cap, sizeof *g.keys);
    g.lens = eg_xcalloc(g.cap, sizeof *g.lens);
    g.vals = eg_xcalloc(g.cap, sizeof *g.vals);
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = slot_of(&g, m->keys[i], m->lens[i]);
            g.keys[j] = m->keys[i];
            g.lens[j] = m->lens[i];
            g.vals[j] = m->vals[i];
        }
    g.used = m->used;
    free(m->keys);
    free(m->lens);
    free(m->vals);
    *m = g;
}

void eg_strmap_put(eg_strmap *m, const char *key, size_t n, int64_t val) {
    if ((m->used + 1) * 10 > m->cap * 7) grow(m);
    size_t i = slot_of(m, key, n);
    if (!m->keys[i]) {
        m->keys[i] = eg_xstrndup(key, n);
        m->lens[i] = n;
        m->used++;
    }
    m->vals[i] = val;
}

void eg_strmap_free(eg_strmap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- aligned tables ------------------------------------------------------ */

void eg_table_init(eg_table *t, int ncols) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

void eg_table_add(eg_table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = eg_xrealloc(t->cells, t->cap * (size_t)t->ncols * sizeof *t->cells);
    }
    for (int c = 0; c < t->ncols; c++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)c] = eg_xstrdup(row[c] ? row[c] : "-");
    t->nrows++;
}

void eg_table_print(const eg_table *t, unsigned right_mask, FILE *out) {
    size_t *w = eg_xcalloc((size_t)t->ncols, sizeof *w);
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (n > w[c]) w[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * (size_t)t->ncols + (size_t)c];
            int last = c == t->ncols - 1, right = (right_mask >> c) & 1;
            if (right) fprintf(out, "%*s", (int)w[c], cell);
            else if (last) fputs(cell, out);
            else fprintf(out, "%-*s", (int)w[c], cell);
            fputs(last ? "\n" : "  ", out);
        }
    free(w);
}

void eg_table_free(eg_table *t) {
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
