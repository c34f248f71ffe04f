/* cmd_ctl.c — `errgate ctl`: an operator's incident controls, sent to a
 * running gateway's admin endpoint.
 *
 *   errgate ctl [--admin URL] [--token-file F] [--json] resume
 *   errgate ctl [--admin URL] [--token-file F] [--json] dlq-guard reset
 *
 * URL defaults to $ERRGATE_ADMIN or http://127.0.0.1:9464 (admin.listen's
 * default); the token file (the gateway's admin.token_file) to
 * $ERRGATE_TOKEN_FILE. Each subcommand is one POST with
 * "Authorization: Bearer <token>" through libcurl's easy interface (a
 * bounded answer, a 10 s deadline); the answer is printed as one line of
 * text, or as the endpoint's JSON with --json. Exit 0 when the gateway
 * answered 2xx, 1 for any other answer or no answer (the reason on stderr),
 * 2 for a usage error (nothing sent). The token is read once, kept on the
 * stack and wiped after the request. */
#include "cli.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_TIMEOUT_MS 10000
#define CTL_BODY_MAX 65536
#define CTL_TOKEN_MAX 512
#define CTL_DEFAULT_ADMIN "http://127.0.0.1:9464"

static void usage(void) {
    printf("usage: errgate ctl [--admin URL] [--token-file F] [--json] COMMAND\n"
           "\n"
           "Incident controls of a running gateway, through its admin endpoint.\n"
           "\n"
           "commands:\n"
           "  resume           after a stop decision with on_stop = \"wait\": decide the\n"
           "                   stopping record again from scratch and go on consuming\n"
           "  dlq-guard reset  re-arm every tripped dead-letter flood guard now\n"
           "\n"
           "  --admin URL       the admin endpoint (default $ERRGATE_ADMIN or %s)\n"
           "  --token-file F    the bearer token (the gateway's admin.token_file;\n"
           "                    default $ERRGATE_TOKEN_FILE)\n"
           "  --json            print the endpoint's JSON answer\n"
           "\n"
           "Exit 0: done; 1: refused or no answer (the reason on stderr); 2: usage error.\n",
           CTL_DEFAULT_ADMIN);
}

typedef struct body {
    char buf[CTL_BODY_MAX + 1];
    size_t len;
} body;

/* CURLOPT_WRITEFUNCTION: keeps the first CTL_BODY_MAX bytes. */
static size_t on_body(char *p, size_t size, size_t n, void *arg) {
    body *b = arg;
    size_t len = size * n, room = CTL_BODY_MAX - b->len;
    memcpy(b->buf + b->len, p, len < room ? len : room);
    b->len += len < room ? len : room;
    b->buf[b->len] = '\0';
    return len;
}

/* Reads the token (the file's first line, white space trimmed) into tok.
 * Returns 0, or -1 with a message on stderr. */
static int read_token(const char *path, char *tok, size_t toklen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "errgate ctl: cannot read the token file '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char line[CTL_TOKEN_MAX + 2] = "";
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (!got || n == 0 || n >= toklen) {
        fprintf(stderr, "errgate ctl: the token file '%s' must hold a token of 1 to %d characters\n", path,
                CTL_TOKEN_MAX);
        explicit_bzero(line, sizeof line);
        return -1;
    }
    memcpy(tok, s, n);
    tok[n] = '\0';
    explicit_bzero(line, sizeof line);
    return 0;
}

/* The value of "key":"..." in a flat JSON answer, unescaped only as far as
 * a one-line message needs (into out), or "" when absent. */
static void json_field(const char *json, const char *key, char *out, size_t outlen) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    size_t n = 0;
    if (p)
        for (p += strlen(pat); *p && *p != '"' && n + 1 < outlen; p++) {
            if (*p == '\\' && p[1]) p++;
            out[n++] = *p;
        }
    out[n] = '\0';
}

/* POSTs to admin + path with the token; prints the answer. Returns the exit
 * code. */
