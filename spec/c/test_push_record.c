/* test_push_record.c — the record a Lua handler or policy sees and the
 * answer the Lua target reads back.
 *
 * The record table (eg_vm_push_record) takes its headers from the record's
 * kept header list (eg_record_read_headers), not from a fresh parse of the
 * message: the gateway reads a record's headers once, as librdkafka 2.0.2
 * parses a header-less consumed message again, with an allocation, on every
 * call. A record whose kept list says "no headers" must show none, one that
 * was never read shows the message's.
 *
 * The Lua target reads each field of a failure table (status,
 * retry_after_ms, class, code, message) into the failure, through the
 * field names it keeps from load on. The message is real (produced to and
 * consumed from an in-process mock cluster) and carries x-tenant: vip. */
#include "config.h"
#include "luavm.h"
#include "mock_message.h"
#include "record.h"
#include "tap.h"
#include "target.h"

#include <lauxlib.h>
#include <lua.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* record.headers["x-tenant"] of the table eg_vm_push_record builds for r,
 * into out ("" when absent). */
static void tenant_seen(eg_vm *vm, const eg_record *r, char *out, size_t outlen) {
    lua_State *L = vm->L;
    eg_vm_push_record(vm, r, 1, 0);
    lua_getfield(L, -1, "headers");
    lua_getfield(L, -1, "x-tenant");
    const char *v = lua_tostring(L, -1);
    snprintf(out, outlen, "%s", v ? v : "");
    lua_pop(L, 3);
}

/* Every field of the record table but its headers, as one string. */
static void fields_seen(eg_vm *vm, const eg_record *r, char *out, size_t outlen) {
    lua_State *L = vm->L;
    char err[200] = "";
    out[0] = '\0';
    if (luaL_loadstring(L, "return function(r) return table.concat({r.topic, r.partition, r.offset, r.id, r.value, "
                           "tostring(r.key), tostring(r.timestamp > 0), type(r.headers)}, '|') end") != 0 ||
        eg_vm_pcall(vm, 0, 1, err, sizeof err) != 0)
        return;
    eg_vm_push_record(vm, r, 1, 0);
    if (eg_vm_pcall(vm, 1, 1, err, sizeof err) != 0) {
        snprintf(out, outlen, "error: %s", err);
        return;
    }
    snprintf(out, outlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 1);
}

static eg_failure g_seen;
static int g_done, g_failed;

/* The target's done callback: takes the failure (its strings are the
 * callback's to free, as the gateway's). */
static void on_done(eg_record *rec, eg_failure *f, int cancelled, void *arg) {
    g_done++;
    g_failed = f != NULL;
    if (f) {
        eg_failure_clear(&g_seen);
        g_seen = *f;
        memset(f, 0, sizeof *f);
    }
}

/* Every field of a failure table, read by the Lua target from a handler
 * that answers for record m. */
static void answer_fields(rd_kafka_message_t *m) {
    char path[] = "/tmp/eg-answer-XXXXXX";
    int fd = mkstemp(path);
    const char *handler = "return function(record) return { status = 429, retry_after_ms = 1500, class = "
                          "'transient', code = 'E42', message = 'slow ' .. record.headers['x-tenant'] } end\n";
    CHECK(fd >= 0 && write(fd, handler, strlen(handler)) == (ssize_t)strlen(handler), "handler file written");
    if (fd >= 0) close(fd);
    eg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.target_kind = EG_TARGET_LUA;
    cfg.lua_target = path;
    char err[512] = "";
    eg_target *t = eg_target_lua_new(&cfg, NULL, err, sizeof err);
    CHECK(t != NULL, "the Lua target loads (%s)", err);
    if (t) {
        t->done = on_done;
        eg_record r;
        eg_record_view(&r, m);
        eg_record_read_headers(&r);
        for (int i = 0; i < 3; i++) { /* the kept names serve every call */
            eg_failure_clear(&g_seen);
            t->ops->submit(t, &r);
            t->ops->flush(t);
        }
        CHECK(g_done == 3 && g_failed, "three answers, each a failure (%d)", g_done);
        CHECK(g_seen.kind == EG_FK_HTTP && g_seen.status == 429, "status 429, kind http (%d, %d)", g_seen.status,
              (int)g_seen.kind);
        CHECK(g_seen.retry_after_ms == 1500, "retry_after_ms 1500 (%lld)", (long long)g_seen.retry_after_ms);
        CHECK(g_seen.class_hint && strcmp(g_seen.class_hint, "transient") == 0, "class transient (%s)",
              g_seen.class_hint ? g_seen.class_hint : "NULL");
        CHECK(g_seen.code && strcmp(g_seen.code, "E42") == 0, "code E42 (%s)", g_seen.code ? g_seen.code : "NULL");
        CHECK(g_seen.message && strcmp(g_seen.message, "slow vip") == 0, "message 'slow vip' (%s)",
              g_seen.message ? g_seen.message : "NULL");
        eg_failure_clear(&g_seen);
        t->ops->destroy(t);
    }
    unlink(path);
}

int main(void) {
    rd_kafka_t *prod = NULL, *cons = NULL;
    rd_kafka_message_t *m = mock_message(&prod, &cons, "push-record-test", NULL, "x-tenant", "vip");
    CHECK(m != NULL, "a record with x-tenant: vip from the mock cluster");
    char err[256];
    eg_vm *vm = eg_vm_new((size_t)16 << 20, err, sizeof err);
    CHECK(vm != NULL, "a VM (%s)", vm ? "" : err);
    if (m && vm) {
        eg_record r;
        char seen[64];
        eg_record_view(&r, m);
        tenant_seen(vm, &r, seen, sizeof seen);
        CHECK(strcmp(seen, "vip") == 0, "headers not yet read: the message's (got '%s')", seen);
        eg_record_read_headers(&r);
        tenant_seen(vm, &r, seen, sizeof seen);
        CHECK(strcmp(seen, "vip") == 0, "headers read once: the kept list's (got '%s')", seen);
        char all[256];
        fields_seen(vm, &r, all, sizeof all);
        CHECK(strcmp(all, "t|0|0|t/0/0|v|nil|true|table") == 0, "every field of the record table (got '%s')", all);
        r.hdrs = NULL; /* the kept list says: none */
        tenant_seen(vm, &r, seen, sizeof seen);
        CHECK(seen[0] == '\0', "the kept list is what the table shows, not a new parse (got '%s')", seen);
    }
    if (m) answer_fields(m);
    eg_vm_free(vm);
    mock_message_free(m, prod, cons);
    return TAP_DONE();
}
