/* provenance.h — a replayed record's claims about itself, signed.
 *
 * A record the gateway reads from a source topic may carry the headers
 * errgate writes about a record's identity and birth place: errgate.id
 * (the idempotency key the target sees) and original.* (where replay sends
 * it, which offset a stub or pointer is fetched from). errgate's own
 * replays put them there on purpose: a replayed record keeps its id and
 * its birth place. But anyone who can produce to the source can put them
 * there too, and take another record's id (a target deduplicating on it
 * then drops that record when it comes) or name another record's offset
 * (a stub replay then republishes that record). So they are claims, and a
 * claim holds only when signed with the deployment's control key (ctlsign.h,
 * kind "provenance"):
 *
 *   errgate.provenance: v1:<64 hex>, the HMAC of the canonical form
 *     "errgate-ctl-v1" NUL "provenance" NUL KLEN NUL KEY VLEN NUL CLAIMS
 *   where KEY is the record's key and CLAIMS is, for each claim header in
 *   the order of EG_PROV_CLAIMS, NAME NUL LEN NUL VALUE (LEN -1 when the
 *   header is absent; the last one of a repeated name), then "value" NUL
 *   and the SHA-256 of the record's value in hex: a signature copied onto
 *   another record, or onto changed claims, does not verify.
 *
 * errgate replay and inbox mode sign what they republish (eg_prov_sign);
 * the gateway checks each source record that carries a claim
 * (eg_prov_verify) and, when it does not verify, reads the record without
 * them (eg_prov_strip: its id and birth place are its own coordinates, and
 * errgate.claims-refused says why). A deployment without a control key
 * signs nothing and takes claims as they come (said at start).
 *
 * No I/O; eg_prov_strip allocates the list it returns. */
#ifndef EG_PROVENANCE_H
#define EG_PROVENANCE_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "ctlsign.h"

#define EG_PROV_HEADER "errgate.provenance"
#define EG_PROV_REFUSED_HEADER "errgate.claims-refused"

/* The claim headers, NULL-terminated (headers.h names them). */
extern const char *const EG_PROV_CLAIMS[];

/* 1 when h carries any claim header (or errgate.provenance), else 0. */
int eg_prov_has_claims(const rd_kafka_headers_t *h);

/* Replaces h's errgate.provenance headers with the signature of its claims
 * for the record (k, klen: key; v, vlen: value), or only removes them when
 * key has none (key->n == 0). */
void eg_prov_sign(const eg_ctlkey *key, rd_kafka_headers_t *h, const void *k, size_t klen, const void *v, size_t vlen);

/* Checks the errgate.provenance of h against its claims and the record
 * (k, v). Returns 0 when it verifies, -1 with *reason "unsigned",
 * "malformed" or "bad_signature" (ctlsign.h). key must have a key. */
int eg_prov_verify(const eg_ctlkey *key, const rd_kafka_headers_t *h, const void *k, size_t klen, const void *v,
                   size_t vlen, const char **reason);

/* A new list: h without its claim headers and errgate.provenance, plus
 * errgate.claims-refused: reason. The caller owns it. */
rd_kafka_headers_t *eg_prov_strip(const rd_kafka_headers_t *h, const char *reason);

#endif
