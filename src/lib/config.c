/* config.c — load and validate the gateway's Lua configuration (see config.h).
 *
 * The config is operator input, but whoever can write it must not get more
 * than a config: it runs in a bounded VM of its own (luavm.c: the JIT off, a
 * count hook with a EG_CONFIG_BUDGET_MS deadline, an EG_CONFIG_MEMORY_MB
 * allocator cap) through the runtime's sandboxed loader (text only, an
 * environment without process, file or code-loading functions; os.getenv
 * and the clock functions stay, so configs may read the environment), and
 * SIGTERM/SIGINT during the load interrupt the VM at its next instruction.
 * Its result is validated strictly:
 * eg_config_keys lists every key with its type, default, bounds and help;
 * anything else is refused. The plain keys (strings, numbers, booleans,
 * enums) are read by one generic reader from that table; the keys flagged
 * EG_CK_CUSTOM (the kafka map, the topic list, headers, the presence tables'
 * `enabled`) and the checks across keys have their own code below. */
#include "config.h"
#include "lane_profiles.h"
#include "log.h"
#include "parse.h"
#include "protect.h"
#include "luavm.h"
#include "replay_dest.h"
#include "util.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <libgen.h>
#include <math.h>
#include <ctype.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct loadctx {
    lua_State *L;
    eg_config *cfg;
    char *dir; /* directory of the config file */
    char *err;
    size_t errlen;
} loadctx;

/* ---- the key table ------------------------------------------------------ */

static const char *const orderings[] = {"partition", "key", "none", NULL};
static const int ordering_values[] = {EG_ORDER_PARTITION, EG_ORDER_KEY, EG_ORDER_NONE};
_Static_assert(sizeof(eg_ordering) == sizeof(int), "ordering is stored as an int");
static const char *const fences[] = {"off", "ladder", "ladder+dlq", NULL};
static const int fence_values[] = {EG_FENCE_OFF, EG_FENCE_LADDER, EG_FENCE_LADDER_DLQ};
_Static_assert(sizeof(eg_fence_mode) == sizeof(int), "fence is stored as an int");
static const char *const http_versions[] = {"1.1", "2", NULL};
static const int http_version_values[] = {11, 2};
static const char *const inbox_formats[] = {"auto",        "spring",         "connect", "streams",
                                            "share-group", "x-dlq-metadata", "errgate", NULL};
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const int log_level_values[] = {EG_DEBUG, EG_INFO, EG_WARN, EG_ERROR};
static const char *const log_formats[] = {"json", "text", NULL};
static const char *const on_stops[] = {"exit", "wait", NULL};
static const int on_stop_values[] = {0, 1};
static const char *const guard_actions[] = {"hold", "stop", NULL};
static const char *const prot_modes[] = {"none", "mask", "encrypt", "pointer", NULL};
static const int prot_mode_values[] = {EG_PROT_NONE, EG_PROT_MASK, EG_PROT_ENCRYPT, EG_PROT_POINTER};
static const char *const prot_unmaskables[] = {"pointer", "encrypt", NULL};
static const int prot_unmaskable_values[] = {EG_PROT_POINTER, EG_PROT_ENCRYPT};
static const int guard_action_values[] = {0, 1};

#define F(field) offsetof(eg_config, field)
#define STR_(x) #x
#define STR(x) STR_(x)
#define K_TABLE(k, fl, h) \
    { .key = k, .type = EG_CK_TABLE, .flags = fl, .off = EG_CK_NOFIELD, .help = h }
#define K_STR(k, fl, d, field, h) \
    { .key = k, .type = EG_CK_STRING, .flags = fl, .def_str = d, .off = F(field), .help = h }
#define K_INT(k, d, lo, hi, field, h) \
    { .key = k, .type = EG_CK_INT, .def = d, .min = lo, .max = hi, .off = F(field), .help = h }
#define K_NUM(k, d, lo, hi, field, h) \
    { .key = k, .type = EG_CK_NUMBER, .def = d, .min = lo, .max = hi, .off = F(field), .help = h }
#define K_BOOL(k, fl, d, field, h) \
    { .key = k, .type = EG_CK_BOOL, .flags = fl, .def = d, .off = F(field), .help = h }
/* a duration key: stored as an int of `u` ms (1 or 1000); `o` its former
 * name, with the unit suffix (DESIGN §5: durations are named without one) */
#define K_DUR(k, o, d, lo, hi, u, field, h)                                                                     \
    {                                                                                                           \
        .key = k, .type = EG_CK_DURATION, .def = d, .min = lo, .max = hi, .off = F(field), .help = h, .old = o, \
        .unit = u                                                                                               \
    }
#define K_ENUM(k, d, ch, vals, field, h) \
    { .key = k, .type = EG_CK_ENUM, .def_str = d, .choices = ch, .values = vals, .off = F(field), .help = h }

