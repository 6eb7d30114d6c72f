/* wrapout: the text output of `slabtap model`, each line wrapped at the
 * terminal's width -- the candidates' flags (a slab_sizes list of 62
 * sizes is 450 characters) and the verify lines stay readable.
 *
 * Owns: where a line breaks (wrapout_wrap, pure) and the stdout lines of
 * the model commands between wrapout_open and wrapout_close: the width
 * (COLUMNS when set, 0 for no wrapping; else the terminal's when stdout is
 * one; else WRAPOUT_DEFAULT_WIDTH), and the unfinished line kept until its
 * '\n' comes.
 * Must never: wrap JSON (callers write it to stdout themselves, between
 * whole lines), change a line that fits, or lose a byte (a break eats only
 * the spaces it falls on). ASCII: a byte is a column.
 */
#ifndef SLABTAP_CLI_WRAPOUT_H
#define SLABTAP_CLI_WRAPOUT_H

#include <stddef.h>
#include <stdio.h>

/* Not a terminal and no COLUMNS: lines of at most this many columns. */
#define WRAPOUT_DEFAULT_WIDTH 100
/* A narrower terminal is wrapped at this width anyway. */
#define WRAPOUT_MIN_WIDTH 40
/* Continuation lines: the line's own indent and this many spaces more. */
#define WRAPOUT_INDENT 4

/* Pure: line (len bytes, no '\n') as lines of at most width columns, each
 * ending in '\n', into out (NUL-terminated, cut at cap); returns the
 * length the whole text needs, as snprintf. A break goes at the last
 * space that fits (the spaces there are dropped); in a word wider than
 * the room, after the last '-' or ',' that fits (a slab_sizes list); else
 * at the width. Width 0: the line unchanged. */
size_t wrapout_wrap(const char *line, size_t len, unsigned width, char *out, size_t cap);

/* From now on wrapout_printf writes to f, wrapped at the width of the
 * rule above (COLUMNS, the terminal, WRAPOUT_DEFAULT_WIDTH). */
void wrapout_open(FILE *f);
/* The unfinished line (if any) written; back to no wrapping. */
void wrapout_close(void);
/* printf to the stream of wrapout_open (stdout, unwrapped, before it). */
int wrapout_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
