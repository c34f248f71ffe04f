/* config.h — the gateway configuration, read from a Lua file.
 *
 * The file is run in a fresh Lua state and must return a table. Every key is
 * checked: an unknown key, a wrong type or a missing file is an error whose
 * message names the key (e.g. "source.ordering") or the file. Relative paths
 * (policy, target.lua) are resolved against the config file's directory.
 * The loaded struct owns all its strings; eg_config_free releases them.
 *
 * One table, eg_config_keys, states every key once: its type, default,
 * bounds and meaning. The loader takes the known keys, the types, the bounds
 * and the defaults from it, and the man page's key reference (its
 * CONFIGURATION section) is its rendering (eg_config_write_man;
 * spec/c/test_config_doc.c compares them). */
#ifndef EG_CONFIG_H
#define EG_CONFIG_H

#include <stddef.h>
#include <stdio.h>

/* Defaults of the config keys (the table in config.c uses these names). */
#define EG_DEF_ORDERING "partition"
#define EG_DEF_MAX_INFLIGHT 1000
#define EG_DEF_MAX_INFLIGHT_TOTAL 5000
#define EG_DEF_FETCH_WAKEUP_MS 20
#define EG_DEF_MAX_TRACKED 100000 /* or max_inflight when that is larger */
#define EG_DEF_FENCE "off"
#define EG_DEF_FENCE_MAX_KEYS 10000       /* fenced keys per source partition */
#define EG_DEF_NOT_BEFORE_MAX_MS 86400000 /* 24 h */
#define EG_DEF_HTTP_TIMEOUT_MS 5000
#define EG_DEF_HTTP_CONCURRENCY 64
#define EG_DEF_HTTP_MAX_RESPONSE_BYTES 65536
#define EG_DEF_HTTP_VERSION "1.1"
#define EG_DEF_LANE_DLQ "{topic}.dlq"
#define EG_DEF_LANE_QUARANTINE "{topic}.quarantine"
#define EG_DEF_LANE_RETRY "{topic}.retry.{rung}"
#define EG_DEF_SPILL_AFTER_MS 5000
#define EG_DEF_BREAKER_WINDOW 50
#define EG_DEF_BREAKER_MIN_CALLS 20
#define EG_DEF_BREAKER_FAILURE_RATIO 0.5
#define EG_DEF_BREAKER_OPEN_MS 5000
#define EG_DEF_BREAKER_PROBES 2
#define EG_DEF_BUDGET_PERCENT 20
#define EG_DEF_BUDGET_MIN 3
#define EG_DEF_BUDGET_MAX_KEYS 1000
#define EG_DEF_ADAPTIVE_MIN 1
#define EG_DEF_ADAPTIVE_TOLERANCE 2
#define EG_DEF_POLICY_MEMORY_MB 64
#define EG_DEF_COMMIT_INTERVAL_MS 1000
#define EG_DEF_SHUTDOWN_TIMEOUT_MS 10000
#define EG_DEF_POLICY_TIMEOUT_MS 50
#define EG_DEF_SHADOW_TIMEOUT_MS 10
#define EG_DEF_SHADOW_CPU_PERCENT 10
#define EG_DEF_LOG_LEVEL "info"
#define EG_DEF_LOG_FORMAT "json"
#define EG_DEF_LOG_DECISIONS_PER_SECOND 1000
#define EG_DEF_ADMIN_LISTEN "127.0.0.1:9464"
#define EG_DEF_READY_LANE_FAILURE_MS 10000
#define EG_DEF_ADMIN_MAX_CONNECTIONS 64
#define EG_DEF_ON_STOP "exit"
#define EG_DEF_GUARD_WINDOW_S 10
#define EG_DEF_GUARD_ACTION "hold"
#define EG_DEF_GUARD_COOLDOWN_S 60
#define EG_DEF_DEAD_LETTER_RATIO 0.001
#define EG_DEF_OVERRIDE_MAX_TTL_MS 86400000 /* 24 h */
#define EG_DEF_AUDIT_TOPIC "errgate.audit"

