/* rowcode: op / sizes / fe / extra of one write (schema/schema.sql.in has the
 * format). Pure: no I/O, no lookups. */
#include "record/rowcode.h"

#include "core/jsonb.h"

/* ,"key": -- the first key opens the object */
static void rb_key(struct buf *b, const char *key)
{
    buf_puts(b, b->len ? ",\"" : "{\"");
    buf_puts(b, key);
    buf_puts(b, "\":");
}

static void rb_int(struct buf *b, const char *key, bool has, int64_t v)
{
    rb_key(b, key);
    if (has)
        buf_printf(b, "%lld", (long long)v);
    else
        buf_puts(b, "null");
}

/* A JSON string, or null: escaped as the store keeps it (core/escape's
 * JSON_ESC_STORE_*). */
static void rb_text(struct buf *b, const char *key, const char *s, size_t n, enum rowcode_text mode)
{
    rb_key(b, key);
    if (!s)
        buf_puts(b, "null");
    else
        jsonb_string_as(b, s, n,
                        mode == ROWCODE_TEXT_UTF8 ? JSON_ESC_STORE_UTF8 : JSON_ESC_STORE_BYTES);
}

static int bitlen(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

int rowcode_encode(const struct rowcode_in *r, enum rowcode_text text, struct buf *j,
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

    buf_reset(j);
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
        buf_puts(j, "}");
        if (j->failed)
            return -1;
    }
    out->op = (int64_t)op;
    out->sizes = (int64_t)sizes;
    out->fe = json ? 0 : (int64_t)fe;
    out->json = json;
    return 0;
}
