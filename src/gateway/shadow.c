/* shadow.c — the shadow policy (see shadow.h).
 *
 * Off the critical path, how: the decision point only copies (the failure's
 * strings, the context, the record's id and, for a candidate that reads the
 * record, its key and headers: a few hundred ns, on the failure path only)
 * into a fixed ring of EG_SHADOW_QUEUE jobs. The candidate runs from a
 * libevent timer on the same loop, so never inside the event that carries
 * out the live decision: the live lane write, timer or commit has been
 * started before any shadow code runs. A slice runs for at most
 * EG_SHADOW_SLICE_MS (plus one decision, itself capped by the candidate's
 * budget), and the next slice is not due before the time spent, scaled by
 * (100 - cpu_percent) / cpu_percent, has passed: however slow or hostile
 * the candidate, the shadow takes at most about cpu_percent of the loop.
 * When the ring is full the failure is skipped (counted, reason "behind").
 * No thread is involved: a candidate is an eg_policy, whose state belongs
 * to the thread that calls it, and the loop's thread is the only one.
 *
 * Protection is eg_policy's: the candidate's state is sandboxed and capped,
 * every call is protected and budgeted (the count hook, the VM watchdog,
 * the allocator's deadline), and any failure gives a fallback decision,
 * which here is counted as a shadow error and never acted on. */
#include "shadow.h"
#include "json.h"
#include "log.h"
#include "redact.h"
#include "sha256.h"
#include "util.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SLICE_NS ((int64_t)EG_SHADOW_SLICE_MS * 1000000)
#define ERROR_LOG_EVERY_MS 10000 /* shadow error lines: at most one per this, with the count */

/* ------------------------------------------------------------- the table */

static eg_shadow_cell *cell_find(eg_shadow_table *t, const char *klass, const char *live, const char *shadow) {
    for (int i = 0; i < t->n; i++) {
        eg_shadow_cell *c = &t->cells[i];
        if (!strcmp(c->klass, klass) && !strcmp(c->live, live) && !strcmp(c->shadow, shadow)) return c;
    }
    return NULL;
}

void eg_shadow_table_add(eg_shadow_table *t, const char *klass, const char *live, const char *shadow, const char *id) {
    if (!klass || !*klass) klass = "unknown";
    eg_shadow_cell *c = cell_find(t, klass, live, shadow);
    if (!c && t->n >= EG_SHADOW_MAX_CELLS) {
        klass = "_overflow";
        c = cell_find(t, klass, live, shadow);
    }
    if (!c) {
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 16;
            t->cells = eg_xrealloc(t->cells, (size_t)t->cap * sizeof *t->cells);
        }
        c = &t->cells[t->n++];
        memset(c, 0, sizeof *c);
        eg_strlcpy(c->klass, klass, sizeof c->klass);
        eg_strlcpy(c->live, live, sizeof c->live);
        eg_strlcpy(c->shadow, shadow, sizeof c->shadow);
    }
    c->count++;
    t->total++;
    if (strcmp(live, shadow) == 0 || c->nex >= EG_SHADOW_EXAMPLES || !id) return;
    if (!c->ex) c->ex = eg_xcalloc(EG_SHADOW_EXAMPLES, sizeof *c->ex);
    eg_strlcpy(c->ex[c->nex++], id, EG_SHADOW_ID_MAX);
}

void eg_shadow_table_json(const eg_shadow_table *t, struct evbuffer *out) {
    evbuffer_add(out, "[", 1);
    for (int i = 0; i < t->n; i++) {
        const eg_shadow_cell *c = &t->cells[i];
        evbuffer_add_printf(out, "%s{\"class\":", i ? "," : "");
        eg_json_str(out, c->klass);
        evbuffer_add_printf(out, ",\"live\":");
        eg_json_str(out, c->live);
        evbuffer_add_printf(out, ",\"shadow\":");
        eg_json_str(out, c->shadow);
        evbuffer_add_printf(out, ",\"agree\":%s,\"count\":%llu,\"examples\":[",
                            strcmp(c->live, c->shadow) ? "false" : "true", (unsigned long long)c->count);
        for (int k = 0; k < c->nex; k++) {
            if (k) evbuffer_add(out, ",", 1);
            eg_json_str(out, c->ex[k]);
        }
        evbuffer_add(out, "]}", 2);
    }
    evbuffer_add(out, "]", 1);
}

