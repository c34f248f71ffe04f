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

enum { F_NAME, F_CLASS, F_CODE, F_TOPIC, F_RUNG, F_PAUSE, F_ACTION, F_DELAY, F_TTL, F_REASON, F_BY, F__N };
static const char *const fields[F__N] = {"name",   "class", "code", "topic",  "rung", "pause",
                                         "action", "delay", "ttl",  "reason", "by"};

typedef struct form {
    char val[F__N][256];
    int seen[F__N];
} form;

/* 1 when s is a name: 1 to 64 of [A-Za-z0-9._-]. */
static int good_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return 0;
    return 1;
}

/* Splits the form body into f, refusing a field it does not know, one given
 * twice, or a value that does not decode. Returns 0, or -1 with err. */
static int split_form(const char *body, size_t len, form *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    const char *p = body, *end = body + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (e > p) {
            size_t kl = (size_t)((eq ? eq : e) - p);
            int k = -1;
            for (int i = 0; i < F__N; i++)
                if (strlen(fields[i]) == kl && !strncmp(fields[i], p, kl)) k = i;
            if (k < 0) {
                snprintf(err, errlen, "unknown field '%.*s'", (int)(kl < 40 ? kl : 40), p);
                return -1;
            }
            if (f->seen[k]) {
                snprintf(err, errlen, "%s given twice", fields[k]);
                return -1;
            }
            f->seen[k] = 1;
            const char *v = eq ? eq + 1 : e;
            if (form_decode(v, (size_t)(e - v), f->val[k], sizeof f->val[k]) != 0) {
                snprintf(err, errlen, "%s: malformed, or longer than %zu bytes", fields[k], sizeof f->val[k] - 1);
                return -1;
            }
        }
        p = amp ? amp + 1 : end;
    }
    return 0;
}

int eg_override_form_field(const char *body, size_t len, const char *field, char *out, size_t outlen) {
    size_t fl = strlen(field);
    for (const char *p = body, *end = body + len; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if ((size_t)(e - p) > fl && p[fl] == '=' && !strncmp(p, field, fl))
            return form_decode(p + fl + 1, (size_t)(e - p - fl - 1), out, outlen);
        p = amp ? amp + 1 : end;
    }
    return -1;
}

/* Reads "TOPIC" or "TOPIC:PARTITION" of field k into o->value and
 * o->partition. Returns 0, or -1 with err. */
static int topic_part(const form *f, int k, eg_override *o, char *err, size_t errlen) {
    eg_strlcpy(o->value, f->val[k], sizeof o->value);
    o->partition = -1;
    char *colon = strrchr(o->value, ':');
    if (!colon) return 0;
    long part;
    if (colon == o->value || eg_parse_count(colon + 1, &part) != 0 || part > INT32_MAX) {
        snprintf(err, errlen, "%s: expected TOPIC or TOPIC:PARTITION, got '%s'", fields[k], o->value);
        return -1;
    }
    *colon = '\0';
    o->partition = (int32_t)part;
    return 0;
}

/* The matcher of f into o: exactly one of class, code, topic (each with an
 * action), rung (with a delay) or pause. Returns 0, or -1 with err. */
static int parse_match(const form *f, eg_override *o, char *err, size_t errlen) {
    static const int kinds[] = {F_CLASS, F_CODE, F_TOPIC, F_RUNG, F_PAUSE};
    static const eg_override_match as[] = {EG_OV_CLASS, EG_OV_CODE, EG_OV_TOPIC, EG_OV_RUNG, EG_OV_PAUSE};
    int k = -1, nmatch = 0;
    for (int i = 0; i < 5; i++)
        if (f->seen[kinds[i]]) {
            nmatch++;
            k = i;
        }
    if (nmatch != 1) {
        snprintf(err, errlen, "give exactly one of class, code, topic, rung, pause (got %d)", nmatch);
        return -1;
    }
    int fk = kinds[k];
    o->match = as[k];
    if (!f->val[fk][0]) {
        snprintf(err, errlen, "%s: empty", fields[fk]);
        return -1;
    }
    if (fk == F_TOPIC || fk == F_PAUSE) {
        if (topic_part(f, fk, o, err, errlen) != 0) return -1;
    } else {
        eg_strlcpy(o->value, f->val[fk], sizeof o->value);
        o->partition = -1;
    }
    if (fk == F_RUNG) {
        if (f->seen[F_ACTION]) {
            snprintf(err, errlen, "action: a rung override takes a delay, not an action");
            return -1;
        }
        if (!f->seen[F_DELAY] || eg_parse_duration_ms(f->val[F_DELAY], &o->delay_ms) != 0 || o->delay_ms < 0) {
            snprintf(err, errlen, "delay: required with rung, a duration such as 15m%s%s",
                     f->seen[F_DELAY] ? ", got " : "", f->seen[F_DELAY] ? f->val[F_DELAY] : "");
            return -1;
        }
        return 0;
    }
    if (f->seen[F_DELAY]) {
        snprintf(err, errlen, "delay: only a rung override takes a delay");
        return -1;
    }
    if (fk == F_PAUSE) {
        if (f->seen[F_ACTION]) {
            snprintf(err, errlen, "action: a pause override takes no action");
            return -1;
        }
        return 0;
    }
    int a = f->seen[F_ACTION] ? eg_action_parse(f->val[F_ACTION]) : -1;
    if (a < 0 || a == EG_ACT_LADDER || a == EG_ACT_REPLAY || a == EG_ACT_REPUBLISH) {
        snprintf(err, errlen, "action: %s%s%s (want hold, dlq, quarantine, ignore, retry, stop)",
                 f->seen[F_ACTION] ? "unknown action '" : "required", f->seen[F_ACTION] ? f->val[F_ACTION] : "",
                 f->seen[F_ACTION] ? "'" : "");
        return -1;
    }
    o->action = a;
    return 0;
}