const eg_config_key eg_config_keys[] = {
    {.key = "kafka",
     .type = EG_CK_MAP,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "librdkafka properties for the consumer and the lane producer (strings, numbers or booleans); "
             "bootstrap.servers may come from $ERRGATE_BOOTSTRAP"},
    K_STR("group", EG_CK_REQUIRED, NULL, group, "the consumer group"),
    K_TABLE("source", EG_CK_REQUIRED, "what is consumed; with several sources, `sources` instead"),
    {.key = "sources",
     .type = EG_CK_TABLE,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "several sources in one gateway, instead of `source`: a list of tables, each with a name (letters, "
             "digits, - and _, up to 40), the keys of `source`, and any of target, policy, lanes, shadow_policy, "
             "shadow_timeout, shadow_cpu_percent, policy_timeout, policy_memory_mb, on_stop, dlq_guard, metrics, app "
             "(each replacing the top-level one whole); a process per source, one consumer group (see Several "
             "sources)"},
    {.key = "source.topics",
     .type = EG_CK_LIST,
     .flags = EG_CK_REQUIRED | EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "topic names; one starting with ^ is a regular expression (see Source topics)"},
    K_ENUM("source.ordering", EG_DEF_ORDERING, orderings, ordering_values, ordering,
           "what waits behind a failing record (see Ordering)"),
    K_ENUM("source.fence", EG_DEF_FENCE, fences, fence_values, fence,
           "with ordering = \"key\": later records of a key whose record is parked on a rung (ladder) or "
           "also in the DLQ (ladder+dlq) follow it instead of reaching the target (see Fencing)"),
    K_INT("source.fence_max_keys", EG_DEF_FENCE_MAX_KEYS, 1, 10000000, fence_max_keys,
          "fenced keys per source partition; a record that would fence one more is held (fence_cap)"),
    K_INT("source.max_inflight", EG_DEF_MAX_INFLIGHT, 1, 1000000, max_inflight,
          "unfinished records per partition before it is no longer read"),
    K_INT("source.max_inflight_total", EG_DEF_MAX_INFLIGHT_TOTAL, 1, 10000000, max_inflight_total,
          "unfinished records across partitions"),
    {.key = "source.max_tracked",
     .type = EG_CK_INT,
     .def = 0,
     .def_str = STR(EG_DEF_MAX_TRACKED) ", or max_inflight when larger",
     .min = 1,
     .max = 100000000,
     .off = F(max_tracked),
     .help = "offsets tracked per partition, oldest unfinished to newest read (see Offsets tracked)"},
    K_DUR("source.fetch_wakeup", "source.fetch_wakeup_ms", EG_DEF_FETCH_WAKEUP_MS, 0, 1000, 1, fetch_wakeup_ms,
          "while records are taken, wake librdkafka's fetchers this often (0: off; see Configuration, the prefetch)"),
    K_DUR("source.not_before_max", "source.not_before_max_ms", EG_DEF_NOT_BEFORE_MAX_MS, 0, 2000000000, 1,
          not_before_max_ms, "errgate.not-before is honoured at most this long past a rung record's timestamp"),
    K_ENUM("source.inbox", NULL, inbox_formats, NULL, inbox,
           "the source topics are DLQs in this format; each record is a recorded failure the policy triages, "
           "no target is called (see Inbox mode)"),
    K_STR("source.schema", 0, NULL, source_schema,
          "the schema of the source records, errgate.schema on lane records (a Confluent wire-format payload's "
          "schema id goes in errgate.schema-id whatever this says)"),
    {.key = "source.replay_allow",
     .type = EG_CK_LIST,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "where a replay may write (inbox mode's replay, errgate replay -c): topic names in which * "
             "matches any run, or ^regular expressions; absent: in inbox mode the topics the sources are DLQs "
             "of by name (payments for payments-dlt, .DLT, .dlq, ...), else the sources; internal topics are "
             "refused whatever it says (see Where a replay may go)"},
    K_TABLE("target", 0, "where records go: exactly one of target.http and target.lua; required unless source.inbox"),
    K_TABLE("target.http", 0, "an HTTP endpoint (see Targets)"),
    K_STR("target.http.url", EG_CK_REQUIRED, NULL, http_url, "an http:// or https:// URL"),
    K_DUR("target.http.timeout", "target.http.timeout_ms", EG_DEF_HTTP_TIMEOUT_MS, 1, 3600000, 1, http_timeout_ms,
          "of one request"),
    K_INT("target.http.concurrency", EG_DEF_HTTP_CONCURRENCY, 1, 4096, http_concurrency, "requests in flight"),
    K_INT("target.http.max_response_bytes", EG_DEF_HTTP_MAX_RESPONSE_BYTES, 0, 1 << 30, http_max_response_bytes,
          "body bytes read per response; beyond, discarded"),
    K_ENUM("target.http.version", EG_DEF_HTTP_VERSION, http_versions, http_version_values, http_version,
           "2: HTTP/2 where TLS offers it"),
    K_TABLE("target.http.tls", 0, "TLS settings, for an https:// URL only"),
    K_STR("target.http.tls.ca_file", EG_CK_FILE, NULL, http_ca_file, "CA certificates; absent: the system's"),
    K_STR("target.http.tls.cert_file", EG_CK_FILE, NULL, http_cert_file, "client certificate"),
    K_STR("target.http.tls.key_file", EG_CK_FILE, NULL, http_key_file, "client key (needs cert_file)"),
    K_BOOL("target.http.tls.verify", 0, 1, http_verify, "false: certificates are not checked (warned at start)"),
    K_STR("target.http.tls.server_name", 0, NULL, http_server_name,
          "the DNS name verified and sent as SNI; absent: the URL's host"),
    {.key = "target.http.headers",
     .type = EG_CK_MAP,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "static request headers: name = \"value\" or name = { file = \"path\" }"},
    {.key = "target.http.headers.*.file",
     .type = EG_CK_STRING,
     .flags = EG_CK_REQUIRED | EG_CK_FILE | EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "a file whose content (trailing white space trimmed) is the value, read at start and on every reload"},
    K_STR("target.lua", EG_CK_FILE | EG_CK_CUSTOM, NULL, lua_target, "a Lua handler file (see Targets)"),
    K_TABLE("target.breaker", 0, "a circuit breaker; absent: none (see Circuit breaker)"),
    K_BOOL("target.breaker.enabled", EG_CK_CUSTOM, 1, breaker_enabled, "false: the breaker is off"),
    K_INT("target.breaker.window", EG_DEF_BREAKER_WINDOW, 1, 100000, breaker_window,
          "target outcomes in the sliding window"),
    K_INT("target.breaker.min_calls", EG_DEF_BREAKER_MIN_CALLS, 1, 100000, breaker_min_calls,
          "outcomes in the window before it may open; at most window"),
    K_NUM("target.breaker.failure_ratio", EG_DEF_BREAKER_FAILURE_RATIO, 0.01, 1, breaker_failure_ratio,
          "failure ratio that opens it"),
    K_DUR("target.breaker.open", "target.breaker.open_ms", EG_DEF_BREAKER_OPEN_MS, 1, 3600000, 1, breaker_open_ms,
          "how long it stays open before probes go"),
    K_INT("target.breaker.half_open_probes", EG_DEF_BREAKER_PROBES, 1, 1000, breaker_probes,
          "concurrent requests while half-open"),
    K_TABLE("target.retry_budget", 0, "a budget for in-place retries; absent: not budgeted (see Retry budget)"),
    K_BOOL("target.retry_budget.enabled", EG_CK_CUSTOM, 1, budget_enabled, "false: the budget is off"),
    K_NUM("target.retry_budget.percent", EG_DEF_BUDGET_PERCENT, 0, 100, budget_percent,
          "retries allowed, in percent of the requests"),
    K_INT("target.retry_budget.min", EG_DEF_BUDGET_MIN, 0, 1000000, budget_min, "retries always allowed"),
    K_INT("target.retry_budget.per_minute", 0, 0, 100000000, budget_per_minute,
          "retries admitted per minute at most (a bucket of that many, refilled continuously), per key when keyed; "
          "0: no cap"),
    {.key = "target.retry_budget.key",
     .type = EG_CK_TABLE,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "budgets by key: { header = \"NAME\" } gives each value of that header a budget of its own; "
             "absent: one budget for the target (see Retry budget)"},
    K_STR("target.retry_budget.key.header", EG_CK_REQUIRED | EG_CK_CUSTOM, NULL, budget_key_header,
          "the record header whose value is the key; records without it share the key \"*\""),
    K_INT("target.retry_budget.max_keys", EG_DEF_BUDGET_MAX_KEYS, 1, 1000000, budget_max_keys,
          "keys tracked at most; past it a new key replaces the least recently used idle one, or shares \"*\""),
    K_TABLE("target.rate", 0, "a rate limit towards the target (token bucket); absent: none (see Rate limit)"),
    {.key = "target.rate.per_second",
     .type = EG_CK_NUMBER,
     .flags = EG_CK_REQUIRED,
     .def_str = "none: required",
     .min = 0.001,
     .max = 1000000,
     .off = F(rate_per_second),
     .help = "attempts sent per second at most, in the long run (in-place retries and rung records too)"},
    {.key = "target.rate.burst",
     .type = EG_CK_NUMBER,
     .def_str = "per_second, at least 1",
     .min = 1,
     .max = 1000000,
     .off = F(rate_burst),
     .help = "attempts that may go at once after a quiet spell (the bucket's size)"},
    {.key = "target.adaptive",
     .type = EG_CK_TABLE,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "true or a table: an adaptive concurrency limit (AIMD) below the target's own; absent: none "
             "(see Rate limit)"},
    K_INT("target.adaptive.min", EG_DEF_ADAPTIVE_MIN, 1, 4096, adaptive_min, "the limit's floor, and where it starts"),
    {.key = "target.adaptive.max",
     .type = EG_CK_INT,
     .def_str = "target.http.concurrency",
     .min = 1,
     .max = 4096,
     .off = F(adaptive_max),
     .help = "the limit's ceiling"},
    K_NUM("target.adaptive.tolerance", EG_DEF_ADAPTIVE_TOLERANCE, 1, 100, adaptive_tolerance,
          "a success at most this many times slower than the lowest recent latency may raise the limit"),
    K_STR("policy", EG_CK_REQUIRED | EG_CK_FILE, NULL, policy, "the policy file; reloaded when it changes"),
    K_INT("policy_memory_mb", EG_DEF_POLICY_MEMORY_MB, 4, 4096, policy_memory_mb,
          "memory cap of the policy's Lua state"),
    K_DUR("policy_timeout", "policy_timeout_ms", EG_DEF_POLICY_TIMEOUT_MS, 1, 60000, 1, policy_timeout_ms,
          "wall-clock budget of one policy call"),
    K_STR("shadow_policy", EG_CK_FILE, NULL, shadow_policy,
          "a candidate policy that decides every failure too, never acted on (see Shadow policy)"),
    K_DUR("shadow_timeout", "shadow_timeout_ms", EG_DEF_SHADOW_TIMEOUT_MS, 1, 60000, 1, shadow_timeout_ms,
          "wall-clock budget of one shadow decision"),
    K_INT("shadow_cpu_percent", EG_DEF_SHADOW_CPU_PERCENT, 1, 100, shadow_cpu_percent,
          "the share of the loop's time shadow decisions may take"),
    K_TABLE("lanes", 0, "the topics records are written to"),
    K_STR("lanes.dlq", 0, EG_DEF_LANE_DLQ, lane_dlq, "DLQ topic; {topic} is the source topic"),
    K_STR("lanes.quarantine", 0, EG_DEF_LANE_QUARANTINE, lane_quarantine, "quarantine topic"),
    K_STR("lanes.retry", 0, EG_DEF_LANE_RETRY, lane_retry,
          "rung topics of retry ladders; must contain {rung} (alias {delay})"),
    {.key = "lanes.profiles",
     .type = EG_CK_LIST,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "header profiles written besides errgate's own: spring, connect, streams, x-dlq-metadata "
             "(see Header profiles)"},
    K_BOOL("lanes.dlq_approval", 0, 0, dlq_approval,
           "true: DLQ items start pending-approval (errgate.approval: required); replay waits for dlq approve"),
    K_BOOL("lanes.quarantine_approval", 0, 0, quarantine_approval,
           "true: quarantine items start pending-approval, as lanes.dlq_approval"),
    K_BOOL("lanes.transactional", 0, 0, lanes_transactional,
           "true: each commit writes the lane records of the records it finishes and their source offsets in one "
           "Kafka transaction (see Exactly-once lanes); needs lanes.instance, refuses lanes.spill"),
    K_STR("lanes.instance", 0, NULL, lanes_instance,
          "this instance's name, stable across its restarts and unique in the group: the lane producer's "
          "transactional.id is errgate.GROUP.INSTANCE"),
    K_DUR("lanes.retention", NULL, 0, 0, 315360000, 1000, lane_retention_s,
          "retention (retention.ms) of the DLQ, quarantine and rung topics errgate creates (\"30d\"); 0: the "
          "cluster's default; existing topics keep theirs (see Lanes)"),
    K_DUR("lanes.approval_window", NULL, 0, 0, 315360000, 1000, lane_appr_win_s,
          "how long a dead letter may wait for its approval: lanes.retention must outlast it, and an existing DLQ "
          "or quarantine lane keeping records for less is warned about (lane_retention_short); 0: none"),
    K_DUR("lanes.replay_window", NULL, 0, 0, 315360000, 1000, lane_replay_win_s,
          "how long after its failure a dead letter may still be replayed: as lanes.approval_window"),
    K_TABLE("lanes.protect", 0,
            "what DLQ and quarantine records hold instead of the payload as it came; absent: "
            "the payload (see Payload protection)"),
    K_ENUM("lanes.protect.dlq", "none", prot_modes, prot_mode_values, protect_mode[0],
           "DLQ payloads: none, mask (JSON paths), encrypt (AES-256-GCM) or pointer (no payload)"),
    K_ENUM("lanes.protect.quarantine", "none", prot_modes, prot_mode_values, protect_mode[1],
           "quarantine payloads, as lanes.protect.dlq"),
    {.key = "lanes.protect.paths",
     .type = EG_CK_LIST,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "JSON paths mask replaces (\"$.card.number\", \"$..cvv\", \"$.items[*].pan\"; see Payload protection)"},
    K_STR("lanes.protect.token", 0, "[masked]", protect_token, "what a masked value becomes (a JSON string)"),
    K_BOOL("lanes.protect.hash", 0, 0, protect_hash,
           "true: a masked value becomes hmac:HEX, a keyed hash (needs key_file), so equal values still group"),
    K_STR("lanes.protect.key_file", EG_CK_FILE, NULL, protect_key_file,
          "the protection key or key ring (first key encrypts and hashes, every key decrypts)"),
    K_ENUM("lanes.protect.unmaskable", "pointer", prot_unmaskables, prot_unmaskable_values, protect_unmaskable,
           "a payload mask cannot read as JSON is written as a pointer, or encrypted (needs key_file)"),
    K_TABLE("lanes.spill", 0, "a local journal for lane writes not acknowledged in time; absent: none"),
    K_STR("lanes.spill.dir", EG_CK_REQUIRED | EG_CK_DIR, NULL, spill_dir, "the journal's directory"),
    K_DUR("lanes.spill.after", "lanes.spill.after_ms", EG_DEF_SPILL_AFTER_MS, 1, 3600000, 1, spill_after_ms,
          "a lane write not acknowledged after this long is spilled"),
    K_DUR("commit_interval", "commit_interval_ms", EG_DEF_COMMIT_INTERVAL_MS, 10, 600000, 1, commit_interval_ms,
          "periodic async commit of finished prefixes (one that did not move: again every 10 s)"),
    K_DUR("shutdown_timeout", "shutdown_timeout_ms", EG_DEF_SHUTDOWN_TIMEOUT_MS, 0, 3600000, 1, shutdown_timeout_ms,
          "how long SIGTERM waits for in-flight work"),
    K_ENUM("on_stop", EG_DEF_ON_STOP, on_stops, on_stop_values, on_stop_wait,
           "after a stop decision: exit 3, or wait paused for `errgate ctl resume` (see Stop and wait)"),
    K_TABLE("dlq_guard", 0,
            "the dead-letter flood guard, per source topic; absent: none (see Dead-letter flood guard)"),
    {.key = "dlq_guard.max_per_second",
     .type = EG_CK_NUMBER,
     .flags = EG_CK_REQUIRED,
     .def_str = "none: required", /* no default (checked by load_guard) */
     .min = 0.001,
     .max = 1000000,
     .off = F(guard_max_per_second),
     .help = "dead letters and quarantines per second, averaged over the window, above which it trips"},
    K_DUR("dlq_guard.window", "dlq_guard.window_s", EG_DEF_GUARD_WINDOW_S, 1, 3600, 1000, guard_window_s,
          "the window the rate is taken over"),
    K_ENUM("dlq_guard.action", EG_DEF_GUARD_ACTION, guard_actions, guard_action_values, guard_stop,
           "what a dead letter becomes while it is tripped"),
    K_DUR("dlq_guard.cooldown", "dlq_guard.cooldown_s", EG_DEF_GUARD_COOLDOWN_S, 0, 86400, 1000, guard_cooldown_s,
          "tripped at least this long; it re-arms once the rate is back under"),
    K_TABLE("log", 0, "the log on stderr (see Logs)"),
    K_ENUM("log.level", EG_DEF_LOG_LEVEL, log_levels, log_level_values, log_level,
           "lines below this level are not written"),
    K_ENUM("log.format", EG_DEF_LOG_FORMAT, log_formats, NULL, log_format, "one JSON object or text per line"),
    {.key = "log.decisions",
     .type = EG_CK_TABLE,
     .flags = EG_CK_CUSTOM,
     .off = EG_CK_NOFIELD,
     .help = "decision lines: `\"all\"` writes every one; a table samples them (see Decision-log sampling)"},
    K_INT("log.decisions.per_second", EG_DEF_LOG_DECISIONS_PER_SECOND, 1, 1000000, log_decisions_per_second,
          "decision lines written in full per (topic, class, action) and second; the rest are counted in one "
          "decision_summary line"),
    K_TABLE("admin", 0, "the admin endpoint; absent: no endpoint (see Admin endpoint)"),
    K_STR("admin.listen", 0, EG_DEF_ADMIN_LISTEN, admin_listen,
          "host:port; port 0 picks a free port (logged admin_listening)"),
    K_STR("admin.token_file", EG_CK_FILE, NULL, admin_token_file,
          "bearer token for the mutating endpoints (POST /reload); absent: they are off"),
    K_DUR("admin.ready_lane_failure", "admin.ready_lane_failure_ms", EG_DEF_READY_LANE_FAILURE_MS, 0, 3600000, 1,
          ready_lane_failure_ms, "/readyz turns false past this much lane-write failure"),
    K_INT("admin.max_connections", EG_DEF_ADMIN_MAX_CONNECTIONS, 1, 65536, admin_max_connections,
          "open admin connections; at the cap a new one replaces the oldest idle one"),
    K_DUR("admin.override_max_ttl", "admin.override_max_ttl_ms", EG_DEF_OVERRIDE_MAX_TTL_MS, 1000, 2000000000, 1,
          override_max_ttl_ms, "the longest TTL an operator override may have (see Overrides)"),
    K_STR("admin.audit_topic", 0, EG_DEF_AUDIT_TOPIC, audit_topic,
          "the compacted topic every operator change is written to and every instance reads (see Incident controls)"),
    K_STR("control_key_file", EG_CK_FILE, NULL, control_key_file,
          "the HMAC key every gateway and operator tool of a deployment holds (see Signed control records); absent: "
          "control topics are unauthenticated (one warn line at start)"),
    K_TABLE("app", 0, "the application whose pipeline this gateway serves, named on every lane record"),
    K_STR("app.name", 0, NULL, app_name, "errgate.app on lane records; absent: metrics.pipeline, else the group"),
    K_STR("app.version", 0, NULL, app_version, "errgate.app-version on lane records; absent: not written"),
    K_TABLE("metrics", 0, "what /metrics says about this gateway beyond its counters (see Metrics)"),
    K_STR("metrics.pipeline", 0, NULL, metrics_pipeline,
          "the pipeline (application) this gateway serves, the errgate_pipeline_info label; absent: the group"),
    K_STR("metrics.stage", 0, NULL, metrics_stage,
          "the stage (step) of the pipeline it is, the errgate_pipeline_info label; absent: the target kind"),
    K_NUM("metrics.dead_letter_ratio", EG_DEF_DEAD_LETTER_RATIO, 0, 1, metrics_dead_letter_ratio,
          "dead letters per consumed record above which the shipped ErrgateDeadLetterRatio alert fires "
          "(errgate_dead_letter_ratio_threshold)"),
    K_BOOL("replay_four_eyes", 0, 0, replay_four_eyes,
           "true: `errgate replay -c` never replays an approved item as its approver (as --four-eyes)"),
};
const size_t eg_config_nkeys = sizeof eg_config_keys / sizeof eg_config_keys[0];

