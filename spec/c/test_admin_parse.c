/* test_admin_parse.c — the admin endpoint's request parser (eg_admin_parse)
 * on a table of well-formed, incomplete, oversized and hostile requests, and
 * errgate.id validation (eg_id_valid): the ids the gateway writes pass, any
 * other shape (CR/LF, spaces, overlong parts) is refused. */
#include "admin.h"
#include "record.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *s, eg_admin_req *rq) { return eg_admin_parse(s, strlen(s), rq); }

static void parser_table(void) {
    static const struct {
        const char *req;
        int want;
        const char *what;
    } cases[] = {
        {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1, "a plain GET"},
        {"GET /healthz HTTP/1.0\r\n\r\n", 1, "HTTP/1.0 without headers"},
        {"GET /healthz HTTP/1.1\r\nHost: x\r\n", 0, "no blank line yet: incomplete"},
        {"GET /healthz HTTP/1.1\r\nHost", 0, "a header cut short: incomplete"},
        {"GET /healthz HTTP/2.0\r\n\r\n", -505, "HTTP/2.0 is refused with 505"},
        {"GET /healthz FOO/1.1\r\n\r\n", -400, "a bad version is 400"},
        {"GET  HTTP/1.1\r\n\r\n", -400, "an empty target is 400"},
        {"G(T / HTTP/1.1\r\n\r\n", -400, "a bad method token is 400"},
        {"GET /a\x01 HTTP/1.1\r\n\r\n", -400, "a control byte in the target is 400"},
        {"GET / HTTP/1.1\r\n folded: x\r\n\r\n", -400, "obs-fold is 400"},
        {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", -400, "a field without a colon is 400"},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", -400, "a space in a field name is 400"},
        {"GET / HTTP/1.1\r\nA: b\nc\r\n\r\n", -400, "a bare LF inside a field is 400"},
        {"POST /reload HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", -400, "a non-numeric Content-Length is 400"},
        {"POST /reload HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", -400,
         "two Content-Lengths are 400"},
        {"POST /reload HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", -400, "a huge Content-Length is 400"},
        {"POST /reload HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", -413, "a body over the limit is 413"},
        {"POST /reload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", -411, "chunked is 411"},
        {"DELETE /x HTTP/1.1\r\n\r\n", 1, "an unknown method parses (routing answers 405)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        eg_admin_req rq;
        int rc = parse(cases[i].req, &rq);
        CHECK(rc == cases[i].want, "%s (got %d)", cases[i].what, rc);
    }
    eg_admin_req rq;
    const char *r = "POST /reload?x=1 HTTP/1.1\r\nAuthorization:  Bearer tok  \r\nContent-Length: 3\r\n\r\nabc";
    CHECK(parse(r, &rq) == 1, "a POST with a body parses");
    CHECK(rq.method == EG_ADMIN_POST && strcmp(rq.path, "/reload") == 0, "method POST, path without the query");
    CHECK(rq.content_length == 3 && rq.header_len == strlen(r) - 3, "content length and head length");
    CHECK(rq.authorization && rq.authorization_len == 10 && !strncmp(rq.authorization, "Bearer tok", 10),
          "Authorization is trimmed");
    CHECK(parse("HEAD / HTTP/1.1\r\n\r\n", &rq) == 1 && rq.method == EG_ADMIN_HEAD && !strcmp(rq.path, "/"), "HEAD /");

    /* heads over the limit: complete or not */
    size_t n = EG_ADMIN_MAX_REQUEST + 100;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    big[n] = '\0';
    CHECK(eg_admin_parse(big, n, &rq) == -431, "an endless head is 431 once over the limit");
    memcpy(big + n - 4, "\r\n\r\n", 4);
    CHECK(eg_admin_parse(big, n, &rq) == -431, "a complete head over the limit is 431");
    free(big);
    char many[4096] = "GET / HTTP/1.1\r\n";
    for (int i = 0; i <= EG_ADMIN_MAX_FIELDS; i++) strcat(many, "A: b\r\n");
    strcat(many, "\r\n");
    CHECK(parse(many, &rq) == -431, "more than %d fields is 431", EG_ADMIN_MAX_FIELDS);
}

static void id_table(void) {
    static const struct {
        const char *id;
        int ok;
    } cases[] = {
        {"payments/0/0", 1},
        {"a.b_c-D/12/9223372036854775807", 1},
        {"orders/3/42", 1},
        {"", 0},
        {"payments", 0},
        {"payments/0", 0},
        {"payments/0/", 0},
        {"/0/0", 0},
        {"payments/-1/0", 0},
        {"payments/0/1x", 0},
        {"pay ments/0/0", 0},
        {"payments/0/0\r\nX: y", 0},
        {"payments/0/0\n", 0},
        {"pay/ments/0/0", 0},
        {"payments/12345678901/0", 0},
        {"payments/0/12345678901234567890", 0},
        {"p\xc3\xa9/0/0", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(eg_id_valid(cases[i].id, strlen(cases[i].id)) == cases[i].ok, "errgate.id case %zu (%.12s...) is %s", i,
              cases[i].ok || !strpbrk(cases[i].id, "\r\n") ? cases[i].id : "with CR/LF",
              cases[i].ok ? "valid" : "refused");
    char t[300];
    memset(t, 'a', 249);
    strcpy(t + 249, "/0/0");
    CHECK(eg_id_valid(t, strlen(t)) == 1, "a 249-character topic is valid");
    memset(t, 'a', 250);
    strcpy(t + 250, "/0/0");
    CHECK(eg_id_valid(t, strlen(t)) == 0, "a 250-character topic is refused");
    CHECK(eg_id_valid("a/0/0\0x", 7) == 0, "a NUL inside is refused");
    CHECK(eg_id_valid(NULL, 0) == 0, "no value is refused");
}

int main(void) {
    parser_table();
    id_table();
    return TAP_DONE();
}
