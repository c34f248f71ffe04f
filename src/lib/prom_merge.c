/* prom_merge.c — the merge of Prometheus text expositions (see prom_merge.h).
 *
 * One pass over the bodies, in order, line by line. Each family name has an
 * entry in a small open-addressing table (at most EG_PROM_MAX_FAMILIES): its
 * merged state (type, HELP text, its samples rendered into an evbuffer of
 * its own, whether it is shown, and where) and the view of the body being
 * read (the TYPE and HELP that body gave, whether it conflicts). A sample's
 * family is found as the Go parser (expfmt) finds it within one exposition:
 * the exact name if the body already has that family, else the base name
 * of a _bucket (histogram) or _sum/_count (histogram, summary) the body
 * typed, else a family of its own, untyped unless the body typed it. The
 * first body to type a family fixes its type; a later body that disagrees
 * loses that family's lines. A family's names (x_bucket, x_sum, x_count of
 * a histogram x) cannot be another family's, so a reader of the output
 * resolves every sample to the block it is in. A set of series keys (source,
 * sample name, labels sorted by name, values as escaped: the three escapes
 * make that text canonical) drops a series given twice. Nothing is appended
 * to the caller's buffer until the whole merge has succeeded. */
#include "prom_merge.h"
#include "json.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { T_NONE = -1, T_COUNTER, T_GAUGE, T_HISTOGRAM, T_SUMMARY, T_UNTYPED };
static const char *const type_names[] = {"counter", "gauge", "histogram", "summary", "untyped"};

/* Outcome of one line: kept (carried or merged), dropped (counted), or the
 * merge is over (a bound or memory). */
enum { L_KEPT = 0, L_DROP = 1, L_FATAL = -1 };

typedef struct fam {
    char *name; /* owned, NUL-terminated */
    size_t nlen;
    int type;   /* merged type, T_NONE until a TYPE line or a sample fixes it */
    char *help; /* owned escaped HELP text, or NULL */
    size_t hlen;
    int help_from;            /* the body whose HELP it is */
    int shown;                /* in the output (order[] holds it) */
    struct evbuffer *samples; /* rendered sample lines, owned; NULL until the first */
    /* the view of body in_body */
    int in_body;
    int in_type; /* that body's TYPE (T_UNTYPED once a sample came first), or T_NONE */
    int in_help; /* that body gave a HELP line */
    int in_conflict;
} fam;

typedef struct {
    char *key; /* owned */
    size_t n;
    uint64_t h;
} series;

typedef struct {
    const char *np, *vp; /* label name, escaped value (inside the quotes) */
    size_t nn, vn;
} label;

typedef struct {
    fam *fams; /* capfams (at most EG_PROM_MAX_FAMILIES), nfams used; moves as it grows */
    int nfams, capfams;
    int *slots; /* 2 * EG_PROM_MAX_FAMILIES, index + 1, 0 empty */
    int *order; /* shown families, in order (capfams) */
    int norder;
    series *set; /* series keys, open addressing, cap a power of two */
    size_t setcap, nset;
    size_t dropped;
    int body;
    char src[EG_PROM_MAX_NAME * 2]; /* this body's escaped source name */
    size_t srclen;
    char *line; /* a rendered sample: EG_PROM_MAX_LINE + 2 * EG_PROM_MAX_NAME + 32 */
    char *key;  /* a series key or a derived name: the same size */
} merge;

#define SCRATCH (EG_PROM_MAX_LINE + 2 * EG_PROM_MAX_NAME + 32)
#define NSLOTS (2 * EG_PROM_MAX_FAMILIES)

/* ---- lexical pieces -------------------------------------------------------- */

static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static size_t skip_blanks(const char *p, size_t i, size_t n) {
    while (i < n && is_blank(p[i])) i++;
    return i;
}

/* The length of the metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at p[i..n), 0 if none. */
static size_t metric_name_len(const char *p, size_t i, size_t n) {
    size_t j = i;
    if (j < n && (is_alpha_(p[j]) || p[j] == ':')) j++;
    else return 0;
    while (j < n && (is_alpha_(p[j]) || is_digit(p[j]) || p[j] == ':')) j++;
    return j - i;
}

