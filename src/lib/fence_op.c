/* fence_op.c — the fence topic's record keys and operation records (see
 * fence_op.h). Text, one field per line, read by a strict line reader that
 * refuses anything else; the writer never emits what the reader refuses. */
#include "fence_op.h"
#include "dlq_origin.h"
#include "sha256.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static const char hexd[] = "0123456789abcdef";

static int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

size_t eg_fence_key(const char *topic, int32_t partition, const void *key, size_t len, char *out) {
    unsigned char d[32];
    eg_sha256 s;
    eg_sha256_init(&s);
    eg_sha256_update(&s, key, len);
    eg_sha256_final(&s, d);
    int n = snprintf(out, EG_FENCE_KEY_MAX, "%.249s/%d/", topic, (int)partition);
    for (int i = 0; i < 32; i++) {
        out[n++] = hexd[d[i] >> 4];
        out[n++] = hexd[d[i] & 15];
    }
    out[n] = '\0';
    return (size_t)n;
}

int eg_fence_key_parse(const char *k, size_t n, char *topic, int32_t *partition) {
    if (!k || n < 66 || n >= EG_FENCE_KEY_MAX || k[n - 65] != '/') return -1;
    for (size_t i = n - 64; i < n; i++)
        if (hexval(k[i]) < 0) return -1;
    const char *slash = NULL;
    for (size_t i = n - 66; i > 0 && !slash; i--)
        if (k[i] == '/') slash = k + i;
    if (!slash) return -1;
    size_t tl = (size_t)(slash - k);
    const char *ps = slash + 1;
    size_t pl = (size_t)(k + n - 65 - ps);
    int64_t p = pl ? eg_uint_parse(ps, pl) : -1;
    if (!eg_dlq_topic_ok(k, tl) || tl > EG_TOPIC_NAME_MAX || p < 0 || p > INT32_MAX) return -1;
    memcpy(topic, k, tl);
    topic[tl] = '\0';
    *partition = (int32_t)p;
    return 0;
}

int32_t eg_fence_partition(const char *topic, int32_t partition, int32_t nparts) {
    if (nparts <= 1) return 0;
    uint64_t h = eg_hash64(topic, strlen(topic)) + (uint64_t)(uint32_t)partition;
    return (int32_t)(h % (uint64_t)nparts);
}

int eg_fence_op_is(const void *val, size_t vlen) {
    size_t m = strlen(EG_FENCE_OP_MAGIC);
    return val && vlen >= m && memcmp(val, EG_FENCE_OP_MAGIC, m) == 0;
}

size_t eg_fence_op_format(eg_fence_opkind op, const char *id, const char *by, int64_t at_ms, char *out) {
    if (!id || !eg_id_valid(id, strlen(id))) return 0;
    char b[EG_FENCE_OP_BY_MAX + 1];
    size_t n = 0;
    for (; by && by[n] && n < EG_FENCE_OP_BY_MAX; n++) b[n] = by[n] >= ' ' && by[n] <= '~' ? by[n] : '?';
    b[n] = '\0';
    int k = snprintf(out, EG_FENCE_OP_VALUE_MAX, EG_FENCE_OP_MAGIC "%s\n%s\n%s\n%lld\n",
                     op == EG_FENCE_OP_RELEASE ? "release" : "resolve", id, n ? b : "unknown",
                     (long long)(at_ms > 0 ? at_ms : 0));
    return k > 0 && (size_t)k < EG_FENCE_OP_VALUE_MAX ? (size_t)k : 0;
}

/* The next line of [*p, end) into *s, *n (without "\n"); -1 when none ends. */
static int line(const char **p, const char *end, const char **s, size_t *n) {
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return -1;
    *s = *p;
    *n = (size_t)(nl - *p);
    *p = nl + 1;
    return 0;
}

int eg_fence_op_parse(const void *rkey, size_t rklen, const void *val, size_t vlen, eg_fence_op *out,
                      const char **why) {
    memset(out, 0, sizeof *out);
    if (eg_fence_key_parse(rkey, rklen, out->topic, &out->partition) != 0) {
        *why = "bad_record_key";
        return -1;
    }
    *why = "malformed";
    if (!eg_fence_op_is(val, vlen) || vlen > EG_FENCE_OP_VALUE_MAX) return -1;
    const char *p = (const char *)val + strlen(EG_FENCE_OP_MAGIC), *end = (const char *)val + vlen, *s;
    size_t n;
    if (line(&p, end, &s, &n)) return -1;
    if (n == 7 && !memcmp(s, "release", 7)) out->op = EG_FENCE_OP_RELEASE;
    else if (n == 7 && !memcmp(s, "resolve", 7)) out->op = EG_FENCE_OP_RESOLVE;
    else return -1;
    if (line(&p, end, &s, &n) || !eg_id_valid(s, n)) return -1;
    memcpy(out->id, s, n);
    out->id[n] = '\0';
    if (line(&p, end, &s, &n) || n == 0 || n > EG_FENCE_OP_BY_MAX) return -1;
    for (size_t i = 0; i < n; i++)
        if (s[i] < ' ' || s[i] > '~') return -1;
    memcpy(out->by, s, n);
    out->by[n] = '\0';
    if (line(&p, end, &s, &n) || (n > 1 && s[0] == '0')) return -1; /* canonical: no leading zero */
    if ((out->at_ms = n ? eg_uint_parse(s, n) : -1) < 0) return -1;
    if (p != end) return -1; /* trailing bytes */
    return 0;
}

int eg_fence_topic(const char *scope, char *out) {
    if (strlen(scope) + 7 > EG_TOPIC_NAME_MAX) return -1;
    snprintf(out, EG_TOPIC_NAME_MAX + 1, "%s.fences", scope);
    return 0;
}
