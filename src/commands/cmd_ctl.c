/* cmd_ctl.c — `errgate ctl`: an operator's incident controls, sent to a
 * running gateway's admin endpoint.
 *
 *   errgate ctl [--admin URL] [--token-file F] [--json] resume
 *   errgate ctl [--admin URL] [--token-file F] [--json] dlq-guard reset
 *   errgate ctl [...] override set NAME (--class C|--code X|--topic T[:P])
 *                     --action A --ttl DUR --reason TEXT [--by WHO]
 *   errgate ctl [...] override set NAME --rung R --delay D --ttl DUR ...
 *   errgate ctl [...] override set NAME --pause T[:P] --ttl DUR ...
 *   errgate ctl [...] override list | override clear NAME
 *   errgate ctl [...] shadow [--json]  (the shadow policy's agreement table, GET /shadow)
 *   errgate ctl [...] fence list | fence release KEY  (source.fence: GET /fences,
 *                     POST /fences/release)
 *
 * URL defaults to $ERRGATE_ADMIN or http://127.0.0.1:9464 (admin.listen's
 * default); the token file (the gateway's admin.token_file) to
 * $ERRGATE_TOKEN_FILE. Each subcommand is one request (POST, or GET
 * /overrides, DELETE /overrides/NAME) with "Authorization: Bearer <token>"
 * (optional for the GET) through libcurl's easy interface (a
 * bounded answer, a 10 s deadline); the answer is printed as one line of
 * text, or as the endpoint's JSON with --json. Exit 0 when the gateway
 * answered 2xx, 1 for any other answer or no answer (the reason on stderr),
 * 2 for a usage error (nothing sent). The token is read once, kept on the
 * stack and wiped after the request. */
