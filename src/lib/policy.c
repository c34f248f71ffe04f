/* policy.c — call the Lua policy on failures (see policy.h).
 *
 * The runtime's load_policy(path) returns a policy object, and
 * decider(pol) the function every decision calls: decide_fields(kind,
 * status, code, class_hint, message, body, retry_after_ms, latency_ms,
 * attempt, last_class, class_attempts, ordering, now_ms, first_failure_ms,
 * last_delay_ms, retry_count, rung, breaker, retry_budget, record) ->
 * action, class, code, reason, delay_ms, message, rung, rung_index.
 *
 * A decision is on the DLQ path of every failed record, so it is built to
 * do little: the failure and the attempt context go in as plain values (no
 * table is made for them), the decision comes back as values on the stack,
 * the names that recur (failure kinds, orderings, breaker states) are
 * interned once per state and pushed from registry refs, and the record
 * table (key, headers, errgate.id) is built only for a policy that reads it
 * (decider's second result: a classify function, a header rule or a route
 * function). Strings handed to the policy are capped at EG_POLICY_STR_CAP.
 *
 * Protection: the policy's state is capped and its code hostile, so every
 * step the C side takes in it — pushing arguments or the record, taking
 * refs, reading results — may raise (memory past the cap), and every read of
 * a table a policy could have handed a metatable may run its code. So each
 * entry point runs as one C function under lua_cpcall (protected() below),
 * calling Lua only through eg_vm_pcall (deadline, traceback), and reads
 * tables with lua_rawget/lua_rawgeti only: a raise anywhere is an error
 * return (a fallback decision, a refused load), never a panic that ends the
 * process, and no metamethod of the policy's ever runs outside a budget.
 * Everything here is per state: a policy may be built on any thread (a
 * reload builds on a worker) and then used by one thread at a time. */
#include "policy.h"
#include "log.h"
#include "luavm.h"
#include "sha256.h"
#include "util.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EG_POLICY_STR_CAP 4096
#define EG_HOLD_FALLBACK_MS 1000

#define N_KINDS (EG_FK_RECORDED + 1)
#define N_ORDERINGS (EG_ORDER_NONE + 1)

/* A class's envelope: its hint, retryable flag and ladder steps. */
typedef struct class_env {
    char klass[64];
    char hint[256];
    int retryable;
    int steps;
} class_env;

struct eg_policy {
    eg_vm *vm;
    int pol_ref;
    int decide_ref;        /* rt.decider(pol): the decision function */
    int reads_record;      /* its second result: push the record, else nil */
    int kind_ref[N_KINDS]; /* interned names, pushed without hashing */
    int ordering_ref[N_ORDERINGS];
    int breaker_ref[EG_BR__N];
    /* the action and reason names as the VM's own strings, kept in its
     * registry: a decision's answer is matched by pointer (action_of) */
    const char *action_str[EG_ACT_REPUBLISH];
    const char *reason_str[EG_RSN__N];
    int timeout_ms;
    size_t mem_limit;
    eg_rung *rungs; /* rt.ladder_rungs(pol), read once at load */
    int nrungs;
    char (*unguarded)[64]; /* rt.unguarded_classes(pol), read once at load */
    int nunguarded;
    char (*classes)[64]; /* rt.known_classes(pol), read once at load (none: any class) */
    int nclasses;
    class_env *env; /* rt.class_envelope(pol), read once at load (none: a route function) */
    int nenv;
    char *path;
    int64_t loaded_at;
    char sha256[65];
    char id[192];
};

/* A protected C function's argument block: lua_cpcall hands it over as a
 * light userdata at index 1. */
static void *cp_arg(lua_State *L) { return lua_touserdata(L, 1); }

