/* luavm.h — one bounded Lua state running errgate's Lua runtime.
 *
 * A VM is a LuaJIT state with the standard libraries, the JIT engine off (so
 * the instruction-count hook always fires: LuaJIT never runs hooks inside
 * compiled traces) and `errgate.runtime` loaded from the Lua directory. Every
 * call into it goes through eg_vm_pcall: protected, with a traceback, and
 * with a wall-clock deadline enforced by the count hook; once the deadline
 * has passed the hook raises at every instruction, so a policy's own pcall
 * cannot swallow the timeout; a watchdog thread makes the hook fire at the
 * next instruction of a call past its deadline, so a run of slow C calls
 * cannot outlast it either. A VM is used by one thread at a time. */
#ifndef EG_LUAVM_H
#define EG_LUAVM_H

#include <signal.h>

#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "record.h"

/* Small blocks the allocator keeps for reuse, per 16-byte size class (a
 * policy call allocates and frees dozens of small tables and strings; the
 * system allocator's cost dominated the decision). */
#define EG_VM_SMALL_MAX 256
#define EG_VM_SMALL_KEEP 1024 /* blocks kept per class */

/* The signal the watchdog sends to the thread of an overdue call. A thread
 * that runs VM calls must leave it unblocked (a worker that blocks every
 * signal deletes this one from its mask), or C-call CPU burners outlast the
 * deadline there. */
#define EG_VM_WATCH_SIGNAL SIGURG

/* Fields of the record table (eg_vm_push_record): topic, partition,
 * offset, id, key, value, timestamp, headers. */
#define EG_VM_REC_KEYS 8

typedef struct eg_vm {
    lua_State *L;
    size_t mem_used;                   /* bytes allocated by the state */
    size_t mem_limit;                  /* allocations beyond this fail (LUA_ERRMEM) */
    void *small[EG_VM_SMALL_MAX / 16]; /* free lists, linked through the blocks */
    int nsmall[EG_VM_SMALL_MAX / 16];
    int runtime_ref;   /* registry ref of the errgate.runtime module */
    int traceback_ref; /* registry ref of the pcall message handler */
    int timeout_ms;
    _Atomic int64_t deadline_ns;       /* 0 when no call is running (read by the watchdog) */
    pthread_t thread;                  /* the thread of the running call */
    size_t alloc_since_check;          /* bytes grown since the allocator last read the clock */
    int alloc_overdue;                 /* the allocator refused growth past the deadline */
    uint64_t calls;                    /* eg_vm_pcall calls so far (the sandbox's call epoch) */
    uint64_t mem_refused;              /* allocations the cap refused so far */
    int timed_out;                     /* the last eg_vm_pcall was stopped by its deadline */
    volatile sig_atomic_t interrupted; /* eg_vm_interrupt was called: every call fails at once */
    int rec_key_ref[EG_VM_REC_KEYS];   /* registry refs of the record table's field names */
    struct eg_vm *wd_next, *wd_prev;   /* the watchdog's list of VMs */
} eg_vm;

/* The directory holding errgate/runtime.lua: $ERRGATE_LUA_DIR, else
 * <directory of the executable>/../share/errgate/lua when it holds the
 * runtime (an installed errgate: PREFIX/bin and PREFIX/share/errgate/lua),
 * else <directory of the executable>/../lua (the build tree: build/errgate
 * and lua/). Computed once; returns a static string. */
const char *eg_lua_dir(void);

/* Budget of loading calls (the runtime, a policy and its examples, a target):
 * larger than a decision's, since they compile and self-test. */
#define EG_VM_LOAD_BUDGET_MS 5000

/* Creates a VM whose allocations are capped at mem_limit bytes (a policy
 * that builds a huge string or table gets "not enough memory", an error like
 * any other) and whose calls get EG_VM_LOAD_BUDGET_MS until the caller sets
 * vm->timeout_ms to the per-call budget. Returns NULL with a message in err. */
eg_vm *eg_vm_new(size_t mem_limit, char *err, size_t errlen);
void eg_vm_free(eg_vm *vm);

/* Makes the running call (and every later one) fail at its next VM
 * instruction with "errgate: interrupted", and the allocator refuse
 * growth. Async-signal-safe: a SIGTERM handler may call it to end a load
 * at once (src/lib/config.c). There is no way back: free the VM. */
void eg_vm_interrupt(eg_vm *vm);

/* Pushes runtime[name] (a function) onto the stack. Returns -1 if absent. */
int eg_vm_push_runtime_fn(eg_vm *vm, const char *name);

/* lua_pcall with traceback and deadline. The function and nargs arguments
 * are on the stack. On error returns -1, writes a one-line message into err
 * and leaves the stack as before the function was pushed; after a memory
 * error the state is fully collected, so the next call has the memory the
 * failed one left as garbage. */
int eg_vm_pcall(eg_vm *vm, int nargs, int nresults, char *err, size_t errlen);

/* Pushes a table describing the record: topic, partition, offset, key,
 * timestamp, headers (name -> value, the last one wins), and the value when
 * with_value is set. Strings longer than cap bytes are cut to cap (cap 0:
 * no cap). */
void eg_vm_push_record(eg_vm *vm, const eg_record *r, int with_value, size_t cap);

#endif
