/* gw_txn.c — exactly-once lanes (lanes.transactional): a commit is one
 * Kafka transaction holding the lane records of the records it commits and
 * their source offsets (KIP-447: send_offsets_to_transaction with the
 * consumer's group metadata).
 *
 * A record decided to a lane write is not produced at once: it waits
 * (EG_RS_LANE_TXN, on gw->txn's waiting list) and its offset is finished in
 * its partition's tracker, so the commit prefix can pass it. At each commit
 * (gateway.c's commit_offsets: tick, revoke, stop) eg_gw_txn_run takes the
 * waiting records below the offsets it commits, opens a transaction, writes
 * their lane records, waits for every delivery report, then sends the
 * offsets and commits. A lane record is therefore committed exactly when its
 * source offset is: a kill -9 at any point leaves both or neither, and the
 * record consumed again is decided again (the target sees it again: at
 * least once) but its old lane record was never visible to read_committed
 * readers. A waiting record above the offsets (an earlier record of its
 * partition is unfinished) waits for a later transaction.
 *
 * A failed write, a failed commit or a timeout aborts the transaction: its
 * records wait again (a size refusal turns into the stub, refusal.h) and the
 * next commit writes them again; offsets do not move. A fatal error (the
 * instance was fenced by a newer incarnation of its transactional.id, or
 * the producer broke) stops the gateway with exit 1 without committing
 * anything more.
 *
 * States of a record's write (eg_fail.txn): WAIT (on the list), WRITING
 * (produced in the running transaction, unreported), REPORTED (its report
 * came, txn_err holds its error), ORPHAN (its transaction aborted before its
 * report: the report puts it back on the list). Everything runs on the loop
 * thread; the reports of a running transaction are served from within it
 * (eg_lanes_txn_flush), which is why gw->txn.busy exists. */
#include "gw.h"

#include "log.h"
#include "refusal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eg_gw_txn_start(eg_gw *gw) { gw->txn.on = eg_lanes_transactional(gw->lanes); }

static void wait_append(eg_gw *gw, eg_record *r) {
    r->qnext = NULL;
    r->qprev = gw->txn.wait_tail;
    if (gw->txn.wait_tail) gw->txn.wait_tail->qnext = r;
    else gw->txn.wait_head = r;
    gw->txn.wait_tail = r;
    r->state = EG_RS_LANE_TXN;
    r->fail->txn = EG_TXW_WAIT;
}

void eg_gw_txn_unlink(eg_gw *gw, eg_record *r) {
    if (r->state != EG_RS_LANE_TXN) return;
    if (r->qprev) r->qprev->qnext = r->qnext;
    else gw->txn.wait_head = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev;
    else gw->txn.wait_tail = r->qprev;
    r->qnext = r->qprev = NULL;
}

void eg_gw_txn_wait(eg_gw *gw, eg_record *r) {
    eg_part *p = r->part;
    if (!p->revoked) eg_tracker_finish(&p->trk, r->seq);
    wait_append(gw, r);
}

/* r's write was in an aborted transaction: it waits again, as a stub when
 * the lane refused its size. */
static void requeue(eg_gw *gw, eg_record *r) {
    if (r->fail->txn_err && eg_refusal_of((rd_kafka_resp_err_t)r->fail->txn_err) == EG_REFUSAL_SIZE &&
        !r->fail->lane_stub)
        r->fail->lane_stub = 1;
    if (r->fail->txn_err) {
        r->fail->lane_attempts++;
        const eg_decision *d = &r->fail->decision;
        const char *origin = d->action == EG_ACT_REPUBLISH ? d->replay_to : r->part->origin;
        const char *lv[1] = {eg_lanes_topic(gw->lanes, (eg_lane)eg_lane_of(d->action), origin, d->rung)};
        (*eg_counter(gw->m.lane_failures, lv))++;
    }
    r->fail->txn_err = 0;
    wait_append(gw, r);
}

int eg_gw_txn_on_done(eg_gw *gw, eg_record *r, rd_kafka_resp_err_t err) {
    switch (r->fail->txn) {
    case EG_TXW_WRITING:
        r->fail->txn = EG_TXW_REPORTED;
        r->fail->txn_err = (int)err;
        return 0;
    case EG_TXW_ORPHAN:
        if (r->part->revoked || gw->stopping) return 1;
        r->fail->txn_err = 0; /* aborted: whatever the report said, it is not in the lane */
        requeue(gw, r);
        return 0;
    default: return 0; /* not reachable: only produced records are reported */
    }
}

static void open_add(eg_gw *gw, eg_record *r) {
    if (gw->txn.nopen == gw->txn.capopen) {
        gw->txn.capopen = gw->txn.capopen ? gw->txn.capopen * 2 : 64;
        gw->txn.open = eg_xrealloc(gw->txn.open, (size_t)gw->txn.capopen * sizeof *gw->txn.open);
    }
    gw->txn.open[gw->txn.nopen++] = r;
}

/* The waiting records below offsets' entry of their partition move to
 * gw->txn.open, in list order (offset order within a partition). */
static void select_records(eg_gw *gw, const rd_kafka_topic_partition_list_t *offsets) {
    gw->txn.nopen = 0;
    for (eg_record *r = gw->txn.wait_head, *next; r; r = next) {
        next = r->qnext;
        if (r->part->revoked) continue;
        rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_find(offsets, r->part->topic, r->part->partition);
        if (!e || r->offset >= e->offset) continue;
        eg_gw_txn_unlink(gw, r);
        open_add(gw, r);
    }
}

/* Produces the open records' lane records; 0, or -1 with err (the records
 * not produced are REPORTED with no error: nothing of them is in flight). */