static int cp_collect(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

/* Runs fn(L) with arg under lua_cpcall. Returns 0, or -1 with the error in
 * err; the stack is as before either way. After a memory error the state is
 * fully collected (LuaJIT has no emergency collection), itself protected. */
static int protected(eg_vm *vm, lua_CFunction fn, void *arg, char *err, size_t errlen) {
    lua_State *L = vm->L;
    int top = lua_gettop(L);
    int rc = lua_cpcall(L, fn, arg);
    if (rc == 0) return 0;
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    snprintf(err, errlen, "%s", msg ? msg : "error object is not a string");
    lua_settop(L, top);
    if (rc == LUA_ERRMEM) lua_cpcall(L, cp_collect, NULL);
    return -1;
}

/* Returns the VM's own copy of s, kept alive in its registry for the VM's
 * life (LuaJIT's collector does not move objects). LuaJIT interns every
 * string, so a string of that VM equal to s is this very pointer. */
static const char *kept_str(lua_State *L, const char *s) {
    lua_pushstring(L, s);
    const char *k = lua_tostring(L, -1);
    luaL_ref(L, LUA_REGISTRYINDEX);
    return k;
}

/* Pushes t[k] (t at idx, a table) without metamethods. */
static void raw_field(lua_State *L, int idx, const char *k) {
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_pushstring(L, k);
    lua_rawget(L, idx);
}

/* Calls rt.fn(pol) and leaves its answer at the stack top: returns the
 * length of the list it answered (0 for anything else; at most 4096, far
 * more than any policy names: it bounds the copy), or -1 when the runtime
 * lacks fn or the call failed (nothing left to pop). Runs protected. */
static int push_runtime_list(eg_policy *p, const char *fn) {
    lua_State *L = p->vm->L;
    char err[256];
    if (eg_vm_push_runtime_fn(p->vm, fn) != 0) return -1;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    if (eg_vm_pcall(p->vm, 1, 1, err, sizeof err) != 0) return -1;
    int n = lua_type(L, -1) == LUA_TTABLE ? (int)lua_objlen(L, -1) : 0;
    return n > 4096 ? 4096 : n;
}

/* Reads rt.ladder_rungs(pol) into p. A runtime without ladders, or an
 * invalid answer, gives no rungs. Runs protected. */
static void load_rungs(eg_policy *p) {
    lua_State *L = p->vm->L;
    int n = push_runtime_list(p, "ladder_rungs");
    if (n < 0) return;
    p->rungs = n ? eg_xcalloc((size_t)n, sizeof *p->rungs) : NULL;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TTABLE) {
            lua_pop(L, 1);
            continue;
        }
        raw_field(L, -1, "name");
        raw_field(L, -2, "delay_ms");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TNUMBER) {
            eg_rung *r = &p->rungs[p->nrungs++];
            eg_strlcpy(r->name, lua_tostring(L, -2), sizeof r->name);
            r->delay_ms = (int64_t)lua_tonumber(L, -1);
        }
        lua_pop(L, 3);
    }
    lua_pop(L, 1);
}

/* Reads the list of names runtime function fn answers into *names
 * (allocated) and *n. A runtime without it, or an invalid answer, gives
 * none. Runs protected. */
static void load_names(eg_policy *p, const char *fn, char (**names)[64], int *count) {
    lua_State *L = p->vm->L;
    int n = push_runtime_list(p, fn);
    if (n < 0) return;
    *names = n ? eg_xcalloc((size_t)n, sizeof **names) : NULL;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) == LUA_TSTRING) eg_strlcpy((*names)[(*count)++], lua_tostring(L, -1), sizeof **names);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Logs each entry of the policy object's `deprecations` list (what it
 * says under an old name and what to write instead, errgate.renamed) as a
 * warn line policy_deprecated naming the file: at start and at every
 * reload, so a deployment sees it before the old names go. Runs
 * protected; leaves the stack as it was. */
static void log_deprecations(eg_policy *p) {
    lua_State *L = p->vm->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    raw_field(L, -1, "deprecations");
    if (lua_type(L, -1) == LUA_TTABLE) {
        for (int i = 1; i <= 64; i++) {
            lua_rawgeti(L, -1, i);
            int done = lua_type(L, -1) != LUA_TSTRING;
            if (!done) eg_log_msg(EG_WARN, "policy_deprecated", "%s: %s", p->path, lua_tostring(L, -1));
            lua_pop(L, 1);
            if (done) break;
        }
    }
    lua_pop(L, 2);
}

