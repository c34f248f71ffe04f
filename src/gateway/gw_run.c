/* gw_run.c — `errgate run` from start to exit: parses the command line,
 * loads the config, builds the gateway (metrics, breaker and retry budget,
 * policy, target, lanes, spill journal, admin endpoint, consumer), arms the
 * loop's timers and signals, runs the loop, logs the end-of-run summary and
 * tears everything down.
 *
 * It only wires: what happens to a record is gateway.c (whose entry points
 * it registers as callbacks), observability gw_admin.c, reloading
 * gw_reload.c, rung topics gw_rungs.c. Dependencies run one way, from this
 * file to those; none of them calls back into it.
 *
 * Building and freeing the gateway (eg_gw_open, eg_gw_close) are apart from
 * running it (eg_cmd_run: the subscription, the policy file watch, signals
 * and the loop), so that a program can build a gateway around a target of
 * its own and drive its loop and its group events itself (the in-process
 * test of the record path, spec/c/test_gateway.c, does). */
#include "cli.h"
#include "gw.h"
#include "log.h"
#include "supervisor.h"
#include "util.h"
#include "watchdog.h"

#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The poll tick: serve the consumer as if its queue had signalled, so group
 * membership is kept while nothing else wakes the loop. */
static void on_poll_tick(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    eg_sampler_flush(&gw->declog, eg_wall_ms()); /* the last second's decision_summary, even when idle now */
    eg_gw_on_consumer_queue(-1, 0, gw);
}

/* Runs the loop one pass at a time and writes the log lines of each pass
 * with one write(2) (log.h's buffer) after it, until the loop is broken
 * or has nothing left to wait for. */
static void run_loop(eg_gw *gw) {
    for (;;) {
        int r = event_base_loop(gw->base, EVLOOP_ONCE);
        eg_log_flush();
        if (r != 0 || event_base_got_break(gw->base) || event_base_got_exit(gw->base)) return;
    }
}

