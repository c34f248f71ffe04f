/* config.c — load and validate the gateway's Lua configuration (see config.h).
 *
 * The config is trusted operator input, so it runs with Lua's standard
 * libraries (os.getenv is handy), but its result is validated strictly:
 * a schema table lists every key with its type; anything else is refused. */
#include "config.h"
#include "target.h"
#include "util.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <libgen.h>
#include <math.h>
#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct loadctx {
    lua_State *L;
    eg_config *cfg;
    char *dir;      /* directory of the config file */
    char *err;
    size_t errlen;
} loadctx;

static int fail(loadctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(loadctx *c, const char *fmt, ...) {
    va_list ap;
    int n = snprintf(c->err, c->errlen, "config %s: ", c->cfg->path ? c->cfg->path : "?");
    if (n < 0 || (size_t)n >= c->errlen) n = 0;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

const char *eg_ordering_name(eg_ordering o) {
    return o == EG_ORDER_KEY ? "key" : o == EG_ORDER_NONE ? "none" : "partition";
}

/* Refuses any key of the table at the stack top not in `known` (NULL-ended).
 * `where` names the table in messages ("" for the top level). */
static int only_keys(loadctx *c, const char *where, const char *const *known) {
    lua_State *L = c->L;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            return fail(c, "%s: keys must be strings", *where ? where : "top level");
        }
        const char *k = lua_tostring(L, -1);
        int found = 0;
        for (const char *const *p = known; *p; p++)
            if (strcmp(*p, k) == 0) found = 1;
        if (!found) {
            int r = fail(c, "unknown key '%s%s%s'", where, *where ? "." : "", k);
            lua_pop(L, 1);
            return r;
        }
    }
    return 0;
}

/* Pushes t[key] of the table t at the stack top, read raw: a metamethod
 * of the file's tables never runs outside the protected call that ran the
 * file (it could raise or loop where nothing catches it). */
static void rawfield(lua_State *L, const char *key) {
    lua_pushstring(L, key);
    lua_rawget(L, -2);
}

/* Field readers: each reads t[key] of the table at the stack top. `name` is
 * the dotted key for messages. A missing optional field keeps the default. */
static int get_string(loadctx *c, const char *key, const char *name, int required, char **out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TNIL) {
        lua_pop(c->L, 1);
        return required ? fail(c, "missing required key '%s'", name) : 0;
    }
    if (t != LUA_TSTRING) {
        int r = fail(c, "%s: expected a string, got %s", name, lua_typename(c->L, t));
        lua_pop(c->L, 1);
        return r;
    }
    free(*out);
    *out = eg_xstrdup(lua_tostring(c->L, -1));
    lua_pop(c->L, 1);
    return 0;
}

static int get_int(loadctx *c, const char *key, const char *name, int min, int max, int *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TNIL) {
        lua_pop(c->L, 1);
        return 0;
    }
    lua_Number v = lua_tonumber(c->L, -1);
    lua_pop(c->L, 1);
    /* floor, not a cast: 1e300 or inf in a long long is undefined */
    if (t != LUA_TNUMBER || v != floor(v)) return fail(c, "%s: expected an integer", name);
    if (v < min || v > max) return fail(c, "%s: %g is out of range [%d, %d]", name, v, min, max);
    *out = (int)v;
    return 0;
}

static int get_number(loadctx *c, const char *key, const char *name, double min, double max, double *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    lua_Number v = lua_tonumber(c->L, -1);
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    if (t != LUA_TNUMBER) return fail(c, "%s: expected a number", name);
    if (!(v >= min && v <= max)) return fail(c, "%s: %g is out of range [%g, %g]", name, v, min, max);
    *out = v;
    return 0;
}

static int get_bool(loadctx *c, const char *key, const char *name, int *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    int v = lua_toboolean(c->L, -1);
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    if (t != LUA_TBOOLEAN) return fail(c, "%s: expected true or false", name);
    *out = v;
    return 0;
}

/* Pushes t[key] if it is a table (returns 1), leaves nothing and returns 0
 * if nil, fails on another type (returns -1). */
static int push_table(loadctx *c, const char *key, const char *name) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TTABLE) return 1;
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    return fail(c, "%s: expected a table, got %s", name, lua_typename(c->L, t));
}


/* Longest source regex, and largest {n,m} count, accepted (a topic name is
 * at most 249 characters; a pattern over many of them is far longer than
 * any real one). */
#define REGEX_MAX_LEN 1024
#define REGEX_MAX_COUNT 255
#define REGEX_MAX_EXPANSION 1000 /* product of all {n,m} counts: nested ones multiply */

/* 1 (with why) when compiling regex t could cost time or memory out of all
 * proportion: glibc's regcomp copies a repeated subexpression once per
 * repetition, so stacked quantifiers ("a+++++", "a*{9}") grow exponentially
 * and nested {n,m} counts multiply ("(x{200}){200}" took minutes), so their
 * product is bounded, not only each count; POSIX leaves stacked quantifiers
 * undefined anyway. Bracket expressions and escaped characters are skipped. */
