/* fuzz_prom_merge.c — eg_prom_merge (prom_merge.c), what a supervisor runs
 * on the /metrics bodies of its child gateways, each hostile bytes.
 *
 * Input: one flags byte, then up to four bodies separated by "\n--\n" (the
 * first '\n' stays with the body before). Flags: bits 0-1, the number of
 * bodies (1 + b & 3, fewer when the separators run out); bit 2, source
 * names the format must escape ("a\"b", "c\\d", "e\nf", "g\th") instead of
 * plain ones; bit 7, body 0 starts with a line of 20,000 bytes (past
 * EG_PROM_MAX_LINE, which the fuzzer's 8 KiB inputs cannot reach).
 *
 * Oracle, on every input:
 *   - the merge succeeds (the inputs are far inside the bounds);
 *   - prom_check.h's strict reader accepts the output: well-formed lines, a
 *     family one block with HELP and TYPE once before its samples, no name
 *     of one family another's, source first on every sample and one of the
 *     names, no series twice;
 *   - no sample is lost unseen: each body's sample-like lines (not blank,
 *     not starting with '#') are each a sample out or a drop, so samples
 *     out plus drops lie between their count and that plus the '#' lines;
 *     a body's samples out are at most its sample-like lines; and with the
 *     '#' lines taken out of every body, samples out plus drops are
 *     exactly the sample-like lines;
 *   - the same input merges to the same bytes and count again;
 *   - body 0 merged alone gives the same source-0 lines, in the same order,
 *     and drops no more;
 *   - that solo output with its source labels taken out is a clean
 *     exposition: merged again under the same name it comes back byte for
 *     byte, nothing dropped. */
#include "../c/prom_check.h"
#include "fuzz.h"
#include "prom_merge.h"

#include <string.h>

#define NB 4

/* The merge as a NUL-terminated string (caller frees); rc and dropped out. */
static char *merged(const char *const *names, const char *const *bodies, const size_t *lens, int n, int *rc,
                    size_t *dropped, size_t *len) {
    struct evbuffer *b = evbuffer_new();
    *rc = eg_prom_merge(names, bodies, lens, n, b, dropped);
    *len = evbuffer_get_length(b);
    char *s = malloc(*len + 1);
    evbuffer_remove(b, s, *len);
    s[*len] = 0;
    evbuffer_free(b);
    return s;
}

/* The sample lines of s whose labels open with {source="esc" (esc: the
 * escaped name), in order; with strip, every line, that label taken out.
 * Caller frees. */
static char *lines_of(const char *s, const char *esc, int strip) {
    char want[64], *out = malloc(strlen(s) + 1), *w = out;
    snprintf(want, sizeof want, "{source=\"%s\"", esc);
    size_t wl = strlen(want);
    for (const char *l = s; *l;) {
        /* a sample's labels open at its first '{' (a HELP text may hold anything) */
        const char *e = strchr(l, '\n') + 1, *at = *l == '#' ? NULL : memchr(l, '{', (size_t)(e - l));
        if (at && ((size_t)(e - at) < wl || memcmp(at, want, wl))) at = NULL;
        if (strip) {
            if (at) {
                size_t head = (size_t)(at - l) + 1; /* through the '{' */
                memcpy(w, l, head);
                w += head;
                const char *rest = at + wl;
                if (*rest == ',') rest++;
                memcpy(w, rest, (size_t)(e - rest));
                w += e - rest;
            } else {
                memcpy(w, l, (size_t)(e - l));
                w += e - l;
            }
        } else if (at) {
            memcpy(w, l, (size_t)(e - l));
            w += e - l;
        }
        l = e;
    }
    *w = 0;
    return out;
}

static void escape(const char *name, char *out) {
    for (; *name; name++) {
        if (*name == '\\' || *name == '"' || *name == '\n') *out++ = '\\';
        *out++ = *name == '\n' ? 'n' : *name;
    }
    *out = 0;
}

/* The lines of b[0..n) as the merge splits them (a last line without '\n'
 * too): *samplish those that are not blank and whose first byte past the
 * blanks is not '#', *hashed those whose is; a line past EG_PROM_MAX_LINE
 * is never blank. The body without its '#' lines into rest (n bytes). */
