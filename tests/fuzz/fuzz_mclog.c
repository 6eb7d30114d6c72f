/* libFuzzer target: arbitrary bytes as what memcached sends a watcher or a
 * metadump reader, through protocol/mclog.h. Byte 0 seeds the cut points;
 * the rest is the stream, parsed whole and again in pieces (1..64 bytes,
 * chosen from byte 0 and a xorshift on it).
 * Checks (a failure is abort()): used <= the bytes given; NEED_MORE takes
 * all of them; OK/ERROR take at least one byte and end just after a '\n'
 * unless they are LINE_TOO_LONG; the result is ERROR exactly when the kind
 * is ERROR, and err is set exactly then; kinds, statuses, errs in range;
 * key_len <= MC_KEY_MAX, the key and line NUL-terminated inside their
 * arrays; an item event has a key; the parser's line count equals the
 * events; no more events than '\n' bytes plus too-long lines; and the cut
 * stream gives exactly the same events as the whole one.
 * Build with -DSLABTAP_FUZZ=ON (clang). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mclog.h"

#define MAX_EVENTS 8192

static struct mclog_event whole_ev[MAX_EVENTS];
static enum mclog_result whole_res[MAX_EVENTS];

static void check_event(enum mclog_result r, const struct mclog_event *ev, const char *stream,
                        size_t end, size_t used)
{
    if ((unsigned)ev->kind >= MCLOG_EV__COUNT || (unsigned)ev->err >= MCLOG_ERR__COUNT ||
        (unsigned)ev->status >= MCLOG_STATUS__COUNT || (unsigned)ev->cmd >= MC_CMD_COUNT)
        abort();
    if ((r == MCLOG_ERROR) != (ev->kind == MCLOG_EV_ERROR))
        abort();
    if ((ev->err != MCLOG_ERR_NONE) != (ev->kind == MCLOG_EV_ERROR))
        abort();
    if (ev->key_len > MC_KEY_MAX || ev->key[ev->key_len] != '\0')
        abort();
    if (!memchr(ev->line, '\0', sizeof ev->line))
        abort();
    if (used == 0)
        abort();
    /* a line ends at its '\n'; only a too-long line may end elsewhere */
    if (ev->err != MCLOG_ERR_LINE_TOO_LONG && stream[end - 1] != '\n')
        abort();
    switch (ev->kind) {
    case MCLOG_EV_STORE:
        if (ev->status == MCLOG_STATUS_NONE || ev->key_len == 0)
            abort();
        break;
    case MCLOG_EV_EVICTION:
    case MCLOG_EV_DELETION:
    case MCLOG_EV_ITEM:
        if (ev->key_len == 0)
            abort();
        break;
    default:
        if (ev->key_len != 0)
            abort();
    }
}

static bool same(const struct mclog_event *a, const struct mclog_event *b)
{
    return a->kind == b->kind && a->err == b->err && a->ts_ns == b->ts_ns && a->gid == b->gid &&
           a->key_len == b->key_len && !memcmp(a->key, b->key, a->key_len) &&
           a->status == b->status && a->cmd == b->cmd && a->has_cmd == b->has_cmd &&
           a->ttl == b->ttl && a->la == b->la && a->exp == b->exp && a->clsid == b->clsid &&
           a->cfd == b->cfd && a->size == b->size && a->has_size == b->has_size &&
           a->fetched == b->fetched && a->cas == b->cas && a->flags == b->flags &&
           a->has_flags == b->has_flags && a->skipped == b->skipped && !strcmp(a->line, b->line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mclog_parser p;
    static struct mclog_event ev;

    if (size < 1)
        return 0;
    uint32_t seed = data[0] | 0x100u;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    size_t newlines = 0, too_long = 0, n_whole = 0;

    for (size_t i = 0; i < len; i++)
        newlines += in[i] == '\n';

    /* whole */
    mclog_init(&p);
    for (size_t at = 0; at < len;) {
        size_t used = (size_t)-1;
        enum mclog_result r = mclog_next(&p, in + at, len - at, &used, &ev);
        if (used > len - at)
            abort();
        if (r == MCLOG_NEED_MORE) {
            if (used != len - at)
                abort();
            break;
        }
        check_event(r, &ev, in, at + used, used);
        too_long += ev.err == MCLOG_ERR_LINE_TOO_LONG;
        if (n_whole < MAX_EVENTS) {
            whole_ev[n_whole] = ev;
            whole_res[n_whole] = r;
        }
        n_whole++;
        at += used;
    }
    if (p.lines != n_whole || n_whole > newlines + too_long)
        abort();

    /* in pieces */
    size_t n_cut = 0;
    mclog_init(&p);
    for (size_t start = 0; start < len;) {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        size_t piece = 1 + seed % 64;
        if (piece > len - start)
            piece = len - start;
        size_t at = start, end = start + piece;
        while (at < end) {
            size_t used = (size_t)-1;
            enum mclog_result r = mclog_next(&p, in + at, end - at, &used, &ev);
            if (used > end - at)
                abort();
            if (r == MCLOG_NEED_MORE) {
                if (used != end - at)
                    abort();
                break;
            }
            check_event(r, &ev, in, at + used, used);
            if (n_cut < MAX_EVENTS && n_cut < n_whole &&
                (whole_res[n_cut] != r || !same(&whole_ev[n_cut], &ev)))
                abort();
            n_cut++;
            at += used;
        }
        start = end;
    }
    if (n_cut != n_whole || p.lines != n_whole)
        abort();
    return 0;
}
