/* dlq_foreign.c — foreign DLQ records for the DLQ commands (see
 * dlq_foreign.h).
 *
 * One VM (luavm.h, bounded like a policy's) runs errgate.recorded.inbox on
 * the record's headers, once per record: the answer (code, message) is
 * cached for the last record asked about, since a tail line asks for
 * several fields of the same record. */
#include "dlq_foreign.h"
#include "dlq_origin.h"
#include "headers.h"
#include "luavm.h"
#include "policy.h"
#include "record.h"
#include "text.h"
#include "util.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#define FOREIGN_BUDGET_MS 200
#define FOREIGN_STR_CAP 65536

static eg_vm *vm;
static int fn_ref = LUA_NOREF, broken;
static struct {
    const rd_kafka_message_t *m;
    int64_t offset;
    int32_t partition;
    char code[256], message[1024], deliveries[16];
} last;

/* The VM with errgate.recorded.inbox in the registry, or NULL. */
static eg_vm *state(void) {
    if (vm || broken) return vm;
    char err[256];
    vm = eg_vm_new(EG_POLICY_MEM_LIMIT, err, sizeof err);
    if (!vm) {
        broken = 1;
        return NULL;
    }
    lua_State *L = vm->L;
    lua_getglobal(L, "require");
    lua_pushstring(L, "errgate.recorded");
    if (eg_vm_pcall(vm, 1, 1, err, sizeof err) != 0 || !lua_istable(L, -1)) {
        eg_vm_free(vm);
        vm = NULL;
        broken = 1;
        return NULL;
    }
    lua_getfield(L, -1, "inbox");
    lua_remove(L, -2);
    fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    vm->timeout_ms = FOREIGN_BUDGET_MS;
    return vm;
}

/* Copies the string field k of the table at the top into out (raw access). */
static void field(lua_State *L, const char *k, char *out, size_t outlen) {
    lua_pushstring(L, k);
    lua_rawget(L, -2);
    size_t n = 0;
    const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
    if (s) eg_printable(s, n, out, outlen);
    else out[0] = '\0';
    lua_pop(L, 1);
}

/* The delivery count the failure table at the top states (its body's
 * "delivery_count", a whole number errgate.recorded bounded to 0..2^31-1)
 * as decimal text into out, else "". */
static void deliveries(lua_State *L, char *out, size_t outlen) {
    static const char key[] = "\"delivery_count\":";
    out[0] = '\0';
    lua_pushstring(L, "body");
    lua_rawget(L, -2);
    const char *body = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    const char *p = body ? strstr(body, key) : NULL;
    if (p) {
        p += sizeof key - 1;
        size_t n = strspn(p, "0123456789");
        if (n > 0 && n <= 10 && n < outlen) {
            memcpy(out, p, n);
            out[n] = '\0';
        }
    }
    lua_pop(L, 1);
}

/* Runs the mapper on m unless it is the record last asked about. */
static void map(const rd_kafka_message_t *m) {
    if (last.m == m && last.offset == m->offset && last.partition == m->partition) return;
    last.m = m;
    last.offset = m->offset;
    last.partition = m->partition;
    last.code[0] = last.message[0] = last.deliveries[0] = '\0';
    eg_vm *v = state();
    if (!v) return;
    lua_State *L = v->L;
    eg_record rec;
    eg_record_view(&rec, m);
    char err[256];
    lua_rawgeti(L, LUA_REGISTRYINDEX, fn_ref);
    eg_vm_push_record(v, &rec, 0, FOREIGN_STR_CAP);
    lua_pushstring(L, "auto");
    if (eg_vm_pcall(v, 2, 1, err, sizeof err) != 0) return;
    if (lua_istable(L, -1)) {
        field(L, "code", last.code, sizeof last.code);
        field(L, "message", last.message, sizeof last.message);
        deliveries(L, last.deliveries, sizeof last.deliveries);
        if (!strcmp(last.code, "inbox_unrecognized")) last.code[0] = last.message[0] = '\0';
    }
    lua_pop(L, 1);
}

void eg_dlq_foreign_fill(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen) {
    if (out[0] && strcmp(out, "-") != 0) return;
    const char *val = NULL;
    char num[32];
    if (!strcmp(name, EG_H_CODE) || !strcmp(name, EG_H_MESSAGE) || !strcmp(name, EG_H_ATTEMPTS)) {
        map(m);
        val = !strcmp(name, EG_H_CODE) ? last.code : !strcmp(name, EG_H_MESSAGE) ? last.message : last.deliveries;
    } else if (!strcmp(name, EG_H_ORIG_TOPIC) || !strcmp(name, EG_H_ORIG_PARTITION) ||
               !strcmp(name, EG_H_ORIG_OFFSET)) {
        rd_kafka_headers_t *h = NULL;
        eg_dlq_origin o;
        if (rd_kafka_message_headers(m, &h) != 0 || eg_dlq_origin_read(h, &o) != 0) return;
        int64_t n = !strcmp(name, EG_H_ORIG_PARTITION) ? o.partition : o.offset;
        if (!strcmp(name, EG_H_ORIG_TOPIC)) {
            eg_printable(o.topic, strlen(o.topic), out, outlen);
            return;
        }
        if (n < 0) return;
        snprintf(num, sizeof num, "%lld", (long long)n);
        val = num;
    }
    if (val && val[0]) eg_strlcpy(out, val, outlen);
}

void eg_dlq_foreign_done(void) {
    eg_vm_free(vm);
    vm = NULL;
    fn_ref = LUA_NOREF;
    broken = 0;
    memset(&last, 0, sizeof last);
}