/* The leaf name of key k when it is a direct child of the table path tbl
 * ("" for the top level), else NULL. */
static const char *child_leaf(const char *k, const char *tbl) {
    size_t n = strlen(tbl);
    if (n) {
        if (strncmp(k, tbl, n) != 0 || k[n] != '.') return NULL;
        k += n + 1;
    }
    return strchr(k, '.') ? NULL : k;
}

/* The place of a key's value in cfg. */
static void *field(eg_config *cfg, const eg_config_key *e) { return (char *)cfg + e->off; }

/* The index of s among e's choices, or -1. */
static int choice_index(const eg_config_key *e, const char *s) {
    for (int i = 0; e->choices[i]; i++)
        if (strcmp(e->choices[i], s) == 0) return i;
    return -1;
}

static void set_defaults(eg_config *cfg) {
    cfg->admin_fd = -1;
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        if (e->off == EG_CK_NOFIELD || (e->flags & EG_CK_CUSTOM)) continue;
        void *f = field(cfg, e);
        int v = (int)e->def;
        switch (e->type) {
        case EG_CK_INT:
        case EG_CK_DURATION:
        case EG_CK_BOOL: memcpy(f, &v, sizeof v); break;
        case EG_CK_NUMBER: memcpy(f, &e->def, sizeof e->def); break;
        case EG_CK_STRING:
            if (e->def_str) *(char **)f = eg_xstrdup(e->def_str);
            break;
        case EG_CK_ENUM:
            if (e->values) memcpy(f, &e->values[choice_index(e, e->def_str)], sizeof(int));
            else if (e->def_str) *(char **)f = eg_xstrdup(e->def_str);
            break;
        default: break;
        }
    }
}

static const char *const type_names[] = {"table",  "string", "integer", "number",  "boolean",
                                         "string", "list",   "table",   "duration"};
_Static_assert(sizeof type_names / sizeof type_names[0] == EG_CK_DURATION + 1, "a name for every key type");

/* The shortest compound spelling of ms (lua/errgate/duration.lua's
 * format): 0 -> "0ms", 1500 -> "1s500ms", 90000 -> "1m30s". */
static void format_duration(int64_t ms, char *out, size_t cap) {
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t n = 0;
    out[0] = '\0';
    if (ms <= 0) {
        snprintf(out, cap, "0ms");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0] && n < cap; i++)
        if (ms >= units[i].mult) {
            n += (size_t)snprintf(out + n, cap - n, "%lld%s", (long long)(ms / units[i].mult), units[i].unit);
            ms %= units[i].mult;
        }
}

/* Appends s to the buffer b (capacity cap, NUL-terminated) as man(7)
 * text: backslashes escaped. Cut at cap. */
static void man_put(char *b, size_t cap, const char *s) {
    size_t n = strlen(b);
    for (; *s && n + 3 < cap; s++) {
        if (*s == '\\') b[n++] = '\\', b[n++] = 'e';
        else b[n++] = *s;
    }
    b[n] = '\0';
}

/* Appends the man(7) text s to b as it is (capacity cap; cut there). */
static void man_raw(char *b, size_t cap, const char *s) {
    size_t n = strlen(b);
    snprintf(b + n, cap - n, "%s", s);
}

/* Writes text in lines of at most 78 bytes, broken at spaces (a word
 * longer than that stands alone), none starting with '.' or '\'' (which
 * man(7) would read as a request). */
static void man_wrap(FILE *out, const char *text) {
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        size_t len = strlen(p), cut = len;
        if (len > 78) {
            cut = 78;
            while (cut > 0 && p[cut] != ' ') cut--;
            if (cut == 0) cut = strcspn(p, " ");
        }
        if (*p == '.' || *p == '\'') fputs("\\&", out);
        fwrite(p, 1, cut, out);
        fputc('\n', out);
        p += cut;
    }
}

void eg_config_write_man(FILE *out) {
    char b[4096], num[160];
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        b[0] = '\0';
        fputs(".TP\n.B ", out);
        man_put(b, sizeof b, e->key);
        fprintf(out, "%s\n", b);
        b[0] = '\0';
        man_put(b, sizeof b, e->flags & (EG_CK_FILE | EG_CK_DIR) ? "path" : type_names[e->type]);
        if (e->flags & EG_CK_REQUIRED) man_put(b, sizeof b, ", required");
        else if ((e->type == EG_CK_INT || e->type == EG_CK_NUMBER) && e->def_str)
            man_put(b, sizeof b, ", default "), man_put(b, sizeof b, e->def_str);
        else if (e->type == EG_CK_INT || e->type == EG_CK_NUMBER) {
            snprintf(num, sizeof num, ", default %.15g", e->def);
            man_put(b, sizeof b, num);
        } else if (e->type == EG_CK_BOOL) man_put(b, sizeof b, e->def ? ", default true" : ", default false");
        else if (e->def_str) {
            man_raw(b, sizeof b, ", default \\(dq");
            man_put(b, sizeof b, e->def_str);
            man_raw(b, sizeof b, "\\(dq");
        }
        if (e->type == EG_CK_INT || e->type == EG_CK_NUMBER) {
            snprintf(num, sizeof num, ", %.15g to %.15g", e->min, e->max);
            man_put(b, sizeof b, num);
        }
        if (e->type == EG_CK_DURATION) {
            char d[3][32];
            format_duration((int64_t)e->def * e->unit, d[0], sizeof d[0]);
            format_duration((int64_t)e->min * e->unit, d[1], sizeof d[1]);
            format_duration((int64_t)e->max * e->unit, d[2], sizeof d[2]);
            snprintf(num, sizeof num, ", default %s, %s to %s", d[0], d[1], d[2]);
            man_put(b, sizeof b, num);
        }
        for (int k = 0; e->type == EG_CK_ENUM && e->choices[k]; k++) {
            man_raw(b, sizeof b, k ? ", \\(dq" : ", one of \\(dq");
            man_put(b, sizeof b, e->choices[k]);
            man_raw(b, sizeof b, "\\(dq");
        }
        man_put(b, sizeof b, ". ");
        man_put(b, sizeof b, e->help);
        if (e->old) {
            snprintf(num, sizeof num, " (a number: %s; ", e->unit == 1000 ? "seconds" : "milliseconds");
            man_put(b, sizeof b, num);
            man_put(b, sizeof b, "formerly ");
            man_put(b, sizeof b, e->old);
            man_put(b, sizeof b, ", still read this release with a warning)");
        }
        man_wrap(out, b);
    }
}

/* ---- the loader --------------------------------------------------------- */

static int fail(loadctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(loadctx *c, const char *fmt, ...) {
    va_list ap;
    int n = snprintf(c->err, c->errlen, "config %s: ", c->cfg->path ? c->cfg->path : "?");
    if (n < 0 || (size_t)n >= c->errlen) n = 0;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

int eg_http_header_sendable(const char *name) {
    static const char *const reserved[] = {
        "host", "content-length", "content-type", "connection", "transfer-encoding", "expect", "te", "upgrade", NULL};
    if (!*name || strncasecmp(name, "errgate-", 8) == 0) return 0;
    for (const char *const *r = reserved; *r; r++)
        if (strcasecmp(name, *r) == 0) return 0;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p)) return 0;
    return 1;
}

const char *eg_ordering_name(eg_ordering o) {
    return o == EG_ORDER_KEY ? "key" : o == EG_ORDER_NONE ? "none" : "partition";
}

/* Refuses any key of the table at the stack top that is not a child of the
 * table path `tbl` in eg_config_keys. `where` names the table in messages
 * ("" for the top level; it differs from tbl under "*"). */
static int only_keys(loadctx *c, const char *tbl, const char *where) {
    lua_State *L = c->L;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            return fail(c, "%s: keys must be strings", *where ? where : "top level");
        }
        const char *k = lua_tostring(L, -1);
        int found = 0;
        for (size_t i = 0; i < eg_config_nkeys && !found; i++) {
            const char *leaf = child_leaf(eg_config_keys[i].key, tbl);
            const char *old = eg_config_keys[i].old ? child_leaf(eg_config_keys[i].old, tbl) : NULL;
            found = (leaf && strcmp(leaf, k) == 0) || (old && strcmp(old, k) == 0);
        }
        if (!found) {
            int r = fail(c, "unknown key '%s%s%s'", where, *where ? "." : "", k);
            lua_pop(L, 1);
            return r;
        }
    }
    return 0;
}

