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

/* Parses a duration as policies and the config write it (the grammar of
 * lua/errgate/duration.lua's parse): one or more <number><unit> parts,
 * the number digits with an optional fraction, the unit ms, s, m, h or d,
 * spaces around and between parts ("250ms", "1.5s", "1m30s"), at most 64
 * characters; the total rounded to the nearest millisecond. A number
 * without a unit is refused (ms or s? a reader cannot tell). Returns 0
 * with *ms set, or -1 with why (a short reason). */
int eg_parse_duration_text(const char *s, int64_t *ms, const char **why);

/* Parses a non-negative decimal integer up to 10^12 (no sign, no spaces,
 * no suffix). Returns 0 with *out set, or -1. */
int eg_parse_count(const char *s, long *out);

#endif