int eg_override_parse(const char *body, size_t len, int64_t now_ms, int64_t max_ttl_ms, eg_override *o, char *err,
                      size_t errlen) {
    form f;
    memset(o, 0, sizeof *o);
    if (split_form(body, len, &f, err, errlen) != 0) return -1;
    if (!f.seen[F_NAME] || !good_name(f.val[F_NAME])) {
        snprintf(err, errlen, "name: required, 1 to 64 of letters, digits, '.', '_', '-'");
        return -1;
    }
    eg_strlcpy(o->name, f.val[F_NAME], sizeof o->name);
    if (parse_match(&f, o, err, errlen) != 0) return -1;
    int64_t ttl;
    if (!f.seen[F_TTL] || eg_parse_duration_ms(f.val[F_TTL], &ttl) != 0 || ttl <= 0) {
        snprintf(err, errlen, "ttl: required, a duration such as 30m or 1h%s%s", f.seen[F_TTL] ? ", got " : "",
                 f.seen[F_TTL] ? f.val[F_TTL] : "");
        return -1;
    }
    if (ttl > max_ttl_ms) {
        snprintf(err, errlen, "ttl: %s is above the maximum (%lld s)", f.val[F_TTL], (long long)(max_ttl_ms / 1000));
        return -1;
    }
    if (o->match == EG_OV_RUNG && o->delay_ms > max_ttl_ms) {
        snprintf(err, errlen, "delay: %s is above the maximum (%lld s, the longest TTL)", f.val[F_DELAY],
                 (long long)(max_ttl_ms / 1000));
        return -1;
    }
    if (!f.seen[F_REASON] || !f.val[F_REASON][0]) {
        snprintf(err, errlen, "reason: required (why the override is set)");
        return -1;
    }
    eg_strlcpy(o->reason, f.val[F_REASON], sizeof o->reason);
    eg_strlcpy(o->by, f.seen[F_BY] && f.val[F_BY][0] ? f.val[F_BY] : "unknown", sizeof o->by);
    o->set_at_ms = now_ms;
    o->expires_at_ms = eg_override_add_ms(now_ms, ttl);
    return 0;
}

