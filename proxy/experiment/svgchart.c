/* svgchart: layout and SVG bytes of bar and line charts. */
#include "experiment/svgchart.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Okabe & Ito (2008), the six strongest on white (black and yellow left
 * out: black is the axes' colour, yellow is too pale for thin lines). */
static const char *const svg_colors[SVGCHART_SERIES_MAX] = {
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
};
static const char *const svg_dashes[SVGCHART_SERIES_MAX] = {
    NULL, "7 4", "2 3", "9 3 2 3", "4 2 1 2", "12 3",
};
/* hatching of bars: rotation of white stripes, series 0 solid */
static const int svg_hatch_angle[SVGCHART_SERIES_MAX] = { 0, 45, -45, 0, 90, 45 };

/* geometry, in px */
#define PANEL_W 480
#define TITLE_H 32
#define PLOT_TOP 36 /* panel title above the plot */
#define PLOT_H 220
#define PLOT_LEFT 72
#define PLOT_RIGHT 20
#define BELOW_PLOT 52 /* tick labels and x label */
#define LEGEND_ROW 18
#define TICKS_WANTED 5
#define CAT_LABELS_MAX 12
#define MARKERS_FULL_MAX 60 /* more points than this: smaller markers */
#define VALUE_LABELS_MAX 16 /* bars: value printed above each when this few */

struct svg_out {
    char *buf;
    size_t cap, len;
    bool full;
};

static void out_raw(struct svg_out *o, const char *s, size_t n)
{
    if (o->full || o->cap - o->len <= n) {
        o->full = true;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void out_f(struct svg_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_f(struct svg_out *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        o->full = true;
        return;
    }
    out_raw(o, tmp, (size_t)n);
}

/* Text content or attribute value: & < > " ' escaped, control bytes (not
 * allowed in XML 1.0) become blanks. */
static void out_esc(struct svg_out *o, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': out_raw(o, "&amp;", 5); break;
        case '<': out_raw(o, "&lt;", 4); break;
        case '>': out_raw(o, "&gt;", 4); break;
        case '"': out_raw(o, "&quot;", 6); break;
        case '\'': out_raw(o, "&#39;", 5); break;
        default:
            if (c < 0x20 || c == 0x7f)
                c = ' ';
            out_raw(o, (const char *)&c, 1);
        }
    }
}

static void text_copy(char *dst, const char *src)
{
    snprintf(dst, SVGCHART_TEXT_MAX, "%s", src ? src : "");
}

void svgchart_init(struct svgchart *c, const char *title)
{
    memset(c, 0, sizeof *c);
    text_copy(c->title, title);
}

