/* envelope.c — fingerprint, schema id and history time of a lane record's
 * envelope (see envelope.h).
 *
 * The normaliser is one left-to-right pass with no backtracking past a
 * token: at each position it tries, in order, a quoted value, then (at the
 * start of a word) a UUID, a 0x number, an IPv4 or IPv6 address and a long
 * hex word, then a run of digits anywhere (so "user42" and "user7" group);
 * anything else is copied. Each try reads forward a bounded stretch of the
 * (capped) input, so the pass is linear in practice and never quadratic past
 * a fixed factor. Hashing is SHA-256 (sha256.h); history decoding is
 * msgpack-c behind eg_mp_plausible (mpcheck.h). */
#include "envelope.h"
#include "mpcheck.h"
#include "sha256.h"

#include <msgpack.h>
#include <string.h>

/* An output buffer that keeps the NUL and drops what does not fit. */
typedef struct obuf {
    char *p;
    size_t len, cap;
} obuf;

static void put(obuf *o, const char *s, size_t n) {
    for (size_t i = 0; i < n && o->len + 1 < o->cap; i++) o->p[o->len++] = s[i];
    o->p[o->len] = 0;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_word(unsigned char c) { return is_digit(c) || is_alpha(c) || c == '_'; }

/* Hex digits from s[i] (at most max), the count. */
static size_t hex_run(const unsigned char *s, size_t n, size_t i, size_t max) {
    size_t k = 0;
    while (i + k < n && k < max && is_hex(s[i + k])) k++;
    return k;
}

/* 1 when s[i] is the end of the input or not a word byte. */
static int ends(const unsigned char *s, size_t n, size_t i) { return i >= n || !is_word(s[i]); }

/* The length of a UUID (8-4-4-4-12 hex) at s[i] that ends a word, or 0. */
static size_t uuid_at(const unsigned char *s, size_t n, size_t i) {
    static const size_t groups[] = {8, 4, 4, 4, 12};
    size_t j = i;
    for (int g = 0; g < 5; g++) {
        if (g) {
            if (j >= n || s[j] != '-') return 0;
            j++;
        }
        if (hex_run(s, n, j, groups[g] + 1) != groups[g]) return 0;
        j += groups[g];
    }
    return ends(s, n, j) ? j - i : 0;
}

/* The length of an IPv4 address (with an optional :port) at s[i], or 0. */
static size_t ipv4_at(const unsigned char *s, size_t n, size_t i) {
    size_t j = i;
    for (int g = 0; g < 4; g++) {
        if (g) {
            if (j >= n || s[j] != '.') return 0;
            j++;
        }
        size_t k = 0;
        while (j + k < n && k < 4 && is_digit(s[j + k])) k++;
        if (k == 0 || k > 3) return 0;
        j += k;
    }
    if (!ends(s, n, j)) return 0;
    if (j + 1 < n && s[j] == ':' && is_digit(s[j + 1])) {
        size_t k = 1;
        while (j + 1 + k < n && k < 6 && is_digit(s[j + 1 + k])) k++;
        if (ends(s, n, j + 1 + k)) j += 1 + k;
    }
    return j - i;
}

/* The length of an IPv6 address at s[i]: hex groups of at most 4 digits
 * joined by ':', with three or more colons or a "::", ending a word; or 0. */
static size_t ipv6_at(const unsigned char *s, size_t n, size_t i) {
    size_t j = i;
    int colons = 0, dbl = 0;
    for (int g = 0; g < 9 && j < n; g++) {
        size_t k = hex_run(s, n, j, 5);
        if (k > 4) return 0;
        j += k;
        if (j < n && s[j] == ':') {
            if (j + 1 < n && s[j + 1] == ':') {
                if (dbl) return 0;
                dbl = 1;
                colons++;
                j++;
            }
            colons++;
            j++;
            continue;
        }
        break;
    }
    if (j > i && s[j - 1] == ':' && !(j >= i + 2 && s[j - 2] == ':')) return 0; /* "a:b:c:" is text */
    return (colons >= 3 || (dbl && colons >= 2)) && ends(s, n, j) ? j - i : 0;
}

/* The length of a hex id at s[i]: 0x and hex digits, or a word of 8 or more
 * hex digits with a digit and a letter; or 0. */
static size_t hexid_at(const unsigned char *s, size_t n, size_t i) {
    if (i + 2 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') && is_hex(s[i + 2])) {
        size_t k = hex_run(s, n, i + 2, n);
        return ends(s, n, i + 2 + k) ? k + 2 : 0;
    }
    size_t k = hex_run(s, n, i, n);
    if (k < 8 || !ends(s, n, i + k)) return 0;
    int digit = 0, letter = 0;
    for (size_t j = i; j < i + k; j++) {
        if (is_digit(s[j])) digit = 1;
        else letter = 1;
    }
    return digit && letter ? k : 0;
}

/* The length of a value quoted with q at s[i] (q itself), closed on the
 * same line by q not followed by a word byte; backslash escapes skipped. */
static size_t quoted_at(const unsigned char *s, size_t n, size_t i) {
    unsigned char q = s[i];
    for (size_t j = i + 1; j < n && j - i < 1024; j++) {
        if (s[j] == '\n' || s[j] == '\r') return 0;
        if (s[j] == '\\') {
            j++;
            continue;
        }
        if (s[j] == q) return ends(s, n, j + 1) ? j + 1 - i : 0;
    }
    return 0;
}

size_t eg_env_normalise(const char *msg, size_t n, char *out, size_t cap) {
    obuf o = {out, 0, cap};
    if (!cap) return 0;
    out[0] = 0;
    if (!msg) return 0;
    const unsigned char *s = (const unsigned char *)msg;
    if (n > EG_ENV_MSG_MAX) n = EG_ENV_MSG_MAX;
    int space = 0; /* a blank is owed before the next token */
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c <= 0x20 || c == 0x7f) {
            space = o.len > 0;
            i++;
            continue;
        }
        if (space) put(&o, " ", 1);
        space = 0;
        int boundary = i == 0 || !is_word(s[i - 1]);
        size_t k;
        if ((c == '"' || c == '\'') && boundary && (k = quoted_at(s, n, i)) > 0) {
            put(&o, "<q>", 3);
        } else if (boundary && is_hex(c) && (k = uuid_at(s, n, i)) > 0) {
            put(&o, "<uuid>", 6);
        } else if (boundary && is_digit(c) && (k = ipv4_at(s, n, i)) > 0) {
            put(&o, "<ip>", 4);
        } else if (boundary && (is_hex(c) || c == ':') && (k = ipv6_at(s, n, i)) > 0) {
            put(&o, "<ip>", 4);
        } else if (boundary && is_hex(c) && (k = hexid_at(s, n, i)) > 0) {
            put(&o, "<hex>", 5);
        } else if (is_digit(c)) {
            k = 0;
            while (i + k < n && is_digit(s[i + k])) k++;
            if (i + k + 1 < n && s[i + k] == '.' && is_digit(s[i + k + 1]))
                for (k++; i + k < n && is_digit(s[i + k]);) k++;
            put(&o, "#", 1);
        } else {
            k = 1;
            put(&o, (const char *)&s[i], 1);
        }
        i += k;
    }
    return o.len;
}

