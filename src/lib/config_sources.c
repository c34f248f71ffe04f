/* config_sources.c — several sources in one config file (`sources`).
 *
 * A file gives either `source` (the single-source form, unchanged) or
 * `sources`, a list of entries. An entry holds a `name`, the keys of a
 * `source` table (topics, ordering, fence, inbox, ...) and any of the
 * per-source top-level keys (target, policy, lanes, shadow_policy, on_stop,
 * dlq_guard, metrics, app, ...). A source's config is made as a Lua table:
 * the top level without `sources`, each per-source key of the entry laid
 * over it whole (no deep merge: an entry's `lanes` replaces the top level's
 * `lanes`), and `source` built from the entry's source keys. That table is
 * checked by eg_config_from_table like any file, so every key, type and
 * bound is judged as in the single-source form and a message names the
 * source. The settings of the whole process (kafka, group, admin, log,
 * control_key_file, replay_four_eyes, commit_interval, shutdown_timeout)
 * are refused in an entry.
 *
 * Then, per source: `scope` becomes GROUP.NAME (overrides, guard resets and
 * fences are the source's own; the transactional.id differs), and a spill
 * journal goes to lanes.spill.dir/NAME. Between sources: names distinct, no
 * topic in two sources, no pattern topic (librdkafka would hand one source's
 * topics to another's consumer in the shared group), no topic of one
 * source that is a rung topic of another, no two sources sharing one rung
 * template without {topic}. Every load derives and checks every source (a
 * few ms), so each process of a gateway sees the same verdict.
 *
 * The file's table is read raw (no metamethod runs), as in config.c. */
#include "config.h"
#include "util.h"

#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Top-level keys an entry may set for its source. */
static const char *const per_source[] = {"target",
                                         "policy",
                                         "lanes",
                                         "shadow_policy",
                                         "shadow_timeout",
                                         "shadow_timeout_ms",
                                         "shadow_cpu_percent",
                                         "policy_timeout",
                                         "policy_timeout_ms",
                                         "policy_memory_mb",
                                         "on_stop",
                                         "dlq_guard",
                                         "metrics",
                                         "app",
                                         NULL};

static int in_list(const char *const *list, const char *k) {
    for (; *list; list++)
        if (strcmp(*list, k) == 0) return 1;
    return 0;
}

/* 1 when k is a key of the `source` table (or a former name of one). */
static int is_source_key(const char *k) {
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const char *names[2] = {eg_config_keys[i].key, eg_config_keys[i].old};
        for (int j = 0; j < 2; j++)
            if (names[j] && strncmp(names[j], "source.", 7) == 0 && strcmp(names[j] + 7, k) == 0) return 1;
    }
    return 0;
}

/* 1 when k is a top-level key of eg_config_keys. */
static int is_top_key(const char *k) {
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        const char *names[2] = {eg_config_keys[i].key, eg_config_keys[i].old};
        for (int j = 0; j < 2; j++)
            if (names[j] && !strchr(names[j], '.') && strcmp(names[j], k) == 0) return 1;
    }
    return 0;
}

static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > EG_SOURCE_NAME_MAX || strlen(s) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_'))
            return 0;
    return 1;
}

/* Pushes the config table of entry i (1-based) of `sources` (the table at
 * index si) laid over the top level (index top). Returns 0, or -1 with err
 * (prefixed "config PATH: sources[i]..."). */
static int derive(lua_State *L, int top, int si, int i, const char *path, char *name, char *err, size_t errlen) {
    lua_rawgeti(L, si, i);
    int e = lua_gettop(L);
    if (lua_type(L, e) != LUA_TTABLE) {
        snprintf(err, errlen, "config %s: sources[%d]: expected a table, got %s", path, i,
                 lua_typename(L, lua_type(L, e)));
        return lua_pop(L, 1), -1;
    }
    lua_pushstring(L, "name");
    lua_rawget(L, e);
    size_t nl = 0;
    const char *nm = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &nl) : NULL;
    if (!nm || !name_ok(nm, nl)) {
        snprintf(err, errlen,
                 "config %s: sources[%d].name: %s (letters, digits, - and _, 1 to %d characters: it names the "
                 "source's metrics, logs, fence topic and transactional id)",
                 path, i, nm ? "not a valid name" : "missing", EG_SOURCE_NAME_MAX);
        return lua_pop(L, 2), -1;
    }
    memcpy(name, nm, nl + 1);
    lua_pop(L, 1);
    lua_newtable(L); /* the derived config */
    int d = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, top)) {
        if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "sources") == 0) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, d);
    }
    lua_newtable(L); /* its source table */
    int s = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, e)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            snprintf(err, errlen, "config %s: sources[%d] (%s): keys must be strings", path, i, name);
            return lua_settop(L, e - 1), -1;
        }
        const char *k = lua_tostring(L, -2);
        int dest = 0;
        if (strcmp(k, "name") == 0) dest = 0;
        else if (is_source_key(k)) dest = s;
        else if (in_list(per_source, k)) dest = d;
        else {
            snprintf(err, errlen, "config %s: sources[%d] (%s): %s '%s'%s", path, i, name,
                     is_top_key(k) ? "a setting of the whole gateway, not of one source:" : "unknown key", k,
                     is_top_key(k) ? " (give it at the top level)" : "");
            return lua_settop(L, e - 1), -1;
        }
        if (!dest) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, dest);
    }
    lua_pushstring(L, "source");
    lua_insert(L, -2);
    lua_rawset(L, d);
    lua_remove(L, e); /* leaves the derived table on top */
    return 0;
}