/* Pushes t[key] of the table t at the stack top, read raw: a metamethod
 * of the file's tables never runs outside the protected call that ran the
 * file (it could raise or loop where nothing catches it). */
static void rawfield(lua_State *L, const char *key) {
    lua_pushstring(L, key);
    lua_rawget(L, -2);
}

/* Field readers: each reads t[key] of the table at the stack top. `name` is
 * the dotted key for messages. A missing optional field keeps the default. */
static int get_string(loadctx *c, const char *key, const char *name, int required, char **out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TNIL) {
        lua_pop(c->L, 1);
        return required ? fail(c, "missing required key '%s'", name) : 0;
    }
    if (t != LUA_TSTRING) {
        int r = fail(c, "%s: expected a string, got %s", name, lua_typename(c->L, t));
        lua_pop(c->L, 1);
        return r;
    }
    size_t len;
    const char *s = lua_tolstring(c->L, -1, &len);
    if (strlen(s) != len) { /* C would read it cut at the NUL: another value than the file's */
        lua_pop(c->L, 1);
        return fail(c, "%s: contains a NUL byte", name);
    }
    free(*out);
    *out = eg_xstrdup(s);
    lua_pop(c->L, 1);
    return 0;
}

static int get_int(loadctx *c, const char *key, const char *name, int min, int max, int *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TNIL) {
        lua_pop(c->L, 1);
        return 0;
    }
    lua_Number v = lua_tonumber(c->L, -1);
    lua_pop(c->L, 1);
    /* floor, not a cast: 1e300 or inf in a long long is undefined */
    if (t != LUA_TNUMBER || v != floor(v)) return fail(c, "%s: expected an integer", name);
    if (v < min || v > max) return fail(c, "%s: %g is out of range [%d, %d]", name, v, min, max);
    *out = (int)v;
    return 0;
}

static int get_number(loadctx *c, const char *key, const char *name, double min, double max, double *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    lua_Number v = lua_tonumber(c->L, -1);
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    if (t != LUA_TNUMBER) return fail(c, "%s: expected a number", name);
    if (!(v >= min && v <= max)) return fail(c, "%s: %g is out of range [%g, %g]", name, v, min, max);
    *out = v;
    return 0;
}

static int get_bool(loadctx *c, const char *key, const char *name, int *out) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    int v = lua_toboolean(c->L, -1);
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    if (t != LUA_TBOOLEAN) return fail(c, "%s: expected true or false", name);
    *out = v;
    return 0;
}

/* Pushes t[key] if it is a table (returns 1), leaves nothing and returns 0
 * if nil, fails on another type (returns -1). */
static int push_table(loadctx *c, const char *key, const char *name) {
    rawfield(c->L, key);
    int t = lua_type(c->L, -1);
    if (t == LUA_TTABLE) return 1;
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    return fail(c, "%s: expected a table, got %s", name, lua_typename(c->L, t));
}

/* Longest source regex, and largest {n,m} count, accepted (a topic name is
 * at most 249 characters; a pattern over many of them is far longer than
 * any real one). */
#define REGEX_MAX_LEN 1024
#define REGEX_MAX_COUNT 255
#define REGEX_MAX_EXPANSION 1000 /* product of all {n,m} counts: nested ones multiply */

/* 1 (with why) when compiling regex t could cost time or memory out of all
 * proportion: glibc's regcomp copies a repeated subexpression once per
 * repetition, so stacked quantifiers ("a+++++", "a*{9}") grow exponentially
 * and nested {n,m} counts multiply ("(x{200}){200}" took minutes), so their
 * product is bounded, not only each count; POSIX leaves stacked quantifiers
 * undefined anyway. Bracket expressions and escaped characters are skipped. */
static int regex_too_costly(const char *t, char *why, size_t whylen) {
    size_t n = strlen(t);
    if (n > REGEX_MAX_LEN) {
        snprintf(why, whylen, "longer than %d characters", REGEX_MAX_LEN);
        return 1;
    }
    int prev_quant = 0;          /* the previous token was a quantifier */
    unsigned long expansion = 1; /* product of the {n,m} upper counts so far */
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (ch == '\\') { /* an escaped character is a literal */
            i++;
            prev_quant = 0;
        } else if (ch == '[') { /* a bracket expression: skip to its end */
            i++;
            if (i < n && t[i] == '^') i++;
            if (i < n && t[i] == ']') i++;
            while (i < n && t[i] != ']') i++;
            prev_quant = 0;
        } else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
            if (prev_quant) {
                snprintf(why, whylen, "stacked repetition operators at offset %zu", i);
                return 1;
            }
            if (ch == '{') {
                char *end;
                unsigned long lo = strtoul(t + i + 1, &end, 10), hi = lo;
                if (*end == ',') hi = isdigit((unsigned char)end[1]) ? strtoul(end + 1, &end, 10) : lo;
                if (lo > REGEX_MAX_COUNT || hi > REGEX_MAX_COUNT) {
                    snprintf(why, whylen, "a repetition count over %d at offset %zu", REGEX_MAX_COUNT, i);
                    return 1;
                }
                expansion *= hi > lo ? (hi ? hi : 1) : (lo ? lo : 1);
                if (expansion > REGEX_MAX_EXPANSION) {
                    snprintf(why, whylen, "repetition counts multiplying to over %d at offset %zu", REGEX_MAX_EXPANSION,
                             i);
                    return 1;
                }
                while (i < n && t[i] != '}') i++;
            }
            prev_quant = 1;
        } else {
            prev_quant = 0;
        }
    }
    return 0;
}
/* Resolves a path relative to the config directory, replacing *p with the
 * resolved path; with `file`, checks it is a readable file. */
static int resolve_path(loadctx *c, const char *name, char **p, int file) {
    if ((*p)[0] != '/') {
        size_t n = strlen(c->dir) + strlen(*p) + 2;
        char *abs = eg_xmalloc(n);
        snprintf(abs, n, "%s/%s", c->dir, *p);
        free(*p);
        *p = abs;
    }
    if (file && access(*p, R_OK) != 0) return fail(c, "%s: cannot read file '%s'", name, *p);
    return 0;
}

static int resolve_file(loadctx *c, const char *name, char **p) { return resolve_path(c, name, p, 1); }

/* Reads a DURATION key e under its name `key` or its former name `oldkey`
 * (both set: refused; the former: a deprecation warning saying what to
 * write): a unit string, or a number of e->unit ms, within e's bounds (in
 * e->unit ms; a string must come to a whole number of them). */
static int get_duration(loadctx *c, const eg_config_key *e, const char *key, const char *oldkey, const char *name,
                        const char *where) {
    lua_State *L = c->L;
    char oldname[160];
    snprintf(oldname, sizeof oldname, "%s%s%s", where, *where ? "." : "", oldkey ? oldkey : "");
    rawfield(L, key);
    int t = lua_type(L, -1);
    if (oldkey) {
        lua_pushstring(L, oldkey); /* the table is under the value read above */
        lua_rawget(L, -3);
        int to = lua_type(L, -1);
        if (to != LUA_TNIL && t != LUA_TNIL) {
            lua_pop(L, 2);
            return fail(c, "%s and %s are the same setting: keep %s", name, oldname, name);
        }
        if (to != LUA_TNIL) {
            lua_remove(L, -2);
            t = to;
            char v[64] = "";
            double num = to == LUA_TNUMBER ? lua_tonumber(L, -1) * e->unit : 0;
            if (to == LUA_TNUMBER && num >= 0 && num < 1e15) { /* a hint only: the value is checked below */
                char d[32];
                format_duration((int64_t)num, d, sizeof d);
                snprintf(v, sizeof v, "\"%s\"", d);
            } else snprintf(v, sizeof v, "\"...\"");
            eg_log_msg(EG_WARN, "config_deprecated", "config %s: %s is deprecated: write %s = %s",
                       c->cfg->path ? c->cfg->path : "?", oldname, name, v);
        } else {
            lua_pop(L, 1);
        }
    }
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    const char *unit = e->unit == 1000 ? "seconds" : "milliseconds";
    double v;
    if (t == LUA_TNUMBER) {
        v = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (v != floor(v)) return fail(c, "%s: expected a whole number of %s or a duration such as \"5s\"", name, unit);
    } else if (t == LUA_TSTRING) {
        size_t len;
        const char *str = lua_tolstring(L, -1, &len);
        int64_t ms;
        const char *why = "";
        int bad = strlen(str) != len || eg_parse_duration_text(str, &ms, &why) != 0;
        char shown[80];
        eg_strlcpy(shown, str, sizeof shown);
        lua_pop(L, 1);
        if (bad) return fail(c, "%s: invalid duration \"%s\": %s", name, shown, *why ? why : "contains a NUL byte");
        if (ms % e->unit) return fail(c, "%s: \"%s\" is not a whole number of %s", name, shown, unit);
        v = (double)(ms / e->unit);
    } else {
        int r =
            fail(c, "%s: expected a duration such as \"5s\" or a number of %s, got %s", name, unit, lua_typename(L, t));
        lua_pop(L, 1);
        return r;
    }
    if (v < e->min || v > e->max) {
        char lo[32], hi[32];
        format_duration((int64_t)e->min * e->unit, lo, sizeof lo);
        format_duration((int64_t)e->max * e->unit, hi, sizeof hi);
        return fail(c, "%s: out of range [%s, %s]", name, lo, hi);
    }
    int iv = (int)v;
    memcpy(field(c->cfg, e), &iv, sizeof iv);
    return 0;
}

/* Reads an ENUM key: a string among e's choices, stored as its value (or
 * as the string) in the field. */
static int get_enum(loadctx *c, const eg_config_key *e, const char *key, const char *name) {
    char *v = NULL;
    if (get_string(c, key, name, 0, &v) < 0) return -1;
    if (!v) return 0;
    int i = choice_index(e, v);
    if (i < 0) {
        char want[128] = "";
        size_t n = 0;
        for (int k = 0; e->choices[k] && n < sizeof want; k++)
            n += (size_t)snprintf(want + n, sizeof want - n, "%s\"%s\"",
                                  k == 0              ? ""
                                  : e->choices[k + 1] ? ", "
                                                      : " or ",
                                  e->choices[k]);
        fail(c, "%s: expected %s, got \"%s\"", name, want, v);
        free(v);
        return -1;
    }
    void *f = field(c->cfg, e);
    if (e->values) {
        memcpy(f, &e->values[i], sizeof(int));
        free(v);
    } else {
        free(*(char **)f);
        *(char **)f = v;
    }
    return 0;
}

/* Reads the keys of eg_config_keys that are children of the table path
 * `tbl` (not the custom ones) from the table at the stack top into their
 * fields, in the table's order. `where` names the table in messages. */
static int load_fields(loadctx *c, const char *tbl, const char *where) {
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        const char *leaf = child_leaf(e->key, tbl);
        if (!leaf || e->off == EG_CK_NOFIELD || (e->flags & EG_CK_CUSTOM)) continue;
        char name[128];
        snprintf(name, sizeof name, "%s%s%s", where, *where ? "." : "", leaf);
        void *f = field(c->cfg, e);
        int r = 0;
        switch (e->type) {
        case EG_CK_STRING: r = get_string(c, leaf, name, e->flags & EG_CK_REQUIRED, (char **)f); break;
        case EG_CK_INT: r = get_int(c, leaf, name, (int)e->min, (int)e->max, (int *)f); break;
        case EG_CK_NUMBER: r = get_number(c, leaf, name, e->min, e->max, (double *)f); break;
        case EG_CK_BOOL: r = get_bool(c, leaf, name, (int *)f); break;
        case EG_CK_ENUM: r = get_enum(c, e, leaf, name); break;
        case EG_CK_DURATION: r = get_duration(c, e, leaf, e->old ? child_leaf(e->old, tbl) : NULL, name, where); break;
        default: break;
        }
        if (r < 0) return -1;
    }
    return 0;
}