/* The length of the label name ([a-zA-Z_][a-zA-Z0-9_]*) at p[i..n), 0 if none. */
static size_t label_name_len(const char *p, size_t i, size_t n) {
    size_t j = i;
    if (j < n && is_alpha_(p[j])) j++;
    else return 0;
    while (j < n && (is_alpha_(p[j]) || is_digit(p[j]))) j++;
    return j - i;
}

/* 1 when p[0..n) is a sample value: a decimal float, NaN, +Inf, -Inf (the
 * format's words; Go's ParseFloat would take "inf" or "Infinity" too). */
static int is_float(const char *p, size_t n) {
    if ((n == 3 && !memcmp(p, "NaN", 3)) || (n == 4 && (!memcmp(p, "+Inf", 4) || !memcmp(p, "-Inf", 4)))) return 1;
    size_t i = 0, digits = 0;
    if (i < n && (p[i] == '+' || p[i] == '-')) i++;
    for (; i < n && is_digit(p[i]); i++) digits++;
    if (i < n && p[i] == '.')
        for (i++; i < n && is_digit(p[i]); i++) digits++;
    if (!digits) return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t e = 0;
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        for (; i < n && is_digit(p[i]); i++) e++;
        if (!e) return 0;
    }
    return i == n;
}

/* 1 when p[0..n) is a 64-bit signed decimal integer (a timestamp in ms). */
static int is_int64(const char *p, size_t n) {
    size_t i = p[0] == '-' ? 1 : 0;
    if (n <= i || n - i > 19) return 0;
    for (size_t j = i; j < n; j++)
        if (!is_digit(p[j])) return 0;
    if (n - i < 19) return 1;
    return memcmp(p + i, i ? "9223372036854775808" : "9223372036854775807", 19) <= 0;
}

/* 1 when the escapes of p[0..n) are those the format allows: \\ and \n,
 * and \" when quote is set (label values). */
static int escapes_ok(const char *p, size_t n, int quote) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\\') continue;
        if (++i == n) return 0;
        if (p[i] != '\\' && p[i] != 'n' && !(quote && p[i] == '"')) return 0;
    }
    return 1;
}

/* ---- the family table ------------------------------------------------------ */

/* The family named p[0..n), or NULL. */
static fam *find(const merge *m, const char *p, size_t n) {
    uint64_t h = eg_hash64(p, n);
    for (size_t s = h & (NSLOTS - 1);; s = (s + 1) & (NSLOTS - 1)) {
        int ix = m->slots[s];
        if (!ix) return NULL;
        fam *f = &m->fams[ix - 1];
        if (f->nlen == n && !memcmp(f->name, p, n)) return f;
    }
}

/* The family named p[0..n), added (not shown, untyped) when new; NULL when
 * the table is full or memory ran out. Moves the families: a pointer to one
 * does not outlive a call. */
static fam *get(merge *m, const char *p, size_t n) {
    uint64_t h = eg_hash64(p, n);
    size_t s = h & (NSLOTS - 1);
    for (; m->slots[s]; s = (s + 1) & (NSLOTS - 1)) {
        fam *f = &m->fams[m->slots[s] - 1];
        if (f->nlen == n && !memcmp(f->name, p, n)) return f;
    }
    if (m->nfams == EG_PROM_MAX_FAMILIES) return NULL;
    if (m->nfams == m->capfams) {
        int cap = m->capfams ? 2 * m->capfams : 64;
        fam *fams = realloc(m->fams, (size_t)cap * sizeof *fams);
        if (!fams) return NULL;
        m->fams = fams;
        int *order = realloc(m->order, (size_t)cap * sizeof *order);
        if (!order) return NULL;
        m->order = order;
        m->capfams = cap;
    }
    fam *f = &m->fams[m->nfams];
    memset(f, 0, sizeof *f);
    f->name = eg_xstrndup(p, n);
    f->nlen = n;
    f->type = T_NONE;
    f->in_body = -1;
    m->slots[s] = ++m->nfams;
    return f;
}

/* Makes f's in_* fields describe the body being read. */
static void touch(const merge *m, fam *f) {
    if (f->in_body == m->body) return;
    f->in_body = m->body;
    f->in_type = T_NONE;
    f->in_help = f->in_conflict = 0;
}

static void show(merge *m, fam *f) {
    if (f->shown) return;
    f->shown = 1;
    m->order[m->norder++] = (int)(f - m->fams);
}