static int regex_too_costly(const char *t, char *why, size_t whylen) {
    size_t n = strlen(t);
    if (n > REGEX_MAX_LEN) {
        snprintf(why, whylen, "longer than %d characters", REGEX_MAX_LEN);
        return 1;
    }
    int prev_quant = 0;      /* the previous token was a quantifier */
    unsigned long expansion = 1; /* product of the {n,m} upper counts so far */
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (ch == '\\') { /* an escaped character is a literal */
            i++;
            prev_quant = 0;
        } else if (ch == '[') { /* a bracket expression: skip to its end */
            i++;
            if (i < n && t[i] == '^') i++;
            if (i < n && t[i] == ']') i++;
            while (i < n && t[i] != ']') i++;
            prev_quant = 0;
        } else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
            if (prev_quant) {
                snprintf(why, whylen, "stacked repetition operators at offset %zu", i);
                return 1;
            }
            if (ch == '{') {
                char *end;
                unsigned long lo = strtoul(t + i + 1, &end, 10), hi = lo;
                if (*end == ',') hi = isdigit((unsigned char)end[1]) ? strtoul(end + 1, &end, 10) : lo;
                if (lo > REGEX_MAX_COUNT || hi > REGEX_MAX_COUNT) {
                    snprintf(why, whylen, "a repetition count over %d at offset %zu", REGEX_MAX_COUNT, i);
                    return 1;
                }
                expansion *= hi > lo ? (hi ? hi : 1) : (lo ? lo : 1);
                if (expansion > REGEX_MAX_EXPANSION) {
                    snprintf(why, whylen, "repetition counts multiplying to over %d at offset %zu",
                             REGEX_MAX_EXPANSION, i);
                    return 1;
                }
                while (i < n && t[i] != '}') i++;
            }
            prev_quant = 1;
        } else {
            prev_quant = 0;
        }
    }
    return 0;
}
/* Resolves a path relative to the config directory and checks it is a
 * readable file. Replaces *p with the resolved path. */
static int resolve_file(loadctx *c, const char *name, char **p) {
    if ((*p)[0] != '/') {
        size_t n = strlen(c->dir) + strlen(*p) + 2;
        char *abs = eg_xmalloc(n);
        snprintf(abs, n, "%s/%s", c->dir, *p);
        free(*p);
        *p = abs;
    }
    if (access(*p, R_OK) != 0) return fail(c, "%s: cannot read file '%s'", name, *p);
    return 0;
}

static int load_kafka(loadctx *c) {
    lua_State *L = c->L;
    int r = push_table(c, "kafka", "kafka");
    if (r <= 0) return r;
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        n++;
        lua_pop(L, 1);
    }
    c->cfg->kafka = eg_xcalloc((size_t)n, sizeof(eg_kv));
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 3);
            return fail(c, "kafka: property names must be strings");
        }
        const char *k = lua_tostring(L, -2);
        char val[64];
        const char *v = NULL;
        switch (lua_type(L, -1)) {
        case LUA_TSTRING: v = lua_tostring(L, -1); break;
        case LUA_TBOOLEAN: v = lua_toboolean(L, -1) ? "true" : "false"; break;
        case LUA_TNUMBER:
            snprintf(val, sizeof val, "%.17g", lua_tonumber(L, -1));
            v = val;
            break;
        default: {
            int rr = fail(c, "kafka.%s: expected a string, number or boolean", k);
            lua_pop(L, 3);
            return rr;
        }
        }
        if (strcmp(k, "partition.assignment.strategy") == 0 && strstr(v, "cooperative")) {
            /* incremental assignment is not implemented: the rebalance
             * callback assigns and revokes whole sets (eager protocol) */
            int rr = fail(c, "kafka.partition.assignment.strategy: \"%s\" is a cooperative (incremental) "
                             "strategy, which errgate does not support; use an eager one: range or roundrobin", v);
            lua_pop(L, 3);
            return rr;
        }
        if (strcmp(k, "enable.auto.commit") == 0 || strcmp(k, "enable.auto.offset.store") == 0 ||
            strcmp(k, "group.id") == 0) {
            int rr = fail(c, "kafka.%s: set by errgate itself (offsets are committed only after a "
                             "durable outcome; the group comes from 'group')", k);
            lua_pop(L, 3);
            return rr;
        }
        eg_kv *kv = &c->cfg->kafka[c->cfg->nkafka++];
        kv->key = eg_xstrdup(k);
        kv->val = eg_xstrdup(v);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

