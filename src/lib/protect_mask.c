/* protect_mask.c — the JSON path parser and the JSON masker of payload
 * protection (see protect.h).
 *
 * The masker is a strict recursive-descent JSON reader (RFC 8259, UTF-8
 * checked with eg_utf8_seq) that keeps the path from the root to the value
 * it reads (member names unescaped, so an escaped spelling of a name is the
 * name) and, when a configured path matches, reads the value (to check it)
 * and records it as replaced. The output is the input copied around the
 * replaced spans: bytes not masked are unchanged. Anything that is not
 * strict JSON is refused as a whole: a masker that guessed would let a
 * secret through in the part it misread. Recursion is bounded by
 * EG_PROT_DEPTH, path matching by EG_PROT_STEPS and one `..` step per
 * path (it tries each depth once: at most steps x depth work per value and
 * path, and only for a value whose last step matches). */
#include "protect.h"

#include "ctlsign.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- paths ---------------------------------------------------------------- */

static int perr(char *err, size_t errlen, size_t at, const char *what) {
    snprintf(err, errlen, "at byte %zu: %s", at + 1, what);
    return -1;
}

static int name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int hexval(int c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Reads 4 hex digits at s. Returns the value or -1. */
static long hex4(const char *s) {
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval((unsigned char)s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(unsigned long cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xc0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xe0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
               o[2] = (char)(0x80 | (cp & 0x3f)), 3;
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Reads a JSON string whose opening quote is at s[*i] (n bytes in all),
 * strictly. When out is not NULL, its unescaped content goes there (at most
 * cap bytes; *olen receives the full unescaped length, which may exceed
 * cap: the excess is not written). Leaves *i after the closing quote.
 * Returns 0, or -1 when the string is not well-formed. */
static int read_string(const char *s, size_t n, size_t *i, char *out, size_t cap, size_t *olen) {
    size_t p = *i + 1, o = 0;
    char tmp[4];
    for (;;) {
        if (p >= n) return -1;
        unsigned char c = (unsigned char)s[p];
        size_t w = 0;
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c == '\\') {
            if (p + 1 >= n) return -1;
            char e = s[p + 1];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                tmp[0] = map[simple - "\"\\/bfnrt"];
                w = 1;
                p += 2;
            } else if (e == 'u') {
                if (p + 6 > n) return -1;
                long cp = hex4(s + p + 2);
                if (cp < 0) return -1;
                p += 6;
                if (cp >= 0xd800 && cp <= 0xdbff && p + 6 <= n && s[p] == '\\' && s[p + 1] == 'u') {
                    long lo = hex4(s + p + 2);
                    if (lo < 0) return -1;
                    if (lo >= 0xdc00 && lo <= 0xdfff) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        p += 6;
                    }
                }
                if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; /* a lone surrogate */
                w = put_utf8((unsigned long)cp, tmp);
            } else return -1;
        } else {
            size_t k = eg_utf8_seq((const unsigned char *)s + p, n - p);
            if (!k) return -1;
            memcpy(tmp, s + p, k);
            w = k;
            p += k;
        }
        for (size_t k = 0; k < w; k++, o++)
            if (out && o < cap) out[o] = tmp[k];
    }
    if (olen) *olen = o;
    *i = p + 1;
    return 0;
}

int eg_jpath_parse(const char *s, size_t n, eg_jpath *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    if (n == 0 || s[0] != '$') return perr(err, errlen, 0, "a path starts with $");
    if (n >= EG_PROT_PATH_MAX) return perr(err, errlen, EG_PROT_PATH_MAX - 1, "the path is too long");
    size_t i = 1, used = 0;
    int ndescend = 0;
    while (i < n) {
        if (p->n >= EG_PROT_STEPS) return perr(err, errlen, i, "too many steps (at most 16)");
        eg_jstep *st = &p->step[p->n];
        if (s[i] == '.') {
            int descend = i + 1 < n && s[i + 1] == '.';
            i += descend ? 2 : 1;
            if (!descend && i < n && s[i] == '*') {
                st->kind = EG_STEP_ANY;
                i++;
                p->n++;
                continue;
            }
            size_t b = i;
            while (i < n && name_char(s[i])) i++;
            if (i == b) return perr(err, errlen, i, "expected a member name ([A-Za-z0-9_-])");
            st->kind = descend ? EG_STEP_DESCEND : EG_STEP_NAME;
            if (descend && ndescend++) return perr(err, errlen, b - 2, "at most one .. per path");
            memcpy(p->buf + used, s + b, i - b);
            st->name = p->buf + used;
            st->nlen = i - b;
            used += i - b;
        } else if (s[i] == '[') {
            i++;
            if (i < n && s[i] == '*') {
                st->kind = EG_STEP_ANY;
                i++;
            } else if (i < n && s[i] == '"') {
                size_t olen = 0, b = i;
                if (read_string(s, n, &i, p->buf + used, sizeof p->buf - used, &olen) != 0)
                    return perr(err, errlen, b, "a quoted name must be a JSON string");
                if (olen == 0) return perr(err, errlen, b, "an empty member name");
                st->kind = EG_STEP_NAME;
                st->name = p->buf + used;
                st->nlen = olen;
                used += olen;
            } else {
                size_t b = i;
                long v = 0;
                while (i < n && s[i] >= '0' && s[i] <= '9' && i - b < 9) v = v * 10 + (s[i++] - '0');
                if (i == b) return perr(err, errlen, i, "expected an index, * or a quoted name");
                if (i < n && s[i] >= '0' && s[i] <= '9') return perr(err, errlen, i, "the index is too large");
                if (i - b > 1 && s[b] == '0') return perr(err, errlen, b, "an index has no leading zero");
                st->kind = EG_STEP_INDEX;
                st->index = v;
            }
            if (i >= n || s[i] != ']') return perr(err, errlen, i, "expected ]");
            i++;
        } else return perr(err, errlen, i, "expected . or [");
        p->n++;
    }
    if (p->n == 0)
        return perr(err, errlen, 1, "the path has no step ($ alone would mask the whole payload: use encrypt)");
    return 0;
}

/* ---- masking -------------------------------------------------------------- */

typedef struct frame {
    int is_index;
    long index;
    char name[128];
    size_t nlen; /* may exceed sizeof name: then it matches no path */
} frame;

typedef struct mctx {
    const eg_prot_mask *m;
    const eg_prot_keys *keys;
    const char *s;
    size_t n, i;
    frame fr[EG_PROT_DEPTH + 1];
    int depth;
    char *out; /* the output so far */
    size_t olen, ocap, copied;
    int masked, oom;
    const char *why;
} mctx;

static int step_matches(const eg_jstep *st, const frame *f) {
    if (st->kind == EG_STEP_ANY) return 1;
    if (st->kind == EG_STEP_INDEX) return f->is_index && f->index == st->index;
    return !f->is_index && f->nlen == st->nlen && f->nlen <= sizeof f->name && !memcmp(f->name, st->name, f->nlen);
}

/* 1 when steps [si, n) match frames [fi, nf) exactly. */
static int match(const eg_jpath *p, int si, const frame *fr, int fi, int nf) {
    if (si == p->n) return fi == nf;
    if (fi == nf) return 0;
    const eg_jstep *st = &p->step[si];
    if (st->kind == EG_STEP_DESCEND) {
        for (int k = fi; k < nf; k++)
            if (!fr[k].is_index && fr[k].nlen == st->nlen && fr[k].nlen <= sizeof fr[k].name &&
                !memcmp(fr[k].name, st->name, st->nlen) && match(p, si + 1, fr, k + 1, nf))
                return 1;
        return 0;
    }
    return step_matches(st, &fr[fi]) && match(p, si + 1, fr, fi + 1, nf);
}

static int matched(const mctx *c) {
    for (int k = 0; k < c->m->npaths; k++)
        if (step_matches(&c->m->paths[k].step[c->m->paths[k].n - 1], &c->fr[c->depth]) &&
            match(&c->m->paths[k], 0, c->fr + 1, 0, c->depth))
            return 1;
    return 0;
}

static void emit(mctx *c, const void *b, size_t len) {
    if (c->oom) return;
    if (c->olen + len > c->ocap) {
        size_t cap = c->ocap ? c->ocap : 256;
        while (cap < c->olen + len) cap *= 2;
        char *o = realloc(c->out, cap);
        if (!o) {
            c->oom = 1;
            return;
        }
        c->out = o;
        c->ocap = cap;
    }
    memcpy(c->out + c->olen, b, len);
    c->olen += len;
}

static void ws(mctx *c) {
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r')) c->i++;
}

static int lit(mctx *c, const char *w) {
    size_t l = strlen(w);
    if (c->n - c->i < l || memcmp(c->s + c->i, w, l)) return -1;
    c->i += l;
    return 0;
}

static int number(mctx *c) {
    const char *s = c->s;
    size_t n = c->n, i = c->i;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return -1;
    if (s[i] == '0') i++;
    else if (s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    else return -1;
    if (i < n && s[i] == '.') {
        size_t b = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == b) return -1;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t b = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == b) return -1;
    }
    c->i = i;
    return 0;
}

