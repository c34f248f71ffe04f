/* log.h — structured log lines (JSON or text), one per event, on stderr.
 *
 * A line is built field by field into a fixed stack buffer and written with a
 * single write(2) (or, on the thread that owns the log buffer, appended to
 * it and written with the buffer's next write(2)), so lines from
 * librdkafka's threads never interleave with the loop's. Values are escaped; a line that would overflow is truncated at a
 * field boundary and marked "truncated":true. Payloads never go through here:
 * callers log coordinates, classes and codes only. Every string value is
 * redacted (redact.h) before it is written. */
#ifndef EG_LOG_H
#define EG_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum { EG_DEBUG = 0, EG_INFO, EG_WARN, EG_ERROR } eg_level;

typedef struct eg_logline {
    char buf[2048];
    size_t len;
    int full; /* a field did not fit */
    int text; /* text format instead of JSON */
    eg_level level;
} eg_logline;

/* Global settings, set once at start-up (not thread-safe to change later). */
void eg_log_setup(eg_level min_level, int text_format);
/* Every line written after this names the source (a "source" field after
 * the event), for the gateway of one source of several; NULL: none. Call
 * before any other thread logs. */
void eg_log_set_source(const char *name);

/* Lines of one event name written per second at most (decision and
 * spilled lines, the per-record audit trail, are not limited); the rest
 * are counted and reported in one log_suppressed line after that second. */
#define EG_LOG_RATE 50

/* Starts a line with ts, level and event. Returns 0 if the level is filtered
 * out or the event is over its rate: the caller may then skip building the
 * line (the other calls are safe no-ops on a filtered line either way). */
int eg_log_begin(eg_logline *l, eg_level level, const char *event);
/* Like eg_log_begin with the line's ts given (wall-clock ms). */
int eg_log_begin_at(eg_logline *l, eg_level level, const char *event, int64_t wall_ms);
void eg_log_str(eg_logline *l, const char *key, const char *val);
/* Like eg_log_str for a byte string that may be unterminated or binary. */
void eg_log_strn(eg_logline *l, const char *key, const char *val, size_t n);
void eg_log_int(eg_logline *l, const char *key, int64_t val);
/* A field whose value is absent: JSON null ("-" in text format). */
void eg_log_null(eg_logline *l, const char *key);
void eg_log_dbl(eg_logline *l, const char *key, double val);
/* Ends the line and writes it. */
void eg_log_end(eg_logline *l);

/* Appends a field whose value is n bytes of ready JSON (an array, an
 * object); the caller escaped and redacted what is inside. */
void eg_log_raw(eg_logline *l, const char *key, const char *json, size_t n);

/* Writes the n bytes of s, redacted, as a quoted JSON string into out.
 * Returns its length (quotes included), or 0 when it does not fit outlen
 * (s is at most 511 bytes after redaction: longer is cut). */
size_t eg_log_quote(const char *s, size_t n, char *out, size_t outlen);

/* 1 when lines of `level` are written at all (log.level). */
int eg_log_enabled(eg_level level);

/* Makes the calling thread the owner of a log buffer (the loop thread,
 * once at start): its lines are then written by eg_log_flush, one write(2)
 * for all of them, and at once when the buffer fills or a line has level
 * error. The buffer is also flushed at exit(). Other threads' lines are
 * never buffered. */
void eg_log_buffer_start(void);

/* Writes the owning thread's buffered lines now; a no-op on other threads
 * or without a buffer. The loop calls it after every pass, and it is called
 * before anything that may end the process on purpose. */
void eg_log_flush(void);

/* Flushes and frees the buffer (owning thread); later lines are written at
 * once. */
void eg_log_buffer_stop(void);

/* Writes the log_suppressed lines still pending (at exit). */
void eg_log_flush_suppressed(void);

/* Convenience: one line {event, msg} at a level. printf-style message. */
void eg_log_msg(eg_level level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
