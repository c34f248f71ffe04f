/* json.h — JSON text: the one string escaper every JSON writer of errgate
 * uses (the log, the admin endpoint, the DLQ state records, `policy test
 * --from-topic` cases), and the small reader the DLQ state records need.
 *
 * Escaping keeps text as text: well-formed UTF-8 passes through unchanged,
 * '"' and '\\' are escaped, control characters (below 0x20, and DEL) become
 * \n, \r, \t or \u00XX. A byte that does not begin a well-formed UTF-8
 * sequence (a stray continuation byte, a lead byte without its
 * continuations, an overlong form, a UTF-16 surrogate, a code point above
 * U+10FFFF) becomes \ufffd, the replacement character, one per byte: the
 * output is always valid JSON in UTF-8, whatever the input. */
#ifndef EG_JSON_H
#define EG_JSON_H

#include <event2/buffer.h>
#include <stddef.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence that starts s
 * (n bytes available), or 0 when s[0] does not start one (see above; a
 * sequence cut short by n is not well-formed). n must be at least 1. */
size_t eg_utf8_seq(const unsigned char *s, size_t n);

/* 1 when s[0..n) is well-formed UTF-8 throughout (NUL bytes included),
 * else 0. */
int eg_utf8_valid(const void *s, size_t n);

/* Escapes s[0..n) as the content of a JSON string (no quotes added) into
 * out, at most outlen bytes, not NUL-terminated. Stops before the first
 * input character whose escaped form does not fit whole, so a UTF-8
 * sequence or an escape is never cut. Returns the bytes written; *used (may
 * be NULL) receives the input bytes consumed (n when everything fit). */
size_t eg_json_escape(const char *s, size_t n, char *out, size_t outlen, size_t *used);

/* Appends s[0..n) to out as a quoted JSON string literal. */
void eg_json_strn(struct evbuffer *out, const char *s, size_t n);

/* Appends the NUL-terminated s (NULL: "") to out as a quoted JSON string
 * literal. */
void eg_json_str(struct evbuffer *out, const char *s);

/* The contents of b (a JSON document built with the functions above) as a
 * NUL-terminated heap string the caller frees; b is freed. */
char *eg_json_take(struct evbuffer *b);

/* Appends s (n bytes) at out + *len as a quoted JSON string literal,
 * NUL-terminates and advances *len. Returns 0, or -1 with *len unchanged
 * when it would not fit in outlen (nothing is cut). */
int eg_json_put_str(char *out, size_t outlen, size_t *len, const char *s, size_t n);

/* Finds the top-level member `field` of the JSON object text (len bytes;
 * the last of that name, as eg_json_get_raw) and, when its value is a
 * string, copies it unescaped (\uXXXX below 0x80 only; others become '?')
 * into out, truncated to outlen - 1. Returns 0, or -1 when the text is not
 * a well-formed object, has no such member or its value is not a string. */
int eg_json_get_str(const char *json, size_t len, const char *field, char *out, size_t outlen);

/* Finds the top-level member `field` of the JSON object text (len bytes)
 * and points *val at its value's text as written (vlen bytes: a number's
 * digits, a string with its quotes, ...), inside json. Returns 0, or -1
 * when the text is not a well-formed object or has no such member. */
int eg_json_get_raw(const char *json, size_t len, const char *field, const char **val, size_t *vlen);

#endif