/* Derives and checks source i of the file's table (on L's stack top, with
 * `sources` at index si) into *cfg. Returns 0, or -1 with err naming it. */
static int load_one(lua_State *L, int si, int i, int n, const char *path, eg_config *cfg, char *err, size_t errlen) {
    int top = lua_gettop(L);
    char name[EG_SOURCE_NAME_MAX + 1];
    int tindex = si - 1; /* the file's table is pushed just below `sources` */
    if (derive(L, tindex, si, i, path, name, err, errlen) != 0) return lua_settop(L, top), -1;
    char e[1024];
    int rc = eg_config_from_table(L, path, cfg, e, sizeof e);
    lua_settop(L, top);
    if (rc != 0) {
        size_t pl = strlen("config ") + strlen(path) + 2;
        const char *rest = strncmp(e, "config ", 7) == 0 && strlen(e) >= pl ? e + pl : e;
        snprintf(err, errlen, "config %s: source %s: %s", path, name, rest);
        return -1;
    }
    cfg->source_name = eg_xstrdup(name);
    cfg->nsources = n;
    size_t sl = strlen(cfg->group) + 1 + strlen(name) + 1;
    free(cfg->scope);
    cfg->scope = eg_xmalloc(sl);
    snprintf(cfg->scope, sl, "%s.%s", cfg->group, name);
    if (cfg->spill_dir) {
        size_t dl = strlen(cfg->spill_dir) + 1 + strlen(name) + 1;
        char *dir = eg_xmalloc(dl);
        snprintf(dir, dl, "%s/%s", cfg->spill_dir, name);
        free(cfg->spill_dir);
        cfg->spill_dir = dir;
    }
    return 0;
}

/* The rules between sources a and b. Returns 0, or -1 with err. */
static int check_pair(const eg_config *a, const eg_config *b, const char *path, char *err, size_t errlen) {
    if (strcmp(a->source_name, b->source_name) == 0) {
        snprintf(err, errlen, "config %s: two sources are named %s", path, a->source_name);
        return -1;
    }
    for (int i = 0; i < a->ntopics; i++)
        for (int j = 0; j < b->ntopics; j++)
            if (strcmp(a->topics[i], b->topics[j]) == 0) {
                snprintf(err, errlen,
                         "config %s: topic %s is claimed by sources %s and %s (a topic belongs to one source)", path,
                         a->topics[i], a->source_name, b->source_name);
                return -1;
            }
    const eg_config *pair[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const eg_config *x = pair[k], *y = pair[1 - k];
        for (int j = 0; j < y->ntopics; j++) {
            const char *lane = NULL;
            if (eg_config_own_lane(x, y->topics[j], &lane) && strcmp(lane, "retry") == 0) {
                snprintf(err, errlen,
                         "config %s: source %s's topic %s is a rung topic of source %s (rungs are read by the source "
                         "that writes them)",
                         path, y->source_name, y->topics[j], x->source_name);
                return -1;
            }
        }
    }
    if (!strstr(a->lane_retry, "{topic}") && strcmp(a->lane_retry, b->lane_retry) == 0) {
        snprintf(err, errlen,
                 "config %s: sources %s and %s share lanes.retry \"%s\": with several sources a rung template without "
                 "{topic} must differ between them (one rung topic would be read by both)",
                 path, a->source_name, b->source_name, a->lane_retry);
        return -1;
    }
    return 0;
}

typedef struct pick {
    const char *path;
    const char *want; /* the name asked for, NULL, or EG_ANY_SOURCE */
    eg_config *cfg;   /* the source asked for (eg_config_load_source), or NULL */
    char **names;     /* eg_config_source_names: filled */
    int n;
    int filled; /* cfg holds a loaded config */
} pick;

/* Loads what path's table (the stack top of L) says into p (the sources'
 * names, and the config of p->want when p->cfg). */