/* Writes the replacement of the value s[b, e) (already checked). */
static void replace(mctx *c, size_t b, size_t e) {
    emit(c, c->s + c->copied, b - c->copied);
    c->copied = e;
    c->masked++;
    if (!c->m->hash || !c->keys || c->keys->n == 0) {
        char lit_[200];
        size_t len = 0;
        if (eg_json_put_str(lit_, sizeof lit_, &len, c->m->token, strlen(c->m->token)) != 0) {
            emit(c, "\"[masked]\"", 10);
            return;
        }
        emit(c, lit_, len);
        return;
    }
    unsigned char mac[32];
    if (c->s[b] == '"') { /* a string: its content, so that every spelling of it hashes alike */
        size_t i = b, olen = 0;
        read_string(c->s, c->n, &i, NULL, 0, &olen);
        char *u = malloc(olen ? olen : 1);
        if (!u) {
            c->oom = 1;
            return;
        }
        i = b;
        read_string(c->s, c->n, &i, u, olen, &olen);
        eg_hmac_sha256(c->keys->mac[0], 32, u, olen, mac);
        free(u);
    } else eg_hmac_sha256(c->keys->mac[0], 32, c->s + b, e - b, mac);
    char h[48] = "\"hmac:";
    for (int k = 0; k < 16; k++) snprintf(h + 6 + 2 * k, 3, "%02x", mac[k]);
    h[38] = '"';
    emit(c, h, 39);
}

