/* mc_binary: resumable parsers for memcached's binary protocol, and the
 * rule that pairs its responses with its requests.
 *
 * Owns: framing a client's byte stream into binary requests and an
 * upstream's byte stream into binary responses, resuming at any byte
 * boundary; predicting -- the way memcached 1.6's proto_bin.c decides it --
 * how many bytes each request consumes, whether it is answered and whether
 * memcached closes the connection after it; the bounded in-order queue that
 * pairs responses with requests, quiet requests included; the names of
 * opcodes and statuses and the text-protocol-like answer label of a status.
 *
 * Must never: do I/O, allocate, or write into the caller's buffer. Only the
 * 24-byte header, the extras (at most 255 bytes), the first MCB_KEY_MAX
 * bytes of the key and, for a response, the first MCB_VALUE_HEAD bytes of
 * the value are copied into the parser; the rest of a body is skipped by
 * counting, never buffered. The pairing queue lives in slots the caller
 * gives it.
 *
 * Facts from memcached 1.6.18 (proto_bin.c, checked against the running
 * server): a request is dispatched once its header, extras and key are in;
 * body length < key + extras: UNKNOWN_COMMAND, then close; key over 250
 * bytes, or key / extras / body lengths its opcode does not accept: EINVAL,
 * then close; magic other than 0x80: close, no answer; an opcode it does not
 * know: UNKNOWN_COMMAND, then it discards body-length bytes counted from
 * after the key -- key + extras bytes more than the request holds; stat and
 * touch / gat / gatk ignore a body longer than key + extras, the rest is read
 * as the next request. Quiet opcodes suppress only a success: getq getkq
 * gatq gatkq answer a hit and are silent on a miss, the quiet writes,
 * deleteq, incrementq, decrementq and flushq answer every failure, quitq
 * never answers. Responses come in request order and echo the request's
 * opcode and opaque. */
#ifndef SLABTAP_MC_BINARY_H
#define SLABTAP_MC_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCB_HEADER_LEN 24
#define MCB_MAGIC_REQ 0x80
#define MCB_MAGIC_RES 0x81
#define MCB_KEY_MAX 250    /* memcached's KEY_MAX_LENGTH: key bytes kept */
#define MCB_EXTRAS_MAX 255 /* extras length is one byte */
#define MCB_VALUE_HEAD 16  /* response value bytes kept (stat sizes_status, incr) */
/* A body bound for mcb_req_init / mcb_resp_init: memcached's default item
 * size max (1 MiB) plus 1 MiB. */
#define MCB_BODY_MAX_DEFAULT (2u << 20)

enum mcb_result {
    MCB_OK,        /* one request / response head complete, *out filled */
    MCB_NEED_MORE, /* the buffer ended first; everything consumed */
    MCB_ERROR      /* the stream cannot be framed (see mcb_error) */
};

/* Why a parser returned MCB_ERROR. Once it has, it returns MCB_ERROR on
 * every call, consuming nothing. */
/* clang-format off */
#define MCB_ERRORS(X) \
    X(NONE, "none") \
    X(MAGIC, "bad magic") /* memcached closes without an answer */ \
    X(BODY_SHORT, "body length smaller than key + extras") /* UNKNOWN_COMMAND, close */ \
    X(BODY_LIMIT, "body length above the bound")
/* clang-format on */

enum mcb_error {
#define MCB_ERROR_ENUM(id, text) MCB_ERR_##id,
    MCB_ERRORS(MCB_ERROR_ENUM)
#undef MCB_ERROR_ENUM
        MCB_ERR_COUNT
};

const char *mcb_error_name(enum mcb_error e);

/* The opcodes memcached 1.6 implements (protocol_binary.h); any other byte
 * is an opcode it answers with UNKNOWN_COMMAND. */
