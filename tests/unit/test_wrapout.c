/* test_wrapout: where model's text lines break (cli/wrapout.h), byte for
 * byte: a line that fits is unchanged, a break falls on the last space
 * that fits (the spaces dropped) with the continuation indented by the
 * line's own indent and WRAPOUT_INDENT (at most half the width), a
 * slab_sizes list breaks after a '-', a word with nowhere to break is cut
 * at the width, width 0 wraps nothing, and a short buffer is cut like
 * snprintf's. The stream: wrapout_printf pieces that end mid-line, hold
 * several lines or a line longer than any first buffer come out as whole
 * wrapped lines, the unfinished one at wrapout_close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/wrapout.h"

static void check_wrap(const char *in, unsigned width, const char *want)
{
    char out[2048];
    size_t n = wrapout_wrap(in, strlen(in), width, out, sizeof out);
    CHECK(n == strlen(want) && !strcmp(out, want), "width %u: %s\n-- got --\n%s-- want --\n%s",
          width, in, out, want);
    /* every line within the width, nothing lost but the spaces at breaks */
    for (char *p = out, *nl; width && (nl = strchr(p, '\n')); p = nl + 1)
        CHECK((size_t)(nl - p) <= width, "a line of %zu > %u columns", (size_t)(nl - p), width);
}

static void test_table(void)
{
    static const struct {
        const char *in;
        unsigned width;
        const char *want;
    } cases[] = {
        { "", 20, "\n" },
        { "fits exactly 20 cols", 20, "fits exactly 20 cols\n" },
        { "no wrap at width 0 however long the line is", 0,
          "no wrap at width 0 however long the line is\n" },
        /* the last space that fits; continuation indented 4 */
        { "alpha beta gamma delta epsilon zeta", 20,
          "alpha beta gamma\n    delta epsilon\n    zeta\n" },
        /* the line's own indent, kept, plus 4 */
        { "  verify best -f/-n  measured waste 2.33 % ok", 24,
          "  verify best -f/-n\n      measured waste\n      2.33 % ok\n" },
        /* runs of spaces at a break are dropped, inside a piece kept */
        { "aa    bb    cc    dd    ee", 12, "aa    bb\n    cc    dd\n    ee\n" },
        /* a slab_sizes list: after the last '-' that fits */
        { "    -o slab_sizes=305-314-323-332-341-350-359-368-378-387", 30,
          "    -o slab_sizes=305-314-323-\n        332-341-350-359-368-\n        378-387\n" },
        /* a space early in the line does not leave it half empty */
        { "  x slab_sizes=1000-2000-3000-4000-5000-6000-7000", 40,
          "  x slab_sizes=1000-2000-3000-4000-5000-\n      6000-7000\n" },
        /* commas too */
        { "sizes: 100,200,300,400,500,600,700,800,900", 40,
          "sizes: 100,200,300,400,500,600,700,800,\n    900\n" },
        /* nowhere to break: cut at the width */
        { "abcdefghijklmnopqrstuvwxyz0123456789", 16,
          "abcdefghijklmnop\n    qrstuvwxyz01\n    23456789\n" },
        /* an indent deeper than half the width: continued at half */
        { "                                  deep indent", 40,
          "                                  deep\n                    indent\n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_wrap(cases[i].in, cases[i].width, cases[i].want);
}

static void test_cap(void)
{
    const char *in = "alpha beta gamma delta";
    char out[8];
    size_t n = wrapout_wrap(in, strlen(in), 12, out, sizeof out);
    CHECK_INT(n, strlen("alpha beta\n    gamma\n    delta\n"));
    CHECK_STR(out, "alpha b");
    CHECK_INT(wrapout_wrap(in, strlen(in), 12, out, 0), n);
}

/* The stream gives each whole line as wrapout_wrap does, whatever the
 * pieces it came in. */
static void test_stream(void)
{
    FILE *f = tmpfile();
    if (!f) {
        CHECK(0, "tmpfile");
        return;
    }
    static char text[8192], want[16384];
    char word[3001];
    memset(word, 'w', 3000);
    word[3000] = '\0';
    setenv("COLUMNS", "40", 1);
    wrapout_open(f);
    const char *pieces[] = { "alpha ", "beta gamma delta epsilon zeta eta theta iota kappa",
                             " lambda\none\n\ntwo ", word, "|\nend" };
    size_t tn = 0;
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        CHECK_INT(wrapout_printf("%s", pieces[i]), strlen(pieces[i]));
        tn += (size_t)snprintf(text + tn, sizeof text - tn, "%s", pieces[i]);
    }
    wrapout_close();
    unsetenv("COLUMNS");
    size_t wn = 0;
    for (const char *p = text, *end = text + tn; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        wn += wrapout_wrap(p, len, 40, want + wn, sizeof want - wn);
        p += len + 1;
    }
    CHECK(wn > tn + 4 * 75, "the long word was not cut (%zu bytes for %zu)", wn, tn);
    long size = ftell(f);
    char *got = size > 0 ? malloc((size_t)size) : NULL;
    rewind(f);
    size_t n = got ? fread(got, 1, (size_t)size, f) : 0;
    fclose(f);
    CHECK_MEM(got, n, want, wn, "the stream");
    free(got);
}

int main(void)
{
    test_table();
    test_cap();
    test_stream();
    return check_done("test_wrapout");
}
