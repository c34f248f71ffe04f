/* envelope.h — the parts of a lane record's envelope computed from the
 * record's own bytes (DESIGN §4): the failure's fingerprint, the schema id
 * of a Confluent wire-format payload, and the first failure time a previous
 * errgate.history header says.
 *
 * A fingerprint groups the copies of one bug: the message is normalised
 * before it is hashed (numbers, hex ids, UUIDs, quoted values and network
 * addresses become placeholders, runs of blanks one space), so "order 41
 * failed at 10.0.0.7" and "order 9000 failed at 10.0.0.9" share one. All
 * inputs are hostile bytes (a target's message, a payload anyone produced,
 * a header copied from a foreign lane): every function reads at most the
 * length it is given, never allocates, and answers "none" for what it cannot
 * read. */
#ifndef EG_ENVELOPE_H
#define EG_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

/* The fingerprint's length in hex digits (64 bits of SHA-256). */
#define EG_ENV_FP_LEN 16
/* At most this many bytes of a message are read for its fingerprint. */
#define EG_ENV_MSG_MAX 4096

/* Writes the normalised form of msg[0..n) (at most EG_ENV_MSG_MAX bytes
 * read) into out (capacity cap > 0, NUL-terminated, cut at cap - 1).
 * Placeholders: `<uuid>`, `<hex>` (0x..., or a word of 8 or more hex digits
 * with a digit and a letter), `<ip>` (IPv4 with an optional :port, IPv6 of
 * three or more groups), `<q>` (a '...' or "..." quoted value on one line),
 * `#` (a run of digits, with its decimals). Letters are kept as they are;
 * bytes below 0x20 and blanks become one space; leading and trailing
 * blanks are dropped. Returns the length written. */
size_t eg_env_normalise(const char *msg, size_t n, char *out, size_t cap);

/* The fingerprint of a failure: the first EG_ENV_FP_LEN hex digits of
 * SHA-256 over code, a NUL byte and the normalised message (code and msg
 * may be NULL: empty). out receives EG_ENV_FP_LEN digits and a NUL. */
void eg_env_fingerprint(const char *code, const char *msg, size_t n, char out[EG_ENV_FP_LEN + 1]);

/* The schema id of a Confluent wire-format payload: magic byte 0, then a
 * 4-byte big-endian id. Returns the id (1 to INT32_MAX, as the schema
 * registry assigns them), or -1 when the payload is shorter than 5 bytes,
 * its first byte is not 0, or the id is 0 or above INT32_MAX: no schema id,
 * never a guess. */
int64_t eg_env_schema_id(const void *payload, size_t len);

/* The earliest "t" (wall ms, above 0) of the entries of an errgate.history
 * value (history.h: a msgpack array of maps), or -1 when it is absent,
 * not such an array (checked with eg_mp_plausible before it is decoded),
 * or has no entry with a positive integer "t". */
int64_t eg_env_history_first(const void *hist, size_t len);

/* Reads a time header's value: decimal ms since the epoch, 1 to 10^15,
 * no sign, no blanks. Returns it, or -1. */
int64_t eg_env_ms_parse(const void *v, size_t n);

#endif
