/* text.h — output for people at a terminal: bytes made printable, aligned
 * tables. (JSON output is json.h's.) */
#ifndef EG_TEXT_H
#define EG_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Writes bytes as printable text into out (NUL-terminated, truncated with
 * "..." past outlen, an escape never cut in half): printable ASCII as is,
 * '"' and '\\' escaped, other bytes as \xNN (newline, tab and carriage
 * return as \n \t \r). Nothing is written when outlen is 0. */
void eg_printable(const void *bytes, size_t n, char *out, size_t outlen);

/* An aligned text table: rows of ncols cells, printed with each column as
 * wide as its widest cell, two spaces apart; columns whose bit is set in
 * right_mask are right-aligned (numbers). Owns copies of its cells. */
typedef struct eg_table {
    int ncols;
    char **cells; /* nrows * ncols */
    size_t nrows, cap;
} eg_table;

/* Makes t an empty table of ncols columns. */
void eg_table_init(eg_table *t, int ncols);
/* Appends a row of t->ncols cells (copied; NULL cells print as "-"). */
void eg_table_add(eg_table *t, const char *const *row);
/* Writes every row, one line each; trailing spaces are not written. */
void eg_table_print(const eg_table *t, unsigned right_mask, FILE *out);
/* Frees the cells; t may be initialised again. */
void eg_table_free(eg_table *t);

#endif
