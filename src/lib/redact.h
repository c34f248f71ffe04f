/* redact.h — scrub secrets out of free text before it is logged or written
 * into a lane header.
 *
 * Error messages come from targets, librdkafka and errgate itself; any of
 * them may quote a credential. eg_redact copies a string and replaces with
 * "[REDACTED]": the value after a secret word (lua/errgate/redact_words.lua,
 * the list shared with the Lua redactor: password, secret, token, api_key...)
 * followed by '=' or ':', the credentials of an Authorization value and of
 * any "Bearer"/"Basic" scheme, the user:password part of a URL
 * (scheme://user:pass@host), AWS access key ids (AKIA/ASIA + 16 characters)
 * and JWTs (eyJ... with two dots). The output is always NUL-terminated and
 * truncated to outlen; redacting redacted text changes nothing. Pure
 * function, no allocation, thread-safe. */
#ifndef EG_REDACT_H
#define EG_REDACT_H

#include <stddef.h>

#define EG_REDACTED "[REDACTED]"

/* Redacts the n bytes at in into out (outlen > 0). Returns the length
 * written (excluding the NUL). */
size_t eg_redact(const char *in, size_t n, char *out, size_t outlen);

#endif
