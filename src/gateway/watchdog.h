/* watchdog.h — a time limit on the gateway's teardown (watchdog.c). */
#ifndef EG_WATCHDOG_H
#define EG_WATCHDOG_H

/* Starts the watchdog: unless eg_watchdog_disarm is called within ms
 * milliseconds, it logs `teardown_stuck` naming what (copied) and ends the
 * process with _exit(exit_code). Call it only where ending the process at
 * once loses nothing (after the last commit). Returns 0, or -1 when a
 * watchdog is already armed or its thread cannot start (then nothing is
 * armed and the caller goes on without a limit). */
int eg_watchdog_arm(int ms, int exit_code, const char *what);

/* Stops the watchdog and waits for its thread; a no-op when none is armed. */
void eg_watchdog_disarm(void);

#endif
