/* svgchart: small, deterministic SVG charts -- grouped bars (one series is
 * a plain bar chart) and line charts with several series -- laid out as up
 * to SVGCHART_PANELS_MAX panels side by side under one title. Axes with
 * ticks, labels, a legend; the Okabe-Ito palette (readable with every
 * common colour-vision deficiency) plus a second cue per series (hatching
 * on bars, dash pattern and marker shape on lines), so colour is never the
 * only one.
 *
 * Every bar and every line point carries the text it was given as
 * data-value (and data-x / data-category, data-series), byte for byte: a
 * reader checks the picture against the CSV without parsing coordinates.
 *
 * Owns the chart structs, the layout and the SVG bytes. Must never do I/O,
 * allocate or keep global state: the same chart always renders to the same
 * bytes, into the caller's bounded buffer. */
#ifndef SLABTAP_EXPERIMENT_SVGCHART_H
#define SLABTAP_EXPERIMENT_SVGCHART_H

#include <stddef.h>

#define SVGCHART_PANELS_MAX 4
#define SVGCHART_SERIES_MAX 6   /* per panel: the palette has 6 strong colours */
#define SVGCHART_POINTS_MAX 512 /* per series (line charts) */
#define SVGCHART_CATS_MAX 64    /* per series (bar charts) */
#define SVGCHART_TEXT_MAX 96    /* titles, labels, series names (longer: cut) */
#define SVGCHART_VALUE_MAX 32   /* a point's x and y text (longer: refused) */
/* Values beyond this magnitude are refused (the axis arithmetic stays
 * finite). */
#define SVGCHART_ABS_MAX 1e300
/* Enough for any chart these limits allow. */
#define SVGCHART_OUT_MAX (4u * 1024 * 1024)

enum svgchart_kind { SVGCHART_BARS, SVGCHART_LINES };

struct svgchart_point {
    double x, y;                    /* x: 0 for bars (categories are text) */
    char xtext[SVGCHART_VALUE_MAX]; /* category (bars) or x value (lines) */
    char ytext[SVGCHART_VALUE_MAX]; /* the value as given: data-value */
};

struct svgchart_series {
    char name[SVGCHART_TEXT_MAX];
    enum svgchart_kind kind;
    size_t n;
    struct svgchart_point pt[SVGCHART_POINTS_MAX];
};

struct svgchart_panel {
    enum svgchart_kind kind;
    char title[SVGCHART_TEXT_MAX], xlabel[SVGCHART_TEXT_MAX], ylabel[SVGCHART_TEXT_MAX];
    size_t nseries;
    struct svgchart_series s[SVGCHART_SERIES_MAX];
};

struct svgchart {
    char title[SVGCHART_TEXT_MAX];
    size_t npanels;
    struct svgchart_panel p[SVGCHART_PANELS_MAX];
};

/* c may be uninitialised memory; title may be NULL. */
void svgchart_init(struct svgchart *c, const char *title);
/* A new panel, or NULL when there are SVGCHART_PANELS_MAX already. */
struct svgchart_panel *svgchart_add_panel(struct svgchart *c, enum svgchart_kind kind,
                                          const char *title, const char *xlabel,
                                          const char *ylabel);
/* A new series of p, or NULL when p has SVGCHART_SERIES_MAX. */
struct svgchart_series *svgchart_add_series(struct svgchart_panel *p, const char *name);
/* One point: x is the category (bars) or a number (lines), y a number;
 * both kept as text. 0, or -1 when the series is full, a text is longer
 * than SVGCHART_VALUE_MAX - 1, or a number is not finite, not a number
 * or beyond SVGCHART_ABS_MAX. */
int svgchart_add_point(struct svgchart_series *s, const char *x, const char *y);
/* The SVG document (UTF-8, ends with "\n") into out, NUL-terminated: its
 * length, or -1 when cap is too small (out is then undefined). */
long svgchart_render(const struct svgchart *c, char *out, size_t cap);

#endif
