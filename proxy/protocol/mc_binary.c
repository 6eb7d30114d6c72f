/* mc_binary: see mc_binary.h. */
#include "protocol/mc_binary.h"

#include <string.h>

/* --- names ------------------------------------------------------------- */

static const char *const error_names[] = {
#define MCB_ERROR_NAME(id, text) text,
    MCB_ERRORS(MCB_ERROR_NAME)
#undef MCB_ERROR_NAME
};

const char *mcb_error_name(enum mcb_error e)
{
    return (unsigned)e < MCB_ERR_COUNT ? error_names[e] : "?";
}

const char *mcb_opcode_name(uint8_t opcode)
{
    switch (opcode) {
#define MCB_OP_NAME(id, code, name) \
    case code: return name;
        MCB_OPCODES(MCB_OP_NAME)
#undef MCB_OP_NAME
    }
    return NULL;
}

bool mcb_opcode_known(uint8_t opcode)
{
    return mcb_opcode_name(opcode) != NULL;
}

uint8_t mcb_opcode_base(uint8_t opcode)
{
    switch (opcode) {
    case MCB_OP_GETQ: return MCB_OP_GET;
    case MCB_OP_GETKQ: return MCB_OP_GETK;
    case MCB_OP_SETQ: return MCB_OP_SET;
    case MCB_OP_ADDQ: return MCB_OP_ADD;
    case MCB_OP_REPLACEQ: return MCB_OP_REPLACE;
    case MCB_OP_DELETEQ: return MCB_OP_DELETE;
    case MCB_OP_INCREMENTQ: return MCB_OP_INCREMENT;
    case MCB_OP_DECREMENTQ: return MCB_OP_DECREMENT;
    case MCB_OP_QUITQ: return MCB_OP_QUIT;
    case MCB_OP_FLUSHQ: return MCB_OP_FLUSH;
    case MCB_OP_APPENDQ: return MCB_OP_APPEND;
    case MCB_OP_PREPENDQ: return MCB_OP_PREPEND;
    case MCB_OP_GATQ: return MCB_OP_GAT;
    case MCB_OP_GATKQ: return MCB_OP_GATK;
    default: return opcode;
    }
}

bool mcb_opcode_quiet(uint8_t opcode)
{
    return mcb_opcode_base(opcode) != opcode;
}

bool mcb_opcode_is_write(uint8_t opcode)
{
    switch (mcb_opcode_base(opcode)) {
    case MCB_OP_SET:
    case MCB_OP_ADD:
    case MCB_OP_REPLACE:
    case MCB_OP_APPEND:
    case MCB_OP_PREPEND: return true;
    default: return false;
    }
}

const char *mcb_status_name(uint16_t status)
{
    switch (status) {
#define MCB_STATUS_NAME(id, code, name, label) \
    case code: return name;
        MCB_STATUSES(MCB_STATUS_NAME)
#undef MCB_STATUS_NAME
    }
    return NULL;
}

const char *mcb_answer_label(uint8_t opcode, uint16_t status)
{
    if (status == MCB_STATUS_SUCCESS) {
        if (mcb_opcode_is_write(opcode))
            return "STORED";
        switch (mcb_opcode_base(opcode)) {
        case MCB_OP_DELETE: return "DELETED";
        case MCB_OP_TOUCH: return "TOUCHED";
        case MCB_OP_GET:
        case MCB_OP_GETK:
        case MCB_OP_GAT:
        case MCB_OP_GATK: return "VALUE";
        case MCB_OP_INCREMENT:
        case MCB_OP_DECREMENT: return "NUMBER";
        case MCB_OP_VERSION: return "VERSION";
        case MCB_OP_STAT: return "END";
        default: return "OK";
        }
    }
    switch (status) {
#define MCB_STATUS_LABEL(id, code, name, label) \
    case code: return label;
        MCB_STATUSES(MCB_STATUS_LABEL)
#undef MCB_STATUS_LABEL
    }
    return "SERVER_ERROR UNKNOWN_STATUS";
}