/* Resolves the set path keys (EG_CK_FILE, EG_CK_DIR) that are children of
 * `tbl` against the config's directory; a file must be readable. */
static int resolve_fields(loadctx *c, const char *tbl) {
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const eg_config_key *e = &eg_config_keys[i];
        if (!child_leaf(e->key, tbl) || !(e->flags & (EG_CK_FILE | EG_CK_DIR)) || (e->flags & EG_CK_CUSTOM)) continue;
        char **p = field(c->cfg, e);
        if (*p && resolve_path(c, e->key, p, (e->flags & EG_CK_FILE) != 0) < 0) return -1;
    }
    return 0;
}

const char *eg_kafka_prop_forbidden(const char *key) {
    static const char *const props[][2] = {
        {"plugin.library.paths", "loads shared libraries into the process"},
        {"ssl.engine.location", "loads an OpenSSL engine (a shared library) into the process"},
        {"ssl.providers", "loads OpenSSL providers (shared libraries) into the process"},
        {"sasl.kerberos.kinit.cmd", "is a shell command librdkafka runs (its default runs kinit with the keytab)"},
    };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (strcasecmp(key, props[i][0]) == 0) return props[i][1];
    return NULL;
}

static int load_kafka(loadctx *c) {
    lua_State *L = c->L;
    int r = push_table(c, "kafka", "kafka");
    if (r <= 0) return r;
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        n++;
        lua_pop(L, 1);
    }
    c->cfg->kafka = eg_xcalloc((size_t)n, sizeof(eg_kv));
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 3);
            return fail(c, "kafka: property names must be strings");
        }
        const char *k = lua_tostring(L, -2);
        char val[64];
        const char *v = NULL;
        size_t vlen;
        switch (lua_type(L, -1)) {
        case LUA_TSTRING:
            v = lua_tolstring(L, -1, &vlen);
            if (strlen(v) != vlen || strlen(k) != lua_objlen(L, -2)) {
                int rr = fail(c, "kafka.%s: contains a NUL byte", k);
                lua_pop(L, 3);
                return rr;
            }
            break;
        case LUA_TBOOLEAN: v = lua_toboolean(L, -1) ? "true" : "false"; break;
        case LUA_TNUMBER:
            snprintf(val, sizeof val, "%.17g", lua_tonumber(L, -1));
            v = val;
            break;
        default: {
            int rr = fail(c, "kafka.%s: expected a string, number or boolean", k);
            lua_pop(L, 3);
            return rr;
        }
        }
        if (strcmp(k, "partition.assignment.strategy") == 0 && strstr(v, "cooperative")) {
            /* incremental assignment is not implemented: the rebalance
             * callback assigns and revokes whole sets (eager protocol) */
            int rr = fail(c,
                          "kafka.partition.assignment.strategy: \"%s\" is a cooperative (incremental) "
                          "strategy, which errgate does not support; use an eager one: range or roundrobin",
                          v);
            lua_pop(L, 3);
            return rr;
        }
        const char *why = eg_kafka_prop_forbidden(k);
        if (why) {
            int rr = fail(c, "kafka.%s: refused: it %s, and a config may not load or run code", k, why);
            lua_pop(L, 3);
            return rr;
        }
        if (strcmp(k, "enable.auto.commit") == 0 || strcmp(k, "enable.auto.offset.store") == 0 ||
            strcmp(k, "group.id") == 0) {
            int rr = fail(c,
                          "kafka.%s: set by errgate itself (offsets are committed only after a "
                          "durable outcome; the group comes from 'group')",
                          k);
            lua_pop(L, 3);
            return rr;
        }
        eg_kv *kv = &c->cfg->kafka[c->cfg->nkafka++];
        kv->key = eg_xstrdup(k);
        kv->val = eg_xstrdup(v);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

/* source.replay_allow = { "payments", "billing-*", "^team-a\\..*" }
 * (replay_dest.h), read from the source table at the stack top. */
static int load_replay_allow(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    rawfield(L, "replay_allow");
    if (lua_isnil(L, -1)) return lua_pop(L, 1), 0;
    if (lua_type(L, -1) != LUA_TTABLE)
        return lua_pop(L, 1), fail(c, "source.replay_allow: expected a list of topic patterns");
    int n = (int)lua_objlen(L, -1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) < 1 || lua_tonumber(L, -1) > n)
            return lua_pop(L, 2), fail(c, "source.replay_allow: expected a list of topic patterns");
    }
    cfg->replay_allow_set = 1;
    cfg->replay_allow = eg_xcalloc((size_t)n + 1, sizeof *cfg->replay_allow);
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        size_t len = 0;
        const char *p = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        char why[96];
        if (!p || strlen(p) != len || !eg_topic_pattern_ok(p) ||
            (eg_topic_is_regex(p) && regex_too_costly(p, why, sizeof why))) {
            fail(c,
                 "source.replay_allow[%d]: expected a topic name (with * for any run of characters) or a "
                 "^regular expression",
                 i);
            return lua_pop(L, 2), -1;
        }
        cfg->replay_allow[cfg->nreplay_allow++] = eg_xstrdup(p);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

static int load_source(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    int r = push_table(c, "source", "source");
    if (r < 0) return r;
    if (r == 0) return fail(c, "missing required key 'source'");
    if (only_keys(c, "source", "source") < 0) return -1;
    rawfield(L, "topics");
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 2);
        return fail(c, "source.topics: expected a list of topic names");
    }
    int n = (int)lua_objlen(L, -1);
    if (n == 0) {
        lua_pop(L, 2);
        return fail(c, "source.topics: at least one topic is required");
    }
    cfg->topics = eg_xcalloc((size_t)n, sizeof(char *));
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TSTRING || lua_objlen(L, -1) == 0) {
            lua_pop(L, 3);
            return fail(c, "source.topics[%d]: expected a topic name", i);
        }
        size_t tlen;
        const char *t = lua_tolstring(L, -1, &tlen);
        if (strlen(t) != tlen) {
            lua_pop(L, 3);
            return fail(c, "source.topics[%d]: contains a NUL byte", i);
        }
        regex_t re;
        if (eg_topic_is_regex(t)) {
            char why[96];
            if (regex_too_costly(t, why, sizeof why)) {
                fail(c, "source.topics[%d]: \"%.200s\" is refused: %s", i, t, why);
                lua_pop(L, 3);
                return -1;
            }
            if (regcomp(&re, t, REG_EXTENDED | REG_NOSUB) != 0) {
                fail(c, "source.topics[%d]: \"%s\" is not a valid regular expression", i, t);
                lua_pop(L, 3);
                return -1;
            }
            regfree(&re);
        }
        cfg->topics[cfg->ntopics++] = eg_xstrdup(t);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (load_replay_allow(c) < 0 || load_fields(c, "source", "source") < 0) return lua_pop(L, 1), -1;
    lua_pop(L, 1);
    if (cfg->max_tracked == 0) /* not set: the default, or the in-flight cap when that is larger */
        cfg->max_tracked = cfg->max_inflight > EG_DEF_MAX_TRACKED ? cfg->max_inflight : EG_DEF_MAX_TRACKED;
    if (cfg->max_tracked < cfg->max_inflight)
        return fail(c, "source.max_tracked: %d is below source.max_inflight (%d)", cfg->max_tracked, cfg->max_inflight);
    if (cfg->fence != EG_FENCE_OFF && cfg->ordering != EG_ORDER_KEY)
        return fail(c, "source.fence: \"%s\" needs source.ordering = \"key\" (it is \"%s\")", fences[cfg->fence],
                    eg_ordering_name(cfg->ordering));
    return 0;
}

