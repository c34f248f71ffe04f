/* policy.h — the policy seam: failure -> decision, through Lua.
 *
 * A policy is a Lua file loaded by errgate.runtime in a sandbox inside its own
 * bounded VM (luavm.h). eg_policy_decide never fails: when the policy raises,
 * runs out of time or returns something invalid, the decision is the fallback
 * (`hold`), flagged with fallback=1 and with the error as its message, and the
 * caller logs and counts it. The happy path never enters here.
 *
 * Threads: a policy belongs to one thread at a time. Loading touches no
 * shared state, so a reload builds a fresh policy on a worker thread and
 * hands it to the loop (see gw_reload.c). */
#ifndef EG_POLICY_H
#define EG_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

typedef struct eg_policy eg_policy;

/* Loads the policy file. Returns NULL and a one-line error naming the file
 * (and line, for syntax errors) on failure: a policy that raises, loops past
 * its load budget, exhausts its memory cap or plays metamethod tricks on the
 * values the C side reads is refused, never fatal. */
eg_policy *eg_policy_load(const char *path, int timeout_ms, char *err, size_t errlen);

/* Default memory cap of a policy's Lua state (config: policy_memory_mb). */
#define EG_POLICY_MEM_LIMIT ((size_t)64 << 20)

/* eg_policy_load with the state's memory cap (0: EG_POLICY_MEM_LIMIT); a
 * reload keeps the cap. */
eg_policy *eg_policy_load_capped(const char *path, int timeout_ms, size_t mem_limit, char *err, size_t errlen);

/* A rung of the policy's retry ladders: its name (part of the rung topic's
 * name) and its current delay. */
typedef struct eg_rung {
    char name[40];
    int64_t delay_ms;
} eg_rung;

/* The union of the policy's ladder rungs (rt.ladder_rungs), in definition
 * order; *rungs is owned by p. Returns how many. */
int eg_policy_rungs(const eg_policy *p, const eg_rung **rungs);
/* 0 when the policy's route entry for class klass says guard = false (its
 * dead letters pass the dlq_guard), else 1. */
int eg_policy_guarded(const eg_policy *p, const char *klass);
/* 1 when the policy can give a failure class klass (rt.known_classes; any
 * class when it cannot tell), else 0. */
int eg_policy_knows_class(const eg_policy *p, const char *klass);
/* The envelope of class klass (rt.class_envelope, read once at load; the
 * route table's `default` entry for a class it does not name): into d,
 * d->hint (its remediation hint, "" when none), d->retryable (1 or 0; -1
 * when the policy cannot tell: a route function) and d->ladder_steps (the
 * steps of the ladder it climbs, 0 when none). */
void eg_policy_class_env(const eg_policy *p, const char *klass, eg_decision *d);
/* The classes it can give, ", "-separated, truncated to outlen ("" when any). */
void eg_policy_classes(const eg_policy *p, char *out, size_t outlen);
void eg_policy_free(eg_policy *p);

/* "name@version+sha" of the loaded policy: the declared version plus the
 * first 8 hex digits of the file's SHA-256, so an edit without a version bump
 * is still told apart. */
const char *eg_policy_id(const eg_policy *p);
const char *eg_policy_path(const eg_policy *p);
/* SHA-256 of the policy file as 64 hex characters. */
const char *eg_policy_sha256(const eg_policy *p);
/* Wall-clock ms when this policy was loaded. */
int64_t eg_policy_loaded_at(const eg_policy *p);

/* The load settings of p (its budget per decision and its memory cap), so
 * that a reload can build a fresh policy from the same file alike. */
int eg_policy_timeout_ms(const eg_policy *p);
size_t eg_policy_mem_limit(const eg_policy *p);

/* Calls runtime[fn](policy, arg) — arg may be NULL — which returns a report
 * text and an exit code (the `errgate policy` commands). On success returns
 * 0, stores a malloc'ed copy of the text in *text (the caller frees it) and
 * the code in *code; on a Lua error returns -1 with err filled. */
int eg_policy_call(eg_policy *p, const char *fn, const char *arg, char **text, int *code, char *err, size_t errlen);

/* Asks the policy what to do with a failed record. Always fills *out: a
 * policy that raises, overruns its budget, runs out of memory (even while
 * the record's table is being built) or answers nonsense gives the fallback
 * hold with the reason as its message. */
void eg_policy_decide(eg_policy *p, const eg_failure *f, const eg_record *r, const eg_ctx *ctx, eg_decision *out);

/* eg_policy_decide for a record the caller no longer holds (the shadow
 * policy decides after the record may be gone): when the policy reads the
 * record, push(L, push_arg) pushes its table onto L (it runs protected, may
 * raise); r is then not read and may be NULL. */
struct lua_State;
typedef void (*eg_policy_push_fn)(struct lua_State *L, const void *push_arg);
void eg_policy_decide_pushed(eg_policy *p, const eg_failure *f, eg_policy_push_fn push, const void *push_arg,
                             const eg_record *r, const eg_ctx *ctx, eg_decision *out);
/* 1 when the policy reads the record (a classify function, a header rule or
 * a route function), else 0. */
int eg_policy_reads_record(const eg_policy *p);

#endif
