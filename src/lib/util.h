/* util.h — small helpers shared by every subsystem: clocks, owned strings,
 * checked allocation. Allocation failure is fatal (the gateway cannot keep
 * its guarantees without memory); everything else reports errors to callers. */
#ifndef EG_UTIL_H
#define EG_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds / nanoseconds (CLOCK_MONOTONIC). */
int64_t eg_now_ms(void);
int64_t eg_now_ns(void);
/* Wall-clock milliseconds since the epoch. */
int64_t eg_wall_ms(void);
/* The CLOCK_MONOTONIC instant ms (>= 0) from now: a deadline for
 * pthread_cond_timedwait on a condition made by eg_cond_init_monotonic. */
struct timespec eg_mono_deadline(int64_t ms);
/* Initialises cv to time its waits on CLOCK_MONOTONIC, so a wall-clock step
 * neither ends a wait early nor stretches it. */
void eg_cond_init_monotonic(pthread_cond_t *cv);
/* Writes an RFC 3339 UTC timestamp with milliseconds ("2026-11-22T05:49:15.123Z")
 * for wall-clock ms (negative: before 1970) into out; with outlen under 25,
 * writes "" (outlen > 0). An instant outside the years 0000..9999 is written
 * as the nearest one inside them. */
void eg_rfc3339(int64_t wall_ms, char *out, size_t outlen);

void *eg_xmalloc(size_t n);
void *eg_xcalloc(size_t n, size_t size);
void *eg_xrealloc(void *p, size_t n);
char *eg_xstrdup(const char *s);
/* Copies n bytes of s into a fresh NUL-terminated string. */
char *eg_xstrndup(const char *s, size_t n);

/* Copies src into dst (size dstlen), always NUL-terminating; truncates. */
void eg_strlcpy(char *dst, const char *src, size_t dstlen);

/* 64-bit FNV-1a hash of bytes; never returns 0 (0 means "no key"). */
uint64_t eg_hash64(const void *data, size_t len);

/* v in decimal into out (NUL-terminated); returns its length, 0 when it
 * does not fit outlen. No printf: for the per-record paths. */
size_t eg_fmt_i64(int64_t v, char *out, size_t outlen);

/* v as 16 lowercase hex digits and a NUL. */
void eg_fmt_hex64(uint64_t v, char out[17]);

#endif
