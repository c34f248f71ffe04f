/* prom_check.h — a strict reader of what eg_prom_merge writes, for
 * c/test_prom_merge and fuzz_prom_merge. It shares no code with the merge:
 * it reads the output as a scraper would and checks the merge's promises.
 *
 *   - every byte: UTF-8, no control byte but tab and the line feeds; the
 *     text is empty or ends in '\n';
 *   - every line one of, exactly (single spaces, nothing trailing):
 *       # HELP name text     (text not empty; escapes \\ and \n only)
 *       # TYPE name counter|gauge|histogram|summary|untyped
 *       name{source="S",l="v",...} value[ timestamp]
 *     names as the format says, label values with \\ \" \n only, value a
 *     decimal float, NaN, +Inf or -Inf, timestamp a 64-bit integer;
 *   - a family is one block: HELP (at most once), TYPE (at most once, after
 *     HELP), then its samples; a family's name never starts a second block;
 *     every sample is in the block of a TYPE line and belongs to it (the
 *     name itself for counter, gauge, untyped and summary (with a float
 *     quantile label); name_bucket (with a float le label), name_sum,
 *     name_count for histogram; name_sum, name_count for summary); no
 *     block's name is a _bucket/_sum/_count name of a histogram or summary
 *     block, nor the other way round;
 *   - the first label of every sample is source, its value one of the
 *     escaped source names; no other label is source or starts "__", no
 *     label name twice;
 *   - no series (name and label set) twice.
 * pc_check returns the number of samples (per source into counts[], when
 * given), or -1 with the first broken promise in why. */
#ifndef EG_PROM_CHECK_H
#define EG_PROM_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p; /* the family's name, in the checked text */
    size_t n;
    int type; /* index into pc_types, or -1 */
} pc_block;

static const char *const pc_types[] = {"counter", "gauge", "histogram", "summary", "untyped"};

static int pc_utf8_ok(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, min, cp;
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n') return 0;
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) need = 1, min = 0x80, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) need = 2, min = 0x800, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) need = 3, min = 0x10000, cp = c & 0x07;
        else return 0;
        if (n - i <= need) return 0;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += need + 1;
    }
    return 1;
}

static int pc_name_char(char c, int first, int colon) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':')) return 1;
    return !first && c >= '0' && c <= '9';
}

/* The length of a name at s (colon: metric name), 0 if none. */
static size_t pc_name(const char *s, const char *end, int colon) {
    size_t n = 0;
    while (s + n < end && pc_name_char(s[n], n == 0, colon)) n++;
    return n;
}

static int pc_num(const char *s, size_t n) {
    if (n == 3 && !strncmp(s, "NaN", 3)) return 1;
    if (n == 4 && (!strncmp(s, "+Inf", 4) || !strncmp(s, "-Inf", 4))) return 1;
    size_t i = 0, d = 0;
    if (i < n && strchr("+-", s[i]) && s[i]) i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, d++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, d++;
    }
    if (!d) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, e++;
        if (!e) return 0;
    }
    return i == n;
}

static int pc_i64(const char *s, size_t n) {
    char buf[24];
    if (!n || n > 20) return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    const char *d = buf[0] == '-' ? buf + 1 : buf;
    if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 19) return 0;
    if (strlen(d) < 19) return 1;
    return strcmp(d, d == buf ? "9223372036854775807" : "9223372036854775808") <= 0;
}

static int pc_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Is name (n bytes) a _bucket/_sum/_count name of a histogram/summary block of blocks[0..nb)? */
static int pc_owned(const pc_block *blocks, int nb, const char *name, size_t n) {
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    for (int b = 0; b < nb; b++) {
        if (blocks[b].type != 2 && blocks[b].type != 3) continue;
        for (int k = blocks[b].type == 2 ? 0 : 1; k < 3; k++) {
            size_t sl = strlen(sfx[k]);
            if (n == blocks[b].n + sl && !memcmp(name, blocks[b].p, blocks[b].n) &&
                !memcmp(name + blocks[b].n, sfx[k], sl))
                return 1;
        }
    }
    return 0;
}

#define PC_FAIL(...)                                  \
    do {                                              \
        snprintf(why, whylen, "line %d: ", lno);      \
        size_t l_ = strlen(why);                      \
        snprintf(why + l_, whylen - l_, __VA_ARGS__); \
        goto fail;                                    \
    } while (0)

