/* ctlsign.h — signed control records: HMAC-SHA256 (RFC 2104 over
 * sha256.c) of a record of a control topic (the audit topic's overrides,
 * clears and guard resets; LANE.state's lifecycle states), keyed from the
 * deployment's control key file (config `control_key_file`, or the DLQ
 * commands' --key-file / ERRGATE_CONTROL_KEY_FILE) that every gateway and
 * operator tool of a deployment holds. The admin token is not the key.
 *
 * Canonical form (what is signed): the bytes
 *     "errgate-ctl-v1" NUL KIND NUL KLEN NUL KEY VLEN NUL VALUE
 * where KIND is the topic kind ("audit" or "state"), KLEN and VLEN the
 * decimal lengths of the record's key and value, KEY and VALUE their exact
 * bytes (no JSON re-encoding: a changed byte anywhere breaks it; the
 * lengths keep a key/value boundary from moving). The signature travels in
 * the record header `errgate.sig` as "v1:" and 64 lowercase hex digits.
 *
 * Key rotation: a key file is one key (its bytes), or a key ring: a first
 * line "errgate-keyring-v1", then one key per line (blank lines and lines
 * starting with '#' skipped). The ring's first key signs; every key of it
 * verifies. Rotating without refusing anything in between: (1) every
 * gateway and tool gets a ring of the old key then the new one (signs old,
 * accepts both), (2) then a ring of the new key then the old one (signs
 * new, accepts both), (3) then the new key alone, once no record signed with
 * the old one is still to be read.
 *
 * No allocation, no I/O but eg_ctlsign_load; errors as return codes. */
#ifndef EG_CTLSIGN_H
#define EG_CTLSIGN_H

#include <stddef.h>

#define EG_CTLSIGN_HEADER "errgate.sig"
#define EG_CTLSIGN_LEN 67       /* "v1:" + 64 hex digits */
#define EG_CTLSIGN_KEY_MIN 16   /* bytes of key, at least */
#define EG_CTLSIGN_KEY_MAX 1024 /* bytes of key file, at most */

#define EG_CTLSIGN_ACCEPT_MAX 3 /* keys a ring holds besides the signing key, at most */

typedef struct eg_ctlkey {
    unsigned char k[EG_CTLSIGN_KEY_MAX];  /* the signing key, then the accepted ones, back to back */
    size_t n;                             /* bytes of the signing key; 0: no key */
    size_t accept[EG_CTLSIGN_ACCEPT_MAX]; /* bytes of each accepted key after it */
    int naccept;
} eg_ctlkey;

/* HMAC-SHA256 of msg (n bytes) with key (klen bytes) into out. */
void eg_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n, unsigned char out[32]);

/* Reads the key file at path into *key: its bytes with trailing
 * whitespace (a final newline) removed, at least EG_CTLSIGN_KEY_MIN and at
 * most EG_CTLSIGN_KEY_MAX; or a key ring (above), each of its keys at least
 * EG_CTLSIGN_KEY_MIN bytes, at most 1 + EG_CTLSIGN_ACCEPT_MAX keys. Returns
 * 0, or -1 with a one-line reason. */
int eg_ctlsign_load(const char *path, eg_ctlkey *key, char *err, size_t errlen);

/* The signature of the record (kind, key, value) as "v1:<hex>" and a NUL
 * into sig. */
void eg_ctlsign_sign(const eg_ctlkey *key, const char *kind, const void *k, size_t klen, const void *v, size_t vlen,
                     char sig[EG_CTLSIGN_LEN + 1]);

/* Checks the signature sig (siglen bytes; NULL: the record had none) of
 * the record (kind, key, value) against the signing key and each accepted
 * one, every comparison in constant time. Returns 0 when one of them made
 * it, or -1 with *reason "unsigned" (none), "malformed" (not
 * "v1:<64 hex>") or "bad_signature" (another key, or a changed byte). */
int eg_ctlsign_verify(const eg_ctlkey *key, const char *kind, const void *k, size_t klen, const void *v, size_t vlen,
                      const void *sig, size_t siglen, const char **reason);

#endif
