/* mpcheck.h — a bound on what unpacking outside MessagePack bytes costs.
 *
 * msgpack-c allocates an array's or a map's element slots from the count in
 * its header before reading any element, so five hostile bytes (an array32
 * header claiming 2^32 - 1 entries) ask for tens of gigabytes. Readers of
 * bytes errgate did not write itself in this process (the errgate.history
 * header, spill frames) check them here first. */
#ifndef EG_MPCHECK_H
#define EG_MPCHECK_H

#include <stddef.h>

/* Walks the first MessagePack object of buf[0..len) without allocating.
 * Returns 1 when, at every array and map header, the elements it claims
 * plus those still to read fit the bytes left (each element takes at least
 * one byte), so the elements of all containers together number at most
 * len and msgpack_unpack_next of buf allocates O(len); 0 when they do not,
 * when the object is cut short, or at a byte that is not MessagePack. */
int eg_mp_plausible(const void *buf, size_t len);

#endif
