/* parse.h — values an operator types on a command line: times, durations
 * and counts. */
#ifndef EG_PARSE_H
#define EG_PARSE_H

#include <stdint.h>

/* Parses an RFC 3339 time ("2026-01-02T03:04:05Z", fractional seconds and
 * a numeric offset allowed, 't'/'z' too) or a bare number of ms since the
 * epoch. Returns 0 with *ms set, or -1. */
int eg_parse_time_ms(const char *s, int64_t *ms);

/* Parses a duration such as "90s", "15m", "1h", "2d", "250ms" or a bare
 * number of ms (digits, then at most a unit: no sign, no space, no
 * fraction). Returns 0 with *ms set, or -1 on anything else. */
int eg_parse_duration_ms(const char *s, int64_t *ms);

/* Parses a non-negative decimal integer up to 10^12 (no sign, no spaces,
 * no suffix). Returns 0 with *out set, or -1. */
int eg_parse_count(const char *s, long *out);

#endif