void eg_shadow_table_clear(eg_shadow_table *t) {
    for (int i = 0; i < t->n; i++) free(t->cells[i].ex);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------- the record, copied */

void eg_shadow_rec_copy(eg_shadow_rec *out, const eg_record *r, int with_body) {
    memset(out, 0, sizeof *out);
    const rd_kafka_message_t *m = r->msg;
    out->topic = eg_xstrdup(r->topic);
    out->partition = r->partition;
    out->offset = r->offset;
    eg_record_id(r, out->id, sizeof out->id);
    rd_kafka_timestamp_type_t tstype;
    out->timestamp = rd_kafka_message_timestamp(m, &tstype);
    if (!with_body) return;
    if (m->key) {
        out->key_len = m->key_len < EG_SHADOW_STR_CAP ? m->key_len : EG_SHADOW_STR_CAP;
        out->key = eg_xstrndup(m->key, out->key_len);
    }
    rd_kafka_headers_t *hdrs = NULL;
    if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const char *name;
    const void *val;
    size_t size, bytes = 0;
    int cap = 0;
    for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; i++) {
        if (!val) continue;
        if (size > EG_SHADOW_STR_CAP) size = EG_SHADOW_STR_CAP;
        bytes += size + strlen(name);
        if (bytes > EG_SHADOW_REC_CAP) break;
        if (out->nh == cap) {
            cap = cap ? cap * 2 : 8;
            out->hname = eg_xrealloc(out->hname, (size_t)cap * sizeof *out->hname);
            out->hval = eg_xrealloc(out->hval, (size_t)cap * sizeof *out->hval);
            out->hlen = eg_xrealloc(out->hlen, (size_t)cap * sizeof *out->hlen);
        }
        out->hname[out->nh] = eg_xstrdup(name);
        out->hval[out->nh] = eg_xstrndup(val, size);
        out->hlen[out->nh++] = size;
    }
}

void eg_shadow_rec_free(eg_shadow_rec *rec) {
    free(rec->topic);
    free(rec->key);
    for (int i = 0; i < rec->nh; i++) {
        free(rec->hname[i]);
        free(rec->hval[i]);
    }
    free(rec->hname);
    free(rec->hval);
    free(rec->hlen);
    memset(rec, 0, sizeof *rec);
}

/* eg_policy_push_fn: the record's table as eg_vm_push_record builds it
 * (topic, partition, offset, id, key, timestamp, headers; no value), from
 * the copy. Runs protected inside the candidate's decision. */
static void push_rec(lua_State *L, const void *arg) {
    const eg_shadow_rec *rec = arg;
    lua_createtable(L, 0, 8);
    lua_pushstring(L, rec->topic);
    lua_setfield(L, -2, "topic");
    lua_pushnumber(L, rec->partition);
    lua_setfield(L, -2, "partition");
    lua_pushnumber(L, (lua_Number)rec->offset);
    lua_setfield(L, -2, "offset");
    lua_pushstring(L, rec->id);
    lua_setfield(L, -2, "id");
    if (rec->key) {
        lua_pushlstring(L, rec->key, rec->key_len);
        lua_setfield(L, -2, "key");
    }
    lua_pushnumber(L, (lua_Number)rec->timestamp);
    lua_setfield(L, -2, "timestamp");
    lua_createtable(L, 0, rec->nh);
    for (int i = 0; i < rec->nh; i++) {
        lua_pushlstring(L, rec->hval[i], rec->hlen[i]);
        lua_setfield(L, -2, rec->hname[i]);
    }
    lua_setfield(L, -2, "headers");
}

/* ------------------------------------------------------------ the shadow */

/* One failure waiting for the candidate: copies of everything it reads. */
typedef struct job {
    eg_failure f; /* owns its strings */
    eg_ctx ctx;   /* last_class and rung point into the job */
    char last_class[64];
    char rung[40];
    char klass[64]; /* the live decision's */
    eg_action live;
    eg_shadow_rec rec;
} job;