/* Reads rt.class_envelope(pol) into p->env: entries whose class is not a
 * string are skipped, a hint that is not a string is none, steps outside
 * 1..1000 are none. Runs protected. */
static void load_env(eg_policy *p) {
    lua_State *L = p->vm->L;
    int n = push_runtime_list(p, "class_envelope");
    if (n < 0) return;
    p->env = n ? eg_xcalloc((size_t)n, sizeof *p->env) : NULL;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) == LUA_TTABLE) {
            raw_field(L, -1, "class");
            raw_field(L, -2, "hint");
            raw_field(L, -3, "retryable");
            raw_field(L, -4, "steps");
            if (lua_type(L, -4) == LUA_TSTRING) {
                class_env *e = &p->env[p->nenv++];
                eg_strlcpy(e->klass, lua_tostring(L, -4), sizeof e->klass);
                if (lua_type(L, -3) == LUA_TSTRING) eg_strlcpy(e->hint, lua_tostring(L, -3), sizeof e->hint);
                e->retryable = lua_toboolean(L, -2);
                lua_Number st = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
                e->steps = st >= 1 && st <= 1000 ? (int)st : 0;
            }
            lua_pop(L, 4);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Reads rt.unguarded_classes(pol) into p (none: the guard then covers every
 * class), rt.known_classes(pol) (none: any class) and rt.class_envelope. */
static void load_unguarded(eg_policy *p) {
    load_names(p, "unguarded_classes", &p->unguarded, &p->nunguarded);
    load_names(p, "known_classes", &p->classes, &p->nclasses);
    load_env(p);
}

/* Stores rt.decider(pol) in p->decide_ref and p->reads_record, and interns
 * the names decisions pass. Returns 0, or -1 with err filled. Runs
 * protected. */
static int load_decider(eg_policy *p, char *err, size_t errlen) {
    lua_State *L = p->vm->L;
    char msg[256];
    if (eg_vm_push_runtime_fn(p->vm, "decider") != 0) {
        snprintf(err, errlen, "errgate.runtime has no decider");
        return -1;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    if (eg_vm_pcall(p->vm, 1, 2, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "policy %s: decider: %s", p->path, msg);
        return -1;
    }
    if (lua_type(L, -2) != LUA_TFUNCTION) {
        lua_pop(L, 2);
        snprintf(err, errlen, "policy %s: decider did not return a function", p->path);
        return -1;
    }
    p->reads_record = lua_toboolean(L, -1);
    lua_pop(L, 1);
    p->decide_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    for (int k = 0; k < N_KINDS; k++) {
        lua_pushstring(L, eg_failure_kind_name((eg_failure_kind)k));
        p->kind_ref[k] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    for (int o = 0; o < N_ORDERINGS; o++) {
        lua_pushstring(L, eg_ordering_name((eg_ordering)o));
        p->ordering_ref[o] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    for (int b = 0; b < EG_BR__N; b++) {
        lua_pushstring(L, eg_breaker_state_name((eg_breaker_state)b));
        p->breaker_ref[b] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    for (int a = 0; a < EG_ACT_REPUBLISH; a++) p->action_str[a] = kept_str(L, eg_action_name((eg_action)a));
    for (int r = EG_RSN_OTHER + 1; r < EG_RSN__N; r++) p->reason_str[r] = kept_str(L, eg_reason_name((eg_reason)r));
    return 0;
}

eg_policy *eg_policy_load(const char *path, int timeout_ms, char *err, size_t errlen) {
    return eg_policy_load_capped(path, timeout_ms, 0, err, errlen);
}

/* load_protected's argument block. */
typedef struct load_call {
    eg_policy *p; /* vm, path, limits set; the rest filled here */
    const char *sha;
    char *err;
    size_t errlen;
    int rc;
} load_call;

/* rt.load_policy(path) and everything read from its answer: the id from the
 * policy's raw name and version, the rungs, the decider. Sets c->rc. */
static int load_protected(lua_State *L) {
    load_call *c = cp_arg(L);
    eg_policy *p = c->p;
    char msg[512];
    c->rc = -1;
    if (eg_vm_push_runtime_fn(p->vm, "load_policy") != 0) {
        snprintf(c->err, c->errlen, "errgate.runtime has no load_policy");
        return 0;
    }
    lua_pushstring(L, p->path);
    if (eg_vm_pcall(p->vm, 1, 2, msg, sizeof msg) != 0) {
        snprintf(c->err, c->errlen, "policy %s: %s", p->path, msg);
        return 0;
    }
    if (lua_type(L, -2) != LUA_TTABLE) {
        const char *why = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "did not load";
        if (strstr(why, p->path)) snprintf(c->err, c->errlen, "%s", why);
        else snprintf(c->err, c->errlen, "policy %s: %s", p->path, why);
        return 0;
    }
    lua_pop(L, 1);
    p->vm->timeout_ms = p->timeout_ms; /* from here on, the decision budget */
    raw_field(L, -1, "name");
    raw_field(L, -2, "version");
    snprintf(p->id, sizeof p->id, "%s@%s+%.8s", lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "unnamed",
             lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "0", c->sha);
    lua_pop(L, 2);
    lua_pushstring(L, "id"); /* the policy object carries the full id too */
    lua_pushstring(L, p->id);
    lua_rawset(L, -3);
    p->pol_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    load_rungs(p);
    load_unguarded(p);
    log_deprecations(p);
    lua_settop(L, 1);
    c->rc = load_decider(p, c->err, c->errlen);
    return 0;
}

/* One load of path whose id carries sha, the hash of the file taken before
 * the runtime read it. */
static eg_policy *load_once(const char *path, const char *sha, int timeout_ms, size_t mem_limit, char *err,
                            size_t errlen) {
    eg_vm *vm = eg_vm_new(mem_limit, err, errlen);
    if (!vm) return NULL;
    eg_policy *p = eg_xcalloc(1, sizeof *p);
    p->vm = vm;
    p->path = eg_xstrdup(path);
    p->timeout_ms = timeout_ms;
    p->mem_limit = mem_limit;
    memcpy(p->sha256, sha, 65);
    load_call c = {.p = p, .sha = sha, .err = err, .errlen = errlen, .rc = -1};
    char perr[256];
    if (protected(vm, load_protected, &c, perr, sizeof perr) != 0) snprintf(err, errlen, "policy %s: %s", path, perr);
    if (c.rc != 0) {
        eg_policy_free(p);
        return NULL;
    }
    p->loaded_at = eg_wall_ms();
    return p;
}

/* The runtime reads the file itself, after it was hashed: a file replaced
 * in between (a deploy writing the next version) would give an id of no
 * policy (this version's name, the other's hash). So the file is hashed
 * again after a successful load, and loaded again while the two differ. */
eg_policy *eg_policy_load_capped(const char *path, int timeout_ms, size_t mem_limit, char *err, size_t errlen) {
    char sha[65], after[65];
    if (!mem_limit) mem_limit = EG_POLICY_MEM_LIMIT;
    for (int attempt = 0; attempt < 5; attempt++) {
        if (eg_sha256_file_hex(path, sha) != 0) {
            snprintf(err, errlen, "policy %s: cannot read file", path);
            return NULL;
        }
        eg_policy *p = load_once(path, sha, timeout_ms, mem_limit, err, errlen);
        /* a refused load stays refused: it names what was read (a changed
         * file is the next reload's, e.g. the watch's) */
        if (!p || (eg_sha256_file_hex(path, after) == 0 && strcmp(sha, after) == 0)) return p;
        eg_policy_free(p); /* the file changed while it was loaded */
    }
    snprintf(err, errlen, "policy %s: the file kept changing while it was loaded", path);
    return NULL;
}

void eg_policy_free(eg_policy *p) {
    if (!p) return;
    eg_vm_free(p->vm);
    free(p->rungs);
    free(p->unguarded);
    free(p->classes);
    free(p->env);
    free(p->path);
    free(p);
}

const char *eg_policy_id(const eg_policy *p) { return p->id; }
const char *eg_policy_path(const eg_policy *p) { return p->path; }
const char *eg_policy_sha256(const eg_policy *p) { return p->sha256; }
int64_t eg_policy_loaded_at(const eg_policy *p) { return p->loaded_at; }
int eg_policy_timeout_ms(const eg_policy *p) { return p->timeout_ms; }
size_t eg_policy_mem_limit(const eg_policy *p) { return p->mem_limit; }

int eg_policy_rungs(const eg_policy *p, const eg_rung **rungs) {
    *rungs = p->rungs;
    return p->nrungs;
}

int eg_policy_guarded(const eg_policy *p, const char *klass) {
    for (int i = 0; i < p->nunguarded; i++)
        if (strcmp(p->unguarded[i], klass) == 0) return 0;
    return 1;
}

int eg_policy_knows_class(const eg_policy *p, const char *klass) {
    for (int i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i], klass) == 0) return 1;
    return p->nclasses == 0;
}

void eg_policy_class_env(const eg_policy *p, const char *klass, eg_decision *d) {
    const class_env *e = NULL, *def = NULL;
    for (int i = 0; i < p->nenv && !e; i++) {
        if (strcmp(p->env[i].klass, klass) == 0) e = &p->env[i];
        if (strcmp(p->env[i].klass, "default") == 0) def = &p->env[i];
    }
    if (!e) e = def;
    eg_strlcpy(d->hint, e ? e->hint : "", sizeof d->hint);
    d->retryable = e ? e->retryable : -1;
    d->ladder_steps = e ? e->steps : 0;
}

void eg_policy_classes(const eg_policy *p, char *out, size_t outlen) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < p->nclasses && len + 1 < outlen; i++)
        len += (size_t)snprintf(out + len, outlen - len, "%s%s", i ? ", " : "", p->classes[i]);
}

/* call_protected's argument block. */
typedef struct cli_call {
    eg_policy *p;
    const char *fn, *arg;
    char **text;
    int *code;
    char *err;
    size_t errlen;
    int rc;
} cli_call;

static int call_protected(lua_State *L) {
    cli_call *c = cp_arg(L);
    eg_vm *vm = c->p->vm;
    c->rc = -1;
    if (eg_vm_push_runtime_fn(vm, c->fn) != 0) {
        snprintf(c->err, c->errlen, "errgate.runtime has no %s", c->fn);
        return 0;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->pol_ref);
    if (c->arg) lua_pushstring(L, c->arg);
    int saved = vm->timeout_ms;
    vm->timeout_ms = EG_VM_LOAD_BUDGET_MS * 12; /* a case file may be long */
    int rc = eg_vm_pcall(vm, c->arg ? 2 : 1, 2, c->err, c->errlen);
    vm->timeout_ms = saved;
    if (rc != 0) return 0;
    size_t n = 0;
    const char *s = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &n) : NULL;
    *c->text = eg_xstrndup(s ? s : "", s ? n : 0);
    *c->code = lua_type(L, -1) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    c->rc = 0;
    return 0;
}