/* target.breaker: its presence turns the circuit breaker on. */
static int load_breaker(loadctx *c) {
    eg_config *cfg = c->cfg;
    int r = push_table(c, "breaker", "target.breaker");
    if (r <= 0) return r;
    cfg->breaker_enabled = 1;
    if (only_keys(c, "target.breaker", "target.breaker") < 0 ||
        get_bool(c, "enabled", "target.breaker.enabled", &cfg->breaker_enabled) < 0 ||
        load_fields(c, "target.breaker", "target.breaker") < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (cfg->breaker_min_calls > cfg->breaker_window)
        return fail(c, "target.breaker.min_calls: %d is larger than the window (%d)", cfg->breaker_min_calls,
                    cfg->breaker_window);
    return 0;
}

static int load_budget_key(loadctx *c);

/* target.retry_budget: its presence turns the retry budget on. */
static int load_budget(loadctx *c) {
    eg_config *cfg = c->cfg;
    int r = push_table(c, "retry_budget", "target.retry_budget");
    if (r <= 0) return r;
    cfg->budget_enabled = 1;
    if (only_keys(c, "target.retry_budget", "target.retry_budget") < 0 ||
        get_bool(c, "enabled", "target.retry_budget.enabled", &cfg->budget_enabled) < 0 ||
        load_fields(c, "target.retry_budget", "target.retry_budget") < 0 || load_budget_key(c) < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    return 0;
}

/* target.retry_budget.key = { header = "NAME" }: budgets by a header's
 * value. Any other source is refused by name. */
static int load_budget_key(loadctx *c) {
    lua_State *L = c->L;
    rawfield(L, "key");
    int t = lua_type(L, -1);
    if (t == LUA_TNIL) return lua_pop(L, 1), 0;
    if (t != LUA_TTABLE)
        return lua_pop(L, 1), fail(c,
                                   "target.retry_budget.key: expected a table such as { header = \"tenant\" }, "
                                   "got %s",
                                   lua_typename(L, t));
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
        if (strcmp(k, "header") != 0) {
            int r = fail(c,
                         "target.retry_budget.key: unknown key source '%s'; the one source is a header: "
                         "key = { header = \"NAME\" }",
                         k);
            return lua_pop(L, 3), r;
        }
    }
    if (get_string(c, "header", "target.retry_budget.key.header", 1, &c->cfg->budget_key_header) < 0)
        return lua_pop(L, 1), -1;
    lua_pop(L, 1);
    const char *h = c->cfg->budget_key_header;
    int okh = *h != '\0' && strlen(h) <= 255;
    for (const char *p = h; okh && *p; p++) okh = *p > 0x20 && *p < 0x7f;
    if (!okh)
        return fail(c, "target.retry_budget.key.header: expected a header name (1 to 255 printable characters, "
                       "no blanks)");
    return 0;
}

/* target.rate = { per_second, burst }: a token bucket towards the target.
 * A rate that sends nothing and a bucket that holds no request are refused
 * with what they would mean. */
static int load_rate(loadctx *c) {
    eg_config *cfg = c->cfg;
    lua_State *L = c->L;
    int r = push_table(c, "rate", "target.rate");
    if (r <= 0) return r;
    cfg->rate_enabled = 1;
    if (only_keys(c, "target.rate", "target.rate") < 0) return lua_pop(L, 1), -1;
    rawfield(L, "per_second");
    if (lua_isnil(L, -1)) return lua_pop(L, 2), fail(c, "missing required key 'target.rate.per_second'");
    if (lua_type(L, -1) == LUA_TNUMBER && !(lua_tonumber(L, -1) > 0)) {
        double v = lua_tonumber(L, -1);
        return lua_pop(L, 2), fail(c,
                                   "target.rate.per_second: %g is out of range [0.001, 1e+06]: a rate of 0 or "
                                   "less would send nothing (remove target.rate for no limit)",
                                   v);
    }
    lua_pop(L, 1);
    rawfield(L, "burst");
    if (lua_type(L, -1) == LUA_TNUMBER && !(lua_tonumber(L, -1) >= 1)) {
        double v = lua_tonumber(L, -1);
        return lua_pop(L, 2), fail(c,
                                   "target.rate.burst: %g is out of range [1, 1e+06]: a bucket smaller than one "
                                   "request never lets one through",
                                   v);
    }
    lua_pop(L, 1);
    cfg->rate_burst = 0;
    if (load_fields(c, "target.rate", "target.rate") < 0) return lua_pop(L, 1), -1;
    lua_pop(L, 1);
    if (cfg->rate_burst == 0) cfg->rate_burst = cfg->rate_per_second > 1 ? cfg->rate_per_second : 1;
    return 0;
}

/* target.adaptive = true | { min, max, tolerance }: an AIMD concurrency
 * limit (adaptive.h). max defaults to the HTTP target's concurrency (the
 * Lua target has none: 4096). */
static int load_adaptive(loadctx *c) {
    eg_config *cfg = c->cfg;
    lua_State *L = c->L;
    rawfield(L, "adaptive");
    int t = lua_type(L, -1);
    lua_pop(L, 1);
    cfg->adaptive_max = 0;
    if (t == LUA_TBOOLEAN) {
        rawfield(L, "adaptive");
        cfg->adaptive_enabled = lua_toboolean(L, -1);
        lua_pop(L, 1);
    } else {
        int r = push_table(c, "adaptive", "target.adaptive (true or a table)");
        if (r <= 0) return r;
        cfg->adaptive_enabled = 1;
        if (only_keys(c, "target.adaptive", "target.adaptive") < 0 ||
            load_fields(c, "target.adaptive", "target.adaptive") < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
    }
    if (!cfg->adaptive_max) cfg->adaptive_max = cfg->target_kind == EG_TARGET_HTTP ? cfg->http_concurrency : 4096;
    if (cfg->adaptive_enabled && cfg->adaptive_min > cfg->adaptive_max)
        return fail(c,
                    "target.adaptive.min: %d is above the limit's ceiling %d (target.adaptive.max, or the "
                    "target's concurrency)",
                    cfg->adaptive_min, cfg->adaptive_max);
    return 0;
}

/* target.http.tls = { ca_file, cert_file, key_file, verify, server_name } */
static int load_http_tls(loadctx *c) {
    eg_config *cfg = c->cfg;
    int r = push_table(c, "tls", "target.http.tls");
    if (r <= 0) return r;
    if (only_keys(c, "target.http.tls", "target.http.tls") < 0 ||
        load_fields(c, "target.http.tls", "target.http.tls") < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (strncmp(cfg->http_url, "https://", 8) != 0)
        return fail(c, "target.http.tls: only for an https:// URL, got \"%s\"", cfg->http_url);
    if (cfg->http_key_file && !cfg->http_cert_file)
        return fail(c, "target.http.tls.key_file: needs target.http.tls.cert_file");
    if (resolve_fields(c, "target.http.tls") < 0) return -1;
    const char *sn = cfg->http_server_name;
    if (sn) {
        int okname = *sn != '\0' && strlen(sn) <= 253;
        for (const char *p = sn; okname && *p; p++)
            okname = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                     *p == '.';
        if (!okname) return fail(c, "target.http.tls.server_name: expected a DNS name, got \"%s\"", sn);
    }
    return 0;
}

/* target.http.headers = { ["Name"] = "value" | { file = "path" } }. A value
 * never appears in a message (it may be a secret). */
static int load_http_headers(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    int r = push_table(c, "headers", "target.http.headers");
    if (r <= 0) return r;
    size_t n = 1;
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) n++;
    cfg->http_headers = eg_xcalloc(n, sizeof(eg_http_header));
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) return lua_pop(L, 3), fail(c, "target.http.headers: names must be strings");
        const char *name = lua_tostring(L, -2);
        if (!eg_http_header_sendable(name))
            return lua_pop(L, 3), fail(c,
                                       "target.http.headers: \"%s\" is not a header name errgate can send "
                                       "(an HTTP token; not Errgate-*, Host, Content-*, Connection, "
                                       "Transfer-Encoding, Expect, TE, Upgrade)",
                                       name);
        for (int i = 0; i < cfg->nhttp_headers; i++)
            if (strcasecmp(cfg->http_headers[i].name, name) == 0)
                return lua_pop(L, 3), fail(c, "target.http.headers: \"%s\" is given twice", name);
        eg_http_header *h = &cfg->http_headers[cfg->nhttp_headers++];
        h->name = eg_xstrdup(name);
        if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char *v = lua_tolstring(L, -1, &len);
            int okv = len > 0;
            for (size_t i = 0; okv && i < len; i++) okv = (v[i] >= 0x20 && v[i] < 0x7f) || v[i] == '\t';
            if (!okv)
                return lua_pop(L, 3), fail(c,
                                           "target.http.headers.%s: the value must be non-empty printable "
                                           "text on one line",
                                           name);
            h->value = eg_xstrdup(v);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            char where[300];
            snprintf(where, sizeof where, "target.http.headers.%s", name);
            if (only_keys(c, "target.http.headers.*", where) < 0) return lua_pop(L, 3), -1;
            snprintf(where, sizeof where, "target.http.headers.%s.file", name);
            if (get_string(c, "file", where, 1, &h->file) < 0 || resolve_file(c, where, &h->file) < 0)
                return lua_pop(L, 3), -1;
        } else {
            return lua_pop(L, 3), fail(c, "target.http.headers.%s: expected a string or { file = \"path\" }", name);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

static int load_http(loadctx *c) {
    eg_config *cfg = c->cfg;
    if (only_keys(c, "target.http", "target.http") < 0 || load_fields(c, "target.http", "target.http") < 0) return -1;
    if (strncmp(cfg->http_url, "http://", 7) != 0 && strncmp(cfg->http_url, "https://", 8) != 0)
        return fail(c, "target.http.url: expected an http:// or https:// URL, got \"%s\"", cfg->http_url);
    return load_http_tls(c) < 0 || load_http_headers(c) < 0 ? -1 : 0;
}

static int load_target(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    int r = push_table(c, "target", "target");
    if (r < 0) return r;
    if (r == 0 && cfg->inbox) {
        cfg->target_kind = EG_TARGET_INBOX;
        return 0;
    }
    if (r == 0) return fail(c, "missing required key 'target'");
    if (cfg->inbox)
        return lua_pop(L, 1), fail(c, "target: source.inbox calls no target; remove the target table or source.inbox");
    if (only_keys(c, "target", "target") < 0 || load_breaker(c) < 0 || load_budget(c) < 0 || load_rate(c) < 0)
        return lua_pop(L, 1), -1;
    rawfield(L, "http");
    int has_http = !lua_isnil(L, -1);
    lua_pop(L, 1);
    rawfield(L, "lua");
    int has_lua = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (has_http == has_lua) {
        lua_pop(L, 1);
        return fail(c, "target: exactly one of target.http or target.lua is required");
    }
    if (has_lua) {
        cfg->target_kind = EG_TARGET_LUA;
        if (get_string(c, "lua", "target.lua", 1, &cfg->lua_target) < 0 ||
            resolve_file(c, "target.lua", &cfg->lua_target) < 0 || load_adaptive(c) < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
        return 0;
    }
    cfg->target_kind = EG_TARGET_HTTP;
    if (push_table(c, "http", "target.http") != 1) return lua_pop(L, 1), fail(c, "target.http: expected a table");
    if (load_http(c) < 0) return lua_pop(L, 2), -1;
    lua_pop(L, 1);
    if (load_adaptive(c) < 0) return lua_pop(L, 1), -1;
    lua_pop(L, 1);
    return 0;
}

/* A lane template may use {topic}; a rung template must also name the rung
 * with {rung} (or its alias {delay}). */
static int check_template(loadctx *c, const char *name, const char *t, int rung) {
    int has_rung = 0;
    for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
        int is_rung = strncmp(p, "{rung}", 6) == 0 || strncmp(p, "{delay}", 7) == 0;
        has_rung |= is_rung;
        if (strncmp(p, "{topic}", 7) != 0 && !(rung && is_rung))
            return fail(c, "%s: unknown placeholder in \"%s\" (known: {topic}%s)", name, t, rung ? ", {rung}" : "");
    }
    if (!*t) return fail(c, "%s: empty topic template", name);
    if (rung && !has_rung) return fail(c, "%s: \"%s\" must contain {rung}", name, t);
    return 0;
}

/* lanes.spill = { dir = ..., after_ms = ... } */
static int load_spill(loadctx *c) {
    int r = push_table(c, "spill", "lanes.spill");
    if (r <= 0) return r;
    if (only_keys(c, "lanes.spill", "lanes.spill") < 0 || load_fields(c, "lanes.spill", "lanes.spill") < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    return resolve_fields(c, "lanes.spill");
}

/* The three lane templates of cfg, with their key names. */
static const char *const lane_names[3] = {"dlq", "quarantine", "retry"};
static void lane_templates(const eg_config *cfg, const char *tmpl[3]) {
    tmpl[0] = cfg->lane_dlq;
    tmpl[1] = cfg->lane_quarantine;
    tmpl[2] = cfg->lane_retry;
}

/* The literal text a regex source starts with, unescaped ("^src\\.a.*"
 * gives "src.a"): a sample of the topic names it matches, into out. */
static void regex_prefix(const char *re, char *out, size_t outlen) {
    size_t n = 0;
    for (const char *p = re + 1; *p && n + 1 < outlen; p++) {
        if (*p == '\\' && p[1] && strchr(".-_", p[1])) out[n++] = *++p;
        else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                 *p == '-')
            out[n++] = *p;
        else break;
    }
    out[n] = '\0';
}

/* A regex source must not match the gateway's own lanes. The lanes derive
 * from the topics the regexes match, which are unknown here; so the check
 * takes samples: each literal source topic, and each regex's literal prefix
 * with nothing, "x" or "1" after it (when that regex matches the sample);
 * every lane of every sample must escape every regex. At assignment time
 * the gateway also drops a matched topic that is a lane of one of its
 * sources (eg_config_own_lane). */
static int check_regex_lanes(loadctx *c) {
    const eg_config *cfg = c->cfg;
    const char *tmpl[3];
    lane_templates(cfg, tmpl);
    int n = cfg->ntopics, rc = 0;
    regex_t *re = eg_xcalloc((size_t)n, sizeof *re);
    char(*samples)[256] = eg_xcalloc((size_t)n * 4, sizeof *samples);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        if (!eg_topic_is_regex(cfg->topics[i])) {
            snprintf(samples[ns++], sizeof samples[0], "%s", cfg->topics[i]);
            continue;
        }
        regcomp(&re[i], cfg->topics[i], REG_EXTENDED | REG_NOSUB); /* checked in load_source */
        char pre[240];
        regex_prefix(cfg->topics[i], pre, sizeof pre);
        for (int k = 0; k < 3; k++) {
            snprintf(samples[ns], sizeof samples[0], "%s%s", pre, k == 0 ? "" : k == 1 ? "x" : "1");
            if (regexec(&re[i], samples[ns], 0, NULL, 0) == 0) ns++;
        }
    }
    for (int s = 0; s < ns && rc == 0; s++)
        for (int j = 0; j < 3 && rc == 0; j++) {
            char *lane = eg_lane_topic(tmpl[j], samples[s], "30s");
            for (int i = 0; i < n && rc == 0; i++)
                if (eg_topic_is_regex(cfg->topics[i]) && regexec(&re[i], lane, 0, NULL, 0) == 0)
                    rc = fail(c,
                              "source.topics[%d]: the pattern \"%s\" also matches the lane topic \"%s\" "
                              "(lanes.%s of \"%s\"): the gateway would consume its own lanes; narrow the "
                              "pattern (e.g. end it with $)",
                              i + 1, cfg->topics[i], lane, lane_names[j], samples[s]);
            free(lane);
        }
    for (int i = 0; i < n; i++)
        if (eg_topic_is_regex(cfg->topics[i])) regfree(&re[i]);
    free(re);
    free(samples);
    return rc;
}

/* lanes.protect = { dlq = MODE, paths = { ... }, ... }: the paths are
 * parsed here (eg_jpath_parse), so a bad one is a config error; a mode
 * needing a key or paths is refused without them. */
static int load_protect(loadctx *c) {
    lua_State *L = c->L;
    eg_config *cfg = c->cfg;
    int r = push_table(c, "protect", "lanes.protect");
    if (r < 0) return -1;
    if (r == 1) {
        if (only_keys(c, "lanes.protect", "lanes.protect") < 0 || load_fields(c, "lanes.protect", "lanes.protect") < 0)
            return lua_pop(L, 1), -1;
        rawfield(L, "paths");
        int t = lua_type(L, -1);
        if (t != LUA_TNIL) {
            int n = t == LUA_TTABLE ? (int)lua_objlen(L, -1) : -1, bad = n < 0 || n > EG_PROT_PATHS;
            if (!bad) {
                lua_pushnil(L);
                while (lua_next(L, -2)) {
                    lua_pop(L, 1);
                    if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) < 1 || lua_tonumber(L, -1) > n) bad = 1;
                }
            }
            if (bad)
                return lua_pop(L, 2),
                       fail(c, "lanes.protect.paths: expected a list of at most %d JSON paths", EG_PROT_PATHS);
            cfg->protect_paths = eg_xcalloc((size_t)n + 1, sizeof(char *));
            for (int i = 1; i <= n; i++) {
                lua_rawgeti(L, -1, i);
                size_t len = 0;
                const char *p = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
                char perr[160];
                eg_jpath *jp = malloc(sizeof *jp);
                int bad_path = !jp || !p || eg_jpath_parse(p, len, jp, perr, sizeof perr) != 0;
                free(jp);
                if (bad_path) {
                    fail(c, "lanes.protect.paths[%d]: %s", i, p ? perr : "expected a string");
                    return lua_pop(L, 3), -1;
                }
                cfg->protect_paths[cfg->nprotect_paths++] = eg_xstrndup(p, len);
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 2);
        if (resolve_fields(c, "lanes.protect") < 0) return -1;
    }
    int mask = cfg->protect_mode[0] == EG_PROT_MASK || cfg->protect_mode[1] == EG_PROT_MASK;
    int enc = cfg->protect_mode[0] == EG_PROT_ENCRYPT || cfg->protect_mode[1] == EG_PROT_ENCRYPT;
    if (mask && !cfg->nprotect_paths) return fail(c, "lanes.protect: mask needs lanes.protect.paths");
    if (!cfg->protect_key_file) {
        if (enc) return fail(c, "lanes.protect: encrypt needs lanes.protect.key_file");
        if (cfg->protect_hash) return fail(c, "lanes.protect.hash needs lanes.protect.key_file");
        if (cfg->protect_unmaskable == EG_PROT_ENCRYPT)
            return fail(c, "lanes.protect.unmaskable = \"encrypt\" needs lanes.protect.key_file");
    }
    return 0;
}

