/* supervisor.h — `errgate run` of a config with several sources: a process
 * per source under one supervisor (supervisor.c says how and why). */
#ifndef EG_SUPERVISOR_H
#define EG_SUPERVISOR_H

#include "config.h"

/* Runs the gateway of the config at cfgpath, whose sources are names[n]:
 * starts `self run -c cfgpath --source NAME` for each, serves the admin
 * endpoint of the whole gateway (shared: any source's config, for the
 * settings every source shares: admin, log, shutdown_timeout), forwards
 * SIGTERM, SIGINT and SIGHUP, and returns when every source's process has
 * ended: the highest exit code among them (a process ended by a signal
 * counts as EG_EXIT_FAIL). When one ends on its own, the others are
 * stopped (SIGTERM). */
int eg_supervise(const char *self, const char *cfgpath, const eg_config *shared, char **names, int n);

#endif