int eg_policy_call(eg_policy *p, const char *fn, const char *arg, char **text, int *code, char *err, size_t errlen) {
    cli_call c = {.p = p, .fn = fn, .arg = arg, .text = text, .code = code, .err = err, .errlen = errlen, .rc = -1};
    if (protected(p->vm, call_protected, &c, err, errlen) != 0) return -1;
    return c.rc;
}

static void fallback(eg_decision *out, const char *why) {
    memset(out, 0, sizeof *out);
    out->action = EG_ACT_HOLD;
    out->fallback = 1;
    out->delay_ms = EG_HOLD_FALLBACK_MS;
    eg_strlcpy(out->klass, "policy_error", sizeof out->klass);
    eg_strlcpy(out->code, "fallback", sizeof out->code);
    eg_decision_set_reason(out, EG_RSN_POLICY_ERROR);
    eg_strlcpy(out->message, why, sizeof out->message);
}

/* Pushes s, or nil when s is NULL. */
static void push_opt_str(lua_State *L, const char *s) {
    if (s) lua_pushstring(L, s);
    else lua_pushnil(L);
}

/* Pushes the breaker state name s: the interned copy when it is one of the
 * breaker's names ("closed" when NULL). */
static void push_breaker(const eg_policy *p, lua_State *L, const char *s) {
    if (!s) s = eg_breaker_state_name(EG_BR_CLOSED);
    for (int b = 0; b < EG_BR__N; b++) {
        const char *name = eg_breaker_state_name((eg_breaker_state)b);
        if (s == name || strcmp(s, name) == 0) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, p->breaker_ref[b]);
            return;
        }
    }
    lua_pushstring(L, s);
}