static void classify(const char *b, size_t n, size_t *samplish, size_t *hashed, char *rest, size_t *restlen) {
    *samplish = *hashed = *restlen = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(b + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (b + i)) : n - i, k = 0;
        while (k < len && (b[i + k] == ' ' || b[i + k] == '\t')) k++;
        if (k < len && b[i + k] == '#') {
            ++*hashed;
        } else {
            if (k < len || (nl && len + 1 > EG_PROM_MAX_LINE)) ++*samplish;
            memcpy(rest + *restlen, b + i, len + (nl ? 1 : 0));
            *restlen += len + (nl ? 1 : 0);
        }
        i += len + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const plain[NB] = {"orders", "payments", "refunds", "x"};
    static const char *const odd[NB] = {"a\"b", "c\\d", "e\nf", "g\th"};
    if (size < 1) return 0;
    unsigned flags = data[0];
    const char *const *names = flags & 4 ? odd : plain;
    int want = 1 + (int)(flags & 3), n = 0;
    const char *bodies[NB];
    size_t lens[NB];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    while (n < want) {
        const char *sep = n + 1 < want ? memmem(p, (size_t)(end - p), "\n--\n", 4) : NULL;
        bodies[n] = p;
        lens[n++] = sep ? (size_t)(sep + 1 - p) : (size_t)(end - p);
        if (!sep) break;
        p = sep + 4;
    }
    char *first = NULL;
    if (flags & 0x80) {
        size_t big = 20000;
        first = malloc(big + lens[0]);
        memcpy(first, "long{x=\"", 8);
        memset(first + 8, 'x', big - 8 - 5);
        memcpy(first + big - 5, "\"} 1\n", 5);
        if (lens[0]) memcpy(first + big, bodies[0], lens[0]);
        bodies[0] = first;
        lens[0] += big;
    }
    size_t samplish[NB], hashed[NB], all_s = 0, all_h = 0, restlen[NB];
    char *rest[NB];
    const char *restc[NB];
    for (int i = 0; i < n; i++) {
        restc[i] = rest[i] = malloc(lens[i] + 1);
        classify(bodies[i], lens[i], &samplish[i], &hashed[i], rest[i], &restlen[i]);
        all_s += samplish[i];
        all_h += hashed[i];
    }

    int rc, rc2;
    size_t dropped = 0, dropped2 = 0, len, len2;
    char *out = merged(names, bodies, lens, n, &rc, &dropped, &len);
    FZ_CHECK(rc == 0, "the merge failed on %zu bytes", size);
    char why[512] = "";
    long counts[NB], samples = pc_check(out, len, names, n, counts, why, sizeof why);
    FZ_CHECK(samples >= 0, "strict reader: %s", why);
    FZ_CHECK((size_t)samples + dropped >= all_s && (size_t)samples + dropped <= all_s + all_h,
             "%ld samples + %zu dropped from %zu sample-like and %zu '#' lines", samples, dropped, all_s, all_h);
    for (int i = 0; i < n; i++)
        FZ_CHECK((size_t)counts[i] <= samplish[i], "body %d: %ld samples from %zu lines", i, counts[i], samplish[i]);
    char *bare = merged(names, restc, restlen, n, &rc2, &dropped2, &len2);
    long bs = pc_check(bare, len2, names, n, NULL, why, sizeof why);
    FZ_CHECK(rc2 == 0 && bs >= 0 && (size_t)bs + dropped2 == all_s,
             "without the '#' lines: %ld samples + %zu dropped from %zu sample-like lines (%s)", bs, dropped2, all_s,
             why);
    free(bare);
    for (int i = 0; i < n; i++) free(rest[i]);

    char *again = merged(names, bodies, lens, n, &rc2, &dropped2, &len2);
    FZ_CHECK(rc2 == 0 && dropped2 == dropped && len2 == len && !memcmp(again, out, len), "not deterministic");
    free(again);

    char *solo = merged(names, bodies, lens, 1, &rc2, &dropped2, &len2);
    FZ_CHECK(rc2 == 0 && dropped2 <= dropped, "body 0 alone: rc %d, %zu dropped against %zu", rc2, dropped2, dropped);
    char esc[32];
    escape(names[0], esc);
    char *a = lines_of(out, esc, 0), *b = lines_of(solo, esc, 0);
    FZ_CHECK(!strcmp(a, b), "body 0's lines depend on the later bodies:\n%s\n--- alone:\n%s", a, b);
    free(a);
    free(b);

    char *clean = lines_of(solo, esc, 1);
    const char *cb[] = {clean};
    size_t cl = strlen(clean);
    char *round = merged(names, cb, &cl, 1, &rc2, &dropped2, &len2);
    FZ_CHECK(rc2 == 0 && dropped2 == 0 && len2 == strlen(solo) && !strcmp(round, solo),
             "the output without its source labels does not merge back (%zu dropped):\n%s\n--- back:\n%s", dropped2,
             solo, round);
    free(round);
    free(clean);
    free(solo);
    free(out);
    free(first);
    return 0;
}
