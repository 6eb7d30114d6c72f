/* readrec: a row per key a read asks for (see readrec.h). */
#include "server/readrec.h"

#include <stdlib.h>
#include <string.h>

#include "core/keyfmt.h"
#include "core/sample.h"
#include "server/conn.h"
#include "server/proxy.h"
#include "server/shadow.h"

size_t readrec_split(const char *line, size_t len, enum mc_cmd cmd,
                     void (*fn)(void *ud, const char *key, size_t key_len), void *ud)
{
    size_t word = 0, found = 0;
    /* words before the keys: the command, and gat's exptime */
    size_t skip = (cmd == MC_CMD_GAT || cmd == MC_CMD_GATS) ? 2 : 1;
    for (size_t i = 0; i < len;) {
        while (i < len && line[i] == ' ')
            i++;
        if (i >= len)
            break;
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        if (word++ < skip)
            continue;
        if (fn)
            fn(ud, line + start, i - start);
        found++;
    }
    return found;
}

struct fill {
    struct readrec_keys *k;
    enum keyfmt_mode mode;
    bool full; /* shadows: the whole key is kept (the text is made at emit) */
    size_t text_len, max;
};

static void fill_key(void *ud, const char *key, size_t len)
{
    struct fill *f = ud;
    struct readrec_keys *k = f->k;
    if (k->n >= f->max)
        return;
    struct readrec_key *x = &k->keys[k->n++];
    char text[MC_KEY_MAX + 1];
    x->hash = keyfmt_hash(key, len);
    x->len = len > UINT16_MAX ? UINT16_MAX : (uint16_t)len;
    int tl = f->full ? (int)(len > MC_KEY_MAX ? MC_KEY_MAX : len)
                     : keyfmt_text(f->mode, key, len, text, sizeof text);
    if (f->full)
        memcpy(text, key, (size_t)tl);
    x->text_len = (int16_t)(tl < 0 ? -1 : tl);
    x->text_off = (uint32_t)f->text_len;
    if (tl > 0) {
        memcpy(k->text + f->text_len, text, (size_t)tl);
        f->text_len += (size_t)tl;
    }
}

void readrec_capture(struct proxy *px, struct pending_entry *e, const struct mc_req_parser *p)
{
    const struct mc_request *r = &e->req;
    e->rseq = 0;
    e->rkeys = NULL;
    e->rk_n = e->rk_next = 0;
    if ((!px->cfg.record_reads && !shadow_active(px->shadows)) || !proxy_cmd_is_read(r->cmd))
        return;
    e->after_write = px->next_seq;
    uint32_t n = r->cmd == MC_CMD_MG ? 1 : r->nkeys;
    if (n == 0) /* "get" alone: memcached answers ERROR, no key asked for */
        return;
    if (n == 1) { /* the key is in the request */
        e->rk_n = 1;
        e->rseq = ++px->next_read_seq;
        return;
    }
    /* the line as the parser kept it (NUL-terminated where it ended) */
    size_t len = strnlen(p->line, MC_LINE_MAX);
    size_t found = readrec_split(p->line, len, r->cmd, NULL, NULL);
    size_t kept = found;
    if (found < n) /* the line was cut: its last word may be part of a key */
        kept = found ? found - 1 : 0;
    if (kept > n)
        kept = n;
    if (n > kept && px->cfg.record_reads) /* rows lost (a shadow just misses the keys) */
        rec_count_lost(px->rec, REC_LOST_READ_KEY_CUT, n - kept);
    if (!kept)
        return;
    /* one allocation: the block, its keys and their texts (never longer
     * than the line) */
    size_t keys_at = (sizeof(struct readrec_keys) + 7) & ~(size_t)7;
    size_t text_at = keys_at + kept * sizeof(struct readrec_key);
    char *mem = malloc(text_at + len + 1);
    if (!mem) {
        if (px->cfg.record_reads)
            rec_count_lost(px->rec, REC_LOST_READ_KEY_NOMEM, kept);
        return;
    }
    struct readrec_keys *k = (struct readrec_keys *)(void *)mem;
    k->n = 0;
    k->full = shadow_active(px->shadows);
    k->keys = (struct readrec_key *)(void *)(mem + keys_at);
    k->text = mem + text_at;
    struct fill f = { .k = k, .mode = px->cfg.key_mode, .full = k->full, .max = kept };
    readrec_split(p->line, len, r->cmd, fill_key, &f);
    e->rkeys = k;
    e->rk_n = k->n;
    e->rseq = px->next_read_seq + 1;
    px->next_read_seq += k->n;
}