/* Copies the string at stack index idx into dst (at most n - 1 bytes, NUL
 * terminated); returns the VM's string, or NULL (dst untouched) when the
 * value is no string. */
static const char *stack_str(lua_State *L, int idx, char *dst, size_t n) {
    if (lua_type(L, idx) != LUA_TSTRING) return NULL;
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (len >= n) len = n - 1;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return s;
}

/* The action a decider answered (s: a string of p's VM, or NULL), or -1 when
 * it names none a policy may take. By pointer: the VM interns its strings
 * (kept_str), so no text is compared on the decision's path. */
static int action_of(const eg_policy *p, const char *s) {
    if (s)
        for (int a = 0; a < EG_ACT_REPUBLISH; a++)
            if (p->action_str[a] == s) return a;
    return -1;
}

/* The core's value of a decider's reason (s as in action_of):
 * EG_RSN_NONE for none or "", EG_RSN_OTHER for a text of the policy's own;
 * what eg_reason_parse answers for the same text. */
static eg_reason reason_of(const eg_policy *p, const char *s) {
    if (!s || !*s) return EG_RSN_NONE;
    for (int r = EG_RSN_OTHER + 1; r < EG_RSN__N; r++)
        if (p->reason_str[r] == s) return (eg_reason)r;
    return EG_RSN_OTHER;
}

