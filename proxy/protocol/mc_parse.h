/* mc_parse: incremental parsers for memcached's text and meta protocols.
 *
 * Owns: splitting a client's byte stream into requests and an upstream's
 * byte stream into response lines, resuming at any byte boundary, and
 * predicting -- the way memcached 1.6's proto_text.c decides it -- how many
 * bytes each request consumes and what kind of answer it gets.
 *
 * Must never: do I/O, allocate, or write into the caller's buffer. Lines are
 * copied into the parser's own bounded line buffer; data blocks are skipped
 * by counting, never copied. */
#ifndef SLABTAP_MC_PARSE_H
#define SLABTAP_MC_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* memcached closes a connection whose request line has no '\n' within 2048
 * bytes unless it is a get/gets (try_read_command_ascii). */
#define MC_LINE_MAX 2048
#define MC_KEY_MAX 250
/* memcached refuses an O token longer than 32 bytes, the 'O' included
 * (MFLAG_MAX_OPAQUE_LENGTH): an opaque holds at most 31 bytes. */
#define MC_OPAQUE_MAX 32
#define MC_MAX_TOKENS 24 /* memcached's MAX_TOKENS, terminal token included */

enum mc_result {
    MC_OK,        /* one complete request / response line in *out */
    MC_NEED_MORE, /* the buffer ended inside a request; everything consumed */
    MC_ERROR      /* memcached would close the connection here, or the
                     connection speaks the binary protocol (its first byte
                     is 0x80), which slabtap does not parse */
};

/* clang-format off */
#define MC_CMDS(X) \
    X(NONE, "none") X(SET, "set") X(ADD, "add") X(REPLACE, "replace") \
    X(APPEND, "append") X(PREPEND, "prepend") X(CAS, "cas") X(GET, "get") \
    X(GETS, "gets") X(GAT, "gat") X(GATS, "gats") X(DELETE, "delete") \
    X(INCR, "incr") X(DECR, "decr") X(TOUCH, "touch") X(FLUSH_ALL, "flush_all") \
    X(VERSION, "version") X(VERBOSITY, "verbosity") X(STATS, "stats") \
    X(QUIT, "quit") X(MS, "ms") X(MG, "mg") X(MD, "md") X(MA, "ma") \
    X(MN, "mn") X(ME, "me") X(WATCH, "watch") X(OTHER, "other") \
    X(INVALID, "invalid")
/* clang-format on */

enum mc_cmd {
#define MC_CMD_ENUM(id, name) MC_CMD_##id,
    MC_CMDS(MC_CMD_ENUM)
#undef MC_CMD_ENUM
        MC_CMD_COUNT
};

const char *mc_cmd_name(enum mc_cmd cmd);

/* What memcached sends back for a request. */
enum mc_reply {
    MC_REPLY_LINE,   /* exactly one line (a VA line brings its data block) */
    MC_REPLY_MULTI,  /* lines until END, or one error line */
    MC_REPLY_SILENT, /* noreply / meta q: nothing, unless an answer not
                         suppressed for it comes (see mc_reply_is_mine) */
    MC_REPLY_CLOSE,  /* quit, an HTTP request line: memcached closes the connection */
    MC_REPLY_STREAM, /* watch: memcached streams until the connection ends */
    MC_REPLY_SIZES   /* stats sizes_enable / sizes_disable: one STAT line, or
                        two after "STAT sizes_status error"; no END */
};

