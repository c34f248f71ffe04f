/* test_config.c — the config loader, driven by its own key table: for every
 * key of eg_config_keys, a value of the wrong type, one below and one above
 * its bounds, and an unknown choice are refused with one line naming the
 * key; every table refuses an unknown key; every default is within its
 * bounds and is what a config without the key gets. The loader of every
 * -c (eg_config_load) runs the file sandboxed and bounded: no process, file
 * or code loading, bytecode refused, a loop stopped by the budget, a memory
 * bomb by the cap, SIGTERM ending a slow load at once; every shipped example
 * config still loads. */
#include "config.h"
#include "parse.h"
#include "log.h"
#include "tap.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Every optional table present (with its required keys), so that each key
 * can be set alone. */
static const char *BASE = "return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g',"
                          " source = { topics = { 'src' } },"
                          " target = { http = { url = 'https://h/', tls = {} }, breaker = {},"
                          " retry_budget = { key = { header = 'tenant' } }, rate = { per_second = 5 }, adaptive = {} },"
                          " policy = 'policy.lua', lanes = { spill = { dir = 'spill' } }, log = {}, admin = {},"
                          " dlq_guard = { max_per_second = 5 } }";

static char dir[64], path[128], err[512];

/* Loads BASE with key (a dotted path; "*" becomes "X-A") set to the Lua
 * expression val (or BASE alone when key is NULL). Returns the loader's
 * result; err holds its message. */
static int load_with(const char *key, const char *val, eg_config *cfg) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    char code[2048];
    int n = snprintf(code, sizeof code, "local c = (function() %s end)()\nlocal t = c\n", BASE);
    if (key) {
        char k[128];
        snprintf(k, sizeof k, "%s", key);
        char *save, *seg = strtok_r(k, ".", &save);
        while (seg) {
            char *next = strtok_r(NULL, ".", &save);
            const char *name = strcmp(seg, "*") == 0 ? "X-A" : seg;
            if (next)
                n += snprintf(code + n, sizeof code - (size_t)n, "t['%s'] = t['%s'] or {}; t = t['%s']\n", name, name,
                              name);
            else n += snprintf(code + n, sizeof code - (size_t)n, "t['%s'] = %s\n", name, val);
            seg = next;
        }
    }
    snprintf(code + n, sizeof code - (size_t)n, "return c");
    if (luaL_dostring(L, code) != 0) {
        printf("# lua: %s\n", lua_tostring(L, -1));
        lua_close(L);
        return -2;
    }
    err[0] = '\0';
    int rc = eg_config_from_table(L, path, cfg, err, sizeof err);
    lua_close(L);
    return rc;
}

/* 1 when setting key to val is refused with one line that contains want. */
static int refused(const char *key, const char *val, const char *want) {
    eg_config cfg;
    if (load_with(key, val, &cfg) == 0) {
        eg_config_free(&cfg);
        printf("# %s = %s was accepted\n", key, val);
        return 0;
    }
    int ok = strstr(err, want) && !strchr(err, '\n') && strncmp(err, "config ", 7) == 0;
    if (!ok) printf("# %s = %s: got \"%s\", want \"%s\"\n", key, val, err, want);
    return ok;
}