int64_t eg_override_add_ms(int64_t a, int64_t b) {
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

int eg_override_check(const eg_override *o, int64_t cleared_at_ms, int64_t now_ms, int64_t max_ttl_ms,
                      const char **reason, char *err, size_t errlen) {
    int64_t horizon = eg_override_add_ms(now_ms, EG_OVERRIDE_SKEW_MS);
    if (o->set_at_ms > horizon || cleared_at_ms > horizon) {
        *reason = "future";
        snprintf(err, errlen, "%s: more than %lld s in the future", o->set_at_ms > horizon ? "at" : "cleared_at",
                 (long long)(EG_OVERRIDE_SKEW_MS / 1000));
        return -1;
    }
    /* both are parsed times (years 0000..9999), so the difference cannot overflow */
    if (o->expires_at_ms <= o->set_at_ms || o->expires_at_ms - o->set_at_ms > max_ttl_ms) {
        *reason = "ttl_cap";
        snprintf(err, errlen, "expires_at: its TTL is not between 0 and the maximum (%lld s)",
                 (long long)(max_ttl_ms / 1000));
        return -1;
    }
    if (o->match == EG_OV_RUNG && (o->delay_ms < 0 || o->delay_ms > max_ttl_ms)) {
        *reason = "delay_cap";
        snprintf(err, errlen, "spec: a rung delay of %lld ms is above the maximum (%lld s)", (long long)o->delay_ms,
                 (long long)(max_ttl_ms / 1000));
        return -1;
    }
    return 0;
}

/* Appends "&key=value" (the value percent-encoded where a form needs it)
 * to out. */
static void spec_add(struct evbuffer *out, const char *key, const char *value) {
    evbuffer_add_printf(out, "%s%s=", evbuffer_get_length(out) ? "&" : "", key);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (isalnum(*p) || *p == '.' || *p == '_' || *p == '-') evbuffer_add(out, p, 1);
        else evbuffer_add_printf(out, "%%%02X", *p);
}

/* o's matcher as a form: "class=transient&action=hold", "rung=5m&delay=900000ms", "pause=t%3A2". */
static void spec_form(const eg_override *o, struct evbuffer *out) {
    static const char *const kinds[] = {"", "class", "code", "topic", "rung", "pause"};
    char v[300];
    if (o->partition >= 0) snprintf(v, sizeof v, "%s:%d", o->value, (int)o->partition);
    else eg_strlcpy(v, o->value, sizeof v);
    spec_add(out, kinds[o->match], v);
    if (o->match == EG_OV_RUNG) {
        char d[40];
        snprintf(d, sizeof d, "%lldms", (long long)o->delay_ms);
        spec_add(out, "delay", d);
    } else if (o->match != EG_OV_PAUSE) {
        spec_add(out, "action", eg_action_name((eg_action)o->action));
    }
}

void eg_override_audit_json(const eg_override *o, const char *group, int64_t cleared_at_ms, struct evbuffer *out) {
    char at[40], exp[40], clr[40];
    struct evbuffer *spec = evbuffer_new();
    spec_form(o, spec);
    evbuffer_add(spec, "", 1);
    eg_rfc3339(o->set_at_ms, at, sizeof at);
    eg_rfc3339(o->expires_at_ms, exp, sizeof exp);
    evbuffer_add_printf(out, "{\"group\":");
    eg_json_str(out, group);
    evbuffer_add_printf(out, ",\"name\":");
    eg_json_str(out, o->name);
    evbuffer_add_printf(out, ",\"spec\":");
    eg_json_str(out, (const char *)evbuffer_pullup(spec, -1));
    evbuffer_add_printf(out, ",\"reason\":");
    eg_json_str(out, o->reason);
    evbuffer_add_printf(out, ",\"by\":");
    eg_json_str(out, o->by);
    evbuffer_add_printf(out, ",\"at\":\"%s\",\"expires_at\":\"%s\",\"cleared_at\":", at, exp);
    if (cleared_at_ms > 0) {
        eg_rfc3339(cleared_at_ms, clr, sizeof clr);
        evbuffer_add_printf(out, "\"%s\"}", clr);
    } else {
        evbuffer_add_printf(out, "null}");
    }
    evbuffer_free(spec);
}

int eg_override_from_audit(const char *json, size_t len, eg_override *o, char *group, size_t grouplen,
                           int64_t *cleared_at_ms, char *err, size_t errlen) {
    static const char *const need[] = {"group", "name", "spec", "reason", "by", "at", "expires_at"};
    char v[7][1024], clr[64]; /* a spec holds a value of up to 255 bytes, each %XX-encoded at worst */
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 7; i++)
        if (eg_json_get_str(json, len, need[i], v[i], sizeof v[i]) != 0) {
            snprintf(err, errlen, "no string \"%s\"", need[i]);
            return -1;
        }
    /* what the writer never writes is refused, so an accepted record reads
     * back as itself: text that is not UTF-8, a field longer than its place */
    const size_t room[7] = {grouplen, sizeof o->name, sizeof v[2], sizeof o->reason, sizeof o->by, 64, 64};
    for (int i = 0; i < 7; i++)
        if (!eg_utf8_valid(v[i], strlen(v[i])) || strlen(v[i]) >= room[i]) {
            snprintf(err, errlen, "%s: %s", need[i], strlen(v[i]) >= room[i] ? "too long" : "not UTF-8");
            return -1;
        }
    form f;
    if (!good_name(v[1])) {
        snprintf(err, errlen, "name: not a name");
        return -1;
    }
    if (split_form(v[2], strlen(v[2]), &f, err, errlen) != 0 || parse_match(&f, o, err, errlen) != 0) return -1;
    if (f.seen[F_NAME] || f.seen[F_TTL] || f.seen[F_REASON] || f.seen[F_BY]) {
        snprintf(err, errlen, "spec: holds more than the matcher");
        return -1;
    }
    if (eg_parse_time_ms(v[5], &o->set_at_ms) != 0 || eg_parse_time_ms(v[6], &o->expires_at_ms) != 0 ||
        o->set_at_ms < 0 || o->expires_at_ms < 0) {
        snprintf(err, errlen, "at, expires_at: not RFC 3339 times after 1970");
        return -1;
    }
    *cleared_at_ms = 0;
    if (eg_json_get_str(json, len, "cleared_at", clr, sizeof clr) == 0 &&
        (eg_parse_time_ms(clr, cleared_at_ms) != 0 || *cleared_at_ms < 0)) {
        snprintf(err, errlen, "cleared_at: not an RFC 3339 time after 1970");
        return -1;
    }
    eg_strlcpy(group, v[0], grouplen);
    eg_strlcpy(o->name, v[1], sizeof o->name);
    eg_strlcpy(o->reason, v[3], sizeof o->reason);
    eg_strlcpy(o->by, v[4], sizeof o->by);
    return 0;
}

