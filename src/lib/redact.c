/* redact.c — secret scrubbing (see redact.h).
 *
 * One left-to-right pass. At each position the recognisers are tried in a
 * fixed order; the first that matches emits its kept prefix plus the
 * marker and skips the secret; otherwise one byte is copied. Recognisers
 * look at word boundaries only, so ordinary words that merely contain
 * "token" (e.g. "tokens") are left alone unless followed by '=' or ':'.
 * Speed (every log string goes through here): only a word boundary whose
 * byte can start a recogniser, or a ':', is examined; the bytes between are
 * copied as one run. Word lists carry their lengths.
 * The secret words (try_key) and the schemes (try_scheme) are
 * lua/errgate/redact_words.lua, shared with the Lua redactor; make renders
 * them into redact_words.h (EG_REDACT_KEYS, EG_REDACT_SCHEMES, and
 * EG_REDACT_STARTS, their first letters, for the fast path). */
#include "redact.h"
#include "redact_words.h"

#include <ctype.h>
#include <string.h>

typedef struct out_buf {
    char *p;
    size_t len, cap; /* cap excludes the NUL */
} out_buf;

static void emit(out_buf *o, const char *s, size_t n) {
    if (o->len + n > o->cap) n = o->cap - o->len;
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static int is_word(unsigned char c) { return isalnum(c) || c == '_' || c == '-'; }

typedef struct word {
    const char *w;
    size_t n;
} word;
#define W(s) \
    { s, sizeof s - 1 }

/* Case-insensitive prefix test of word (w bytes) at s (n bytes available). */
static int starts_ci(const char *s, size_t n, const char *word, size_t w) {
    if (w > n) return 0;
    for (size_t i = 0; i < w; i++)
        if (tolower((unsigned char)s[i]) != word[i]) return 0;
    return 1;
}

/* End of a credential value starting at s: stops at whitespace, control
 * bytes (a NUL of a binary message), quotes (an escaped one too),
 * separators of query strings, JSON and lists. */
static size_t value_len(const char *s, size_t n) {
    size_t m = strlen(EG_REDACTED), i = 0;
    if (n >= m && memcmp(s, EG_REDACTED, m) == 0) return m; /* already redacted */
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c) || c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '&' || c == ',' || c == ';' ||
            c == '}' || c == ')' || c == ']' || c == '<' || c == '>' || (c == '\\' && i + 1 < n && s[i + 1] == '"'))
            break; /* \" ends a value quoted inside quoted JSON */
        i++;
    }
    return i;
}

/* "Bearer xyz" / "Basic xyz" at s: returns bytes consumed (0 if none). */
static size_t try_scheme(const char *s, size_t n, out_buf *o) {
    static const word schemes[] = {EG_REDACT_SCHEMES};
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        size_t w = schemes[k].n;
        if (!starts_ci(s, n, schemes[k].w, w) || w >= n || s[w] != ' ') continue;
        size_t i = w;
        while (i < n && s[i] == ' ') i++;
        size_t v = value_len(s + i, n - i);
        if (v == 0) return 0;
        emit(o, s, i);
        emit(o, EG_REDACTED, strlen(EG_REDACTED));
        return i + v;
    }
    return 0;
}

/* key[=:]value for a secret-looking key at a word start. */
static size_t try_key(const char *s, size_t n, out_buf *o) {
    static const word keys[] = {EG_REDACT_KEYS};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t w = keys[k].n;
        if (!starts_ci(s, n, keys[k].w, w)) continue;
        size_t i = w;
        /* allow a closing quote of a JSON key (escaped too: JSON quoted inside a
         * string, {\"password\":\"x\"}), then spaces, then = or : */
        if (i + 1 < n && s[i] == '\\' && s[i + 1] == '"') i++;
        if (i < n && (s[i] == '"' || s[i] == '\'')) i++;
        while (i < n && s[i] == ' ') i++;
        if (i >= n || (s[i] != '=' && s[i] != ':')) continue;
        i++;
        while (i < n && (s[i] == ' ' || s[i] == '"' || s[i] == '\'' || (s[i] == '\\' && i + 1 < n && s[i + 1] == '"')))
            i++;
        emit(o, s, i);
        size_t sch = try_scheme(s + i, n - i, o);
        if (sch) return i + sch;
        size_t v = value_len(s + i, n - i);
        if (v) emit(o, EG_REDACTED, strlen(EG_REDACTED));
        return i + v;
    }
    return 0;
}

