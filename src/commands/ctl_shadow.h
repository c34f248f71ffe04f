/* ctl_shadow.h — `errgate ctl shadow`'s printer of a GET /shadow answer
 * (ctl_shadow.c). */
#ifndef EG_CTL_SHADOW_H
#define EG_CTL_SHADOW_H

#include <stdio.h>

/* `errgate ctl shadow`: prints a GET /shadow answer (json, NUL-terminated)
 * as a text table. Returns 0, or -1 when the text is not such an answer. */
int eg_shadow_print(const char *json, FILE *out);

#endif
