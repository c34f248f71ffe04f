/* test_vm_heap.c — what the runtime does inside a VM leaves nothing on the C
 * heap when the VM refuses memory mid-call.
 *
 * A VM's memory cap (luavm.h) makes an allocation fail and an error unwind
 * the call. A C function on the way that holds malloc'd memory of its own
 * (lua-cjson's decode buffer was one) leaks it, outside every budget, once
 * per refusal: a policy that keeps its VM at the cap and calls such a
 * function in a loop grows the process without bound. Here a VM is filled
 * to its cap, then the runtime's decoders of outside bytes are called many
 * times, each refused; the C heap outside the VM must not grow. The heap is
 * read from glibc (mallinfo2) or, in a sanitizer build, from ASan. */
#include "luavm.h"
#include "tap.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>

#ifdef TAP_ASAN
/* ASan's allocator statistics (libasan; gcc ships no header declaring it) */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
#include <malloc.h>
static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

#define CAP ((size_t)16 << 20)
#define CALLS 2000 /* RUN's count */
/* what the VM's own free lists may come to hold meanwhile, with margin (a
 * leak of one 4 KiB decode buffer per call would be 8 MiB) */
#define GROWTH_LIMIT ((size_t)2 << 20)

/* Sets the globals f (the function under test, from setup) and body (a
 * 3.9 KiB JSON error body), then fills the VM to its cap: strings in a
 * global, ever smaller, until even a 16-byte one is refused. */
static const char *PREP =
    "body = '{\"error\":{\"class\":\"transient\",\"code\":\"c\",\"message\":\"' .. string.rep('m', 3800) .. '\"}}'\n"
    "hog = {}\n"
    "local function fill(size) while true do hog[#hog + 1] = string.rep('x', size - 8) .. #hog end end\n"
    "pcall(fill, 65536) pcall(fill, 4096) pcall(fill, 256) pcall(fill, 16)\n";

/* Calls f(body) CALLS times at the cap; returns how many were refused. Loaded
 * before the VM fills (loading allocates). */
static const char *RUN = "local refused = 0\n"
                         "for i = 1, 2000 do if not pcall(f, body) then refused = refused + 1 end end\n"
                         "return refused\n";

/* Runs setup (which sets the global f), PREP and RUN in a fresh VM; returns
 * how much the C heap grew during RUN and sets *refused (-1: RUN did not
 * run). */
static long long growth_at_cap(const char *what, const char *setup, int *refused) {
    char err[512] = "";
    *refused = -1;
    eg_vm *vm = eg_vm_new(CAP, err, sizeof err);
    CHECK(vm != NULL, "%s: a VM (%s)", what, err);
    if (!vm) return -1;
    vm->timeout_ms = 60000;
    lua_State *L = vm->L;
    int ok = luaL_loadstring(L, setup) == 0 && eg_vm_pcall(vm, 0, 0, err, sizeof err) == 0 &&
             luaL_loadstring(L, RUN) == 0 && luaL_loadstring(L, PREP) == 0 &&
             eg_vm_pcall(vm, 0, 0, err, sizeof err) == 0;
    CHECK(ok, "%s: the VM fills to its cap (%s)", what, err);
    CHECK(vm->mem_used + 4096 > CAP, "%s: %zu of %zu bytes in use (less than a body left)", what, vm->mem_used, CAP);
    long long grew = -1;
    if (ok) {
        size_t before = heap_in_use();
        if (eg_vm_pcall(vm, 0, 1, err, sizeof err) == 0) {
            grew = (long long)heap_in_use() - (long long)before;
            *refused = (int)lua_tointeger(L, -1);
            lua_pop(L, 1);
        } else {
            printf("# %s: %s\n", what, err);
        }
    }
    eg_vm_free(vm);
    return grew;
}

static void check_no_growth(const char *what, const char *setup) {
    int refused;
    long long grew = growth_at_cap(what, setup, &refused);
    printf("# %s: %d of %d calls refused, C heap grew %lld bytes\n", what, refused, CALLS, grew);
    CHECK(refused >= CALLS / 2, "%s: the calls ran into the cap (%d of %d refused)", what, refused, CALLS);
    CHECK(refused >= 0 && grew >= -(long long)CAP && grew < (long long)GROWTH_LIMIT,
          "%s: the C heap outside the VM did not grow (%lld bytes)", what, grew);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    check_no_growth("errgate.failure.body_error", "f = require('errgate.failure').body_error");
    check_no_growth("errgate.json.decode", "f = require('errgate.json').decode");
    return TAP_DONE();
}