#include "cli.h"
#include "config.h"
#include "ctl_shadow.h"
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
    printf("usage: errgate ctl [--admin URL] [--source NAME] [--token-file F] [--json] COMMAND (options before or "
           "after it)\n"
           "\n"
           "Incident controls of a running gateway, through its admin endpoint.\n"
           "\n"
           "commands:\n"
           "  resume           after a stop decision with on_stop = \"wait\": decide the\n"
           "                   stopping record again from scratch and go on consuming\n"
           "  dlq-guard reset  re-arm every tripped dead-letter flood guard now, on every\n"
           "                   instance of the group (through the audit topic)\n"
           "  override set NAME (--class C | --code X | --topic T[:P]) --action A\n"
           "               --ttl DUR --reason TEXT [--by WHO]\n"
           "                   for DUR, decisions that match get action A (hold, dlq,\n"
           "                   quarantine, ignore, retry, stop) instead of the policy's\n"
           "  override set NAME --rung R --delay D --ttl DUR --reason TEXT [--by WHO]\n"
           "                   for DUR, ladder rung R waits D instead of its delay\n"
           "                   (records written to it meanwhile carry errgate.not-before)\n"
           "  override set NAME --pause T[:P] --ttl DUR --reason TEXT [--by WHO]\n"
           "                   for DUR, topic T (partition P) is not consumed\n"
           "                   An override applies to every instance of the group (it is\n"
           "                   written to the audit topic, admin.audit_topic) and expires\n"
           "                   on its own; setting NAME again replaces it (--by defaults\n"
           "                   to $USER)\n"
           "  override list    the overrides in force (no token needed)\n"
           "  override clear NAME  end an override before its TTL, on every instance\n"
           "  shadow [--json]  the shadow policy's agreement table with the live one\n"
           "                   (no token needed)\n"
           "  fence list       the keys fenced behind a parked record (source.fence) on\n"
           "                   this instance, with their queues (no token needed)\n"
           "  fence release KEY  lift KEY's fence on every instance (this one's at once,\n"
           "                   the others' through GROUP.fences): its followers pass as\n"
           "                   they come back (those in the DLQ are yours to replay)\n"
           "\n"
           "  --admin URL       the admin endpoint (default $ERRGATE_ADMIN or %s)\n"
           "  --source NAME     a gateway of several sources: the controls of source NAME\n"
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

/* Prints the overrides of a GET /overrides answer, one line each. */
static void print_overrides(const char *json) {
    int n = 0;
    for (const char *p = strstr(json, "{\"name\":"); p; p = strstr(p + 1, "{\"name\":"), n++) {
        char name[80], match[16], value[300], action[40], until[48], by[80], reason[300];
        json_field(p, "name", name, sizeof name);
        json_field(p, "match", match, sizeof match);
        json_field(p, "value", value, sizeof value);
        json_field(p, "action", action, sizeof action);
        json_field(p, "expires_at", until, sizeof until);
        json_field(p, "by", by, sizeof by);
        json_field(p, "reason", reason, sizeof reason);
        const char *part = strstr(p, "\"partition\":");
        const char *delay = strstr(p, "\"delay_ms\":");
        const char *end = strchr(p, '}');
        char where[340];
        if (part && end && part < end) snprintf(where, sizeof where, "%s:%d", value, atoi(part + 12));
        else snprintf(where, sizeof where, "%s", value);
        if (delay && end && delay < end) snprintf(action, sizeof action, "delay %lld ms", atoll(delay + 11));
        else if (!strcmp(match, "pause")) snprintf(action, sizeof action, "paused");
        printf("%s  %s=%s  %s  until %s  by %s: %s\n", name, match, where, action, until, by, reason);
    }
    if (n == 0) printf("no overrides in force\n");
}

/* Prints a 2xx answer to `what` as a line of text. */
static void print_ok(const char *what, const char *json) {
    char msg[1024];
    if (!strcmp(what, "resume")) {
        json_field(json, "from", msg, sizeof msg);
        printf("resumed: %s\n", msg);
    } else if (!strcmp(what, "dlq-guard reset")) {
        const char *n = strstr(json, "\"rearmed\":");
        if (strstr(json, "\"enabled\":false")) printf("dlq-guard reset: no dlq_guard is configured\n");
        else printf("dlq-guard reset: %d tripped guard(s) re-armed\n", n ? atoi(n + 10) : 0);
    } else if (!strcmp(what, "override list")) {
        print_overrides(json);
    } else if (!strcmp(what, "shadow")) {
        if (eg_shadow_print(json, stdout) != 0) printf("%s\n", json);
    } else if (!strcmp(what, "fence list")) {
        int n = 0;
        for (const char *p = strstr(json, "{\"topic\":"); p; p = strstr(p + 1, "{\"topic\":"), n++) {
            char topic[256], key[300], head[300], why[16];
            json_field(p, "topic", topic, sizeof topic);
            json_field(p, "key", key, sizeof key);
            json_field(p, "head", head, sizeof head);
            json_field(p, "why", why, sizeof why);
            const char *part = strstr(p, "\"partition\":"), *fl = strstr(p, "\"followers\":");
            printf("%s[%d]  key %s  head %s (%s, %s)  %d followers\n", topic, part ? atoi(part + 12) : -1, key, head,
                   strstr(p, "\"parked\":true") == strstr(p, "\"parked\":") ? "parked" : "released", why,
                   fl ? atoi(fl + 12) : 0);
        }
        if (n == 0) printf("no keys fenced\n");
    } else if (!strcmp(what, "fence release")) {
        const char *n = strstr(json, "\"released\":"), *sent = strstr(json, "\"sent\":");
        printf("fence release: %d fence(s) lifted\n", n ? atoi(n + 11) : 0);
        if (sent && atoi(sent + 7) > 0)
            printf("fence release: %d release record(s) sent to the instances that hold the key's other fences\n",
                   atoi(sent + 7));
    } else {
        char result[32], name[80], match[16], action[40], until[48];
        json_field(json, "result", result, sizeof result);
        json_field(json, "name", name, sizeof name);
        json_field(json, "match", match, sizeof match);
        json_field(json, "action", action, sizeof action);
        json_field(json, "expires_at", until, sizeof until);
        const char *delay = strstr(json, "\"delay_ms\":");
        if (delay) snprintf(action, sizeof action, "delay %lld ms", atoll(delay + 11));
        else if (!strcmp(match, "pause")) snprintf(action, sizeof action, "paused");
        if (!strcmp(result, "cleared")) printf("override %s cleared\n", name);
        else printf("override %s %s: %s until %s\n", name, result, action, until);
    }
}

/* Sends METHOD admin + path (with form, form-encoded, for a POST) and the
 * token, and prints the answer. Returns the exit code. */
static int request(const char *admin, const char *method, const char *path, const char *form, const char *token,
                   int json, const char *what) {
    char url[2048];
    size_t alen = strlen(admin);
    while (alen && admin[alen - 1] == '/') alen--;
    if (alen + strlen(path) >= sizeof url) {
        fprintf(stderr, "errgate ctl: --admin URL is too long\n");
        return EG_EXIT_USAGE;
    }
    snprintf(url, sizeof url, "%.*s%s", (int)alen, admin, path);
    char auth[CTL_TOKEN_MAX + 32] = "";
    if (token) snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    static body b;
    b.len = 0;
    b.buf[0] = '\0';
    char cerr[CURL_ERROR_SIZE] = "";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *e = curl_easy_init();
    struct curl_slist *h = token ? curl_slist_append(NULL, auth) : NULL;
    explicit_bzero(auth, sizeof auth);
    long code = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    if (e && (h || !token)) {
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        if (h) curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        if (!strcmp(method, "POST")) curl_easy_setopt(e, CURLOPT_POSTFIELDS, form ? form : "");
        else if (strcmp(method, "GET")) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
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
    if (json) fputs(b.buf, stdout);
    else if (ok) print_ok(what, b.buf);
    if (!ok) {
        char msg[1024];
        json_field(b.buf, "error", msg, sizeof msg);
        fprintf(stderr, "errgate ctl: %s refused (HTTP %ld): %s\n", what, code, msg[0] ? msg : b.buf);
    }
    return ok ? EG_EXIT_OK : EG_EXIT_FAIL;
}

/* Appends "&key=value" (value form-encoded) to the body. Returns 0, or -1
 * when it does not fit. */
static int form_add(char *out, size_t outlen, const char *key, const char *value) {
    char *v = curl_easy_escape(NULL, value, 0);
    if (!v) return -1;
    size_t n = strlen(out);
    int w = snprintf(out + n, outlen - n, "%s%s=%s", n ? "&" : "", key, v);
    curl_free(v);
    return w < 0 || (size_t)w >= outlen - n ? -1 : 0;
}

static int ctl_command(int argc, char **argv, const char *admin, const char *token_file, int json);

/* The options of `override set`, each followed by its value. */
enum { CLASS, CODE, TOPIC, RUNG, PAUSE, ACTION, DELAY, TTL, REASON, BY, NKEYS };
static const char *const keys[NKEYS] = {"--class",  "--code",  "--topic", "--rung",   "--pause",
                                        "--action", "--delay", "--ttl",   "--reason", "--by"};

/* 1 when a is one of `override set`'s options (which take a value). */
static int override_key(const char *a) {
    for (int j = 0; j < NKEYS; j++)
        if (!strcmp(a, keys[j])) return 1;
    return 0;
}

/* `override set NAME ...` into a form body. argv[0] is "set". Returns 0,
 * or an exit code after a usage error. */
static int override_form(int argc, char **argv, char *out, size_t outlen) {
    const char *vals[NKEYS] = {0};
    if (argc < 2 || argv[1][0] == '-') return eg_usage_error("ctl override set", "missing NAME");
    for (int i = 2; i < argc; i++) {
        int k = -1;
        for (int j = 0; j < NKEYS; j++)
            if (!strcmp(argv[i], keys[j])) k = j;
        if (k < 0) return eg_usage_error("ctl override set", "unknown argument '%s'", argv[i]);
        if (i + 1 >= argc) return eg_usage_error("ctl override set", "%s needs a value", argv[i]);
        if (vals[k]) return eg_usage_error("ctl override set", "%s given twice", argv[i]);
        vals[k] = argv[++i];
    }
    if (!!vals[CLASS] + !!vals[CODE] + !!vals[TOPIC] + !!vals[RUNG] + !!vals[PAUSE] != 1)
        return eg_usage_error("ctl override set", "give exactly one of --class, --code, --topic, --rung, --pause");
    if (vals[RUNG] && !vals[DELAY]) return eg_usage_error("ctl override set", "--rung needs --delay DUR");
    if (!vals[RUNG] && vals[DELAY]) return eg_usage_error("ctl override set", "--delay goes with --rung only");
    if ((vals[RUNG] || vals[PAUSE]) && vals[ACTION])
        return eg_usage_error("ctl override set", "--action goes with --class, --code or --topic only");
    if (!vals[RUNG] && !vals[PAUSE] && !vals[ACTION]) return eg_usage_error("ctl override set", "missing --action");
    if (!vals[TTL]) return eg_usage_error("ctl override set", "missing --ttl (an override always expires)");
    if (!vals[REASON] || !*vals[REASON]) return eg_usage_error("ctl override set", "missing --reason");
    if (!vals[BY]) vals[BY] = getenv("USER");
    out[0] = '\0';
    int bad = form_add(out, outlen, "name", argv[1]);
    for (int k = 0; k < NKEYS; k++)
        if (vals[k] && !bad) bad = form_add(out, outlen, keys[k] + 2, vals[k]);
    return bad ? eg_usage_error("ctl override set", "the arguments are too long") : 0;
}

/* `errgate ctl`. The options of ctl itself (--admin, --token-file, --json)
 * are taken wherever they stand, before or after the command
 * (`ctl override list --json`); the values of `override set`'s options are
 * never read as such. */
int eg_cmd_ctl(int argc, char **argv) {
    const char *admin = getenv("ERRGATE_ADMIN"), *token_file = getenv("ERRGATE_TOKEN_FILE"), *source = NULL;
    int json = 0;
    if (!admin || !*admin) admin = CTL_DEFAULT_ADMIN;
    char **rest = calloc((size_t)argc + 1, sizeof *rest); /* argv without ctl's own options */
    if (!rest) return EG_EXIT_FAIL;
    int n = 0, rc = -1;
    rest[n++] = argv[0];
    for (int k = 1; k < argc && rc < 0; k++) {
        const char *a = argv[k];
        if (eg_is_help(a)) {
            usage();
            rc = EG_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--admin") || !strcmp(a, "--token-file") || !strcmp(a, "--source")) {
            if (k + 1 >= argc) rc = eg_usage_error("ctl", "%s needs a value", a);
            else if (!strcmp(a, "--admin")) admin = argv[++k];
            else if (!strcmp(a, "--source")) source = argv[++k];
            else token_file = argv[++k];
        } else if (override_key(a) && k + 1 < argc) {
            rest[n++] = argv[k++];
            rest[n++] = argv[k];
        } else {
            rest[n++] = argv[k];
        }
    }
    if (rc < 0 && n > 1 && rest[1][0] == '-')
        rc = eg_usage_error("ctl", "unknown option '%s'%s", rest[1], eg_dash_hint(rest[1]));
    if (rc < 0 && n < 2)
        rc = eg_usage_error("ctl", "missing COMMAND (resume, dlq-guard reset, override, shadow, fence)");
    char base[2048]; /* a source of several: its controls under /sources/NAME (supervisor.c) */
    if (rc < 0 && source) {
        size_t sl = strlen(source), al = strlen(admin);
        while (al && admin[al - 1] == '/') al--;
        if (!sl || sl > EG_SOURCE_NAME_MAX ||
            strspn(source, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != sl)
            rc = eg_usage_error("ctl", "--source: '%.60s' is not a source name (letters, digits, - and _)", source);
        else if (al + sl + 10 >= sizeof base) rc = eg_usage_error("ctl", "--admin URL is too long");
        else {
            snprintf(base, sizeof base, "%.*s/sources/%s", (int)al, admin, source);
            admin = base;
        }
    }
    if (rc < 0) rc = ctl_command(n, rest, admin, token_file, json);
    free(rest);
    return rc;
}

/* Runs the command argv[1..] (ctl's own options taken out) against admin.
 * Returns the exit code. */
static int ctl_command(int argc, char **argv, const char *admin, const char *token_file, int json) {
    int i = 1;
    const char *path, *what, *method = "POST";
    char form[4096] = "", pathbuf[300];
    int nargs = argc - i;
    const char *cmd = argv[i], *sub = nargs > 1 ? argv[i + 1] : "";
    if (!strcmp(cmd, "resume") && nargs == 1) {
        path = "/resume";
        what = "resume";
    } else if (!strcmp(cmd, "dlq-guard") && nargs == 2 && !strcmp(sub, "reset")) {
        path = "/dlq-guard/reset";
        what = "dlq-guard reset";
        const char *user = getenv("USER");
        if (user && *user && form_add(form, sizeof form, "by", user) != 0) form[0] = '\0';
    } else if (!strcmp(cmd, "shadow") && nargs == 1) {
        path = "/shadow";
        what = "shadow";
        method = "GET";
    } else if (!strcmp(cmd, "fence") && !strcmp(sub, "list") && nargs == 2) {
        path = "/fences";
        what = "fence list";
        method = "GET";
    } else if (!strcmp(cmd, "fence") && !strcmp(sub, "release") && nargs == 3) {
        const char *user = getenv("USER");
        if (form_add(form, sizeof form, "key", argv[i + 2]) != 0 ||
            (user && *user && form_add(form, sizeof form, "by", user) != 0))
            return eg_usage_error("ctl fence release", "KEY is too long");
        path = "/fences/release";
        what = "fence release";
    } else if (!strcmp(cmd, "override") && !strcmp(sub, "list") && nargs == 2) {
        path = "/overrides";
        what = "override list";
        method = "GET";
    } else if (!strcmp(cmd, "override") && !strcmp(sub, "clear") && nargs == 3) {
        char *esc = curl_easy_escape(NULL, argv[i + 2], 0);
        if (!esc || strlen(esc) > 200) {
            curl_free(esc);
            return eg_usage_error("ctl override clear", "NAME is too long");
        }
        snprintf(pathbuf, sizeof pathbuf, "/overrides/%s", esc);
        curl_free(esc);
        path = pathbuf;
        what = "override clear";
        method = "DELETE";
    } else if (!strcmp(cmd, "override") && !strcmp(sub, "set")) {
        int rc = override_form(nargs - 1, argv + i + 1, form, sizeof form);
        if (rc) return rc;
        path = "/overrides";
        what = "override set";
    } else if (!strcmp(cmd, "resume") || !strcmp(cmd, "dlq-guard") || !strcmp(cmd, "override") ||
               !strcmp(cmd, "shadow") || !strcmp(cmd, "fence")) {
        return eg_usage_error("ctl", "expected 'resume', 'dlq-guard reset', 'override set NAME ...', "
                                     "'override list', 'override clear NAME', 'shadow', 'fence list' or "
                                     "'fence release KEY'");
    } else {
        return eg_usage_error("ctl", "unknown command '%s'", cmd);
    }
    if (strncmp(admin, "http://", 7) && strncmp(admin, "https://", 8))
        return eg_usage_error("ctl", "--admin must be an http:// or https:// URL, got '%s'", admin);
    int get = !strcmp(method, "GET");
    if (!get && (!token_file || !*token_file))
        return eg_usage_error("ctl", "no token: give --token-file F or set ERRGATE_TOKEN_FILE");
    char token[CTL_TOKEN_MAX + 1];
    if (token_file && *token_file && read_token(token_file, token, sizeof token) != 0) return EG_EXIT_FAIL;
    int rc = request(admin, method, path, form[0] ? form : NULL, token_file && *token_file ? token : NULL, json, what);
    explicit_bzero(token, sizeof token);
    return rc;
}