/* clang-format off */
#define MCB_OPCODES(X) \
    X(GET, 0x00, "get") X(SET, 0x01, "set") X(ADD, 0x02, "add") \
    X(REPLACE, 0x03, "replace") X(DELETE, 0x04, "delete") \
    X(INCREMENT, 0x05, "increment") X(DECREMENT, 0x06, "decrement") \
    X(QUIT, 0x07, "quit") X(FLUSH, 0x08, "flush") X(GETQ, 0x09, "getq") \
    X(NOOP, 0x0a, "noop") X(VERSION, 0x0b, "version") X(GETK, 0x0c, "getk") \
    X(GETKQ, 0x0d, "getkq") X(APPEND, 0x0e, "append") X(PREPEND, 0x0f, "prepend") \
    X(STAT, 0x10, "stat") X(SETQ, 0x11, "setq") X(ADDQ, 0x12, "addq") \
    X(REPLACEQ, 0x13, "replaceq") X(DELETEQ, 0x14, "deleteq") \
    X(INCREMENTQ, 0x15, "incrementq") X(DECREMENTQ, 0x16, "decrementq") \
    X(QUITQ, 0x17, "quitq") X(FLUSHQ, 0x18, "flushq") X(APPENDQ, 0x19, "appendq") \
    X(PREPENDQ, 0x1a, "prependq") X(TOUCH, 0x1c, "touch") X(GAT, 0x1d, "gat") \
    X(GATQ, 0x1e, "gatq") X(SASL_LIST_MECHS, 0x20, "sasl_list_mechs") \
    X(SASL_AUTH, 0x21, "sasl_auth") X(SASL_STEP, 0x22, "sasl_step") \
    X(GATK, 0x23, "gatk") X(GATKQ, 0x24, "gatkq")
/* clang-format on */

enum mcb_opcode {
#define MCB_OP_ENUM(id, code, name) MCB_OP_##id = code,
    MCB_OPCODES(MCB_OP_ENUM)
#undef MCB_OP_ENUM
};

/* "set", "setq", ...; NULL for an opcode memcached does not know. */
const char *mcb_opcode_name(uint8_t opcode);
bool mcb_opcode_known(uint8_t opcode);
/* The quiet opcodes: getq getkq setq addq replaceq deleteq incrementq
 * decrementq quitq flushq appendq prependq gatq gatkq. */
bool mcb_opcode_quiet(uint8_t opcode);
/* The non-quiet twin of a quiet opcode (setq -> set), else opcode itself. */
uint8_t mcb_opcode_base(uint8_t opcode);
/* set add replace append prepend and their quiet variants (a cas is one of
 * these with a non-zero cas field). */
bool mcb_opcode_is_write(uint8_t opcode);

/* Response statuses memcached 1.6 sends (protocol_binary.h), with the
 * answer label mcb_answer_label gives a failure. */
/* clang-format off */
#define MCB_STATUSES(X) \
    X(SUCCESS, 0x0000, "SUCCESS", "STORED") \
    X(KEY_ENOENT, 0x0001, "KEY_ENOENT", "NOT_FOUND") \
    X(KEY_EEXISTS, 0x0002, "KEY_EEXISTS", "EXISTS") \
    X(E2BIG, 0x0003, "E2BIG", "SERVER_ERROR E2BIG") \
    X(EINVAL, 0x0004, "EINVAL", "CLIENT_ERROR EINVAL") \
    X(NOT_STORED, 0x0005, "NOT_STORED", "NOT_STORED") \
    X(DELTA_BADVAL, 0x0006, "DELTA_BADVAL", "CLIENT_ERROR DELTA_BADVAL") \
    X(AUTH_ERROR, 0x0020, "AUTH_ERROR", "SERVER_ERROR AUTH_ERROR") \
    X(AUTH_CONTINUE, 0x0021, "AUTH_CONTINUE", "SERVER_ERROR AUTH_CONTINUE") \
    X(UNKNOWN_COMMAND, 0x0081, "UNKNOWN_COMMAND", "ERROR") \
    X(ENOMEM, 0x0082, "ENOMEM", "SERVER_ERROR ENOMEM")
/* clang-format on */

enum mcb_status {
#define MCB_STATUS_ENUM(id, code, name, label) MCB_STATUS_##id = code,
    MCB_STATUSES(MCB_STATUS_ENUM)
#undef MCB_STATUS_ENUM
};

