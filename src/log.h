/* log.h — structured log lines (JSON or text), one per event, on stderr.
 *
 * A line is built field by field into a fixed stack buffer and written with a
 * single write(2), so lines from librdkafka's threads never interleave with
 * the loop's. Values are escaped; a line that would overflow is truncated at a
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
} eg_logline;

/* Global settings, set once at start-up (not thread-safe to change later). */
void eg_log_setup(eg_level min_level, int text_format);

/* Lines of one event name written per second at most (decision and
 * spilled lines, the per-record audit trail, are not limited); the rest
 * are counted and reported in one log_suppressed line after that second. */
#define EG_LOG_RATE 50

/* Starts a line with ts, level and event. Returns 0 if the level is filtered
 * out or the event is over its rate: the caller may then skip building the
 * line (the other calls are safe no-ops on a filtered line either way). */
int eg_log_begin(eg_logline *l, eg_level level, const char *event);
void eg_log_str(eg_logline *l, const char *key, const char *val);
/* Like eg_log_str for a byte string that may be unterminated or binary. */
void eg_log_strn(eg_logline *l, const char *key, const char *val, size_t n);
void eg_log_int(eg_logline *l, const char *key, int64_t val);
/* A field whose value is absent: JSON null ("-" in text format). */
void eg_log_null(eg_logline *l, const char *key);
void eg_log_dbl(eg_logline *l, const char *key, double val);
/* Ends the line and writes it. */
void eg_log_end(eg_logline *l);

/* Writes the log_suppressed lines still pending (at exit). */
void eg_log_flush_suppressed(void);

/* Convenience: one line {event, msg} at a level. printf-style message. */
void eg_log_msg(eg_level level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