struct mc_request {
    enum mc_cmd cmd;
    enum mc_reply reply;
    bool is_write;          /* set add replace append prepend cas ms */
    bool noreply;           /* text "noreply" or meta "q" */
    bool bad_data;          /* the data block did not end in \r\n */
    bool swallowed;         /* memcached refuses it but reads its data block */
    bool key_too_long;      /* a get-family request with a key over MC_KEY_MAX:
                            memcached answers CLIENT_ERROR bad command line
                            format and drops the answers it had queued on
                            that connection */
    bool exclusive;         /* cannot share a connection with other clients:
                            watch (a stream without end), lru_crawler
                            metadump and stats detail dump (long dumps) */
    bool long_line;         /* the request line (before its '\n') is over
                            MC_LINE_MAX bytes and is no multiget memcached
                            reads on: a read of memcached's that ends inside
                            it makes memcached close the connection, so
                            where it may be cut depends on what shares the
                            connection */
    bool stops_server;      /* shutdown (memcached -A closes every connection) */
    bool binary_magic;      /* its first byte is 0x80: the first bytes of a new
                               connection, it would switch it to binary */
    bool version_dependent; /* memcached 1.6.18 and 1.6.45 answer or frame it
                               differently (see docs/shared-connections.md) */
    char ms_mode;           /* ms M<mode> flag, 0 when absent */
    uint8_t key_len_raw;    /* key bytes as sent (base64 text when key_b64) */
    bool key_b64;
    uint16_t key_len; /* key length as memcached stores it (decoded) */
    char key[MC_KEY_MAX + 1];
    uint8_t opaque_len;
    char opaque[MC_OPAQUE_MAX + 1]; /* meta O flag, without the 'O' */
    bool has_opaque;                /* an O flag was sent (its value may be empty) */
    bool want_key;                  /* meta k flag: the answer echoes the key */
    bool vivify;                    /* meta N flag: mg/ma create the item on a miss */
    uint32_t flags;
    int64_t exptime;   /* as memcached reads it (a 32-bit truncation of the
                            number sent, like its safe_strtol); 0 when absent.
                            Also gat's and flush_all's delay. */
    int64_t value_len; /* data block without \r\n; -1 when none */
    uint32_t nkeys;    /* keys in a get-family request (all of a long one) */
    size_t bytes;      /* bytes of the request on the wire */
};

enum mc_req_state { MC_REQ_LINE, MC_REQ_DATA, MC_REQ_LONG_GET, MC_REQ_CLOSED };

struct mc_req_parser {
    enum mc_req_state state;
    bool started;    /* the connection's first byte has been seen */
    char line_last;  /* last byte of the line so far */
    size_t line_len; /* bytes of the line so far, as sent */
    /* line[] holds the line with every run of spaces kept as one space:
     * memcached's tokenizer splits on runs of spaces, so the tokens are the
     * same, and a line padded with spaces keeps all its tokens */
    size_t kept;           /* bytes in line[] */
    size_t ov_bytes;       /* bytes of the line past the MC_LINE_MAX kept */
    uint8_t lead;          /* leading spaces as sent, counted up to 101 */
    bool nonspace;         /* a byte other than a space has been seen */
    size_t data_left;      /* bytes of the data block still to come */
    char data_tail[2];     /* last two bytes of the data block seen so far */
    size_t bytes;          /* bytes of the request in progress */
    struct mc_request req; /* the request whose data block is being skipped */
    /* words past the MC_LINE_MAX bytes kept of a long line (a multiget) */
    uint32_t ov_words;
    uint8_t ov_word_len;    /* bytes of the current word, counted up to 2 */
    uint16_t ov_cur_len;    /* ... counted up to MC_KEY_MAX + 2 */
    uint32_t ov_long_words; /* words past the cut longer than MC_KEY_MAX */
    bool ov_in_word;
    bool ov_nul; /* the line ended at a NUL byte, as memcached reads it */
    char line[MC_LINE_MAX + 1];
};

void mc_req_init(struct mc_req_parser *p);
/* Consumes bytes from buf until one request completes (MC_OK, *used says
 * how many bytes), the buffer ends (MC_NEED_MORE, all consumed) or the
 * stream is one memcached would close (MC_ERROR). */
enum mc_result mc_req_parse(struct mc_req_parser *p, const char *buf, size_t len, size_t *used,
                            struct mc_request *out);
/* The shared-connection rule (docs/shared-connections.md): may r, parsed
 * whole, go on a memcached connection other clients share? Only when
 * memcached answers it there without closing the connection, changing its
 * mode or state, or reading other bytes than r's own, the same way on
 * 1.6.18 and 1.6.45: false for quit and HTTP lines (MC_REPLY_CLOSE), watch
 * and the dumps (exclusive), a get key over 250 bytes (memcached drops the
 * answers it holds), lines memcached's read may cut (long_line) and
 * requests the two versions frame differently (version_dependent), and
 * shutdown (stops_server). */