static const char *const outcome_names[] = { "answered", "silent_ok", "silent_miss", "unanswered" };

const char *mcb_outcome_name(enum mcb_outcome o)
{
    return (unsigned)o <= MCB_UNANSWERED ? outcome_names[o] : "?";
}

/* --- framing -------------------------------------------------------------- */

static uint16_t be16(const uint8_t *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t be64(const uint8_t *b)
{
    return (uint64_t)be32(b) << 32 | be32(b + 4);
}

enum frame_state {
    F_HEADER, /* the 24 bytes of the header */
    F_EXTRAS,
    F_KEY,
    F_HEAD,   /* the first value bytes kept (responses) */
    F_SKIP,   /* the rest of the value, counted */
    F_CLOSED, /* after a request memcached closes on: nothing is read */
    F_ERROR
};

enum frame_step { STEP_NEED, STEP_HEAD, STEP_ERROR };

static void frame_init(struct mcb_frame *f, uint8_t magic, uint32_t body_max)
{
    memset(f, 0, sizeof *f);
    f->magic = magic;
    f->body_max = body_max;
    f->state = F_HEADER;
}

static enum frame_step frame_fail(struct mcb_frame *f, enum mcb_error e)
{
    f->state = F_ERROR;
    f->error = e;
    return STEP_ERROR;
}

static size_t min_size(size_t a, uint64_t b)
{
    return b < a ? (size_t)b : a;
}

/* Takes bytes from buf[*pos..len) until a head (header, extras, key and
 * value head) is complete, the buffer ends or the stream breaks. */
static enum frame_step frame_take(struct mcb_frame *f, const uint8_t *buf, size_t len, size_t *pos)
{
    for (;;) {
        size_t room = len - *pos, n;
        switch ((enum frame_state)f->state) {
        case F_ERROR: return STEP_ERROR;
        case F_CLOSED: *pos = len; return STEP_NEED;
        case F_SKIP:
            n = min_size(room, f->skip_left);
            f->skip_left -= n;
            *pos += n;
            if (f->skip_left > 0)
                return STEP_NEED;
            f->state = F_HEADER;
            break;
        case F_HEADER:
            if (room == 0)
                return STEP_NEED;
            if (f->hdr_got == 0 && buf[*pos] != f->magic) {
                *pos += 1;
                return frame_fail(f, MCB_ERR_MAGIC);
            }
            n = min_size(room, MCB_HEADER_LEN - f->hdr_got);
            memcpy(f->hdr + f->hdr_got, buf + *pos, n);
            f->hdr_got += (uint8_t)n;
            *pos += n;
            if (f->hdr_got < MCB_HEADER_LEN)
                return STEP_NEED;
            f->hdr_got = 0;
            f->key_len = be16(f->hdr + 2);
            f->ext_len = f->hdr[4];
            f->body_len = be32(f->hdr + 8);
            if ((uint64_t)f->body_len < (uint64_t)f->key_len + f->ext_len)
                return frame_fail(f, MCB_ERR_BODY_SHORT);
            if (f->body_len > f->body_max)
                return frame_fail(f, MCB_ERR_BODY_LIMIT);
            f->ext_got = 0;
            f->key_got = 0;
            f->head_got = 0;
            f->head_want = 0;
            f->skip_left = 0;
            f->state = F_EXTRAS;
            break;
        case F_EXTRAS:
            n = min_size(room, (uint64_t)(f->ext_len - f->ext_got));
            memcpy(f->extras + f->ext_got, buf + *pos, n);
            f->ext_got += (uint8_t)n;
            *pos += n;
            if (f->ext_got < f->ext_len)
                return STEP_NEED;
            f->state = F_KEY;
            break;
        case F_KEY:
            n = min_size(room, (uint64_t)(f->key_len - f->key_got));
            if (f->key_got < MCB_KEY_MAX)
                memcpy(f->key + f->key_got, buf + *pos, min_size(n, MCB_KEY_MAX - f->key_got));
            f->key_got += (uint16_t)n;
            *pos += n;
            if (f->key_got < f->key_len)
                return STEP_NEED;
            f->key[f->key_len < MCB_KEY_MAX ? f->key_len : MCB_KEY_MAX] = '\0';
            if (f->magic == MCB_MAGIC_RES) {
                uint32_t vlen = f->body_len - f->key_len - f->ext_len;
                f->head_want = (uint8_t)(vlen < MCB_VALUE_HEAD ? vlen : MCB_VALUE_HEAD);
            }
            f->state = F_HEAD;
            break;
        case F_HEAD:
            n = min_size(room, (uint64_t)(f->head_want - f->head_got));
            memcpy(f->head + f->head_got, buf + *pos, n);
            f->head_got += (uint8_t)n;
            *pos += n;
            if (f->head_got < f->head_want)
                return STEP_NEED;
            /* the caller decides what follows: F_SKIP, F_HEADER or F_CLOSED */
            return STEP_HEAD;
        }
    }
}

/* After a head: skip n bytes, or go on with the next header. */
static void frame_skip(struct mcb_frame *f, uint64_t n)
{
    f->skip_left = n;
    f->state = n > 0 ? F_SKIP : F_HEADER;
}

/* --- requests ------------------------------------------------------------ */

void mcb_req_init(struct mcb_req_parser *p, uint32_t body_max)
{
    frame_init(&p->f, MCB_MAGIC_REQ, body_max);
}

/* Does memcached 1.6 accept these lengths for this opcode? (its
 * dispatch_bin_command; a refused request gets EINVAL and a close) */
static bool lengths_ok(uint8_t base, uint8_t ext, uint16_t key, uint32_t body)
{
    switch (base) {
    case MCB_OP_VERSION:
    case MCB_OP_NOOP:
    case MCB_OP_QUIT:
    case MCB_OP_SASL_LIST_MECHS: return ext == 0 && key == 0 && body == 0;
    case MCB_OP_FLUSH: return key == 0 && body == ext && (ext == 0 || ext == 4);
    case MCB_OP_SET:
    case MCB_OP_ADD:
    case MCB_OP_REPLACE: return ext == 8 && key != 0;
    case MCB_OP_GET:
    case MCB_OP_GETK:
    case MCB_OP_DELETE: return ext == 0 && key != 0 && body == key;
    case MCB_OP_INCREMENT:
    case MCB_OP_DECREMENT: return ext == 20 && key != 0 && body == (uint32_t)key + 20;
    case MCB_OP_APPEND:
    case MCB_OP_PREPEND:
    case MCB_OP_SASL_AUTH:
    case MCB_OP_SASL_STEP: return ext == 0 && key != 0;
    case MCB_OP_STAT: return ext == 0;
    case MCB_OP_TOUCH:
    case MCB_OP_GAT:
    case MCB_OP_GATK: return ext == 4 && key != 0;
    default: return true; /* unknown: UNKNOWN_COMMAND, whatever the lengths */
    }
}

static enum mcb_reply reply_of(const struct mcb_request *r)
{
    if (r->invalid)
        return MCB_REPLY_ONE;
    switch (r->opcode) {
    case MCB_OP_QUITQ: return MCB_REPLY_NONE;
    case MCB_OP_GETQ:
    case MCB_OP_GETKQ:
    case MCB_OP_GATQ:
    case MCB_OP_GATKQ: return MCB_REPLY_ON_HIT;
    case MCB_OP_STAT:
        /* get_stats compares these two whole (nz_strcmp); they end without
         * the empty-key terminator */
        if ((r->key_len == 12 && memcmp(r->key, "sizes_enable", 12) == 0) ||
            (r->key_len == 13 && memcmp(r->key, "sizes_disable", 13) == 0))
            return MCB_REPLY_STAT_SIZES;
        return MCB_REPLY_STAT;
    default: return r->quiet ? MCB_REPLY_ON_ERROR : MCB_REPLY_ONE;
    }
}

static void req_fill(struct mcb_req_parser *p, struct mcb_request *r)
{
    struct mcb_frame *f = &p->f;
    const uint8_t *h = f->hdr, *x = f->extras;
    uint8_t base;
    uint64_t skip;

    memset(r, 0, sizeof *r);
    r->opcode = h[1];
    r->key_len = f->key_len;
    r->extlen = f->ext_len;
    r->datatype = h[5];
    r->vbucket = be16(h + 6);
    r->body_len = f->body_len;
    r->opaque = be32(h + 12);
    r->cas = be64(h + 16);
    r->key = f->key;
    r->key_kept = f->key_len < MCB_KEY_MAX ? f->key_len : MCB_KEY_MAX;
    r->key_truncated = f->key_len > MCB_KEY_MAX;
    r->extras = f->extras;
    r->value_len = f->body_len - f->key_len - f->ext_len;
    r->known = mcb_opcode_known(r->opcode);
    r->quiet = mcb_opcode_quiet(r->opcode);
    r->is_write = mcb_opcode_is_write(r->opcode);
    r->is_cas = r->is_write && r->cas != 0;
    base = mcb_opcode_base(r->opcode);

    switch (base) {
    case MCB_OP_SET:
    case MCB_OP_ADD:
    case MCB_OP_REPLACE:
        if (r->extlen == 8) {
            r->flags = be32(x);
            r->exptime = be32(x + 4);
        }
        break;
    case MCB_OP_TOUCH:
    case MCB_OP_GAT:
    case MCB_OP_GATK:
    case MCB_OP_FLUSH:
        if (r->extlen == 4)
            r->exptime = be32(x);
        break;
    case MCB_OP_INCREMENT:
    case MCB_OP_DECREMENT:
        if (r->extlen == 20) {
            r->delta = be64(x);
            r->initial = be64(x + 8);
            r->exptime = be32(x + 16);
        }
        break;
    default: break;
    }

    /* memcached checks the key length first, for every opcode */
    r->invalid = r->key_truncated || !lengths_ok(base, r->extlen, r->key_len, r->body_len);
    r->closes = r->invalid || base == MCB_OP_QUIT;
    r->reply = reply_of(r);

    if (r->closes)
        skip = 0;
    else if (!r->known)
        skip = r->body_len; /* counted from after the key: key + extras too many */
    else if (base == MCB_OP_STAT || base == MCB_OP_TOUCH || base == MCB_OP_GAT ||
             base == MCB_OP_GATK)
        skip = 0; /* the body past key + extras is read as the next request */
    else
        skip = r->value_len;
    r->bytes = MCB_HEADER_LEN + (uint64_t)r->extlen + r->key_len + skip;
    if (r->closes)
        f->state = F_CLOSED;
    else
        frame_skip(f, skip);
}

enum mcb_result mcb_req_feed(struct mcb_req_parser *p, const void *data, size_t len,
                             size_t *consumed, struct mcb_request *out)
{
    size_t pos = 0;
    enum frame_step s = frame_take(&p->f, data, len, &pos);

    *consumed = pos;
    if (s == STEP_NEED)
        return MCB_NEED_MORE;
    if (s == STEP_ERROR)
        return MCB_ERROR;
    req_fill(p, out);
    return MCB_OK;
}

bool mcb_req_at_boundary(const struct mcb_req_parser *p)
{
    return p->f.state == F_HEADER && p->f.hdr_got == 0;
}

uint64_t mcb_req_skip_left(const struct mcb_req_parser *p)
{
    return p->f.state == F_SKIP ? p->f.skip_left : 0;
}

bool mcb_req_closed(const struct mcb_req_parser *p)
{
    return p->f.state == F_CLOSED;
}

enum mcb_error mcb_req_error(const struct mcb_req_parser *p)
{
    return p->f.error;
}

/* --- responses ------------------------------------------------------------ */

void mcb_resp_init(struct mcb_resp_parser *p, uint32_t body_max)
{
    frame_init(&p->f, MCB_MAGIC_RES, body_max);
}

static void resp_fill(struct mcb_resp_parser *p, struct mcb_response *r)
{
    struct mcb_frame *f = &p->f;
    const uint8_t *h = f->hdr;
    uint8_t base;

    memset(r, 0, sizeof *r);
    r->opcode = h[1];
    r->key_len = f->key_len;
    r->extlen = f->ext_len;
    r->datatype = h[5];
    r->status = be16(h + 6);
    r->body_len = f->body_len;
    r->opaque = be32(h + 12);
    r->cas = be64(h + 16);
    r->key = f->key;
    r->key_kept = f->key_len < MCB_KEY_MAX ? f->key_len : MCB_KEY_MAX;
    r->key_truncated = f->key_len > MCB_KEY_MAX;
    r->extras = f->extras;
    if (r->extlen == 4)
        r->flags = be32(f->extras);
    r->value_len = f->body_len - f->key_len - f->ext_len;
    r->value_head = f->head;
    r->value_head_len = f->head_want;
    base = mcb_opcode_base(r->opcode);
    if ((base == MCB_OP_INCREMENT || base == MCB_OP_DECREMENT) && r->status == MCB_STATUS_SUCCESS &&
        r->value_len == 8) {
        r->has_number = true;
        r->number = be64(f->head);
    }
    r->bytes = MCB_HEADER_LEN + (uint64_t)r->body_len;
    frame_skip(f, r->value_len - r->value_head_len);
}

enum mcb_result mcb_resp_feed(struct mcb_resp_parser *p, const void *data, size_t len,
                              size_t *consumed, struct mcb_response *out)
{
    size_t pos = 0;
    enum frame_step s = frame_take(&p->f, data, len, &pos);

    *consumed = pos;
    if (s == STEP_NEED)
        return MCB_NEED_MORE;
    if (s == STEP_ERROR)
        return MCB_ERROR;
    resp_fill(p, out);
    return MCB_OK;
}

bool mcb_resp_at_boundary(const struct mcb_resp_parser *p)
{
    return p->f.state == F_HEADER && p->f.hdr_got == 0;
}

uint64_t mcb_resp_skip_left(const struct mcb_resp_parser *p)
{
    return p->f.state == F_SKIP ? p->f.skip_left : 0;
}

enum mcb_error mcb_resp_error(const struct mcb_resp_parser *p)
{
    return p->f.error;
}

/* --- pairing --------------------------------------------------------------- */

void mcb_pairing_init(struct mcb_pairing *q, struct mcb_pending *slots, size_t cap)
{
    q->slots = slots;
    q->cap = cap;
    q->head = 0;
    q->count = 0;
    q->resolved = 0;
}

static struct mcb_pending *at(struct mcb_pairing *q, size_t i)
{
    return &q->slots[(q->head + i) % q->cap];
}

enum mcb_result mcb_pairing_push(struct mcb_pairing *q, uint8_t opcode, uint32_t opaque,
                                 enum mcb_reply reply, uint64_t cookie)
{
    struct mcb_pending *e;

    if (q->count >= q->cap)
        return MCB_ERROR;
    e = at(q, q->count);
    memset(e, 0, sizeof *e);
    e->cookie = cookie;
    e->opaque = opaque;
    e->opcode = opcode;
    e->reply = (uint8_t)reply;
    q->count++;
    return MCB_OK;
}

static bool may_be_silent(const struct mcb_pending *e)
{
    return e->reply == MCB_REPLY_ON_ERROR || e->reply == MCB_REPLY_ON_HIT;
}

/* Resolves the waiting entry i (the next one in order) without an answer. */
static void resolve_silent(struct mcb_pairing *q, size_t i)
{
    struct mcb_pending *e = at(q, i);
    e->resolved = true;
    e->outcome = e->reply == MCB_REPLY_ON_HIT ? MCB_SILENT_MISS : MCB_SILENT_OK;
    e->status = e->reply == MCB_REPLY_ON_HIT ? MCB_STATUS_KEY_ENOENT : MCB_STATUS_SUCCESS;
    q->resolved = i + 1;
}

/* Does this response end entry e's answer? (e->responses counts it) */
static bool answer_ends(struct mcb_pending *e, const struct mcb_response *r)
{
    switch ((enum mcb_reply)e->reply) {
    case MCB_REPLY_STAT: return r->key_len == 0;
    case MCB_REPLY_STAT_SIZES:
        if (r->key_len == 0 || e->responses >= 2)
            return true;
        /* items.c: sizes_status "error" is followed by a sizes_error line */
        e->sizes_error = r->key_len == 12 && memcmp(r->key, "sizes_status", 12) == 0 &&
                         r->value_len == 5 && r->value_head_len == 5 &&
                         memcmp(r->value_head, "error", 5) == 0;
        return !e->sizes_error;
    default: return true;
    }
}

enum mcb_result mcb_pairing_response(struct mcb_pairing *q, const struct mcb_response *r)
{
    size_t i, m;
    struct mcb_pending *e;
    bool ambiguous = false;

    for (m = q->resolved; m < q->count; m++) {
        e = at(q, m);
        if (e->opcode == r->opcode && e->opaque == r->opaque)
            break;
        if (!may_be_silent(e))
            return MCB_ERROR; /* this one answers before anything later */
    }
    if (m == q->count)
        return MCB_ERROR;
    /* could a later request, up to the first that must answer, be it? */
    for (i = m + 1; i < q->count && may_be_silent(at(q, i - 1)); i++) {
        const struct mcb_pending *o = at(q, i);
        if (o->opcode == r->opcode && o->opaque == r->opaque) {
            ambiguous = true;
            break;
        }
    }
    for (i = q->resolved; i < m; i++)
        resolve_silent(q, i);
    e = at(q, m);
    e->responses++;
    e->status = r->status;
    e->ambiguous = e->ambiguous || ambiguous;
    if (answer_ends(e, r)) {
        e->resolved = true;
        e->outcome = MCB_ANSWERED;
        q->resolved = m + 1;
    }
    return MCB_OK;
}

bool mcb_pairing_next(struct mcb_pairing *q, struct mcb_event *ev)
{
    struct mcb_pending *e;

    if (q->resolved == 0)
        return false;
    e = at(q, 0);
    ev->cookie = e->cookie;
    ev->opcode = e->opcode;
    ev->opaque = e->opaque;
    ev->outcome = (enum mcb_outcome)e->outcome;
    ev->status = e->status;
    ev->responses = e->responses;
    ev->ambiguous = e->ambiguous;
    q->head = (q->head + 1) % q->cap;
    q->count--;
    q->resolved--;
    return true;
}

void mcb_pairing_close(struct mcb_pairing *q)
{
    size_t i, quitq = q->count; /* the last waiting quitq, if any */

    for (i = q->resolved; i < q->count; i++)
        if (at(q, i)->reply == MCB_REPLY_NONE)
            quitq = i;
    for (i = q->resolved; i < q->count; i++) {
        struct mcb_pending *e = at(q, i);
        if (quitq < q->count && i <= quitq && (may_be_silent(e) || e->reply == MCB_REPLY_NONE)) {
            resolve_silent(q, i);
            continue;
        }
        e->resolved = true;
        e->outcome = MCB_UNANSWERED;
        e->status = 0;
    }
    q->resolved = q->count;
}

size_t mcb_pairing_count(const struct mcb_pairing *q)
{
    return q->count;
}
