/* binrec: a binary-protocol connection's writes, recorded from copies of
 * its bytes. See binrec.h. */
#include "server/binrec.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/clock.h"
#include "core/keyfmt.h"
#include "protocol/mc_binary.h"
#include "server/proxy.h"

/* A write waiting for its answer: the row, but for answer and latency. */
struct binrec_write {
    struct rec_row row;
    uint64_t t_sent; /* uv_hrtime when its header was read */
};

struct binrec {
    struct proxy *px;
    uint32_t conn_id;
    bool stopped; /* recording gave up on this connection */
    struct mcb_req_parser rq;
    struct mcb_resp_parser rs;
    struct mcb_pairing pairing;
    struct mcb_pending slots[BINREC_MAX_PENDING];
    /* writes in request order, a ring the pairing's cookies index */
    struct binrec_write *writes;
    size_t writes_cap, writes_head, writes_count;
    uint64_t next_cookie; /* writes pushed so far: cookie - 1 is a ring position */
};

/* cookie for a request that is not recorded */
#define BINREC_NO_WRITE UINT64_MAX

static uint8_t binrec_cmd(const struct mcb_request *r)
{
    if (r->is_cas)
        return MC_CMD_CAS;
    switch (mcb_opcode_base(r->opcode)) {
    case MCB_OP_ADD: return MC_CMD_ADD;
    case MCB_OP_REPLACE: return MC_CMD_REPLACE;
    case MCB_OP_APPEND: return MC_CMD_APPEND;
    case MCB_OP_PREPEND: return MC_CMD_PREPEND;
    default: return MC_CMD_SET;
    }
}

/* Every write from now on goes unrecorded, counted (and the ones waiting). */
static void binrec_stop(struct binrec *br, const char *why)
{
    struct proxy *px = br->px;
    if (br->stopped)
        return;
    br->stopped = true;
    px->m.binary_writes_unrecorded += br->writes_count;
    br->writes_count = 0;
    log_throttled(&px->throttle.unpaired, LOG_LEVEL_WARN, NULL,
                  "connection %u (binary protocol): %s; its writes are no longer recorded "
                  "(counted in binary_writes_unrecorded)",
                  br->conn_id, why);
}

struct binrec *binrec_open(struct proxy *px, uint32_t conn_id)
{
    struct binrec *br = calloc(1, sizeof *br);
    if (!br) {
        px->m.binary_writes_unrecorded++; /* at least the one that made it binary */
        return NULL;
    }
    br->px = px;
    br->conn_id = conn_id;
    mcb_req_init(&br->rq, MCB_BODY_MAX_DEFAULT);
    mcb_resp_init(&br->rs, MCB_BODY_MAX_DEFAULT);
    mcb_pairing_init(&br->pairing, br->slots, BINREC_MAX_PENDING);
    return br;
}

/* A slot at the ring's tail; the ring grows by doubling up to the bound. */
static struct binrec_write *binrec_write_push(struct binrec *br)
{
    if (br->writes_count == br->writes_cap) {
        size_t ncap = br->writes_cap ? br->writes_cap * 2 : 64;
        struct binrec_write *n;
        if (ncap > BINREC_MAX_PENDING || !(n = malloc(ncap * sizeof *n)))
            return NULL;
        for (size_t i = 0; i < br->writes_count; i++)
            n[i] = br->writes[(br->writes_head + i) % br->writes_cap];
        free(br->writes);
        br->writes = n;
        br->writes_cap = ncap;
        br->writes_head = 0;
    }
    br->writes_count++;
    return &br->writes[(br->writes_head + br->writes_count - 1) % br->writes_cap];
}

