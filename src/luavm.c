/* luavm.c — bounded Lua states for the policy and the Lua target (see luavm.h).
 *
 * eg_vm_pcall is on the path of every decision, so its fixed cost is kept
 * small: the traceback handler is one C function created with the state and
 * pushed from a registry ref (not a new closure per call), and the count
 * hook is installed when the state is made and reinstalled only after a
 * timeout left it firing at every instruction. With any count hook set,
 * LuaJIT's interpreter sends every instruction through its hook check (about
 * a third of a policy decision's time, measured): the price of bounding Lua
 * without the JIT, paid per instruction, so the Lua side of a decision is
 * kept short. deadline_hook itself runs every HOOK_COUNT instructions (some
 * 25 us here: the overrun past a deadline stays far below any budget),
 * reads the clock, and does nothing between calls (deadline 0). */
#include "luavm.h"
#include "util.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The VM whose call is running. Only the loop thread calls into Lua and calls
 * do not nest across VMs, so one slot is enough for the hook to find it. */
static eg_vm *g_running;

/* 1 when dir holds the runtime (dir/errgate/runtime.lua is readable). */
static int has_runtime(const char *dir) {
    char f[PATH_MAX + 32];
    snprintf(f, sizeof f, "%s/errgate/runtime.lua", dir);
    return access(f, R_OK) == 0;
}

const char *eg_lua_dir(void) {
    static char dir[PATH_MAX];
    if (dir[0]) return dir;
    const char *env = getenv("ERRGATE_LUA_DIR");
    if (env && *env) {
        eg_strlcpy(dir, env, sizeof dir);
        return dir;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        eg_strlcpy(dir, "lua", sizeof dir);
        return dir;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    /* installed (PREFIX/bin/errgate) first, then the build tree (build/errgate) */
    snprintf(dir, sizeof dir, "%.*s/../share/errgate/lua", (int)(sizeof dir - 24), exe);
    if (!has_runtime(dir)) snprintf(dir, sizeof dir, "%.*s/../lua", (int)(sizeof dir - 8), exe);
    return dir;
}

#define HOOK_COUNT 10000

/* Raises once the deadline has passed, and from then on fires at every
 * instruction: a policy's own pcall may catch one raise, but the very next
 * instruction of its caller raises again, outside that pcall. */
static void deadline_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    eg_vm *vm = g_running;
    if (vm && vm->deadline_ns && eg_now_ns() > vm->deadline_ns) {
        lua_sethook(L, deadline_hook, LUA_MASKCOUNT, 1);
        luaL_error(L, "errgate: call exceeded its %d ms budget", vm->timeout_ms);
    }
}

/* Message handler: a C function, so the count hook never fires inside it. */
static int traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
    return 1;
}

/* lua_Alloc with a cap: refuses growth past mem_limit; frees always work. */
/* Size class of a small block (0 for 1..16 bytes), or -1 when not small. */
static int small_class(size_t n) { return n && n <= EG_VM_SMALL_MAX ? (int)((n - 1) / 16) : -1; }

/* A block of class c: reused from its free list, else fresh (class size). */
static void *small_get(eg_vm *vm, int c) {
    void *p = vm->small[c];
    if (p) {
        vm->small[c] = *(void **)p;
        vm->nsmall[c]--;
        return p;
    }
    return malloc((size_t)(c + 1) * 16);
}

static void small_put(eg_vm *vm, int c, void *p) {
    if (vm->nsmall[c] >= EG_VM_SMALL_KEEP) {
        free(p);
        return;
    }
    *(void **)p = vm->small[c];
    vm->small[c] = p;
    vm->nsmall[c]++;
}

/* lua_Alloc with a cap (vm->mem_used counts the sizes Lua asked for) and
 * free lists for small blocks. Lua always passes a block's exact old size,
 * so a block's class is known at free and resize. */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    eg_vm *vm = ud;
    size_t old = ptr ? osize : 0;
    int oc = ptr ? small_class(osize) : -1, nc = small_class(nsize);
    if (nsize == 0) {
        if (oc >= 0) small_put(vm, oc, ptr);
        else free(ptr);
        vm->mem_used -= old;
        return NULL;
    }
    if (nsize > old && vm->mem_used + (nsize - old) > vm->mem_limit) return NULL;
    void *q;
    if (ptr && oc >= 0 && oc == nc) {
        q = ptr; /* same class: the block already fits */
    } else if (nc >= 0 || oc >= 0) {
        q = nc >= 0 ? small_get(vm, nc) : malloc(nsize);
        if (!q) return NULL;
        if (ptr) {
            memcpy(q, ptr, old < nsize ? old : nsize);
            if (oc >= 0) small_put(vm, oc, ptr);
            else free(ptr);
        }
    } else {
        q = realloc(ptr, nsize);
        if (!q) return NULL;
    }
    vm->mem_used = vm->mem_used - old + nsize;
    return q;
}

