/* fence_rec.c — the fence topic's record format (see fence_rec.h): written
 * by the gateway that owns a source partition at every change of a fence,
 * read back by the next owner. Text, one field per line, so that a person
 * reading the topic with kcat sees the state, and a strict line reader
 * refuses anything else. */
#include "fence_rec.h"
#include "dlq_origin.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "errgate-fence 1"

static const char hexd[] = "0123456789abcdef";

size_t eg_fence_rec_key(const char *topic, int32_t partition, const void *key, size_t len, char *out) {
    return eg_fence_key(topic, partition, key, len, out);
}

static const char *action_word(eg_action a) {
    return a == EG_ACT_LADDER ? "ladder" : a == EG_ACT_QUARANTINE ? "quarantine" : "dlq";
}

char *eg_fence_rec_format(const char *topic, int32_t partition, const eg_fence *f, int64_t done, int64_t released,
                          int64_t epoch, int64_t at_ms, size_t *vlen) {
    if (f->key_len > EG_FENCE_REC_MAX_KEY || f->nq > EG_FENCE_REC_MAX_FOLLOWERS) return NULL;
    size_t cap = 600 + 2 * f->key_len;
    for (int i = 0; i < f->nq; i++) cap += strlen(f->q[f->qoff + i]) + 1;
    if (cap > EG_FENCE_REC_MAX_VALUE) return NULL;
    char *v = eg_xmalloc(cap);
    int n = snprintf(v, cap, MAGIC "\n%.249s\n%d\n", topic, (int)partition);
    size_t k = (size_t)n;
    for (size_t i = 0; i < f->key_len; i++) {
        v[k++] = hexd[f->key[i] >> 4];
        v[k++] = hexd[f->key[i] & 15];
    }
    k += (size_t)snprintf(v + k, cap - k, "\n%s\n%d %s %s %s %d %lld %lld\n%d\n", f->head, f->parked,
                          f->why == EG_FENCE_WHY_DLQ ? "dlq" : "ladder", action_word(f->action),
                          f->rung[0] ? f->rung : "-", f->rung_index, (long long)f->since_ms, (long long)at_ms, f->nq);
    for (int i = 0; i < f->nq; i++) k += (size_t)snprintf(v + k, cap - k, "%s\n", f->q[f->qoff + i]);
    if (done >= 0) k += (size_t)snprintf(v + k, cap - k, "done %lld\n", (long long)done);
    if (released >= 0) k += (size_t)snprintf(v + k, cap - k, "released %lld\n", (long long)released);
    if (epoch > 0) k += (size_t)snprintf(v + k, cap - k, "epoch %lld\n", (long long)epoch);
    if (f->ndurable > 0 || f->wait_rung[0])
        k += (size_t)snprintf(v + k, cap - k, "placed %d %s %d\n", f->ndurable, f->wait_rung[0] ? f->wait_rung : "-",
                              f->wait_index);
    *vlen = k;
    return v;
}

size_t eg_fence_rec_end(int64_t done, int64_t released, int64_t epoch, char *out) {
    int n = snprintf(out, EG_FENCE_REC_END_MAX, "%s", EG_FENCE_REC_END);
    if (done >= 0) n += snprintf(out + n, EG_FENCE_REC_END_MAX - (size_t)n, "done %lld\n", (long long)done);
    if (released >= 0) n += snprintf(out + n, EG_FENCE_REC_END_MAX - (size_t)n, "released %lld\n", (long long)released);
    if (epoch > 0) n += snprintf(out + n, EG_FENCE_REC_END_MAX - (size_t)n, "epoch %lld\n", (long long)epoch);
    return (size_t)n;
}

#define CLAIM_MAGIC "errgate-fence-claim 1\n"

size_t eg_fence_claim_format(const char *topic, int32_t partition, int64_t epoch, char *rkey, char *val) {
    snprintf(rkey, EG_FENCE_REC_KEY_MAX, "%.249s/%d/claim", topic, (int)partition);
    return (size_t)snprintf(val, EG_FENCE_CLAIM_MAX, CLAIM_MAGIC "%lld\n", (long long)epoch);
}

void eg_fence_rec_clear(eg_fence_rec *r) {
    for (int i = 0; i < r->nq; i++) free(r->q[i]);
    free(r->q);
    free(r->key);
    r->q = NULL;
    r->key = NULL;
    r->nq = 0;
    r->key_len = 0;
}

/* The next line of [*p, end): its bytes (without "\n") in *s, *n; moves *p
 * past it. Returns 0, or -1 when no "\n" ends it. */
static int line(const char **p, const char *end, const char **s, size_t *n) {
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return -1;
    *s = *p;
    *n = (size_t)(nl - *p);
    *p = nl + 1;
    return 0;
}

/* s[0..n) as a decimal of 1 to 19 digits at most max, or -1. */
static int64_t num(const char *s, size_t n, int64_t max) {
    int64_t v = eg_uint_parse(s, n);
    return v >= 0 && v <= max ? v : -1;
}