/* lanes.profiles = { "spring", ... }: names of lane_profiles.h, into a mask. */
static int load_profiles(loadctx *c) {
    lua_State *L = c->L;
    rawfield(L, "profiles");
    int t = lua_type(L, -1);
    if (t == LUA_TNIL) return lua_pop(L, 1), 0;
    if (t != LUA_TTABLE) return lua_pop(L, 1), fail(c, "lanes.profiles: expected a list of profile names");
    int n = (int)lua_objlen(L, -1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) < 1 || lua_tonumber(L, -1) > n)
            return lua_pop(L, 2), fail(c, "lanes.profiles: expected a list of profile names");
    }
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        unsigned bit = lua_type(L, -1) == LUA_TSTRING ? eg_profile_bit(lua_tostring(L, -1)) : 0;
        if (!bit) {
            fail(c, "lanes.profiles[%d]: expected one of %s", i, eg_profile_names);
            return lua_pop(L, 2), -1;
        }
        c->cfg->lane_profiles |= bit;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

/* lanes.transactional: needs a stable instance name (its transactional.id
 * fences the instance's previous incarnation), refuses the spill journal (a
 * spilled record would be counted durable, and its offset committed, outside
 * any transaction, and drained later outside one) and a consumer reading
 * uncommitted records (aborted lane records would be consumed as rung
 * records). */
static int check_transactional(loadctx *c) {
    eg_config *cfg = c->cfg;
    if (!cfg->lanes_transactional) return 0;
    if (!cfg->lanes_instance || !*cfg->lanes_instance)
        return fail(c, "lanes.transactional needs lanes.instance: a name for this instance, stable across its "
                       "restarts and unique in the group (the lane producer's transactional.id)");
    for (const char *s = cfg->lanes_instance; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-') || s - cfg->lanes_instance >= 200)
            return fail(c, "lanes.instance: \"%s\": use at most 200 letters, digits, '.', '_' or '-'",
                        cfg->lanes_instance);
    if (cfg->spill_dir)
        return fail(c, "lanes.transactional and lanes.spill cannot be combined: a spilled lane record counts as "
                       "written and its offset is committed outside any transaction; remove lanes.spill");
    for (int i = 0; i < cfg->nkafka; i++)
        if (!strcmp(cfg->kafka[i].key, "isolation.level") && strcmp(cfg->kafka[i].val, "read_committed") != 0)
            return fail(c,
                        "lanes.transactional: kafka isolation.level = \"%s\": the gateway must read "
                        "read_committed (aborted rung records would be consumed)",
                        cfg->kafka[i].val);
    return 0;
}

static int load_lanes(loadctx *c) {
    int r = push_table(c, "lanes", "lanes");
    if (r < 0) return r;
    if (r == 1) {
        if (only_keys(c, "lanes", "lanes") < 0 || load_fields(c, "lanes", "lanes") < 0 || load_spill(c) < 0 ||
            load_profiles(c) < 0 || load_protect(c) < 0)
            return lua_pop(c->L, 1), -1;
        lua_pop(c->L, 1);
    }
    if (check_transactional(c) < 0) return -1;
    const eg_config *cf = c->cfg;
    int window = cf->lane_appr_win_s > cf->lane_replay_win_s ? cf->lane_appr_win_s : cf->lane_replay_win_s;
    if (cf->lane_retention_s > 0 && cf->lane_retention_s < window)
        return fail(c,
                    "lanes.retention (%d s) is shorter than lanes.%s (%d s): a dead letter would be deleted "
                    "before it can be %s",
                    cf->lane_retention_s, window == cf->lane_appr_win_s ? "approval_window" : "replay_window", window,
                    window == cf->lane_appr_win_s ? "approved" : "replayed");
    if (check_template(c, "lanes.dlq", c->cfg->lane_dlq, 0) < 0 ||
        check_template(c, "lanes.quarantine", c->cfg->lane_quarantine, 0) < 0 ||
        check_template(c, "lanes.retry", c->cfg->lane_retry, 1) < 0)
        return -1;
    const char *tmpl[3];
    lane_templates(c->cfg, tmpl);
    for (int i = 0; i < c->cfg->ntopics; i++) {
        for (int j = 0; j < 3; j++) {
            char *lane = eg_lane_topic(tmpl[j], c->cfg->topics[i], "x");
            int same = 0;
            for (int k = 0; k < c->cfg->ntopics; k++) same |= strcmp(lane, c->cfg->topics[k]) == 0;
            if (same) {
                fail(c, "lanes.%s: lane topic \"%s\" is also a source topic", lane_names[j], lane);
                free(lane);
                return -1;
            }
            free(lane);
        }
    }
    return check_regex_lanes(c);
}

/* The optional `admin` table; its presence turns the admin endpoint on. */
static int load_admin(loadctx *c) {
    int r = push_table(c, "admin", "admin");
    if (r <= 0) return r;
    c->cfg->admin_enabled = 1;
    if (only_keys(c, "admin", "admin") < 0 || load_fields(c, "admin", "admin") < 0) return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    const char *colon = strrchr(c->cfg->admin_listen, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == c->cfg->admin_listen || !end || *end || end == colon + 1 || port < 0 || port > 65535)
        return fail(c, "admin.listen: expected \"host:port\", got \"%s\"", c->cfg->admin_listen);
    return resolve_fields(c, "admin");
}

/* log.decisions = "all" | { per_second = N }, in the log table at the
 * stack top. */
static int load_log_decisions(loadctx *c) {
    rawfield(c->L, "decisions");
    int t = lua_type(c->L, -1);
    const char *str = t == LUA_TSTRING ? lua_tostring(c->L, -1) : NULL;
    lua_pop(c->L, 1);
    if (t == LUA_TNIL) return 0;
    if (str) {
        if (strcmp(str, "all") != 0) return fail(c, "log.decisions: expected \"all\" or a table, got \"%s\"", str);
        c->cfg->log_decisions_per_second = 0;
        return 0;
    }
    int r = push_table(c, "decisions", "log.decisions");
    if (r <= 0) return r < 0 ? -1 : fail(c, "log.decisions: expected \"all\" or a table");
    r = only_keys(c, "log.decisions", "log.decisions") < 0 || load_fields(c, "log.decisions", "log.decisions") < 0;
    lua_pop(c->L, 1);
    return r ? -1 : 0;
}

/* The optional `dlq_guard` table; its presence turns the guard on. */
static int load_guard(loadctx *c) {
    int r = push_table(c, "dlq_guard", "dlq_guard");
    if (r <= 0) return r;
    c->cfg->guard_enabled = 1;
    if (only_keys(c, "dlq_guard", "dlq_guard") < 0 || load_fields(c, "dlq_guard", "dlq_guard") < 0)
        return lua_pop(c->L, 1), -1;
    lua_pop(c->L, 1);
    if (c->cfg->guard_max_per_second <= 0) return fail(c, "dlq_guard.max_per_second is required");
    return 0;
}

static int load_all(loadctx *c) {
    eg_config *cfg = c->cfg;
    lua_State *L = c->L;
    if (only_keys(c, "", "") < 0) return -1;
    if (load_kafka(c) < 0) return -1;
    /* group, policy and the top-level numbers; the policy file is checked
     * after source and target */
    if (load_fields(c, "", "") < 0) return -1;
    if (load_source(c) < 0 || load_target(c) < 0) return -1;
    if (resolve_fields(c, "") < 0) return -1;
    if (load_lanes(c) < 0) return -1;
    int r = push_table(c, "log", "log");
    if (r < 0) return -1;
    if (r == 1) {
        if (only_keys(c, "log", "log") < 0 || load_fields(c, "log", "log") < 0 || load_log_decisions(c) < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
    }
    if (load_admin(c) < 0 || load_guard(c) < 0) return -1;
    r = push_table(c, "metrics", "metrics");
    if (r < 0) return -1;
    if (r == 1) {
        if (only_keys(c, "metrics", "metrics") < 0 || load_fields(c, "metrics", "metrics") < 0)
            return lua_pop(L, 1), -1;
        lua_pop(L, 1);
    }
    r = push_table(c, "app", "app");
    if (r < 0) return -1;
    if (r == 1) {
        if (only_keys(c, "app", "app") < 0 || load_fields(c, "app", "app") < 0) return lua_pop(L, 1), -1;
        lua_pop(L, 1);
    }
    if (!eg_config_kafka(cfg, "bootstrap.servers")) {
        const char *env = getenv("ERRGATE_BOOTSTRAP");
        if (!env || !*env) return fail(c, "kafka.bootstrap.servers is not set and ERRGATE_BOOTSTRAP is empty");
        cfg->kafka = eg_xrealloc(cfg->kafka, (size_t)(cfg->nkafka + 1) * sizeof(eg_kv));
        cfg->kafka[cfg->nkafka].key = eg_xstrdup("bootstrap.servers");
        cfg->kafka[cfg->nkafka].val = eg_xstrdup(env);
        cfg->nkafka++;
    }
    return 0;
}

int eg_config_from_table(lua_State *L, const char *path, eg_config *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    cfg->path = eg_xstrdup(path);
    set_defaults(cfg);
    char *tmp = eg_xstrdup(path);
    loadctx c = {.L = L, .cfg = cfg, .dir = eg_xstrdup(dirname(tmp)), .err = err, .errlen = errlen};
    free(tmp);
    int top = lua_gettop(L), rc;
    if (lua_type(L, -1) != LUA_TTABLE)
        rc = fail(&c, "the file must return a table (got %s)", lua_typename(L, lua_type(L, -1)));
    else rc = load_all(&c);
    lua_settop(L, top);
    free(c.dir);
    if (rc == 0) cfg->scope = eg_xstrdup(cfg->group);
    if (rc != 0) eg_config_free(cfg);
    return rc;
}

/* The VM of the load in progress, for the stop signals' handler (one load
 * at a time: loads run on the main thread before anything else starts),
 * and the signal that interrupted it. */
static eg_vm *volatile g_loading;
static volatile sig_atomic_t g_load_signal;

/* SIGTERM/SIGINT handler while a config loads: the load ends at once. */
static void on_load_signal(int sig) {
    g_load_signal = sig;
    eg_vm *vm = g_loading;
    if (vm) eg_vm_interrupt(vm);
}

int eg_config_load_signal(void) { return (int)g_load_signal; }

/* Runs the file in vm and leaves what it returned on the stack. Returns 0,
 * or -1 with err ("config PATH: ..." or "config PATH:LINE: ..."). */
static int run_file(eg_vm *vm, const char *path, char *err, size_t errlen) {
    lua_State *L = vm->L;
    char e[512] = "";
    uint64_t refused = vm->mem_refused;
    vm->timeout_ms = EG_CONFIG_BUDGET_MS;
    if (eg_vm_push_runtime_fn(vm, "load_config") != 0) {
        snprintf(err, errlen, "config %s: the errgate Lua runtime has no load_config", path);
        return -1;
    }
    lua_pushstring(L, path);
    int rc = eg_vm_pcall(vm, 1, 2, e, sizeof e);
    if (rc == 0 && lua_isnil(L, -2) && lua_type(L, -1) == LUA_TSTRING) {
        eg_strlcpy(e, lua_tostring(L, -1), sizeof e);
        rc = -1;
    }
    if (rc != 0) {
        if (g_load_signal)
            snprintf(err, errlen, "config %s: loading interrupted by %s", path,
                     g_load_signal == SIGINT ? "SIGINT" : "SIGTERM");
        else if (vm->timed_out)
            snprintf(err, errlen, "config %s: still running after %d ms (the budget of a config's Lua; a loop?)", path,
                     EG_CONFIG_BUDGET_MS);
        else if (vm->mem_refused != refused)
            snprintf(err, errlen, "config %s: used more than %d MiB of memory (the cap of a config's Lua)", path,
                     EG_CONFIG_MEMORY_MB);
        else snprintf(err, errlen, "config %s", e);
        if (rc == 0) lua_pop(L, 2);
        return -1;
    }
    lua_pop(L, 1);
    return 0;
}

int eg_config_with_file(const char *path, int (*fn)(lua_State *L, void *arg, char *err, size_t errlen), void *arg,
                        char *err, size_t errlen) {
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "config %s: cannot read file", path);
        return -1;
    }
    /* SIGTERM and SIGINT end the load: caught (a gateway that starts keeps
     * them blocked until its loop is armed: unblocked here, for the load) */
    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_load_signal;
    sigemptyset(&sa.sa_mask);
    g_load_signal = 0;
    g_loading = NULL;
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &stops, &old_mask);

    int rc = -1;
    char e[512];
    eg_vm *vm = eg_vm_new((size_t)EG_CONFIG_MEMORY_MB << 20, e, sizeof e);
    if (!vm) {
        snprintf(err, errlen, "config %s: %s", path, e);
    } else {
        g_loading = vm;
        if (g_load_signal) eg_vm_interrupt(vm); /* it came while the VM was made */
        if (run_file(vm, path, err, errlen) == 0) {
            g_loading = NULL;
            vm->mem_limit = (size_t)-1; /* the validator allocates outside any pcall */
            rc = fn(vm->L, arg, err, errlen);
        }
    }

    pthread_sigmask(SIG_BLOCK, &stops, NULL);
    g_loading = NULL;
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    eg_vm_free(vm);
    if (rc == 0 && g_load_signal) { /* it came after the file ran: taken all the same */
        snprintf(err, errlen, "config %s: loading interrupted by %s", path,
                 g_load_signal == SIGINT ? "SIGINT" : "SIGTERM");
        rc = -1;
    }
    return rc;
}