/* The kinds of value a config key takes. */
typedef enum {
    EG_CK_TABLE, /* a table of further keys */
    EG_CK_STRING,
    EG_CK_INT,    /* an integral number within [min, max], into an int */
    EG_CK_NUMBER, /* a number within [min, max], into a double */
    EG_CK_BOOL,
    EG_CK_ENUM,    /* one of `choices`: its value into an int, or the string into a char * */
    EG_CK_LIST,    /* a list of strings */
    EG_CK_MAP,     /* string keys chosen by the user (kafka properties, header names) */
    EG_CK_DURATION /* a duration: a unit string ("250ms", "1m30s") or a number of `unit` ms, into an int of `unit` ms */
} eg_ck_type;

/* Flags of a config key. */
#define EG_CK_REQUIRED 1 /* must be present (in its table, when that is present) */
#define EG_CK_FILE 2     /* a path resolved against the config's directory; must be readable */
#define EG_CK_DIR 4      /* a path resolved against the config's directory */
#define EG_CK_CUSTOM 8   /* read by its own code in config.c, not the generic reader */
#define EG_CK_NOFIELD ((size_t)-1)

/* One config key. A key's parent is the key before its last dot; "*" in a
 * key stands for any one name the user chooses (a header name). */
typedef struct eg_config_key {
    const char *key; /* dotted path, e.g. "source.max_inflight" */
    eg_ck_type type;
    int flags;                  /* EG_CK_* */
    double def;                 /* default of an INT, NUMBER or BOOL */
    const char *def_str;        /* default of a STRING or ENUM; for others, the default as documented */
    double min, max;            /* bounds of an INT or NUMBER */
    const char *const *choices; /* ENUM: the accepted strings, NULL-ended */
    const int *values;          /* ENUM: the int stored for each choice; NULL: the string is stored */
    size_t off;                 /* the field in eg_config, or EG_CK_NOFIELD */
    const char *help;           /* one line for the reference */
    const char *old;            /* the key's former name (a unit suffix), still read for one release, or NULL */
    int unit;                   /* DURATION: ms of one stored unit (1, or 1000 for seconds); bounds and default in it */
} eg_config_key;

extern const eg_config_key eg_config_keys[];
extern const size_t eg_config_nkeys;

/* Writes the key reference as man(7) text for the man page's
 * CONFIGURATION section: a tagged paragraph per key of eg_config_keys, in
 * table order, with its type, default and range, then its meaning. */
void eg_config_write_man(FILE *out);

typedef enum { EG_ORDER_PARTITION = 0, EG_ORDER_KEY, EG_ORDER_NONE } eg_ordering;
/* source.fence (ordering = "key"): what parks a key (gateway/fence.h) */
typedef enum { EG_FENCE_OFF = 0, EG_FENCE_LADDER, EG_FENCE_LADDER_DLQ } eg_fence_mode;
/* INBOX: source.inbox is set; the inbox target (target_lua.c) reads each
 * record's recorded failure from its headers and calls nothing. */
typedef enum { EG_TARGET_HTTP = 0, EG_TARGET_LUA, EG_TARGET_INBOX } eg_target_kind;

typedef struct eg_kv {
    char *key, *val;
} eg_kv;

/* A static request header: a literal value, or a file whose content (trimmed
 * of trailing white space) is the value, read by the target at start and on
 * every reload. */
typedef struct eg_http_header {
    char *name;
    char *value; /* the literal, or NULL when file is set */
    char *file;  /* resolved path, or NULL */
} eg_http_header;

