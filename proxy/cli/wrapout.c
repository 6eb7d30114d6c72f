/* wrapout: model's text output wrapped at the terminal's width (see
 * wrapout.h for the contract). */
#include "cli/wrapout.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/buf.h"

/* out[0..cap) as snprintf fills it: *n counts every byte asked for. */
static void wrapout_put(char *out, size_t cap, size_t *n, const char *p, size_t len)
{
    if (*n < cap) {
        size_t room = cap - *n;
        memcpy(out + *n, p, len < room ? len : room);
    }
    *n += len;
}

static void wrapout_spaces(char *out, size_t cap, size_t *n, size_t k)
{
    static const char sp[] = "                                ";
    while (k > 0) {
        size_t m = k < sizeof sp - 1 ? k : sizeof sp - 1;
        wrapout_put(out, cap, n, sp, m);
        k -= m;
    }
}

/* Where the piece of p[0..len) that may take room columns ends: *next is
 * where the next piece starts (the spaces at the break skipped). lead:
 * columns at the start that are indentation (never a break). */
static size_t wrapout_break(const char *p, size_t len, size_t room, size_t lead, size_t *next)
{
    size_t i, space = 0, space_next = 0, word = 0;
    if (len <= room) {
        *next = len;
        return len;
    }
    /* the last space that fits: the piece ends before it */
    for (i = room; i > lead && !space; i--)
        if (p[i] == ' ') {
            size_t end = i, k = i;
            while (end > lead && p[end - 1] == ' ')
                end--;
            while (k < len && p[k] == ' ')
                k++;
            if (end > lead) {
                space = end;
                space_next = k;
            }
        }
    /* in a word: after the last '-' or ',' that fits */
    for (i = room; i > lead + 1 && !word; i--)
        if (p[i - 1] == '-' || p[i - 1] == ',')
            word = i;
    /* a space, unless it leaves the line less than half full and a long
     * list (slab_sizes=a-b-c...) breaks later */
    if (space && !(space < room / 2 && word > space)) {
        *next = space_next;
        return space;
    }
    *next = word ? word : room;
    return *next;
}

size_t wrapout_wrap(const char *line, size_t len, unsigned width, char *out, size_t cap)
{
    size_t n = 0, indent = 0, pos = 0, lead, room = width;
    while (indent < len && line[indent] == ' ')
        indent++;
    /* continuation lines: deeper than the first, but never past half
     * the width (room is left for the text) */
    size_t cont = indent + WRAPOUT_INDENT;
    if (cont > width / 2)
        cont = width / 2;
    if (width == 0)
        room = (size_t)-1;
    lead = indent;
    for (bool first = true;; first = false) {
        size_t next, end = wrapout_break(line + pos, len - pos, room, lead, &next);
        if (!first)
            wrapout_spaces(out, cap, &n, cont);
        wrapout_put(out, cap, &n, line + pos, end);
        wrapout_put(out, cap, &n, "\n", 1);
        pos += next;
        if (pos >= len)
            break;
        room = width - cont;
        lead = 0;
    }
    if (cap > 0)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

/* --- the stream ----------------------------------------------------------- */

static FILE *wrapout_f;
static unsigned wrapout_width;
static struct buf wrapout_line; /* the unfinished line */

void wrapout_open(FILE *f)
{
    const char *env = getenv("COLUMNS");
    struct winsize ws;
    char *end;
    wrapout_f = f;
    buf_init(&wrapout_line, BUF_UNBOUNDED);
    wrapout_width = WRAPOUT_DEFAULT_WIDTH;
    if (env && *env) {
        unsigned long v = strtoul(env, &end, 10);
        if (*end == '\0' && v <= 100000)
            wrapout_width = (unsigned)v;
    } else if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        wrapout_width = ws.ws_col;
    }
    if (wrapout_width && wrapout_width < WRAPOUT_MIN_WIDTH)
        wrapout_width = WRAPOUT_MIN_WIDTH;
}

/* One whole line (without its '\n'), wrapped. */
static void wrapout_emit(const char *p, size_t len)
{
    char small[1024];
    size_t need = wrapout_wrap(p, len, wrapout_width, small, sizeof small);
    if (need < sizeof small) {
        fwrite(small, 1, need, wrapout_f);
        return;
    }
    char *big = malloc(need + 1);
    if (!big) { /* unwrapped rather than lost */
        fwrite(p, 1, len, wrapout_f);
        fputc('\n', wrapout_f);
        return;
    }
    wrapout_wrap(p, len, wrapout_width, big, need + 1);
    fwrite(big, 1, need, wrapout_f);
    free(big);
}

void wrapout_close(void)
{
    if (wrapout_f && wrapout_line.len)
        wrapout_emit(wrapout_line.data, wrapout_line.len);
    if (wrapout_f)
        fflush(wrapout_f);
    buf_free(&wrapout_line);
    wrapout_f = NULL;
}

int wrapout_printf(const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    if (!wrapout_f) { /* not opened: printf */
        n = vprintf(fmt, ap);
        va_end(ap);
        return n;
    }
    size_t from = wrapout_line.len; /* the unfinished line has no '\n' */
    buf_vprintf(&wrapout_line, fmt, ap);
    va_end(ap);
    if (wrapout_line.failed) { /* nothing appended: what waited goes out as it is */
        if (wrapout_line.len)
            wrapout_emit(wrapout_line.data, wrapout_line.len);
        buf_reset(&wrapout_line);
        return -1;
    }
    n = (int)(wrapout_line.len - from);
    /* whole lines go out as they end; the rest waits for its '\n' */
    const char *line = wrapout_line.data, *end = line + wrapout_line.len, *nl;
    for (const char *p = line + from; (nl = memchr(p, '\n', (size_t)(end - p))); p = line) {
        wrapout_emit(line, (size_t)(nl - line));
        line = nl + 1;
    }
    buf_consume(&wrapout_line, (size_t)(line - wrapout_line.data));
    return n;
}
