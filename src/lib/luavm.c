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
 * reads the clock, and does nothing between calls (deadline 0).
 *
 * The count hook alone cannot bound a call: one VM instruction may be a C
 * function that runs long (a scan of a 30 MB string, a concatenation), and
 * 10,000 of those pass before the hook looks at the clock. So the deadline
 * is also watched from outside: a watchdog thread, started with the first
 * VM, looks at the running calls every WATCH_MS and sends SIGURG to the
 * thread of a call past its deadline; the handler (on that thread) sets
 * the hook to fire at the very next instruction (lua_sethook is safe from a
 * signal handler). A call then outruns its deadline by at most WATCH_MS
 * plus the one C function running when it expired; the sandbox keeps each
 * such function short (errgate.sandbox: guarded scans, callbacks made Lua
 * functions) and the allocator refuses to grow a call past its deadline
 * (checked once per ALLOC_CHECK bytes allocated), which ends a long build
 * of a string or table with an error. Nothing of this costs a decision more
 * than two relaxed atomic stores. */
#include "luavm.h"
#include "util.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The VM whose call is running on this thread (a policy reload builds on a
 * worker while the loop decides; calls do not nest across VMs), for the hook
 * and the watchdog's signal handler. */
static _Thread_local eg_vm *g_running;

#define WATCH_MS 5
#define ALLOC_CHECK ((size_t)1 << 20)
#define WATCH_SIGNAL EG_VM_WATCH_SIGNAL /* ignored by default: a stray one is harmless */

/* Every live VM, for the watchdog (linked through wd_next/wd_prev). */
static pthread_mutex_t g_vms_lock = PTHREAD_MUTEX_INITIALIZER;
static eg_vm *g_vms;
static pthread_once_t g_watch_once = PTHREAD_ONCE_INIT;

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

/* 1 when a call is running on vm and its deadline has passed, or the VM
 * was interrupted. */
static int overdue(const eg_vm *vm) {
    if (vm->interrupted) return 1;
    int64_t d = atomic_load_explicit(&vm->deadline_ns, memory_order_relaxed);
    return d && eg_now_ns() > d;
}

/* Raises once the deadline has passed, and from then on fires at every
 * instruction: a policy's own pcall may catch one raise, but the very next
 * instruction of its caller raises again, outside that pcall. */
static void deadline_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    eg_vm *vm = g_running;
    if (vm && overdue(vm)) {
        lua_sethook(L, deadline_hook, LUA_MASKCOUNT, 1);
        if (vm->interrupted) luaL_error(L, "errgate: interrupted");
        vm->timed_out = 1;
        luaL_error(L, "errgate: call exceeded its %d ms budget", vm->timeout_ms);
    }
    /* fired early (a signal that raced the end of a call): back to normal */
    if (lua_gethookcount(L) != HOOK_COUNT) lua_sethook(L, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
}

/* WATCH_SIGNAL handler, on the thread of an overdue call: the hook fires at
 * the next instruction. Only async-signal-safe work (clock, lua_sethook). */
void eg_vm_interrupt(eg_vm *vm) {
    vm->interrupted = 1;
    if (vm->L) lua_sethook(vm->L, deadline_hook, LUA_MASKCOUNT, 1);
}

static void on_watch_signal(int sig) {
    (void)sig;
    eg_vm *vm = g_running;
    if (vm && overdue(vm)) lua_sethook(vm->L, deadline_hook, LUA_MASKCOUNT, 1);
}

/* The watchdog thread: every WATCH_MS, signals the thread of each call past
 * its deadline (again at every round while it stays overdue). */
static void *watchdog(void *arg) {
    (void)arg;
    struct timespec tick = {0, WATCH_MS * 1000000L};
    for (;;) {
        nanosleep(&tick, NULL);
        pthread_mutex_lock(&g_vms_lock);
        for (eg_vm *vm = g_vms; vm; vm = vm->wd_next) {
            int64_t d = atomic_load_explicit(&vm->deadline_ns, memory_order_acquire);
            if (d && eg_now_ns() > d) pthread_kill(vm->thread, WATCH_SIGNAL);
        }
        pthread_mutex_unlock(&g_vms_lock);
    }
    return NULL;
}

/* Installs the signal handler and starts the watchdog (once per process).
 * The watchdog blocks every signal, so process signals go elsewhere. */
static void watch_start(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watch_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(WATCH_SIGNAL, &sa, NULL) != 0) return; /* the count hook still bounds Lua code */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) == 0) pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void watch_add(eg_vm *vm) {
    pthread_once(&g_watch_once, watch_start);
    pthread_mutex_lock(&g_vms_lock);
    vm->wd_prev = NULL;
    vm->wd_next = g_vms;
    if (g_vms) g_vms->wd_prev = vm;
    g_vms = vm;
    pthread_mutex_unlock(&g_vms_lock);
}

static void watch_remove(eg_vm *vm) {
    pthread_mutex_lock(&g_vms_lock);
    if (vm->wd_prev) vm->wd_prev->wd_next = vm->wd_next;
    else if (g_vms == vm) g_vms = vm->wd_next;
    if (vm->wd_next) vm->wd_next->wd_prev = vm->wd_prev;
    vm->wd_next = vm->wd_prev = NULL;
    pthread_mutex_unlock(&g_vms_lock);
}

/* registry["errgate.call_epoch"]() -> a number that changes at every
 * eg_vm_pcall of the running VM: the sandbox's pcall resets its nesting
 * count when a new call starts (a call stopped by its deadline may leave
 * it counting frames that are gone). */