/* scheme://user:pass@host: s points just after "://". */
static size_t try_userinfo(const char *s, size_t n, out_buf *o) {
    size_t i = 0, colon = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '@') break;
        if (c == '/' || c == '?' || c == '#' || isspace(c) || c == '"' || c == '\'') return 0;
        if (c == ':' && !colon) colon = i + 1;
        i++;
    }
    if (i >= n || !colon || i == 0) return 0;
    emit(o, EG_REDACTED, strlen(EG_REDACTED));
    return i; /* the '@' is copied by the caller */
}

static int is_b64url(unsigned char c) { return isalnum(c) || c == '-' || c == '_' || c == '='; }

/* A JWT: eyJ<b64>.<b64>.<b64>. */
static size_t try_jwt(const char *s, size_t n) {
    if (n < 3 || memcmp(s, "eyJ", 3) != 0) return 0;
    size_t i = 0;
    int dots = 0;
    while (i < n && (is_b64url((unsigned char)s[i]) || (s[i] == '.' && dots < 2))) {
        if (s[i] == '.') dots++;
        i++;
    }
    return dots == 2 && i >= 10 ? i : 0;
}

/* An AWS access key id: AKIA/ASIA + 16 upper-case letters or digits. */
static size_t try_aws(const char *s, size_t n) {
    if (n < 20 || (memcmp(s, "AKIA", 4) != 0 && memcmp(s, "ASIA", 4) != 0)) return 0;
    for (size_t i = 4; i < 20; i++)
        if (!isupper((unsigned char)s[i]) && !isdigit((unsigned char)s[i])) return 0;
    if (n > 20 && isalnum((unsigned char)s[20])) return 0;
    return 20;
}

/* 1 for the bytes a recogniser can start with: the first letters of the
 * keys and schemes (either case), 'e' (eyJ), 'A' (AKIA/ASIA), ':' (://). */
static int can_start(unsigned char c) {
    static const unsigned char word_starts[256] = {EG_REDACT_STARTS};
    return word_starts[tolower(c)] || c == 'e' || c == 'A' || c == ':';
}

size_t eg_redact(const char *in, size_t n, char *out, size_t outlen) {
    out_buf o = {out, 0, outlen ? outlen - 1 : 0};
    if (!outlen) return 0;
    size_t i = 0;
    while (i < n && o.len < o.cap) {
        /* recognisers start at a word boundary, except "://" */
        int boundary = i == 0 || !is_word((unsigned char)in[i - 1]);
        if (in[i] != ':' && !(boundary && can_start((unsigned char)in[i]))) {
            size_t j = i + 1;
            while (j < n && in[j] != ':' && (is_word((unsigned char)in[j - 1]) || !can_start((unsigned char)in[j])))
                j++;
            emit(&o, in + i, j - i);
            i = j;
            continue;
        }
        const char *s = in + i;
        size_t rest = n - i, used = 0;
        if (boundary) {
            if (!used) used = try_key(s, rest, &o);
            if (!used) used = try_scheme(s, rest, &o);
            if (!used && (used = try_jwt(s, rest)) != 0) emit(&o, EG_REDACTED, strlen(EG_REDACTED));
            if (!used && (used = try_aws(s, rest)) != 0) emit(&o, EG_REDACTED, strlen(EG_REDACTED));
        }
        if (!used && rest >= 3 && memcmp(s, "://", 3) == 0) {
            emit(&o, s, 3);
            used = 3 + try_userinfo(s + 3, rest - 3, &o);
        }
        if (!used) {
            emit(&o, s, 1);
            used = 1;
        }
        i += used;
    }
    out[o.len] = '\0';
    return o.len;
}
