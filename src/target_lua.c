/* target_lua.c — the in-process Lua target.
 *
 * The target file (loaded by errgate.runtime's load_target in the sandbox)
 * returns function(record). Returning nothing is success. Returning a table
 * is a failure: {status, class, code, message, retry_after_ms}; its kind is
 * `http` when it carries a status (a handler mimicking a service) and `lua`
 * otherwise. Raising is a failure of kind `lua` with the error as message.
 * The function runs at submit time on the loop thread under the VM deadline;
 * results are queued and delivered by flush, which the gateway calls right
 * after its submits (dispatch), so the done callback never runs inside
 * submit and no extra loop wakeup is needed. */
#include "target.h"
#include "luavm.h"
#include "metrics.h"
#include "util.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wall-clock budget of one call of the target function: a handler does real
 * work, so it gets more than a policy decision; a runaway one still ends. */
#define LUA_TARGET_BUDGET_MS 1000
/* Memory cap of the target's state: a handler holds more than a policy. */
#define LUA_TARGET_MEM_LIMIT ((size_t)512 << 20)

typedef struct result {
    eg_record *rec;
    int failed;
    eg_failure f;
} result;

typedef struct lua_target {
    eg_target base;
    eg_vm *vm;
    int fn_ref;
    result *q;           /* results waiting for delivery */
    int nq, capq;
} lua_target;

static char *opt_str(lua_State *L, const char *k) {
    lua_getfield(L, -1, k);
    char *s = lua_type(L, -1) == LUA_TSTRING ? eg_xstrdup(lua_tostring(L, -1)) : NULL;
    lua_pop(L, 1);
    return s;
}

static int lt_submit(eg_target *t, eg_record *rec) {
    lua_target *lt = (lua_target *)t;
    lua_State *L = lt->vm->L;
    if (lt->nq == lt->capq) {
        lt->capq = lt->capq ? lt->capq * 2 : 256;
        lt->q = eg_xrealloc(lt->q, (size_t)lt->capq * sizeof *lt->q);
    }
    result *res = &lt->q[lt->nq++];
    memset(res, 0, sizeof *res);
    res->rec = rec;
    res->f.retry_after_ms = -1;
    int64_t t0 = eg_now_ns();
    char err[512];
    lua_rawgeti(L, LUA_REGISTRYINDEX, lt->fn_ref);
    eg_vm_push_record(lt->vm, rec, 1, 0);
    if (eg_vm_pcall(lt->vm, 1, 1, err, sizeof err) != 0) {
        res->failed = 1;
        res->f.kind = EG_FK_LUA;
        res->f.message = eg_xstrdup(err);
    } else {
        if (lua_type(L, -1) == LUA_TTABLE) {
            res->failed = 1;
            lua_getfield(L, -1, "status");
            res->f.status = (int)lua_tointeger(L, -1);
            lua_getfield(L, -2, "retry_after_ms");
            if (lua_isnumber(L, -1)) res->f.retry_after_ms = (int64_t)lua_tonumber(L, -1);
            lua_pop(L, 2);
            res->f.kind = res->f.status ? EG_FK_HTTP : EG_FK_LUA;
            res->f.class_hint = opt_str(L, "class");
            res->f.code = opt_str(L, "code");
            res->f.message = opt_str(L, "message");
        } else if (!lua_isnil(L, -1)) {
            res->failed = 1;
            res->f.kind = EG_FK_LUA;
            res->f.message = eg_xstrdup("lua target returned neither nothing nor a failure table");
        }
        lua_pop(L, 1);
    }
    int64_t took = eg_now_ns() - t0;
    res->f.latency_ms = took / 1000000;
    eg_metrics_observe_target("lua", (double)took / 1e9);
    t->inflight++;
    return 0;
}

/* Delivers queued results. The done callback may submit more records; those
 * land in a fresh batch that the gateway's next flush delivers. */
static void lt_flush(eg_target *t) {
    lua_target *lt = (lua_target *)t;
    result *batch = lt->q;
    int n = lt->nq;
    lt->q = NULL;
    lt->nq = lt->capq = 0;
    for (int i = 0; i < n; i++) {
        lt->base.inflight--;
        lt->base.done(batch[i].rec, batch[i].failed ? &batch[i].f : NULL, 0, lt->base.done_arg);
    }
    free(batch);
}

static int lt_available(const eg_target *t) { return 1 << 20; }

static void lt_cancel_all(eg_target *t) {
    lua_target *lt = (lua_target *)t;
    result *batch = lt->q;
    int n = lt->nq;
    lt->q = NULL;
    lt->nq = lt->capq = 0;
    for (int i = 0; i < n; i++) {
        eg_failure_clear(&batch[i].f);
        t->inflight--;
        t->done(batch[i].rec, NULL, 1, t->done_arg);
    }
    free(batch);
}

static void lt_destroy(eg_target *t) {
    lua_target *lt = (lua_target *)t;
    lt_cancel_all(t);
    eg_vm_free(lt->vm);
    free(lt);
}

static const eg_target_ops lua_ops = {.submit = lt_submit, .available = lt_available,
                                      .cancel_all = lt_cancel_all, .flush = lt_flush, .destroy = lt_destroy};

eg_target *eg_target_lua_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen) {
    eg_vm *vm = eg_vm_new(LUA_TARGET_MEM_LIMIT, err, errlen);
    if (!vm) return NULL;
    lua_State *L = vm->L;
    char msg[512];
    if (eg_vm_push_runtime_fn(vm, "load_target") != 0) {
        snprintf(err, errlen, "errgate.runtime has no load_target");
        eg_vm_free(vm);
        return NULL;
    }
    lua_pushstring(L, cfg->lua_target);
    if (eg_vm_pcall(vm, 1, 2, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "target %s: %s", cfg->lua_target, msg);
        eg_vm_free(vm);
        return NULL;
    }
    if (lua_type(L, -2) != LUA_TFUNCTION) {
        const char *why = lua_tostring(L, -1);
        snprintf(err, errlen, "target %s: %s", cfg->lua_target, why ? why : "must return a function");
        eg_vm_free(vm);
        return NULL;
    }
    lua_pop(L, 1);
    lua_target *lt = eg_xcalloc(1, sizeof *lt);
    lt->base.ops = &lua_ops;
    lt->vm = vm;
    lt->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    vm->timeout_ms = LUA_TARGET_BUDGET_MS;
    return &lt->base;
}
