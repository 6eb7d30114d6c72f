/* libFuzzer target: arbitrary bytes through the binary-protocol request and
 * response parsers and the pairing queue, checking their invariants --
 * consumption never exceeds the input, need-more consumes everything, every
 * byte is accounted for, the same stream split differently yields the same
 * requests / responses and the same error at the same byte, pairing yields
 * events in request order and resolves everything on close.
 * Input: [split][offset lo][offset hi] stream... -- the stream is fed whole
 * and split at `split`; for the pairing, stream[0..offset) is the requests
 * and the rest the responses. Build with -DSLABTAP_FUZZ=ON (clang); run:
 * build-fuzz/fuzz_mc_binary -max_total_time=60 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_binary.h"

#define MAX_SEEN 4096
#define BODY_MAX 4096 /* small, so the bound is reachable */

struct seen {
    uint8_t op[MAX_SEEN];
    uint64_t bytes[MAX_SEEN];
    uint32_t opaque[MAX_SEEN];
    uint16_t status[MAX_SEEN];
    size_t n;
    size_t consumed;
    int error;
};

static void seen_add(struct seen *s, uint8_t op, uint64_t bytes, uint32_t opaque, uint16_t st)
{
    if (s->n < MAX_SEEN) {
        s->op[s->n] = op;
        s->bytes[s->n] = bytes;
        s->opaque[s->n] = opaque;
        s->status[s->n] = st;
    }
    s->n++;
}

static void check_request(const struct mcb_request *r)
{
    if (r->key_kept > MCB_KEY_MAX || r->key_kept > r->key_len || r->key[r->key_kept] != '\0')
        abort();
    if (r->key_truncated != (r->key_len > MCB_KEY_MAX) || r->body_len > BODY_MAX)
        abort();
    if ((uint64_t)r->value_len + r->key_len + r->extlen != r->body_len)
        abort();
    if (r->bytes < MCB_HEADER_LEN + (uint64_t)r->extlen + r->key_len)
        abort();
    if (r->is_cas && !r->is_write)
        abort();
    if (r->invalid && (!r->closes || r->reply != MCB_REPLY_ONE))
        abort();
}

static void feed_requests(const uint8_t *data, size_t size, size_t split, struct seen *out)
{
    static struct mcb_req_parser p;
    struct mcb_request r;
    size_t bounds[2][2] = { { 0, split }, { split, size } };
    uint64_t sum = 0;

    mcb_req_init(&p, BODY_MAX);
    memset(out, 0, sizeof *out);
    for (int part = 0; part < 2 && !out->error; part++) {
        size_t pos = bounds[part][0], end = bounds[part][1];
        for (;;) {
            size_t used = 0;
            enum mcb_result res = mcb_req_feed(&p, data + pos, end - pos, &used, &r);
            if (used > end - pos)
                abort();
            pos += used;
            out->consumed += used;
            if (res == MCB_ERROR) {
                if (mcb_req_error(&p) == MCB_ERR_NONE)
                    abort();
                out->error = 1 + (int)mcb_req_error(&p);
                break;
            }
            if (res == MCB_NEED_MORE) {
                if (pos != end)
                    abort(); /* need-more must consume everything */
                break;
            }
            if (used == 0)
                abort();
            check_request(&r);
            sum += r.bytes;
            seen_add(out, r.opcode, r.bytes, r.opaque, 0);
        }
    }
    /* between requests, the requests' bytes are the input */
    if (!out->error && !mcb_req_closed(&p) && mcb_req_at_boundary(&p) && sum != size)
        abort();
}

