/* text.c — output for people at a terminal (see text.h): bytes made
 * printable for `dlq tail`, and aligned tables for `dlq stats` and
 * `replay`. Printable output is ASCII only: a lane record's bytes can hold
 * anything, including terminal control sequences, and must not reach a
 * terminal as they are. */
#include "text.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The printable form of byte c into esc (at least 8 bytes); returns its
 * length: printable ASCII as is, '"' and '\\' escaped, newline, tab and
 * carriage return as \\n \\t \\r, other bytes as \\xNN. */
static size_t esc_byte(unsigned char c, char *esc) {
    if (c == '"' || c == '\\') return (size_t)snprintf(esc, 8, "\\%c", c);
    if (c == '\n') return (size_t)snprintf(esc, 8, "\\n");
    if (c == '\t') return (size_t)snprintf(esc, 8, "\\t");
    if (c == '\r') return (size_t)snprintf(esc, 8, "\\r");
    if (c < 0x20 || c >= 0x7f) return (size_t)snprintf(esc, 8, "\\x%02x", c);
    esc[0] = (char)c;
    return 1;
}

void eg_printable(const void *bytes, size_t n, char *out, size_t outlen) {
    const unsigned char *b = bytes;
    size_t o = 0, room = outlen >= 4 ? outlen - 4 : 0; /* keeps space for "..." */
    if (!outlen) return;
    for (size_t i = 0; i < n; i++) {
        char esc[8];
        size_t k = esc_byte(b[i], esc);
        if (o + k > room) {
            if (room) memcpy(out + o, "...", 3), o += 3;
            break;
        }
        memcpy(out + o, esc, k);
        o += k;
    }
    out[o] = '\0';
}

/* ---- aligned tables ------------------------------------------------------ */

void eg_table_init(eg_table *t, int ncols) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

void eg_table_add(eg_table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = eg_xrealloc(t->cells, t->cap * (size_t)t->ncols * sizeof *t->cells);
    }
    for (int c = 0; c < t->ncols; c++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)c] = eg_xstrdup(row[c] ? row[c] : "-");
    t->nrows++;
}

void eg_table_print(const eg_table *t, unsigned right_mask, FILE *out) {
    size_t *w = eg_xcalloc((size_t)t->ncols, sizeof *w);
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (n > w[c]) w[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * (size_t)t->ncols + (size_t)c];
            int last = c == t->ncols - 1, right = (right_mask >> c) & 1;
            if (right) fprintf(out, "%*s", (int)w[c], cell);
            else if (last) fputs(cell, out);
            else fprintf(out, "%-*s", (int)w[c], cell);
            fputs(last ? "\n" : "  ", out);
        }
    free(w);
}

void eg_table_free(eg_table *t) {
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