/* SIGTERM, SIGINT: stop gracefully (exit 0); a second one stops now. */
static void on_signal(evutil_socket_t sig, short what, void *arg) {
    eg_gw *gw = arg;
    if (gw->stopping) {
        eg_log_msg(EG_WARN, "stop", "second signal: stopping now");
        eg_gw_finish_stop(gw);
        return;
    }
    eg_gw_begin_stop(gw, EG_EXIT_OK, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Creates the consumer (fixed and default settings over the config's) and
 * wakes the loop through a pipe when its queue has events; the rung topics
 * are known and every topic made sure of, but nothing is subscribed yet
 * (eg_gw_subscribe). Returns 0 or -1 with err. */
static int consumer_new(eg_gw *gw, char *err, size_t errlen) {
    const eg_config *cfg = gw->cfg;
    char e[512];
    /* prefetch per partition: librdkafka's defaults (100,000 messages, 64 MiB)
     * would dwarf the in-flight caps. Not fewer messages: librdkafka 2.0.2
     * refills a partition whose queue reached queued.min.messages only about
     * once a second, so the prefetch must last a second of consumption (a
     * happy path of 200,000 records over 16 partitions ran at 2.5x less with
     * 2,000; its peak RSS went from ~46 to ~30 MiB, the dead-letter path's
     * from ~90 to ~48). Statistics feed the consumer-lag metric. */
    static const char *const defaults[][2] = {{"auto.offset.reset", "earliest"},      {"queued.min.messages", "20000"},
                                              {"queued.max.messages.kbytes", "4096"}, {"client.id", "errgate"},
                                              {"statistics.interval.ms", "5000"},     {NULL, NULL}};
    const char *const fixed[][2] = {{"group.id", cfg->group},
                                    {"enable.auto.commit", "false"},
                                    {"enable.auto.offset.store", "false"},
                                    {"enable.partition.eof", "false"},
                                    {NULL, NULL}};
    rd_kafka_conf_t *conf = eg_kconf_build(cfg, defaults, fixed, err, errlen);
    if (!conf) return -1;
    rd_kafka_conf_set_stats_cb(conf, eg_gw_on_stats);
    rd_kafka_conf_set_opaque(conf, gw);
    rd_kafka_conf_set_rebalance_cb(conf, eg_gw_on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, eg_gw_on_commit_result);
    rd_kafka_conf_set_error_cb(conf, eg_gw_on_consumer_error);
    gw->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!gw->rk) {
        snprintf(err, errlen, "cannot create the consumer: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_poll_set_consumer(gw->rk);
    gw->cq = rd_kafka_queue_get_consumer(gw->rk);
    if (pipe2(gw->cpipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %m");
        return -1;
    }
    rd_kafka_queue_io_event_enable(gw->cq, gw->cpipe[1], "1", 1);
    gw->cev = event_new(gw->base, gw->cpipe[0], EV_READ | EV_PERSIST, eg_gw_on_consumer_queue, gw);
    event_add(gw->cev, NULL);
    eg_gw_rungs_sync(gw);
    eg_gw_topics_ensure(gw);
    gw->coverage = eg_gw_coverage_new(gw);
    gw->fetchwake = eg_gw_fetchwake_new(gw->rk, cfg->fetch_wakeup_ms, gw->m.fetch_wakeups);
    return 0;
}

void eg_gw_close(eg_gw *gw) {
    eg_gw_reload_stop(gw); /* answers reloads still waiting, before the admin goes */
    eg_admin_free(gw->admin);
    gw->admin = NULL;
    /* borrowers first: the producer may still point into records' messages */
    if (gw->target) gw->target->ops->destroy(gw->target);
    if (gw->lanes) eg_lanes_free(gw->lanes);
    eg_spill_drain_free(gw->drain, SPILL_STOP_WAIT_MS); /* undelivered frames stay in the journal */
    eg_spill_close(gw->spill);
    gw->drain = NULL;
    gw->spill = NULL;
    gw->target = NULL;
    gw->lanes = NULL;
    eg_gw_drop_all(gw);
    eg_gw_txn_free(gw);
    eg_slab_clear(&gw->records);
    eg_slab_clear(&gw->fails);
    if (gw->cq) rd_kafka_queue_destroy(gw->cq);
    eg_gw_fetchwake_free(gw->fetchwake); /* when the stop did not run */
    gw->fetchwake = NULL;
    if (gw->rk) rd_kafka_destroy(gw->rk);
    eg_gw_coverage_free(gw->coverage); /* after the consumer: its rebalance callback uses it */
    gw->coverage = NULL;
    eg_policy_free(gw->policy);
    eg_shadow_free(gw->shadow);
    eg_gw_rungs_free(gw);
    eg_breaker_free(&gw->breaker);
    eg_gw_limits_close(gw);
    eg_gw_incident_free(gw);
    eg_gw_fence_free(gw);
    if (gw->fence_lane_ev) event_free(gw->fence_lane_ev);
    if (gw->cev) event_free(gw->cev);
    if (gw->watch_ev) event_free(gw->watch_ev);
    if (gw->commit_ev) event_free(gw->commit_ev);
    if (gw->poll_ev) event_free(gw->poll_ev);
    if (gw->drain_ev) event_free(gw->drain_ev);
    for (int i = 0; i < 3; i++)
        if (gw->sig_ev[i]) event_free(gw->sig_ev[i]);
    if (gw->cpipe[0] > 0) close(gw->cpipe[0]);
    if (gw->cpipe[1] > 0) close(gw->cpipe[1]);
    if (gw->base) event_base_free(gw->base);
    eg_metrics_install_target_latency(NULL);
    eg_registry_free(gw->reg);
    gw->reg = NULL;
}

/* `errgate run --help`. */
static void usage(void) {
    printf("usage: errgate run -c CONFIG [--source NAME]\n"
           "\n"
           "  -c, --config FILE  the gateway config (a Lua file returning a table;\n"
           "                     see man errgate, CONFIGURATION)\n"
           "  --source NAME      with a config of several sources: run that one only\n"
           "                     (without it, every source runs, a process each)\n"
           "  --admin-fd N       serve the admin on inherited socket N (what the\n"
           "                     gateway of several sources gives each source)\n"
           "\n"
           "Runs until SIGTERM or SIGINT (exit 0); SIGHUP reloads the policy.\n"
           "Exit 2: a bad config, policy or target file (nothing consumed);\n"
           "3: the policy decided stop; 1: a fatal Kafka error.\n");
}

/* Opens the spill journal and starts its drainer on the loop, when the
 * config has lanes.spill. Returns 0 or -1 with err. */
static int spill_start(eg_gw *gw, char *err, size_t errlen) {
    if (!gw->cfg->spill_dir) return 0;
    eg_spill_opts so = {.role = "gateway"};
    if (!(gw->spill = eg_spill_open(gw->cfg->spill_dir, &so, err, errlen))) return -1;
    rd_kafka_conf_t *conf = eg_lanes_producer_conf(gw->cfg, "errgate-spill", err, errlen);
    if (!conf || !(gw->drain = eg_spill_drain_new(gw->spill, conf, NULL, err, errlen)) ||
        eg_spill_drain_attach(gw->drain, gw->base, SPILL_DRAIN_IDLE_MS, err, errlen) != 0)
        return -1;
    eg_log_msg(EG_INFO, "spill", "journal %s, spilling lane writes unacknowledged after %d ms", gw->cfg->spill_dir,
               gw->cfg->spill_after_ms);
    return 0;
}

int eg_gw_open(eg_gw *gw, eg_config *cfg, eg_target *target, char *err, size_t errlen) {
    memset(gw, 0, sizeof *gw);
    gw->cfg = cfg;
    eg_sampler_init(&gw->declog, cfg->log_decisions_per_second);
    /* as many kept as can be in flight: the caps bound them */
    eg_slab_init(&gw->records, sizeof(eg_record), cfg->max_inflight_total);
    eg_slab_init(&gw->fails, sizeof(eg_fail), cfg->max_inflight_total);
    gw->base = event_base_new();
    gw->loop_thread = pthread_self();
    eg_gw_metrics_new(gw);
    if (target) { /* taken: freed by eg_gw_close, also when this fails */
        gw->target = target;
        target->base = gw->base;
        target->done = eg_gw_on_target_done;
        target->done_arg = gw;
    }
    eg_breaker_cfg bc = {.enabled = cfg->breaker_enabled,
                         .window = cfg->breaker_window,
                         .min_calls = cfg->breaker_min_calls,
                         .failure_ratio = cfg->breaker_failure_ratio,
                         .open_ms = cfg->breaker_open_ms,
                         .half_open_probes = cfg->breaker_probes};
    char e[512];
    if (eg_breaker_init(&gw->breaker, &bc, eg_gw_on_breaker, gw, e, sizeof e) != 0 ||
        eg_gw_limits_open(gw, e, sizeof e) != 0) {
        snprintf(err, errlen, "config %s: target: %s", cfg->path, e);
        return -1;
    }
    if (!(gw->policy = eg_policy_load_capped(cfg->policy, cfg->policy_timeout_ms, (size_t)cfg->policy_memory_mb << 20,
                                             err, errlen)) ||
        (!gw->target && !(gw->target = eg_target_new(cfg, gw->base, eg_gw_on_target_done, gw, err, errlen))) ||
        !(gw->lanes = eg_lanes_new(cfg, gw->base, eg_gw_on_lane_done, eg_gw_on_lane_fatal, gw, err, errlen)) ||
        spill_start(gw, err, errlen) != 0 || eg_gw_incident_start(gw, err, errlen) != 0 ||
        eg_gw_fence_start(gw, err, errlen) != 0 || eg_gw_admin_start(gw, err, errlen) != 0 ||
        consumer_new(gw, err, errlen) != 0)
        return -1;
    eg_lanes_count_unprotectable(gw->lanes, gw->m.payload_unprotectable);
    eg_gw_txn_start(gw);
    if (cfg->shadow_policy) {
        eg_shadow_cfg sc = {cfg->shadow_policy, cfg->shadow_timeout_ms, (size_t)cfg->policy_memory_mb << 20,
                            cfg->shadow_cpu_percent};
        gw->shadow = eg_shadow_new(&sc, gw->base, gw->reg);
    }
    gw->commit_ev = event_new(gw->base, -1, EV_PERSIST, eg_gw_on_commit_tick, gw);
    struct timeval ci = eg_gw_tv(cfg->commit_interval_ms);
    event_add(gw->commit_ev, &ci);
    gw->poll_ev = event_new(gw->base, -1, EV_PERSIST, on_poll_tick, gw);
    struct timeval pt = eg_gw_tv(POLL_TICK_MS);
    event_add(gw->poll_ev, &pt);
    return 0;
}

/* `errgate run -c CONFIG` of a config with several sources (cfg: its
 * first source, for what they share): the supervisor. Frees cfg. */
static int supervise(const char *cfgpath, eg_config *cfg) {
    char err[1024], self[4096];
    char **names = NULL;
    int n = 0;
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    int rc = EG_EXIT_USAGE;
    if (sl <= 0) fprintf(stderr, "errgate: cannot find its own executable (/proc/self/exe)\n");
    else if (eg_config_source_names(cfgpath, &names, &n, err, sizeof err) != 0) fprintf(stderr, "errgate: %s\n", err);
    else {
        self[sl] = '\0';
        rc = eg_supervise(self, cfgpath, cfg, names, n);
    }
    eg_config_free_names(names, n);
    eg_config_free(cfg);
    return rc;
}

/* `errgate run -c CONFIG`: loads the config, builds the gateway, runs the
 * loop until a stop, logs the summary. Returns the exit code (EG_EXIT_*). */
int eg_cmd_run(int argc, char **argv) {
    const char *cfgpath = NULL, *source = NULL;
    int admin_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (eg_is_help(a)) {
            usage();
            return EG_EXIT_OK;
        }
        int is_c = !strcmp(a, "-c") || !strcmp(a, "--config"), is_s = !strcmp(a, "--source");
        if (!is_c && !is_s && strcmp(a, "--admin-fd"))
            return eg_usage_error("run", a[0] == '-' ? "unknown option '%s'%s" : "unexpected argument '%s'%s", a,
                                  eg_dash_hint(a));
        if (i + 1 >= argc) return eg_usage_error("run", "%s needs a value", a);
        const char *v = argv[++i];
        if (is_c) cfgpath = v;
        else if (is_s) source = v;
        else {
            char *end;
            long fd = strtol(v, &end, 10);
            if (*end || end == v || fd < 3 || fd > 1024 || fcntl((int)fd, F_GETFD) < 0)
                return eg_usage_error("run", "--admin-fd: %s is not an open descriptor above 2", v);
            admin_fd = (int)fd;
        }
    }
    if (!cfgpath) return eg_usage_error("run", "missing -c CONFIG");
    /* SIGTERM, SIGINT and SIGHUP wait (blocked, pending) until the loop's
     * handlers are armed: a reload or a stop sent while the gateway starts
     * must not kill it with the default action. Threads started meanwhile
     * (librdkafka's, the policy watchdog) keep them blocked. */
    sigset_t startup;
    sigemptyset(&startup);
    sigaddset(&startup, SIGTERM);
    sigaddset(&startup, SIGINT);
    sigaddset(&startup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &startup, NULL);
    char err[1024];
    eg_config cfg;
    if (eg_config_load_source(cfgpath, source ? source : EG_ANY_SOURCE, &cfg, err, sizeof err) != 0) {
        if (admin_fd >= 0) close(admin_fd);
        fprintf(stderr, "errgate: %s\n", err); /* one plain line: nothing started yet */
        /* a stop asked for during the load: nothing consumed, a graceful stop */
        return eg_config_load_signal() ? EG_EXIT_OK : EG_EXIT_USAGE;
    }
    eg_log_setup((eg_level)cfg.log_level, strcmp(cfg.log_format, "text") == 0);
    signal(SIGPIPE, SIG_IGN);
    if (cfg.nsources > 0 && !source) /* several sources: a process each */
        return supervise(cfgpath, &cfg);
    eg_log_set_source(cfg.source_name);
    cfg.admin_fd = admin_fd;

    eg_gw gw;
    int rc = EG_EXIT_USAGE;
    if (eg_gw_open(&gw, &cfg, NULL, err, sizeof err) != 0 || eg_gw_subscribe(&gw, err, sizeof err) != 0) {
        fprintf(stderr, "errgate: %s\n", err);
        goto out;
    }
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "start")) {
        eg_log_str(&l, "group", cfg.group);
        eg_log_str(&l, "policy", eg_policy_id(gw.policy));
        eg_log_str(&l, "target", cfg.target_kind == EG_TARGET_HTTP ? cfg.http_url : cfg.lua_target);
        eg_log_str(&l, "ordering", eg_ordering_name(cfg.ordering));
        eg_log_end(&l);
    }
    eg_gw_watch_start(&gw);
    gw.sig_ev[0] = evsignal_new(gw.base, SIGTERM, on_signal, &gw);
    gw.sig_ev[1] = evsignal_new(gw.base, SIGINT, on_signal, &gw);
    gw.sig_ev[2] = evsignal_new(gw.base, SIGHUP, eg_gw_on_sighup, &gw);
    event_add(gw.sig_ev[0], NULL);
    event_add(gw.sig_ev[1], NULL);
    event_add(gw.sig_ev[2], NULL);
    pthread_sigmask(SIG_UNBLOCK, &startup, NULL);
    eg_log_buffer_start();
    run_loop(&gw);
    rc = gw.exit_code;
    eg_sampler_flush(&gw.declog, -1);
    eg_gw_log_summary(&gw);
    eg_log_flush_suppressed();
    eg_log_buffer_stop();
    /* nothing is left to commit: the teardown may end the process early
     * without loss, and must not hang it (watchdog.c) */
    eg_watchdog_arm(TEARDOWN_MAX_MS, rc, "the teardown (Kafka clients, target, spill drainer)");
out:
    eg_gw_close(&gw);
    eg_config_free(&cfg);
    eg_watchdog_disarm();
    return rc;
}