static void binrec_request(struct binrec *br, const struct mcb_request *r, uint64_t now,
                           int64_t wall)
{
    struct proxy *px = br->px;
    uint64_t cookie = BINREC_NO_WRITE;
    if (r->is_write) {
        struct binrec_write *w = binrec_write_push(br);
        if (!w) {
            binrec_stop(br, "more writes waiting for an answer than it can hold");
            px->m.binary_writes_unrecorded++;
            return;
        }
        memset(&w->row, 0, offsetof(struct rec_row, answer));
        w->row.kind = REC_ROW_WRITE;
        w->row.cmd = binrec_cmd(r);
        w->row.seq = ++px->next_seq;
        w->row.conn_id = br->conn_id;
        w->row.t_ns = wall;
        w->row.key_hash = keyfmt_hash(r->key, r->key_kept);
        w->row.key_len = r->key_len;
        w->row.key_text_len = (int16_t)keyfmt_text(px->cfg.key_mode, r->key, r->key_kept,
                                                   w->row.key_text, sizeof w->row.key_text);
        w->row.value_len = r->value_len;
        w->row.has_flags = r->extlen >= 8;
        w->row.flags = r->flags;
        w->row.has_exptime = r->extlen >= 8;
        w->row.exptime = r->exptime;
        w->t_sent = now;
        cookie = br->next_cookie++;
    }
    if (mcb_pairing_push(&br->pairing, r->opcode, r->opaque, r->reply, cookie) != MCB_OK) {
        if (r->is_write)
            br->writes_count--; /* not waiting: binrec_stop counts it */
        binrec_stop(br, "more requests waiting for an answer than it can hold");
        if (r->is_write)
            px->m.binary_writes_unrecorded++;
    }
}

void binrec_requests(struct binrec *br, const char *data, size_t len)
{
    uint64_t now = uv_hrtime();
    int64_t wall = clock_wall_ns();
    while (br && !br->stopped && len) {
        struct mcb_request r;
        size_t used = 0;
        enum mcb_result res = mcb_req_feed(&br->rq, data, len, &used, &r);
        data += used;
        len -= used;
        if (res == MCB_ERROR) {
            binrec_stop(br, mcb_error_name(mcb_req_error(&br->rq)));
            break;
        }
        if (res == MCB_NEED_MORE)
            break;
        binrec_request(br, &r, now, wall);
    }
}

/* The oldest waiting write: the one an event for a write is about. */
static struct binrec_write *binrec_write_pop(struct binrec *br)
{
    struct binrec_write *w;
    if (!br->writes_count)
        return NULL;
    w = &br->writes[br->writes_head];
    br->writes_head = (br->writes_head + 1) % br->writes_cap;
    br->writes_count--;
    return w;
}

/* Every resolved request, in order: writes become rows. */
static void binrec_drain(struct binrec *br, uint64_t now)
{
    struct mcb_event ev;
    while (mcb_pairing_next(&br->pairing, &ev)) {
        struct binrec_write *w;
        const char *answer;
        if (ev.cookie == BINREC_NO_WRITE || br->stopped || !(w = binrec_write_pop(br)))
            continue;
        if (ev.outcome == MCB_UNANSWERED) {
            answer = "no_answer";
            w->row.latency_ns = -1;
        } else {
            answer = mcb_answer_label(ev.opcode, ev.status);
            w->row.latency_ns = (int64_t)(now - w->t_sent);
        }
        proxy_record_row(br->px, &w->row, answer, strlen(answer));
    }
}

void binrec_responses(struct binrec *br, const char *data, size_t len)
{
    uint64_t now = uv_hrtime();
    while (br && !br->stopped && len) {
        struct mcb_response r;
        size_t used = 0;
        enum mcb_result res = mcb_resp_feed(&br->rs, data, len, &used, &r);
        data += used;
        len -= used;
        if (res == MCB_ERROR) {
            binrec_stop(br, mcb_error_name(mcb_resp_error(&br->rs)));
            break;
        }
        if (res == MCB_NEED_MORE)
            break;
        if (mcb_pairing_response(&br->pairing, &r) != MCB_OK) {
            binrec_stop(br, "memcached answered a request it was not sent");
            break;
        }
        binrec_drain(br, now);
    }
}

void binrec_close(struct binrec *br)
{
    if (!br)
        return;
    if (!br->stopped) {
        mcb_pairing_close(&br->pairing);
        binrec_drain(br, uv_hrtime());
    }
    free(br->writes);
    free(br);
}
