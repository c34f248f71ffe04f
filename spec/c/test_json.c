/* test_json.c — json.c, the one JSON string escaper: valid UTF-8 (2, 3 and
 * 4 bytes, the highest code points) passes through unchanged; quote,
 * backslash and control characters are escaped; every byte that does not
 * begin a well-formed sequence (stray continuation, cut sequence, overlong
 * form, surrogate, above U+10FFFF, 0xf5..0xff) becomes one \ufffd; a limit
 * on the output never cuts a UTF-8 sequence or an escape; the evbuffer and
 * fixed-buffer writers agree with the escaper. */
#include "json.h"
#include "tap.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

/* The escaped form of s[0..n) with room to spare, as a static string. */
static const char *esc(const char *s, size_t n) {
    static char out[4096];
    size_t used, k = eg_json_escape(s, n, out, sizeof out - 1, &used);
    out[k] = '\0';
    return used == n ? out : "(not all consumed)";
}

#define ESC(lit) esc(lit, sizeof lit - 1)

/* The evbuffer's contents as a NUL-terminated heap string. */
static char *drain(struct evbuffer *b) {
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    return s;
}

int main(void) {
    /* ---- text passes, specials are escaped ---- */
    CHECK(!strcmp(ESC("plain text 123"), "plain text 123"), "ASCII unchanged");
    CHECK(!strcmp(ESC("a\"b\\c"), "a\\\"b\\\\c"), "quote and backslash escaped: %s", ESC("a\"b\\c"));
    CHECK(!strcmp(ESC("l1\nl2\r\t"), "l1\\nl2\\r\\t"), "newline, return, tab as short escapes");
    CHECK(!strcmp(ESC("\x01\x1f\x7f"), "\\u0001\\u001f\\u007f"), "other controls and DEL as \\u00XX: %s",
          ESC("\x01\x1f\x7f"));
    CHECK(!strcmp(esc("a\0b", 3), "a\\u0000b"), "a NUL byte inside is escaped, not an end");
    CHECK(!strcmp(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
          "2-, 3- and 4-byte UTF-8 unchanged: %s", ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(!strcmp(ESC("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
                  "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
          "the edges of each length (U+0080, U+07FF, U+0800, U+FFFF, U+10000, U+10FFFF) unchanged");
    CHECK(!strcmp(ESC("\xed\x9f\xbf\xee\x80\x80"), "\xed\x9f\xbf\xee\x80\x80"),
          "U+D7FF and U+E000, either side of the surrogates, unchanged");

    /* ---- invalid UTF-8: one \ufffd per byte, the rest kept ---- */
    CHECK(!strcmp(ESC("a\x80z"), "a\\ufffdz"), "a stray continuation byte");
    CHECK(!strcmp(ESC("\xc3(x"), "\\ufffd(x"), "a lead byte without its continuation");
    CHECK(!strcmp(ESC("ok\xe2\x82"), "ok\\ufffd\\ufffd"), "a sequence cut by the end of the input");
    CHECK(!strcmp(ESC("\xc0\xaf"), "\\ufffd\\ufffd"), "overlong 2-byte '/'");
    CHECK(!strcmp(ESC("\xe0\x80\xaf"), "\\ufffd\\ufffd\\ufffd"), "overlong 3-byte '/'");
    CHECK(!strcmp(ESC("\xf0\x80\x80\xaf"), "\\ufffd\\ufffd\\ufffd\\ufffd"), "overlong 4-byte '/'");
    CHECK(!strcmp(ESC("\xed\xa0\x80\xed\xbf\xbf"), "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"),
          "UTF-16 surrogates (U+D800, U+DFFF) encoded in UTF-8");
    CHECK(!strcmp(ESC("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd"), "above U+10FFFF");
    CHECK(!strcmp(ESC("\xf5\xfe\xff"), "\\ufffd\\ufffd\\ufffd"), "bytes that never appear in UTF-8");
    CHECK(!strcmp(ESC("\xe9t\xe9"), "\\ufffdt\\ufffd"), "Latin-1 text is not taken for UTF-8");

    CHECK(eg_utf8_valid("", 0) && eg_utf8_valid("a\0\xc3\xa9", 4) && !eg_utf8_valid("\xc3", 1) &&
              !eg_utf8_valid("\xed\xa0\x80", 3) && !eg_utf8_valid("a\xff", 2),
          "eg_utf8_valid");
    CHECK(eg_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 4) == 4 &&
              eg_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 3) == 0 &&
              eg_utf8_seq((const unsigned char *)"A", 1) == 1,
          "eg_utf8_seq: length of the sequence, 0 when cut");

    /* ---- a limit on the output never cuts a character ---- */
    const char mixed[] = "\xc3\xa9\"\xe2\x82\xac\x01\xf0\x9f\x98\x80\x80z";
    const size_t mn = sizeof mixed - 1;
    const char *full = esc(mixed, mn);
    char whole[128];
    strcpy(whole, full);
    size_t wlen = strlen(whole);
    int cut_ok = 1, fill_ok = 1;
    for (size_t lim = 0; lim <= wlen; lim++) {
        char out[128];
        size_t used, k = eg_json_escape(mixed, mn, out, lim, &used);
        /* what was written is exactly the escape of the input consumed, and
         * the next character's escape would not have fit */
        const char *pre = esc(mixed, used);
        if (k > lim || k != strlen(pre) || memcmp(out, pre, k) != 0 || !eg_utf8_valid(out, k)) cut_ok = 0;
        if (used < mn) { /* the next character's escape must be what did not fit */
            size_t cl = eg_utf8_seq((const unsigned char *)mixed + used, mn - used);
            if (strlen(esc(mixed + used, cl ? cl : 1)) <= lim - k) fill_ok = 0;
        } else if (k != wlen) {
            fill_ok = 0;
        }
    }
    CHECK(cut_ok, "every output limit: a prefix of whole characters and escapes, valid UTF-8");
    CHECK(fill_ok, "every output limit: it stops only where the next character does not fit");
    char small[8];
    size_t used;
    CHECK(eg_json_escape("\xe2\x82\xac", 3, small, 2, &used) == 0 && used == 0, "a 3-byte character needs 3 bytes");
    CHECK(eg_json_escape("\x01\x01", 2, small, 7, &used) == 6 && used == 1, "an escape is never cut either");

    /* ---- the writers ---- */
    char buf[16];
    size_t len = 0;
    CHECK(eg_json_put_str(buf, sizeof buf, &len, "\xc3\xa9\n", 3) == 0 && len == 6 && !strcmp(buf, "\"\xc3\xa9\\n\""),
          "eg_json_put_str: quoted, NUL-terminated: %s", buf);
    size_t before = len;
    CHECK(eg_json_put_str(buf, sizeof buf, &len, "0123456789", 10) == -1 && len == before,
          "eg_json_put_str: -1 and the length unchanged when it does not fit");
    len = 0;
    CHECK(eg_json_put_str(buf, 13, &len, "0123456789", 10) == 0 && len == 12, "a string that fits exactly");

    struct evbuffer *b = evbuffer_new();
    size_t n = 3000;
    char *big = malloc(2 * n + n / 2 + 1), *want = malloc(2 * n + 6 * (n / 2) + 3);
    size_t bi = 0, wi = 0;
    want[wi++] = '"';
    for (size_t i = 0; i < n / 2; i++) {
        memcpy(big + bi, "\xc3\xa9\x01\xc3\xa9", 5), bi += 5;
        memcpy(want + wi, "\xc3\xa9\\u0001\xc3\xa9", 10), wi += 10;
    }
    want[wi++] = '"';
    want[wi] = '\0';
    eg_json_strn(b, big, bi);
    char *got = drain(b);
    CHECK(!strcmp(got, want), "eg_json_strn: a long string across its chunks, nothing cut at a seam");
    free(got);
    eg_json_str(b, "na\xc3\xafve \xe2\x9c\x93");
    got = drain(b);
    CHECK(!strcmp(got, "\"na\xc3\xafve \xe2\x9c\x93\""), "eg_json_str (the admin endpoint's): UTF-8 kept: %s", got);
    free(got);
    eg_json_str(b, NULL);
    eg_json_str(b, "\xff");
    got = drain(b);
    CHECK(!strcmp(got, "\"\"\"\\ufffd\""), "eg_json_str: NULL is \"\", invalid bytes replaced: %s", got);
    free(got);
    free(big);
    free(want);
    evbuffer_free(b);
    /* eg_json_take: the document as a string, embedded escapes and all; the buffer is freed (ASan/valgrind) */
    struct evbuffer *d = evbuffer_new();
    evbuffer_add(d, "{\"k\":", 5);
    eg_json_str(d, "a\nb");
    evbuffer_add(d, "}", 1);
    got = eg_json_take(d);
    CHECK(!strcmp(got, "{\"k\":\"a\\nb\"}"), "eg_json_take: %s", got);
    free(got);
    got = eg_json_take(evbuffer_new());
    CHECK(got && !strcmp(got, ""), "eg_json_take of an empty buffer is \"\"");
    free(got);
    return TAP_DONE();
}
