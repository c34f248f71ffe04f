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
 * submit and no extra loop wakeup is needed.
 *
 * Protection: the handler is user code in a capped state, so everything the
 * C side does there — pushing the record (allocations past the cap raise),
 * reading the answer — runs in one C function under lua_cpcall, and the
 * answer table is read with lua_rawget only (a table with __index or other
 * metamethods never runs code outside the call's budget). A raise anywhere
 * is a failure of kind `lua`, never a panic; strings copied out of the
 * answer are capped at ANSWER_STR_CAP.
 *
 * The inbox target (source.inbox) is this target with a built-in handler,
 * errgate.runtime.inbox_target(format): it calls nothing outside, and every
 * record is a failure of kind `recorded` read from its own headers
 * (errgate.recorded.inbox, given the record and where its dialect says it
 * was born, dlq_origin.h), which the policy triages. */
#include "target.h"
#include "dlq_origin.h"
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

/* The answer table's fields, read per failure: their Lua strings are made
 * once at load and kept in the registry (key_ref), so a read is a registry
 * index and a raw get, not an interning of the name (a hash of it and a
 * lookup in the string table) for each field of each dead letter. */
enum { K_STATUS, K_RETRY_AFTER, K_KIND, K_CLASS, K_CODE, K_MESSAGE, K_BODY, K__N };
static const char *const key_names[K__N] = {"status", "retry_after_ms", "kind", "class", "code", "message", "body"};

typedef struct lua_target {
    eg_target base;
    eg_vm *vm;
    int fn_ref;
    int key_ref[K__N]; /* registry refs of the key_names strings */
    int inbox;         /* the inbox target: the handler is errgate.runtime.inbox_target's */
    result *q;         /* results waiting for delivery */
    int nq, capq;
} lua_target;

/* Longest string kept from a handler's failure table (class, code, message). */
#define ANSWER_STR_CAP 4096

/* Pushes t[key_names[k]] (t at the stack top) without metamethods. */
static void raw_field(lua_State *L, const lua_target *lt, int k) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, lt->key_ref[k]);
    lua_rawget(L, -2);
}

/* A copy of the string t[key_names[k]] (t at the stack top), at most
 * ANSWER_STR_CAP bytes, or NULL when it is not a string. */
static char *opt_str(lua_State *L, const lua_target *lt, int k) {
    raw_field(L, lt, k);
    size_t n = 0;
    const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
    char *s = v ? eg_xstrndup(v, n < ANSWER_STR_CAP ? n : ANSWER_STR_CAP) : NULL;
    lua_pop(L, 1);
    return s;
}

typedef struct call {
    lua_target *lt;
    eg_record *rec;
    result *res;
} call;

/* Pushes the inbox handler's second argument: where the record was born,
 * as its DLQ dialect states it (dlq_origin.h), {format, topic, partition,
 * offset, timestamp, group} with the unknown ones absent, or nil. */
static void push_origin(lua_State *L, const eg_record *rec) {
    const rd_kafka_headers_t *h = eg_record_headers(rec);
    eg_dlq_origin o;
    if (!h || eg_dlq_origin_read(h, &o) != 0) {
        lua_pushnil(L);
        return;
    }
    lua_createtable(L, 0, 6);
    lua_pushstring(L, o.format);
    lua_setfield(L, -2, "format");
    lua_pushstring(L, o.topic);
    lua_setfield(L, -2, "topic");
    const struct {
        const char *k;
        int64_t v;
    } nums[] = {{"partition", o.partition}, {"offset", o.offset}, {"timestamp", o.timestamp_ms}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (nums[i].v >= 0) {
            lua_pushnumber(L, (lua_Number)nums[i].v);
            lua_setfield(L, -2, nums[i].k);
        }
    if (o.group[0]) {
        lua_pushstring(L, o.group);
        lua_setfield(L, -2, "group");
    }
}

/* Calls the handler on the record and reads its answer into c->res. */
static int call_protected(lua_State *L) {
    call *c = lua_touserdata(L, 1);
    result *res = c->res;
    char err[512];
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->lt->fn_ref);
    eg_vm_push_record(c->lt->vm, c->rec, 1, 0);
    if (c->lt->inbox) push_origin(L, c->rec);
    if (eg_vm_pcall(c->lt->vm, c->lt->inbox ? 2 : 1, 1, err, sizeof err) != 0) {
        res->failed = 1;
        res->f.kind = EG_FK_LUA;
        res->f.message = eg_xstrdup(err);
        return 0;
    }
    const lua_target *lt = c->lt;
    if (lua_type(L, -1) == LUA_TTABLE) {
        res->failed = 1;
        raw_field(L, lt, K_STATUS);
        lua_Number st = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
        res->f.status = st >= 1 && st <= 999 ? (int)st : 0;
        lua_pop(L, 1);
        raw_field(L, lt, K_RETRY_AFTER);
        if (lua_isnumber(L, -1)) {
            lua_Number ra = lua_tonumber(L, -1);
            if (ra >= 0 && ra <= 86400000.0) res->f.retry_after_ms = (int64_t)ra;
        }
        lua_pop(L, 1);
        raw_field(L, lt, K_KIND); /* only the inbox handler's "recorded" is read */
        int recorded = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "recorded") == 0;
        lua_pop(L, 1);
        res->f.kind = lt->inbox && recorded ? EG_FK_RECORDED : res->f.status ? EG_FK_HTTP : EG_FK_LUA;
        res->f.class_hint = opt_str(L, lt, K_CLASS);
        res->f.code = opt_str(L, lt, K_CODE);
        res->f.message = opt_str(L, lt, K_MESSAGE);
        if (lt->inbox && (res->f.body = opt_str(L, lt, K_BODY)) != NULL) res->f.body_len = strlen(res->f.body);
    } else if (!lua_isnil(L, -1)) {
        res->failed = 1;
        res->f.kind = EG_FK_LUA;
        res->f.message = eg_xstrdup("lua target returned neither nothing nor a failure table");
    }
    return 0;
}