/* "KEY_ENOENT", ...; NULL for a status memcached does not send. */
const char *mcb_status_name(uint16_t status);

/* The answer a recorder stores for a request of this opcode that got this
 * status, in the words of the text protocol. Success: "STORED" for a write
 * (set add replace append prepend, cas, quiet or not), "DELETED" for
 * delete, "TOUCHED" for touch, "VALUE" for get getk gat gatk (a hit),
 * "NUMBER" for increment / decrement (the number is in the response),
 * "VERSION", "END" for stat, "OK" for the others. A failure maps by status
 * alone, whatever the opcode (the last column of MCB_STATUSES):
 *   KEY_ENOENT -> NOT_FOUND, KEY_EEXISTS -> EXISTS, NOT_STORED -> NOT_STORED,
 *   EINVAL and DELTA_BADVAL -> "CLIENT_ERROR <name>", UNKNOWN_COMMAND -> ERROR,
 *   the others -> "SERVER_ERROR <name>", an unlisted status ->
 *   "SERVER_ERROR UNKNOWN_STATUS".
 * Status alone, so the label says what memcached answered, not what the text
 * protocol would have said for the same outcome: a binary add of a key that
 * exists gets KEY_EEXISTS ("EXISTS", text: NOT_STORED) and a replace of a
 * missing key KEY_ENOENT ("NOT_FOUND", text: NOT_STORED); append / prepend
 * of a missing key is NOT_STORED in both. Never NULL. */
const char *mcb_answer_label(uint8_t opcode, uint16_t status);

/* What memcached sends back for a request. */
enum mcb_reply {
    MCB_REPLY_ONE,       /* exactly one response; also any invalid request,
                            quiet or not (its EINVAL is always sent) */
    MCB_REPLY_ON_ERROR,  /* setq addq replaceq appendq prependq deleteq
                           incrementq decrementq flushq: a response only when
                           it fails; silence means success */
    MCB_REPLY_ON_HIT,    /* getq getkq gatq gatkq: a response only on a hit;
                           silence means a miss */
    MCB_REPLY_NONE,      /* quitq: never a response; memcached closes */
    MCB_REPLY_STAT,      /* stat: responses until one with key length 0 (the
                           terminator, or a single error response) */
    MCB_REPLY_STAT_SIZES /* stat sizes_enable / sizes_disable: one response,
                            two when the first is sizes_status = error; no
                            terminator (items.c) */
};

struct mcb_request {
    uint8_t opcode;
    uint8_t extlen;
    uint8_t datatype;
    uint16_t vbucket;  /* the header's reserved field */
    uint16_t key_len;  /* as sent */
    uint16_t key_kept; /* bytes at key: min(key_len, MCB_KEY_MAX) */
    uint32_t body_len; /* as sent */
    uint32_t opaque;   /* as sent, read big-endian (responses echo it) */
    uint64_t cas;
    bool known;         /* an opcode memcached implements (mcb_opcode_known) */
    bool quiet;         /* a quiet opcode */
    bool is_write;      /* set add replace append prepend, quiet or not */
    bool is_cas;        /* a write with a non-zero cas field */
    bool key_truncated; /* key_len > MCB_KEY_MAX (memcached: EINVAL, close) */
    bool invalid;       /* memcached answers EINVAL and closes the connection:
                           key over 250 bytes, or key / extras / body lengths
                           its opcode does not accept */
    bool closes;        /* memcached reads nothing after it: quit, quitq, or
                           invalid; the parser then ignores what follows */
    enum mcb_reply reply;
    /* key_kept bytes, NUL-terminated, in the parser: valid until the next
     * call on it */
    const char *key;
    const uint8_t *extras; /* extlen bytes, in the parser, same lifetime */
    /* From the extras, big-endian, when the opcode's extras hold them
     * (set add replace and q: flags + exptime; touch gat gatk and q, flush
     * with 4 bytes of extras: exptime; increment / decrement: delta,
     * initial, exptime); else 0. exptime as sent: memcached reads it as
     * seconds (relative up to 30 days, else a unix time). */
    uint32_t flags;
    int64_t exptime;
    uint64_t delta, initial;
    uint32_t value_len; /* body_len - key_len - extlen */
    uint64_t bytes;     /* bytes memcached consumes for it: header, extras,
                           key and value; header + extras + key + body_len
                           for an unknown opcode; no value for stat and the
                           touch / gat family */
};