int eg_override_same(const eg_override *a, const eg_override *b) {
    return !strcmp(a->name, b->name) && a->match == b->match && !strcmp(a->value, b->value) &&
           a->partition == b->partition && a->action == b->action && a->delay_ms == b->delay_ms &&
           !strcmp(a->reason, b->reason) && !strcmp(a->by, b->by) && a->set_at_ms == b->set_at_ms &&
           a->expires_at_ms == b->expires_at_ms && a->trusted == b->trusted;
}

/* Removes entry i, keeping the order of the others. */
static void remove_at(eg_overrides *t, int i) {
    memmove(&t->v[i], &t->v[i + 1], (size_t)(t->n - i - 1) * sizeof *t->v);
    t->n--;
}

int eg_overrides_set(eg_overrides *t, const eg_override *o, eg_override *evicted) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, o->name)) {
            t->v[i] = *o;
            return 1;
        }
    int rc = 0;
    if (t->n >= EG_OVERRIDE_MAX) {
        int victim = -1;
        for (int i = 0; i < t->n; i++)
            if (!t->v[i].trusted && (victim < 0 || t->v[i].set_at_ms < t->v[victim].set_at_ms)) victim = i;
        if (victim < 0) return -1;
        if (evicted) *evicted = t->v[victim];
        remove_at(t, victim);
        rc = 2;
    }
    t->v = eg_xrealloc(t->v, (size_t)(t->n + 1) * sizeof *t->v);
    t->v[t->n++] = *o;
    return rc;
}

int eg_overrides_trusted(const eg_overrides *t) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += t->v[i].trusted != 0;
    return n;
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
        if (o->expires_at_ms <= now_ms || o->match > EG_OV_TOPIC) continue;
        if ((o->match == EG_OV_CLASS && !strcmp(o->value, klass)) ||
            (o->match == EG_OV_CODE && !strcmp(o->value, code)) ||
            (o->match == EG_OV_TOPIC && !strcmp(o->value, topic) && (o->partition < 0 || o->partition == partition)))
            return o;
    }
    return NULL;
}

const eg_override *eg_overrides_rung(const eg_overrides *t, const char *rung, int64_t now_ms) {
    for (int i = 0; i < t->n; i++)
        if (t->v[i].match == EG_OV_RUNG && t->v[i].expires_at_ms > now_ms && !strcmp(t->v[i].value, rung))
            return &t->v[i];
    return NULL;
}

const eg_override *eg_overrides_paused(const eg_overrides *t, const char *topic, int32_t partition, int64_t now_ms) {
    for (int i = 0; i < t->n; i++) {
        const eg_override *o = &t->v[i];
        if (o->match == EG_OV_PAUSE && o->expires_at_ms > now_ms && !strcmp(o->value, topic) &&
            (o->partition < 0 || o->partition == partition))
            return o;
    }
    return NULL;
}

void eg_override_json(const eg_override *o, struct evbuffer *out) {
    static const char *const kinds[] = {"", "class", "code", "topic", "rung", "pause"};
    char set[40], exp[40];
    eg_rfc3339(o->set_at_ms, set, sizeof set);
    eg_rfc3339(o->expires_at_ms, exp, sizeof exp);
    evbuffer_add_printf(out, "{\"name\":");
    eg_json_str(out, o->name);
    evbuffer_add_printf(out, ",\"match\":\"%s\",\"value\":", kinds[o->match]);
    eg_json_str(out, o->value);
    if (o->partition >= 0) evbuffer_add_printf(out, ",\"partition\":%d", (int)o->partition);
    if (o->match == EG_OV_RUNG) evbuffer_add_printf(out, ",\"delay_ms\":%lld", (long long)o->delay_ms);
    else if (o->match != EG_OV_PAUSE)
        evbuffer_add_printf(out, ",\"action\":\"%s\"", eg_action_name((eg_action)o->action));
    evbuffer_add_printf(out, ",\"reason\":");
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