static int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* The fields of the state line "PARKED WHY ACTION RUNG INDEX SINCE AT". */
static int state_line(const char *s, size_t n, eg_fence_rec *r) {
    const char *f[7];
    size_t fl[7];
    int k = 0;
    const char *end = s + n, *p = s;
    while (k < 7) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *e = sp ? sp : end;
        if (e == p) return -1; /* an empty field, or two spaces */
        f[k] = p;
        fl[k++] = (size_t)(e - p);
        if (!sp) break;
        p = sp + 1;
    }
    if (k != 7 || f[6] + fl[6] != end) return -1;
    if (fl[0] != 1 || (f[0][0] != '0' && f[0][0] != '1')) return -1;
    r->parked = f[0][0] == '1';
    if (fl[1] == 6 && !memcmp(f[1], "ladder", 6)) r->why = EG_FENCE_WHY_LADDER;
    else if (fl[1] == 3 && !memcmp(f[1], "dlq", 3)) r->why = EG_FENCE_WHY_DLQ;
    else return -1;
    if (fl[2] == 6 && !memcmp(f[2], "ladder", 6)) r->action = EG_ACT_LADDER;
    else if (fl[2] == 3 && !memcmp(f[2], "dlq", 3)) r->action = EG_ACT_DLQ;
    else if (fl[2] == 10 && !memcmp(f[2], "quarantine", 10)) r->action = EG_ACT_QUARANTINE;
    else return -1;
    if (fl[3] >= sizeof r->rung) return -1;
    for (size_t i = 0; i < fl[3]; i++) {
        char c = f[3][i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return -1;
    }
    if (fl[3] == 1 && f[3][0] == '-') r->rung[0] = '\0';
    else memcpy(r->rung, f[3], fl[3]), r->rung[fl[3]] = '\0';
    if ((r->action == EG_ACT_LADDER) != (r->rung[0] != '\0')) return -1; /* a rung exactly for a ladder */
    int64_t idx = num(f[4], fl[4], 1000), since = num(f[5], fl[5], INT64_MAX), at = num(f[6], fl[6], INT64_MAX);
    if (idx < 0 || since < 0 || at < 0) return -1;
    r->rung_index = (int)idx;
    r->since_ms = since;
    r->at_ms = at;
    return 0;
}

/* 1 when [p, end) starts with the n bytes of word. */
static int starts(const char *p, const char *end, const char *word, size_t n) {
    return (size_t)(end - p) > n && !memcmp(p, word, n);
}

/* 1 when s[0..n) is a rung's name (as a config names it). */
static int rung_name(const char *s, size_t n) {
    if (n == 0 || n >= 40) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/* "placed N RUNG INDEX" (s[0..n), after "placed ") into r. Returns 0 or -1. */
static int placed_line(const char *s, size_t n, eg_fence_rec *r) {
    const char *end = s + n, *a = memchr(s, ' ', n);
    const char *b = a ? memchr(a + 1, ' ', (size_t)(end - a - 1)) : NULL;
    if (!a || !b) return -1;
    int64_t np = num(s, (size_t)(a - s), EG_FENCE_REC_MAX_FOLLOWERS), idx = num(b + 1, (size_t)(end - b - 1), 1000);
    size_t rl = (size_t)(b - a - 1);
    if (np < 0 || np > r->nq || idx < 0) return -1;
    if (rl == 1 && a[1] == '-') r->wait_rung[0] = '\0';
    else if (rung_name(a + 1, rl)) memcpy(r->wait_rung, a + 1, rl), r->wait_rung[rl] = '\0';
    else return -1;
    r->nplaced = (int)np;
    r->wait_index = (int)idx;
    return 0;
}

/* The optional last lines "done OFFSET", "released OFFSET", "epoch N" and
 * (state records) "placed N RUNG INDEX", in that order, at [*p, end): into r, *p moved
 * past them. Returns 0 (also when there is none), -1 when malformed or
 * anything else follows. */
static int tail_lines(const char **p, const char *end, eg_fence_rec *r, int state) {
    const char *s;
    size_t n;
    if (starts(*p, end, "done ", 5) && (line(p, end, &s, &n) || (r->done = num(s + 5, n - 5, INT64_MAX)) < 0))
        return -1;
    if (starts(*p, end, "released ", 9) && (line(p, end, &s, &n) || (r->released = num(s + 9, n - 9, INT64_MAX)) < 0))
        return -1;
    if (starts(*p, end, "epoch ", 6) &&
        (line(p, end, &s, &n) || (r->epoch = num(s + 6, n - 6, EG_FENCE_EPOCH_MAX)) < 1))
        return -1;
    if (state && starts(*p, end, "placed ", 7) && (line(p, end, &s, &n) || placed_line(s + 7, n - 7, r) != 0))
        return -1;
    return *p == end ? 0 : -1;
}

int eg_fence_claim_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, char *topic, int32_t *partition,
                         int64_t *epoch, const char **why) {
    const char *k = rkey;
    if (!k || rklen < 8 || memcmp(k + rklen - 6, "/claim", 6) != 0) return 0;
    const char *slash = NULL;
    for (size_t i = rklen - 7; i > 0 && !slash; i--)
        if (k[i] == '/') slash = k + i;
    size_t tl = slash ? (size_t)(slash - k) : 0;
    size_t pl = slash ? (size_t)(k + rklen - 6 - slash - 1) : 0;
    int64_t p = slash && !(pl > 1 && slash[1] == '0') ? num(slash + 1, pl, INT32_MAX) : -1; /* canonical */
    if (!slash || !eg_dlq_topic_ok(k, tl) || tl > EG_TOPIC_NAME_MAX || p < 0) {
        *why = "bad_record_key";
        return -1;
    }
    memcpy(topic, k, tl);
    topic[tl] = '\0';
    *partition = (int32_t)p;
    size_t m = strlen(CLAIM_MAGIC);
    const char *v = val, *end, *s;
    size_t n;
    if (!v || vlen <= m || vlen > EG_FENCE_CLAIM_MAX || memcmp(v, CLAIM_MAGIC, m) != 0) goto bad; /* a tombstone too */
    end = v + vlen;
    v += m;
    /* canonical: no leading zero (the writer never makes one) */
    if (line(&v, end, &s, &n) || v != end || (n > 1 && s[0] == '0') || (*epoch = num(s, n, EG_FENCE_EPOCH_MAX)) < 1)
        goto bad;
    return 1;
bad:
    *why = "malformed";
    return -1;
}

