/* override.c — operator overrides with expiry (see override.h).
 *
 * The table is a small array in the order overrides were set (a replaced
 * one keeps its place); matching is a linear scan, since an incident has a
 * handful of overrides and they are looked up on failures only. The form
 * parser percent-decodes each value into a bounded buffer and refuses
 * anything it does not know, naming the field. */
#include "override.h"

#include "json.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decodes the percent-encoded form value in[0..n) ('+' is a space) into
 * out (outlen bytes with the NUL). Returns 0, or -1 when it does not fit,
 * is malformed or holds a NUL or control byte. */
static int form_decode(const char *in, size_t n, char *out, size_t outlen) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)in[i];
        if (c == '+') c = ' ';
        else if (c == '%') {
            if (i + 2 >= n || !isxdigit((unsigned char)in[i + 1]) || !isxdigit((unsigned char)in[i + 2])) return -1;
            char hex[3] = {in[i + 1], in[i + 2], 0};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f || k + 1 >= outlen) return -1;
        out[k++] = (char)c;
    }
    out[k] = '\0';
    return 0;
}

static const char *const fields[] = {"name", "class", "code", "topic", "action", "ttl", "reason", "by", NULL};

/* 1 when s is a name: 1 to 64 of [A-Za-z0-9._-]. */
static int good_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return 0;
    return 1;
}

int eg_override_parse(const char *body, size_t len, int64_t now_ms, int64_t max_ttl_ms, eg_override *o, char *err,
                      size_t errlen) {
    char val[8][256];
    int seen[8] = {0};
    memset(o, 0, sizeof *o);
    const char *p = body, *end = body + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (e > p) {
            size_t kl = (size_t)((eq ? eq : e) - p);
            int f = -1;
            for (int i = 0; fields[i]; i++)
                if (strlen(fields[i]) == kl && !strncmp(fields[i], p, kl)) f = i;
            if (f < 0) {
                snprintf(err, errlen, "unknown field '%.*s'", (int)(kl < 40 ? kl : 40), p);
                return -1;
            }
            if (seen[f]) {
                snprintf(err, errlen, "%s given twice", fields[f]);
                return -1;
            }
            seen[f] = 1;
            const char *v = eq ? eq + 1 : e;
            if (form_decode(v, (size_t)(e - v), val[f], sizeof val[f]) != 0) {
                snprintf(err, errlen, "%s: malformed, or longer than %zu bytes", fields[f], sizeof val[f] - 1);
                return -1;
            }
        }
        p = amp ? amp + 1 : end;
    }
    if (!seen[0] || !good_name(val[0])) {
        snprintf(err, errlen, "name: required, 1 to 64 of letters, digits, '.', '_', '-'");
        return -1;
    }
    eg_strlcpy(o->name, val[0], sizeof o->name);
    int nmatch = seen[1] + seen[2] + seen[3];
    if (nmatch != 1) {
        snprintf(err, errlen, "give exactly one of class, code, topic (got %d)", nmatch);
        return -1;
    }
    o->match = seen[1] ? EG_OV_CLASS : seen[2] ? EG_OV_CODE : EG_OV_TOPIC;
    const char *mv = val[seen[1] ? 1 : seen[2] ? 2 : 3];
    if (!*mv) {
        snprintf(err, errlen, "%s: empty", fields[seen[1] ? 1 : seen[2] ? 2 : 3]);
        return -1;
    }
    eg_strlcpy(o->value, mv, sizeof o->value);
    o->partition = -1;
    if (o->match == EG_OV_TOPIC) {
        char *colon = strrchr(o->value, ':');
        if (colon) {
            long part;
            if (colon == o->value || eg_parse_count(colon + 1, &part) != 0 || part > INT32_MAX) {
                snprintf(err, errlen, "topic: expected TOPIC or TOPIC:PARTITION, got '%s'", o->value);
                return -1;
            }
            *colon = '\0';
            o->partition = (int32_t)part;
        }
    }
    int a = seen[4] ? eg_action_parse(val[4]) : -1;
    if (a < 0 || a == EG_ACT_LADDER) {
        snprintf(err, errlen, "action: %s%s%s (want hold, dlq, quarantine, ignore, retry, stop)",
                 seen[4] ? "unknown action '" : "required", seen[4] ? val[4] : "", seen[4] ? "'" : "");
        return -1;
    }
    o->action = a;
    int64_t ttl;
    if (!seen[5] || eg_parse_duration_ms(val[5], &ttl) != 0 || ttl <= 0) {
        snprintf(err, errlen, "ttl: required, a duration such as 30m or 1h%s%s", seen[5] ? ", got " : "",
                 seen[5] ? val[5] : "");
        return -1;
    }
    if (ttl > max_ttl_ms) {
        snprintf(err, errlen, "ttl: %s is above the maximum (%lld s)", val[5], (long long)(max_ttl_ms / 1000));
        return -1;
    }
    if (!seen[6] || !val[6][0]) {
        snprintf(err, errlen, "reason: required (why the override is set)");
        return -1;
    }
    eg_strlcpy(o->reason, val[6], sizeof o->reason);
    eg_strlcpy(o->by, seen[7] && val[7][0] ? val[7] : "unknown", sizeof o->by);
    o->set_at_ms = now_ms;
    o->expires_at_ms = now_ms + ttl;
    return 0;
}

