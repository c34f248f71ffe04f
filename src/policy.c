/* policy.c — call the Lua policy on failures (see policy.h).
 *
 * The runtime's load_policy(path) returns a policy object; decide(pol,
 * failure, record, ctx) returns {action, class, code, reason, delay_ms,
 * message}. Strings handed to the policy are capped at EG_POLICY_STR_CAP. */
#include "policy.h"
#include "luavm.h"
#include "sha256.h"
#include "util.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EG_POLICY_STR_CAP 4096
#define EG_HOLD_FALLBACK_MS 1000

struct eg_policy {
    eg_vm *vm;
    int pol_ref;
    int timeout_ms;
    size_t mem_limit;
    eg_rung *rungs;      /* rt.ladder_rungs(pol), read once at load */
    int nrungs;
    char *path;
    int64_t loaded_at;
    char sha256[65];
    char id[192];
};

/* Reads rt.ladder_rungs(pol) (pol at the stack top) into p. A runtime
 * without ladders, or an invalid answer, gives no rungs. */
static void load_rungs(eg_policy *p) {
    lua_State *L = p->vm->L;
    char err[256];
    if (eg_vm_push_runtime_fn(p->vm, "ladder_rungs") != 0) return;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    if (eg_vm_pcall(p->vm, 1, 1, err, sizeof err) != 0) return;
    int n = lua_type(L, -1) == LUA_TTABLE ? (int)lua_objlen(L, -1) : 0;
    p->rungs = n ? eg_xcalloc((size_t)n, sizeof *p->rungs) : NULL;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        lua_getfield(L, -1, "name");
        lua_getfield(L, -2, "delay_ms");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TNUMBER) {
            eg_rung *r = &p->rungs[p->nrungs++];
            eg_strlcpy(r->name, lua_tostring(L, -2), sizeof r->name);
            r->delay_ms = (int64_t)lua_tonumber(L, -1);
        }
        lua_pop(L, 3);
    }
    lua_pop(L, 1);
}

eg_policy *eg_policy_load(const char *path, int timeout_ms, char *err, size_t errlen) {
    return eg_policy_load_capped(path, timeout_ms, 0, err, errlen);
}

eg_policy *eg_policy_load_capped(const char *path, int timeout_ms, size_t mem_limit, char *err, size_t errlen) {
    char sha[65];
    if (!mem_limit) mem_limit = EG_POLICY_MEM_LIMIT;
    if (eg_sha256_file_hex(path, sha) != 0) {
        snprintf(err, errlen, "policy %s: cannot read file", path);
        return NULL;
    }
    eg_vm *vm = eg_vm_new(mem_limit, err, errlen);
    if (!vm) return NULL;
    lua_State *L = vm->L;
    char msg[512];
    if (eg_vm_push_runtime_fn(vm, "load_policy") != 0) {
        snprintf(err, errlen, "errgate.runtime has no load_policy");
        eg_vm_free(vm);
        return NULL;
    }
    lua_pushstring(L, path);
    if (eg_vm_pcall(vm, 1, 2, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "policy %s: %s", path, msg);
        eg_vm_free(vm);
        return NULL;
    }
    if (lua_type(L, -2) != LUA_TTABLE) {
        const char *why = lua_tostring(L, -1);
        snprintf(err, errlen, "%s", why ? why : "policy did not load");
        if (!strstr(err, path)) snprintf(err, errlen, "policy %s: %s", path, why ? why : "did not load");
        eg_vm_free(vm);
        return NULL;
    }
    lua_pop(L, 1);
    eg_policy *p = eg_xcalloc(1, sizeof *p);
    p->vm = vm;
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "version");
    snprintf(p->id, sizeof p->id, "%s@%s+%.8s", lua_tostring(L, -2) ? lua_tostring(L, -2) : "unnamed",
             lua_tostring(L, -1) ? lua_tostring(L, -1) : "0", sha);
    lua_pop(L, 2);
    memcpy(p->sha256, sha, sizeof sha);
    lua_pushstring(L, p->id); /* the policy object carries the full id too */
    lua_setfield(L, -2, "id");
    p->pol_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    vm->timeout_ms = timeout_ms;
    p->timeout_ms = timeout_ms;
    p->mem_limit = mem_limit;
    p->path = eg_xstrdup(path);
    p->loaded_at = eg_wall_ms();
    load_rungs(p);
    return p;
}

void eg_policy_free(eg_policy *p) {
    if (!p) return;
    eg_vm_free(p->vm);
    free(p->rungs);
    free(p->path);
    free(p);
}

const char *eg_policy_id(const eg_policy *p) { return p->id; }
const char *eg_policy_path(const eg_policy *p) { return p->path; }
const char *eg_policy_sha256(const eg_policy *p) { return p->sha256; }
int64_t eg_policy_loaded_at(const eg_policy *p) { return p->loaded_at; }

int eg_policy_rungs(const eg_policy *p, const eg_rung **rungs) {
    *rungs = p->rungs;
    return p->nrungs;
}

int eg_policy_reload(eg_policy **p, char *err, size_t errlen) {
    eg_policy *fresh = eg_policy_load_capped((*p)->path, (*p)->timeout_ms, (*p)->mem_limit, err, errlen);
    if (!fresh) return -1;
    eg_policy_free(*p);
    *p = fresh;
    return 0;
}