/* This body disagrees with f: its lines of f are dropped from now on, and a
 * HELP line it gave (merged so far) is counted and, when it gave f its
 * HELP text, taken back. */
static void conflict(merge *m, fam *f) {
    f->in_conflict = 1;
    if (f->in_help) m->dropped++;
    if (f->help && f->help_from == m->body) {
        free(f->help);
        f->help = NULL;
    }
}

/* The base of name p[0..n) when it ends in suffix, as (length), else 0. */
static size_t base_len(const char *p, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n > k && !memcmp(p + n - k, suffix, k) ? n - k : 0;
}

/* 1 when p[0..n) is a name of a shown histogram or summary family other
 * than its own (x_bucket, x_sum, x_count); with body_view, of a family the
 * body being read typed so (whether shown or not). */
static int owned(const merge *m, const char *p, size_t n, int body_view) {
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    for (int k = 0; k < 3; k++) {
        size_t b = base_len(p, n, sfx[k]);
        const fam *f = b ? find(m, p, b) : NULL;
        if (!f) continue;
        int t = body_view ? (f->in_body == m->body ? f->in_type : T_NONE) : (f->shown ? f->type : T_NONE);
        if (t == T_HISTOGRAM || (k > 0 && t == T_SUMMARY)) return 1;
    }
    return 0;
}

/* 1 when a family p[0..n) of type t would own the name of a shown family. */
static int owns_shown(merge *m, const char *p, size_t n, int t) {
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    if (t != T_HISTOGRAM && t != T_SUMMARY) return 0;
    for (int k = t == T_HISTOGRAM ? 0 : 1; k < 3; k++) {
        size_t sl = strlen(sfx[k]);
        memcpy(m->key, p, n);
        memcpy(m->key + n, sfx[k], sl);
        const fam *f = find(m, m->key, n + sl);
        if (f && f->shown) return 1;
    }
    return 0;
}

/* ---- HELP and TYPE ---------------------------------------------------------- */

static int help_line(merge *m, const char *name, size_t nn, const char *doc, size_t dn) {
    if (owned(m, name, nn, 1)) return L_DROP; /* a second HELP of the body's family */
    fam *f = get(m, name, nn);
    if (!f) return L_FATAL;
    touch(m, f);
    if (f->in_help) return L_DROP;
    f->in_help = 1;
    if (f->in_conflict || (!f->shown && owned(m, name, nn, 0))) return L_DROP;
    if (!f->help) {
        f->help = eg_xstrndup(doc, dn);
        f->hlen = dn;
        f->help_from = m->body;
    }
    show(m, f);
    return L_KEPT;
}

static int type_line(merge *m, const char *name, size_t nn, int t) {
    if (owned(m, name, nn, 1)) return L_DROP; /* a second TYPE of the body's family */
    fam *f = get(m, name, nn);
    if (!f) return L_FATAL;
    touch(m, f);
    if (f->in_type != T_NONE) return L_DROP; /* a second TYPE, or after the samples */
    f->in_type = t;
    if (f->type == T_NONE) {
        if (owned(m, name, nn, 0) || owns_shown(m, name, nn, t)) {
            conflict(m, f);
            return L_DROP;
        }
        f->type = t;
        show(m, f);
        return L_KEPT;
    }
    if (f->type != t) {
        conflict(m, f);
        return L_DROP;
    }
    return L_KEPT;
}

/* A comment line: p[i] is the '#'. */
static int comment_line(merge *m, const char *p, size_t i, size_t n) {
    i = skip_blanks(p, i + 1, n);
    size_t k = i;
    while (k < n && !is_blank(p[k])) k++;
    int help = k - i == 4 && !memcmp(p + i, "HELP", 4), type = k - i == 4 && !memcmp(p + i, "TYPE", 4);
    if (!help && !type) return L_KEPT; /* a plain comment: not carried, not counted */
    i = skip_blanks(p, k, n);
    size_t nn = metric_name_len(p, i, n);
    if (!nn || (i + nn < n && !is_blank(p[i + nn]))) return L_DROP;
    const char *name = p + i;
    i = skip_blanks(p, i + nn, n);
    if (help) {
        if (i == n) return L_KEPT; /* no text: a plain comment */
        if (!escapes_ok(p + i, n - i, 0)) return L_DROP;
        return help_line(m, name, nn, p + i, n - i);
    }
    k = i;
    while (k < n && !is_blank(p[k])) k++;
    if (i == k || skip_blanks(p, k, n) != n) return L_DROP;
    for (int t = 0; t < 5; t++)
        if (strlen(type_names[t]) == k - i && !memcmp(p + i, type_names[t], k - i)) return type_line(m, name, nn, t);
    return L_DROP;
}