static void write_file(const char *name, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

/* The value of a scalar key's field in cfg, as a double. */
static double field_value(const eg_config *cfg, const eg_config_key *e) {
    const char *f = (const char *)cfg + e->off;
    if (e->type == EG_CK_NUMBER) return *(const double *)f;
    int v;
    memcpy(&v, f, sizeof v);
    return v;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes text as DIR/hostile.lua and loads it with eg_config_load. Returns
 * its result (err holds the message, *secs the time it took). */
static int load_file(const char *text, double *secs) {
    write_file("hostile.lua", text);
    char p[256];
    snprintf(p, sizeof p, "%s/hostile.lua", dir);
    eg_config cfg;
    err[0] = '\0';
    double t0 = now_s();
    int rc = eg_config_load(p, &cfg, err, sizeof err);
    if (secs) *secs = now_s() - t0;
    if (rc == 0) eg_config_free(&cfg);
    unlink(p);
    return rc;
}

/* 1 when the file text is refused with one line "config ..." holding want. */
static int file_refused(const char *text, const char *want) {
    if (load_file(text, NULL) == 0) {
        printf("# accepted: %s\n", text);
        return 0;
    }
    int ok = strstr(err, want) && !strchr(err, '\n') && strncmp(err, "config ", 7) == 0;
    if (!ok) printf("# %s: got \"%s\", want \"%s\"\n", text, err, want);
    return ok;
}

/* A thread (every signal blocked) that sends the process SIGTERM after
 * 300 ms: the loader's thread is the one that takes it. */
static void *term_later(void *arg) {
    (void)arg;
    nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
    kill(getpid(), SIGTERM);
    return NULL;
}

/* The sandbox and the bounds of eg_config_load (issue 28, item 3). */
static void test_sandbox(void) {
    char pwned[200], text[600];
    snprintf(pwned, sizeof pwned, "%s/pwned", dir);
    snprintf(text, sizeof text, "os.execute('touch %s') return {}", pwned);
    CHECK(file_refused(text, "os.execute is not available in a config") && access(pwned, F_OK) != 0,
          "os.execute is refused with a clear error, and ran nothing");
    static const char *const refused_calls[][2] = {
        {"io.open('%s/w', 'w')", "io is not available"},
        {"os.remove('%s/policy.lua')", "os.remove is not available"},
        {"os.rename('%s/policy.lua', '/tmp/x')", "os.rename is not available"},
        {"os.exit(0) -- %s", "os.exit is not available"},
        {"os.tmpname() -- %s", "os.tmpname is not available"},
        {"dofile('%s/policy.lua')", "dofile is not available"},
        {"loadfile('%s/policy.lua')", "loadfile is not available"},
        {"loadstring('return 1') -- %s", "loadstring is not available"},
        {"require('os') -- %s", "require is not available"},
        {"package.loadlib('%s/x.so', 'f')", "package is not available"},
        {"debug.sethook() -- %s", "debug is not available"},
        {"ffi.C.system('true') -- %s", "ffi is not available"},
        {"string.dump(print) -- %s", "string.dump is not available"},
        {"getmetatable('').__index.dump(function() end) -- %s", "getmetatable is not available"},
    };
    for (size_t i = 0; i < sizeof refused_calls / sizeof refused_calls[0]; i++) {
        char call[300];
        snprintf(call, sizeof call, refused_calls[i][0], dir);
        snprintf(text, sizeof text, "%s\nreturn {}", call);
        CHECK(file_refused(text, refused_calls[i][1]), "refused: %s", refused_calls[i][0]);
    }
    CHECK(file_refused("local d = ('').dump\nif d then d(function() end) end\nreturn nil", "must return a table"),
          "('').dump is nil: bytecode cannot be made");
    CHECK(file_refused("\033LJ\002\000", "bytecode is refused"), "a bytecode file is refused");

    double secs;
    int rc = load_file("while true do end", &secs);
    CHECK(rc != 0 && strstr(err, "still running after 2000 ms") && secs < EG_CONFIG_BUDGET_MS / 1000.0 + 1,
          "while true do end ends with a clear error within the budget (%.2f s: %s)", secs, err);
    rc = load_file("while true do pcall(function() while true do end end) end", &secs);
    CHECK(rc != 0 && strstr(err, "still running") && secs < EG_CONFIG_BUDGET_MS / 1000.0 + 1,
          "a pcall in the config cannot swallow the budget (%.2f s)", secs);
    rc = load_file("local t = {} for i = 1, 1e9 do t[i] = { i } end return t", &secs);
    CHECK(rc != 0 && strstr(err, "used more than 64 MiB") && secs < EG_CONFIG_BUDGET_MS / 1000.0,
          "a table bomb ends at the memory cap with a clear error (%.2f s: %s)", secs, err);
    rc = load_file("local s = string.rep('x', 2^28) return {}", &secs);
    CHECK(rc != 0 && strstr(err, "used more than 64 MiB"), "a string bomb ends at the memory cap (%s)", err);

    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_create(&t, NULL, term_later, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    rc = load_file("local t0 = os.clock() while os.clock() - t0 < 1.8 do end return {}", &secs);
    pthread_join(t, NULL);
    CHECK(rc != 0 && strstr(err, "loading interrupted by SIGTERM") && secs < 0.8,
          "SIGTERM during a slow load ends it at once (%.2f s: %s)", secs, err);
    struct sigaction sa;
    sigaction(SIGTERM, NULL, &sa);
    CHECK(sa.sa_handler == SIG_DFL, "SIGTERM's disposition is restored after the load");

    snprintf(text, sizeof text,
             "local home = os.getenv('HOME') or '/' local y = os.date('!%%Y', os.time())\n"
             "assert(os.clock() >= 0 and os.difftime(2, 1) == 1 and tonumber(y) > 2000)\n"
             "return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g' .. string.upper('x'),"
             " source = { topics = { 'src' } }, target = { http = { url = 'http://h/' } }, policy = 'policy.lua' }");
    CHECK(load_file(text, NULL) == 0, "os.getenv, os.time, os.date, os.clock and string work in a config (%s)", err);

    static const char *const shipped[] = {"examples/demo.lua", "examples/dlq-ops/config.lua",
                                          "examples/inbox/config.lua", "examples/incident/config.lua",
                                          "examples/payments/config.lua"};
    setenv("ERRGATE_BOOTSTRAP", "localhost:9092", 1);
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        eg_config cfg;
        rc = eg_config_load(shipped[i], &cfg, err, sizeof err);
        CHECK(rc == 0, "the shipped %s loads (%s)", shipped[i], rc ? err : "ok");
        if (rc == 0) eg_config_free(&cfg);
    }
    unsetenv("ERRGATE_BOOTSTRAP");
}

/* Several sources (config_sources.c): what a source's config is made of,
 * and what picking one means. */
static void test_sources(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/multi.lua", dir);
    write_file("beta.lua", "return {}\n");
    write_file("multi.lua",
               "return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g', policy = 'policy.lua',\n"
               " target = { http = { url = 'http://h1/' } }, lanes = { spill = { dir = 'spill' } },\n"
               " sources = {\n"
               "  { name = 'alpha', topics = { 'a' }, ordering = 'key', fence = 'ladder' },\n"
               "  { name = 'beta', topics = { 'b' }, policy = 'beta.lua', target = { http = { url = 'http://h2/' } },\n"
               "    lanes = { dlq = '{topic}.dead', spill = { dir = 'spill' } }, on_stop = 'wait' } } }\n");
    eg_config a, b;
    int ra = eg_config_load_source(p, "alpha", &a, err, sizeof err);
    CHECK(ra == 0, "a source of several loads by name (%s)", err);
    int rb = eg_config_load_source(p, "beta", &b, err, sizeof err);
    CHECK(rb == 0, "so does the other (%s)", err);
    if (ra == 0 && rb == 0) {
        CHECK(a.ntopics == 1 && !strcmp(a.topics[0], "a") && a.ordering == EG_ORDER_KEY && a.fence == EG_FENCE_LADDER &&
                  b.ordering == EG_ORDER_PARTITION,
              "each has its entry's source keys (topics, ordering, fence)");
        CHECK(strstr(a.policy, "/policy.lua") && strstr(b.policy, "/beta.lua") && !strcmp(a.http_url, "http://h1/") &&
                  !strcmp(b.http_url, "http://h2/"),
              "an entry's policy and target replace the top level's; the other inherits them");
        CHECK(!strcmp(a.lane_dlq, EG_DEF_LANE_DLQ) && !strcmp(b.lane_dlq, "{topic}.dead") && !a.on_stop_wait &&
                  b.on_stop_wait,
              "lanes and on_stop likewise (the entry's lanes whole)");
        CHECK(!strcmp(a.scope, "g.alpha") && !strcmp(b.scope, "g.beta") && !strcmp(a.group, "g") &&
                  !strcmp(b.group, "g"),
              "one group; control records scoped GROUP.NAME");
        size_t al = strlen(a.spill_dir), bl = strlen(b.spill_dir);
        CHECK(al > 12 && !strcmp(a.spill_dir + al - 12, "/spill/alpha") && bl > 11 &&
                  !strcmp(b.spill_dir + bl - 11, "/spill/beta"),
              "each source's spill journal is DIR/NAME (%s, %s)", a.spill_dir, b.spill_dir);
        CHECK(a.nsources == 2 && !strcmp(a.source_name, "alpha") && a.admin_fd == -1, "it knows its name and count");
    }
    if (ra == 0) eg_config_free(&a);
    if (rb == 0) eg_config_free(&b);
    eg_config c;
    CHECK(eg_config_load(p, &c, err, sizeof err) != 0 && strstr(err, "2 sources (alpha, beta): name one with --source"),
          "without a name, a file of several sources is refused naming them (%s)", err);
    int rc = eg_config_load_source(p, EG_ANY_SOURCE, &c, err, sizeof err);
    CHECK(rc == 0 && !strcmp(c.source_name, "alpha"), "EG_ANY_SOURCE takes the first");
    if (rc == 0) eg_config_free(&c);
    char **names = NULL;
    int n = 0;
    rc = eg_config_source_names(p, &names, &n, err, sizeof err);
    CHECK(rc == 0 && n == 2 && !strcmp(names[0], "alpha") && !strcmp(names[1], "beta"), "the names, in file order");
    eg_config_free_names(names, n);
    char one[256];
    snprintf(one, sizeof one, "%s/errgate.lua", dir);
    write_file("errgate.lua", BASE);
    rc = eg_config_load_source(one, NULL, &c, err, sizeof err);
    CHECK(rc == 0 && c.nsources == 0 && !c.source_name && !strcmp(c.scope, "g"),
          "the single-source form: no name, scope = the group");
    if (rc == 0) eg_config_free(&c);
    rc = eg_config_source_names(one, &names, &n, err, sizeof err);
    CHECK(rc == 0 && n == 0 && !names, "... and no names");
    CHECK(eg_config_load_source(one, "x", &c, err, sizeof err) != 0 && strstr(err, "the file has one source"),
          "a name asked of it is refused");
    CHECK(file_refused("local t = setmetatable({ name = 'x' }, { __index = { topics = { 't' } } })\n"
                       "return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g', policy = 'policy.lua',"
                       " target = { http = { url = 'http://h/' } }, sources = { t } }",
                       "source x: source.topics: expected a list"),
          "an entry is read raw: its metatable's keys are not its keys");
    CHECK(file_refused("return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g', policy = 'policy.lua',"
                       " target = { http = { url = 'http://h/' } }, sources = {} }",
                       "sources: 1 to 16 sources"),
          "an empty sources list is refused");
    CHECK(file_refused("return { kafka = { ['bootstrap.servers'] = 'localhost:1' }, group = 'g', policy = 'policy.lua',"
                       " target = { http = { url = 'http://h/' } }, sources = { { name = 'x', topics = { 'a' } },"
                       " { name = 'y', topics = { 'b' }, lanes = { retry = 'r.{rung}' } },"
                       " { name = 'z', topics = { 'c' }, lanes = { retry = 'r.{rung}' } } } }",
                       "sources y and z share lanes.retry \"r.{rung}\""),
          "two sources sharing a rung template without {topic} are refused");
    unlink(p);
    unlink(one);
    snprintf(p, sizeof p, "%s/beta.lua", dir);
    unlink(p);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/eg-test-config.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/errgate.lua", dir);
    write_file("policy.lua", "return {}\n");

    eg_config cfg;
    int rc = load_with(NULL, NULL, &cfg);
    CHECK(rc == 0, "the base config loads (%s)", err);
    if (rc != 0) return TAP_DONE();
    int defaults_ok = 1;
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        if (e->off == EG_CK_NOFIELD || (e->flags & EG_CK_CUSTOM) || e->def_str || e->type == EG_CK_STRING ||
            e->type == EG_CK_ENUM)
            continue;
        double v = field_value(&cfg, e);
        if (v != e->def) {
            printf("# %s: %g, default %g\n", e->key, v, e->def);
            defaults_ok = 0;
        }
        if (e->type != EG_CK_BOOL && !(e->def >= e->min && e->def <= e->max)) {
            printf("# %s: default %g outside [%g, %g]\n", e->key, e->def, e->min, e->max);
            defaults_ok = 0;
        }
    }
    CHECK(defaults_ok, "a config without a key gets its default, within its bounds");
    CHECK(cfg.max_inflight == EG_DEF_MAX_INFLIGHT && cfg.max_tracked == EG_DEF_MAX_TRACKED && cfg.http_version == 11 &&
              cfg.ordering == EG_ORDER_PARTITION && cfg.log_level == EG_INFO &&
              !strcmp(cfg.lane_retry, EG_DEF_LANE_RETRY) && !strcmp(cfg.admin_listen, EG_DEF_ADMIN_LISTEN),
          "the named defaults: max_inflight, max_tracked, version, ordering, log.level, lanes.retry, admin.listen");
    CHECK(cfg.breaker_enabled && cfg.budget_enabled && cfg.admin_enabled,
          "a present breaker, retry_budget or admin table turns its feature on");
    eg_config_free(&cfg);

    char want[256], val[64];
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        const char *k = e->key;
        if (e->type == EG_CK_TABLE && !(e->flags & EG_CK_CUSTOM)) {
            char unknown[160];
            snprintf(unknown, sizeof unknown, "%s.no_such_key", k);
            snprintf(want, sizeof want, "unknown key '%s'", unknown);
            CHECK(refused(unknown, "1", want), "%s: an unknown key is refused naming it", k);
            continue;
        }
        if (e->flags & EG_CK_CUSTOM) continue;
        switch (e->type) {
        case EG_CK_INT:
        case EG_CK_NUMBER:
            snprintf(want, sizeof want, "%s: expected %s", k, e->type == EG_CK_INT ? "an integer" : "a number");
            CHECK(refused(k, "'12'", want), "%s: a string is refused", k);
            snprintf(want, sizeof want, "%s: ", k);
            snprintf(val, sizeof val, "%.17g", e->min - (e->type == EG_CK_INT ? 1 : 0.001));
            CHECK(refused(k, val, "is out of range") && refused(k, val, want), "%s: %s (below the minimum) is refused",
                  k, val);
            snprintf(val, sizeof val, "%.17g", e->max + (e->type == EG_CK_INT ? 1 : 0.001));
            CHECK(refused(k, val, "is out of range") && refused(k, val, want), "%s: %s (above the maximum) is refused",
                  k, val);
            if (e->type == EG_CK_INT) {
                snprintf(want, sizeof want, "%s: expected an integer", k);
                CHECK(refused(k, "1.5", want), "%s: a fraction is refused", k);
            }
            break;
        case EG_CK_DURATION: {
            char shown[32], oldk[128];
            snprintf(want, sizeof want, "%s: invalid duration \"12\": a unit is required", k);
            CHECK(refused(k, "'12'", want), "%s: a string without a unit is refused", k);
            snprintf(want, sizeof want, "%s: expected a duration", k);
            CHECK(refused(k, "{}", want), "%s: a table is refused", k);
            snprintf(want, sizeof want, "%s: expected a whole number", k);
            CHECK(refused(k, "1.5", want), "%s: a fraction of its unit is refused", k);
            snprintf(val, sizeof val, "%.17g", e->max + 1);
            snprintf(want, sizeof want, "%s: out of range", k);
            CHECK(refused(k, val, want), "%s: %s (above the maximum) is refused", k, val);
            /* the default written as a unit string reads as the default */
            long long ms = (long long)e->def * e->unit;
            snprintf(shown, sizeof shown, "'%lldms'", ms);
            int ok = load_with(k, shown, &cfg) == 0;
            CHECK(ok && field_value(&cfg, e) == e->def, "%s = %s reads as its default %g (%s)", k, shown, e->def, err);
            if (ok) eg_config_free(&cfg);
            if (!e->old) break;
            /* the former name: still read, with the same value */
            snprintf(val, sizeof val, "%.17g", e->def);
            snprintf(oldk, sizeof oldk, "%s", e->old);
            ok = load_with(oldk, val, &cfg) == 0;
            CHECK(ok && field_value(&cfg, e) == e->def, "its former name %s is still read (%s)", e->old, err);
            if (ok) eg_config_free(&cfg);
            break;
        }
        case EG_CK_BOOL:
            snprintf(want, sizeof want, "%s: expected true or false", k);
            CHECK(refused(k, "'yes'", want), "%s: a string is refused", k);
            break;
        case EG_CK_STRING:
        case EG_CK_ENUM:
            snprintf(want, sizeof want, "%s: expected a string, got number", k);
            CHECK(refused(k, "5", want), "%s: a number is refused", k);
            if (e->type == EG_CK_ENUM) {
                snprintf(want, sizeof want, "%s: expected \"%s\"", k, e->choices[0]);
                CHECK(refused(k, "'bogus'", want) && refused(k, "'bogus'", "got \"bogus\""),
                      "%s: an unknown choice is refused, the choices listed", k);
            }
            break;
        default: break;
        }
    }
    CHECK(refused("no_such_key", "1", "unknown key 'no_such_key'"), "top level: an unknown key is refused naming it");
    /* durations (DESIGN §5): unit strings, the former _ms/_s names read for one release */
    CHECK(load_with("commit_interval", "'1m30s'", &cfg) == 0 && cfg.commit_interval_ms == 90000,
          "commit_interval = \"1m30s\" is 90000 ms (%s)", err);
    eg_config_free(&cfg);
    CHECK(load_with("target.http.timeout", "' 2.5s '", &cfg) == 0 && cfg.http_timeout_ms == 2500,
          "a fraction and spaces: \" 2.5s \" is 2500 ms (%s)", err);
    eg_config_free(&cfg);
    CHECK(load_with("dlq_guard.window", "'2m'", &cfg) == 0 && cfg.guard_window_s == 120,
          "a key kept in seconds: dlq_guard.window = \"2m\" is 120 s (%s)", err);
    eg_config_free(&cfg);
    CHECK(load_with("dlq_guard.window", "30", &cfg) == 0 && cfg.guard_window_s == 30,
          "a number is read in the key's unit: dlq_guard.window = 30 is 30 s (%s)", err);
    eg_config_free(&cfg);
    CHECK(refused("dlq_guard.window", "'1500ms'", "dlq_guard.window: \"1500ms\" is not a whole number of seconds"),
          "a key kept in seconds refuses a duration that is not whole seconds");
    CHECK(refused("commit_interval", "'5 parsecs'", "commit_interval: invalid duration \"5 parsecs\": unknown unit"),
          "an unknown unit is refused, naming the key");
    CHECK(refused("commit_interval", "'5s\\0x'", "commit_interval: invalid duration"),
          "a duration with a NUL byte is refused");
    CHECK(load_with("commit_interval_ms", "250", &cfg) == 0 && cfg.commit_interval_ms == 250,
          "the former name commit_interval_ms is still read (%s)", err);
    eg_config_free(&cfg);
    {
        /* both names at once: refused, naming both */
        lua_State *L = luaL_newstate();
        char code[1024];
        snprintf(code, sizeof code,
                 "local c = (function() %s end)() c.commit_interval = '1s' c.commit_interval_ms = 5 return c", BASE);
        int rc = luaL_dostring(L, code) == 0 ? eg_config_from_table(L, path, &cfg, err, sizeof err) : -2;
        lua_close(L);
        CHECK(rc == -1 &&
                  strstr(err, "commit_interval and commit_interval_ms are the same setting: keep commit_interval"),
              "a duration set under both names is refused (%s)", err);
        if (rc == 0) eg_config_free(&cfg);
    }
    {
        /* the C parser against lua/errgate/duration.lua's grammar */
        static const struct {
            const char *in;
            long long ms; /* -1: refused */
        } cases[] = {
            {"250ms", 250},   {"5s", 5000},        {"1m", 60000},  {"2h", 7200000},   {"1.5s", 1500},
            {"1m30s", 90000}, {" 1m 30s ", 90000}, {"0.0004s", 0}, {"0.0006s", 1},    {"1.s", 1000},
            {"", -1},         {"   ", -1},         {"100", -1},    {"5d", 432000000}, {"-5s", -1},
            {"5 s", 5000},    {"s5", -1},          {"1e3ms", -1},  {".5s", -1},       {"99999999999999999999h", -1}};
        int all = 1;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int64_t ms = -1;
            const char *why = NULL;
            int rc = eg_parse_duration_text(cases[i].in, &ms, &why);
            long long got = rc == 0 ? (long long)ms : -1;
            if (got != cases[i].ms || (rc != 0 && !why)) {
                printf("# \"%s\": got %lld, want %lld\n", cases[i].in, got, cases[i].ms);
                all = 0;
            }
        }
        CHECK(all, "eg_parse_duration_text reads what errgate.duration reads, and refuses the rest");
    }
    CHECK(refused("target.http.headers.*.path", "'t'", "unknown key 'target.http.headers.X-A.path'"),
          "a header's file table refuses an unknown key, naming the header");
    CHECK(refused("group", "nil", "missing required key 'group'"), "a missing required key is named");
    /* a NUL inside a string would be cut there: refused, naming the key (issue 28) */
    CHECK(refused("group", "'g\\0evil'", "group: contains a NUL byte"), "a group with a NUL byte is refused");
    CHECK(refused("admin.audit_topic", "'a\\0b'", "admin.audit_topic: contains a NUL byte"),
          "any string key with a NUL byte is refused, naming it");
    CHECK(refused("source.inbox", "'auto\\0x'", "source.inbox: contains a NUL byte"),
          "an enum with a NUL byte is refused, not read as its prefix");
    CHECK(refused("source.topics", "{ 'src\\0x' }", "source.topics[1]: contains a NUL byte"),
          "a source topic with a NUL byte is refused");
    CHECK(refused("kafka.acks", "'all\\0x'", "kafka.acks: contains a NUL byte"),
          "a kafka property with a NUL byte is refused");
    CHECK(refused("lanes.spill.dir", "nil", "missing required key 'lanes.spill.dir'"),
          "a missing required key of an optional table is named");
    CHECK(refused("policy", "'nope.lua'", "policy: cannot read file"), "a path key names its unreadable file");
    /* payload protection (lanes.protect): a bad path names its index and byte, a mode needing paths or a
     * key is refused without them */
    CHECK(refused("lanes.protect", "{ dlq = 'mask' }", "lanes.protect: mask needs lanes.protect.paths"),
          "lanes.protect: mask without paths is refused");
    CHECK(refused("lanes.protect", "{ dlq = 'mask', paths = { '$.a', 'card' } }",
                  "lanes.protect.paths[2]: at byte 1: a path starts with $"),
          "lanes.protect.paths: a bad path is refused by index and byte");
    CHECK(refused("lanes.protect", "{ quarantine = 'encrypt' }", "encrypt needs lanes.protect.key_file"),
          "lanes.protect: encrypt without a key file is refused");
    CHECK(refused("lanes.protect", "{ dlq = 'mask', paths = { '$.a' }, hash = true }", "hash needs"),
          "lanes.protect.hash without a key file is refused");
    CHECK(refused("lanes.protect", "{ unmaskable = 'encrypt' }", "unmaskable = \"encrypt\" needs"),
          "lanes.protect.unmaskable = encrypt without a key file is refused");
    CHECK(refused("lanes.protect", "{ dlq = 'rot13' }", "lanes.protect.dlq"), "an unknown mode is refused");
    CHECK(refused("lanes.protect", "{ dlq = 'pointer', paths = 'x' }", "lanes.protect.paths: expected a list"),
          "lanes.protect.paths must be a list");
    CHECK(refused("lanes.protect", "{ dlq = 'pointer', key_file = 'nope.key' }", "cannot read file"),
          "lanes.protect.key_file names an unreadable file");
    {
        eg_config pc;
        int prc = load_with("lanes.protect", "{ dlq = 'pointer', quarantine = 'mask', paths = { '$..cvv' } }", &pc);
        CHECK(prc == 0 && pc.protect_mode[0] == 3 && pc.protect_mode[1] == 1 && pc.nprotect_paths == 1 &&
                  !strcmp(pc.protect_paths[0], "$..cvv") && !strcmp(pc.protect_token, "[masked]"),
              "lanes.protect loads its modes, paths and the default token (%s)", err);
        if (prc == 0) eg_config_free(&pc);
    }
    CHECK(refused("target.breaker.min_calls", "60", "target.breaker.min_calls: 60 is larger than the window"),
          "cross-key checks stay: breaker min_calls above the window");

    /* the limits towards the target (issue 30): one clear error each */
    CHECK(refused("target.rate.per_second", "0", "a rate of 0 or less would send nothing"),
          "a rate of 0 is refused, saying what it would mean");
    CHECK(refused("target.rate.per_second", "-5", "target.rate.per_second: -5 is out of range"),
          "a negative rate is refused");
    CHECK(refused("target.rate.burst", "0.5", "a bucket smaller than one request never lets one through"),
          "a burst below 1 is refused, saying why");
    CHECK(refused("target.rate.per_second", "nil", "missing required key 'target.rate.per_second'"),
          "a rate table without per_second is refused");
    CHECK(refused("target.retry_budget.key", "{ cookie = 'x' }", "unknown key source 'cookie'"),
          "an unknown budget key source is refused, naming it");
    CHECK(refused("target.retry_budget.key", "'tenant'", "target.retry_budget.key: expected a table"),
          "a budget key that is not a table is refused");
    CHECK(refused("target.retry_budget.key.header", "'a b'", "expected a header name"),
          "a budget key header that is no header name is refused");
    CHECK(refused("target.retry_budget.key.header", "nil", "missing required key 'target.retry_budget.key.header'"),
          "a key table without its header is refused");
    CHECK(refused("target.adaptive", "'yes'", "target.adaptive (true or a table): expected a table"),
          "target.adaptive must be true or a table");
    CHECK(refused("target.adaptive.min", "100", "target.adaptive.min: 100 is above the limit's ceiling"),
          "an adaptive min above the concurrency is refused");
    {
        eg_config cf;
        int rc2 = load_with(NULL, NULL, &cf);
        CHECK(rc2 == 0 && cf.rate_enabled && cf.rate_per_second == 5 && cf.rate_burst == 5 && cf.adaptive_enabled &&
                  cf.adaptive_min == 1 && cf.adaptive_max == EG_DEF_HTTP_CONCURRENCY &&
                  !strcmp(cf.budget_key_header, "tenant") && cf.budget_max_keys == EG_DEF_BUDGET_MAX_KEYS,
              "rate burst defaults to per_second, adaptive max to the concurrency, the budget key is read");
        if (rc2 == 0) eg_config_free(&cf);
        rc2 = load_with("target.adaptive", "true", &cf);
        CHECK(rc2 == 0 && cf.adaptive_enabled && cf.adaptive_min == 1, "target.adaptive = true takes the defaults");
        if (rc2 == 0) eg_config_free(&cf);
        rc2 = load_with("target.rate.per_second", "0.5", &cf);
        CHECK(rc2 == 0 && cf.rate_burst == 1, "a rate below 1 a second gets a burst of 1");
        if (rc2 == 0) eg_config_free(&cf);
    }

    CHECK(refused("dlq_guard.max_per_second", "nil", "dlq_guard.max_per_second is required"),
          "dlq_guard without max_per_second is refused");

    /* source.replay_allow (replay_dest.h): patterns, refused when not one */
    CHECK(refused("source.replay_allow", "'payments'", "source.replay_allow: expected a list of topic patterns"),
          "source.replay_allow: a string is refused");
    CHECK(refused("source.replay_allow", "{ 'pay ments' }", "source.replay_allow[1]: expected a topic name"),
          "source.replay_allow: a pattern that is no topic name is refused");
    CHECK(refused("source.replay_allow", "{ 'a', '^(' }", "source.replay_allow[2]"),
          "source.replay_allow: a regex that does not compile is refused");
    CHECK(refused("source.replay_allow", "{ 'a\\0b' }", "source.replay_allow[1]"),
          "source.replay_allow: a NUL byte is refused");
    rc = load_with("source.replay_allow", "{ 'payments', 'team-a.*', '^billing$' }", &cfg);
    CHECK(rc == 0 && cfg.replay_allow_set && cfg.nreplay_allow == 3 && !strcmp(cfg.replay_allow[1], "team-a.*"),
          "source.replay_allow: the patterns reach the config");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("source.replay_allow", "{}", &cfg);
    CHECK(rc == 0 && cfg.replay_allow_set && cfg.nreplay_allow == 0, "source.replay_allow = {}: set, allows nothing");
    if (rc == 0) eg_config_free(&cfg);

    /* the metrics table: pipeline and stage (NULL: the group and the target kind), the ratio threshold */
    rc = load_with(NULL, NULL, &cfg);
    CHECK(rc == 0 && !cfg.metrics_pipeline && !cfg.metrics_stage && cfg.metrics_dead_letter_ratio == 0.001,
          "without a metrics table: no pipeline or stage of its own, dead_letter_ratio 0.001");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("metrics", "{ pipeline = 'checkout', stage = 'enrich', dead_letter_ratio = 0.02 }", &cfg);
    CHECK(rc == 0 && cfg.metrics_pipeline && !strcmp(cfg.metrics_pipeline, "checkout") && cfg.metrics_stage &&
              !strcmp(cfg.metrics_stage, "enrich") && cfg.metrics_dead_letter_ratio == 0.02,
          "metrics.pipeline, metrics.stage and metrics.dead_letter_ratio reach their fields (%s)", err);
    if (rc == 0) eg_config_free(&cfg);

    /* enum values reach their fields */
    rc = load_with("on_stop", "'wait'", &cfg);
    CHECK(rc == 0 && cfg.on_stop_wait == 1 && cfg.guard_enabled && cfg.guard_max_per_second == 5 &&
              cfg.guard_window_s == 10 && cfg.guard_cooldown_s == 60 && !cfg.guard_stop,
          "on_stop = \"wait\" is on_stop_wait; a dlq_guard table turns the guard on with its defaults");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("dlq_guard.action", "'stop'", &cfg);
    CHECK(rc == 0 && cfg.guard_stop == 1, "dlq_guard.action = \"stop\" is guard_stop");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("source.ordering", "'key'", &cfg);
    CHECK(rc == 0 && cfg.ordering == EG_ORDER_KEY, "source.ordering = \"key\" is EG_ORDER_KEY");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("target.http.version", "'2'", &cfg);
    CHECK(rc == 0 && cfg.http_version == 2, "target.http.version = \"2\" is 2");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("log.format", "'text'", &cfg);
    CHECK(rc == 0 && !strcmp(cfg.log_format, "text"), "log.format = \"text\" is kept as the string");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with(NULL, NULL, &cfg);
    CHECK(rc == 0 && cfg.log_decisions_per_second == EG_DEF_LOG_DECISIONS_PER_SECOND,
          "log.decisions: sampled at %d per key and second by default", EG_DEF_LOG_DECISIONS_PER_SECOND);
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("log.decisions", "'all'", &cfg);
    CHECK(rc == 0 && cfg.log_decisions_per_second == 0, "log.decisions = \"all\" keeps every line (0)");
    if (rc == 0) eg_config_free(&cfg);
    rc = load_with("log.decisions.per_second", "100", &cfg);
    CHECK(rc == 0 && cfg.log_decisions_per_second == 100, "log.decisions = { per_second = 100 }");
    if (rc == 0) eg_config_free(&cfg);
    CHECK(refused("log.decisions", "'some'", "log.decisions: expected \"all\" or a table"),
          "log.decisions: another string is refused");
    CHECK(refused("log.decisions", "5", "log.decisions: expected a table"), "log.decisions: a number is refused");
    CHECK(refused("log.decisions.per_second", "0", "log.decisions.per_second"), "per_second 0 is refused");
    CHECK(refused("log.decisions.every", "1", "unknown key 'log.decisions.every'"), "an unknown key is refused");
    rc = load_with("lanes.spill.dir", "'j'", &cfg);
    char spill[200];
    snprintf(spill, sizeof spill, "%s/j", dir);
    CHECK(rc == 0 && !strcmp(cfg.spill_dir, spill), "lanes.spill.dir is resolved against the config's directory");
    if (rc == 0) eg_config_free(&cfg);

    test_sandbox();
    test_sources();

    char p[256];
    snprintf(p, sizeof p, "%s/policy.lua", dir);
    unlink(p);
    rmdir(dir);
    return TAP_DONE();
}