struct svgchart_panel *svgchart_add_panel(struct svgchart *c, enum svgchart_kind kind,
                                          const char *title, const char *xlabel, const char *ylabel)
{
    if (c->npanels == SVGCHART_PANELS_MAX)
        return NULL;
    struct svgchart_panel *p = &c->p[c->npanels++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    text_copy(p->title, title);
    text_copy(p->xlabel, xlabel);
    text_copy(p->ylabel, ylabel);
    return p;
}

struct svgchart_series *svgchart_add_series(struct svgchart_panel *p, const char *name)
{
    if (p->nseries == SVGCHART_SERIES_MAX)
        return NULL;
    struct svgchart_series *s = &p->s[p->nseries++];
    s->n = 0;
    s->kind = p->kind;
    text_copy(s->name, name);
    return s;
}

static bool parse_number(const char *t, double *v)
{
    char *end;
    if (!t || !*t)
        return false;
    *v = strtod(t, &end);
    while (*end == ' ')
        end++;
    return *end == '\0' && isfinite(*v) && fabs(*v) <= SVGCHART_ABS_MAX;
}

int svgchart_add_point(struct svgchart_series *s, const char *x, const char *y)
{
    size_t max = s->kind == SVGCHART_BARS ? SVGCHART_CATS_MAX : SVGCHART_POINTS_MAX;
    if (s->n == max || !x || !y || strlen(x) >= SVGCHART_VALUE_MAX ||
        strlen(y) >= SVGCHART_VALUE_MAX)
        return -1;
    struct svgchart_point *p = &s->pt[s->n];
    if (!parse_number(y, &p->y))
        return -1;
    p->x = 0;
    if (s->kind == SVGCHART_LINES && !parse_number(x, &p->x))
        return -1;
    memcpy(p->xtext, x, strlen(x) + 1);
    memcpy(p->ytext, y, strlen(y) + 1);
    s->n++;
    return 0;
}

/* --- axes --------------------------------------------------------------------- */

struct svg_axis {
    double lo, hi, step;
    int nticks;
};

/* Round [lo, hi] out to a 1-2-5 step giving about TICKS_WANTED ticks. */
static void axis_nice(struct svg_axis *a, double lo, double hi)
{
    if (!(hi > lo)) {
        double pad = lo == 0 ? 1 : fabs(lo) / 2;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / TICKS_WANTED;
    double mag = pow(10, floor(log10(raw)));
    double r = raw / mag;
    double step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
    a->step = step;
    a->lo = floor(lo / step) * step;
    a->hi = ceil(hi / step) * step;
    if (!(a->hi > a->lo))
        a->hi = a->lo + step;
    a->nticks = (int)floor((a->hi - a->lo) / step + 0.5) + 1;
    if (a->nticks > 4 * TICKS_WANTED + 1)
        a->nticks = 4 * TICKS_WANTED + 1;
}

/* A tick label: k/M/G/T for thousands and up, exponent notation beyond;
 * as many decimals as the step needs. */
static void tick_label(char *buf, size_t len, double v, const struct svg_axis *a)
{
    double big = fmax(fabs(a->lo), fabs(a->hi));
    if (big >= 1e15 || (big > 0 && big < 1e-3)) {
        snprintf(buf, len, "%.3g", v);
        return;
    }
    static const struct {
        double unit;
        const char *suffix;
    } units[] = { { 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e4, "k" }, { 1, "" } };
    size_t u = 0;
    while (units[u].unit > 1 && big < units[u].unit)
        u++;
    double unit = units[u].unit == 1e4 ? 1e3 : units[u].unit;
    double st = a->step / unit;
    int dec = st >= 1 ? 0 : (int)ceil(-log10(st) - 1e-9);
    if (dec > 6)
        dec = 6;
    double shown = v / unit;
    if (fabs(shown) < 0.5 * pow(10, -dec)) {
        snprintf(buf, len, "0"); /* neither "-0" nor "0k" */
        return;
    }
    snprintf(buf, len, "%.*f%s", dec, shown, units[u].unit == 1 ? "" : units[u].suffix);
}

/* --- drawing ------------------------------------------------------------------- */

struct svg_plot {
    double x0, y0, w, h; /* the plot area */
    struct svg_axis ya, xa;
};

static double plot_y(const struct svg_plot *pl, double v)
{
    return pl->y0 + pl->h - (v - pl->ya.lo) / (pl->ya.hi - pl->ya.lo) * pl->h;
}

static double plot_x(const struct svg_plot *pl, double v)
{
    return pl->x0 + (v - pl->xa.lo) / (pl->xa.hi - pl->xa.lo) * pl->w;
}

static void draw_y_axis(struct svg_out *o, const struct svg_plot *pl, const char *label)
{
    char t[64];
    out_f(o, "<g class=\"y-axis\" font-size=\"11\" text-anchor=\"end\">\n");
    for (int i = 0; i < pl->ya.nticks; i++) {
        double v = pl->ya.lo + i * pl->ya.step;
        double y = plot_y(pl, v);
        tick_label(t, sizeof t, v, &pl->ya);
        out_f(o,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
              "<text x=\"%.1f\" y=\"%.1f\">",
              pl->x0, y, pl->x0 + pl->w, y, pl->x0 - 6, y + 4);
        out_esc(o, t);
        out_f(o, "</text>\n");
    }
    out_f(o, "</g>\n");
    out_f(o,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n"
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f "
          "%.1f)\">",
          pl->x0, pl->y0, pl->x0, pl->y0 + pl->h, pl->x0 - 56, pl->y0 + pl->h / 2, pl->x0 - 56,
          pl->y0 + pl->h / 2);
    out_esc(o, label);
    out_f(o, "</text>\n");
}

static void draw_x_label(struct svg_out *o, const struct svg_plot *pl, const char *label)
{
    double base = pl->ya.lo <= 0 && pl->ya.hi >= 0 ? plot_y(pl, 0) : pl->y0 + pl->h;
    out_f(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", pl->x0,
          base, pl->x0 + pl->w, base);
    out_f(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", pl->x0 + pl->w / 2,
          pl->y0 + pl->h + 40);
    out_esc(o, label);
    out_f(o, "</text>\n");
}

static void y_range(const struct svgchart_panel *p, double *lo, double *hi)
{
    *lo = 0, *hi = 0; /* the axis always shows 0 */
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->s[s].n; i++) {
            *lo = fmin(*lo, p->s[s].pt[i].y);
            *hi = fmax(*hi, p->s[s].pt[i].y);
        }
}

static size_t panel_points(const struct svgchart_panel *p)
{
    size_t n = 0;
    for (size_t s = 0; s < p->nseries; s++)
        n += p->s[s].n;
    return n;
}

static void draw_no_data(struct svg_out *o, const struct svg_plot *pl)
{
    out_f(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">no data</text>\n",
          pl->x0 + pl->w / 2, pl->y0 + pl->h / 2);
}

static void draw_bars(struct svg_out *o, const struct svgchart_panel *p, struct svg_plot *pl)
{
    const char *cats[SVGCHART_SERIES_MAX * SVGCHART_CATS_MAX];
    size_t ncat = 0;
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->s[s].n; i++) {
            size_t c = 0;
            while (c < ncat && strcmp(cats[c], p->s[s].pt[i].xtext))
                c++;
            if (c == ncat)
                cats[ncat++] = p->s[s].pt[i].xtext;
        }
    if (!ncat) {
        draw_no_data(o, pl);
        return;
    }
    double gw = pl->w / (double)ncat, bw = gw * 0.8 / (double)p->nseries;
    double base = plot_y(pl, 0);
    bool labels = ncat * p->nseries <= VALUE_LABELS_MAX;
    size_t every = (ncat + CAT_LABELS_MAX - 1) / CAT_LABELS_MAX;
    out_f(o, "<g class=\"x-axis\" font-size=\"11\" text-anchor=\"middle\">\n");
    for (size_t c = 0; c < ncat; c += every) {
        out_f(o, "<text x=\"%.1f\" y=\"%.1f\">", pl->x0 + gw * ((double)c + 0.5),
              pl->y0 + pl->h + 16);
        out_esc(o, cats[c]);
        out_f(o, "</text>\n");
    }
    out_f(o, "</g>\n");
    for (size_t s = 0; s < p->nseries; s++) {
        const struct svgchart_series *se = &p->s[s];
        out_f(o, "<g class=\"series\" data-series=\"");
        out_esc(o, se->name);
        if (s)
            out_f(o, "\" fill=\"url(#hatch%zu)\" stroke=\"%s\">\n", s, svg_colors[s]);
        else
            out_f(o, "\" fill=\"%s\" stroke=\"%s\">\n", svg_colors[s], svg_colors[s]);
        for (size_t i = 0; i < se->n; i++) {
            size_t c = 0;
            while (strcmp(cats[c], se->pt[i].xtext))
                c++;
            double x = pl->x0 + gw * (double)c + gw * 0.1 + bw * (double)s;
            double y = plot_y(pl, se->pt[i].y);
            double top = fmin(y, base), h = fabs(y - base);
            out_f(o, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x,
                  top, bw, h);
            out_f(o, " data-category=\"");
            out_esc(o, se->pt[i].xtext);
            out_f(o, "\" data-value=\"");
            out_esc(o, se->pt[i].ytext);
            out_f(o, "\"><title>");
            out_esc(o, se->name);
            out_f(o, ", ");
            out_esc(o, se->pt[i].xtext);
            out_f(o, ": ");
            out_esc(o, se->pt[i].ytext);
            out_f(o, "</title></rect>\n");
            if (labels) {
                double ty = se->pt[i].y >= 0 ? top - 4 : top + h + 12;
                out_f(o,
                      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
                      "fill=\"#000\" stroke=\"none\">",
                      x + bw / 2, ty);
                out_esc(o, se->pt[i].ytext);
                out_f(o, "</text>\n");
            }
        }
        out_f(o, "</g>\n");
    }
}