static int produce_open(eg_gw *gw, char *err, size_t errlen) {
    int rc = 0;
    for (int i = 0; i < gw->txn.nopen; i++) {
        eg_record *r = gw->txn.open[i];
        r->state = EG_RS_LANE_WRITE;
        r->fail->txn_err = 0;
        if (rc) {
            r->fail->txn = EG_TXW_REPORTED;
            continue;
        }
        r->fail->txn = EG_TXW_WRITING;
        if (!r->fail->lane_first_ms) r->fail->lane_first_ms = eg_now_ms();
        rd_kafka_resp_err_t e = eg_lanes_write(gw->lanes, r, r->part->origin, eg_policy_id(gw->policy));
        if (e) {
            r->fail->txn = EG_TXW_REPORTED;
            r->fail->txn_err = (int)e;
            snprintf(err, errlen, "lane write of %s[%d]@%lld refused: %s", r->topic, (int)r->partition,
                     (long long)r->offset, rd_kafka_err2name(e));
            rc = -1;
        }
    }
    return rc;
}

/* After the flush: 0 when every open record's write was reported without
 * error, else -1 with the first failure in err. */
static int check_reports(eg_gw *gw, int unreported, char *err, size_t errlen) {
    if (unreported > 0) {
        snprintf(err, errlen, "%d lane writes unreported after %d ms", unreported, TXN_STEP_TIMEOUT_MS);
        return -1;
    }
    for (int i = 0; i < gw->txn.nopen; i++) {
        eg_record *r = gw->txn.open[i];
        if (r->fail->txn == EG_TXW_REPORTED && r->fail->txn_err == 0) continue;
        snprintf(err, errlen, "lane write of %s[%d]@%lld failed: %s", r->topic, (int)r->partition, (long long)r->offset,
                 r->fail->txn == EG_TXW_REPORTED ? rd_kafka_err2name((rd_kafka_resp_err_t)r->fail->txn_err)
                                                 : "unreported");
        return -1;
    }
    return 0;
}

/* The running transaction aborted: its reported records wait again, the
 * unreported ones when their report comes. */
static void after_abort(eg_gw *gw) {
    for (int i = 0; i < gw->txn.nopen; i++) {
        eg_record *r = gw->txn.open[i];
        if (r->fail->txn == EG_TXW_WRITING) r->fail->txn = EG_TXW_ORPHAN;
        else requeue(gw, r);
    }
    gw->txn.nopen = 0;
}

eg_txn_result eg_gw_txn_run(eg_gw *gw, const rd_kafka_topic_partition_list_t *offsets) {
    char err[700] = "";
    int64_t t0 = eg_now_ms();
    gw->txn.busy = 1;
    select_records(gw, offsets);
    eg_txn_result res = eg_lanes_txn_begin(gw->lanes, err, sizeof err);
    if (res != EG_TXN_OK) {
        for (int i = 0; i < gw->txn.nopen; i++) gw->txn.open[i]->fail->txn = EG_TXW_REPORTED;
    } else {
        int bad = produce_open(gw, err, sizeof err);
        if (!bad) bad = check_reports(gw, eg_lanes_txn_flush(gw->lanes, TXN_STEP_TIMEOUT_MS), err, sizeof err);
        if (!bad && gw->txn.fatal) {
            snprintf(err, sizeof err, "%.600s", gw->txn.fatal_why);
            bad = 1;
        }
        if (bad) {
            char aerr[300] = "";
            res = eg_lanes_txn_abort(gw->lanes, TXN_STEP_TIMEOUT_MS, aerr, sizeof aerr);
            if (aerr[0]) {
                size_t n = strlen(err);
                snprintf(err + n, sizeof err - n, "; %s", aerr);
            }
        } else {
            res = eg_lanes_txn_commit(gw->lanes, gw->rk, offsets, TXN_STEP_TIMEOUT_MS, err, sizeof err);
        }
    }
    int64_t ms = eg_now_ms() - t0;
    if (res == EG_TXN_OK) {
        gw->txn.commits++;
        gw->txn.records += (uint64_t)gw->txn.nopen;
        gw->txn.ms_total += ms;
        if (ms > gw->txn.ms_max) gw->txn.ms_max = ms;
        eg_logline l;
        if (eg_log_begin(&l, EG_DEBUG, "lane_txn_committed")) {
            eg_log_int(&l, "records", gw->txn.nopen);
            eg_log_int(&l, "partitions", offsets->cnt);
            eg_log_int(&l, "ms", ms);
            eg_log_end(&l);
        }
    } else {
        gw->txn.aborts++;
        int n = gw->txn.nopen;
        after_abort(gw);
        if (res == EG_TXN_FATAL && !gw->txn.fatal) {
            gw->txn.fatal = 1;
            snprintf(gw->txn.fatal_why, sizeof gw->txn.fatal_why, "lane transaction: %s", err);
        }
        eg_logline l;
        if (eg_log_begin(&l, res == EG_TXN_FATAL ? EG_ERROR : EG_WARN,
                         res == EG_TXN_FATAL ? "lane_txn_fatal" : "lane_txn_aborted")) {
            eg_log_int(&l, "records", n);
            eg_log_int(&l, "partitions", offsets->cnt);
            eg_log_int(&l, "ms", ms);
            eg_log_str(&l, "error", err);
            eg_log_str(&l, "next",
                       res == EG_TXN_FATAL ? "stop, nothing more committed"
                                           : "offsets not moved; its records are written again");
            eg_log_end(&l);
        }
    }
    gw->txn.busy = 0;
    return res;
}

void eg_gw_txn_free(eg_gw *gw) {
    free(gw->txn.open);
    gw->txn.open = NULL;
    gw->txn.nopen = gw->txn.capopen = 0;
}
