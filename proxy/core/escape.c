/* escape: bounded or streamed output of escaped text, and JSON string
 * escaping (valid JSON for any bytes, binary memcached keys included).
 * Must never allocate or keep state between calls. */
#include "core/escape.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void esc_out_init_bounded(struct esc_out *o, char *dst, size_t cap)
{
    memset(o, 0, sizeof *o);
    o->dst = dst;
    o->cap = cap;
}

void esc_out_init_sink(struct esc_out *o, esc_write_fn write, void *ctx)
{
    memset(o, 0, sizeof *o);
    o->write = write;
    o->ctx = ctx;
}

/* whole: the piece is an escape sequence or a UTF-8 character, so a
 * bounded buffer takes all of it or none. */
void esc_out_put(struct esc_out *o, const char *p, size_t n, int whole)
{
    if (o->write != NULL) {
        if (!o->failed && n > 0 && o->write(o->ctx, p, n) != 0)
            o->failed = 1;
    } else if (!o->full && o->cap > 0) {
        size_t room = o->cap - 1 - o->used;
        size_t take = n <= room ? n : (whole ? 0 : room);

        memcpy(o->dst + o->used, p, take);
        o->used += take;
        o->full = take < n;
    }
    o->len += n;
}

size_t esc_out_finish(struct esc_out *o)
{
    if (o->write == NULL && o->cap > 0)
        o->dst[o->used] = '\0';
    return o->len;
}

/* ---- JSON ---------------------------------------------------------------- */

/* The second byte's range depends on the lead byte: that is what excludes
 * overlongs (E0, F0), surrogates (ED) and code points above U+10FFFF (F4). */
size_t esc_utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char b = s[0], lo = 0x80, hi = 0xBF;
    size_t need = 0;

    if (b >= 0x01 && b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        need = 2;
    else if (b >= 0xE0 && b <= 0xEF)
        need = 3;
    else if (b >= 0xF0 && b <= 0xF4)
        need = 4;
    if (b == 0xE0)
        lo = 0xA0;
    else if (b == 0xED)
        hi = 0x9F;
    else if (b == 0xF0)
        lo = 0x90;
    else if (b == 0xF4)
        hi = 0x8F;
    if (need == 0 || avail < need || s[1] < lo || s[1] > hi)
        need = 0;
    for (size_t i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            need = 0;
    return need;
}

/* Writes the escape for one ASCII byte into esc (>= 7 bytes); 0 if the byte
 * goes out as is. Control bytes as \u00XX only when !short_ok. */
static size_t json_escape_byte(unsigned char b, char *esc, bool short_ok)
{
    static const char short_esc[0x20] = {
        ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
    };
    size_t n = 0;

    if (b == '"' || b == '\\') {
        esc[0] = '\\';
        esc[1] = (char)b;
        n = 2;
    } else if (b < 0x20 && short_ok && short_esc[b] != 0) {
        esc[0] = '\\';
        esc[1] = short_esc[b];
        n = 2;
    } else if (b < 0x20) {
        n = (size_t)snprintf(esc, 7, "\\u%04x", b);
    }
    return n;
}

static void json_escape_out(struct esc_out *o, const char *src, size_t len, enum json_esc_mode mode)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t run = 0, i = 0;

    while (i < len) {
        char esc[8];
        size_t elen = 0, adv = 1;

        if (s[i] == 0 && mode == JSON_ESC_STORE_UTF8) {
            memcpy(esc, "\\ufffd", 6);
            elen = 6;
        } else if (s[i] < 0x80) {
            elen = json_escape_byte(s[i], esc, mode == JSON_ESC_TEXT);
        } else if (mode == JSON_ESC_STORE_BYTES) {
            /* as it is */
        } else if ((adv = esc_utf8_len(s + i, len - i)) == 0) {
            memcpy(esc, "\\ufffd", 6);
            elen = 6;
            adv = 1;
        }
        if (elen > 0 || adv > 1) {
            /* multi-byte characters go out whole so truncation never
             * leaves half a character */
            esc_out_put(o, src + run, i - run, 0);
            if (elen > 0)
                esc_out_put(o, esc, elen, 1);
            else
                esc_out_put(o, src + i, adv, 1);
            run = i + adv;
        }
        i += adv;
    }
    esc_out_put(o, src + run, len - run, 0);
}

size_t json_escape(char *dst, size_t cap, const char *src, size_t len)
{
    struct esc_out o;

    esc_out_init_bounded(&o, dst, cap);
    json_escape_out(&o, src, len, JSON_ESC_TEXT);
    return esc_out_finish(&o);
}

int json_escape_write(esc_write_fn write, void *ctx, const char *src, size_t len,
                      enum json_esc_mode mode)
{
    struct esc_out o;

    esc_out_init_sink(&o, write, ctx);
    json_escape_out(&o, src, len, mode);
    return o.failed;
}
