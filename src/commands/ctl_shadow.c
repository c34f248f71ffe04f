/* ctl_shadow.c — `errgate ctl shadow`'s view of a gateway's GET /shadow
 * answer: the JSON the admin endpoint writes (shadow.c, eg_shadow_json)
 * printed as a text table. A client of the admin endpoint: it reads only
 * the members it prints, and an answer that is not such a table is
 * refused, never half-printed as if it were one. */
#include "ctl_shadow.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* a record id in an agreement table (shadow.h, EG_SHADOW_ID_MAX, plus
 * room for what escaping undoes) */
#define EG_CTL_SHADOW_ID_MAX 320

/* Reads the JSON string literal at *p (which points at its opening quote)
 * into out (escapes undone; \u escapes become '?'); advances *p past it.
 * Returns 0, or -1 when *p is not a string. */
static int read_str(const char **p, char *out, size_t outlen) {
    const char *q = *p;
    size_t n = 0;
    if (*q != '"') return -1;
    for (q++; *q && *q != '"'; q++) {
        char c = *q;
        if (c == '\\' && q[1]) {
            q++;
            c = *q == 'n' ? '\n' : *q == 't' ? '\t' : *q == 'u' ? '?' : *q;
            if (*q == 'u')
                for (int k = 0; k < 4 && q[1]; k++) q++;
        }
        if (n + 1 < outlen) out[n++] = c;
    }
    out[n] = '\0';
    if (*q != '"') return -1;
    *p = q + 1;
    return 0;
}

/* Reads the string member `key` that follows at *p ("key":"..."). */
static int member_str(const char **p, const char *key, char *out, size_t outlen) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *q = strstr(*p, pat);
    if (!q) return -1;
    q += strlen(pat);
    if (read_str(&q, out, outlen) != 0) return -1;
    *p = q;
    return 0;
}

static unsigned long long member_num(const char *json, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *q = strstr(json, pat);
    return q ? strtoull(q + strlen(pat), NULL, 10) : 0;
}

int eg_shadow_print(const char *json, FILE *out) {
    char cand[256] = "", err[512] = "";
    const char *t = strstr(json, "\"table\":[");
    if (!t || json[0] != '{') return -1;
    const char *p = json;
    if (member_str(&p, "candidate", cand, sizeof cand) != 0) eg_strlcpy(cand, "(none loaded)", sizeof cand);
    p = json;
    member_str(&p, "last_error", err, sizeof err);
    fprintf(out, "candidate: %s\n", cand);
    if (err[0]) fprintf(out, "last reload refused: %s\n", err);
    fprintf(out, "decided %llu (errors %llu), skipped %llu, pending %llu\n", member_num(json, "decided"),
            member_num(json, "errors"), member_num(json, "skipped"), member_num(json, "pending"));
    fprintf(out, "%-24s %-11s %-11s %9s  %s\n", "CLASS", "LIVE", "SHADOW", "COUNT", "EXAMPLES (disagreements)");
    p = t + 8;
    int rows = 0;
    char klass[128], live[32], sh[32], id[EG_CTL_SHADOW_ID_MAX];
    while ((p = strstr(p, "{\"class\":"))) {
        if (member_str(&p, "class", klass, sizeof klass) || member_str(&p, "live", live, sizeof live) ||
            member_str(&p, "shadow", sh, sizeof sh))
            return -1;
        unsigned long long count = member_num(p, "count");
        const char *e = strstr(p, "\"examples\":[");
        if (!e) return -1;
        e += 12;
        fprintf(out, "%-24s %-11s %-11s %9llu  %s", klass, live, sh, count, strcmp(live, sh) ? "" : "-");
        for (int k = 0; *e == '"' && read_str(&e, id, sizeof id) == 0; k++) {
            fprintf(out, "%s%s", k ? " " : "", id);
            if (*e == ',') e++;
        }
        fputc('\n', out);
        p = e;
        rows++;
    }
    if (!rows) fprintf(out, "(no failures decided by this candidate yet)\n");
    return 0;
}