/* Internal: the framing state both parsers share. */
struct mcb_frame {
    uint32_t body_max;
    uint8_t magic;
    uint8_t state;
    uint8_t hdr_got;
    uint8_t ext_len, ext_got;
    uint8_t head_want, head_got;
    uint16_t key_len, key_got;
    uint32_t body_len;
    uint64_t skip_left;
    enum mcb_error error;
    uint8_t hdr[MCB_HEADER_LEN];
    uint8_t extras[MCB_EXTRAS_MAX];
    char key[MCB_KEY_MAX + 1];
    uint8_t head[MCB_VALUE_HEAD];
};

struct mcb_req_parser {
    struct mcb_frame f;
};

/* body_max: the largest body length accepted (MCB_BODY_MAX_DEFAULT, or the
 * upstream's item size max + 1 MiB); a larger one is MCB_ERR_BODY_LIMIT
 * (memcached itself would answer E2BIG and discard the value). */
void mcb_req_init(struct mcb_req_parser *p, uint32_t body_max);
/* Consumes bytes of data until a request's header, extras and key are in
 * (MCB_OK, *out filled, *consumed says how many bytes), the buffer ends
 * (MCB_NEED_MORE, all consumed) or the stream cannot be framed (MCB_ERROR,
 * *consumed counts up to the byte that decided it; mcb_req_error says why).
 * The request's value is skipped by the following calls: mcb_req_skip_left
 * says how many of its bytes are still to come (0: its last byte is in).
 * MCB_OK comes before the value, so a large value is never waited for to
 * learn the request; memcached answers only after the value's last byte
 * (1.6.18, even E2BIG, which discards the value first), so pushing the
 * request for pairing at MCB_OK is always in time.
 * After a request that closes, every byte is consumed and ignored
 * (MCB_NEED_MORE). */
enum mcb_result mcb_req_feed(struct mcb_req_parser *p, const void *data, size_t len,
                             size_t *consumed, struct mcb_request *out);
/* True when the parser sits between two requests. */
bool mcb_req_at_boundary(const struct mcb_req_parser *p);
/* Value bytes of the last request still to be skipped (0 when none). */
uint64_t mcb_req_skip_left(const struct mcb_req_parser *p);
/* A request that closes the connection has been seen. */
bool mcb_req_closed(const struct mcb_req_parser *p);
enum mcb_error mcb_req_error(const struct mcb_req_parser *p);

/* --- responses ---------------------------------------------------------- */

struct mcb_response {
    uint8_t opcode; /* the request's, echoed */
    uint8_t extlen;
    uint8_t datatype;
    uint16_t status;
    uint16_t key_len;
    uint16_t key_kept;
    uint32_t body_len;
    uint32_t opaque; /* the request's, echoed */
    uint64_t cas;
    bool key_truncated;
    const char *key;           /* key_kept bytes, NUL-terminated, in the parser:
                              valid until the next call on it */
    const uint8_t *extras;     /* extlen bytes, same lifetime */
    uint32_t flags;            /* a get-family hit (4 bytes of extras), else 0 */
    uint32_t value_len;        /* body_len - key_len - extlen */
    const uint8_t *value_head; /* the value's first value_head_len bytes */
    uint8_t value_head_len;    /* min(value_len, MCB_VALUE_HEAD) */
    bool has_number;           /* increment / decrement success: 8 bytes */
    uint64_t number;           /* ... the counter, big-endian */
    uint64_t bytes;            /* header + body_len */
};

struct mcb_resp_parser {
    struct mcb_frame f;
};