static int load_table(lua_State *L, const char *path, pick *p, char *err, size_t errlen) {
    int top = lua_gettop(L);
    if (lua_type(L, top) != LUA_TTABLE) {
        if (!p->cfg) return 0; /* eg_config_from_table says what is wrong */
        int rc = eg_config_from_table(L, path, p->cfg, err, errlen);
        p->filled = rc == 0;
        return rc;
    }
    lua_pushstring(L, "sources");
    lua_rawget(L, top);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (p->want && strcmp(p->want, EG_ANY_SOURCE) != 0) {
            snprintf(err, errlen, "config %s: --source %s: the file has one source (no `sources` list)", path, p->want);
            return -1;
        }
        if (!p->cfg) return 0;
        int rc = eg_config_from_table(L, path, p->cfg, err, errlen);
        p->filled = rc == 0;
        return rc;
    }
    int si = lua_gettop(L);
    lua_pushstring(L, "source");
    lua_rawget(L, top);
    int both = !lua_isnil(L, -1);
    lua_pop(L, 1);
    int n = lua_type(L, si) == LUA_TTABLE ? (int)lua_objlen(L, si) : -1;
    if (both || n < 1 || n > EG_SOURCES_MAX) {
        snprintf(err, errlen, "config %s: %s", path,
                 both    ? "give either source (one source) or sources (several), not both"
                 : n < 0 ? "sources: expected a list of source tables"
                         : "sources: 1 to 16 sources");
        lua_settop(L, top);
        return -1;
    }
    eg_config *all = eg_xcalloc((size_t)n, sizeof *all);
    int rc = 0, got = 0, chosen = -1;
    for (int i = 1; i <= n && rc == 0; i++) {
        rc = load_one(L, si, i, n, path, &all[i - 1], err, errlen);
        if (rc == 0) got = i;
    }
    for (int i = 0; i < got && rc == 0; i++)
        for (int j = i + 1; j < got && rc == 0; j++) rc = check_pair(&all[i], &all[j], path, err, errlen);
    for (int i = 0; i < got && rc == 0; i++)
        for (int t = 0; t < all[i].ntopics && rc == 0; t++)
            if (n > 1 && eg_topic_is_regex(all[i].topics[t])) {
                snprintf(err, errlen,
                         "config %s: source %s: topic pattern \"%.100s\": several sources take literal topics only (a "
                         "pattern could hand one source's topics to another's consumer in the shared group)",
                         path, all[i].source_name, all[i].topics[t]);
                rc = -1;
            }
    if (rc == 0) {
        if (p->want && strcmp(p->want, EG_ANY_SOURCE) == 0) chosen = 0;
        else if (!p->want && n == 1) chosen = 0;
        else if (p->want)
            for (int i = 0; i < n; i++)
                if (strcmp(all[i].source_name, p->want) == 0) chosen = i;
        if (p->cfg && chosen < 0) {
            char list[600] = "";
            for (int i = 0; i < n; i++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", all[i].source_name);
            }
            if (p->want)
                snprintf(err, errlen, "config %s: no source named %.60s (its sources: %s)", path, p->want, list);
            else
                snprintf(err, errlen, "config %s: the file has %d sources (%s): name one with --source NAME", path, n,
                         list);
            rc = -1;
        }
    }
    if (rc == 0) {
        p->n = n;
        p->names = eg_xcalloc((size_t)n, sizeof *p->names);
        for (int i = 0; i < n; i++) p->names[i] = eg_xstrdup(all[i].source_name);
        if (p->cfg) {
            *p->cfg = all[chosen];
            memset(&all[chosen], 0, sizeof all[chosen]);
            p->filled = 1;
        }
    }
    for (int i = 0; i < got; i++) eg_config_free(&all[i]);
    free(all);
    lua_settop(L, top);
    return rc;
}

/* eg_config_with_file's callback: the file's table is on top. */
static int on_file(lua_State *L, void *arg, char *err, size_t errlen) {
    pick *p = arg;
    return load_table(L, p->path, p, err, errlen);
}

void eg_config_free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

int eg_config_from_table_source(lua_State *L, const char *path, const char *name, eg_config *cfg, char *err,
                                size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    pick p = {.path = path, .want = name, .cfg = cfg};
    int rc = load_table(L, path, &p, err, errlen);
    eg_config_free_names(p.names, p.n);
    if (rc != 0 && p.filled) eg_config_free(cfg);
    if (rc != 0) memset(cfg, 0, sizeof *cfg);
    return rc;
}

int eg_config_load_source(const char *path, const char *name, eg_config *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    pick p = {.path = path, .want = name, .cfg = cfg};
    int rc = eg_config_with_file(path, on_file, &p, err, errlen);
    eg_config_free_names(p.names, p.n);
    if (rc != 0 && p.filled) eg_config_free(cfg); /* a stop signal after the load */
    if (rc != 0) memset(cfg, 0, sizeof *cfg);
    return rc;
}

int eg_config_source_names(const char *path, char ***names, int *n, char *err, size_t errlen) {
    pick p = {.path = path, .want = EG_ANY_SOURCE};
    eg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    p.cfg = &cfg; /* the whole file is checked, as for a load */
    int rc = eg_config_with_file(path, on_file, &p, err, errlen);
    if (p.filled) eg_config_free(&cfg);
    *names = NULL;
    *n = 0;
    if (rc != 0) {
        eg_config_free_names(p.names, p.n);
        return -1;
    }
    *names = p.names;
    *n = p.n;
    return 0;
}