eg_vm *eg_vm_new(size_t mem_limit, char *err, size_t errlen) {
    eg_vm *vm = eg_xcalloc(1, sizeof *vm);
    vm->timeout_ms = EG_VM_LOAD_BUDGET_MS;
    vm->mem_limit = mem_limit;
    vm->L = lua_newstate(capped_alloc, vm);
    if (!vm->L) {
        snprintf(err, errlen, "cannot create a Lua state");
        free(vm);
        return NULL;
    }
    lua_State *L = vm->L;
    lua_atpanic(L, NULL);
    luaL_openlibs(L);
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    lua_pushcfunction(L, traceback);
    vm->traceback_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_sethook(L, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);


    /* package.path: the runtime's directory first. */
    const char *dir = eg_lua_dir();
    lua_getglobal(L, "package");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", dir, dir);
    lua_getfield(L, -2, "path");
    lua_concat(L, 2);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);

    lua_getglobal(L, "require");
    lua_pushstring(L, "errgate.runtime");
    if (eg_vm_pcall(vm, 1, 1, err, errlen) != 0) {
        char msg[512];
        eg_strlcpy(msg, err, sizeof msg);
        snprintf(err, errlen, "cannot load the errgate Lua runtime from %s: %s", dir, msg);
        eg_vm_free(vm);
        return NULL;
    }
    vm->runtime_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    if (eg_vm_push_runtime_fn(vm, "harden") != 0 || eg_vm_pcall(vm, 0, 0, err, errlen) != 0) {
        if (!*err) snprintf(err, errlen, "errgate.runtime has no harden");
        eg_vm_free(vm);
        return NULL;
    }
    return vm;
}

void eg_vm_free(eg_vm *vm) {
    if (!vm) return;
    if (vm->L) lua_close(vm->L);
    for (int c = 0; c < EG_VM_SMALL_MAX / 16; c++)
        while (vm->small[c]) {
            void *p = vm->small[c];
            vm->small[c] = *(void **)p;
            free(p);
        }
    free(vm);
}

int eg_vm_push_runtime_fn(eg_vm *vm, const char *name) {
    lua_rawgeti(vm->L, LUA_REGISTRYINDEX, vm->runtime_ref);
    lua_getfield(vm->L, -1, name);
    lua_remove(vm->L, -2);
    if (lua_type(vm->L, -1) != LUA_TFUNCTION) {
        lua_pop(vm->L, 1);
        return -1;
    }
    return 0;
}

/* Copies the first line of a Lua error (plus the traceback's first frame,
 * which carries the file:line) into err. */
static void one_line(const char *msg, char *err, size_t errlen) {
    size_t o = 0;
    for (const char *p = msg; *p && o + 1 < errlen; p++) {
        if (*p == '\n') {
            if (strncmp(p, "\nstack traceback:", 17) == 0) break;
            err[o++] = ' ';
        } else if (*p != '\t') {
            err[o++] = *p;
        }
    }
    err[o] = '\0';
}

int eg_vm_pcall(eg_vm *vm, int nargs, int nresults, char *err, size_t errlen) {
    lua_State *L = vm->L;
    int base = lua_gettop(L) - nargs; /* index of the function */
    lua_rawgeti(L, LUA_REGISTRYINDEX, vm->traceback_ref);
    lua_insert(L, base);
    eg_vm *prev = g_running;
    g_running = vm;
    /* after a timeout the hook fires at every instruction: back to every
     * HOOK_COUNT (a hook of someone else's is replaced the same way) */
    if (lua_gethookcount(L) != HOOK_COUNT || lua_gethook(L) != deadline_hook ||
        lua_gethookmask(L) != LUA_MASKCOUNT)
        lua_sethook(L, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
    vm->deadline_ns = eg_now_ns() + (int64_t)vm->timeout_ms * 1000000;
    int rc = lua_pcall(L, nargs, nresults, base);
    vm->deadline_ns = 0;
    g_running = prev;
    if (rc != 0) {
        const char *msg = lua_tostring(L, -1);
        one_line(msg ? msg : "(error object is not a string)", err, errlen);
        lua_settop(L, base - 1);
        /* LuaJIT has no emergency collection: without a full one now, the
         * garbage the failed call left behind fails the next calls too */
        if (rc == LUA_ERRMEM) lua_gc(L, LUA_GCCOLLECT, 0);
        return -1;
    }
    lua_remove(L, base);
    return 0;
}

static void set_str(lua_State *L, const char *k, const char *v, size_t n, size_t cap) {
    if (!v) return;
    if (cap && n > cap) n = cap;
    lua_pushlstring(L, v, n);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, int64_t v) {
    lua_pushnumber(L, (lua_Number)v);
    lua_setfield(L, -2, k);
}

void eg_vm_push_record(eg_vm *vm, const eg_record *r, int with_value, size_t cap) {
    lua_State *L = vm->L;
    const rd_kafka_message_t *m = r->msg;
    lua_createtable(L, 0, 8);
    set_str(L, "topic", r->topic, strlen(r->topic), 0);
    set_int(L, "partition", r->partition);
    set_int(L, "offset", r->offset);
    char id[320];
    eg_record_id(r, id, sizeof id);
    set_str(L, "id", id, strlen(id), 0);
    if (m->key) set_str(L, "key", m->key, m->key_len, cap);
    if (with_value && m->payload) set_str(L, "value", m->payload, m->len, cap);
    rd_kafka_timestamp_type_t tstype;
    set_int(L, "timestamp", rd_kafka_message_timestamp(m, &tstype));
    lua_createtable(L, 0, 4);
    rd_kafka_headers_t *hdrs = NULL;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; i++)
            if (val) set_str(L, name, val, size, cap);
    }
    lua_setfield(L, -2, "headers");
}