void mcb_resp_init(struct mcb_resp_parser *p, uint32_t body_max);
/* As mcb_req_feed: MCB_OK once a response's header, extras, key and value
 * head are in (the rest of its value is skipped by the following calls);
 * MCB_ERROR for a magic other than 0x81, a body shorter than key + extras,
 * or above body_max. */
enum mcb_result mcb_resp_feed(struct mcb_resp_parser *p, const void *data, size_t len,
                              size_t *consumed, struct mcb_response *out);
bool mcb_resp_at_boundary(const struct mcb_resp_parser *p);
uint64_t mcb_resp_skip_left(const struct mcb_resp_parser *p);
enum mcb_error mcb_resp_error(const struct mcb_resp_parser *p);

/* --- pairing ------------------------------------------------------------- */

enum mcb_outcome {
    MCB_ANSWERED,    /* a response came: status is memcached's (for a stat,
                         the last response's) */
    MCB_SILENT_OK,   /* a quiet request without a response, proven to have
                         succeeded by a later response (or by memcached
                         closing after a quitq): status 0 */
    MCB_SILENT_MISS, /* getq getkq gatq gatkq without a response, proven a
                         miss the same way: status KEY_ENOENT */
    MCB_UNANSWERED   /* the connection ended first (mcb_pairing_close): status 0 */
};

const char *mcb_outcome_name(enum mcb_outcome o);

struct mcb_event {
    uint64_t cookie; /* the caller's, from mcb_pairing_push */
    uint8_t opcode;
    uint32_t opaque;
    enum mcb_outcome outcome;
    uint16_t status;
    uint32_t responses; /* responses paired with it (a stat has many) */
    bool ambiguous;     /* another silent-capable request waiting with the
                           same opcode and opaque could have been the one
                           answered: the response went to the earliest */
};

/* One waiting request; the caller provides the slots. */
struct mcb_pending {
    uint64_t cookie;
    uint32_t opaque;
    uint32_t responses;
    uint16_t status;
    uint8_t opcode;
    uint8_t reply;   /* enum mcb_reply */
    uint8_t outcome; /* enum mcb_outcome, once resolved */
    bool resolved;
    bool ambiguous;
    bool sizes_error; /* stat sizes: the first response was sizes_status=error */
};

/* In request order: resolved entries (events not yet taken) at the head,
 * then the entries still waiting. */
struct mcb_pairing {
    struct mcb_pending *slots;
    size_t cap, head, count;
    size_t resolved;
};

void mcb_pairing_init(struct mcb_pairing *q, struct mcb_pending *slots, size_t cap);
/* Appends a request forwarded to memcached (r->opcode, r->opaque, r->reply
 * of its mcb_request). MCB_ERROR when cap entries are held already. */
enum mcb_result mcb_pairing_push(struct mcb_pairing *q, uint8_t opcode, uint32_t opaque,
                                 enum mcb_reply reply, uint64_t cookie);
/* Pairs one response: the first waiting request that has the response's
 * opcode and opaque, passing over only requests that may stay silent
 * (ON_ERROR / ON_HIT), which are resolved silent. MCB_OK: paired (events may
 * now be ready; none while a stat goes on); MCB_ERROR: no waiting request
 * can have produced it (the queue is left unchanged). */
enum mcb_result mcb_pairing_response(struct mcb_pairing *q, const struct mcb_response *r);
/* Takes the next event, in request order; false when the head request is
 * still waiting (or none is held). */
bool mcb_pairing_next(struct mcb_pairing *q, struct mcb_event *ev);
/* The connection to memcached ended: requests still waiting are resolved.
 * When a quitq is among them, memcached executed everything up to it and
 * sent the failures first, so the silent-capable requests up to it are
 * SILENT_OK / SILENT_MISS and the quitq SILENT_OK; every other one is
 * UNANSWERED. */
void mcb_pairing_close(struct mcb_pairing *q);
/* Entries held: waiting, or resolved and not yet taken. */
size_t mcb_pairing_count(const struct mcb_pairing *q);

#endif