struct eg_shadow {
    eg_shadow_cfg cfg; /* path owned */
    eg_policy *cand;   /* NULL: none loaded */
    char last_error[512];
    int64_t loaded_ms;
    int64_t mtime_ns, size; /* of the file, at the last look */
    job *ring;
    int head, len;
    struct event *ev;
    int armed;
    int64_t next_ns; /* the next slice is not due before this */
    eg_shadow_table table;
    eg_family *decisions, *skipped, *reloads, *seconds;
    uint64_t *errors;
    uint64_t evaluated;
    char error_sample[512];
    uint64_t errors_unlogged;
    int64_t error_logged_ms;
};

static const char *const dec_labels[] = {"class", "live", "shadow"};
static const char *const reason_label[] = {"reason"};
static const char *const result_label[] = {"result"};
static const double sec_bounds[] = {0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1};

static void on_drain(evutil_socket_t fd, short what, void *arg);

static void file_stat(const char *path, int64_t *mtime_ns, int64_t *size) {
    struct stat st;
    if (stat(path, &st) != 0) {
        *mtime_ns = *size = -1;
        return;
    }
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    *size = (int64_t)st.st_size;
}

eg_shadow *eg_shadow_new(const eg_shadow_cfg *cfg, struct event_base *base, eg_registry *reg) {
    eg_shadow *s = eg_xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    s->cfg.path = eg_xstrdup(cfg->path);
    if (s->cfg.cpu_percent < 1) s->cfg.cpu_percent = 1;
    if (s->cfg.cpu_percent > 100) s->cfg.cpu_percent = 100;
    s->ring = eg_xcalloc(EG_SHADOW_QUEUE, sizeof *s->ring);
    if (base) s->ev = evtimer_new(base, on_drain, s);
    s->decisions = eg_family_new(reg, "errgate_shadow_decisions_total",
                                 "Failures decided by the shadow policy, by the live decision's class, the live "
                                 "action and the shadow's (\"error\": the candidate failed).",
                                 EG_MT_COUNTER, 3, dec_labels, NULL, 0);
    eg_family *errs = eg_family_new(reg, "errgate_shadow_errors_total",
                                    "Shadow decisions the candidate failed (raised, over budget, out of memory, "
                                    "invalid answer); never acted on.",
                                    EG_MT_COUNTER, 0, NULL, NULL, 0);
    s->errors = eg_counter(errs, NULL);
    s->skipped = eg_family_new(reg, "errgate_shadow_skipped_total",
                               "Failures the shadow did not decide: behind (its queue was full) or no_candidate.",
                               EG_MT_COUNTER, 1, reason_label, NULL, 0);
    s->reloads = eg_family_new(reg, "errgate_shadow_reloads_total", "Loads of the shadow candidate, by result.",
                               EG_MT_COUNTER, 1, result_label, NULL, 0);
    s->seconds =
        eg_family_new(reg, "errgate_shadow_decision_seconds", "Time of one shadow decision (off the live path).",
                      EG_MT_HISTOGRAM, 0, NULL, sec_bounds, (int)(sizeof sec_bounds / sizeof sec_bounds[0]));
    char err[1024];
    file_stat(s->cfg.path, &s->mtime_ns, &s->size);
    eg_policy *p = eg_policy_load_capped(s->cfg.path, s->cfg.timeout_ms, s->cfg.mem_limit, err, sizeof err);
    eg_shadow_swap(s, &p, err, "start");
    return s;
}

static void job_clear(job *j) {
    eg_failure_clear(&j->f);
    eg_shadow_rec_free(&j->rec);
}

void eg_shadow_free(eg_shadow *s) {
    if (!s) return;
    for (int i = 0; i < s->len; i++) job_clear(&s->ring[(s->head + i) % EG_SHADOW_QUEUE]);
    free(s->ring);
    if (s->ev) event_free(s->ev);
    eg_policy_free(s->cand);
    eg_shadow_table_clear(&s->table);
    free((char *)s->cfg.path);
    free(s);
}

static void skip(eg_shadow *s, const char *reason) {
    const char *v[1] = {reason};
    (*eg_counter(s->skipped, v))++;
}

