/* json.c — JSON text (see json.h).
 *
 * One escaper for every writer, so that a string reads the same in a log
 * line, an admin answer, a DLQ state record and a test case. Invalid UTF-8
 * becomes U+FFFD rather than \u00XX of the byte: \u00XX would be read back
 * as a Latin-1 character the input never held, while U+FFFD says "a byte
 * that was not text was here" in every JSON reader; it is written as the
 * escape \ufffd, so that the substitution shows in the raw text too and the
 * output of invalid input stays ASCII. One U+FFFD per byte (as Go's
 * encoding/json does) keeps the rule simple and the count of lost bytes
 * visible. The reader is the small one the DLQ state records need: one
 * string member of a top-level object, everything else skipped. */
#include "json.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

size_t eg_utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned cp = len == 1 ? c : c & (0x7fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3fu);
    }
    /* overlong forms, surrogates, beyond U+10FFFF */
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return len;
}

int eg_utf8_valid(const void *s, size_t n) {
    const unsigned char *p = s;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = eg_utf8_seq(p + i, n - i))) return 0;
    return 1;
}

size_t eg_json_escape(const char *s, size_t n, char *out, size_t outlen, size_t *used) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned c = p[i];
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4 & 15], hex[c & 15]};
        const char *piece = esc;
        size_t k = 2, adv = 1;
        if (c == '"' || c == '\\') esc[1] = (char)c;
        else if (c == '\n') esc[1] = 'n';
        else if (c == '\r') esc[1] = 'r';
        else if (c == '\t') esc[1] = 't';
        else if (c < 0x20 || c == 0x7f) k = 6;
        else if (c < 0x80) piece = s + i, k = 1;
        else if ((adv = eg_utf8_seq(p + i, n - i)) > 0) piece = s + i, k = adv;
        else piece = "\\ufffd", k = 6, adv = 1;
        if (k > outlen - o) break;
        memcpy(out + o, piece, k);
        o += k;
        i += adv;
    }
    if (used) *used = i;
    return o;
}

void eg_json_strn(struct evbuffer *out, const char *s, size_t n) {
    char chunk[512];
    evbuffer_add(out, "\"", 1);
    while (n > 0) { /* every escaped character fits a chunk: each round consumes some */
        size_t used, k = eg_json_escape(s, n, chunk, sizeof chunk, &used);
        evbuffer_add(out, chunk, k);
        s += used;
        n -= used;
    }
    evbuffer_add(out, "\"", 1);
}

void eg_json_str(struct evbuffer *out, const char *s) {
    if (!s) s = "";
    eg_json_strn(out, s, strlen(s));
}

int eg_json_put_str(char *out, size_t outlen, size_t *len, const char *s, size_t n) {
    size_t o = *len, used;
    if (o + 3 > outlen) return -1; /* the quotes and the NUL */
    size_t k = eg_json_escape(s, n, out + o + 1, outlen - o - 3, &used);
    if (used < n) return -1;
    out[o] = '"';
    out[o + 1 + k] = '"';
    out[o + 2 + k] = '\0';
    *len = o + 2 + k;
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

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
                    v = v * 16 + (unsigned)(isdigit((unsigned char)p[i]) ? p[i] - '0'
                                                                         : (tolower((unsigned char)p[i]) - 'a' + 10));
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

/* Skips an object or array starting at p ('{' or '['). */
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
        if (p < end && *p == ',') {
            p = ws(p + 1, end);
            continue;
        }
        if (p < end && *p == close) return p + 1;
        return NULL;
    }
}

/* Skips any value at p, containers nested at most 64 deep. */
static const char *jvalue(const char *p, const char *end, int depth) {
    if (p >= end || depth > 64) return NULL;
    if (*p == '"') return jstring(p, end, NULL, 0);
    if (*p == '{' || *p == '[') return jcontainer(p, end, depth);
    const char *q = p;
    while (q < end && (isalnum((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.')) q++;
    return q > p ? q : NULL; /* number, true, false, null: not checked further */
}

int eg_json_get_str(const char *json, size_t len, const char *field, char *out, size_t outlen) {
    const char *v;
    size_t vlen;
    if (eg_json_get_raw(json, len, field, &v, &vlen) != 0 || *v != '"') return -1;
    return jstring(v, v + vlen, out, outlen) ? 0 : -1;
}

int eg_json_get_raw(const char *json, size_t len, const char *field, const char **val, size_t *vlen) {
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
        const char *v = p;
        p = jvalue(p, end, 1);
        if (!p) return -1;
        if (strcmp(name, field) == 0) { /* the last member of a name wins */
            *val = v;
            *vlen = (size_t)(p - v);
            found = 0;
        }
        p = ws(p, end);
        if (p < end && *p == ',') {
            p = ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') return found;
        return -1;
    }
    return -1;
}

char *eg_json_take(struct evbuffer *b) {
    size_t n = evbuffer_get_length(b);
    char *s = eg_xmalloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    evbuffer_free(b);
    return s;
}