void eg_env_fingerprint(const char *code, const char *msg, size_t n, char out[EG_ENV_FP_LEN + 1]) {
    char local[EG_ENV_MSG_MAX + 1];
    size_t len = eg_env_normalise(msg, n, local, sizeof local);
    eg_sha256 h;
    eg_sha256_init(&h);
    if (code) eg_sha256_update(&h, code, strlen(code));
    eg_sha256_update(&h, "", 1);
    eg_sha256_update(&h, local, len);
    unsigned char d[32];
    eg_sha256_final(&h, d);
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < EG_ENV_FP_LEN / 2; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[EG_ENV_FP_LEN] = 0;
}

int64_t eg_env_schema_id(const void *payload, size_t len) {
    const unsigned char *p = payload;
    if (!p || len < 5 || p[0] != 0) return -1;
    uint32_t id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    return id == 0 || id > INT32_MAX ? -1 : (int64_t)id;
}

#define MS_MAX 1000000000000000LL /* 10^15 ms: year 33658; anything past it is not a time */

int64_t eg_env_history_first(const void *hist, size_t len) {
    if (!hist || !len || !eg_mp_plausible(hist, len)) return -1;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    int64_t first = -1;
    if (msgpack_unpack_next(&u, hist, len, NULL) == MSGPACK_UNPACK_SUCCESS && u.data.type == MSGPACK_OBJECT_ARRAY) {
        for (uint32_t i = 0; i < u.data.via.array.size; i++) {
            const msgpack_object *e = &u.data.via.array.ptr[i];
            if (e->type != MSGPACK_OBJECT_MAP) continue;
            for (uint32_t k = 0; k < e->via.map.size; k++) {
                const msgpack_object_kv *kv = &e->via.map.ptr[k];
                if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size != 1 || kv->key.via.str.ptr[0] != 't')
                    continue;
                if (kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER || kv->val.via.u64 == 0 ||
                    kv->val.via.u64 > (uint64_t)MS_MAX)
                    continue;
                int64_t t = (int64_t)kv->val.via.u64;
                if (first < 0 || t < first) first = t;
            }
        }
    }
    msgpack_unpacked_destroy(&u);
    return first;
}

int64_t eg_env_ms_parse(const void *v, size_t n) {
    const unsigned char *p = v;
    if (!p || n == 0 || n > 16) return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i])) return -1;
        x = x * 10 + (p[i] - '0');
    }
    return x >= 1 && x <= MS_MAX ? x : -1;
}
