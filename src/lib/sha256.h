/* sha256.h — SHA-256 (FIPS 180-4), for policy versions: a policy's version
 * carries a prefix of its file's digest, so two different files never
 * share a name@version. Streaming interface; no allocation. */
#ifndef EG_SHA256_H
#define EG_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct eg_sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
} eg_sha256;

void eg_sha256_init(eg_sha256 *s);
void eg_sha256_update(eg_sha256 *s, const void *data, size_t n);
/* Writes the 32-byte digest. */
void eg_sha256_final(eg_sha256 *s, unsigned char out[32]);

/* Digest of a whole file as 64 lowercase hex characters plus NUL.
 * Returns 0, or -1 if the file cannot be read. */
int eg_sha256_file_hex(const char *path, char out[65]);

#endif