/* Parses the record key "TOPIC/PARTITION/HEX64" into r's topic and
 * partition (fence_op.h). Returns 0 or -1. */
static int parse_rkey(const char *k, size_t n, eg_fence_rec *r) {
    return eg_fence_key_parse(k, n, r->topic, &r->partition);
}

int eg_fence_rec_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, eg_fence_rec *out,
                       const char **why) {
    memset(out, 0, sizeof *out);
    out->done = out->released = -1;
    const char *w = "malformed";
    if (!rkey || parse_rkey(rkey, rklen, out) != 0) {
        *why = "bad_record_key";
        return -1;
    }
    size_t el = strlen(EG_FENCE_REC_END);
    if (!val) return 0;
    if (vlen >= el && !memcmp(val, EG_FENCE_REC_END, el) && vlen <= EG_FENCE_REC_END_MAX) {
        const char *p = (const char *)val + el;
        if (tail_lines(&p, (const char *)val + vlen, out, 0) != 0) {
            out->done = out->released = -1;
            out->epoch = 0;
            *why = w;
            return -1;
        }
        return 0;
    }
    if (vlen > EG_FENCE_REC_MAX_VALUE) {
        *why = "too_large";
        return -1;
    }
    const char *p = val, *end = p + vlen, *s;
    size_t n;
    char topic[EG_TOPIC_NAME_MAX + 1];
    if (line(&p, end, &s, &n) || n != strlen(MAGIC) || memcmp(s, MAGIC, n)) goto bad;
    if (line(&p, end, &s, &n) || !eg_dlq_topic_ok(s, n) || n > EG_TOPIC_NAME_MAX) goto bad;
    memcpy(topic, s, n);
    topic[n] = '\0';
    if (line(&p, end, &s, &n) || num(s, n, INT32_MAX) != out->partition || strcmp(topic, out->topic)) {
        w = "key_mismatch";
        goto bad;
    }
    if (line(&p, end, &s, &n) || n % 2 || n / 2 > EG_FENCE_REC_MAX_KEY) goto bad;
    out->key = eg_xmalloc(n / 2 ? n / 2 : 1);
    out->key_len = n / 2;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0) goto bad;
        out->key[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    char want[EG_FENCE_REC_KEY_MAX];
    size_t wl = eg_fence_rec_key(out->topic, out->partition, out->key, out->key_len, want);
    if (wl != rklen || memcmp(want, rkey, wl)) {
        w = "key_mismatch";
        goto bad;
    }
    if (line(&p, end, &s, &n) || !eg_id_valid(s, n)) goto bad;
    memcpy(out->head, s, n);
    out->head[n] = '\0';
    if (line(&p, end, &s, &n) || state_line(s, n, out)) goto bad;
    int64_t nq;
    if (line(&p, end, &s, &n) || (nq = num(s, n, EG_FENCE_REC_MAX_FOLLOWERS)) < 0) goto bad;
    out->q = eg_xcalloc(nq ? (size_t)nq : 1, sizeof *out->q);
    for (int64_t i = 0; i < nq; i++) {
        if (line(&p, end, &s, &n) || !eg_id_valid(s, n)) goto bad;
        char *id = eg_xmalloc(n + 1);
        memcpy(id, s, n);
        id[n] = '\0';
        out->q[out->nq++] = id;
        int dup = !strcmp(id, out->head);
        for (int j = 0; j < out->nq - 1 && !dup; j++) dup = !strcmp(out->q[j], id);
        if (dup) goto bad;
    }
    if (tail_lines(&p, end, out, 1) != 0) goto bad; /* trailing bytes */
    return 1;
bad:
    eg_fence_rec_clear(out);
    *why = w;
    return -1;
}
