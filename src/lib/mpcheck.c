/* mpcheck.c — see mpcheck.h. One pass over the bytes with a count of the
 * objects still to read; no recursion, so nesting depth costs nothing. */
#include "mpcheck.h"

#include <stdint.h>

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

int eg_mp_plausible(const void *buf, size_t len) {
    const unsigned char *p = buf;
    size_t pos = 0, need = 1;
    while (need > 0) {
        if (pos >= len) return 0;
        unsigned b = p[pos++];
        need--;
        uint64_t skip = 0, count = 0; /* payload bytes; elements (map: keys and values) */
        int w = 0;                    /* width of a length or count field that follows */
        if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3 && b != 0xc1)) continue;
        if (b <= 0x8f) count = 2 * (uint64_t)(b & 0x0f);
        else if (b <= 0x9f) count = b & 0x0f;
        else if (b <= 0xbf) skip = b & 0x1f;
        else if (b == 0xc1) return 0;
        else if (b >= 0xc4 && b <= 0xc6) w = 1 << (b - 0xc4);           /* bin 8/16/32 */
        else if (b >= 0xc7 && b <= 0xc9) w = 1 << (b - 0xc7), skip = 1; /* ext 8/16/32: + type */
        else if (b == 0xca) skip = 4;
        else if (b == 0xcb) skip = 8;
        else if (b >= 0xcc && b <= 0xcf) skip = 1u << (b - 0xcc);       /* uint 8..64 */
        else if (b >= 0xd0 && b <= 0xd3) skip = 1u << (b - 0xd0);       /* int 8..64 */
        else if (b >= 0xd4 && b <= 0xd8) skip = 1 + (1u << (b - 0xd4)); /* fixext: type + data */
        else if (b >= 0xd9 && b <= 0xdb) w = 1 << (b - 0xd9);           /* str 8/16/32 */
        else if (b == 0xdc || b == 0xdd) w = b == 0xdc ? 2 : 4;         /* array 16/32 */
        else w = b == 0xde ? 2 : 4;                                     /* map 16/32 */
        if (w) {
            if (len - pos < (size_t)w) return 0;
            uint64_t v = be(p + pos, w);
            pos += (size_t)w;
            if (b >= 0xdc) count = b >= 0xde ? 2 * v : v;
            else skip += v;
        }
        if (skip > len - pos) return 0;
        pos += (size_t)skip;
        /* every element still to read takes at least one of the bytes left */
        if (need > len - pos || count > len - pos - need) return 0;
        need += (size_t)count;
    }
    return 1;
}