/* Arms the slice timer when work is queued: at next_ns, or at once. */
static void schedule(eg_shadow *s) {
    if (!s->ev || s->armed || !s->len) return;
    int64_t now = eg_now_ns(), wait = s->next_ns > now ? s->next_ns - now : 0;
    struct timeval tv = {(time_t)(wait / 1000000000), (suseconds_t)(wait % 1000000000 / 1000)};
    evtimer_add(s->ev, &tv);
    s->armed = 1;
}

static char *dup_opt(const char *s) { return s ? eg_xstrdup(s) : NULL; }

void eg_shadow_offer_rec(eg_shadow *s, const eg_failure *f, eg_shadow_rec *rec, const eg_ctx *ctx,
                         const eg_decision *live) {
    if (!s->cand || s->len == EG_SHADOW_QUEUE) {
        skip(s, s->cand ? "behind" : "no_candidate");
        eg_shadow_rec_free(rec);
        return;
    }
    job *j = &s->ring[(s->head + s->len++) % EG_SHADOW_QUEUE];
    memset(j, 0, sizeof *j);
    j->f = *f;
    j->f.code = dup_opt(f->code);
    j->f.class_hint = dup_opt(f->class_hint);
    j->f.message = dup_opt(f->message);
    j->f.body = f->body ? eg_xstrndup(f->body, f->body_len) : NULL;
    j->ctx = *ctx;
    if (ctx->last_class) {
        eg_strlcpy(j->last_class, ctx->last_class, sizeof j->last_class);
        j->ctx.last_class = j->last_class;
    }
    if (ctx->rung) {
        eg_strlcpy(j->rung, ctx->rung, sizeof j->rung);
        j->ctx.rung = j->rung;
    }
    eg_strlcpy(j->klass, live->klass, sizeof j->klass);
    j->live = live->action;
    j->rec = *rec;
    memset(rec, 0, sizeof *rec);
    schedule(s);
}

void eg_shadow_offer(eg_shadow *s, const eg_failure *f, const eg_record *r, const eg_ctx *ctx,
                     const eg_decision *live) {
    eg_shadow_rec rec;
    if (!s->cand || s->len == EG_SHADOW_QUEUE) memset(&rec, 0, sizeof rec); /* skipped: copy nothing */
    else eg_shadow_rec_copy(&rec, r, eg_policy_reads_record(s->cand));
    eg_shadow_offer_rec(s, f, &rec, ctx, live);
}

/* A shadow error: counted; logged at most once per ERROR_LOG_EVERY_MS with
 * how many came since the last line. */
static void shadow_error(eg_shadow *s, const job *j, const char *msg) {
    (*s->errors)++;
    s->errors_unlogged++;
    eg_redact(msg, strlen(msg), s->error_sample, sizeof s->error_sample);
    int64_t now = eg_now_ms();
    if (s->error_logged_ms && now - s->error_logged_ms < ERROR_LOG_EVERY_MS) return;
    s->error_logged_ms = now;
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "shadow_error")) {
        eg_log_str(&l, "policy", eg_policy_id(s->cand));
        eg_log_str(&l, "id", j->rec.id);
        eg_log_str(&l, "error", s->error_sample);
        eg_log_int(&l, "errors", (int64_t)s->errors_unlogged);
        eg_log_end(&l);
    }
    s->errors_unlogged = 0;
}

/* The candidate decides j; the outcome is counted, never acted on. */
static void run_job(eg_shadow *s, job *j) {
    eg_decision d;
    int64_t t0 = eg_now_ns();
    eg_policy_decide_pushed(s->cand, &j->f, push_rec, &j->rec, NULL, &j->ctx, &d);
    eg_hist_observe(eg_histogram(s->seconds, NULL), (double)(eg_now_ns() - t0) / 1e9);
    const char *live = eg_action_name(j->live), *sh = d.fallback ? EG_SHADOW_ERROR : eg_action_name(d.action);
    if (d.fallback) shadow_error(s, j, d.message);
    const char *v[3] = {j->klass[0] ? j->klass : "unknown", live, sh};
    (*eg_counter(s->decisions, v))++;
    eg_shadow_table_add(&s->table, j->klass, live, sh, j->rec.id);
    s->evaluated++;
}