typedef struct eg_config {
    char *path;   /* the config file */
    eg_kv *kafka; /* librdkafka properties, in file order */
    int nkafka;
    char *group;
    char **topics;
    int ntopics;
    eg_ordering ordering;
    eg_fence_mode fence; /* source.fence: per-key fencing of parked records (ordering = key) */
    int fence_max_keys;  /* fenced keys per source partition; past it the partition holds */
    char *inbox;         /* source.inbox: the DLQ format of the sources, or NULL */
    char **replay_allow; /* source.replay_allow: where replays may go (replay_dest.h) */
    int nreplay_allow;
    int replay_allow_set;   /* the key was given (an empty list allows nothing) */
    int max_inflight;       /* per partition */
    int max_inflight_total; /* across partitions */
    int max_tracked;        /* offsets tracked per partition (oldest unfinished to newest read);
                             * default 100,000 or max_inflight when larger */
    int fetch_wakeup_ms;    /* while records are taken, wake librdkafka's fetchers this often; 0: off */
    int not_before_max_ms;  /* errgate.not-before is capped this far past a rung record's timestamp */
    eg_target_kind target_kind;
    char *http_url;
    int http_timeout_ms;
    int http_concurrency;
    int http_version;            /* 11 (HTTP/1.1) or 2 (HTTP/2 where TLS offers it) */
    int http_max_response_bytes; /* body bytes read per response, beyond: discarded */
    char *http_ca_file;          /* target.http.tls: resolved paths, or NULL */
    char *http_cert_file;
    char *http_key_file;
    char *http_server_name;       /* name verified and sent as SNI, or NULL: the URL's host */
    int http_verify;              /* 0: certificates are not checked (warned at start) */
    eg_http_header *http_headers; /* target.http.headers, in file order */
    int nhttp_headers;
    char *lua_target; /* absolute or config-relative path resolved */
    char *policy;     /* path of the policy file */
    char *lane_dlq;   /* topic templates, "{topic}" expands to the source topic */
    char *lane_quarantine;
    char *lane_retry;       /* rung topics: {topic} and {rung} (alias {delay}) */
    unsigned lane_profiles; /* lanes.profiles: EG_PROFILE_* bits (lane_profiles.h) */

    int protect_mode[2];  /* lanes.protect.dlq, .quarantine: eg_prot_mode (protect.h) */
    char **protect_paths; /* lanes.protect.paths, checked by eg_jpath_parse */
    int nprotect_paths;
    char *protect_token;     /* lanes.protect.token: what a masked value becomes */
    int protect_hash;        /* 1: a masked value becomes a keyed hash */
    char *protect_key_file;  /* lanes.protect.key_file, resolved, or NULL */
    int protect_unmaskable;  /* EG_PROT_POINTER or EG_PROT_ENCRYPT: a non-JSON payload under mask */
    int dlq_approval;        /* 1: DLQ records carry errgate.approval: required */
    int quarantine_approval; /* the same for quarantine records */

    char *spill_dir;         /* lanes.spill.dir, resolved; NULL: no spill journal */
    int spill_after_ms;      /* spill a lane write not acknowledged after this long */
    int lane_retention_s;    /* lanes.retention: retention of the lanes it creates, seconds; 0: the cluster's */
    int lane_appr_win_s;     /* lanes.approval_window, seconds: the lanes' retention must outlast it; 0: none */
    int lane_replay_win_s;   /* lanes.replay_window, seconds: the same for replays; 0: none */
    int lanes_transactional; /* lanes.transactional: lane records and source offsets in one Kafka transaction */
    char *lanes_instance;    /* lanes.instance: this instance's stable name (transactional.id), or NULL */
    int breaker_enabled;     /* 1 when target.breaker is present */
    int breaker_window;      /* outcomes in the sliding window */
    int breaker_min_calls;
    double breaker_failure_ratio;
    int breaker_open_ms;
    int breaker_probes; /* concurrent half-open probes */
    int budget_enabled; /* 1 when target.retry_budget is present */
    double budget_percent;
    int budget_min;
    int budget_per_minute;   /* retries admitted per minute (per key when keyed); 0: no cap */
    char *budget_key_header; /* target.retry_budget.key.header: budgets by this header's value, or NULL */
    int budget_max_keys;     /* keys tracked at most (budget_keys.h) */
    int rate_enabled;        /* 1 when target.rate is present: a token bucket towards the target */
    double rate_per_second;  /* > 0 */
    double rate_burst;       /* >= 1; default per_second (at least 1) */
    int adaptive_enabled;    /* 1 when target.adaptive is true or a table: an AIMD concurrency limit */
    int adaptive_min;
    int adaptive_max;          /* default: the target's concurrency */
    double adaptive_tolerance; /* a success within this multiple of the lowest recent latency raises the limit */
    int policy_memory_mb;      /* memory cap of the policy's Lua state */
    int commit_interval_ms;
    int shutdown_timeout_ms;
    int policy_timeout_ms;        /* wall-clock budget of one policy call */
    char *shadow_policy;          /* the shadow candidate's file, or NULL (shadow.h) */
    int shadow_timeout_ms;        /* wall-clock budget of one shadow decision */
    int shadow_cpu_percent;       /* the shadow's share of the loop's time */
    int log_level;                /* eg_level (log.h): lines below it are not written */
    char *log_format;             /* json|text */
    int log_decisions_per_second; /* decision lines in full per (topic, class, action) and second; 0: all */
    int admin_enabled;            /* 1 when the file has an `admin` table */
    char *admin_listen;           /* "host:port" (port 0: any free port) */
    char *admin_token_file;       /* resolved path, or NULL: mutating endpoints off */
    int admin_max_connections;    /* open admin connections; more are closed at once */
    int ready_lane_failure_ms;    /* /readyz turns false past this much lane failure */
    /* incident controls (gw_incident.c) */
    int override_max_ttl_ms;     /* the longest TTL an override may have */
    char *audit_topic;           /* admin.audit_topic: operator changes, read by every instance */
    char *control_key_file;      /* control_key_file: signs and checks control records (ctlsign.h), or NULL */
    int replay_four_eyes;        /* replay_four_eyes: errgate replay -c acts as with --four-eyes */
    int on_stop_wait;            /* on_stop = "wait": a stop decision waits for `errgate ctl resume` */
    int guard_enabled;           /* 1 when the file has a `dlq_guard` table */
    double guard_max_per_second; /* dead letters per second (per source topic) over the window */
    int guard_window_s;          /* the window the rate is taken over */
    int guard_stop;              /* dlq_guard.action = "stop" (else "hold") */
    int guard_cooldown_s;        /* tripped at least this long before it re-arms */
    /* metrics (gw_admin.c: errgate_pipeline_info, errgate_dead_letter_ratio_threshold) */
    char *metrics_pipeline;           /* metrics.pipeline, or NULL: the group */
    char *metrics_stage;              /* metrics.stage, or NULL: the target kind */
    char *app_name;                   /* app.name, or NULL: metrics.pipeline, else the group */
    char *app_version;                /* app.version, or NULL */
    char *source_schema;              /* source.schema, or NULL */
    double metrics_dead_letter_ratio; /* metrics.dead_letter_ratio: the ratio alert's threshold */
    /* several sources (config_sources.c) */
    char *source_name; /* the `sources` entry this config is derived from, or NULL (the single-source form) */
    int nsources;      /* entries of the file's `sources`, 0 in the single-source form */
    char *scope;       /* what the control records of this source are scoped by: the group, or GROUP.NAME for a
                        * source of several (overrides, guard resets, GROUP.NAME.fences, the transactional.id) */
    int admin_fd;      /* `run --admin-fd`: an inherited listening socket the admin serves instead of
                        * admin.listen (a source's gateway under the supervisor), or -1 */
} eg_config;

