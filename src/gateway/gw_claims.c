/* gw_claims.c — a source record's claims about its identity and birth
 * place hold only when signed (provenance.h).
 *
 * A record read from a source topic (not a rung, not an inbox: those are
 * written by gateways) that carries errgate.id or original.* headers is
 * either one errgate replayed (signed with the deployment's control key)
 * or one whose producer wrote them. With a control key, a claim that does
 * not verify is taken away before anything reads the record: its headers
 * are replaced by a copy without the claims and with
 * errgate.claims-refused (the reason), so its id, the target's idempotency
 * key, is its own coordinates, its lane records name its own birth place,
 * and a replay fetches its own offset. The record itself is processed as
 * usual: nothing is lost, only the claim. Logged (rate-limited by the log),
 * counted in errgate_source_claims_refused_total. Without a control key
 * claims are taken as they come (audit.c says so at start). */
#include "gw.h"
#include "log.h"
#include "provenance.h"

void eg_gw_check_claims(eg_gw *gw, const eg_part *p, eg_record *r) {
    const eg_ctlkey *key = eg_lanes_ctlkey(gw->lanes);
    if (p->rung >= 0 || gw->cfg->inbox || !key->n || !eg_prov_has_claims(r->hdrs)) return;
    const rd_kafka_message_t *m = r->msg;
    const char *why = NULL;
    if (eg_prov_verify(key, r->hdrs, m->key, m->key_len, m->payload, m->len, &why) == 0) return;
    rd_kafka_message_set_headers(r->msg, eg_prov_strip(r->hdrs, why));
    eg_record_read_headers(r);
    (*gw->m.claims_refused)++;
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "source_claims_refused")) {
        eg_log_str(&l, "topic", r->topic);
        eg_log_int(&l, "partition", r->partition);
        eg_log_int(&l, "offset", r->offset);
        eg_log_str(&l, "reason", why);
        eg_log_str(&l, "msg", "errgate.id and original.* headers not signed by an errgate replay: ignored");
        eg_log_end(&l);
    }
}
