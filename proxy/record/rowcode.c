/* rowcode: op / sizes / fe / extra of one write (schema/schema.sql has the
 * format). Pure: no I/O, no lookups. */
#include "record/rowcode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rb_put(struct rowcode_buf *b, const char *d, size_t n)
{
    if (b->failed)
        return;
    if (b->max && b->len + n + 1 > b->max) {
        b->failed = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* ,"key": -- the first key opens the object */
static void rb_key(struct rowcode_buf *b, const char *key)
{
    rb_put(b, b->len ? ",\"" : "{\"", 2);
    rb_put(b, key, strlen(key));
    rb_put(b, "\":", 2);
}

static void rb_int(struct rowcode_buf *b, const char *key, bool has, int64_t v)
{
    char num[32];
    rb_key(b, key);
    if (has)
        rb_put(b, num, (size_t)snprintf(num, sizeof num, "%lld", (long long)v));
    else
        rb_put(b, "null", 4);
}

size_t rowcode_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c >= 0x01 && c < 0x80)
        return 1;
    size_t len;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0; /* NUL, a continuation byte, or never valid */
    }
    if (len > n)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A JSON string: '"', '\' and control bytes escaped; the rest as bytes
 * (ROWCODE_TEXT_BYTES) or as valid UTF-8, U+FFFD for each other byte. */
static void rb_text(struct rowcode_buf *b, const char *key, const char *s, size_t n,
                    enum rowcode_text mode)
{
    rb_key(b, key);
    if (!s) {
        rb_put(b, "null", 4);
        return;
    }
    rb_put(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t from = 0;
    for (size_t i = 0; i < n;) {
        size_t k = mode == ROWCODE_TEXT_UTF8 ? rowcode_utf8_seq(p + i, n - i) : 1;
        bool esc = k == 1 && (p[i] < 0x20 || p[i] == '"' || p[i] == '\\');
        if (k && !esc) {
            i += k;
            continue;
        }
        char e[8];
        rb_put(b, s + from, i - from);
        if (!k)
            rb_put(b, "\\ufffd", 6);
        else if (p[i] == '"' || p[i] == '\\')
            rb_put(b, (const char[]){ '\\', (char)p[i] }, 2);
        else
            rb_put(b, e, (size_t)snprintf(e, sizeof e, "\\u%04x", p[i]));
        i++;
        from = i;
    }
    rb_put(b, s + from, n - from);
    rb_put(b, "\"", 1);
}

static int bitlen(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

int rowcode_encode(const struct rowcode_in *r, enum rowcode_text text, struct rowcode_buf *j,
                   struct rowcode_out *out)
{
    bool esc_key_len = false, esc_class = false, esc_vlen = false, esc_lat = false;
    uint64_t op = 0;
    if (r->key_len.has && r->key_len.v >= 0 && r->key_len.v <= ROWCODE_KEY_LEN_MAX)
        op |= (uint64_t)r->key_len.v;
    else
        esc_key_len = true;
    if (r->class_id.has && r->class_id.v >= 1 && r->class_id.v <= ROWCODE_CLASS_MAX)
        op |= (uint64_t)r->class_id.v << 8;
    else if (r->class_id.has)
        esc_class = true;
    if (r->cmd_id > 0 && r->cmd_id <= ROWCODE_CMD_MAX)
        op |= (uint64_t)r->cmd_id << 14;
    if (r->answer_id > 0 && r->answer_id < ROWCODE_ANSWER_MAX)
        op |= (uint64_t)r->answer_id << 20;
    bool esc_answer = !(op >> 20);

    uint64_t vl = 0, lt = 0, unit = 0;
    if (r->value_len.has && r->value_len.v >= 0 && r->value_len.v < INT32_MAX)
        vl = (uint64_t)r->value_len.v + 1;
    else if (r->value_len.has)
        esc_vlen = true;
    int vw = bitlen(vl);
    if (r->latency_ns.has && r->latency_ns.v >= 0 && r->latency_ns.v < INT64_MAX - 500) {
        int64_t ns = r->latency_ns.v;
        if (r->latency_exact && ns % 1000) {
            unit = 1;
            lt = (uint64_t)ns + 1;
        } else {
            lt = (uint64_t)(r->latency_exact ? ns / 1000 : (ns + 500) / 1000) + 1;
        }
        if (bitlen(lt) + 6 + vw > 63)
            esc_lat = true;
    } else if (r->latency_ns.has) {
        esc_lat = true;
    }
    if (esc_lat)
        lt = unit = 0;
    uint64_t sizes = lt << (6 + vw) | vl << 6 | unit << 5 | (uint64_t)vw;

    /* flags and exptime: in 0 bytes when both are 0, where the command has them */
    bool known = r->cmd_id > 0 && r->cmd_id <= ROWCODE_CMD_MAX;
    bool fe_ok = known && r->flags.has == r->cmd_has_flags &&
                 r->exptime.has == r->cmd_has_exptime &&
                 (!r->flags.has || (r->flags.v >= 0 && r->flags.v <= UINT32_MAX)) &&
                 (!r->exptime.has || (r->exptime.v >= INT32_MIN && r->exptime.v <= INT32_MAX));
    uint64_t fe = 0;
    if (fe_ok)
        fe = (r->flags.has ? (uint64_t)r->flags.v << 32 : 0) |
             (r->exptime.has ? (uint32_t)r->exptime.v : 0);

    j->len = 0;
    j->failed = false;
    bool json = !fe_ok || esc_key_len || esc_class || esc_vlen || esc_lat || esc_answer;
    if (json) {
        if (!fe_ok || fe) {
            rb_int(j, "flags", r->flags.has, r->flags.v);
            rb_int(j, "exptime", r->exptime.has, r->exptime.v);
        }
        if (!known) {
            rb_text(j, "cmd", r->cmd, r->cmd_len, text);
            rb_text(j, "ms_mode", r->ms_mode, r->ms_len, text);
        }
        if (esc_answer)
            rb_text(j, "answer", r->answer, r->answer_len, text);
        if (esc_key_len)
            rb_int(j, "key_len", r->key_len.has, r->key_len.v);
        if (esc_vlen)
            rb_int(j, "value_len", true, r->value_len.v);
        if (esc_lat)
            rb_int(j, "latency_ns", true, r->latency_ns.v);
        if (esc_class)
            rb_int(j, "class_id", true, r->class_id.v);
        rb_put(j, "}", 1);
        if (j->failed)
            return -1;
    }
    out->op = (int64_t)op;
    out->sizes = (int64_t)sizes;
    out->fe = json ? 0 : (int64_t)fe;
    out->json = json;
    return 0;
}

void rowcode_buf_free(struct rowcode_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