/* A marker of shape s centred on (x, y), radius r, as path data. */
static void marker_path(struct svg_out *o, size_t s, double x, double y, double r)
{
    switch (s % SVGCHART_SERIES_MAX) {
    case 0:
        out_f(o, "M%.1f %.1fa%.1f %.1f 0 1 0 %.1f 0a%.1f %.1f 0 1 0 %.1f 0Z", x - r, y, r, r, 2 * r,
              r, r, -2 * r);
        break;
    case 1: out_f(o, "M%.1f %.1fh%.1fv%.1fh%.1fZ", x - r, y - r, 2 * r, 2 * r, -2 * r); break;
    case 2:
        out_f(o, "M%.1f %.1fL%.1f %.1fL%.1f %.1fZ", x, y - r * 1.2, x + r * 1.1, y + r * 0.8,
              x - r * 1.1, y + r * 0.8);
        break;
    case 3:
        out_f(o, "M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ", x, y - r * 1.3, x + r * 1.3, y, x,
              y + r * 1.3, x - r * 1.3, y);
        break;
    case 4:
        out_f(o, "M%.1f %.1fL%.1f %.1fL%.1f %.1fZ", x, y + r * 1.2, x + r * 1.1, y - r * 0.8,
              x - r * 1.1, y - r * 0.8);
        break;
    default:
        out_f(o, "M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f", x - r, y - r, x + r, y + r, x - r,
              y + r, x + r, y - r);
    }
}

