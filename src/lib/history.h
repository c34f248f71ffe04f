/* history.h — the errgate.history header: a record's recent failed attempts,
 * carried from lane to lane so whoever reads a DLQ record sees how it got
 * there.
 *
 * Format: a msgpack array, oldest first, of maps
 *   {"t": <int, wall ms>, "class": <str>, "code": <str>, "action": <str>
 *    [, "lane": <str, the lane topic the attempt was written to>]}
 * capped at EG_HISTORY_MAX entries and EG_HISTORY_MAX_BYTES bytes: the
 * oldest entries go first. A previous header that is not such an array is
 * dropped (and the caller told), never copied blindly. */
#ifndef EG_HISTORY_H
#define EG_HISTORY_H

#include <stddef.h>

#include "record.h"

#define EG_HISTORY_MAX 10
#define EG_HISTORY_MAX_BYTES 2048

/* Encodes the entries of the previous header (prev/prevlen, may be NULL)
 * followed by the n attempts of att (oldest first), the last of which gets
 * "lane" = lane when lane is not NULL, into out (capacity outcap, at least
 * EG_HISTORY_MAX_BYTES). Returns the encoded length, or 0 when nothing fits.
 * *prev_bad is set to 1 when prev was present but unreadable. */
size_t eg_history_encode(const void *prev, size_t prevlen, const eg_attempt *att, int n, const char *lane, char *out,
                         size_t outcap, int *prev_bad);

#endif
