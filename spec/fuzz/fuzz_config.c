/* fuzz_config.c — the config loader's validation (config.c,
 * eg_config_from_table_source: eg_config_from_table, or the several
 * sources' derivation before it, config_sources.c). Input: the text of a config file. It runs in a
 * bounded Lua state of this harness (base, string, table and math libraries
 * only, no file or OS access, the JIT off, at most ~10^6 instructions and
 * 64 MiB; eg_config_load's own sandbox is tested in c/test_config); what it
 * returns goes through the validator exactly as eg_config_load hands it
 * over. A fresh state per input, closed after it: nothing is kept between
 * inputs. The config's directory is a private temp dir holding policy.lua,
 * target.lua and token, so valid configs reach the end of the validation. */
#include "config.h"
#include "fuzz.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <string.h>

#define MEM_CAP ((size_t)64 << 20)
#define STEPS_MAX 1000 /* count-hook firings of 1000 instructions each */

typedef struct bounds {
    size_t used, cap;
    int steps;
} bounds;

static bounds g_b;

static void *alloc(void *ud, void *p, size_t osize, size_t nsize) {
    bounds *b = ud;
    size_t old = p ? osize : 0;
    if (nsize == 0) {
        free(p);
        b->used -= old;
        return NULL;
    }
    if (nsize > old && b->used + (nsize - old) > b->cap) return NULL;
    void *q = realloc(p, nsize);
    if (q) b->used = b->used - old + nsize;
    return q;
}

/* Raises past the step budget, and then at every instruction, so a pcall
 * in the config cannot swallow it. */
static void hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    if (++g_b.steps > STEPS_MAX) {
        lua_sethook(L, hook, LUA_MASKCOUNT, 1);
        luaL_error(L, "fuzz: instruction budget exceeded");
    }
}

static const char *g_path;

static void write_file(const char *dir, const char *name, const char *text) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    FZ_CHECK(f != NULL, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *dir = fz_tmpdir();
    write_file(dir, "policy.lua", "return {}\n");
    write_file(dir, "target.lua", "return {}\n");
    write_file(dir, "token", "secret\n");
    static char path[400];
    snprintf(path, sizeof path, "%s/errgate.lua", dir);
    g_path = path;
    setenv("ERRGATE_BOOTSTRAP", "", 1); /* the file must name its brokers */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_path) LLVMFuzzerInitialize(NULL, NULL);
    if (size && data[0] == 0x1b) return 0; /* LuaJIT bytecode: unverified by design, not config.c's parser */
    g_b = (bounds){0, MEM_CAP, 0};
    lua_State *L = lua_newstate(alloc, &g_b);
    FZ_CHECK(L != NULL, "lua_newstate");
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    static const luaL_Reg libs[] = {{"", luaopen_base},
                                    {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table},
                                    {LUA_MATHLIBNAME, luaopen_math}};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        lua_pushcfunction(L, libs[i].func);
        lua_pushstring(L, libs[i].name);
        lua_call(L, 1, 0);
    }
    static const char *const unsafe[] = {"dofile", "loadfile", "load", "loadstring", "print", "require", "module"};
    for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, unsafe[i]);
    }
    lua_sethook(L, hook, LUA_MASKCOUNT, 1000);
    if (luaL_loadbuffer(L, (const char *)data, size, "=config") == 0 && lua_pcall(L, 0, 1, 0) == 0) {
        lua_sethook(L, NULL, 0, 0);
        g_b.cap = (size_t)-1; /* the validator runs unbounded, as in eg_config_load */
        int top = lua_gettop(L);
        eg_config cfg;
        char err[512];
        memset(err, 'X', sizeof err);
        /* every form: one source, or `sources` (the first of them, after all are checked) */
        int rc = eg_config_from_table_source(L, g_path, EG_ANY_SOURCE, &cfg, err, sizeof err);
        FZ_CHECK(lua_gettop(L) == top, "the validator left %d stack slots", lua_gettop(L) - top);
        if (rc == 0) {
            FZ_CHECK(cfg.ntopics > 0 && cfg.group && cfg.policy && eg_config_kafka(&cfg, "bootstrap.servers"),
                     "a valid config without topics, group, policy or brokers");
            FZ_CHECK((cfg.target_kind == EG_TARGET_HTTP) == (cfg.http_url != NULL), "target kind vs url");
            FZ_CHECK(cfg.scope && (cfg.nsources == 0) == (cfg.source_name == NULL), "a scope, and a name with sources");
            eg_config_free(&cfg);
        } else {
            FZ_CHECK(rc == -1 && memchr(err, 0, sizeof err) && !strncmp(err, "config ", 7), "rc %d, err '%.60s'", rc,
                     err);
        }
    }
    lua_close(L);
    return 0;
}