int eg_overrides_set(eg_overrides *t, const eg_override *o) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, o->name)) {
            t->v[i] = *o;
            return 1;
        }
    if (t->n >= EG_OVERRIDE_MAX) return -1;
    t->v = eg_xrealloc(t->v, (size_t)(t->n + 1) * sizeof *t->v);
    t->v[t->n++] = *o;
    return 0;
}

/* Removes entry i, keeping the order of the others. */
static void remove_at(eg_overrides *t, int i) {
    memmove(&t->v[i], &t->v[i + 1], (size_t)(t->n - i - 1) * sizeof *t->v);
    t->n--;
}

int eg_overrides_clear(eg_overrides *t, const char *name, eg_override *out) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, name)) {
            if (out) *out = t->v[i];
            remove_at(t, i);
            return 0;
        }
    return -1;
}

int eg_overrides_expire(eg_overrides *t, int64_t now_ms, void (*expired)(void *arg, const eg_override *o), void *arg) {
    int n = 0;
    for (int i = 0; i < t->n;)
        if (t->v[i].expires_at_ms <= now_ms) {
            if (expired) expired(arg, &t->v[i]);
            remove_at(t, i);
            n++;
        } else {
            i++;
        }
    return n;
}

const eg_override *eg_overrides_match(const eg_overrides *t, const char *topic, int32_t partition, const char *klass,
                                      const char *code, int64_t now_ms) {
    for (int i = 0; i < t->n; i++) {
        const eg_override *o = &t->v[i];
        if (o->expires_at_ms <= now_ms) continue;
        if ((o->match == EG_OV_CLASS && !strcmp(o->value, klass)) ||
            (o->match == EG_OV_CODE && !strcmp(o->value, code)) ||
            (o->match == EG_OV_TOPIC && !strcmp(o->value, topic) && (o->partition < 0 || o->partition == partition)))
            return o;
    }
    return NULL;
}

void eg_override_json(const eg_override *o, struct evbuffer *out) {
    static const char *const kinds[] = {"", "class", "code", "topic"};
    char set[40], exp[40];
    eg_rfc3339(o->set_at_ms, set, sizeof set);
    eg_rfc3339(o->expires_at_ms, exp, sizeof exp);
    evbuffer_add_printf(out, "{\"name\":");
    eg_json_str(out, o->name);
    evbuffer_add_printf(out, ",\"match\":\"%s\",\"value\":", kinds[o->match]);
    eg_json_str(out, o->value);
    if (o->partition >= 0) evbuffer_add_printf(out, ",\"partition\":%d", (int)o->partition);
    evbuffer_add_printf(out, ",\"action\":\"%s\",\"reason\":", eg_action_name((eg_action)o->action));
    eg_json_str(out, o->reason);
    evbuffer_add_printf(out, ",\"by\":");
    eg_json_str(out, o->by);
    evbuffer_add_printf(out, ",\"set_at\":\"%s\",\"expires_at\":\"%s\"}", set, exp);
}

void eg_overrides_free(eg_overrides *t) {
    free(t->v);
    t->v = NULL;
    t->n = 0;
}
