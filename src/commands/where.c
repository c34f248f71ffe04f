/* where.c — the C side of `errgate replay --where` (see dlq.h).
 *
 * Each expression gets its own VM from luavm.h, so it is bounded exactly as
 * a policy is: the JIT engine off and a count hook enforcing a wall-clock
 * deadline per call (a `while true do end` fails at the budget), the
 * policies' memory cap, and errgate's runtime loaded, whose sandbox hardens
 * the string metatable. errgate.where compiles the text in the policy
 * sandbox and returns a predicate, kept in the registry; each evaluation
 * pushes a fresh record table (eg_vm_push_record, without the value) and
 * calls it under eg_vm_pcall. */
#include "dlq.h"
#include "luavm.h"
#include "policy.h"
#include "util.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHERE_STR_CAP 65536

struct eg_where {
    eg_vm *vm;
    int ref; /* registry ref of the predicate */
};

eg_where *eg_where_new(const char *expr, int budget_ms, char *err, size_t errlen) {
    eg_where *w = eg_xcalloc(1, sizeof *w);
    w->vm = eg_vm_new(EG_POLICY_MEM_LIMIT, err, errlen);
    if (!w->vm) {
        free(w);
        return NULL;
    }
    lua_State *L = w->vm->L;
    lua_getglobal(L, "require");
    lua_pushstring(L, "errgate.where");
    if (eg_vm_pcall(w->vm, 1, 1, err, errlen) != 0) goto fail;
    lua_getfield(L, -1, "compile");
    lua_remove(L, -2);
    lua_pushstring(L, expr);
    if (eg_vm_pcall(w->vm, 1, 2, err, errlen) != 0) goto fail;
    if (!lua_isfunction(L, -2)) {
        const char *m = lua_tostring(L, -1);
        snprintf(err, errlen, "%s", m ? m : "--where: cannot compile");
        goto fail;
    }
    lua_pop(L, 1);
    w->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    w->vm->timeout_ms = budget_ms;
    return w;
fail:
    eg_where_free(w);
    return NULL;
}

int eg_where_eval(eg_where *w, const rd_kafka_message_t *m, char *err, size_t errlen) {
    lua_State *L = w->vm->L;
    eg_record rec;
    eg_record_view(&rec, m);
    lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref);
    eg_vm_push_record(w->vm, &rec, 0, WHERE_STR_CAP);
    if (eg_vm_pcall(w->vm, 1, 1, err, errlen) != 0) return -1;
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

void eg_where_free(eg_where *w) {
    if (!w) return;
    eg_vm_free(w->vm);
    free(w);
}