int eg_policy_call(eg_policy *p, const char *fn, const char *arg, char **text, int *code,
                   char *err, size_t errlen) {
    lua_State *L = p->vm->L;
    if (eg_vm_push_runtime_fn(p->vm, fn) != 0) {
        snprintf(err, errlen, "errgate.runtime has no %s", fn);
        return -1;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    if (arg) lua_pushstring(L, arg);
    int saved = p->vm->timeout_ms;
    p->vm->timeout_ms = EG_VM_LOAD_BUDGET_MS * 12; /* a case file may be long */
    int rc = eg_vm_pcall(p->vm, arg ? 2 : 1, 2, err, errlen);
    p->vm->timeout_ms = saved;
    if (rc != 0) return -1;
    size_t n = 0;
    const char *s = lua_tolstring(L, -2, &n);
    *text = eg_xstrndup(s ? s : "", s ? n : 0);
    *code = (int)lua_tointeger(L, -1);
    lua_pop(L, 2);
    return 0;
}

static void fallback(eg_decision *out, const char *why) {
    memset(out, 0, sizeof *out);
    out->action = EG_ACT_HOLD;
    out->fallback = 1;
    out->delay_ms = EG_HOLD_FALLBACK_MS;
    eg_strlcpy(out->klass, "policy_error", sizeof out->klass);
    eg_strlcpy(out->code, "fallback", sizeof out->code);
    eg_strlcpy(out->reason, "policy_error", sizeof out->reason);
    eg_strlcpy(out->message, why, sizeof out->message);
}

/* Reads t[k] as a string into dst; returns 0 if present. */
static int field_str(lua_State *L, const char *k, char *dst, size_t n) {
    lua_getfield(L, -1, k);
    int ok = lua_type(L, -1) == LUA_TSTRING;
    if (ok) eg_strlcpy(dst, lua_tostring(L, -1), n);
    lua_pop(L, 1);
    return ok ? 0 : -1;
}

void eg_policy_decide(eg_policy *p, const eg_failure *f, const eg_record *r,
                      const eg_ctx *ctx, eg_decision *out) {
    eg_vm *vm = p->vm;
    lua_State *L = vm->L;
    char err[512];
    if (eg_vm_push_runtime_fn(vm, "decide") != 0) {
        fallback(out, "errgate.runtime has no decide");
        return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->pol_ref);
    eg_vm_push_failure(vm, f);
    eg_vm_push_record(vm, r, 0, EG_POLICY_STR_CAP);
    lua_createtable(L, 0, 12);
    lua_pushinteger(L, ctx->attempt);
    lua_setfield(L, -2, "attempt");
    if (ctx->last_class) {
        lua_pushstring(L, ctx->last_class);
        lua_setfield(L, -2, "last_class");
    }
    lua_pushinteger(L, ctx->class_attempts);
    lua_setfield(L, -2, "class_attempts");
    lua_pushstring(L, eg_ordering_name(ctx->ordering));
    lua_setfield(L, -2, "ordering");
    lua_pushnumber(L, (lua_Number)ctx->now_ms);
    lua_setfield(L, -2, "now_ms");
    lua_pushnumber(L, (lua_Number)ctx->first_failure_ms);
    lua_setfield(L, -2, "first_failure_ms");
    if (ctx->last_delay_ms > 0) {
        lua_pushnumber(L, (lua_Number)ctx->last_delay_ms);
        lua_setfield(L, -2, "last_delay_ms");
    }
    lua_pushinteger(L, ctx->retry_count);
    lua_setfield(L, -2, "retry_count");
    if (ctx->rung) {
        lua_pushstring(L, ctx->rung);
        lua_setfield(L, -2, "rung");
    }
    lua_pushstring(L, ctx->breaker ? ctx->breaker : "closed");
    lua_setfield(L, -2, "breaker");
    lua_pushboolean(L, ctx->retry_budget);
    lua_setfield(L, -2, "retry_budget");
    if (eg_vm_pcall(vm, 4, 1, err, sizeof err) != 0) {
        fallback(out, err);
        return;
    }
    memset(out, 0, sizeof *out);
    char action[32];
    if (lua_type(L, -1) != LUA_TTABLE || field_str(L, "action", action, sizeof action) != 0 ||
        eg_action_parse(action) < 0) {
        lua_pop(L, 1);
        fallback(out, "invalid decision: no valid action");
        return;
    }
    out->action = (eg_action)eg_action_parse(action);
    field_str(L, "class", out->klass, sizeof out->klass);
    field_str(L, "code", out->code, sizeof out->code);
    field_str(L, "reason", out->reason, sizeof out->reason);
    field_str(L, "message", out->message, sizeof out->message);
    if (out->action == EG_ACT_LADDER) {
        lua_getfield(L, -1, "rung_index");
        out->rung_index = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (field_str(L, "rung", out->rung, sizeof out->rung) != 0 || !out->rung[0] || out->rung_index < 1) {
            lua_pop(L, 1);
            fallback(out, "invalid decision: ladder without a rung");
            return;
        }
    }
    lua_getfield(L, -1, "delay_ms");
    lua_Number d = lua_tonumber(L, -1);
    lua_pop(L, 2);
    if (!(d >= 0)) d = 0;
    if (d > 86400000.0) d = 86400000.0;
    out->delay_ms = (int64_t)d;
}