bool mc_req_shareable(const struct mc_request *r);
/* True when the parser sits between two requests. */
bool mc_req_at_boundary(const struct mc_req_parser *p);

/* --- responses ---------------------------------------------------------- */

/* clang-format off */
#define MC_CODES(X) \
    X(UNKNOWN, "UNKNOWN") X(STORED, "STORED") X(NOT_STORED, "NOT_STORED") \
    X(EXISTS, "EXISTS") X(NOT_FOUND, "NOT_FOUND") X(DELETED, "DELETED") \
    X(TOUCHED, "TOUCHED") X(OK, "OK") X(END, "END") X(VALUE, "VALUE") \
    X(STAT, "STAT") X(ERROR, "ERROR") X(CLIENT_ERROR, "CLIENT_ERROR") \
    X(SERVER_ERROR, "SERVER_ERROR") X(NUMBER, "NUMBER") X(VERSION, "VERSION") \
    X(RESET, "RESET") X(HD, "HD") X(VA, "VA") X(EN, "EN") X(NF, "NF") \
    X(NS, "NS") X(EX, "EX") X(MN, "MN") X(ME, "ME")
/* clang-format on */

enum mc_code {
#define MC_CODE_ENUM(id, name) MC_CODE_##id,
    MC_CODES(MC_CODE_ENUM)
#undef MC_CODE_ENUM
        MC_CODE_COUNT
};

const char *mc_code_name(enum mc_code code);

struct mc_line {
    enum mc_code code;
    const char *text; /* the line without \r\n, in the parser's buffer */
    size_t len;       /* bytes kept (at most MC_LINE_MAX) */
    bool truncated;   /* the line was longer than MC_LINE_MAX */
    int64_t data_len; /* VALUE / VA: data block length, else -1 */
    size_t bytes;     /* bytes on the wire: line, \r\n and data block */
};

enum mc_resp_state { MC_RESP_LINE, MC_RESP_DATA };

struct mc_resp_parser {
    enum mc_resp_state state;
    size_t line_len;
    size_t wire_len; /* bytes of the current line on the wire */
    bool truncated;
    size_t data_left;
    struct mc_line pending; /* a VALUE/VA line waiting for its data block */
    char line[MC_LINE_MAX + 1];
};

void mc_resp_init(struct mc_resp_parser *p);
/* Returns MC_OK with one complete line (and its data block, skipped) in
 * *out, MC_NEED_MORE when buf ended first, MC_ERROR when a data block does
 * not end in \r\n (an upstream memcached never sends that). */
enum mc_result mc_resp_parse(struct mc_resp_parser *p, const char *buf, size_t len, size_t *used,
                             struct mc_line *out);
bool mc_resp_at_boundary(const struct mc_resp_parser *p);

/* Is line (the first line of an answer) one that request r, whose answer
 * may be suppressed, can have produced? Used to skip silent requests.
 * memcached 1.6: text noreply suppresses every answer; a meta q request
 * answers only with the codes its command can send unsuppressed, echoing
 * the O and k flags it asked for, or with an error it can get at run time. */
bool mc_reply_is_mine(const struct mc_request *r, const struct mc_line *line);
/* Does this line end a MC_REPLY_MULTI answer? (END, an error line, or one of
 * lru_crawler metadump's one-line refusals BUSY / BADCLASS / NOTSTARTED) */
bool mc_line_ends_multi(const struct mc_line *line);
/* Does line end r's answer? first: it is the answer's first line.
 * MC_REPLY_MULTI ends as mc_line_ends_multi says, MC_REPLY_SIZES after
 * one or two lines, the others after one. */
bool mc_answer_ends(const struct mc_request *r, const struct mc_line *line, bool first);
/* Is this line an error line (ERROR, CLIENT_ERROR, SERVER_ERROR)? */
bool mc_line_is_error(const struct mc_line *line);

#endif