static int load_source(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    static const char *const keys[] = {"topics", "ordering", "max_inflight", "max_inflight_total", "max_tracked",
                                       "not_before_max_ms", NULL};
    int r = push_table(c, "source", "source");
    if (r < 0) return r;
    if (r == 0) return fail(c, "missing required key 'source'");
    if (only_keys(c, "source", keys) < 0) return -1;
    rawfield(L, "topics");
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 2);
        return fail(c, "source.topics: expected a list of topic names");
    }
    int n = (int)lua_objlen(L, -1);
    if (n == 0) {
        lua_pop(L, 2);
        return fail(c, "source.topics: at least one topic is required");
    }
    cfg->topics = eg_xcalloc((size_t)n, sizeof(char *));
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TSTRING || lua_objlen(L, -1) == 0) {
            lua_pop(L, 3);
            return fail(c, "source.topics[%d]: expected a topic name", i);
        }
        const char *t = lua_tostring(L, -1);
        regex_t re;
        if (eg_topic_is_regex(t)) {
            char why[96];
            if (regex_too_costly(t, why, sizeof why)) {
                fail(c, "source.topics[%d]: \"%.200s\" is refused: %s", i, t, why);
                lua_pop(L, 3);
                return -1;
            }
            if (regcomp(&re, t, REG_EXTENDED | REG_NOSUB) != 0) {
                fail(c, "source.topics[%d]: \"%s\" is not a valid regular expression", i, t);
                lua_pop(L, 3);
                return -1;
            }
            regfree(&re);
        }
        cfg->topics[cfg->ntopics++] = eg_xstrdup(t);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    char *ord = NULL;
    if (get_string(c, "ordering", "source.ordering", 0, &ord) < 0) return lua_pop(L, 1), -1;
    if (ord) {
        if (strcmp(ord, "partition") == 0) cfg->ordering = EG_ORDER_PARTITION;
        else if (strcmp(ord, "key") == 0) cfg->ordering = EG_ORDER_KEY;
        else if (strcmp(ord, "none") == 0) cfg->ordering = EG_ORDER_NONE;
        else {
            fail(c, "source.ordering: expected \"partition\", \"key\" or \"none\", got \"%s\"", ord);
            free(ord);
            lua_pop(L, 1);
            return -1;
        }
        free(ord);
    }
    if (get_int(c, "max_inflight", "source.max_inflight", 1, 1000000, &cfg->max_inflight) < 0 ||
        get_int(c, "max_inflight_total", "source.max_inflight_total", 1, 10000000,
                &cfg->max_inflight_total) < 0 ||
        get_int(c, "max_tracked", "source.max_tracked", 1, 100000000, &cfg->max_tracked) < 0 ||
        get_int(c, "not_before_max_ms", "source.not_before_max_ms", 0, 2000000000, &cfg->not_before_max_ms) < 0)
        return lua_pop(L, 1), -1;
    lua_pop(L, 1);
    if (cfg->max_tracked == 0) /* not set: 100,000, or the in-flight cap when that is larger */
        cfg->max_tracked = cfg->max_inflight > 100000 ? cfg->max_inflight : 100000;
    if (cfg->max_tracked < cfg->max_inflight)
        return fail(c, "source.max_tracked: %d is below source.max_inflight (%d)", cfg->max_tracked,
                    cfg->max_inflight);
    return 0;
}