static int cp_collect(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

/* A raise outside the handler's own call (the record's table past the
 * memory cap, ...): a `lua` failure with its reason, whatever was read. */
static void protected_failed(lua_State *L, result *res, int rc) {
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
    eg_failure_clear(&res->f);
    res->failed = 1;
    res->f.kind = EG_FK_LUA;
    res->f.retry_after_ms = -1;
    char buf[600];
    snprintf(buf, sizeof buf, "lua target: %s", msg);
    res->f.message = eg_xstrdup(buf);
    lua_pop(L, 1);
    if (rc == LUA_ERRMEM) lua_cpcall(L, cp_collect, NULL); /* LuaJIT has no emergency collection */
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
    call c = {lt, rec, res};
    int rc = lua_cpcall(L, call_protected, &c);
    if (rc != 0) protected_failed(L, res, rc);
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
    int n = lt->nq, cap = lt->capq;
    lt->q = NULL;
    lt->nq = lt->capq = 0;
    for (int i = 0; i < n; i++) {
        lt->base.inflight--;
        lt->base.done(batch[i].rec, batch[i].failed ? &batch[i].f : NULL, 0, lt->base.done_arg);
    }
    if (!lt->q) { /* nothing submitted meanwhile: the array serves the next batch (no malloc per pass) */
        lt->q = batch;
        lt->capq = cap;
    } else {
        free(batch);
    }
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

static const eg_target_ops lua_ops = {.submit = lt_submit,
                                      .available = lt_available,
                                      .cancel_all = lt_cancel_all,
                                      .flush = lt_flush,
                                      .destroy = lt_destroy};

typedef struct load {
    eg_vm *vm;
    const char *path;
    const char *inbox; /* source.inbox, or NULL: load the file at path */
    char *err;
    size_t errlen;
    int fn_ref;        /* LUA_NOREF until the handler is loaded */
    int key_ref[K__N]; /* the answer's field names, kept (lua_target.key_ref) */
} load;

/* rt.load_target(path), and a ref to the function it returned. */
static int load_protected(lua_State *L) {
    load *c = lua_touserdata(L, 1);
    char msg[512];
    if (eg_vm_push_runtime_fn(c->vm, c->inbox ? "inbox_target" : "load_target") != 0) {
        snprintf(c->err, c->errlen, "errgate.runtime has no %s", c->inbox ? "inbox_target" : "load_target");
        return 0;
    }
    lua_pushstring(L, c->inbox ? c->inbox : c->path);
    if (eg_vm_pcall(c->vm, 1, 2, msg, sizeof msg) != 0) {
        snprintf(c->err, c->errlen, "target %s: %s", c->path, msg);
        return 0;
    }
    if (lua_type(L, -2) != LUA_TFUNCTION) {
        const char *why = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "must return a function";
        snprintf(c->err, c->errlen, "target %s: %s", c->path, why);
        return 0;
    }
    lua_pop(L, 1);
    for (int k = 0; k < K__N; k++) {
        lua_pushstring(L, key_names[k]);
        c->key_ref[k] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    c->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* last: set only when all are */
    return 0;
}

eg_target *eg_target_lua_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen) {
    eg_vm *vm = eg_vm_new(LUA_TARGET_MEM_LIMIT, err, errlen);
    if (!vm) return NULL;
    const char *inbox = cfg->target_kind == EG_TARGET_INBOX ? cfg->inbox : NULL;
    load c = {vm, inbox ? "inbox" : cfg->lua_target, inbox, err, errlen, LUA_NOREF, {0}};
    if (lua_cpcall(vm->L, load_protected, &c) != 0) {
        const char *msg = lua_type(vm->L, -1) == LUA_TSTRING ? lua_tostring(vm->L, -1) : "error";
        snprintf(err, errlen, "target %s: %s", c.path, msg);
    }
    if (c.fn_ref == LUA_NOREF) {
        eg_vm_free(vm);
        return NULL;
    }
    lua_target *lt = eg_xcalloc(1, sizeof *lt);
    lt->base.ops = &lua_ops;
    lt->vm = vm;
    lt->fn_ref = c.fn_ref;
    memcpy(lt->key_ref, c.key_ref, sizeof lt->key_ref);
    lt->inbox = inbox != NULL;
    vm->timeout_ms = LUA_TARGET_BUDGET_MS;
    return &lt->base;
}