/* What a config file's Lua may spend while it runs: wall-clock time
 * (enforced by the count hook with the JIT off, as for a policy) and memory
 * (the Lua state's allocator cap). */
#define EG_CONFIG_BUDGET_MS 2000
#define EG_CONFIG_MEMORY_MB 64

/* Loads and validates `path`. The file runs as text (bytecode refused) in a
 * sandbox (errgate.sandbox config_env: no process, no file, no loading of
 * code; os.getenv and the clock functions remain), within
 * EG_CONFIG_BUDGET_MS and EG_CONFIG_MEMORY_MB; SIGTERM or SIGINT while it
 * runs ends the load at once (the signal is taken: the caller exits with
 * the error). The one loader of every -c CONFIG. On success returns 0 and
 * fills *cfg. On error returns -1, fills err with a one-line message
 * ("config PATH...") and leaves *cfg empty. */
int eg_config_load(const char *path, eg_config *cfg, char *err, size_t errlen);

struct lua_State;

/* Runs the config file at path as eg_config_load does (sandbox, budgets,
 * the stop signals) and calls fn(L, arg, err, errlen) with what the file
 * returned at the top of L's stack. Returns fn's result, or -1 with err
 * when the file cannot run. */
int eg_config_with_file(const char *path, int (*fn)(struct lua_State *L, void *arg, char *err, size_t errlen),
                        void *arg, char *err, size_t errlen);