static void stroke_style(struct svg_out *o, size_t s)
{
    out_f(o, " stroke=\"%s\" stroke-width=\"2\"", svg_colors[s]);
    if (svg_dashes[s])
        out_f(o, " stroke-dasharray=\"%s\"", svg_dashes[s]);
}

static void draw_lines(struct svg_out *o, const struct svgchart_panel *p, struct svg_plot *pl)
{
    char t[64];
    if (!panel_points(p)) {
        draw_no_data(o, pl);
        return;
    }
    out_f(o, "<g class=\"x-axis\" font-size=\"11\" text-anchor=\"middle\">\n");
    for (int i = 0; i < pl->xa.nticks; i++) {
        double v = pl->xa.lo + i * pl->xa.step, x = plot_x(pl, v);
        tick_label(t, sizeof t, v, &pl->xa);
        out_f(o,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
              "<text x=\"%.1f\" y=\"%.1f\">",
              x, pl->y0 + pl->h, x, pl->y0 + pl->h + 4, x, pl->y0 + pl->h + 16);
        out_esc(o, t);
        out_f(o, "</text>\n");
    }
    out_f(o, "</g>\n");
    for (size_t s = 0; s < p->nseries; s++) {
        const struct svgchart_series *se = &p->s[s];
        double r = se->n > MARKERS_FULL_MAX ? 1.5 : 3.5;
        out_f(o, "<g class=\"series\" data-series=\"");
        out_esc(o, se->name);
        out_f(o, "\">\n");
        if (se->n > 1) {
            out_f(o, "<path fill=\"none\"");
            stroke_style(o, s);
            out_f(o, " d=\"");
            for (size_t i = 0; i < se->n; i++)
                out_f(o, "%s%.1f %.1f", i ? "L" : "M", plot_x(pl, se->pt[i].x),
                      plot_y(pl, se->pt[i].y));
            out_f(o, "\"/>\n");
        }
        for (size_t i = 0; i < se->n; i++) {
            out_f(o, "<path class=\"point\" fill=\"%s\" stroke=\"%s\" d=\"", svg_colors[s],
                  svg_colors[s]);
            marker_path(o, s, plot_x(pl, se->pt[i].x), plot_y(pl, se->pt[i].y), r);
            out_f(o, "\" data-x=\"");
            out_esc(o, se->pt[i].xtext);
            out_f(o, "\" data-value=\"");
            out_esc(o, se->pt[i].ytext);
            out_f(o, "\"/>\n");
        }
        out_f(o, "</g>\n");
    }
}