int eg_shadow_drain(eg_shadow *s, int64_t budget_ns) {
    int64_t t0 = eg_now_ns();
    int n = 0;
    while (s->len && (n == 0 || eg_now_ns() - t0 < budget_ns)) {
        job *j = &s->ring[s->head];
        s->head = (s->head + 1) % EG_SHADOW_QUEUE;
        s->len--;
        if (s->cand) run_job(s, j);
        job_clear(j);
        n++;
    }
    return n;
}

int eg_shadow_pending(const eg_shadow *s) { return s->len; }

/* The slice timer: one slice, then the next one after a pause that keeps
 * the shadow's share of the loop at cpu_percent. */
static void on_drain(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    eg_shadow *s = arg;
    s->armed = 0;
    int64_t t0 = eg_now_ns();
    eg_shadow_drain(s, SLICE_NS);
    int64_t spent = eg_now_ns() - t0;
    s->next_ns = t0 + spent + spent * (100 - s->cfg.cpu_percent) / s->cfg.cpu_percent;
    schedule(s);
}

void eg_shadow_swap(eg_shadow *s, eg_policy **fresh, const char *err, const char *trigger) {
    const char *v[1] = {*fresh ? "success" : "failure"};
    (*eg_counter(s->reloads, v))++;
    eg_logline l;
    if (!*fresh) {
        eg_redact(err, strlen(err), s->last_error, sizeof s->last_error);
        if (eg_log_begin(&l, EG_WARN, "shadow_refused")) {
            eg_log_str(&l, "trigger", trigger);
            eg_log_str(&l, "path", s->cfg.path);
            eg_log_str(&l, "error", s->last_error);
            if (s->cand) eg_log_str(&l, "kept", eg_policy_id(s->cand));
            else eg_log_null(&l, "kept");
            eg_log_end(&l);
        }
        return;
    }
    char before[192] = "";
    if (s->cand) eg_strlcpy(before, eg_policy_id(s->cand), sizeof before);
    eg_policy_free(s->cand);
    s->cand = *fresh;
    *fresh = NULL;
    s->last_error[0] = '\0';
    s->loaded_ms = eg_wall_ms();
    eg_shadow_table_clear(&s->table); /* the table is this candidate's */
    if (eg_log_begin(&l, EG_INFO, "shadow_loaded")) {
        eg_log_str(&l, "trigger", trigger);
        eg_log_str(&l, "policy", eg_policy_id(s->cand));
        if (before[0]) eg_log_str(&l, "previous", before);
        eg_log_end(&l);
    }
}

const eg_shadow_cfg *eg_shadow_config(const eg_shadow *s) { return &s->cfg; }

int eg_shadow_changed(eg_shadow *s) {
    int64_t mt, sz;
    file_stat(s->cfg.path, &mt, &sz);
    if (mt == s->mtime_ns && sz == s->size) return 0;
    s->mtime_ns = mt;
    s->size = sz;
    char sha[65];
    if (mt >= 0 && s->cand && eg_sha256_file_hex(s->cfg.path, sha) == 0 && !strcmp(sha, eg_policy_sha256(s->cand)))
        return 0; /* touched, not changed */
    return mt >= 0;
}

void eg_shadow_json(const eg_shadow *s, struct evbuffer *out) {
    evbuffer_add_printf(out, "{\"path\":");
    eg_json_str(out, s->cfg.path);
    evbuffer_add_printf(out, ",\"candidate\":");
    if (s->cand) eg_json_str(out, eg_policy_id(s->cand));
    else evbuffer_add_printf(out, "null");
    evbuffer_add_printf(out, ",\"loaded_at_ms\":%lld,\"last_error\":", (long long)s->loaded_ms);
    eg_json_str(out, s->last_error);
    uint64_t skipped = eg_family_total(s->skipped);
    evbuffer_add_printf(out,
                        ",\"decided\":%llu,\"errors\":%llu,\"skipped\":%llu,\"pending\":%d,\"timeout_ms\":%d,"
                        "\"cpu_percent\":%d,\"table_total\":%llu,\"table\":",
                        (unsigned long long)s->evaluated, (unsigned long long)*s->errors, (unsigned long long)skipped,
                        s->len, s->cfg.timeout_ms, s->cfg.cpu_percent, (unsigned long long)s->table.total);
    eg_shadow_table_json(&s->table, out);
    evbuffer_add(out, "}", 1);
}