/* The row of key i of e. text NULL: the request's own key. */
static void readrec_emit(struct proxy *px, const struct pending_entry *e, uint32_t i, bool hit,
                         int64_t value_len, bool has_flags, uint32_t flags)
{
    const struct mc_request *r = &e->req;
    struct rec_row row;
    uint64_t hash;
    uint32_t key_len;
    if (e->rkeys) {
        const struct readrec_key *k = &e->rkeys->keys[i];
        hash = k->hash;
        key_len = k->len;
    } else {
        hash = keyfmt_hash(r->key, r->key_len_raw);
        key_len = r->key_len;
    }
    memset(&row, 0, offsetof(struct rec_row, answer));
    row.kind = REC_ROW_READ;
    row.cmd = (uint8_t)r->cmd;
    row.seq = e->rseq + i;
    row.after_write = e->after_write;
    row.conn_id = e->conn_id;
    row.t_ns = e->t_wall_ns;
    row.key_hash = hash;
    row.key_len = (uint16_t)key_len;
    row.hit = hit;
    row.value_len = hit ? value_len : -1;
    row.has_flags = hit && has_flags;
    row.flags = row.has_flags ? flags : 0;
    row.has_exptime = r->cmd == MC_CMD_GAT || r->cmd == MC_CMD_GATS;
    row.exptime = row.has_exptime ? r->exptime : 0;
    row.answer[0] = '\0';
    if (shadow_active(px->shadows)) { /* the whole key: in the block, or the request's */
        if (e->rkeys) {               /* a block captured before the shadows opened: not theirs */
            const struct readrec_key *k = &e->rkeys->keys[i];
            if (e->rkeys->full && k->text_len > 0)
                shadow_read(px->shadows, e->rkeys->text + k->text_off, (size_t)k->text_len, false,
                            hit, value_len, row.flags, row.has_exptime, row.exptime);
        } else {
            shadow_read(px->shadows, r->key, r->key_len_raw, r->key_b64, hit, value_len, row.flags,
                        row.has_exptime, row.exptime);
        }
    }
    if (!px->cfg.record_reads)
        return;
    if (px->cfg.sample_keys > 1 && !sample_keep(hash, px->cfg.sample_keys)) {
        if (px->cfg.sample_aggregate) { /* counted in the aggregates, no row */
            row.sampled_out = true;
            row.key_text_len = -1;
            if (hit && px->ladder && value_len >= 0) {
                struct slab_item_layout it;
                if (slab_item_layout(px->ladder, key_len, row.flags, (uint64_t)value_len, &it) ==
                    SLAB_OK)
                    row.class_id = it.lru_class;
            }
            rec_push(px->rec, &row);
        }
        return;
    }
    if (e->rkeys && e->rkeys->full) { /* the block holds the whole key */
        const struct readrec_key *k = &e->rkeys->keys[i];
        row.key_text_len = (int16_t)keyfmt_text(px->cfg.key_mode, e->rkeys->text + k->text_off,
                                                (size_t)(k->text_len > 0 ? k->text_len : 0),
                                                row.key_text, sizeof row.key_text);
    } else if (e->rkeys) {
        const struct readrec_key *k = &e->rkeys->keys[i];
        row.key_text_len = k->text_len;
        if (k->text_len > 0)
            memcpy(row.key_text, e->rkeys->text + k->text_off, (size_t)k->text_len);
        row.key_text[k->text_len > 0 ? k->text_len : 0] = '\0';
    } else {
        row.key_text_len = (int16_t)keyfmt_text(px->cfg.key_mode, r->key, r->key_len_raw,
                                                row.key_text, sizeof row.key_text);
    }
    if (hit && px->ladder && value_len >= 0) {
        struct slab_item_layout it;
        if (slab_item_layout(px->ladder, key_len, row.flags, (uint64_t)value_len, &it) == SLAB_OK)
            row.class_id = it.lru_class;
    }
    rec_push(px->rec, &row);
    px->m.reads_recorded++;
}