static void draw_legend(struct svg_out *o, const struct svgchart_panel *p, double x, double y)
{
    out_f(o, "<g class=\"legend\" font-size=\"12\">\n");
    for (size_t s = 0; s < p->nseries; s++, y += LEGEND_ROW) {
        if (p->kind == SVGCHART_BARS) {
            out_f(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"12\"", x, y - 10);
            if (s)
                out_f(o, " fill=\"url(#hatch%zu)\"", s);
            else
                out_f(o, " fill=\"%s\"", svg_colors[s]);
            out_f(o, " stroke=\"%s\"/>", svg_colors[s]);
        } else {
            out_f(o, "<path fill=\"none\"");
            stroke_style(o, s);
            out_f(o, " d=\"M%.1f %.1fh28\"/><path fill=\"%s\" stroke=\"%s\" d=\"", x, y - 4,
                  svg_colors[s], svg_colors[s]);
            marker_path(o, s, x + 14, y - 4, 3.5);
            out_f(o, "\"/>");
        }
        out_f(o, "<text x=\"%.1f\" y=\"%.1f\">", x + 36, y);
        out_esc(o, p->s[s].name);
        out_f(o, "</text>\n");
    }
    out_f(o, "</g>\n");
}

static void draw_panel(struct svg_out *o, const struct svgchart_panel *p, double px, double py)
{
    struct svg_plot pl = { .x0 = px + PLOT_LEFT,
                           .y0 = py + PLOT_TOP,
                           .w = PANEL_W - PLOT_LEFT - PLOT_RIGHT,
                           .h = PLOT_H };
    double lo, hi;
    y_range(p, &lo, &hi);
    axis_nice(&pl.ya, lo, hi);
    if (p->kind == SVGCHART_LINES) {
        bool any = false;
        for (size_t s = 0; s < p->nseries; s++)
            for (size_t i = 0; i < p->s[s].n; i++) {
                double x = p->s[s].pt[i].x;
                lo = any ? fmin(lo, x) : x;
                hi = any ? fmax(hi, x) : x;
                any = true;
            }
        if (!any)
            lo = 0, hi = 1;
        axis_nice(&pl.xa, lo, hi);
    }
    out_f(o, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">", pl.x0,
          py + 20);
    out_esc(o, p->title);
    out_f(o, "</text>\n");
    draw_y_axis(o, &pl, p->ylabel);
    if (p->kind == SVGCHART_BARS)
        draw_bars(o, p, &pl);
    else
        draw_lines(o, p, &pl);
    draw_x_label(o, &pl, p->xlabel);
    draw_legend(o, p, pl.x0, pl.y0 + pl.h + BELOW_PLOT + 12);
    out_f(o, "</g>\n");
}

long svgchart_render(const struct svgchart *c, char *out, size_t cap)
{
    struct svg_out o = { .buf = out, .cap = cap };
    size_t legend = 0, hatches = 0;
    size_t npanels = c->npanels ? c->npanels : 1;
    for (size_t i = 0; i < c->npanels; i++) {
        if (c->p[i].nseries > legend)
            legend = c->p[i].nseries;
        if (c->p[i].kind == SVGCHART_BARS && c->p[i].nseries > hatches)
            hatches = c->p[i].nseries;
    }
    double top = c->title[0] ? TITLE_H : 0;
    double w = (double)(PANEL_W * npanels);
    double h = top + PLOT_TOP + PLOT_H + BELOW_PLOT + 8 + (double)(LEGEND_ROW * legend) + 8;
    if (!cap)
        return -1;
    out[0] = '\0';
    out_f(&o,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\" "
          "role=\"img\">\n<title>",
          w, h, w, h);
    out_esc(&o, c->title);
    out_f(&o, "</title>\n<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", w, h);
    if (hatches > 1) {
        out_f(&o, "<defs>\n");
        for (size_t s = 1; s < hatches; s++) {
            out_f(&o,
                  "<pattern id=\"hatch%zu\" width=\"6\" height=\"6\" "
                  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(%d)\">"
                  "<rect width=\"6\" height=\"6\" fill=\"%s\"/>"
                  "<rect width=\"2\" height=\"6\" fill=\"#fff\" fill-opacity=\"0.7\"/>",
                  s, svg_hatch_angle[s], svg_colors[s]);
            if (s == 5)
                out_f(&o, "<rect width=\"6\" height=\"2\" fill=\"#fff\" fill-opacity=\"0.7\"/>");
            out_f(&o, "</pattern>\n");
        }
        out_f(&o, "</defs>\n");
    }
    if (c->title[0]) {
        out_f(&o, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", 12.0);
        out_esc(&o, c->title);
        out_f(&o, "</text>\n");
    }
    for (size_t i = 0; i < c->npanels; i++)
        draw_panel(&o, &c->p[i], (double)(PANEL_W * i), top);
    out_f(&o, "</svg>\n");
    return o.full ? -1 : (long)o.len;
}