static int call_epoch(lua_State *L) {
    eg_vm *vm = g_running;
    lua_pushnumber(L, vm ? (lua_Number)vm->calls : 0);
    return 1;
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
    if (nsize > old) {
        if (vm->mem_used + (nsize - old) > vm->mem_limit) {
            vm->mem_refused++;
            return NULL;
        }
        /* growth past the deadline fails: a long build of a string or table
         * in one C call ends here (eg_vm_pcall reports the budget) */
        vm->alloc_since_check += nsize - old;
        if (vm->alloc_since_check >= ALLOC_CHECK) {
            vm->alloc_since_check = 0;
            if (overdue(vm)) {
                vm->alloc_overdue = 1;
                if (!vm->interrupted) vm->timed_out = 1;
                lua_sethook(vm->L, deadline_hook, LUA_MASKCOUNT, 1);
                return NULL;
            }
        }
    }
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

/* The record table's field names (EG_VM_REC_KEYS of them): made once per
 * VM and kept in the registry (eg_vm.rec_key_ref), so that a record's table
 * is filled with raw sets of kept strings, not by interning each name (a
 * hash and a string-table lookup) for every record. The table is fresh and
 * has no metatable: a raw set is what lua_setfield would do. */
enum { RK_TOPIC, RK_PARTITION, RK_OFFSET, RK_ID, RK_KEY, RK_VALUE, RK_TIMESTAMP, RK_HEADERS, RK__N };
_Static_assert(RK__N == EG_VM_REC_KEYS, "one kept name per record field");
static const char *const rec_keys[RK__N] = {"topic", "partition", "offset",    "id",
                                            "key",   "value",     "timestamp", "headers"};

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
    for (int k = 0; k < RK__N; k++) {
        lua_pushstring(L, rec_keys[k]);
        vm->rec_key_ref[k] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_pushcfunction(L, traceback);
    vm->traceback_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_sethook(L, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
    watch_add(vm);
    lua_pushcfunction(L, call_epoch);
    lua_setfield(L, LUA_REGISTRYINDEX, "errgate.call_epoch");

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
    if (vm->L) watch_remove(vm);
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
    if (lua_gethookcount(L) != HOOK_COUNT || lua_gethook(L) != deadline_hook || lua_gethookmask(L) != LUA_MASKCOUNT)
        lua_sethook(L, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
    pthread_t self = pthread_self();
    if (!pthread_equal(vm->thread, self)) vm->thread = self; /* the watchdog reads it */
    vm->alloc_overdue = 0;
    vm->timed_out = 0;
    vm->calls++;
    atomic_store_explicit(&vm->deadline_ns, eg_now_ns() + (int64_t)vm->timeout_ms * 1000000, memory_order_release);
    int rc = lua_pcall(L, nargs, nresults, base);
    atomic_store_explicit(&vm->deadline_ns, 0, memory_order_relaxed);
    g_running = prev;
    if (rc != 0) {
        const char *msg = lua_tostring(L, -1);
        if (vm->interrupted) snprintf(err, errlen, "errgate: interrupted");
        else if (rc == LUA_ERRMEM && vm->alloc_overdue)
            snprintf(err, errlen, "errgate: call exceeded its %d ms budget", vm->timeout_ms);
        else one_line(msg ? msg : "(error object is not a string)", err, errlen);
        lua_settop(L, base - 1);
        /* LuaJIT has no emergency collection: without a full one now, the
         * garbage the failed call left behind fails the next calls too */
        if (rc == LUA_ERRMEM) lua_gc(L, LUA_GCCOLLECT, 0);
        return -1;
    }
    lua_remove(L, base);
    return 0;
}

/* Pushes the kept name of record field k. */
static void push_rec_key(eg_vm *vm, int k) { lua_rawgeti(vm->L, LUA_REGISTRYINDEX, vm->rec_key_ref[k]); }

/* Sets the table at the stack top's field k to v[0..n) (at most cap bytes
 * when cap > 0); nothing when v is NULL. */
static void set_str(eg_vm *vm, int k, const char *v, size_t n, size_t cap) {
    if (!v) return;
    if (cap && n > cap) n = cap;
    push_rec_key(vm, k);
    lua_pushlstring(vm->L, v, n);
    lua_rawset(vm->L, -3);
}

static void set_int(eg_vm *vm, int k, int64_t v) {
    push_rec_key(vm, k);
    lua_pushnumber(vm->L, (lua_Number)v);
    lua_rawset(vm->L, -3);
}

void eg_vm_push_record(eg_vm *vm, const eg_record *r, int with_value, size_t cap) {
    lua_State *L = vm->L;
    const rd_kafka_message_t *m = r->msg;
    lua_createtable(L, 0, 8);
    set_str(vm, RK_TOPIC, r->topic, strlen(r->topic), 0);
    set_int(vm, RK_PARTITION, r->partition);
    set_int(vm, RK_OFFSET, r->offset);
    char id[320];
    eg_record_id(r, id, sizeof id);
    set_str(vm, RK_ID, id, strlen(id), 0);
    if (m->key) set_str(vm, RK_KEY, m->key, m->key_len, cap);
    if (with_value && m->payload) set_str(vm, RK_VALUE, m->payload, m->len, cap);
    rd_kafka_timestamp_type_t tstype;
    set_int(vm, RK_TIMESTAMP, rd_kafka_message_timestamp(m, &tstype));
    push_rec_key(vm, RK_HEADERS);
    lua_createtable(L, 0, 4);
    /* read once per record (eg_record_headers): librdkafka parses a
     * header-less consumed message again, with an allocation, on each call */
    const rd_kafka_headers_t *hdrs = eg_record_headers(r);
    if (hdrs) {
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; i++) {
            if (!val) continue;
            lua_pushlstring(L, val, cap && size > cap ? cap : size);
            lua_setfield(L, -2, name); /* names vary: interned as they come */
        }
    }
    lua_rawset(L, -3);
}
