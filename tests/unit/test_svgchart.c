/* test_svgchart: svgchart's bytes -- exact for small charts (empty, one
 * bar, one line point), and the properties that must hold for any chart:
 * same data, same bytes; every value as given in data-value; labels
 * escaped; negative and huge values on the axis; refused input; bounded
 * output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "experiment/svgchart.h"

static char out[SVGCHART_OUT_MAX];

static long render(const struct svgchart *c)
{
    return svgchart_render(c, out, sizeof out);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_empty(struct svgchart *c)
{
    static const char want[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"324\" "
        "viewBox=\"0 0 480 324\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n"
        "<title></title>\n"
        "<rect width=\"480\" height=\"324\" fill=\"#fff\"/>\n"
        "</svg>\n";
    svgchart_init(c, NULL);
    long n = render(c);
    CHECK_MEM(out, (size_t)(n < 0 ? 0 : n), want, sizeof want - 1, "no panels");

    /* a panel without series, and one with an empty series: "no data" */
    svgchart_init(c, "empty");
    svgchart_add_panel(c, SVGCHART_BARS, "bars", "x", "y");
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_LINES, "lines", "x", "y");
    svgchart_add_series(p, "none");
    n = render(c);
    CHECK(n > 0, "empty panels render");
    CHECK_INT(count(out, ">no data</text>"), 2);
    CHECK_INT(count(out, "data-value="), 0);
}

static void test_one_bar(struct svgchart *c)
{
    static const char want[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"374\" "
        "viewBox=\"0 0 480 374\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n"
        "<title>T</title>\n"
        "<rect width=\"480\" height=\"374\" fill=\"#fff\"/>\n"
        "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">T</text>\n"
        "<g class=\"panel\">\n"
        "<text x=\"72.0\" y=\"52.0\" font-weight=\"bold\">P</text>\n"
        "<g class=\"y-axis\" font-size=\"11\" text-anchor=\"end\">\n"
        "<line x1=\"72.0\" y1=\"288.0\" x2=\"460.0\" y2=\"288.0\" stroke=\"#ddd\"/>"
        "<text x=\"66.0\" y=\"292.0\">0</text>\n"
        "<line x1=\"72.0\" y1=\"233.0\" x2=\"460.0\" y2=\"233.0\" stroke=\"#ddd\"/>"
        "<text x=\"66.0\" y=\"237.0\">0.5</text>\n"
        "<line x1=\"72.0\" y1=\"178.0\" x2=\"460.0\" y2=\"178.0\" stroke=\"#ddd\"/>"
        "<text x=\"66.0\" y=\"182.0\">1.0</text>\n"
        "<line x1=\"72.0\" y1=\"123.0\" x2=\"460.0\" y2=\"123.0\" stroke=\"#ddd\"/>"
        "<text x=\"66.0\" y=\"127.0\">1.5</text>\n"
        "<line x1=\"72.0\" y1=\"68.0\" x2=\"460.0\" y2=\"68.0\" stroke=\"#ddd\"/>"
        "<text x=\"66.0\" y=\"72.0\">2.0</text>\n"
        "</g>\n"
        "<line x1=\"72.0\" y1=\"68.0\" x2=\"72.0\" y2=\"288.0\" stroke=\"#000\"/>\n"
        "<text x=\"16.0\" y=\"178.0\" text-anchor=\"middle\" transform=\"rotate(-90 16.0 "
        "178.0)\">Y</text>\n"
        "<g class=\"x-axis\" font-size=\"11\" text-anchor=\"middle\">\n"
        "<text x=\"266.0\" y=\"304.0\">a</text>\n"
        "</g>\n"
        "<g class=\"series\" data-series=\"s\" fill=\"#0072B2\" stroke=\"#0072B2\">\n"
        "<rect class=\"bar\" x=\"110.8\" y=\"68.0\" width=\"310.4\" height=\"220.0\" "
        "data-category=\"a\" data-value=\"2\"><title>s, a: 2</title></rect>\n"
        "<text x=\"266.0\" y=\"64.0\" font-size=\"10\" text-anchor=\"middle\" fill=\"#000\" "
        "stroke=\"none\">2</text>\n"
        "</g>\n"
        "<line x1=\"72.0\" y1=\"288.0\" x2=\"460.0\" y2=\"288.0\" stroke=\"#000\"/>\n"
        "<text x=\"266.0\" y=\"328.0\" text-anchor=\"middle\">X</text>\n"
        "<g class=\"legend\" font-size=\"12\">\n"
        "<rect x=\"72.0\" y=\"342.0\" width=\"22\" height=\"12\" fill=\"#0072B2\" "
        "stroke=\"#0072B2\"/><text x=\"108.0\" y=\"352.0\">s</text>\n"
        "</g>\n"
        "</g>\n"
        "</svg>\n";
    svgchart_init(c, "T");
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_BARS, "P", "X", "Y");
    struct svgchart_series *s = svgchart_add_series(p, "s");
    CHECK_INT(svgchart_add_point(s, "a", "2"), 0);
    long n = render(c);
    CHECK_MEM(out, (size_t)(n < 0 ? 0 : n), want, sizeof want - 1, "one bar");
}