/* ---- several sources (config_sources.c) ----------------------------------
 * A file may give `sources = { { name = "...", topics = {...}, ...}, ... }`
 * instead of `source`: each entry holds the keys of `source` plus any of the
 * per-source top-level keys (target, policy, lanes, shadow_policy, ...),
 * which replace the top-level ones whole for that source; the top level
 * keeps the settings of the whole gateway (kafka, group, admin, log,
 * control_key_file, ...) and the defaults of every source. Each source's
 * config is the top level with its entry laid over it, checked as a file
 * of its own would be; the rules between sources (distinct names, no topic
 * in two sources, no pattern topics, no rung topic shared) are checked on
 * every load. */
#define EG_SOURCES_MAX 16
#define EG_SOURCE_NAME_MAX 40
/* A name for eg_config_load_source that takes the first source: for
 * callers that read only the settings every source shares (kafka,
 * control_key_file, group, admin, log). */
#define EG_ANY_SOURCE "*"

/* As eg_config_load, for source `name` of a file with `sources`; NULL
 * takes the file's only source (an error naming them when there are
 * several), EG_ANY_SOURCE the first. A single-source file loads as
 * itself with name NULL or EG_ANY_SOURCE; with another name it is an
 * error. */
int eg_config_load_source(const char *path, const char *name, eg_config *cfg, char *err, size_t errlen);

/* eg_config_load_source's half after the file ran: the table at the top of
 * L's stack (what the file at path returned), read raw, left on the stack.
 * The same results and messages (fuzz_config's entry). */
int eg_config_from_table_source(struct lua_State *L, const char *path, const char *name, eg_config *cfg, char *err,
                                size_t errlen);

/* The names of the sources of the file at path, checked as
 * eg_config_load_source checks them: *names (owned by the caller, free
 * with eg_config_free_names) and *n; *n = 0 and *names NULL for the
 * single-source form. Returns 0, or -1 with err. */
int eg_config_source_names(const char *path, char ***names, int *n, char *err, size_t errlen);
void eg_config_free_names(char **names, int n);

/* The signal (SIGTERM or SIGINT) that ended the last eg_config_load, or 0:
 * a stop asked for while the config loaded is no config error (`run`
 * exits 0, as for a stop later). */
int eg_config_load_signal(void);

/* The validation half of eg_config_load: checks the table at the top of L's
 * stack (what the file at path returned; path names it in messages and its
 * directory resolves relative paths) and fills *cfg, with the same results
 * and messages. The stack is left as it was. Reads the table raw: no
 * metamethod of it runs. */
int eg_config_from_table(struct lua_State *L, const char *path, eg_config *cfg, char *err, size_t errlen);
void eg_config_free(eg_config *cfg);

/* Why a librdkafka property may not be set from a config's kafka table or a
 * --kafka-config file (it makes librdkafka load a shared library or run a
 * command: the config is data, not a way to run code), or NULL when it may.
 * Case-insensitive. */
const char *eg_kafka_prop_forbidden(const char *key);

/* Looks up a kafka property set by the file; NULL if absent. */
const char *eg_config_kafka(const eg_config *cfg, const char *key);

/* Expands a lane template for a source topic (and a rung name, for rung
 * templates; may be NULL otherwise) into a fresh string. */
char *eg_lane_topic(const char *tmpl, const char *topic, const char *rung);

/* Whether errgate may send a header of this name: an HTTP token (RFC 9110)
 * that is none of the headers errgate sets itself (Errgate-*, Host,
 * Content-Length, Content-Type, Connection, Transfer-Encoding, Expect, TE,
 * Upgrade). */
int eg_http_header_sendable(const char *name);

const char *eg_ordering_name(eg_ordering o);

/* Kafka's longest topic name. */
#define EG_TOPIC_NAME_MAX 249

/* A source topic given as a regular expression (it starts with '^', as in
 * librdkafka's subscriptions). */
int eg_topic_is_regex(const char *topic);

/* Returns 1 when `topic` is one of the config's lane topics for one of its
 * source topics: a lane template where {topic} is a literal source topic or
 * a topic a source regex matches ({rung} stands for any non-empty text);
 * names the lane ("dlq", "quarantine", "retry") in *lane. */
int eg_config_own_lane(const eg_config *cfg, const char *topic, const char **lane);

#endif