/* ---- samples ------------------------------------------------------------------- */

/* Adds key[0..n) to the series set; 1 if new, 0 if already there, -1 when
 * memory ran out. */
static int series_add(merge *m, const char *key, size_t n) {
    if (2 * (m->nset + 1) > m->setcap) {
        size_t cap = m->setcap ? 2 * m->setcap : 1024;
        series *set = calloc(cap, sizeof *set);
        if (!set) return -1;
        for (size_t i = 0; i < m->setcap; i++) {
            if (!m->set[i].key) continue;
            size_t s = m->set[i].h & (cap - 1);
            while (set[s].key) s = (s + 1) & (cap - 1);
            set[s] = m->set[i];
        }
        free(m->set);
        m->set = set;
        m->setcap = cap;
    }
    uint64_t h = eg_hash64(key, n);
    size_t s = h & (m->setcap - 1);
    for (; m->set[s].key; s = (s + 1) & (m->setcap - 1))
        if (m->set[s].h == h && m->set[s].n == n && !memcmp(m->set[s].key, key, n)) return 0;
    m->set[s].key = eg_xmalloc(n ? n : 1);
    memcpy(m->set[s].key, key, n);
    m->set[s].n = n;
    m->set[s].h = h;
    m->nset++;
    return 1;
}

static int label_cmp(const label *a, const label *b) {
    size_t n = a->nn < b->nn ? a->nn : b->nn;
    int c = memcmp(a->np, b->np, n);
    return c ? c : (a->nn > b->nn) - (a->nn < b->nn);
}

/* The escaped value of label name in labs, or NULL. */
static const label *label_named(const label *labs, int nl, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < nl; i++)
        if (labs[i].nn == n && !memcmp(labs[i].np, name, n)) return &labs[i];
    return NULL;
}

/* The family of sample name p[0..n) as the body sees it (see the top), with
 * the merged checks; *fp set when kept. */
static int sample_family(merge *m, const char *p, size_t n, const label *labs, int nl, fam **fp) {
    fam *f = find(m, p, n);
    if (!(f && f->in_body == m->body && (f->in_type != T_NONE || f->in_help))) {
        static const char *const sfx[] = {"_bucket", "_sum", "_count"};
        for (int k = 0; k < 3; k++) {
            size_t b = base_len(p, n, sfx[k]);
            fam *bf = b ? find(m, p, b) : NULL;
            if (!bf || bf->in_body != m->body) continue;
            if (bf->in_type == T_HISTOGRAM || (k > 0 && bf->in_type == T_SUMMARY)) {
                if (bf->in_conflict) return L_DROP;
                if (k == 0) {
                    const label *le = label_named(labs, nl, "le");
                    if (!le || !is_float(le->vp, le->vn)) return L_DROP;
                }
                *fp = bf;
                return L_KEPT;
            }
        }
        f = get(m, p, n);
        if (!f) return L_FATAL;
    }
    touch(m, f);
    if (f->in_conflict) return L_DROP;
    if (f->in_type == T_NONE) f->in_type = T_UNTYPED;
    if (f->in_type == T_HISTOGRAM) return L_DROP; /* a histogram's own name has no samples */
    if (f->in_type == T_SUMMARY) {
        const label *q = label_named(labs, nl, "quantile");
        if (!q || !is_float(q->vp, q->vn)) return L_DROP;
    }
    if (f->type == T_NONE) {
        if (owned(m, p, n, 0)) {
            conflict(m, f);
            return L_DROP;
        }
        f->type = f->in_type;
    } else if (f->type != f->in_type) {
        conflict(m, f);
        return L_DROP;
    }
    show(m, f);
    *fp = f;
    return L_KEPT;
}

