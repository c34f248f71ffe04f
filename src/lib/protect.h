/* protect.h — payload protection for the DLQ and quarantine lanes: what a
 * lane record holds instead of the payload as it came (DESIGN §4,
 * `errgate.protect`).
 *
 * Three modes, per lane (config `lanes.protect`) and per route (a route
 * entry's `protect`):
 *   mask     the values at some JSON paths become a fixed token, or with a
 *            key a keyed hash ("hmac:" + 32 hex of HMAC-SHA256) so that
 *            equal values still group. A payload that is not strict JSON
 *            cannot be masked: it is never written as it came, but as the
 *            config's `unmaskable` says (pointer, or encrypted).
 *   encrypt  AES-256-GCM (OpenSSL libcrypto's EVP API): a random 96-bit
 *            nonce per record; the lane value is nonce || ciphertext || tag.
 *   pointer  no payload at all: the lane record's original.* headers say
 *            where `replay` fetches it from while the source retains it.
 *
 * Path syntax (strict; anything else is refused with the column):
 *   path    := "$" step+
 *   step    := "." name | ".." name | "[" digits "]" | "[*]" | ".*"
 *              | "[" quoted "]"
 *   name    := [A-Za-z0-9_-]+          quoted := '"' JSON string text '"'
 * `..name` is any depth below (zero or more levels, then the member name).
 * At most EG_PROT_STEPS steps, EG_PROT_PATH_MAX bytes; member names are
 * compared after unescaping (`"ca\u0072d"` is the member `card`).
 *
 * Keys: the key file is read by eg_ctlsign_load (one key, or a key ring
 * whose first key encrypts and hashes, every key decrypts). Each file key k
 * gives three derived values: the AES key HMAC(k, "errgate-protect-enc-v1"),
 * the mask hash key HMAC(k, "errgate-protect-mask-v1") and the key id, the
 * first 4 bytes of HMAC(k, "errgate-protect-kid-v1") in hex: the id names a
 * key without revealing it. */
#ifndef EG_PROTECT_H
#define EG_PROTECT_H

#include <stddef.h>

#define EG_H_PROTECT "errgate.protect"

#define EG_PROT_STEPS 16     /* steps of one path, at most */
#define EG_PROT_PATH_MAX 256 /* bytes of one path, at most */
#define EG_PROT_PATHS 32     /* paths of one configuration, at most */
#define EG_PROT_DEPTH 64     /* nesting of a JSON payload that can be masked, at most */
#define EG_PROT_KEYS 4       /* keys of a ring, at most */
#define EG_PROT_KID_LEN 8    /* hex digits of a key id */
#define EG_PROT_NONCE 12
#define EG_PROT_TAG 16
#define EG_PROT_HDR_MAX 96 /* bytes of an errgate.protect value, with its NUL */

typedef enum { EG_PROT_NONE = 0, EG_PROT_MASK, EG_PROT_ENCRYPT, EG_PROT_POINTER, EG_PROT__N } eg_prot_mode;

/* "none", "mask", "encrypt", "pointer". */
const char *eg_prot_mode_name(eg_prot_mode m);
/* The mode named s, or -1. */
int eg_prot_mode_parse(const char *s);

typedef enum { EG_STEP_NAME = 0, EG_STEP_INDEX, EG_STEP_ANY, EG_STEP_DESCEND } eg_step_kind;

typedef struct eg_jstep {
    eg_step_kind kind;
    const char *name; /* NAME, DESCEND: into the path's buf (unescaped) */
    size_t nlen;
    long index; /* INDEX */
} eg_jstep;

typedef struct eg_jpath {
    eg_jstep step[EG_PROT_STEPS];
    int n;
    char buf[EG_PROT_PATH_MAX]; /* the names, unescaped */
} eg_jpath;

/* Parses the path s (n bytes) into *p. Returns 0, or -1 with a one-line
 * reason naming the byte where it went wrong. */
int eg_jpath_parse(const char *s, size_t n, eg_jpath *p, char *err, size_t errlen);

/* A key ring, derived (see above). n == 0: no key. */
typedef struct eg_prot_keys {
    unsigned char enc[EG_PROT_KEYS][32];
    unsigned char mac[EG_PROT_KEYS][32];
    char kid[EG_PROT_KEYS][EG_PROT_KID_LEN + 1];
    int n;
} eg_prot_keys;

/* Loads the key file at path (eg_ctlsign_load's format) into *k. Returns
 * 0, or -1 with a one-line reason. */
int eg_prot_keys_load(const char *path, eg_prot_keys *k, char *err, size_t errlen);
/* Derives the keys of the ring from raw key bytes (tests): keys[i] of
 * lens[i] bytes, n at most EG_PROT_KEYS. */
void eg_prot_keys_derive(eg_prot_keys *k, const unsigned char *const *keys, const size_t *lens, int n);

/* What masks: the paths, the token, and with hash set the keys' first. */
typedef struct eg_prot_mask {
    eg_jpath paths[EG_PROT_PATHS];
    int npaths;
    char token[64]; /* written as a JSON string */
    int hash;       /* 1: a keyed hash instead of the token (needs keys) */
} eg_prot_mask;

/* Masks the JSON text in (n bytes): every value at one of m's paths is
 * replaced whole (an object or array too) by the token, or by the keyed
 * hash of the value (a string's unescaped content, any other value's text
 * as written) with keys->mac[0]. Returns 0 with *out (malloc'd, the caller
 * frees; *outlen bytes and a NUL after them) and *masked the number of values replaced (0: the
 * payload is copied as it was); or -1 when in is not strict JSON (RFC 8259,
 * UTF-8) or nests deeper than EG_PROT_DEPTH, with *why a fixed word
 * ("not_json", "too_deep") and nothing allocated. */
int eg_prot_mask_json(const eg_prot_mask *m, const eg_prot_keys *keys, const void *in, size_t n, char **out,
                      size_t *outlen, int *masked, const char **why);

/* Encrypts in (n bytes) with keys->enc[0] into *out (malloc'd: nonce ||
 * ciphertext || tag, n + EG_PROT_NONCE + EG_PROT_TAG bytes) and writes
 * "encrypt;v1;kid=KID" into hdr. Returns 0, or -1 (no key, or libcrypto
 * failed: nothing allocated). */
int eg_prot_encrypt(const eg_prot_keys *keys, const void *in, size_t n, unsigned char **out, size_t *outlen,
                    char hdr[EG_PROT_HDR_MAX]);

/* The mode a header value names (hlen bytes; "encrypt;v1;kid=..." is
 * EG_PROT_ENCRYPT), EG_PROT_NONE for NULL, or -1 for a value none names. */
int eg_prot_header_mode(const void *hdr, size_t hlen);

/* Decrypts the value in (n bytes) of a lane record whose errgate.protect
 * header is hdr (hlen bytes) with the ring key its kid names. Returns 0 with
 * *out (malloc'd, *outlen bytes; a zero-length payload still gets a buffer),
 * or -1 with a one-line reason: no key given, no key of that id in the ring
 * ("key KID is not in the key file"), a malformed header or value, or a
 * failed authentication (the wrong key, or a changed byte). */
int eg_prot_decrypt(const eg_prot_keys *keys, const void *hdr, size_t hlen, const void *in, size_t n,
                    unsigned char **out, size_t *outlen, char *err, size_t errlen);

#endif