int eg_config_load(const char *path, eg_config *cfg, char *err, size_t errlen) {
    return eg_config_load_source(path, NULL, cfg, err, errlen);
}

void eg_config_free(eg_config *cfg) {
    for (int i = 0; i < cfg->nkafka; i++) {
        free(cfg->kafka[i].key);
        free(cfg->kafka[i].val);
    }
    free(cfg->kafka);
    for (int i = 0; i < cfg->ntopics; i++) free(cfg->topics[i]);
    free(cfg->topics);
    free(cfg->path);
    free(cfg->group);
    free(cfg->metrics_pipeline);
    free(cfg->metrics_stage);
    free(cfg->app_name);
    free(cfg->app_version);
    free(cfg->source_schema);
    free(cfg->http_url);
    free(cfg->http_ca_file);
    free(cfg->http_cert_file);
    free(cfg->http_key_file);
    free(cfg->http_server_name);
    for (int i = 0; i < cfg->nhttp_headers; i++) {
        free(cfg->http_headers[i].name);
        free(cfg->http_headers[i].value);
        free(cfg->http_headers[i].file);
    }
    free(cfg->http_headers);
    free(cfg->lua_target);
    free(cfg->budget_key_header);
    free(cfg->policy);
    free(cfg->shadow_policy);
    free(cfg->lane_dlq);
    free(cfg->lane_quarantine);
    free(cfg->lane_retry);
    free(cfg->spill_dir);
    free(cfg->lanes_instance);
    free(cfg->log_format);
    free(cfg->admin_listen);
    free(cfg->audit_topic);
    free(cfg->control_key_file);
    free(cfg->protect_token);
    free(cfg->protect_key_file);
    for (int i = 0; i < cfg->nprotect_paths; i++) free(cfg->protect_paths[i]);
    free(cfg->protect_paths);
    free(cfg->inbox);
    for (int i = 0; i < cfg->nreplay_allow; i++) free(cfg->replay_allow[i]);
    free(cfg->replay_allow);
    free(cfg->admin_token_file);
    free(cfg->source_name);
    free(cfg->scope);
    memset(cfg, 0, sizeof *cfg);
}

const char *eg_config_kafka(const eg_config *cfg, const char *key) {
    for (int i = 0; i < cfg->nkafka; i++)
        if (strcmp(cfg->kafka[i].key, key) == 0) return cfg->kafka[i].val;
    return NULL;
}

/* The placeholder at p and its value, or 0 when p starts none. */
static size_t placeholder(const char *p, const char *topic, const char *rung, const char **val) {
    if (strncmp(p, "{topic}", 7) == 0) return *val = topic, 7;
    if (rung && strncmp(p, "{rung}", 6) == 0) return *val = rung, 6;
    if (rung && strncmp(p, "{delay}", 7) == 0) return *val = rung, 7;
    return 0;
}

char *eg_lane_topic(const char *tmpl, const char *topic, const char *rung) {
    size_t n = 1, k;
    const char *v;
    for (const char *p = tmpl; *p;) {
        if ((k = placeholder(p, topic, rung, &v))) {
            n += strlen(v);
            p += k;
        } else {
            n++;
            p++;
        }
    }
    char *out = eg_xmalloc(n), *o = out;
    for (const char *p = tmpl; *p;) {
        if ((k = placeholder(p, topic, rung, &v))) {
            memcpy(o, v, strlen(v));
            o += strlen(v);
            p += k;
        } else *o++ = *p++;
    }
    *o = '\0';
    return out;
}

int eg_topic_is_regex(const char *topic) { return topic[0] == '^'; }

/* True when x (n bytes) is one of the config's source topics: a literal
 * one, or a topic a source regex matches. */
static int is_source(const eg_config *cfg, const char *x, size_t n) {
    char name[EG_TOPIC_NAME_MAX + 1];
    if (n > EG_TOPIC_NAME_MAX) return 0;
    memcpy(name, x, n);
    name[n] = '\0';
    for (int i = 0; i < cfg->ntopics; i++) {
        if (!eg_topic_is_regex(cfg->topics[i])) {
            if (strcmp(cfg->topics[i], name) == 0) return 1;
            continue;
        }
        regex_t re;
        if (regcomp(&re, cfg->topics[i], REG_EXTENDED | REG_NOSUB) != 0) continue;
        int m = regexec(&re, name, 0, NULL, 0) == 0;
        regfree(&re);
        if (m) return 1;
    }
    return 0;
}

/* Matches topic against template t, where {topic}, {rung} and {delay}
 * stand for one or more characters, and what {topic} stands for must be a
 * source topic of cfg. */
static int own_lane_match(const eg_config *cfg, const char *t, const char *topic) {
    if (!*t) return !*topic;
    const char *v;
    size_t k = placeholder(t, "", "", &v);
    if (!k) return *t == *topic && own_lane_match(cfg, t + 1, topic + 1);
    int is_topic = strncmp(t, "{topic}", 7) == 0;
    for (size_t len = 1; len <= strlen(topic); len++)
        if (own_lane_match(cfg, t + k, topic + len) && (!is_topic || is_source(cfg, topic, len))) return 1;
    return 0;
}

int eg_config_own_lane(const eg_config *cfg, const char *topic, const char **lane) {
    const char *tmpl[3];
    lane_templates(cfg, tmpl);
    for (int j = 0; j < 3; j++)
        if (own_lane_match(cfg, tmpl[j], topic)) {
            if (lane) *lane = lane_names[j];
            return 1;
        }
    return 0;
}