static int value(mctx *c, int masking);

/* Reads the value at c->i, with the path of c->fr[1..depth]; masking 0
 * when an enclosing value is being replaced already. */
static int value(mctx *c, int masking) {
    ws(c);
    if (c->i >= c->n) return -1;
    size_t b = c->i;
    int hit = masking && c->depth > 0 && matched(c);
    int inner = masking && !hit;
    char ch = c->s[c->i];
    if (ch == '{' || ch == '[') {
        if (c->depth >= EG_PROT_DEPTH) {
            c->why = "too_deep";
            return -1;
        }
        char close = ch == '{' ? '}' : ']';
        c->i++;
        ws(c);
        if (c->i < c->n && c->s[c->i] == close) {
            c->i++;
        } else {
            long idx = 0;
            c->depth++;
            frame *f = &c->fr[c->depth];
            for (;;) {
                ws(c);
                if (ch == '{') {
                    if (c->i >= c->n || c->s[c->i] != '"') return -1;
                    f->is_index = 0;
                    if (read_string(c->s, c->n, &c->i, f->name, sizeof f->name, &f->nlen) != 0) return -1;
                    ws(c);
                    if (c->i >= c->n || c->s[c->i] != ':') return -1;
                    c->i++;
                } else {
                    f->is_index = 1;
                    f->index = idx++;
                }
                if (value(c, inner) != 0) return -1;
                ws(c);
                if (c->i >= c->n) return -1;
                if (c->s[c->i] == ',') {
                    c->i++;
                    continue;
                }
                if (c->s[c->i] != close) return -1;
                c->i++;
                break;
            }
            c->depth--;
        }
    } else if (ch == '"') {
        if (read_string(c->s, c->n, &c->i, NULL, 0, NULL) != 0) return -1;
    } else if (ch == 't') {
        if (lit(c, "true")) return -1;
    } else if (ch == 'f') {
        if (lit(c, "false")) return -1;
    } else if (ch == 'n') {
        if (lit(c, "null")) return -1;
    } else if (number(c) != 0) return -1;
    if (hit) replace(c, b, c->i);
    return 0;
}

int eg_prot_mask_json(const eg_prot_mask *m, const eg_prot_keys *keys, const void *in, size_t n, char **out,
                      size_t *outlen, int *masked, const char **why) {
    mctx *c = calloc(1, sizeof *c);
    *out = NULL;
    *outlen = 0;
    *masked = 0;
    if (!c) {
        *why = "out_of_memory";
        return -1;
    }
    c->m = m;
    c->keys = keys;
    c->s = in ? in : "";
    c->n = in ? n : 0;
    c->why = "not_json";
    int rc = value(c, 1);
    if (rc == 0) {
        ws(c);
        if (c->i != c->n) rc = -1;
    }
    if (rc == 0) {
        emit(c, c->s + c->copied, c->n - c->copied);
        emit(c, "", 1); /* a NUL after the output, not counted: a buffer even for an empty one */
        c->olen--;
    }
    if (rc == 0 && c->oom) {
        rc = -1;
        c->why = "out_of_memory";
    }
    if (rc != 0) {
        free(c->out);
        *why = c->why;
    } else {
        *out = c->out;
        *outlen = c->olen;
        *masked = c->masked;
    }
    free(c);
    return rc;
}