/* The i-th space-separated token of s (from 0); false when there is none. */
static bool token(const char *s, size_t len, unsigned want, const char **t, size_t *tl)
{
    unsigned n = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && s[i] == ' ')
            i++;
        if (i >= len)
            break;
        size_t start = i;
        while (i < len && s[i] != ' ')
            i++;
        if (n++ == want) {
            *t = s + start;
            *tl = i - start;
            return true;
        }
    }
    return false;
}

static bool parse_u64(const char *s, size_t len, uint64_t *v)
{
    uint64_t x = 0;
    if (!len || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

void readrec_value(struct proxy *px, struct pending_entry *e, const struct mc_line *l)
{
    const char *key, *fl;
    size_t klen, fllen;
    uint64_t flags = 0;
    if (!e->rseq || e->req.cmd == MC_CMD_MG || l->code != MC_CODE_VALUE ||
        !token(l->text, l->len, 1, &key, &klen))
        return;
    bool has_flags = token(l->text, l->len, 2, &fl, &fllen) && parse_u64(fl, fllen, &flags) &&
                     flags <= UINT32_MAX;
    uint64_t h = keyfmt_hash(key, klen);
    /* the key it names: the next one asked for with that hash */
    uint32_t at = e->rk_next;
    for (; at < e->rk_n; at++) {
        uint64_t kh;
        size_t kl;
        if (e->rkeys) {
            kh = e->rkeys->keys[at].hash;
            kl = e->rkeys->keys[at].len;
        } else {
            kh = keyfmt_hash(e->req.key, e->req.key_len_raw);
            kl = e->req.key_len_raw;
        }
        if (kh == h && kl == klen)
            break;
    }
    if (at >= e->rk_n) /* names no key still waiting: not ours to count */
        return;
    for (uint32_t i = e->rk_next; i < at; i++)
        readrec_emit(px, e, i, false, -1, false, 0);
    readrec_emit(px, e, at, true, l->data_len, has_flags, (uint32_t)flags);
    e->rk_next = at + 1;
}

/* mg's answer line: a hit (HD, VA) with its size (VA's, or the s flag's)
 * and flags (the f flag's), when told. */
static bool mg_outcome(const char *a, size_t len, int64_t *value_len, bool *has_flags,
                       uint32_t *flags)
{
    const char *t;
    size_t tl;
    *value_len = -1;
    *has_flags = false;
    *flags = 0;
    if (!token(a, len, 0, &t, &tl) || tl != 2)
        return false;
    bool va = !memcmp(t, "VA", 2);
    if (!va && memcmp(t, "HD", 2))
        return false;
    unsigned first = 1;
    uint64_t v;
    if (va) {
        if (token(a, len, 1, &t, &tl) && parse_u64(t, tl, &v))
            *value_len = (int64_t)v;
        first = 2;
    }
    for (unsigned i = first; token(a, len, i, &t, &tl); i++) {
        if (t[0] == 'f' && parse_u64(t + 1, tl - 1, &v) && v <= UINT32_MAX) {
            *has_flags = true;
            *flags = (uint32_t)v;
        } else if (t[0] == 's' && !va && parse_u64(t + 1, tl - 1, &v)) {
            *value_len = (int64_t)v;
        }
    }
    return true;
}

void readrec_finish(struct proxy *px, struct pending_entry *e, const char *answer, size_t len)
{
    if (!e->rseq)
        return;
    if (e->req.cmd == MC_CMD_MG) {
        int64_t value_len;
        bool has_flags;
        uint32_t flags;
        bool hit = mg_outcome(answer, len, &value_len, &has_flags, &flags);
        if (e->rk_next < e->rk_n)
            readrec_emit(px, e, 0, hit, value_len, has_flags, flags);
    } else {
        for (uint32_t i = e->rk_next; i < e->rk_n; i++)
            readrec_emit(px, e, i, false, -1, false, 0);
    }
    e->rk_next = e->rk_n;
    free(e->rkeys);
    e->rkeys = NULL;
    e->rseq = 0;
}