/* target.breaker: its presence turns the circuit breaker on. */
static int load_breaker(loadctx *c) {
    static const char *const keys[] = {"enabled", "window", "min_calls", "failure_ratio", "open_ms",
                                       "half_open_probes", NULL};
    eg_config *cfg = c->cfg;
    int r = push_table(c, "breaker", "target.breaker");
    if (r <= 0) return r;
    cfg->breaker_enabled = 1;
    if (only_keys(c, "target.breaker", keys) < 0 ||
        get_bool(c, "enabled", "target.breaker.enabled", &cfg->breaker_enabled) < 0 ||
        get_int(c, "window", "target.breaker.window", 1, 100000, &cfg->breaker_window) < 0 ||
        get_int(c, "min_calls", "target.breaker.min_calls", 1, 100000, &cfg->breaker_min_calls) < 0 ||
        get_number(c, "failure_ratio", "target.breaker.failure_ratio", 0.01, 1, &cfg->breaker_failure_ratio) < 0 ||
        get_int(c, "open_ms", "target.breaker.open_ms", 1, 3600000, &cfg->breaker_open_ms) < 0 ||
        get_int(c, "half_open_probes", "target.breaker.half_open_probes", 1, 1000, &cfg->breaker_probes) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (cfg->breaker_min_calls > cfg->breaker_window)
        return fail(c, "target.breaker.min_calls: %d is larger than the window (%d)", cfg->breaker_min_calls,
                    cfg->breaker_window);
    return 0;
}

/* target.retry_budget: its presence turns the retry budget on. */
static int load_budget(loadctx *c) {
    static const char *const keys[] = {"enabled", "percent", "min", NULL};
    eg_config *cfg = c->cfg;
    int r = push_table(c, "retry_budget", "target.retry_budget");
    if (r <= 0) return r;
    cfg->budget_enabled = 1;
    if (only_keys(c, "target.retry_budget", keys) < 0 ||
        get_bool(c, "enabled", "target.retry_budget.enabled", &cfg->budget_enabled) < 0 ||
        get_number(c, "percent", "target.retry_budget.percent", 0, 100, &cfg->budget_percent) < 0 ||
        get_int(c, "min", "target.retry_budget.min", 0, 1000000, &cfg->budget_min) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    return 0;
}

/* target.http.tls = { ca_file, cert_file, key_file, verify, server_name } */
static int load_http_tls(loadctx *c) {
    static const char *const keys[] = {"ca_file", "cert_file", "key_file", "verify", "server_name", NULL};
    eg_config *cfg = c->cfg;
    int r = push_table(c, "tls", "target.http.tls");
    if (r <= 0) return r;
    if (only_keys(c, "target.http.tls", keys) < 0 ||
        get_string(c, "ca_file", "target.http.tls.ca_file", 0, &cfg->http_ca_file) < 0 ||
        get_string(c, "cert_file", "target.http.tls.cert_file", 0, &cfg->http_cert_file) < 0 ||
        get_string(c, "key_file", "target.http.tls.key_file", 0, &cfg->http_key_file) < 0 ||
        get_bool(c, "verify", "target.http.tls.verify", &cfg->http_verify) < 0 ||
        get_string(c, "server_name", "target.http.tls.server_name", 0, &cfg->http_server_name) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (strncmp(cfg->http_url, "https://", 8) != 0)
        return fail(c, "target.http.tls: only for an https:// URL, got \"%s\"", cfg->http_url);
    if (cfg->http_key_file && !cfg->http_cert_file)
        return fail(c, "target.http.tls.key_file: needs target.http.tls.cert_file");
    if ((cfg->http_ca_file && resolve_file(c, "target.http.tls.ca_file", &cfg->http_ca_file) < 0) ||
        (cfg->http_cert_file && resolve_file(c, "target.http.tls.cert_file", &cfg->http_cert_file) < 0) ||
        (cfg->http_key_file && resolve_file(c, "target.http.tls.key_file", &cfg->http_key_file) < 0))
        return -1;
    const char *sn = cfg->http_server_name;
    if (sn) {
        int okname = *sn != '\0' && strlen(sn) <= 253;
        for (const char *p = sn; okname && *p; p++)
            okname = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     *p == '-' || *p == '.';
        if (!okname) return fail(c, "target.http.tls.server_name: expected a DNS name, got \"%s\"", sn);
    }
    return 0;
}

/* target.http.headers = { ["Name"] = "value" | { file = "path" } }. A value
 * never appears in a message (it may be a secret). */
static int load_http_headers(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    int r = push_table(c, "headers", "target.http.headers");
    if (r <= 0) return r;
    size_t n = 1;
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) n++;
    cfg->http_headers = eg_xcalloc(n, sizeof(eg_http_header));
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) return lua_pop(L, 3), fail(c, "target.http.headers: names must be strings");
        const char *name = lua_tostring(L, -2);
        if (!eg_http_header_sendable(name))
            return lua_pop(L, 3), fail(c, "target.http.headers: \"%s\" is not a header name errgate can send "
                                          "(an HTTP token; not Errgate-*, Host, Content-*, Connection, "
                                          "Transfer-Encoding, Expect, TE, Upgrade)", name);
        for (int i = 0; i < cfg->nhttp_headers; i++)
            if (strcasecmp(cfg->http_headers[i].name, name) == 0)
                return lua_pop(L, 3), fail(c, "target.http.headers: \"%s\" is given twice", name);
        eg_http_header *h = &cfg->http_headers[cfg->nhttp_headers++];
        h->name = eg_xstrdup(name);
        if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char *v = lua_tolstring(L, -1, &len);
            int okv = len > 0;
            for (size_t i = 0; okv && i < len; i++) okv = (v[i] >= 0x20 && v[i] < 0x7f) || v[i] == '\t';
            if (!okv)
                return lua_pop(L, 3), fail(c, "target.http.headers.%s: the value must be non-empty printable "
                                              "text on one line", name);
            h->value = eg_xstrdup(v);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            static const char *const fkeys[] = {"file", NULL};
            char where[300];
            snprintf(where, sizeof where, "target.http.headers.%s", name);
            if (only_keys(c, where, fkeys) < 0) return lua_pop(L, 3), -1;
            snprintf(where, sizeof where, "target.http.headers.%s.file", name);
            if (get_string(c, "file", where, 1, &h->file) < 0 || resolve_file(c, where, &h->file) < 0)
                return lua_pop(L, 3), -1;
        } else {
            return lua_pop(L, 3), fail(c, "target.http.headers.%s: expected a string or { file = \"path\" }", name);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

static int load_http(loadctx *c) {
    static const char *const keys[] = {"url", "timeout_ms", "concurrency", "tls", "headers",
                                       "max_response_bytes", "version", NULL};
    eg_config *cfg = c->cfg;
    int maxb = (int)cfg->http_max_response_bytes;
    char *version = NULL;
    if (only_keys(c, "target.http", keys) < 0 ||
        get_string(c, "url", "target.http.url", 1, &cfg->http_url) < 0 ||
        get_int(c, "timeout_ms", "target.http.timeout_ms", 1, 3600000, &cfg->http_timeout_ms) < 0 ||
        get_int(c, "concurrency", "target.http.concurrency", 1, 4096, &cfg->http_concurrency) < 0 ||
        get_int(c, "max_response_bytes", "target.http.max_response_bytes", 0, 1 << 30, &maxb) < 0 ||
        get_string(c, "version", "target.http.version", 0, &version) < 0)
        return free(version), -1;
    cfg->http_max_response_bytes = maxb;
    if (version) {
        int v = strcmp(version, "1.1") == 0 ? 11 : strcmp(version, "2") == 0 ? 2 : 0;
        if (!v) fail(c, "target.http.version: expected \"1.1\" or \"2\", got \"%s\"", version);
        free(version);
        if (!v) return -1;
        cfg->http_version = v;
    }
    if (strncmp(cfg->http_url, "http://", 7) != 0 && strncmp(cfg->http_url, "https://", 8) != 0)
        return fail(c, "target.http.url: expected an http:// or https:// URL, got \"%s\"", cfg->http_url);
    return load_http_tls(c) < 0 || load_http_headers(c) < 0 ? -1 : 0;
}

static int load_target(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    static const char *const keys[] = {"http", "lua", "breaker", "retry_budget", NULL};
    int r = push_table(c, "target", "target");
    if (r < 0) return r;
    if (r == 0) return fail(c, "missing required key 'target'");
    if (only_keys(c, "target", keys) < 0 || load_breaker(c) < 0 || load_budget(c) < 0) return lua_pop(L, 1), -1;
    rawfield(L, "http");
    int has_http = !lua_isnil(L, -1);
    lua_pop(L, 1);
    rawfield(L, "lua");
    int has_lua = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (has_http == has_lua) {
        lua_pop(L, 1);
        return fail(c, "target: exactly one of target.http or target.lua is required");
    }
    if (has_lua) {
        cfg->target_kind = EG_TARGET_LUA;
        if (get_string(c, "lua", "target.lua", 1, &cfg->lua_target) < 0 ||
            resolve_file(c, "target.lua", &cfg->lua_target) < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
        return 0;
    }
    cfg->target_kind = EG_TARGET_HTTP;
    if (push_table(c, "http", "target.http") != 1) return lua_pop(L, 1), fail(c, "target.http: expected a table");
    if (load_http(c) < 0) return lua_pop(L, 2), -1;
    lua_pop(L, 2);
    return 0;
}

/* A lane template may use {topic}; a rung template must also name the rung
 * with {rung} (or its alias {delay}). */
static int check_template(loadctx *c, const char *name, const char *t, int rung) {
    int has_rung = 0;
    for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
        int is_rung = strncmp(p, "{rung}", 6) == 0 || strncmp(p, "{delay}", 7) == 0;
        has_rung |= is_rung;
        if (strncmp(p, "{topic}", 7) != 0 && !(rung && is_rung))
            return fail(c, "%s: unknown placeholder in \"%s\" (known: {topic}%s)", name, t,
                        rung ? ", {rung}" : "");
    }
    if (!*t) return fail(c, "%s: empty topic template", name);
    if (rung && !has_rung) return fail(c, "%s: \"%s\" must contain {rung}", name, t);
    return 0;
}

/* lanes.spill = { dir = ..., after_ms = ... } */
static int load_spill(loadctx *c) {
    static const char *const keys[] = {"dir", "after_ms", NULL};
    int r = push_table(c, "spill", "lanes.spill");
    if (r <= 0) return r;
    if (only_keys(c, "lanes.spill", keys) < 0 ||
        get_string(c, "dir", "lanes.spill.dir", 1, &c->cfg->spill_dir) < 0 ||
        get_int(c, "after_ms", "lanes.spill.after_ms", 1, 3600000, &c->cfg->spill_after_ms) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (c->cfg->spill_dir[0] != '/') {
        size_t n = strlen(c->dir) + strlen(c->cfg->spill_dir) + 2;
        char *abs = eg_xmalloc(n);
        snprintf(abs, n, "%s/%s", c->dir, c->cfg->spill_dir);
        free(c->cfg->spill_dir);
        c->cfg->spill_dir = abs;
    }
    return 0;
}

/* The three lane templates of cfg, with their key names. */
static const char *const lane_names[3] = {"dlq", "quarantine", "retry"};
static void lane_templates(const eg_config *cfg, const char *tmpl[3]) {
    tmpl[0] = cfg->lane_dlq;
    tmpl[1] = cfg->lane_quarantine;
    tmpl[2] = cfg->lane_retry;
}

/* The literal text a regex source starts with, unescaped ("^src\\.a.*"
 * gives "src.a"): a sample of the topic names it matches, into out. */
static void regex_prefix(const char *re, char *out, size_t outlen) {
    size_t n = 0;
    for (const char *p = re + 1; *p && n + 1 < outlen; p++) {
        if (*p == '\\' && p[1] && strchr(".-_", p[1])) out[n++] = *++p;
        else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                 *p == '-')
            out[n++] = *p;
        else break;
    }
    out[n] = '\0';
}

/* A regex source must not match the gateway's own lanes. The lanes derive
 * from the topics the regexes match, which are unknown here; so the check
 * takes samples: each literal source topic, and each regex's literal prefix
 * with nothing, "x" or "1" after it (when that regex matches the sample);
 * every lane of every sample must escape every regex. At assignment time
 * the gateway also drops a matched topic that is a lane of one of its
 * sources (eg_config_own_lane). */
static int check_regex_lanes(loadctx *c) {
    const eg_config *cfg = c->cfg;
    const char *tmpl[3];
    lane_templates(cfg, tmpl);
    int n = cfg->ntopics, rc = 0;
    regex_t *re = eg_xcalloc((size_t)n, sizeof *re);
    char (*samples)[256] = eg_xcalloc((size_t)n * 4, sizeof *samples);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        if (!eg_topic_is_regex(cfg->topics[i])) {
            snprintf(samples[ns++], sizeof samples[0], "%s", cfg->topics[i]);
            continue;
        }
        regcomp(&re[i], cfg->topics[i], REG_EXTENDED | REG_NOSUB); /* checked in load_source */
        char pre[240];
        regex_prefix(cfg->topics[i], pre, sizeof pre);
        for (int k = 0; k < 3; k++) {
            snprintf(samples[ns], sizeof samples[0], "%s%s", pre, k == 0 ? "" : k == 1 ? "x" : "1");
            if (regexec(&re[i], samples[ns], 0, NULL, 0) == 0) ns++;
        }
    }
    for (int s = 0; s < ns && rc == 0; s++)
        for (int j = 0; j < 3 && rc == 0; j++) {
            char *lane = eg_lane_topic(tmpl[j], samples[s], "30s");
            for (int i = 0; i < n && rc == 0; i++)
                if (eg_topic_is_regex(cfg->topics[i]) && regexec(&re[i], lane, 0, NULL, 0) == 0)
                    rc = fail(c, "source.topics[%d]: the pattern \"%s\" also matches the lane topic \"%s\" "
                                 "(lanes.%s of \"%s\"): the gateway would consume its own lanes; narrow the "
                                 "pattern (e.g. end it with $)",
                              i + 1, cfg->topics[i], lane, lane_names[j], samples[s]);
            free(lane);
        }
    for (int i = 0; i < n; i++)
        if (eg_topic_is_regex(cfg->topics[i])) regfree(&re[i]);
    free(re);
    free(samples);
    return rc;
}

static int load_lanes(loadctx *c) {
    static const char *const keys[] = {"dlq", "quarantine", "retry", "spill", NULL};
    int r = push_table(c, "lanes", "lanes");
    if (r < 0) return r;
    if (r == 1) {
        if (only_keys(c, "lanes", keys) < 0 ||
            get_string(c, "dlq", "lanes.dlq", 0, &c->cfg->lane_dlq) < 0 ||
            get_string(c, "quarantine", "lanes.quarantine", 0, &c->cfg->lane_quarantine) < 0 ||
            get_string(c, "retry", "lanes.retry", 0, &c->cfg->lane_retry) < 0 || load_spill(c) < 0)
            return lua_pop(c->L, 1), -1;
        lua_pop(c->L, 1);
    }
    if (check_template(c, "lanes.dlq", c->cfg->lane_dlq, 0) < 0 ||
        check_template(c, "lanes.quarantine", c->cfg->lane_quarantine, 0) < 0 ||
        check_template(c, "lanes.retry", c->cfg->lane_retry, 1) < 0)
        return -1;
    const char *tmpl[3];
    lane_templates(c->cfg, tmpl);
    for (int i = 0; i < c->cfg->ntopics; i++) {
        for (int j = 0; j < 3; j++) {
            char *lane = eg_lane_topic(tmpl[j], c->cfg->topics[i], "x");
            int same = 0;
            for (int k = 0; k < c->cfg->ntopics; k++) same |= strcmp(lane, c->cfg->topics[k]) == 0;
            if (same) {
                fail(c, "lanes.%s: lane topic \"%s\" is also a source topic", lane_names[j], lane);
                free(lane);
                return -1;
            }
            free(lane);
        }
    }
    return check_regex_lanes(c);
}

/* The optional `admin` table; its presence turns the admin endpoint on. */
static int load_admin(loadctx *c) {
    static const char *const keys[] = {"listen", "token_file", "ready_lane_failure_ms", "max_connections", NULL};
    int r = push_table(c, "admin", "admin");
    if (r <= 0) return r;
    c->cfg->admin_enabled = 1;
    if (only_keys(c, "admin", keys) < 0 ||
        get_string(c, "listen", "admin.listen", 0, &c->cfg->admin_listen) < 0 ||
        get_string(c, "token_file", "admin.token_file", 0, &c->cfg->admin_token_file) < 0 ||
        get_int(c, "ready_lane_failure_ms", "admin.ready_lane_failure_ms", 0, 3600000,
                &c->cfg->ready_lane_failure_ms) < 0 ||
        get_int(c, "max_connections", "admin.max_connections", 1, 65536, &c->cfg->admin_max_connections) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    const char *colon = strrchr(c->cfg->admin_listen, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == c->cfg->admin_listen || !end || *end || end == colon + 1 || port < 0 || port > 65535)
        return fail(c, "admin.listen: expected \"host:port\", got \"%s\"", c->cfg->admin_listen);
    if (c->cfg->admin_token_file && resolve_file(c, "admin.token_file", &c->cfg->admin_token_file) < 0) return -1;
    return 0;
}

static void set_defaults(eg_config *cfg) {
    cfg->ordering = EG_ORDER_PARTITION;
    cfg->max_inflight = 1000;
    cfg->max_inflight_total = 5000;
    cfg->not_before_max_ms = 86400000; /* 24 h */
    cfg->http_timeout_ms = 5000;
    cfg->http_concurrency = 64;
    cfg->http_version = 11;
    cfg->http_max_response_bytes = 65536;
    cfg->http_verify = 1;
    cfg->lane_dlq = eg_xstrdup("{topic}.dlq");
    cfg->lane_quarantine = eg_xstrdup("{topic}.quarantine");
    cfg->lane_retry = eg_xstrdup("{topic}.retry.{rung}");
    cfg->spill_after_ms = 5000;
    cfg->breaker_window = 50;
    cfg->breaker_min_calls = 20;
    cfg->breaker_failure_ratio = 0.5;
    cfg->breaker_open_ms = 5000;
    cfg->breaker_probes = 2;
    cfg->budget_percent = 20;
    cfg->budget_min = 3;
    cfg->policy_memory_mb = 64;
    cfg->commit_interval_ms = 1000;
    cfg->shutdown_timeout_ms = 10000;
    cfg->policy_timeout_ms = 50;
    cfg->log_level = eg_xstrdup("info");
    cfg->log_format = eg_xstrdup("json");
    cfg->admin_listen = eg_xstrdup("127.0.0.1:9464");
    cfg->ready_lane_failure_ms = 10000;
    cfg->admin_max_connections = 64;
}

static int load_all(loadctx *c) {
    static const char *const keys[] = {"kafka", "group", "source", "target", "policy", "lanes",
                                       "commit_interval_ms", "shutdown_timeout_ms",
                                       "policy_timeout_ms", "policy_memory_mb", "log", "admin", NULL};
    static const char *const log_keys[] = {"level", "format", NULL};
    eg_config *cfg = c->cfg;
    lua_State *L = c->L;
    if (only_keys(c, "", keys) < 0) return -1;
    if (load_kafka(c) < 0) return -1;
    if (get_string(c, "group", "group", 1, &cfg->group) < 0) return -1;
    if (load_source(c) < 0 || load_target(c) < 0) return -1;
    if (get_string(c, "policy", "policy", 1, &cfg->policy) < 0 ||
        resolve_file(c, "policy", &cfg->policy) < 0)
        return -1;
    if (load_lanes(c) < 0) return -1;
    if (get_int(c, "commit_interval_ms", "commit_interval_ms", 10, 600000, &cfg->commit_interval_ms) < 0 ||
        get_int(c, "shutdown_timeout_ms", "shutdown_timeout_ms", 0, 3600000, &cfg->shutdown_timeout_ms) < 0 ||
        get_int(c, "policy_timeout_ms", "policy_timeout_ms", 1, 60000, &cfg->policy_timeout_ms) < 0 ||
        get_int(c, "policy_memory_mb", "policy_memory_mb", 4, 4096, &cfg->policy_memory_mb) < 0)
        return -1;
    int r = push_table(c, "log", "log");
    if (r < 0) return -1;
    if (r == 1) {
        if (only_keys(c, "log", log_keys) < 0 ||
            get_string(c, "level", "log.level", 0, &cfg->log_level) < 0 ||
            get_string(c, "format", "log.format", 0, &cfg->log_format) < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
        const char *lv = cfg->log_level;
        if (strcmp(lv, "debug") && strcmp(lv, "info") && strcmp(lv, "warn") && strcmp(lv, "error"))
            return fail(c, "log.level: expected debug, info, warn or error, got \"%s\"", lv);
        if (strcmp(cfg->log_format, "json") && strcmp(cfg->log_format, "text"))
            return fail(c, "log.format: expected json or text, got \"%s\"", cfg->log_format);
    }
    if (load_admin(c) < 0) return -1;
    if (!eg_config_kafka(cfg, "bootstrap.servers")) {
        const char *env = getenv("ERRGATE_BOOTSTRAP");
        if (!env || !*env)
            return fail(c, "kafka.bootstrap.servers is not set and ERRGATE_BOOTSTRAP is empty");
        cfg->kafka = eg_xrealloc(cfg->kafka, (size_t)(cfg->nkafka + 1) * sizeof(eg_kv));
        cfg->kafka[cfg->nkafka].key = eg_xstrdup("bootstrap.servers");
        cfg->kafka[cfg->nkafka].val = eg_xstrdup(env);
        cfg->nkafka++;
    }
    return 0;
}

int eg_config_from_table(lua_State *L, const char *path, eg_config *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    cfg->path = eg_xstrdup(path);
    set_defaults(cfg);
    char *tmp = eg_xstrdup(path);
    loadctx c = {.L = L, .cfg = cfg, .dir = eg_xstrdup(dirname(tmp)), .err = err, .errlen = errlen};
    free(tmp);
    int top = lua_gettop(L), rc;
    if (lua_type(L, -1) != LUA_TTABLE)
        rc = fail(&c, "the file must return a table (got %s)", lua_typename(L, lua_type(L, -1)));
    else
        rc = load_all(&c);
    lua_settop(L, top);
    free(c.dir);
    if (rc != 0) eg_config_free(cfg);
    return rc;
}

int eg_config_load(const char *path, eg_config *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    lua_State *L = luaL_newstate();
    if (!L) {
        snprintf(err, errlen, "config %s: cannot create a Lua state", path);
        return -1;
    }
    luaL_openlibs(L);
    int rc = -1;
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "config %s: cannot read file", path);
    } else if (luaL_loadfile(L, path) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
        const char *m = lua_tostring(L, -1);
        snprintf(err, errlen, "config %s", m ? m : "(error object is not a string)");
    } else {
        rc = eg_config_from_table(L, path, cfg, err, errlen);
    }
    lua_close(L);
    return rc;
}

void eg_config_free(eg_config *cfg) {
    for (int i = 0; i < cfg->nkafka; i++) {
        free(cfg->kafka[i].key);
        free(cfg->kafka[i].val);
    }
    free(cfg->kafka);
    for (int i = 0; i < cfg->ntopics; i++) free(cfg->topics[i]);
    free(cfg->topics);
    free(cfg->path);
    free(cfg->group);
    free(cfg->http_url);
    free(cfg->http_ca_file);
    free(cfg->http_cert_file);
    free(cfg->http_key_file);
    free(cfg->http_server_name);
    for (int i = 0; i < cfg->nhttp_headers; i++) {
        free(cfg->http_headers[i].name);
        free(cfg->http_headers[i].value);
        free(cfg->http_headers[i].file);
    }
    free(cfg->http_headers);
    free(cfg->lua_target);
    free(cfg->policy);
    free(cfg->lane_dlq);
    free(cfg->lane_quarantine);
    free(cfg->lane_retry);
    free(cfg->spill_dir);
    free(cfg->log_level);
    free(cfg->log_format);
    free(cfg->admin_listen);
    free(cfg->admin_token_file);
    memset(cfg, 0, sizeof *cfg);
}

const char *eg_config_kafka(const eg_config *cfg, const char *key) {
    for (int i = 0; i < cfg->nkafka; i++)
        if (strcmp(cfg->kafka[i].key, key) == 0) return cfg->kafka[i].val;
    return NULL;
}

/* The placeholder at p and its value, or 0 when p starts none. */
static size_t placeholder(const char *p, const char *topic, const char *rung, const char **val) {
    if (strncmp(p, "{topic}", 7) == 0) return *val = topic, 7;
    if (rung && strncmp(p, "{rung}", 6) == 0) return *val = rung, 6;
    if (rung && strncmp(p, "{delay}", 7) == 0) return *val = rung, 7;
    return 0;
}

char *eg_lane_topic(const char *tmpl, const char *topic, const char *rung) {
    size_t n = 1, k;
    const char *v;
    for (const char *p = tmpl; *p;) {
        if ((k = placeholder(p, topic, rung, &v))) { n += strlen(v); p += k; }
        else { n++; p++; }
    }
    char *out = eg_xmalloc(n), *o = out;
    for (const char *p = tmpl; *p;) {
        if ((k = placeholder(p, topic, rung, &v))) { memcpy(o, v, strlen(v)); o += strlen(v); p += k; }
        else *o++ = *p++;
    }
    *o = '\0';
    return out;
}

int eg_topic_is_regex(const char *topic) { return topic[0] == '^'; }

/* True when x (n bytes) is one of the config's source topics: a literal
 * one, or a topic a source regex matches. */
static int is_source(const eg_config *cfg, const char *x, size_t n) {
    char name[EG_TOPIC_NAME_MAX + 1];
    if (n > EG_TOPIC_NAME_MAX) return 0;
    memcpy(name, x, n);
    name[n] = '\0';
    for (int i = 0; i < cfg->ntopics; i++) {
        if (!eg_topic_is_regex(cfg->topics[i])) {
            if (strcmp(cfg->topics[i], name) == 0) return 1;
            continue;
        }
        regex_t re;
        if (regcomp(&re, cfg->topics[i], REG_EXTENDED | REG_NOSUB) != 0) continue;
        int m = regexec(&re, name, 0, NULL, 0) == 0;
        regfree(&re);
        if (m) return 1;
    }
    return 0;
}

/* Matches topic against template t, where {topic}, {rung} and {delay}
 * stand for one or more characters, and what {topic} stands for must be a
 * source topic of cfg. */
static int own_lane_match(const eg_config *cfg, const char *t, const char *topic) {
    if (!*t) return !*topic;
    const char *v;
    size_t k = placeholder(t, "", "", &v);
    if (!k) return *t == *topic && own_lane_match(cfg, t + 1, topic + 1);
    int is_topic = strncmp(t, "{topic}", 7) == 0;
    for (size_t len = 1; len <= strlen(topic); len++)
        if (own_lane_match(cfg, t + k, topic + len) && (!is_topic || is_source(cfg, topic, len))) return 1;
    return 0;
}

int eg_config_own_lane(const eg_config *cfg, const char *topic, const char **lane) {
    const char *tmpl[3];
    lane_templates(cfg, tmpl);
    for (int j = 0; j < 3; j++)
        if (own_lane_match(cfg, tmpl[j], topic)) {
            if (lane) *lane = lane_names[j];
            return 1;
        }
    return 0;
}
