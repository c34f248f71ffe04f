/* kcli.c — shared plumbing of the Kafka-facing commands (see kcli.h): the
 * connection options and client configuration. The topic reader is in
 * kread.c. */
#include "kcli.h"

#include "ctlsign.h"
#include "kconf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eg_kcli_opt(eg_kcli *k, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char **slot = NULL;
    if (!strcmp(a, "-b") || !strcmp(a, "--bootstrap")) slot = &k->bootstrap;
    else if (!strcmp(a, "-c") || !strcmp(a, "--config")) slot = &k->config;
    else if (!strcmp(a, "--key-file")) slot = &k->key_file;
    else return 0;
    if (*i + 1 >= argc) return -1;
    *slot = argv[++*i];
    return 1;
}

int eg_kcli_ctlkey(const eg_kcli *k, eg_ctlkey *key, char *err, size_t errlen) {
    memset(key, 0, sizeof *key);
    const char *env = getenv("ERRGATE_CONTROL_KEY_FILE");
    const char *path = k->key_file ? k->key_file : env && *env ? env : NULL;
    if (path) return eg_ctlsign_load(path, key, err, errlen) == 0 ? 1 : -1;
    if (!k->config) return 0;
    eg_config cfg = {0};
    if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
    if (eg_config_load(k->config, &cfg, err, errlen) != 0) return -1;
    int rc = 0;
    if (cfg.control_key_file) rc = eg_ctlsign_load(cfg.control_key_file, key, err, errlen) == 0 ? 1 : -1;
    eg_config_free(&cfg);
    return rc;
}

rd_kafka_conf_t *eg_kcli_conf(const eg_kcli *k, const char *client_id, char *err, size_t errlen) {
    const char *bootstrap = k->bootstrap ? k->bootstrap : getenv("ERRGATE_BOOTSTRAP");
    eg_config cfg = {0};
    if (k->config) {
        /* the config loader wants a bootstrap; -b supplies it when the file has none */
        if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
        if (eg_config_load(k->config, &cfg, err, errlen) != 0) return NULL;
    } else if (!bootstrap || !*bootstrap) {
        snprintf(err, errlen, "no broker: give -b BOOTSTRAP or -c CONFIG (or set ERRGATE_BOOTSTRAP)");
        return NULL;
    }
    /* -b wins over the file; without a file, -b or $ERRGATE_BOOTSTRAP */
    const char *const fixed[][2] = {
        {"client.id", client_id}, {k->bootstrap || !k->config ? "bootstrap.servers" : NULL, bootstrap}, {NULL, NULL}};
    rd_kafka_conf_t *conf = eg_kconf_build(&cfg, NULL, fixed, err, errlen);
    if (k->config) eg_config_free(&cfg);
    return conf;
}