static long pc_check(const char *text, size_t len, const char *const *names, int nnames, long *counts, char *why,
                     size_t whylen) {
    int lno = 0, nb = 0, cur_help = 0, cur_type = 0, cur_samples = 0;
    long total = 0;
    size_t nkeys = 0, capkeys = 0;
    char **keys = NULL;
    pc_block *blocks = calloc(len / 8 + 2, sizeof *blocks); /* a block takes at least 8 bytes */
    if (counts)
        for (int i = 0; i < nnames; i++) counts[i] = 0;
    if (!pc_utf8_ok((const unsigned char *)text, len)) PC_FAIL("not UTF-8, or a control byte");
    if (len && text[len - 1] != '\n') PC_FAIL("the text does not end in a line feed");
    for (const char *s = text, *end; s < text + len; s = end + 1) {
        end = memchr(s, '\n', (size_t)(text + len - s));
        lno++;
        if (s[0] == '#') {
            int help = end - s > 7 && !strncmp(s, "# HELP ", 7), type = end - s > 7 && !strncmp(s, "# TYPE ", 7);
            if (!help && !type) PC_FAIL("a comment other than HELP and TYPE");
            const char *nm = s + 7;
            size_t n = pc_name(nm, end, 1);
            if (!n || nm + n == end || nm[n] != ' ' || nm + n + 1 == end) PC_FAIL("HELP/TYPE without name and text");
            const char *rest = nm + n + 1;
            int t = -1;
            if (help) {
                for (const char *q = rest; q < end; q++)
                    if (*q == '\\' && (++q == end || (*q != '\\' && *q != 'n'))) PC_FAIL("a bad escape in HELP");
            } else {
                for (int k = 0; k < 5; k++)
                    if ((size_t)(end - rest) == strlen(pc_types[k]) && !strncmp(rest, pc_types[k], strlen(pc_types[k])))
                        t = k;
                if (t < 0) PC_FAIL("TYPE %.*s", (int)(end - rest), rest);
            }
            int same = nb && blocks[nb - 1].n == n && !memcmp(blocks[nb - 1].p, nm, n);
            if (same && (cur_samples || cur_type || (help && cur_help)))
                PC_FAIL("%.*s: HELP/TYPE again or late", (int)n, nm);
            if (!same) {
                for (int b = 0; b < nb; b++)
                    if (blocks[b].n == n && !memcmp(blocks[b].p, nm, n))
                        PC_FAIL("family %.*s in two blocks", (int)n, nm);
                if (pc_owned(blocks, nb, nm, n)) PC_FAIL("family %.*s is another's sample name", (int)n, nm);
                blocks[nb].p = nm;
                blocks[nb].n = n;
                blocks[nb++].type = -1;
                cur_help = cur_type = cur_samples = 0;
            }
            if (help) cur_help = 1;
            else {
                cur_type = 1;
                blocks[nb - 1].type = t;
                /* a histogram/summary must not own an earlier block's name */
                for (int b = 0; b < nb - 1; b++)
                    if (pc_owned(&blocks[nb - 1], 1, blocks[b].p, blocks[b].n))
                        PC_FAIL("%.*s owns the family %.*s", (int)n, nm, (int)blocks[b].n, blocks[b].p);
            }
            continue;
        }
        /* a sample */
        size_t n = pc_name(s, end, 1);
        const char *q = s + n;
        if (!n || q == end || *q != '{') PC_FAIL("a sample without labels");
        if (!nb || !cur_type) PC_FAIL("a sample outside a typed block");
        const pc_block *f = &blocks[nb - 1];
        const char *le = NULL, *quantile = NULL;
        size_t len_le = 0, len_quantile = 0;
        int nlab = 0, src = -1;
        const char *lab[256];
        size_t labn[256], labfull[256];
        q++;
        for (;;) {
            size_t ln = pc_name(q, end, 0);
            if (!ln || q + ln + 1 >= end || q[ln] != '=' || q[ln + 1] != '"') PC_FAIL("a bad label");
            const char *v = q + ln + 2, *w = v;
            while (w < end && *w != '"') {
                if (*w == '\\' && (w + 1 == end || !strchr("\\\"n", w[1]) || !w[1])) PC_FAIL("a bad escape in a label");
                w += *w == '\\' ? 2 : 1;
            }
            if (w >= end) PC_FAIL("an unclosed label value");
            if (nlab == 256) PC_FAIL("too many labels");
            if (nlab == 0) {
                if (ln != 6 || strncmp(q, "source", 6)) PC_FAIL("the first label is not source");
                for (int k = 0; k < nnames; k++) {
                    char esc[600];
                    size_t e = 0;
                    for (const char *c = names[k]; *c && e < sizeof esc - 2; c++) {
                        if (*c == '\\' || *c == '"' || *c == '\n') esc[e++] = '\\';
                        esc[e++] = *c == '\n' ? 'n' : *c;
                    }
                    if ((size_t)(w - v) == e && !memcmp(v, esc, e)) src = k;
                }
                if (src < 0) PC_FAIL("source=\"%.*s\" is none of the sources", (int)(w - v), v);
            } else {
                if ((ln == 6 && !strncmp(q, "source", 6)) || (ln >= 2 && !strncmp(q, "__", 2)))
                    PC_FAIL("label %.*s", (int)ln, q);
                for (int k = 0; k < nlab; k++)
                    if (labn[k] == ln && !memcmp(lab[k], q, ln)) PC_FAIL("label %.*s twice", (int)ln, q);
            }
            if (ln == 2 && !strncmp(q, "le", 2)) le = v, len_le = (size_t)(w - v);
            if (ln == 8 && !strncmp(q, "quantile", 8)) quantile = v, len_quantile = (size_t)(w - v);
            lab[nlab] = q;
            labn[nlab] = ln;
            labfull[nlab++] = (size_t)(w + 1 - q);
            q = w + 1;
            if (q < end && *q == ',') {
                q++;
                continue;
            }
            if (q < end && *q == '}') break;
            PC_FAIL("labels not closed");
        }
        q++;
        if (q == end || *q != ' ') PC_FAIL("no space before the value");
        const char *val = ++q;
        while (q < end && *q != ' ') q++;
        if (!pc_num(val, (size_t)(q - val))) PC_FAIL("value %.*s", (int)(q - val), val);
        if (q < end && !pc_i64(q + 1, (size_t)(end - q - 1))) PC_FAIL("timestamp %.*s", (int)(end - q - 1), q + 1);
        /* the sample belongs to its block */
        int belongs = 0;
        const char *suffix = n > f->n && !memcmp(s, f->p, f->n) ? s + f->n : NULL;
        size_t sl = suffix ? n - f->n : 0;
        if (n == f->n && !memcmp(s, f->p, n))
            belongs = f->type != 2 && (f->type != 3 || (quantile && pc_num(quantile, len_quantile)));
        else if (suffix && f->type == 2 && sl == 7 && !memcmp(suffix, "_bucket", 7)) belongs = le && pc_num(le, len_le);
        else if (suffix && (f->type == 2 || f->type == 3))
            belongs = (sl == 4 && !memcmp(suffix, "_sum", 4)) || (sl == 6 && !memcmp(suffix, "_count", 6));
        if (!belongs) PC_FAIL("%.*s is not a sample of %.*s (%d)", (int)n, s, (int)f->n, f->p, f->type);
        /* the series key: name, then the labels sorted */
        char **sorted = malloc(sizeof(char *) * (size_t)nlab);
        size_t klen = n + 2;
        for (int k = 0; k < nlab; k++) {
            sorted[k] = strndup(lab[k], labfull[k]);
            klen += labfull[k] + 1;
        }
        qsort(sorted, (size_t)nlab, sizeof(char *), pc_cmp_str);
        char *key = malloc(klen);
        size_t kp = (size_t)snprintf(key, klen, "%.*s", (int)n, s);
        for (int k = 0; k < nlab; k++) {
            kp += (size_t)snprintf(key + kp, klen - kp, "\x01%s", sorted[k]);
            free(sorted[k]);
        }
        free(sorted);
        if (nkeys == capkeys) keys = realloc(keys, (capkeys = capkeys ? 2 * capkeys : 64) * sizeof *keys);
        keys[nkeys++] = key;
        cur_samples = 1;
        total++;
        if (counts) counts[src]++;
    }
    if (nkeys) qsort(keys, nkeys, sizeof *keys, pc_cmp_str);
    for (size_t k = 1; k < nkeys; k++)
        if (!strcmp(keys[k - 1], keys[k])) {
            lno = 0;
            PC_FAIL("series %s twice", keys[k]);
        }
    for (size_t k = 0; k < nkeys; k++) free(keys[k]);
    free(keys);
    free(blocks);
    return total;
fail:
    for (size_t k = 0; k < nkeys; k++) free(keys[k]);
    free(keys);
    free(blocks);
    return -1;
}

#endif
