/* fuzz_json.c — json.c's string escaper, the one every JSON writer uses
 * (log lines, admin answers, DLQ state records, `policy test` cases), on
 * any bytes. Input: the bytes of one string. The escape is decoded back by
 * a decoder written here and checked against a reference UTF-8 reader
 * written here too (Unicode's table of well-formed byte sequences, not
 * json.c's arithmetic): the output is valid UTF-8 with no raw control
 * character; valid sequences come back unchanged, each ill-formed byte as
 * U+FFFD; under every output limit the output is exactly the escape of a
 * whole-character prefix of the input, and the fixed-buffer and evbuffer
 * writers agree with it. */
#include "fuzz.h"
#include "json.h"

#include <event2/buffer.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (n bytes left), from
 * the Unicode Standard's table 3-7, or 0. */
static size_t ref_seq(const uint8_t *s, size_t n) {
    static const struct {
        uint8_t lo0, hi0, lo1, hi1;
        size_t len;
    } rows[] = {{0x00, 0x7f, 0, 0, 1},       {0xc2, 0xdf, 0x80, 0xbf, 2}, {0xe0, 0xe0, 0xa0, 0xbf, 3},
                {0xe1, 0xec, 0x80, 0xbf, 3}, {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3},
                {0xf0, 0xf0, 0x90, 0xbf, 4}, {0xf1, 0xf3, 0x80, 0xbf, 4}, {0xf4, 0xf4, 0x80, 0x8f, 4}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (s[0] < rows[r].lo0 || s[0] > rows[r].hi0) continue;
        size_t len = rows[r].len;
        if (len > n) return 0;
        if (len > 1 && (s[1] < rows[r].lo1 || s[1] > rows[r].hi1)) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[k] < 0x80 || s[k] > 0xbf) return 0;
        return len;
    }
    return 0;
}

/* What decoding the escape of s[0..n) must give: s with each byte that
 * does not start a well-formed sequence replaced by U+FFFD (EF BF BD).
 * Returns its length (out holds at least 3 * n bytes). */
static size_t expected(const uint8_t *s, size_t n, uint8_t *out) {
    size_t o = 0;
    for (size_t i = 0, k; i < n; i += k) {
        k = ref_seq(s + i, n - i);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            k = 1;
        }
    }
    return o;
}

static int hexval(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* Decodes JSON string content e[0..n) into out (at least n bytes).
 * Returns the decoded length; aborts on anything a JSON parser would
 * refuse or on an escape json.c does not write. */
static size_t decode(const char *e, size_t n, uint8_t *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = (uint8_t)e[i];
        FZ_CHECK(c >= 0x20 && c != '"', "raw byte %02x at %zu in the escape", c, i);
        if (c != '\\') {
            out[o++] = c;
            i++;
            continue;
        }
        FZ_CHECK(i + 1 < n, "a lone backslash at the end");
        char t = e[i + 1];
        if (t == '"' || t == '\\') out[o++] = (uint8_t)t, i += 2;
        else if (t == 'n') out[o++] = '\n', i += 2;
        else if (t == 'r') out[o++] = '\r', i += 2;
        else if (t == 't') out[o++] = '\t', i += 2;
        else {
            FZ_CHECK(t == 'u' && i + 6 <= n, "unknown escape \\%c", t);
            int v = 0;
            for (int k = 2; k < 6; k++) {
                int h = hexval(e[i + (size_t)k]);
                FZ_CHECK(h >= 0, "bad hex digit in \\u");
                v = v * 16 + h;
            }
            if (v == 0xfffd) memcpy(out + o, "\xef\xbf\xbd", 3), o += 3;
            else {
                FZ_CHECK(v < 0x20 || v == 0x7f, "\\u%04x for a character that needs no escape", v);
                out[o++] = (uint8_t)v;
            }
            i += 6;
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    const char *s = (const char *)data;
    size_t cap = 6 * size + 8;
    char *esc = malloc(cap), *lim_out = malloc(cap);
    uint8_t *dec = malloc(cap), *want = malloc(3 * size + 1);

    size_t used, k = eg_json_escape(s, size, esc, cap, &used);
    FZ_CHECK(used == size && k <= 6 * size, "room enough: all consumed (%zu of %zu), at most 6 bytes each", used, size);
    FZ_CHECK(eg_utf8_valid(esc, k), "the escape is valid UTF-8");
    size_t wn = expected(data, size, want), dn = decode(esc, k, dec);
    FZ_CHECK(dn == wn && memcmp(dec, want, wn) == 0, "decodes to the input, ill-formed bytes as U+FFFD");
    int valid = 1;
    for (size_t i = 0, q; i < size && valid; i += q) valid = (q = ref_seq(data + i, size - i)) != 0;
    FZ_CHECK(eg_utf8_valid(s, size) == valid, "eg_utf8_valid agrees with the reference");

    /* every output limit: a prefix of whole characters, as long as fits */
    for (size_t lim = 0; lim <= k; lim += 1 + lim / 8) {
        size_t u, lk = eg_json_escape(s, size, lim_out, lim, &u);
        FZ_CHECK(lk <= lim && u <= size, "limit %zu: wrote %zu", lim, lk);
        size_t pk = eg_json_escape(s, u, esc, cap, NULL);
        FZ_CHECK(pk == lk && memcmp(esc, lim_out, lk) == 0, "limit %zu: the escape of the %zu bytes consumed", lim, u);
        if (u < size) {
            size_t q = ref_seq(data + u, size - u);
            size_t nk = eg_json_escape(s + u, q ? q : 1, esc, cap, NULL);
            FZ_CHECK(nk > lim - lk, "limit %zu: stopped at %zu though the next character (%zu bytes) fit", lim, u, nk);
        }
    }

    /* the writers */
    size_t len = 0;
    char *fixed = malloc(k + 3);
    FZ_CHECK(eg_json_put_str(fixed, k + 3, &len, s, size) == 0 && len == k + 2, "eg_json_put_str fits in k + 3");
    len = 0;
    FZ_CHECK(eg_json_put_str(fixed, k + 2, &len, s, size) == -1 && len == 0, "and not in k + 2");
    eg_json_escape(s, size, esc, cap, NULL);
    struct evbuffer *b = evbuffer_new();
    eg_json_strn(b, s, size);
    FZ_CHECK(evbuffer_get_length(b) == k + 2, "eg_json_strn: the same length");
    const char *flat = (const char *)evbuffer_pullup(b, -1);
    FZ_CHECK(flat[0] == '"' && flat[k + 1] == '"' && memcmp(flat + 1, esc, k) == 0, "eg_json_strn: the same bytes");
    evbuffer_free(b);
    free(fixed);
    free(esc);
    free(lim_out);
    free(dec);
    free(want);
    return 0;
}
