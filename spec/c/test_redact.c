/* test_redact.c — the C secret redactor: each kind of secret is scrubbed,
 * ordinary text is left alone, output is bounded, and redaction is
 * idempotent. */
#include "redact.h"
#include "tap.h"

#include <string.h>

static char out[256];

static const char *R(const char *s) {
    eg_redact(s, strlen(s), out, sizeof out);
    return out;
}

#define SAME(in, want) CHECK(strcmp(R(in), want) == 0, "%s -> %s (got %s)", in, want, out)

int main(void) {
    SAME("connection refused", "connection refused");
    SAME("password=hunter2 next", "password=[REDACTED] next");
    SAME("db PASSWORD: \"s3cr3t\" x", "db PASSWORD: \"[REDACTED]\" x");
    SAME("{\"token\":\"abc.def\",\"a\":1}", "{\"token\":\"[REDACTED]\",\"a\":1}");
    SAME("url?api_key=XYZ&x=1", "url?api_key=[REDACTED]&x=1");
    SAME("Authorization: Bearer abc123", "Authorization: Bearer [REDACTED]");
    SAME("authorization=Basic dXNlcjpwYXNz", "authorization=Basic [REDACTED]");
    SAME("sent bearer eyJabc then", "sent bearer [REDACTED] then");
    SAME("postgres://app:pw@db:5432/x", "postgres://[REDACTED]@db:5432/x");
    SAME("http://host/path@x", "http://host/path@x");
    SAME("http://user@host/", "http://user@host/");
    SAME("key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED] used");
    /* only word boundaries and ':' are examined: runs between are copied */
    SAME("xpassword=1 and apassword: 2", "xpassword=1 and apassword: 2");
    SAME("long prefix text then token=abc end", "long prefix text then token=[REDACTED] end");
    SAME("see https://u:p@h/x and then password=1", "see https://[REDACTED]@h/x and then password=[REDACTED]");
    SAME("during outage: Bearer abc", "during outage: Bearer [REDACTED]");
    SAME("AKIAshort", "AKIAshort");
    SAME("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature ok", "jwt [REDACTED] ok");
    SAME("eyJonly.one", "eyJonly.one");
    SAME("tokens are counted", "tokens are counted");
    SAME("mytoken=abc", "mytoken=abc");
    /* nested, escaped (JSON quoted inside a string, as a body quoted in an error message) and binary forms */
    SAME("{\"user\":{\"card\":{\"password\":\"hunter2\"}}}", "{\"user\":{\"card\":{\"password\":\"[REDACTED]\"}}}");
    SAME("body: {\\\"password\\\":\\\"hunter2\\\",\\\"a\\\":1}",
         "body: {\\\"password\\\":\\\"[REDACTED]\\\",\\\"a\\\":1}");
    SAME("{\\\"api_key\\\": \\\"k-123\\\"}", "{\\\"api_key\\\": \\\"[REDACTED]\\\"}");
    SAME("\"secret=s3\\\"x\"", "\"secret=[REDACTED]\\\"x\"");
    {
        const char b[] = "\xff\x01token=abc\x00password: hunter2\xfe";
        size_t bn = eg_redact(b, sizeof b - 1, out, sizeof out);
        CHECK(bn > 0 && !memmem(out, bn, "abc", 3) && !memmem(out, bn, "hunter2", 7),
              "secrets around binary bytes and a NUL are redacted");
    }
    CHECK(strcmp(R("password=[REDACTED] and Bearer [REDACTED]"), "password=[REDACTED] and Bearer [REDACTED]") == 0,
          "idempotent (got %s)", out);
    char small[8];
    size_t n = eg_redact("password=abcdef", 15, small, sizeof small);
    CHECK(n == 7 && strlen(small) == 7, "output is bounded and NUL-terminated");
    CHECK(eg_redact("x", 1, small, 1) == 0 && small[0] == '\0', "outlen 1 gives an empty string");
    const char bin[] = {'a', '\0', 'b'};
    n = eg_redact(bin, 3, out, sizeof out);
    CHECK(n == 3, "embedded NUL bytes are copied by length");
    return TAP_DONE();
}