/* A sample line: p[i] is its first byte. */
static int sample_line(merge *m, const char *p, size_t i, size_t n) {
    label labs[EG_PROM_MAX_LABELS];
    int nl = 0;
    size_t nn = metric_name_len(p, i, n);
    if (!nn) return L_DROP;
    const char *name = p + i;
    size_t j = skip_blanks(p, i + nn, n);
    int blank = j > i + nn;
    if (j < n && p[j] == '{') {
        j++;
        for (;;) {
            j = skip_blanks(p, j, n);
            if (j < n && p[j] == '}') break;
            size_t ln = label_name_len(p, j, n);
            if (!ln || nl == EG_PROM_MAX_LABELS) return L_DROP;
            labs[nl].np = p + j;
            labs[nl].nn = ln;
            j = skip_blanks(p, j + ln, n);
            if (j == n || p[j] != '=') return L_DROP;
            j = skip_blanks(p, j + 1, n);
            if (j == n || p[j] != '"') return L_DROP;
            size_t v = ++j;
            while (j < n && p[j] != '"') j += p[j] == '\\' ? 2 : 1;
            if (j >= n || !escapes_ok(p + v, j - v, 1)) return L_DROP;
            labs[nl].vp = p + v;
            labs[nl++].vn = j - v;
            j = skip_blanks(p, j + 1, n);
            if (j < n && p[j] == ',') {
                j++;
                continue;
            }
            if (j < n && p[j] == '}') break;
            return L_DROP;
        }
        size_t k = skip_blanks(p, j + 1, n);
        blank = k > j + 1;
        j = k;
    }
    size_t vs = j;
    while (j < n && !is_blank(p[j])) j++;
    if (!blank || vs == j || !is_float(p + vs, j - vs)) return L_DROP;
    size_t ve = j, ts = skip_blanks(p, j, n), te = ts;
    while (te < n && !is_blank(p[te])) te++;
    if (te > ts && (!is_int64(p + ts, te - ts) || skip_blanks(p, te, n) != n)) return L_DROP;

    /* the labels: none named source, none reserved, no name twice */
    int ord[EG_PROM_MAX_LABELS];
    for (int a = 0; a < nl; a++) {
        if ((labs[a].nn == 6 && !memcmp(labs[a].np, "source", 6)) || (labs[a].nn >= 2 && !memcmp(labs[a].np, "__", 2)))
            return L_DROP;
        int b = a;
        while (b > 0 && label_cmp(&labs[ord[b - 1]], &labs[a]) > 0) {
            ord[b] = ord[b - 1];
            b--;
        }
        ord[b] = a;
    }
    for (int a = 1; a < nl; a++)
        if (!label_cmp(&labs[ord[a - 1]], &labs[ord[a]])) return L_DROP;

    fam *f = NULL;
    int rc = sample_family(m, name, nn, labs, nl, &f);
    if (rc != L_KEPT) return rc;

    /* the series key: source, name, sorted labels (NUL-separated) */
    size_t kn = 0;
    memcpy(m->key, m->src, m->srclen);
    kn += m->srclen;
    m->key[kn++] = 0;
    memcpy(m->key + kn, name, nn);
    kn += nn;
    for (int a = 0; a < nl; a++) {
        const label *l = &labs[ord[a]];
        m->key[kn++] = 0;
        memcpy(m->key + kn, l->np, l->nn);
        kn += l->nn;
        m->key[kn++] = 0;
        memcpy(m->key + kn, l->vp, l->vn);
        kn += l->vn;
    }
    int fresh = series_add(m, m->key, kn);
    if (fresh < 0) return L_FATAL;
    if (!fresh) return L_DROP;

    /* name{source="S",labels...} value[ timestamp]\n */
    char *o = m->line;
    memcpy(o, name, nn);
    o += nn;
    memcpy(o, "{source=\"", 9);
    o += 9;
    memcpy(o, m->src, m->srclen);
    o += m->srclen;
    *o++ = '"';
    for (int a = 0; a < nl; a++) {
        *o++ = ',';
        memcpy(o, labs[a].np, labs[a].nn);
        o += labs[a].nn;
        *o++ = '=';
        *o++ = '"';
        memcpy(o, labs[a].vp, labs[a].vn);
        o += labs[a].vn;
        *o++ = '"';
    }
    *o++ = '}';
    *o++ = ' ';
    memcpy(o, p + vs, ve - vs);
    o += ve - vs;
    if (te > ts) {
        *o++ = ' ';
        memcpy(o, p + ts, te - ts);
        o += te - ts;
    }
    *o++ = '\n';
    if (!f->samples && !(f->samples = evbuffer_new())) return L_FATAL;
    return evbuffer_add(f->samples, m->line, (size_t)(o - m->line)) ? L_FATAL : L_KEPT;
}