static void test_one_point(struct svgchart *c)
{
    svgchart_init(c, "one point");
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_LINES, "P", "X", "Y");
    struct svgchart_series *s = svgchart_add_series(p, "only");
    CHECK_INT(svgchart_add_point(s, "3.5", "7"), 0);
    long n = render(c);
    CHECK(n > 0, "one point renders");
    /* no line for one point (the legend's sample line only), one marker
     * carrying its texts */
    CHECK_INT(count(out, "stroke-width=\"2\" d=\"M"), 1);
    CHECK_INT(count(out, "h28\"/>"), 1);
    CHECK_INT(count(out, "class=\"point\""), 1);
    CHECK(strstr(out, "data-x=\"3.5\" data-value=\"7\"") != NULL, "point texts: %s", out);
    /* the x axis is widened around the lone x value */
    CHECK(strstr(out, ">3</text>") && strstr(out, ">4</text>"), "x ticks around 3.5");
}

static void test_escaping(struct svgchart *c)
{
    svgchart_init(c, "a<b>&\"c\" 'd'");
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_BARS, "<p>", "x&y", "\"y\"");
    struct svgchart_series *s = svgchart_add_series(p, "s<1>\x01");
    CHECK_INT(svgchart_add_point(s, "<cat&>", "1"), 0);
    long n = render(c);
    CHECK(n > 0, "renders");
    CHECK(strstr(out, "<title>a&lt;b&gt;&amp;&quot;c&quot; &#39;d&#39;</title>") != NULL,
          "title escaped");
    CHECK(strstr(out, "data-series=\"s&lt;1&gt; \"") != NULL, "series escaped, control byte");
    CHECK(strstr(out, "data-category=\"&lt;cat&amp;&gt;\"") != NULL, "category escaped");
    CHECK(!strstr(out, "<p>") && !strstr(out, "<cat") && !strstr(out, "\x01"), "no raw text");
    /* long labels are cut to the bound, never overflow */
    char longname[400];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    svgchart_init(c, longname);
    CHECK_INT(strlen(c->title), SVGCHART_TEXT_MAX - 1);
}

static void test_values(struct svgchart *c)
{
    svgchart_init(c, NULL);
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_BARS, "P", "X", "Y");
    struct svgchart_series *s = svgchart_add_series(p, "s");
    CHECK_INT(svgchart_add_point(s, "a", "abc"), -1);
    CHECK_INT(svgchart_add_point(s, "a", ""), -1);
    CHECK_INT(svgchart_add_point(s, "a", "nan"), -1);
    CHECK_INT(svgchart_add_point(s, "a", "inf"), -1);
    CHECK_INT(svgchart_add_point(s, "a", "1e301"), -1);
    CHECK_INT(svgchart_add_point(s, "a", "12345678901234567890123456789012345"), -1);
    CHECK_INT(s->n, 0);
    CHECK_INT(svgchart_add_point(s, "neg", "-250"), 0);
    CHECK_INT(svgchart_add_point(s, "pos", "750"), 0);
    long n = render(c);
    CHECK(n > 0, "negative renders");
    /* the axis runs from -400 to 800 here: the baseline (0) is inside, the
     * negative bar hangs below it */
    CHECK(strstr(out, ">-400</text>") && strstr(out, ">800</text>"), "ticks -400..800");
    CHECK(strstr(out, "data-value=\"-250\"") && strstr(out, "data-value=\"750\""), "values");

    svgchart_init(c, NULL);
    p = svgchart_add_panel(c, SVGCHART_LINES, "P", "X", "Y");
    s = svgchart_add_series(p, "huge");
    CHECK_INT(svgchart_add_point(s, "0", "1e300"), 0);
    CHECK_INT(svgchart_add_point(s, "1", "-1e300"), 0);
    CHECK_INT(svgchart_add_point(s, "x", "1"), -1); /* lines need a numeric x */
    n = render(c);
    CHECK(n > 0, "huge renders");
    CHECK(!strstr(out, "nan") && !strstr(out, "inf"), "finite coordinates");
    CHECK(strstr(out, "e+300") != NULL, "huge ticks in exponent notation");

    /* series and panels are bounded */
    svgchart_init(c, NULL);
    for (int i = 0; i < SVGCHART_PANELS_MAX; i++)
        CHECK_TRUE(svgchart_add_panel(c, SVGCHART_BARS, "", "", "") != NULL);
    CHECK_TRUE(svgchart_add_panel(c, SVGCHART_BARS, "", "", "") == NULL);
    for (int i = 0; i < SVGCHART_SERIES_MAX; i++)
        CHECK_TRUE(svgchart_add_series(&c->p[0], "s") != NULL);
    CHECK_TRUE(svgchart_add_series(&c->p[0], "s") == NULL);
    for (int i = 0; i < SVGCHART_CATS_MAX; i++) {
        char x[16];
        snprintf(x, sizeof x, "c%d", i);
        svgchart_add_point(&c->p[0].s[0], x, "1");
    }
    CHECK_INT(svgchart_add_point(&c->p[0].s[0], "more", "1"), -1);
}