static int post(const char *admin, const char *path, const char *token, int json, const char *what) {
    char url[2048];
    size_t alen = strlen(admin);
    while (alen && admin[alen - 1] == '/') alen--;
    if (alen + strlen(path) >= sizeof url) {
        fprintf(stderr, "errgate ctl: --admin URL is too long\n");
        return EG_EXIT_USAGE;
    }
    snprintf(url, sizeof url, "%.*s%s", (int)alen, admin, path);
    char auth[CTL_TOKEN_MAX + 32];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    static body b;
    b.len = 0;
    b.buf[0] = '\0';
    char cerr[CURL_ERROR_SIZE] = "";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    explicit_bzero(auth, sizeof auth);
    long code = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    if (e && h) {
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)CTL_TIMEOUT_MS);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
        rc = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    }
    if (h) { /* the slist holds a copy of the header */
        explicit_bzero(h->data, strlen(h->data));
        curl_slist_free_all(h);
    }
    if (e) curl_easy_cleanup(e);
    curl_global_cleanup();
    if (rc != CURLE_OK) {
        fprintf(stderr, "errgate ctl: %s: no answer from %s: %s\n", what, url, cerr[0] ? cerr : curl_easy_strerror(rc));
        return EG_EXIT_FAIL;
    }
    int ok = code >= 200 && code < 300;
    char msg[1024];
    json_field(b.buf, "error", msg, sizeof msg);
    if (json) fputs(b.buf, stdout);
    else if (ok) {
        json_field(b.buf, "from", msg, sizeof msg);
        const char *n = strstr(b.buf, "\"rearmed\":");
        if (!strcmp(path, "/resume")) printf("resumed: %s\n", msg);
        else if (strstr(b.buf, "\"enabled\":false")) printf("dlq-guard reset: no dlq_guard is configured\n");
        else printf("dlq-guard reset: %d tripped guard(s) re-armed\n", n ? atoi(n + 10) : 0);
    }
    if (!ok) fprintf(stderr, "errgate ctl: %s refused (HTTP %ld): %s\n", what, code, msg[0] ? msg : b.buf);
    return ok ? EG_EXIT_OK : EG_EXIT_FAIL;
}

int eg_cmd_ctl(int argc, char **argv) {
    const char *admin = getenv("ERRGATE_ADMIN"), *token_file = getenv("ERRGATE_TOKEN_FILE");
    int json = 0, i = 1;
    if (!admin || !*admin) admin = CTL_DEFAULT_ADMIN;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (eg_is_help(a)) {
            usage();
            return EG_EXIT_OK;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (strcmp(a, "--admin") && strcmp(a, "--token-file")) return eg_usage_error("ctl", "unknown option '%s'", a);
        if (i + 1 >= argc) return eg_usage_error("ctl", "%s needs a value", a);
        if (!strcmp(a, "--admin")) admin = argv[++i];
        else token_file = argv[++i];
    }
    if (i >= argc) return eg_usage_error("ctl", "missing COMMAND (resume, dlq-guard reset)");
    for (int k = i; k < argc; k++)
        if (eg_is_help(argv[k])) {
            usage();
            return EG_EXIT_OK;
        }
    const char *path, *what;
    if (!strcmp(argv[i], "resume") && argc - i == 1) {
        path = "/resume";
        what = "resume";
    } else if (!strcmp(argv[i], "dlq-guard") && argc - i == 2 && !strcmp(argv[i + 1], "reset")) {
        path = "/dlq-guard/reset";
        what = "dlq-guard reset";
    } else if (!strcmp(argv[i], "resume") || !strcmp(argv[i], "dlq-guard")) {
        return eg_usage_error("ctl", "expected 'resume' or 'dlq-guard reset'");
    } else {
        return eg_usage_error("ctl", "unknown command '%s'", argv[i]);
    }
    if (strncmp(admin, "http://", 7) && strncmp(admin, "https://", 8))
        return eg_usage_error("ctl", "--admin must be an http:// or https:// URL, got '%s'", admin);
    if (!token_file || !*token_file)
        return eg_usage_error("ctl", "no token: give --token-file F or set ERRGATE_TOKEN_FILE");
    char token[CTL_TOKEN_MAX + 1];
    if (read_token(token_file, token, sizeof token) != 0) return EG_EXIT_FAIL;
    int rc = post(admin, path, token, json, what);
    explicit_bzero(token, sizeof token);
    return rc;
}
