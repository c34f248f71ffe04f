/* kcli.c — shared plumbing of the Kafka-facing commands (see kcli.h): the
 * connection options and client configuration. The topic reader is in
 * kread.c.
 *
 * The properties file is read whole (bounded) and parsed line by line;
 * since it holds passwords, no message about it quotes a value: a value
 * librdkafka refuses is named by its file, line and key. */
#include "kcli.h"
#include "protect.h"

#include "ctlsign.h"
#include "kconf.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROPS_MAX (64 * 1024)

int eg_kcli_opt(eg_kcli *k, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char **slot = NULL;
    if (!strcmp(a, "-b") || !strcmp(a, "--bootstrap")) slot = &k->bootstrap;
    else if (!strcmp(a, "-c") || !strcmp(a, "--config")) slot = &k->config;
    else if (!strcmp(a, "--key-file")) slot = &k->key_file;
    else if (!strcmp(a, "--protect-key-file")) slot = &k->protect_key;
    else if (!strcmp(a, "--kafka-config")) slot = &k->kafka_config;
    else if (!strcmp(a, "--source")) slot = &k->source;
    else return 0;
    if (*i + 1 >= argc) return -1;
    *slot = argv[++*i];
    return 1;
}

int eg_kcli_protkeys(const eg_kcli *k, eg_prot_keys *keys, char *err, size_t errlen) {
    memset(keys, 0, sizeof *keys);
    const char *env = getenv("ERRGATE_PROTECT_KEY_FILE");
    const char *path = k->protect_key ? k->protect_key : env && *env ? env : NULL;
    if (path) return eg_prot_keys_load(path, keys, err, errlen) == 0 ? 1 : -1;
    if (!k->config) return 0;
    eg_config cfg = {0};
    if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
    if (eg_config_load_source(k->config, k->source, &cfg, err, errlen) != 0) return -1;
    int rc = 0;
    if (cfg.protect_key_file) rc = eg_prot_keys_load(cfg.protect_key_file, keys, err, errlen) == 0 ? 1 : -1;
    eg_config_free(&cfg);
    return rc;
}

int eg_kcli_ctlkey(const eg_kcli *k, eg_ctlkey *key, char *err, size_t errlen) {
    memset(key, 0, sizeof *key);
    const char *env = getenv("ERRGATE_CONTROL_KEY_FILE");
    const char *path = k->key_file ? k->key_file : env && *env ? env : NULL;
    if (path) return eg_ctlsign_load(path, key, err, errlen) == 0 ? 1 : -1;
    if (!k->config) return 0;
    eg_config cfg = {0};
    if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
    if (eg_config_load_source(k->config, k->source ? k->source : EG_ANY_SOURCE, &cfg, err, errlen) != 0) return -1;
    int rc = 0;
    if (cfg.control_key_file) rc = eg_ctlsign_load(cfg.control_key_file, key, err, errlen) == 0 ? 1 : -1;
    eg_config_free(&cfg);
    return rc;
}

/* Trims white space at both ends of s in place; returns s moved past the
 * leading white space. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

int eg_kcli_props_file(rd_kafka_conf_t *conf, const char *path, int *has_bootstrap, char *err, size_t errlen) {
    if (has_bootstrap) *has_bootstrap = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--kafka-config %s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = eg_xmalloc(PROPS_MAX + 1);
    size_t n = fread(buf, 1, PROPS_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc = 0;
    if (bad || n > PROPS_MAX) {
        snprintf(err, errlen, "--kafka-config %s: %s", path, bad ? "cannot be read" : "larger than 64 KiB");
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        snprintf(err, errlen, "--kafka-config %s: not a text file (a NUL byte)", path);
        free(buf);
        return -1;
    }
    int lineno = 0;
    for (char *line = buf, *next; line && rc == 0; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "--kafka-config %s:%d: not KEY=VALUE", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        char e[512];
        const char *why = *key ? eg_kafka_prop_forbidden(key) : NULL;
        if (!*key) {
            snprintf(err, errlen, "--kafka-config %s:%d: no key before '='", path, lineno);
            rc = -1;
        } else if (why) {
            snprintf(err, errlen, "--kafka-config %s:%d: %.200s: refused: it %s", path, lineno, key, why);
            rc = -1;
        } else if (rd_kafka_conf_set(conf, key, val, e, sizeof e) != RD_KAFKA_CONF_OK) {
            /* librdkafka's message may quote the value: say only which key */
            snprintf(err, errlen, "--kafka-config %s:%d: %.200s: librdkafka refused %s", path, lineno, key,
                     strstr(e, "No such configuration property") ? "the name (no such property)" : "the value");
            rc = -1;
        } else if (has_bootstrap && (!strcmp(key, "bootstrap.servers") || !strcmp(key, "metadata.broker.list")))
            *has_bootstrap = 1;
    }
    free(buf);
    return rc;
}

rd_kafka_conf_t *eg_kcli_conf(const eg_kcli *k, const char *client_id, char *err, size_t errlen) {
    const char *bootstrap = k->bootstrap ? k->bootstrap : getenv("ERRGATE_BOOTSTRAP");
    const char *props = k->kafka_config ? k->kafka_config : getenv("ERRGATE_KAFKA_CONFIG");
    if (props && !*props) props = NULL;
    eg_config cfg = {0};
    if (k->config) {
        /* the config loader wants a bootstrap; -b supplies it when the file has none */
        if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
        if (eg_config_load_source(k->config, k->source ? k->source : EG_ANY_SOURCE, &cfg, err, errlen) != 0)
            return NULL;
    }
    /* -b wins over the files; without a config, -b or $ERRGATE_BOOTSTRAP
     * (set after the properties file, below) */
    const char *const fixed[][2] = {{"client.id", client_id}, {NULL, NULL}};
    rd_kafka_conf_t *conf = eg_kconf_build(&cfg, NULL, fixed, err, errlen);
    if (k->config) eg_config_free(&cfg);
    if (!conf) return NULL;
    int has_bootstrap = 0;
    if (props && eg_kcli_props_file(conf, props, &has_bootstrap, err, errlen) != 0) goto bad;
    if (k->bootstrap || (!k->config && !has_bootstrap)) {
        if (!bootstrap || !*bootstrap) {
            snprintf(err, errlen,
                     "no broker: give -b BOOTSTRAP, -c CONFIG or a --kafka-config naming bootstrap.servers (or set "
                     "ERRGATE_BOOTSTRAP)");
            goto bad;
        }
        if (eg_kconf_set(conf, "bootstrap.servers", bootstrap, err, errlen) < 0) goto bad;
    }
    /* the file cannot rename the client: client.id names the command in the broker's logs */
    if (eg_kconf_set(conf, "client.id", client_id, err, errlen) < 0) goto bad;
    return conf;
bad:
    rd_kafka_conf_destroy(conf);
    return NULL;
}