/* One line without its '\n' (n + 1 <= EG_PROM_MAX_LINE). */
static int one_line(merge *m, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 && p[i] != '\t') return L_DROP;
    if (!eg_utf8_valid(p, n)) return L_DROP;
    size_t i = skip_blanks(p, 0, n);
    if (i == n) return L_KEPT;
    return p[i] == '#' ? comment_line(m, p, i, n) : sample_line(m, p, i, n);
}

/* Every line of body b[0..len); -1 when the merge is over. */
static int one_body(merge *m, const char *b, size_t len) {
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(b + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (b + i)) : len - i;
        int rc;
        if (!nl) rc = skip_blanks(b, i, len) == len ? L_KEPT : L_DROP; /* cut short */
        else if (n + 1 > EG_PROM_MAX_LINE) rc = L_DROP;
        else rc = one_line(m, b + i, n);
        if (rc == L_FATAL) return -1;
        if (rc == L_DROP) m->dropped++;
        i += n + 1;
    }
    return 0;
}

/* 1 when name is a usable source name (see prom_merge.h); its escaped form
 * into m->src. */
static int source_name(merge *m, const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (!n || n > EG_PROM_MAX_NAME || !eg_utf8_valid(name, n)) return 0;
    m->srclen = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 && c != '\t' && c != '\n') return 0;
        if (c == '\\' || c == '"' || c == '\n') m->src[m->srclen++] = '\\';
        m->src[m->srclen++] = c == '\n' ? 'n' : (char)c;
    }
    return 1;
}

static void merge_free(merge *m) {
    for (int i = 0; i < m->nfams; i++) {
        free(m->fams[i].name);
        free(m->fams[i].help);
        if (m->fams[i].samples) evbuffer_free(m->fams[i].samples);
    }
    for (size_t i = 0; i < m->setcap; i++) free(m->set[i].key);
    free(m->set);
    free(m->fams);
    free(m->slots);
    free(m->order);
    free(m->line);
    free(m->key);
}

/* The merged text into res: each shown family's HELP, TYPE and samples. */
static int render(merge *m, struct evbuffer *res) {
    for (int i = 0; i < m->norder; i++) {
        fam *f = &m->fams[m->order[i]];
        if (f->help && evbuffer_add_printf(res, "# HELP %s %.*s\n", f->name, (int)f->hlen, f->help) < 0) return -1;
        if (f->type != T_NONE && evbuffer_add_printf(res, "# TYPE %s %s\n", f->name, type_names[f->type]) < 0)
            return -1;
        if (f->samples && evbuffer_add_buffer(res, f->samples)) return -1;
    }
    return 0;
}

int eg_prom_merge(const char *const *names, const char *const *bodies, const size_t *lens, int n, struct evbuffer *out,
                  size_t *dropped) {
    if (n < 0 || n > EG_PROM_MAX_INPUTS || (n && (!names || !bodies || !lens)) || !out) return -1;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (lens[i] > EG_PROM_MAX_INPUT - total || (lens[i] && !bodies[i]) || !names[i]) return -1;
        total += lens[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) return -1;
    }
    merge m = {0};
    m.slots = calloc(NSLOTS, sizeof *m.slots);
    m.line = malloc(SCRATCH);
    m.key = malloc(SCRATCH);
    struct evbuffer *res = evbuffer_new();
    int rc = m.slots && m.line && m.key && res ? 0 : -1;
    for (int i = 0; i < n && !rc; i++) {
        m.body = i;
        if (!source_name(&m, names[i])) rc = -1;
        else rc = one_body(&m, bodies[i], lens[i]);
    }
    if (!rc) rc = render(&m, res);
    if (!rc) rc = evbuffer_add_buffer(out, res) ? -1 : 0;
    if (!rc && dropped) *dropped = m.dropped;
    if (res) evbuffer_free(res);
    merge_free(&m);
    return rc;
}