static void feed_responses(const uint8_t *data, size_t size, size_t split, struct seen *out)
{
    static struct mcb_resp_parser p;
    struct mcb_response r;
    size_t bounds[2][2] = { { 0, split }, { split, size } };
    uint64_t sum = 0;

    mcb_resp_init(&p, BODY_MAX);
    memset(out, 0, sizeof *out);
    for (int part = 0; part < 2 && !out->error; part++) {
        size_t pos = bounds[part][0], end = bounds[part][1];
        for (;;) {
            size_t used = 0;
            enum mcb_result res = mcb_resp_feed(&p, data + pos, end - pos, &used, &r);
            if (used > end - pos)
                abort();
            pos += used;
            out->consumed += used;
            if (res == MCB_ERROR) {
                out->error = 1 + (int)mcb_resp_error(&p);
                break;
            }
            if (res == MCB_NEED_MORE) {
                if (pos != end)
                    abort();
                break;
            }
            if (used == 0 || r.value_head_len > MCB_VALUE_HEAD || r.value_head_len > r.value_len)
                abort();
            if (r.key_kept > MCB_KEY_MAX || r.key[r.key_kept] != '\0')
                abort();
            sum += r.bytes;
            seen_add(out, r.opcode, r.bytes, r.opaque, r.status);
        }
    }
    if (!out->error && mcb_resp_at_boundary(&p) && sum != size)
        abort();
}

static void same(const struct seen *a, const struct seen *b)
{
    if (a->n != b->n || a->error != b->error || a->consumed != b->consumed)
        abort();
    for (size_t i = 0; i < a->n && i < MAX_SEEN; i++)
        if (a->op[i] != b->op[i] || a->bytes[i] != b->bytes[i] || a->opaque[i] != b->opaque[i] ||
            a->status[i] != b->status[i])
            abort();
}

#define SLOTS 64

static void take(struct mcb_pairing *q, uint64_t *next_cookie)
{
    struct mcb_event ev;
    while (mcb_pairing_next(q, &ev)) {
        if (ev.cookie != *next_cookie) /* in request order, none lost */
            abort();
        if ((unsigned)ev.outcome > MCB_UNANSWERED)
            abort();
        (*next_cookie)++;
    }
}

static void pairing(const uint8_t *reqs, size_t nreqs, const uint8_t *resps, size_t nresps)
{
    static struct mcb_req_parser rp;
    static struct mcb_resp_parser sp;
    static struct mcb_pending slots[SLOTS];
    struct mcb_pairing q;
    struct mcb_request r;
    struct mcb_response s;
    size_t pos = 0, used;
    uint64_t pushed = 0, next_cookie = 1;

    mcb_pairing_init(&q, slots, SLOTS);
    mcb_req_init(&rp, BODY_MAX);
    while (pos < nreqs && mcb_req_feed(&rp, reqs + pos, nreqs - pos, &used, &r) == MCB_OK) {
        pos += used;
        if (mcb_pairing_push(&q, r.opcode, r.opaque, r.reply, pushed + 1) != MCB_OK) {
            if (mcb_pairing_count(&q) != SLOTS)
                abort();
            break;
        }
        pushed++;
    }
    mcb_resp_init(&sp, BODY_MAX);
    pos = 0;
    while (pos < nresps && mcb_resp_feed(&sp, resps + pos, nresps - pos, &used, &s) == MCB_OK) {
        size_t before = mcb_pairing_count(&q);
        pos += used;
        if (mcb_pairing_response(&q, &s) != MCB_OK) {
            if (mcb_pairing_count(&q) != before)
                abort(); /* a refused response leaves the queue alone */
            break;
        }
        /* take events every other response, so some wait */
        if (s.opaque & 1)
            take(&q, &next_cookie);
    }
    take(&q, &next_cookie);
    if (mcb_pairing_count(&q) != pushed - (next_cookie - 1))
        abort();
    mcb_pairing_close(&q);
    take(&q, &next_cookie);
    if (mcb_pairing_count(&q) != 0 || next_cookie != pushed + 1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct seen whole, split;
    const uint8_t *stream = data + 3;
    size_t n, cut, part;

    if (size < 3)
        return 0;
    n = size - 3;
    cut = data[0] % (n + 1);
    part = (size_t)(data[1] | data[2] << 8) % (n + 1);

    /* memcached frames by the bytes, not by how they arrive */
    feed_requests(stream, n, n, &whole);
    feed_requests(stream, n, cut, &split);
    same(&whole, &split);
    feed_responses(stream, n, n, &whole);
    feed_responses(stream, n, cut, &split);
    same(&whole, &split);

    pairing(stream, part, stream + part, n - part);
    /* the names never fail */
    if (!mcb_answer_label(data[0], (uint16_t)(data[1] | data[2] << 8)))
        abort();
    return 0;
}