#define DECIDE_NARGS 20
#define DECIDE_NRESULTS 10

/* decide_protected's argument block. */
typedef struct decide_call {
    eg_policy *p;
    const eg_failure *f;
    const eg_record *r;
    const eg_ctx *ctx;
    eg_decision *out;
    eg_policy_push_fn push; /* pushes the record's table instead of r, or NULL */
    const void *push_arg;
} decide_call;

/* Pushes the decision's arguments, calls the decider and reads its answer
 * into c->out (a fallback when the call fails or the answer is invalid). */
static int decide_protected(lua_State *L) {
    decide_call *c = cp_arg(L);
    eg_policy *p = c->p;
    const eg_failure *f = c->f;
    const eg_ctx *ctx = c->ctx;
    eg_decision *out = c->out;
    char err[512];
    /* the function, its arguments, the message handler and the record's
     * own pushes (growing the stack may raise: we are protected) */
    lua_checkstack(L, DECIDE_NARGS + 8);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->decide_ref);
    /* the failure */
    if ((unsigned)f->kind < N_KINDS) lua_rawgeti(L, LUA_REGISTRYINDEX, p->kind_ref[f->kind]);
    else lua_pushstring(L, eg_failure_kind_name(f->kind));
    if (f->status) lua_pushnumber(L, f->status);
    else lua_pushnil(L);
    push_opt_str(L, f->code);
    push_opt_str(L, f->class_hint);
    push_opt_str(L, f->message);
    if (f->body) lua_pushlstring(L, f->body, f->body_len < EG_BODY_CAP ? f->body_len : EG_BODY_CAP);
    else lua_pushnil(L);
    if (f->retry_after_ms >= 0) lua_pushnumber(L, (lua_Number)f->retry_after_ms);
    else lua_pushnil(L);
    lua_pushnumber(L, (lua_Number)f->latency_ms);
    /* the attempt context */
    lua_pushinteger(L, ctx->attempt);
    push_opt_str(L, ctx->last_class);
    lua_pushinteger(L, ctx->class_attempts);
    if ((unsigned)ctx->ordering < N_ORDERINGS) lua_rawgeti(L, LUA_REGISTRYINDEX, p->ordering_ref[ctx->ordering]);
    else lua_pushstring(L, eg_ordering_name(ctx->ordering));
    lua_pushnumber(L, (lua_Number)ctx->now_ms);
    lua_pushnumber(L, (lua_Number)ctx->first_failure_ms);
    if (ctx->last_delay_ms > 0) lua_pushnumber(L, (lua_Number)ctx->last_delay_ms);
    else lua_pushnil(L);
    lua_pushinteger(L, ctx->retry_count);
    push_opt_str(L, ctx->rung);
    push_breaker(p, L, ctx->breaker);
    lua_pushboolean(L, ctx->retry_budget);
    /* the record, only for a policy that reads it */
    if (p->reads_record && c->push) c->push(L, c->push_arg);
    else if (p->reads_record) eg_vm_push_record(p->vm, c->r, 0, EG_POLICY_STR_CAP);
    else lua_pushnil(L);
    if (eg_vm_pcall(p->vm, DECIDE_NARGS, DECIDE_NRESULTS, err, sizeof err) != 0) {
        fallback(out, err);
        return 0;
    }
    /* action, class, code, reason, delay_ms, message, rung, rung_index,
     * approval, protect:
     * plain values, read without conversions that could allocate */
    const int base = lua_gettop(L) - DECIDE_NRESULTS;
    memset(out, 0, sizeof *out);
    int action = action_of(p, lua_type(L, base + 1) == LUA_TSTRING ? lua_tostring(L, base + 1) : NULL);
    if (action < 0) {
        fallback(out, "invalid decision: no valid action");
        return 0;
    }
    out->action = (eg_action)action;
    stack_str(L, base + 2, out->klass, sizeof out->klass);
    stack_str(L, base + 3, out->code, sizeof out->code);
    /* the text is the policy's; the core reads the value */
    out->why = reason_of(p, stack_str(L, base + 4, out->reason, sizeof out->reason));
    stack_str(L, base + 6, out->message, sizeof out->message);
    if (out->action == EG_ACT_LADDER) {
        out->rung_index = lua_type(L, base + 8) == LUA_TNUMBER ? (int)lua_tointeger(L, base + 8) : 0;
        if (!stack_str(L, base + 7, out->rung, sizeof out->rung) || !out->rung[0] || out->rung_index < 1) {
            fallback(out, "invalid decision: ladder without a rung");
            return 0;
        }
    }
    if (out->action == EG_ACT_REPLAY &&
        (!stack_str(L, base + 7, out->replay_to, sizeof out->replay_to) || !out->replay_to[0])) {
        fallback(out, "invalid decision: replay without a topic");
        return 0;
    }
    out->approval = (out->action == EG_ACT_DLQ || out->action == EG_ACT_QUARANTINE) && lua_toboolean(L, base + 9);
    if (out->action == EG_ACT_DLQ || out->action == EG_ACT_QUARANTINE) {
        char prot[16];
        int mode = stack_str(L, base + 10, prot, sizeof prot) ? eg_prot_mode_parse(prot) : -1;
        out->protect = mode >= 0 ? mode + 1 : 0;
    }
    lua_Number d = lua_type(L, base + 5) == LUA_TNUMBER ? lua_tonumber(L, base + 5) : 0;
    if (!(d >= 0)) d = 0;
    if (d > 86400000.0) d = 86400000.0;
    out->delay_ms = (int64_t)d;
    return 0;
}

void eg_policy_decide(eg_policy *p, const eg_failure *f, const eg_record *r, const eg_ctx *ctx, eg_decision *out) {
    eg_policy_decide_pushed(p, f, NULL, NULL, r, ctx, out);
}

int eg_policy_reads_record(const eg_policy *p) { return p->reads_record; }

void eg_policy_decide_pushed(eg_policy *p, const eg_failure *f, eg_policy_push_fn push, const void *push_arg,
                             const eg_record *r, const eg_ctx *ctx, eg_decision *out) {
    decide_call c = {.p = p, .f = f, .r = r, .ctx = ctx, .out = out, .push = push, .push_arg = push_arg};
    char err[256], why[320];
    /* decide_protected writes out on every return (an answer or a
     * fallback); only an error raised inside it leaves out unwritten */
    if (protected(p->vm, decide_protected, &c, err, sizeof err) != 0) {
        snprintf(why, sizeof why, "policy VM: %s", err);
        fallback(out, why);
    }
    eg_policy_class_env(p, out->klass, out); /* read at load: no call into the state */
}
