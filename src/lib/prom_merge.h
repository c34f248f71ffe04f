/* prom_merge.h — merges several Prometheus text expositions (format 0.0.4)
 * into one, each sample labelled with the source it came from.
 *
 * A supervisor that runs one child gateway per source serves one /metrics:
 * it scrapes every child and merges their bodies here. Every body is
 * hostile bytes (a child may be broken, truncated mid-line or replaced):
 * a line is parsed strictly and either carried into the output, merged
 * (a HELP or TYPE line another body already gave) or dropped and counted.
 * The output always parses: every line ends in '\n'; a family is one block
 * (its HELP, its TYPE, then its samples, each at most once); every sample
 * carries source="NAME" as its first label; no series appears twice.
 *
 * What is dropped (each line counted once in *dropped):
 *   - a line that is not a well-formed exposition line: bad metric or label
 *     name, unbalanced quotes or braces, an escape other than \\ \" \n (in
 *     HELP text: \\ \n), a value that is not a float (decimal, NaN, +Inf,
 *     -Inf), a timestamp that is not a 64-bit integer, a duplicate label
 *     name, a label name starting "__", a histogram bucket without a float
 *     "le" label, a summary's bare sample without a float "quantile" label,
 *     a sample named exactly as its histogram family, invalid UTF-8, a NUL,
 *     CR or other control byte but tab, a second HELP or TYPE line for one
 *     name within one body, a TYPE line after that name's samples;
 *   - the last line of a body when it does not end in '\n' (it may be a
 *     value cut short: "12" of "1234");
 *   - a line over EG_PROM_MAX_LINE bytes, a sample with more than
 *     EG_PROM_MAX_LABELS labels;
 *   - a sample that already has a label named source;
 *   - a sample of a family an earlier body typed differently (a body's
 *     samples without a TYPE line are untyped), and that body's TYPE and
 *     HELP lines of the family;
 *     likewise a family whose names would collide with another's (a counter
 *     "x_count" beside a summary "x");
 *   - a series (name and label set, whatever the label order) already given.
 * Not counted, not carried: empty lines and comments other than HELP and
 * TYPE, a HELP line with empty text, a later body's HELP text for a family
 * that has one (the first HELP given wins).
 *
 * Order: families in the order they first appear (body 0's first, then the
 * new ones of body 1, ...), samples of a family in body order and, within
 * a body, in line order. Whatever comes later never changes what an earlier
 * body contributes: the samples of body 0 are the same merged alone. */
#ifndef EG_PROM_MERGE_H
#define EG_PROM_MERGE_H

#include <event2/buffer.h>
#include <stddef.h>

/* One line, '\n' included: 64 times the longest line a gateway writes (259
 * bytes: a histogram bucket with a long code), room for a label value of
 * several 249-character topic names. */
#define EG_PROM_MAX_LINE 16384
/* All bodies together: a gateway's exposition is ~20-25 KB (64 families),
 * at worst ~2.5 MB (256 series in each capped family); 32 MiB is 1,000
 * ordinary children or a dozen worst ones, and bounds what the merge holds
 * (about twice its input). */
#define EG_PROM_MAX_INPUT (32u << 20)
/* Distinct family names (those of dropped TYPE lines included): a gateway
 * has 64 (73 with fences); the bound keeps the name table (twice as many
 * slots, 32 KiB) small. */
#define EG_PROM_MAX_FAMILIES 4096
/* Labels of one sample (a gateway writes at most 3 and le). */
#define EG_PROM_MAX_LABELS 64
/* Bodies in one merge, and a source name's length in bytes. */
#define EG_PROM_MAX_INPUTS 1024
#define EG_PROM_MAX_NAME 128

/* Merges n expositions into out. names[i] is the source name of bodies[i]
 * (lens[i] bytes, not NUL-terminated, may hold anything; NULL when lens[i]
 * is 0). Every sample gets source="names[i]" as its first label (the value
 * escaped as the format asks: \\ \" \n); a family's "# HELP" and "# TYPE"
 * lines appear once, before all its samples from every input; families in
 * the order they first appear; samples of one family in input order.
 * Histogram/summary samples (_bucket, _sum, _count) stay with their family.
 * Lines dropped (see above) are counted in *dropped (NULL allowed; set on
 * success only). Returns 0, or -1 with nothing appended to out when out of
 * bounds (more than EG_PROM_MAX_FAMILIES families, EG_PROM_MAX_INPUT bytes
 * in all or EG_PROM_MAX_INPUTS bodies) or when the arguments are wrong
 * (n < 0, a name NULL, empty, longer than EG_PROM_MAX_NAME, not UTF-8, with
 * a control byte but tab and '\n', or given twice), or memory ran out.
 * Allocates only for the call's duration. */
int eg_prom_merge(const char *const *names, const char *const *bodies, const size_t *lens, int n, struct evbuffer *out,
                  size_t *dropped);

#endif
