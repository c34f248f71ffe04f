/* test_redact_words.c — the C and the Lua redactor share one word list
 * (lua/errgate/redact_words.lua) and agree on it: for every secret word and
 * every scheme of that file, as this test reads it now, the C redactor
 * (eg_redact) and the Lua one (errgate.redact.secrets) give the same text,
 * and that text has the secret out. A word added to the file but missing
 * from the C build (a stale header, a C list of its own, a first letter
 * the fast path skips) or escaped wrongly into a Lua pattern fails here.
 * Runs from the repository's root (as spec/run.sh does). */
#include "redact.h"
#include "tap.h"

#include <ctype.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <string.h>

static lua_State *L;

/* The Lua redactor's answer for s (a static buffer). */
static const char *lua_redact(const char *s) {
    static char buf[512];
    lua_getglobal(L, "secrets");
    lua_pushstring(L, s);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        snprintf(buf, sizeof buf, "(lua error: %s)", lua_tostring(L, -1));
    } else {
        snprintf(buf, sizeof buf, "%s", lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    return buf;
}

/* 1 when C and Lua both turn in into want; says what each gave otherwise. */
static int both(const char *in, const char *want) {
    char c_out[512];
    eg_redact(in, strlen(in), c_out, sizeof c_out);
    const char *l_out = lua_redact(in);
    int ok = strcmp(c_out, want) == 0 && strcmp(l_out, want) == 0;
    if (!ok) printf("# %s\n#   want %s\n#   C    %s\n#   Lua  %s\n", in, want, c_out, l_out);
    return ok;
}

/* Reads list `name` of the words file into words (at most max). */
static int read_list(const char *name, char words[][64], int max) {
    int n = 0;
    lua_getglobal(L, "WORDS");
    lua_getfield(L, -1, name);
    for (int i = 1; i <= max; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            break;
        }
        snprintf(words[n++], 64, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    return n;
}

static void upper(char *dst, const char *src, size_t len) {
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++) dst[i] = (char)toupper((unsigned char)src[i]);
    dst[i] = '\0';
}

int main(void) {
    L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_dostring(L, "package.path = 'lua/?.lua;' .. package.path\n"
                         "WORDS = require 'errgate.redact_words'\n"
                         "secrets = require('errgate.redact').secrets") != 0) {
        CHECK(0, "the Lua runtime loads from lua/: %s", lua_tostring(L, -1));
        return TAP_DONE();
    }
    char keys[128][64], schemes[32][64];
    int nkeys = read_list("keys", keys, 128), nschemes = read_list("schemes", schemes, 32);
    CHECK(nkeys >= 20 && nschemes >= 4, "the words file lists %d secret words and %d schemes", nkeys, nschemes);

    char in[512], want[512], up[64];
    for (int i = 0; i < nkeys; i++) {
        const char *w = keys[i];
        upper(up, w, sizeof up);
        snprintf(in, sizeof in, "failed: %.63s=s3cr3t&next=1", w);
        snprintf(want, sizeof want, "failed: %.63s=%s&next=1", w, EG_REDACTED);
        int ok = both(in, want);
        snprintf(in, sizeof in, "{\"%s\": \"s3cr3t\", \"a\": 1}", up);
        snprintf(want, sizeof want, "{\"%s\": \"%s\", \"a\": 1}", up, EG_REDACTED);
        ok &= both(in, want);
        snprintf(in, sizeof in, "%.63s: s3cr3t", w);
        snprintf(want, sizeof want, "%.63s: %s", w, EG_REDACTED);
        ok &= both(in, want);
        CHECK(ok, "secret word %s: C and Lua redact its value alike (key=, \"KEY\": and key: forms)", w);
    }
    for (int i = 0; i < nschemes; i++) {
        int ok = 1;
        for (int k = 0; k < nkeys; k++) {
            char scheme[64];
            snprintf(scheme, sizeof scheme, "%c%.62s", toupper((unsigned char)schemes[i][0]), schemes[i] + 1);
            snprintf(in, sizeof in, "%.63s: %.63s dXNlcjpwYXNz rejected", keys[k], scheme);
            snprintf(want, sizeof want, "%.63s: %.63s %s rejected", keys[k], scheme, EG_REDACTED);
            ok &= both(in, want);
        }
        CHECK(ok, "scheme %s after every secret word: C and Lua keep it and redact the credential", schemes[i]);
    }
    CHECK(both("no secrets here: tokens counted, 3 passwords reset",
               "no secrets here: tokens counted, 3 passwords reset"),
          "text without a secret value is left alone by both");
    lua_close(L);
    return TAP_DONE();
}