/* A full chart: deterministic, every value present, a small buffer refused. */
static void test_full(struct svgchart *c)
{
    svgchart_init(c, "full");
    struct svgchart_panel *p = svgchart_add_panel(c, SVGCHART_LINES, "L", "s", "v");
    for (int k = 0; k < SVGCHART_SERIES_MAX; k++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", k);
        struct svgchart_series *s = svgchart_add_series(p, name);
        for (int i = 0; i < SVGCHART_POINTS_MAX; i++) {
            char x[32], y[32];
            snprintf(x, sizeof x, "%d.25", i);
            snprintf(y, sizeof y, "%d", (i * 7919 + k * 104729) % 100003 - 50000);
            CHECK_INT(svgchart_add_point(s, x, y), 0);
        }
    }
    for (int b = 0; b < SVGCHART_PANELS_MAX - 1; b++) {
        struct svgchart_panel *q = svgchart_add_panel(c, SVGCHART_BARS, "B", "c", "v");
        for (int k = 0; k < SVGCHART_SERIES_MAX; k++) {
            struct svgchart_series *s = svgchart_add_series(q, "bars");
            for (int i = 0; i < SVGCHART_CATS_MAX; i++) {
                char x[32], y[32];
                snprintf(x, sizeof x, "cat%d", i);
                snprintf(y, sizeof y, "%d", i * k);
                svgchart_add_point(s, x, y);
            }
        }
    }
    long n = render(c);
    CHECK(n > 0 && (size_t)n < SVGCHART_OUT_MAX, "the largest chart fits (%ld)", n);
    char *copy = malloc((size_t)n + 1);
    memcpy(copy, out, (size_t)n + 1);
    long m = render(c);
    CHECK_MEM(out, (size_t)(m < 0 ? 0 : m), copy, (size_t)n, "same data, same bytes");
    CHECK_INT(count(out, "data-value="),
              SVGCHART_SERIES_MAX * SVGCHART_POINTS_MAX +
                  (SVGCHART_PANELS_MAX - 1) * SVGCHART_SERIES_MAX * SVGCHART_CATS_MAX);
    /* every buffer shorter than the document (and its NUL) is refused */
    CHECK_INT(svgchart_render(c, out, (size_t)n), -1);
    CHECK_INT(svgchart_render(c, out, 1), -1);
    CHECK_INT(svgchart_render(c, out, 0), -1);
    CHECK_INT(svgchart_render(c, out, (size_t)n + 1), n);
    CHECK_INT(strlen(out), n);
    /* the palette and the second cue: dash patterns and hatching */
    CHECK(strstr(out, "#0072B2") && strstr(out, "#D55E00") && strstr(out, "#009E73"),
          "Okabe-Ito colours");
    CHECK(strstr(out, "stroke-dasharray=\"7 4\"") != NULL, "dashes");
    CHECK(strstr(out, "url(#hatch1)") && strstr(out, "<pattern id=\"hatch5\""), "hatching");
    free(copy);
}

int main(void)
{
    struct svgchart *c = malloc(sizeof *c);
    test_empty(c);
    test_one_bar(c);
    test_one_point(c);
    test_escaping(c);
    test_values(c);
    test_full(c);
    free(c);
    return check_done("test_svgchart");
}
