/* test_mc_parse: byte-exact tables for mc_parse.c, the request / response
 * parsers and pairing rules of memcached's text and meta protocols.
 *
 * Ground truth is memcached 1.6.18 itself (Debian's): every expectation
 * below that is not plain protocol.txt was checked by sending the same bytes
 * to a real memcached and reading what it answered ("1.6.18:" comments).
 * Each request / response table row is fed whole, split in two at every
 * offset and byte by byte, every chunk in its own exact-size heap buffer
 * (so ASan sees any read past a chunk), and must give the same sequence.
 * All rows are also fed as one pipelined batch, again split everywhere.
 * Must never pass silently: every mismatch prints the case name, the split
 * and the field, and the exit status is 1 (tests/unit/check.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_parse.h"

#include "check.h"

/* RQ() / RL() give value_len / data_len a default of -1 that a row may
 * override: that override is the point. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winitializer-overrides"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Woverride-init"
#endif

/* --- requests -------------------------------------------------------------- */

#define KL_ZERO (-1) /* key_len 0 although a key was sent (bad base64) */

/* One expected request. Fields left out mean: no key, flags / exptime 0,
 * no data block (-1), reply LINE, not silent, not bad, not swallowed. */
struct rq {
    int res; /* MC_OK; MC_ERROR; MC_NEED_MORE: consumed, nothing out */
    enum mc_cmd cmd;
    enum mc_reply reply;
    const char *key; /* as stored in mc_request.key (at most 250 bytes) */
    int key_len;     /* 0: strlen(key); KL_ZERO: 0 */
    bool b64;
    uint32_t flags;
    int64_t exptime;
    int64_t value_len;
    bool noreply, bad_data, swallowed, want_key, vivify, key_too_long;
    bool long_line, vdep; /* mc_request.long_line, .version_dependent */
    bool not_write;       /* a storage command refused before is_write is set */
    uint32_t nkeys;
    const char *opaque; /* NULL: no O flag */
    char mode;
};

#define RQ(...) \
    { \
        .value_len = -1, __VA_ARGS__ \
    }

struct seg {
    const char *in;
    size_t len;
    struct rq want;
};

#define SEG(s, ...) \
    { \
        s, sizeof(s) - 1, RQ(__VA_ARGS__) \
    }
#define MAX_SEGS 6

enum { NO_BATCH = 1 };

struct req_case {
    const char *name;
    struct seg segs[MAX_SEGS];
    unsigned opts;
};

#define CASE(name, ...) \
    { \
        name, { __VA_ARGS__ }, 0 \
    }
#define CASE_ALONE(name, ...) \
    { \
        name, { __VA_ARGS__ }, NO_BATCH \
    } /* not in the batch */
#define MN_SEG SEG("mn\r\n", .cmd = MC_CMD_MN)
#define INVALID(s) SEG(s, .cmd = MC_CMD_INVALID)

/* 31 and 32 bytes of opaque */
#define OP31 "1234567890123456789012345678901"
#define OP32 OP31 "2"

static const struct req_case req_cases[] = {
    /* --- storage commands ------------------------------------------------ */
    CASE("set", SEG("set k 0 0 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("set flags exptime", SEG("set foo 42 3600 5\r\nhello\r\n", .cmd = MC_CMD_SET, .key = "foo",
                                  .flags = 42, .exptime = 3600, .value_len = 5)),
    CASE("set noreply", SEG("set k 5 100 3 noreply\r\nabc\r\n", .cmd = MC_CMD_SET, .key = "k",
                            .reply = MC_REPLY_SILENT, .noreply = true, .flags = 5, .exptime = 100,
                            .value_len = 3)),
    CASE("add", SEG("add k 1 2 3\r\nabc\r\n", .cmd = MC_CMD_ADD, .key = "k", .flags = 1,
                    .exptime = 2, .value_len = 3)),
    CASE("add noreply",
         SEG("add k 1 2 3 noreply\r\nabc\r\n", .cmd = MC_CMD_ADD, .key = "k", .flags = 1,
             .exptime = 2, .value_len = 3, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("replace",
         SEG("replace k 0 0 2\r\nab\r\n", .cmd = MC_CMD_REPLACE, .key = "k", .value_len = 2)),
    CASE("replace noreply",
         SEG("replace k 0 0 2 noreply\r\nab\r\n", .cmd = MC_CMD_REPLACE, .key = "k", .value_len = 2,
             .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("append",
         SEG("append k 0 0 2\r\nab\r\n", .cmd = MC_CMD_APPEND, .key = "k", .value_len = 2)),
    CASE("append noreply", SEG("append k 0 0 2 noreply\r\nab\r\n", .cmd = MC_CMD_APPEND, .key = "k",
                               .value_len = 2, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("prepend",
         SEG("prepend k 0 0 2\r\nab\r\n", .cmd = MC_CMD_PREPEND, .key = "k", .value_len = 2)),
    CASE("prepend noreply",
         SEG("prepend k 0 0 2 noreply\r\nab\r\n", .cmd = MC_CMD_PREPEND, .key = "k", .value_len = 2,
             .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("cas", SEG("cas k 0 0 1 99\r\na\r\n", .cmd = MC_CMD_CAS, .key = "k", .value_len = 1)),
    CASE("cas noreply",
         SEG("cas k 7 8 1 99 noreply\r\na\r\n", .cmd = MC_CMD_CAS, .key = "k", .flags = 7,
             .exptime = 8, .value_len = 1, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("cas without cas id: ERROR, no data",
         SEG("cas k 0 0 1\r\n", .cmd = MC_CMD_CAS, .vdep = true, .not_write = true),
         INVALID("a\r\n")),
    CASE("cas id -1 refused",
         SEG("cas k 0 0 1 -1\r\n", .cmd = MC_CMD_CAS, .vdep = true, .key = "k"), INVALID("a\r\n")),
    /* 1.6.18: strtoull wraps it to 1, which does not look negative */
    CASE("cas id -18446744073709551615 reads as 1",
         SEG("cas k 0 0 1 -18446744073709551615\r\na\r\n", .cmd = MC_CMD_CAS, .key = "k",
             .value_len = 1)),
    CASE("value holding \\r\\n",
         SEG("set k 0 0 8\r\nab\r\ncd\r\n\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 8)),
    CASE("value that looks like commands",
         SEG("set k 0 0 17\r\nget x\r\nquit\r\nmn\r\n\r\n", .cmd = MC_CMD_SET, .key = "k",
             .value_len = 17),
         MN_SEG),
    CASE("empty value", SEG("set k 0 0 0\r\n\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 0)),
    /* 1.6.18: CLIENT_ERROR bad data chunk, then ERROR for the "\r\n" left */
    CASE("bad data chunk",
         SEG("set k 0 0 1\r\nabc", .cmd = MC_CMD_SET, .key = "k", .value_len = 1, .bad_data = true),
         INVALID("\r\n"), MN_SEG),
    CASE("bad data chunk noreply",
         SEG("set k 0 0 1 noreply\r\nab\r", .cmd = MC_CMD_SET, .key = "k", .value_len = 1,
             .bad_data = true, .noreply = true, .reply = MC_REPLY_SILENT),
         INVALID("\n"), MN_SEG),
    CASE("bad data chunk, \\n line end",
         SEG("set k 0 0 1\n\na\r", .cmd = MC_CMD_SET, .key = "k", .value_len = 1, .bad_data = true),
         INVALID("\n")),
    /* 1.6.18: "set k 0 0 abc" -> CLIENT_ERROR, the next line is a command */
    CASE("set length not a number",
         SEG("set k 0 0 abc\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         SEG("get k\r\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k", .nkeys = 1)),
    CASE("set wrong token count",
         SEG("set k 0 0\r\n", .cmd = MC_CMD_SET, .vdep = true, .not_write = true),
         INVALID("x\r\n")),
    CASE("set negative length",
         SEG("set k 0 0 -1\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"), INVALID("a\r\n")),
    CASE("set length INT_MAX-1 refused",
         SEG("set k 0 0 2147483646\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"), MN_SEG),
    CASE("set noreply then a token: ERROR, not silent",
         SEG("set k 0 0 1 noreply x\r\n", .cmd = MC_CMD_SET, .vdep = true, .not_write = true),
         INVALID("a\r\n")),
    CASE("set bad number noreply: silent, no data",
         SEG("set k x 0 1 noreply\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k",
             .noreply = true, .reply = MC_REPLY_SILENT),
         INVALID("a\r\n")),
    /* memcached's safe_strto*: 64-bit strto*, then a 32-bit truncation */
    CASE("flags 2^32 reads as 0",
         SEG("set k 4294967296 0 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("flags 2^64-1 reads as 2^32-1",
         SEG("set k 18446744073709551615 0 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k",
             .flags = 4294967295u, .value_len = 1)),
    CASE("flags 2^64 refused",
         SEG("set k 18446744073709551616 0 1\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         INVALID("a\r\n")),
    CASE("flags -1 refused", SEG("set k -1 0 1\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         INVALID("a\r\n")),
    CASE("flags -0", SEG("set k -0 0 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("flags -18446744073709551615 reads as 1",
         SEG("set k -18446744073709551615 0 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .flags = 1,
             .value_len = 1)),
    CASE("exptime 2^31 wraps", SEG("set k 0 2147483648 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k",
                                   .exptime = INT32_MIN, .value_len = 1)),
    CASE("exptime -2^31-1 wraps", SEG("set k 0 -2147483649 1\r\na\r\n", .cmd = MC_CMD_SET,
                                      .key = "k", .exptime = INT32_MAX, .value_len = 1)),
    CASE("exptime negative", SEG("set k 0 -1 1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k",
                                 .exptime = -1, .value_len = 1)),
    CASE("length 2^32+1 reads as 1",
         SEG("set k 0 0 4294967297\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("length -(2^32-1) reads as 1",
         SEG("set k 0 0 -4294967295\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("length 2^32-1 reads as -1",
         SEG("set k 0 0 4294967295\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         INVALID("a\r\n")),
    CASE("length 2^63 out of range",
         SEG("set k 0 0 9223372036854775808\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         INVALID("a\r\n")),
    CASE("length +1", SEG("set k 0 0 +1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("length 1x refused", SEG("set k 0 0 1x\r\n", .cmd = MC_CMD_SET, .vdep = true, .key = "k"),
         INVALID("a\r\n")),
    CASE("length 1\\t9 reads as 1",
         SEG("set k 0 0 1\t9\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("length \\t1",
         SEG("set k 0 0 \t1\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("length zero padded past 64 bytes",
         SEG("set k 0 0 000000000000000000000000000000000000000000000000000000000000000000000000001"
             "\r\na\r\n",
             .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("line ends in \\r\\r\\n",
         SEG("set k 0 0 1\r\r\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1)),
    CASE("line ends in \\n only",
         SEG("set k 0 0 1\na\r\n", .cmd = MC_CMD_SET, .key = "k", .value_len = 1),
         SEG("get k\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k", .nkeys = 1),
         SEG("mn\n", .cmd = MC_CMD_MN)),
    CASE("extra spaces", SEG("  set   k 0 0 1  noreply  \r\na\r\n", .cmd = MC_CMD_SET, .key = "k",
                             .value_len = 1, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("NUL inside the key: the line ends there",
         SEG("set k\0 0 0 1\r\n", .cmd = MC_CMD_SET, .vdep = true, .not_write = true),
         INVALID("a\r\n"), MN_SEG),
    CASE("NUL inside the command", INVALID("se\0t k 0 0 1\r\n"), INVALID("a\r\n")),

    /* --- get family -------------------------------------------------------- */
    CASE("get",
         SEG("get k\r\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k", .nkeys = 1)),
    CASE("get multi", SEG("get a bb ccc\r\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI,
                          .key = "a", .nkeys = 3)),
    CASE("get noreply is a key", SEG("get a noreply\r\n", .cmd = MC_CMD_GET,
                                     .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 2)),
    CASE("gets",
         SEG("gets a b\r\n", .cmd = MC_CMD_GETS, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 2)),
    CASE("gat", SEG("gat 100 a b\r\n", .cmd = MC_CMD_GAT, .reply = MC_REPLY_MULTI, .key = "a",
                    .exptime = 100, .nkeys = 2)),
    CASE("gats", SEG("gats -1 a\r\n", .cmd = MC_CMD_GATS, .reply = MC_REPLY_MULTI, .key = "a",
                     .exptime = -1, .nkeys = 1)),
    CASE("gat bad exptime",
         SEG("gat x a\r\n", .cmd = MC_CMD_GAT, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 1)),
    CASE("gat without keys: END",
         SEG("gat 10\r\n", .cmd = MC_CMD_GAT, .reply = MC_REPLY_MULTI, .exptime = 10)),
    CASE("bget",
         SEG("bget k\r\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k", .nkeys = 1)),
    CASE("get without key: ERROR", INVALID("get\r\n"), INVALID("get \r\n")),
    CASE("get past the token window",
         SEG("get k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 k17 k18 k19 k20 k21 k22 "
             "k23 k24 k25 k26 k27 k28 k29 k30\r\n",
             .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k1", .nkeys = 30)),
    CASE("get past the token window, trailing space",
         SEG("get k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 k17 k18 k19 k20 k21 k22 "
             "k23 k24 k25  k26 \r\n",
             .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k1", .nkeys = 26)),
    CASE("get: exactly 22 keys",
         SEG("get k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k12 k13 k14 k15 k16 k17 k18 k19 k20 k21 k22 "
             "\r\n",
             .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "k1", .nkeys = 22)),

    /* --- delete ------------------------------------------------------------ */
    CASE("delete", SEG("delete k\r\n", .cmd = MC_CMD_DELETE, .key = "k")),
    CASE("delete k 0", SEG("delete k 0\r\n", .cmd = MC_CMD_DELETE, .key = "k")),
    CASE("delete k 0 noreply", SEG("delete k 0 noreply\r\n", .cmd = MC_CMD_DELETE, .key = "k",
                                   .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("delete k noreply", SEG("delete k noreply\r\n", .cmd = MC_CMD_DELETE, .key = "k",
                                 .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("delete k x: CLIENT_ERROR", SEG("delete k x\r\n", .cmd = MC_CMD_DELETE, .key = "k")),
    /* 1.6.18: the usage CLIENT_ERROR is suppressed by noreply */
    CASE("delete k x noreply: silent", SEG("delete k x noreply\r\n", .cmd = MC_CMD_DELETE,
                                           .key = "k", .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("delete k noreply 0: CLIENT_ERROR",
         SEG("delete k noreply 0\r\n", .cmd = MC_CMD_DELETE, .key = "k")),
    CASE("delete k 0 noreply x: ERROR", SEG("delete k 0 noreply x\r\n", .cmd = MC_CMD_DELETE)),
    CASE("delete without key", SEG("delete\r\n", .cmd = MC_CMD_DELETE)),

    /* --- incr decr touch --------------------------------------------------- */
    CASE("incr", SEG("incr k 5\r\n", .cmd = MC_CMD_INCR, .key = "k")),
    CASE("decr noreply", SEG("decr k 5 noreply\r\n", .cmd = MC_CMD_DECR, .key = "k",
                             .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("incr bad delta noreply", SEG("incr k x noreply\r\n", .cmd = MC_CMD_INCR, .vdep = true,
                                       .key = "k", .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("incr without delta: ERROR", SEG("incr k\r\n", .cmd = MC_CMD_INCR)),
    CASE("touch", SEG("touch k 10\r\n", .cmd = MC_CMD_TOUCH, .key = "k", .exptime = 10)),
    CASE("touch noreply", SEG("touch k 10 noreply\r\n", .cmd = MC_CMD_TOUCH, .key = "k",
                              .exptime = 10, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("touch bad exptime", SEG("touch k x\r\n", .cmd = MC_CMD_TOUCH, .key = "k")),

    /* --- flush_all version verbosity ------------------------------------- */
    CASE("flush_all", SEG("flush_all\r\n", .cmd = MC_CMD_FLUSH_ALL)),
    CASE("flush_all delay", SEG("flush_all 10\r\n", .cmd = MC_CMD_FLUSH_ALL, .exptime = 10)),
    CASE("flush_all noreply", SEG("flush_all noreply\r\n", .cmd = MC_CMD_FLUSH_ALL, .noreply = true,
                                  .reply = MC_REPLY_SILENT)),
    CASE("flush_all delay noreply", SEG("flush_all 10 noreply\r\n", .cmd = MC_CMD_FLUSH_ALL,
                                        .exptime = 10, .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("flush_all bad delay", SEG("flush_all x\r\n", .cmd = MC_CMD_FLUSH_ALL)),
    CASE("flush_all too many tokens",
         SEG("flush_all 1 2 noreply\r\n", .cmd = MC_CMD_FLUSH_ALL, .vdep = true)),
    CASE("version", SEG("version\r\n", .cmd = MC_CMD_VERSION)),
    CASE("version noreply still answers", SEG("version noreply\r\n", .cmd = MC_CMD_VERSION)),
    CASE("verbosity", SEG("verbosity 1\r\n", .cmd = MC_CMD_VERBOSITY)),
    CASE("verbosity noreply", SEG("verbosity 1 noreply\r\n", .cmd = MC_CMD_VERBOSITY,
                                  .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("verbosity noreply alone", SEG("verbosity noreply\r\n", .cmd = MC_CMD_VERBOSITY,
                                        .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("verbosity without level", SEG("verbosity\r\n", .cmd = MC_CMD_VERBOSITY)),

    /* --- stats ------------------------------------------------------------- */
    CASE("stats", SEG("stats\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats slabs", SEG("stats slabs\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats items", SEG("stats items\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats settings", SEG("stats settings\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats reset", SEG("stats reset\r\n", .cmd = MC_CMD_STATS)),
    CASE("stats detail on", SEG("stats detail on\r\n", .cmd = MC_CMD_STATS)),
    CASE("stats detail off", SEG("stats detail off\r\n", .cmd = MC_CMD_STATS)),
    CASE("stats detail: CLIENT_ERROR usage", SEG("stats detail\r\n", .cmd = MC_CMD_STATS)),
    CASE("stats detail dump",
         SEG("stats detail dump\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats cachedump 1 1",
         SEG("stats cachedump 1 1\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats unknown: ERROR ends the multi",
         SEG("stats foo\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE("stats sizes_enable: STAT lines, no END",
         SEG("stats sizes_enable\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_SIZES)),
    CASE("stats sizes_disable: STAT lines, no END",
         SEG("stats sizes_disable\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_SIZES)),
    CASE("stats sizes: a multi",
         SEG("stats sizes\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),
    CASE_ALONE("an HTTP request line: memcached closes without a word",
               SEG("POST / HTTP/1.1\r\n", .cmd = MC_CMD_INVALID, .reply = MC_REPLY_CLOSE),
               SEG("Host: x\r\n\r\nset proxy_pwned 0 0 3\r\nyes\r\n", .res = MC_NEED_MORE)),
    CASE_ALONE("GET with an HTTP version",
               SEG("GET /x HTTP/1.0\r\n", .cmd = MC_CMD_INVALID, .reply = MC_REPLY_CLOSE)),
    CASE("an unknown command without HTTP/: ERROR",
         SEG("POST / HTTQ/1.1\r\n", .cmd = MC_CMD_INVALID)),
    CASE("stats noreply is a subcommand",
         SEG("stats noreply\r\n", .cmd = MC_CMD_STATS, .reply = MC_REPLY_MULTI)),

    /* --- quit, watch, other commands -------------------------------------- */
    CASE_ALONE("quit: nothing read after it",
               SEG("quit\r\n", .cmd = MC_CMD_QUIT, .reply = MC_REPLY_CLOSE),
               SEG("get k\r\nset k 0 0 1\r\n", .res = MC_NEED_MORE)),
    CASE_ALONE("quit with arguments",
               SEG("quit now\r\n", .cmd = MC_CMD_QUIT, .reply = MC_REPLY_CLOSE)),
    CASE_ALONE("watch", SEG("watch\r\n", .cmd = MC_CMD_WATCH, .reply = MC_REPLY_STREAM),
               SEG("mn\r\n", .res = MC_NEED_MORE)),
    CASE_ALONE("watch names", SEG("watch fetchers mutations rawcmds evictions sysevents connevents "
                                  "proxyreqs proxyevents proxyuser\r\n",
                                  .cmd = MC_CMD_WATCH, .reply = MC_REPLY_STREAM)),
    /* 1.6.18: "watch foo\r\nmn\r\n" -> ERROR, MN */
    CASE("watch unknown name: ERROR, goes on",
         SEG("watch foo\r\n", .cmd = MC_CMD_WATCH, .vdep = true), MN_SEG),
    CASE("watch deletions is not in 1.6.18",
         SEG("watch fetchers deletions\r\n", .cmd = MC_CMD_WATCH, .vdep = true), MN_SEG),
    /* 1.6.18: "watch noreply\r\nmn\r\n" -> MN */
    CASE("watch noreply: silent",
         SEG("watch fetchers noreply\r\n", .cmd = MC_CMD_WATCH, .vdep = true, .noreply = true,
             .reply = MC_REPLY_SILENT),
         MN_SEG),
    CASE("cache_memlimit", SEG("cache_memlimit 100\r\n", .cmd = MC_CMD_OTHER)),
    CASE("cache_memlimit noreply", SEG("cache_memlimit 100 noreply\r\n", .cmd = MC_CMD_OTHER,
                                       .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("slabs automove noreply", SEG("slabs automove 1 noreply\r\n", .cmd = MC_CMD_OTHER,
                                       .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("slabs reassign noreply: CLIENT_ERROR",
         SEG("slabs reassign 1 noreply\r\n", .cmd = MC_CMD_OTHER, .vdep = true)),
    CASE("slabs noreply: ERROR", SEG("slabs noreply\r\n", .cmd = MC_CMD_OTHER, .vdep = true)),
    CASE("lru noreply", SEG("lru mode flat noreply\r\n", .cmd = MC_CMD_OTHER, .noreply = true,
                            .reply = MC_REPLY_SILENT)),
    CASE("lru alone: ERROR", SEG("lru\r\n", .cmd = MC_CMD_OTHER)),
    CASE("extstore noreply", SEG("extstore noreply\r\n", .cmd = MC_CMD_OTHER, .noreply = true,
                                 .reply = MC_REPLY_SILENT)),
    CASE("lru_crawler metadump",
         SEG("lru_crawler metadump all\r\n", .cmd = MC_CMD_OTHER, .reply = MC_REPLY_MULTI)),
    CASE("lru_crawler crawl", SEG("lru_crawler crawl all\r\n", .cmd = MC_CMD_OTHER)),
    CASE("shutdown", SEG("shutdown\r\n", .cmd = MC_CMD_OTHER)),
    CASE("unknown command", INVALID("foo bar\r\n")),
    CASE("one-byte command", INVALID("x\r\n")),
    CASE("commands are case sensitive", INVALID("GET k\r\n")),
    CASE("tab is no separator", INVALID("get\tk\r\n")),
    CASE("unknown meta command", INVALID("mz k\r\n")),
    CASE("empty lines", INVALID("\r\n"), INVALID("\n"), INVALID(" \r\n"), INVALID("\r\r\n"),
         MN_SEG),
    CASE("binary garbage", INVALID("\x00\x01\x02\xff\xfe\r\n"), INVALID("\x80\x0b\r\n"), MN_SEG),

    /* --- meta -------------------------------------------------------------- */
    CASE("mn", SEG("mn\r\n", .cmd = MC_CMD_MN)),
    CASE("mn with tokens", SEG("mn x y\r\n", .cmd = MC_CMD_MN)),
    CASE("me", SEG("me k\r\n", .cmd = MC_CMD_ME, .key = "k")),
    CASE("me without key", SEG("me\r\n", .cmd = MC_CMD_ME)),
    CASE("me base64",
         SEG("me Zm9v b\r\n", .cmd = MC_CMD_ME, .key = "Zm9v", .key_len = 3, .b64 = true)),
    CASE("mg", SEG("mg k\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg flags",
         SEG("mg k v q k O123 T30 s t c f l h u\r\n", .cmd = MC_CMD_MG, .key = "k", .noreply = true,
             .reply = MC_REPLY_SILENT, .opaque = "123", .want_key = true, .exptime = 30)),
    CASE("mg q", SEG("mg k q\r\n", .cmd = MC_CMD_MG, .key = "k", .noreply = true,
                     .reply = MC_REPLY_SILENT)),
    CASE("mg N vivify", SEG("mg k N30 q\r\n", .cmd = MC_CMD_MG, .key = "k", .noreply = true,
                            .reply = MC_REPLY_SILENT, .vivify = true)),
    CASE("mg without key: ERROR", SEG("mg\r\n", .cmd = MC_CMD_MG)),
    CASE("mg invalid flag", SEG("mg k Z\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg q invalid flag: error sent", SEG("mg k q Z\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg duplicate flag", SEG("mg k q T1 T2\r\n", .cmd = MC_CMD_MG, .key = "k", .exptime = 1)),
    CASE("mg flag byte >= 127", SEG("mg k q \x80\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg bad T", SEG("mg k q Tx\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg empty opaque", SEG("mg k q O\r\n", .cmd = MC_CMD_MG, .key = "k", .opaque = "",
                                .noreply = true, .reply = MC_REPLY_SILENT)),
    CASE("mg opaque of 31 bytes", SEG("mg k q O" OP31 "\r\n", .cmd = MC_CMD_MG, .key = "k",
                                      .opaque = OP31, .noreply = true, .reply = MC_REPLY_SILENT)),
    /* 1.6.18: "mg k v O" + 32 bytes -> CLIENT_ERROR opaque token too long */
    CASE("mg opaque of 32 bytes: too long",
         SEG("mg k q O" OP32 "\r\n", .cmd = MC_CMD_MG, .key = "k")),
    CASE("mg base64 key", SEG("mg Zm9vYg== b k v\r\n", .cmd = MC_CMD_MG,
                              .key = "Zm9vYg==", .key_len = 4, .b64 = true, .want_key = true)),
    /* 1.6.18 base64_decode: stops after the first padded quad */
    CASE("mg base64 stops at padding",
         SEG("mg Zm==Zm9v b k\r\n", .cmd = MC_CMD_MG, .key = "Zm==Zm9v", .key_len = 1, .b64 = true,
             .want_key = true)),
    CASE("mg base64 skips other bytes",
         SEG("mg -Zm9v b\r\n", .cmd = MC_CMD_MG, .key = "-Zm9v", .key_len = 3, .b64 = true)),
    CASE("mg base64 short",
         SEG("mg Zm9 b\r\n", .cmd = MC_CMD_MG, .key = "Zm9", .key_len = KL_ZERO, .b64 = true)),
    CASE(
        "mg base64 bad padding",
        SEG("mg Zm9vYg= b\r\n", .cmd = MC_CMD_MG, .key = "Zm9vYg=", .key_len = KL_ZERO,
            .b64 = true),
        SEG("mg ==== b\r\n", .cmd = MC_CMD_MG, .key = "====", .key_len = KL_ZERO, .b64 = true),
        SEG("mg Z=== b\r\n", .cmd = MC_CMD_MG, .key = "Z===", .key_len = KL_ZERO, .b64 = true),
        SEG("mg Zm9v== b\r\n", .cmd = MC_CMD_MG, .key = "Zm9v==", .key_len = KL_ZERO, .b64 = true)),
    CASE("ms", SEG("ms k 1\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1)),
    CASE("ms flags", SEG("ms k 3 q T10 F5 MS k O9 I C12 c\r\nabc\r\n", .cmd = MC_CMD_MS, .key = "k",
                         .value_len = 3, .noreply = true, .reply = MC_REPLY_SILENT, .exptime = 10,
                         .flags = 5, .mode = 'S', .want_key = true, .opaque = "9")),
    CASE("ms value holding \\r\\n", SEG("ms k 4 q\r\n\r\n\r\n\r\n", .cmd = MC_CMD_MS, .key = "k",
                                        .value_len = 4, .noreply = true, .reply = MC_REPLY_SILENT)),
    /* 1.6.18: 16 flags (19 tokens) pass, 17 are "options flags too long" */
    CASE("ms 16 flags",
         SEG("ms k 1 F1 T1 q k O1 c I MS C0 s t f v h u l\r\na\r\n", .cmd = MC_CMD_MS, .key = "k",
             .value_len = 1, .flags = 1, .exptime = 1, .noreply = true, .reply = MC_REPLY_SILENT,
             .want_key = true, .opaque = "1", .mode = 'S')),
    CASE("ms 17 flags: refused, no data",
         SEG("ms k 1 F1 T1 k O1 c I MS C0 s t f v h u l N1 P\r\n", .cmd = MC_CMD_MS, .vdep = true,
             .key = "k"),
         INVALID("a\r\n")),
    /* 1.6.18: data swallowed after a flag error: "ms k 1 Z\r\na\r\nmn" -> CLIENT_ERROR, MN */
    CASE("ms invalid flag: data swallowed",
         SEG("ms k 1 Z\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k", .value_len = 1,
             .swallowed = true),
         MN_SEG),
    CASE("ms q invalid flag: error sent",
         SEG("ms k 1 q Z\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k", .value_len = 1,
             .swallowed = true),
         MN_SEG),
    CASE("ms duplicate flag", SEG("ms k 1 T1 T2\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true,
                                  .key = "k", .value_len = 1, .swallowed = true, .exptime = 1)),
    CASE("ms bad T", SEG("ms k 1 Tx\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k",
                         .value_len = 1, .swallowed = true)),
    CASE("ms bad mode", SEG("ms k 1 MX\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k",
                            .value_len = 1, .swallowed = true, .mode = 'X')),
    CASE("ms long mode", SEG("ms k 1 MEE\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k",
                             .value_len = 1, .swallowed = true)),
    CASE("ms modes",
         SEG("ms k 1 ME q\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1, .mode = 'E',
             .noreply = true, .reply = MC_REPLY_SILENT),
         SEG("ms k 1 MA\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1, .mode = 'A'),
         SEG("ms k 1 MP\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1, .mode = 'P'),
         SEG("ms k 1 MR\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1, .mode = 'R')),
    CASE("ms opaque of 32 bytes: swallowed",
         SEG("ms k 1 O" OP32 "\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "k",
             .value_len = 1, .swallowed = true),
         MN_SEG),
    CASE("ms opaque of 31 bytes", SEG("ms k 1 O" OP31 "\r\na\r\n", .cmd = MC_CMD_MS, .key = "k",
                                      .value_len = 1, .opaque = OP31)),
    CASE("ms bad base64 key: swallowed",
         SEG("ms Zm9 1 b\r\na\r\n", .cmd = MC_CMD_MS, .vdep = true, .key = "Zm9",
             .key_len = KL_ZERO, .b64 = true, .value_len = 1, .swallowed = true)),
    CASE("ms base64 key", SEG("ms Zm9vYmFy 3 b O6 k F3 T0\r\nbar\r\n", .cmd = MC_CMD_MS,
                              .key = "Zm9vYmFy", .key_len = 6, .b64 = true, .value_len = 3,
                              .opaque = "6", .want_key = true, .flags = 3)),
    /* 1.6.18: refusals before the flags read no data */
    CASE("ms length not a number", SEG("ms k abc\r\n", .cmd = MC_CMD_MS, .key = "k"),
         INVALID("a\r\n")),
    CASE("ms negative length", SEG("ms k -1\r\n", .cmd = MC_CMD_MS, .key = "k"), INVALID("a\r\n")),
    CASE("ms without length", SEG("ms k\r\n", .cmd = MC_CMD_MS, .key = "k"), INVALID("a\r\n")),
    CASE("ms alone: ERROR", SEG("ms\r\n", .cmd = MC_CMD_MS, .not_write = true)),
    CASE("ms length 2^32+1 reads as 1",
         SEG("ms k 4294967297\r\na\r\n", .cmd = MC_CMD_MS, .key = "k", .value_len = 1)),
    CASE("ms T and F wrap",
         SEG("ms k -4294967295 T4294967297 F-18446744073709551615\r\na\r\n", .cmd = MC_CMD_MS,
             .key = "k", .value_len = 1, .exptime = 1, .flags = 1)),
    /* 1.6.18: "ms k 2 q\r\nabc\r\nmn" -> CLIENT_ERROR bad data chunk, ERROR, MN */
    CASE("ms q bad data chunk is answered",
         SEG("ms k 2 q\r\nabc\r", .cmd = MC_CMD_MS, .key = "k", .value_len = 2, .bad_data = true),
         INVALID("\n"), MN_SEG),
    CASE("md", SEG("md k\r\n", .cmd = MC_CMD_MD, .key = "k")),
    CASE("md q", SEG("md k q\r\n", .cmd = MC_CMD_MD, .key = "k", .noreply = true,
                     .reply = MC_REPLY_SILENT)),
    CASE("md flags", SEG("md k q I T30 C5 O1 k\r\n", .cmd = MC_CMD_MD, .key = "k", .noreply = true,
                         .reply = MC_REPLY_SILENT, .exptime = 30, .opaque = "1", .want_key = true)),
    CASE("md bad flag", SEG("md k q x\r\n", .cmd = MC_CMD_MD, .key = "k")),
    CASE("ma", SEG("ma k\r\n", .cmd = MC_CMD_MA, .key = "k")),
    CASE("ma q", SEG("ma k q\r\n", .cmd = MC_CMD_MA, .key = "k", .noreply = true,
                     .reply = MC_REPLY_SILENT)),
    /* on a miss N creates the item and "VA 1 O5 t-1 c.." comes despite q */
    CASE("ma flags", SEG("ma k q N0 J5 D2 MD v t c O5\r\n", .cmd = MC_CMD_MA, .key = "k",
                         .noreply = true, .reply = MC_REPLY_SILENT, .vivify = true, .opaque = "5")),
    CASE("ma modes",
         SEG("ma k q MI\r\n", .cmd = MC_CMD_MA, .key = "k", .noreply = true,
             .reply = MC_REPLY_SILENT),
         SEG("ma k q M+\r\n", .cmd = MC_CMD_MA, .key = "k", .noreply = true,
             .reply = MC_REPLY_SILENT),
         SEG("ma k q M-\r\n", .cmd = MC_CMD_MA, .key = "k", .noreply = true,
             .reply = MC_REPLY_SILENT)),
    /* 1.6.18: "ma cnt MX q" -> CLIENT_ERROR invalid mode for ma M token */
    CASE("ma q bad mode: error sent", SEG("ma k MX q\r\n", .cmd = MC_CMD_MA, .key = "k")),
    CASE("ma bad delta", SEG("ma k q Dx\r\n", .cmd = MC_CMD_MA, .key = "k")),

    /* --- one request's fields never leak into the next -------------------- */
    CASE("no leak between requests",
         SEG("ms a 1 F5 T9 O1 k MS\r\na\r\n", .cmd = MC_CMD_MS, .key = "a", .value_len = 1,
             .flags = 5, .exptime = 9, .opaque = "1", .want_key = true, .mode = 'S'),
         SEG("ms b 1\r\nb\r\n", .cmd = MC_CMD_MS, .key = "b", .value_len = 1),
         SEG("get x y z\r\n", .cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "x", .nkeys = 3),
         SEG("mg Zm9v b N1\r\n", .cmd = MC_CMD_MG, .key = "Zm9v", .key_len = 3, .b64 = true,
             .vivify = true),
         SEG("mg c\r\n", .cmd = MC_CMD_MG, .key = "c"),
         SEG("set d 0 0 1\r\nd\r\n", .cmd = MC_CMD_SET, .key = "d", .value_len = 1)),
    CASE("0x80 after the first byte is text", MN_SEG, INVALID("\x80\x0b\r\n"), MN_SEG),
};

#define NREQ_CASES (sizeof req_cases / sizeof req_cases[0])

/* An expected request sequence built at run time (long keys and lines). */
struct exp_seq {
    size_t n;
    struct rq want[8];
    size_t bytes[8];
};

static bool cmd_is_storage(enum mc_cmd c)
{
    return c == MC_CMD_SET || c == MC_CMD_ADD || c == MC_CMD_REPLACE || c == MC_CMD_APPEND ||
           c == MC_CMD_PREPEND || c == MC_CMD_CAS || c == MC_CMD_MS;
}

static bool rq_equal(const char *ctx, size_t idx, const struct rq *w, size_t wbytes,
                     const struct mc_request *g, bool report)
{
    char msg[512];
    size_t klen = w->key ? strlen(w->key) : 0;
    uint16_t want_key_len = w->key_len == KL_ZERO ? 0
                            : w->key_len          ? (uint16_t)w->key_len
                                                  : (uint16_t)klen;
    bool want_write = cmd_is_storage(w->cmd) && !w->not_write;
    size_t olen = w->opaque ? strlen(w->opaque) : 0;
    msg[0] = '\0';
#define FIELD(cond, fmt, ...) \
    do { \
        if (!(cond) && !msg[0]) \
            snprintf(msg, sizeof msg, fmt, __VA_ARGS__); \
    } while (0)
    FIELD(g->cmd == w->cmd, "cmd want %s got %s", mc_cmd_name(w->cmd), mc_cmd_name(g->cmd));
    FIELD(g->reply == w->reply, "reply want %d got %d", (int)w->reply, (int)g->reply);
    FIELD(g->key_len_raw == klen && !memcmp(g->key, w->key ? w->key : "", klen) &&
              g->key[klen] == '\0',
          "key want \"%.60s\" (%zu) got \"%.60s\" (%u)", w->key ? w->key : "", klen, g->key,
          (unsigned)g->key_len_raw);
    FIELD(g->key_len == want_key_len, "key_len want %u got %u", (unsigned)want_key_len,
          (unsigned)g->key_len);
    FIELD(g->key_b64 == w->b64, "key_b64 want %d got %d", w->b64, g->key_b64);
    FIELD(g->flags == w->flags, "flags want %u got %u", (unsigned)w->flags, (unsigned)g->flags);
    FIELD(g->exptime == w->exptime, "exptime want %lld got %lld", (long long)w->exptime,
          (long long)g->exptime);
    FIELD(g->value_len == w->value_len, "value_len want %lld got %lld", (long long)w->value_len,
          (long long)g->value_len);
    FIELD(g->noreply == w->noreply, "noreply want %d got %d", w->noreply, g->noreply);
    FIELD(g->bad_data == w->bad_data, "bad_data want %d got %d", w->bad_data, g->bad_data);
    FIELD(g->swallowed == w->swallowed, "swallowed want %d got %d", w->swallowed, g->swallowed);
    FIELD(g->is_write == want_write, "is_write want %d got %d", want_write, g->is_write);
    FIELD(g->want_key == w->want_key, "want_key want %d got %d", w->want_key, g->want_key);
    FIELD(g->vivify == w->vivify, "vivify want %d got %d", w->vivify, g->vivify);
    FIELD(g->key_too_long == w->key_too_long, "key_too_long want %d got %d", w->key_too_long,
          g->key_too_long);
    FIELD(g->long_line == w->long_line, "long_line want %d got %d", w->long_line, g->long_line);
    FIELD(g->version_dependent == w->vdep, "version_dependent want %d got %d", w->vdep,
          g->version_dependent);
    FIELD(g->nkeys == w->nkeys, "nkeys want %u got %u", (unsigned)w->nkeys, (unsigned)g->nkeys);
    FIELD(g->has_opaque == (w->opaque != NULL) && g->opaque_len == olen &&
              !memcmp(g->opaque, w->opaque ? w->opaque : "", olen) && g->opaque[olen] == '\0',
          "opaque want %s%s got %s%s (%u)", w->opaque ? "O" : "none ", w->opaque ? w->opaque : "",
          g->has_opaque ? "O" : "none ", g->opaque, (unsigned)g->opaque_len);
    FIELD(g->ms_mode == w->mode, "ms_mode want %d got %d", w->mode, g->ms_mode);
    FIELD(g->bytes == wbytes, "bytes want %zu got %zu", wbytes, g->bytes);
#undef FIELD
    if (msg[0] && report)
        fprintf(stderr, "  req %s: request #%zu: %s\n", ctx, idx, msg);
    return !msg[0];
}

/* Feeds in as chunks (each in its own exact-size heap buffer): split > 0
 * cuts once there; bytewise feeds one byte at a time. Compares what comes
 * out with exp; returns false (reported when report) on the first mismatch. */
static bool run_req(const char *name, const char *how, const char *in, size_t len,
                    const struct exp_seq *exp, size_t split, bool bytewise, bool report)
{
    struct mc_req_parser *p = malloc(sizeof *p);
    char ctx[300];
    size_t got = 0, off = 0;
    bool ok = true, stopped = false;
    snprintf(ctx, sizeof ctx, "%s [%s]", name, how);
    mc_req_init(p);
    while (off < len && ok && !stopped) {
        size_t clen = bytewise ? 1 : split ? (off < split ? split - off : len - off) : len - off;
        char *chunk = malloc(clen);
        memcpy(chunk, in + off, clen);
        size_t pos = 0;
        while (pos < clen && ok) {
            struct mc_request r;
            size_t used = (size_t)-1;
            enum mc_result res = mc_req_parse(p, chunk + pos, clen - pos, &used, &r);
            if (used > clen - pos) {
                ok = false;
                if (report)
                    fprintf(stderr, "  req %s: used %zu > %zu\n", ctx, used, clen - pos);
                break;
            }
            pos += used;
            if (res == MC_NEED_MORE) {
                if (pos != clen) {
                    ok = false;
                    if (report)
                        fprintf(stderr, "  req %s: MC_NEED_MORE left %zu bytes\n", ctx, clen - pos);
                }
                break;
            }
            if (got >= exp->n || exp->want[got].res != (int)res) {
                ok = false;
                if (report)
                    fprintf(stderr, "  req %s: event #%zu is %s, want %s\n", ctx, got,
                            res == MC_OK ? "MC_OK" : "MC_ERROR",
                            got >= exp->n                    ? "nothing"
                            : exp->want[got].res == MC_OK    ? "MC_OK"
                            : exp->want[got].res == MC_ERROR ? "MC_ERROR"
                                                             : "nothing");
                break;
            }
            if (res == MC_ERROR) {
                got++;
                stopped = true;
                break;
            }
            if (used == 0) {
                ok = false;
                if (report)
                    fprintf(stderr, "  req %s: MC_OK consumed nothing\n", ctx);
                break;
            }
            if (!rq_equal(ctx, got, &exp->want[got], exp->bytes[got], &r, report))
                ok = false;
            got++;
        }
        free(chunk);
        off += clen;
    }
    if (ok) {
        size_t want_events = exp->n;
        bool want_boundary = true;
        if (exp->n && exp->want[exp->n - 1].res == MC_NEED_MORE) {
            want_events--;
            want_boundary = false;
        }
        if (exp->n && exp->want[exp->n - 1].res == MC_ERROR)
            want_boundary = false;
        /* after quit or watch memcached reads no more: never a boundary */
        for (size_t i = 0; i < exp->n; i++)
            if (exp->want[i].res == MC_OK &&
                (exp->want[i].reply == MC_REPLY_CLOSE || exp->want[i].reply == MC_REPLY_STREAM))
                want_boundary = false;
        if (got != want_events) {
            ok = false;
            if (report)
                fprintf(stderr, "  req %s: %zu events, want %zu\n", ctx, got, want_events);
        } else if (mc_req_at_boundary(p) != want_boundary) {
            ok = false;
            if (report)
                fprintf(stderr, "  req %s: at_boundary %d at the end, want %d\n", ctx,
                        mc_req_at_boundary(p), want_boundary);
        }
    }
    if (!ok && report)
        check_dump("input", in, len, split);
    free(p);
    return ok;
}

/* Whole, split in two at every offset, byte by byte: all must match exp.
 * Reports the first failing way only. */
static bool req_all_splits(const char *name, const char *in, size_t len, const struct exp_seq *exp)
{
    char how[64];
    if (!run_req(name, "whole", in, len, exp, 0, false, true))
        return false;
    if (!run_req(name, "byte by byte", in, len, exp, 0, true, true))
        return false;
    for (size_t k = 1; k < len; k++) {
        if (!run_req(name, "", in, len, exp, k, false, false)) {
            snprintf(how, sizeof how, "split at %zu", k);
            run_req(name, how, in, len, exp, k, false, true);
            return false;
        }
    }
    return true;
}

/* One check: the request case parses the same whole, byte by byte and
 * split at every offset. */
#define CHECK_REQ_ALL_SPLITS(name, in, len, exp) \
    do { \
        const char *n_ = (name); \
        CHECK(req_all_splits(n_, (in), (len), (exp)), "request case \"%s\"", n_); \
    } while (0)

/* One check: the request case parses as exp when fed the one way given. */
#define CHECK_REQ(name, how, in, len, exp, split, bytewise) \
    do { \
        const char *n_ = (name), *h_ = (how); \
        CHECK(run_req(n_, h_, (in), (len), (exp), (split), (bytewise), true), \
              "request case \"%s\" [%s]", n_, h_); \
    } while (0)

static void case_to_exp(const struct req_case *c, struct exp_seq *exp, char *buf, size_t *len)
{
    exp->n = 0;
    *len = 0;
    for (size_t i = 0; i < MAX_SEGS && c->segs[i].in; i++) {
        memcpy(buf + *len, c->segs[i].in, c->segs[i].len);
        *len += c->segs[i].len;
        exp->want[exp->n] = c->segs[i].want;
        exp->bytes[exp->n] = c->segs[i].len;
        exp->n++;
    }
}

static void test_request_table(void)
{
    static char buf[1 << 16];
    for (size_t i = 0; i < NREQ_CASES; i++) {
        struct exp_seq exp;
        size_t len;
        case_to_exp(&req_cases[i], &exp, buf, &len);
        CHECK_REQ_ALL_SPLITS(req_cases[i].name, buf, len, &exp);
    }
}

/* Every row that ends between requests, one after the other: a pipelined
 * batch with values holding \r\n, split at every offset. */
static void test_request_batch(void)
{
    static char buf[1 << 16];
    static struct rq want[1024];
    static size_t bytes[1024];
    size_t len = 0, n = 0;
    for (size_t i = 0; i < NREQ_CASES; i++) {
        const struct req_case *c = &req_cases[i];
        if (c->opts & NO_BATCH)
            continue;
        for (size_t s = 0; s < MAX_SEGS && c->segs[s].in; s++) {
            memcpy(buf + len, c->segs[s].in, c->segs[s].len);
            len += c->segs[s].len;
            want[n] = c->segs[s].want;
            bytes[n] = c->segs[s].len;
            n++;
        }
    }
    /* too many requests for an exp_seq: a batch has its own loop; the first
     * failing way is reported and ends it */
    bool ok = true;
    for (size_t k = 0; k <= len && ok; k++) {
        for (int bytewise = 0; bytewise <= (k == 0) && ok; bytewise++) {
            struct mc_req_parser p;
            size_t got = 0, off = 0;
            char ctx[64];
            snprintf(ctx, sizeof ctx, "pipelined batch [%s %zu]",
                     bytewise ? "byte by byte" : "split at", k);
            mc_req_init(&p);
            while (off < len && ok) {
                size_t clen = bytewise ? 1 : k ? (off < k ? k - off : len - off) : len;
                char *chunk = malloc(clen);
                memcpy(chunk, buf + off, clen);
                size_t pos = 0;
                while (pos < clen) {
                    struct mc_request r;
                    size_t used;
                    enum mc_result res = mc_req_parse(&p, chunk + pos, clen - pos, &used, &r);
                    pos += used;
                    if (res == MC_NEED_MORE)
                        break;
                    if (res != MC_OK || got >= n) {
                        ok = false;
                        fprintf(stderr, "  req %s: unexpected result at request #%zu\n", ctx, got);
                        break;
                    }
                    if (!rq_equal(ctx, got, &want[got], bytes[got], &r, true)) {
                        ok = false;
                        break;
                    }
                    got++;
                }
                free(chunk);
                off += clen;
            }
            if (ok && (got != n || !mc_req_at_boundary(&p))) {
                fprintf(stderr, "  req %s: %zu requests, want %zu\n", ctx, got, n);
                ok = false;
            }
        }
    }
    CHECK(ok, "pipelined batch of %zu requests, whole, byte by byte and split everywhere", n);
}

static void exp_add(struct exp_seq *e, struct rq w, size_t bytes)
{
    e->want[e->n] = w;
    e->bytes[e->n] = bytes;
    e->n++;
}

static const struct rq RQ_MN = RQ(.cmd = MC_CMD_MN);
static const struct rq RQ_INVALID = RQ(.cmd = MC_CMD_INVALID);

/* Keys of 250 / 251 bytes. */
static void test_long_keys(void)
{
    static char in[2048], k250[251], k251[252];
    memset(k250, 'k', 250);
    k250[250] = '\0';
    memset(k251, 'k', 251);
    k251[251] = '\0';
    struct exp_seq e;
    int n;

    n = snprintf(in, sizeof in, "set %s 0 0 1\r\na\r\n", k250);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .key = k250, .value_len = 1), (size_t)n);
    CHECK_REQ_ALL_SPLITS("set key of 250 bytes", in, (size_t)n, &e);

    /* 1.6.18: CLIENT_ERROR bad command line format, then ERROR for "a" */
    n = snprintf(in, sizeof in, "set %s 0 0 1\r\na\r\nmn\r\n", k251);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .vdep = true, .key = k250, .key_len = 251),
            (size_t)n - 7);
    exp_add(&e, RQ_INVALID, 3);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("set key of 251 bytes: no data block", in, (size_t)n, &e);

    n = snprintf(in, sizeof in, "set %s 0 0 1 noreply\r\na\r\n", k251);
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_SET, .vdep = true, .key = k250, .key_len = 251,
                          .noreply = true, .reply = MC_REPLY_SILENT),
            (size_t)n - 3);
    exp_add(&e, RQ_INVALID, 3);
    CHECK_REQ_ALL_SPLITS("set key of 251 bytes noreply: silent", in, (size_t)n, &e);

    n = snprintf(in, sizeof in, "get a %s b\r\n", k251);
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 3,
                          .key_too_long = true),
            (size_t)n);
    CHECK_REQ_ALL_SPLITS("get with a key of 251 bytes", in, (size_t)n, &e);

    n = snprintf(in, sizeof in, "gets a %s b\r\n", k250);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_GETS, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 3),
            (size_t)n);
    CHECK_REQ_ALL_SPLITS("gets with a key of 250 bytes", in, (size_t)n, &e);

    n = snprintf(in, sizeof in, "mg %s v\r\n", k251);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_MG, .key = k250, .key_len = 251), (size_t)n);
    CHECK_REQ_ALL_SPLITS("mg key of 251 bytes", in, (size_t)n, &e);

    /* 1.6.18: "ms <251> 1\r\na\r\nmn" -> CLIENT_ERROR, ERROR, MN: no swallow */
    n = snprintf(in, sizeof in, "ms %s 1 q\r\na\r\n", k251);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_MS, .vdep = true, .key = k250, .key_len = 251),
            (size_t)n - 3);
    exp_add(&e, RQ_INVALID, 3);
    CHECK_REQ_ALL_SPLITS("ms key of 251 bytes: no data block", in, (size_t)n, &e);
}

/* Lines longer than MC_LINE_MAX. memcached closes the connection when more
 * than 2048 bytes without '\n' are buffered, unless the line is a get/gets
 * (after at most 100 spaces); so the outcome depends on how the bytes
 * arrive, for memcached as for the parser. */
static void test_long_lines(void)
{
    static char in[1 << 15];
    struct exp_seq e;
    size_t n;

    /* non-get: 3000 bytes, no '\n' in the first 2049 -> MC_ERROR */
    n = (size_t)snprintf(in, sizeof in, "set ");
    memset(in + n, 'x', 3000);
    n += 3000;
    memcpy(in + n, "\r\nmn\r\n", 6);
    n += 6;
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.res = MC_ERROR), 0);
    CHECK_REQ("over-long set line", "byte by byte", in, n, &e, 0, true);
    CHECK_REQ("over-long set line", "split at 2049", in, n, &e, 2049, false);
    CHECK_REQ("over-long set line", "split at 2500", in, n, &e, 2500, false);
    /* ...but one read holding the whole line is a command (1.6.18: ERROR);
     * a read ending inside it would close: long_line */
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_SET, .not_write = true, .long_line = true, .vdep = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("over-long set line in one read", "whole", in, n, &e, 0, false);
    CHECK_REQ("over-long set line in one read", "split at 2048", in, n, &e, 2048, false);

    /* 2048 bytes without '\n' are fine (1.6.18: ERROR, not closed), at any
     * split when the 2048th is the '\r' */
    n = (size_t)snprintf(in, sizeof in, "set ");
    memset(in + n, 'x', 2043);
    n += 2043;
    memcpy(in + n, "\r\nmn\r\n", 6);
    n += 6;
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .not_write = true, .vdep = true), n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("line of 2048 bytes with its \\r", in, n, &e);
    /* 2048 bytes, then "\r\n": fine when the '\r' comes with the '\n' (2049
     * bytes before the '\n': long_line)... */
    n = (size_t)snprintf(in, sizeof in, "set ");
    memset(in + n, 'x', 2044);
    n += 2044;
    memcpy(in + n, "\r\nmn\r\n", 6);
    n += 6;
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_SET, .not_write = true, .long_line = true, .vdep = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("2048 bytes then \\r\\n", "split at 2048", in, n, &e, 2048, false);
    /* ...but 2049 buffered without '\n' close the connection */
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.res = MC_ERROR), 0);
    CHECK_REQ("2048 bytes then \\r\\n", "byte by byte", in, n, &e, 0, true);

    /* 3000 NUL bytes (1.6.18: closed) */
    memset(in, 0, 3000);
    memcpy(in + 3000, "\r\n", 2);
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.res = MC_ERROR), 0);
    CHECK_REQ("3000 NUL bytes", "byte by byte", in, 3002, &e, 0, true);

    /* long multigets go on, at every split, and count every key */
    static const struct {
        const char *name, *prefix, *suffix;
        enum mc_cmd cmd;
        size_t spaces;
        int64_t exptime;
        bool ok;
    } gets[] = {
        { "long get", "get", "", MC_CMD_GET, 0, 0, true },
        { "long gets", "gets", "", MC_CMD_GETS, 0, 0, true },
        { "long get, trailing space", "get", " ", MC_CMD_GET, 0, 0, true },
        { "long get after 100 spaces", "get", "", MC_CMD_GET, 100, 0, true },
        /* 1.6.18: closed */
        { "long get after 101 spaces", "get", "", MC_CMD_GET, 101, 0, false },
        { "long gat", "gat 9", "", MC_CMD_GAT, 0, 9, false },
        { "long bget", "bget", "", MC_CMD_GET, 0, 0, false },
    };
    for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++) {
        n = 0;
        memset(in, ' ', gets[i].spaces);
        n += gets[i].spaces;
        n += (size_t)snprintf(in + n, sizeof in - n, "%s", gets[i].prefix);
        for (int k = 0; k < 800; k++)
            n += (size_t)snprintf(in + n, sizeof in - n, " key%d", k);
        n += (size_t)snprintf(in + n, sizeof in - n, "%s\r\nmn\r\n", gets[i].suffix);
        e.n = 0;
        if (gets[i].ok) {
            exp_add(&e,
                    (struct rq)RQ(.cmd = gets[i].cmd, .reply = MC_REPLY_MULTI, .key = "key0",
                                  .nkeys = 800, .exptime = gets[i].exptime),
                    n - 4);
            exp_add(&e, RQ_MN, 4);
            CHECK_REQ_ALL_SPLITS(gets[i].name, in, n, &e);
        } else {
            exp_add(&e, (struct rq)RQ(.res = MC_ERROR), 0);
            CHECK_REQ(gets[i].name, "byte by byte", in, n, &e, 0, true);
            CHECK_REQ(gets[i].name, "split at 2100", in, n, &e, 2100, false);
        }
    }

    /* a key over 250 bytes past the cut, or cut in two by it, still makes
     * memcached refuse the whole get; one of exactly 250 at the very end
     * (its '\r' stripped) does not */
    static const struct {
        const char *name;
        size_t before, key_len; /* bytes of " keyN" words before it; its length */
        bool too_long;
    } cut_keys[] = {
        { "long get, 251-byte key past the cut", 2600, 251, true },
        { "long get, 250-byte key past the cut", 2600, 250, false },
        { "long get, 251-byte key cut in two", 1950, 251, true },
        { "long get, 250-byte key cut in two", 1950, 250, false },
    };
    for (size_t i = 0; i < sizeof cut_keys / sizeof cut_keys[0]; i++) {
        int k = 0;
        n = (size_t)snprintf(in, sizeof in, "get");
        while (n < cut_keys[i].before)
            n += (size_t)snprintf(in + n, sizeof in - n, " key%d", k++);
        in[n++] = ' ';
        memset(in + n, 'z', cut_keys[i].key_len);
        n += cut_keys[i].key_len;
        n += (size_t)snprintf(in + n, sizeof in - n, "\r\nmn\r\n");
        e.n = 0;
        exp_add(&e,
                (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "key0",
                              .nkeys = (uint32_t)k + 1, .key_too_long = cut_keys[i].too_long),
                n - 4);
        exp_add(&e, RQ_MN, 4);
        CHECK_REQ_ALL_SPLITS(cut_keys[i].name, in, n, &e);
    }

    /* a NUL byte ends memcached's line: keys after it do not count */
    n = (size_t)snprintf(in, sizeof in, "get");
    for (int k = 0; k < 500; k++)
        n += (size_t)snprintf(in + n, sizeof in - n, " key%d", k);
    in[n++] = '\0';
    n += (size_t)snprintf(in + n, sizeof in - n, " more keys\r\n");
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "key0", .nkeys = 500),
            n);
    CHECK_REQ_ALL_SPLITS("long get with a NUL byte", in, n, &e);

    /* a long get ending in a lone "\r" word: it is the stripped \r */
    n = (size_t)snprintf(in, sizeof in, "get");
    for (int k = 0; k < 500; k++)
        n += (size_t)snprintf(in + n, sizeof in - n, " key%d", k);
    n += (size_t)snprintf(in + n, sizeof in - n, " \r\r\n");
    e.n = 0;
    /* "... key499 \r\r": one \r stripped, the other is a 501st key */
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "key0", .nkeys = 501),
            n);
    CHECK_REQ_ALL_SPLITS("long get ending in \\r\\r", in, n, &e);

    /* a line of 2049 bytes whose last is the stripped \r fits the buffer */
    n = (size_t)snprintf(in, sizeof in, "get ");
    memset(in + n, 'a', 2044);
    n += 2044;
    n += (size_t)snprintf(in + n, sizeof in - n, "\r\n");
    e.n = 0;
    static char a250[251]; /* the key kept: its first 250 bytes */
    memset(a250, 'a', 250);
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = a250, .key_len = 2044,
                          .nkeys = 1, .key_too_long = true),
            n);
    CHECK_REQ_ALL_SPLITS("get line of 2049 bytes with \\r", in, n, &e);
}

static void test_binary_protocol(void)
{
    static const char bin[] = "\x80\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                              "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    struct exp_seq e = { 0 };
    exp_add(&e, (struct rq)RQ(.res = MC_ERROR), 0);
    /* 1.6.18 answers a binary version request: the connection is binary */
    CHECK_REQ_ALL_SPLITS("binary protocol first byte", bin, sizeof bin - 1, &e);
}

/* --- responses ------------------------------------------------------------ */

struct rl {
    int res; /* MC_OK, or MC_ERROR */
    enum mc_code code;
    const char *text; /* NULL: the first line of the segment, without \r\n */
    int64_t data_len;
    bool truncated;
};

#define RL(...) \
    { \
        .data_len = -1, __VA_ARGS__ \
    }

struct rseg {
    const char *in;
    size_t len;
    struct rl want;
};

#define RSEG(s, ...) \
    { \
        s, sizeof(s) - 1, RL(__VA_ARGS__) \
    }

struct resp_case {
    const char *name;
    struct rseg segs[MAX_SEGS];
    unsigned opts;
};

static const struct resp_case resp_cases[] = {
    CASE("STORED", RSEG("STORED\r\n", .code = MC_CODE_STORED)),
    CASE("NOT_STORED", RSEG("NOT_STORED\r\n", .code = MC_CODE_NOT_STORED)),
    CASE("EXISTS", RSEG("EXISTS\r\n", .code = MC_CODE_EXISTS)),
    CASE("NOT_FOUND", RSEG("NOT_FOUND\r\n", .code = MC_CODE_NOT_FOUND)),
    CASE("DELETED", RSEG("DELETED\r\n", .code = MC_CODE_DELETED)),
    CASE("TOUCHED", RSEG("TOUCHED\r\n", .code = MC_CODE_TOUCHED)),
    CASE("OK", RSEG("OK\r\n", .code = MC_CODE_OK)),
    CASE("END", RSEG("END\r\n", .code = MC_CODE_END)),
    CASE("number", RSEG("12345\r\n", .code = MC_CODE_NUMBER)),
    CASE("number 0", RSEG("0\r\n", .code = MC_CODE_NUMBER)),
    CASE("number max", RSEG("18446744073709551615\r\n", .code = MC_CODE_NUMBER)),
    CASE("number with a word is unknown", RSEG("12 x\r\n", .code = MC_CODE_UNKNOWN)),
    CASE("VERSION", RSEG("VERSION 1.6.18\r\n", .code = MC_CODE_VERSION)),
    CASE("RESET", RSEG("RESET\r\n", .code = MC_CODE_RESET)),
    CASE("ERROR", RSEG("ERROR\r\n", .code = MC_CODE_ERROR)),
    CASE("ERROR with text",
         RSEG("ERROR cannot pipeline other commands before watch\r\n", .code = MC_CODE_ERROR)),
    CASE("ERROR: shutdown", RSEG("ERROR: shutdown not enabled\r\n", .code = MC_CODE_ERROR)),
    CASE("CLIENT_ERROR",
         RSEG("CLIENT_ERROR bad command line format\r\n", .code = MC_CODE_CLIENT_ERROR)),
    CASE("SERVER_ERROR",
         RSEG("SERVER_ERROR out of memory storing object\r\n", .code = MC_CODE_SERVER_ERROR)),
    CASE("VALUE",
         RSEG("VALUE k 0 1\r\na\r\n", .code = MC_CODE_VALUE, .text = "VALUE k 0 1", .data_len = 1)),
    CASE("VALUE holding \\r\\n", RSEG("VALUE k 0 5\r\na\r\nbc\r\n", .code = MC_CODE_VALUE,
                                      .text = "VALUE k 0 5", .data_len = 5)),
    CASE("VALUE holding END\\r\\n", RSEG("VALUE k 3 5 77\r\nEND\r\n\r\n", .code = MC_CODE_VALUE,
                                         .text = "VALUE k 3 5 77", .data_len = 5)),
    CASE("VALUE empty",
         RSEG("VALUE k 0 0\r\n\r\n", .code = MC_CODE_VALUE, .text = "VALUE k 0 0", .data_len = 0)),
    CASE("multi-get answer",
         RSEG("VALUE a 0 1\r\n1\r\n", .code = MC_CODE_VALUE, .text = "VALUE a 0 1", .data_len = 1),
         RSEG("VALUE bb 5 3 123\r\nx\r\n\r\n", .code = MC_CODE_VALUE, .text = "VALUE bb 5 3 123",
              .data_len = 3),
         RSEG("END\r\n", .code = MC_CODE_END)),
    CASE("stats answer", RSEG("STAT pid 14792\r\n", .code = MC_CODE_STAT),
         RSEG("STAT version 1.6.18\r\n", .code = MC_CODE_STAT),
         RSEG("STAT 1:chunk_size 96\r\n", .code = MC_CODE_STAT),
         RSEG("END\r\n", .code = MC_CODE_END)),
    CASE("HD", RSEG("HD\r\n", .code = MC_CODE_HD)),
    CASE("HD with flags", RSEG("HD O1 kfoo c5 t-1\r\n", .code = MC_CODE_HD)),
    CASE("VA", RSEG("VA 3 O1 kfoo\r\nbar\r\n", .code = MC_CODE_VA, .text = "VA 3 O1 kfoo",
                    .data_len = 3)),
    CASE("VA holding \\r\\n",
         RSEG("VA 2\r\n\r\n\r\n", .code = MC_CODE_VA, .text = "VA 2", .data_len = 2)),
    CASE("EN", RSEG("EN knox O9\r\n", .code = MC_CODE_EN)),
    CASE("NF", RSEG("NF\r\n", .code = MC_CODE_NF)),
    CASE("NS", RSEG("NS O2 kqb\r\n", .code = MC_CODE_NS)),
    CASE("EX", RSEG("EX\r\n", .code = MC_CODE_EX)),
    CASE("MN", RSEG("MN\r\n", .code = MC_CODE_MN)),
    CASE("ME", RSEG("ME k exp=-1 la=1 cas=2 fetch=no cls=1 size=63\r\n", .code = MC_CODE_ME)),
    CASE("line ending in \\n only", RSEG("END\n", .code = MC_CODE_END, .text = "END")),
    CASE("metadump lines",
         RSEG("key=k exp=-1 la=17 cas=38 fetch=no cls=1 size=61\n", .code = MC_CODE_UNKNOWN,
              .text = "key=k exp=-1 la=17 cas=38 fetch=no cls=1 size=61"),
         RSEG("END\r\n", .code = MC_CODE_END)),
    CASE("BADCLASS", RSEG("BADCLASS invalid class id\r\n", .code = MC_CODE_UNKNOWN)),
    CASE("empty line", RSEG("\r\n", .code = MC_CODE_UNKNOWN, .text = "")),
    CASE("lowercase is unknown", RSEG("stored\r\n", .code = MC_CODE_UNKNOWN)),
    CASE("prefix of a code is unknown", RSEG("STOREDX\r\n", .code = MC_CODE_UNKNOWN)),
    CASE("watch stream line",
         RSEG("ts=1795976997.869851 gid=5 type=conn_close reason=error\n", .code = MC_CODE_UNKNOWN,
              .text = "ts=1795976997.869851 gid=5 type=conn_close reason=error")),
    CASE_ALONE("VALUE data without \\r\\n", RSEG("VALUE k 0 1\r\nab\r\n", .res = MC_ERROR)),
    CASE_ALONE("VALUE data ending in \\n\\r", RSEG("VALUE k 0 1\r\na\n\r\n", .res = MC_ERROR)),
    CASE_ALONE("VA data without \\r\\n", RSEG("VA 2\r\nabc\r\n", .res = MC_ERROR)),
};

#define NRESP_CASES (sizeof resp_cases / sizeof resp_cases[0])

static bool rl_equal(const char *ctx, size_t idx, const struct rseg *s, const struct mc_line *g,
                     const char *gtext, bool report)
{
    char msg[512];
    const char *wtext = s->want.text;
    size_t wlen;
    if (wtext) {
        wlen = strlen(wtext);
    } else {
        const char *nl = memchr(s->in, '\n', s->len);
        wtext = s->in;
        wlen = nl ? (size_t)(nl - s->in) : s->len;
        if (wlen && wtext[wlen - 1] == '\r')
            wlen--;
    }
    msg[0] = '\0';
    if (g->code != s->want.code)
        snprintf(msg, sizeof msg, "code want %s got %s", mc_code_name(s->want.code),
                 mc_code_name(g->code));
    else if (g->len != wlen || memcmp(gtext, wtext, wlen) != 0)
        snprintf(msg, sizeof msg, "text want \"%.*s\" got \"%.*s\"", (int)wlen, wtext, (int)g->len,
                 gtext);
    else if (g->data_len != s->want.data_len)
        snprintf(msg, sizeof msg, "data_len want %lld got %lld", (long long)s->want.data_len,
                 (long long)g->data_len);
    else if (g->truncated != s->want.truncated)
        snprintf(msg, sizeof msg, "truncated want %d got %d", s->want.truncated, g->truncated);
    else if (g->bytes != s->len)
        snprintf(msg, sizeof msg, "bytes want %zu got %zu", s->len, g->bytes);
    if (msg[0] && report)
        fprintf(stderr, "  resp %s: line #%zu: %s\n", ctx, idx, msg);
    return !msg[0];
}

static bool run_resp(const char *name, const char *how, const char *in, size_t len,
                     const struct rseg *segs, size_t nsegs, size_t split, bool bytewise,
                     bool report)
{
    struct mc_resp_parser *p = malloc(sizeof *p);
    static char text[MC_LINE_MAX + 1];
    char ctx[300];
    size_t got = 0, off = 0;
    bool ok = true, stopped = false;
    snprintf(ctx, sizeof ctx, "%s [%s]", name, how);
    mc_resp_init(p);
    while (off < len && ok && !stopped) {
        size_t clen = bytewise ? 1 : split ? (off < split ? split - off : len - off) : len - off;
        char *chunk = malloc(clen);
        memcpy(chunk, in + off, clen);
        size_t pos = 0;
        while (pos < clen && ok) {
            struct mc_line l;
            size_t used = (size_t)-1;
            enum mc_result res = mc_resp_parse(p, chunk + pos, clen - pos, &used, &l);
            if (used > clen - pos) {
                ok = false;
                if (report)
                    fprintf(stderr, "  resp %s: used %zu > %zu\n", ctx, used, clen - pos);
                break;
            }
            pos += used;
            if (res == MC_NEED_MORE) {
                if (pos != clen) {
                    ok = false;
                    if (report)
                        fprintf(stderr, "  resp %s: MC_NEED_MORE left bytes\n", ctx);
                }
                break;
            }
            if (got >= nsegs || segs[got].want.res != (int)res) {
                ok = false;
                if (report)
                    fprintf(stderr, "  resp %s: event #%zu is %s, unexpected\n", ctx, got,
                            res == MC_OK ? "MC_OK" : "MC_ERROR");
                break;
            }
            got++;
            if (res == MC_ERROR) {
                stopped = true;
                break;
            }
            memcpy(text, l.text, l.len);
            if (!rl_equal(ctx, got - 1, &segs[got - 1], &l, text, report))
                ok = false;
        }
        free(chunk);
        off += clen;
    }
    if (ok && got != nsegs) {
        ok = false;
        if (report)
            fprintf(stderr, "  resp %s: %zu lines, want %zu\n", ctx, got, nsegs);
    }
    if (ok && !stopped && !mc_resp_at_boundary(p)) {
        ok = false;
        if (report)
            fprintf(stderr, "  resp %s: not at a boundary at the end\n", ctx);
    }
    if (!ok && report)
        check_dump("input", in, len, split);
    free(p);
    return ok;
}

static bool resp_all_splits(const char *name, const char *in, size_t len, const struct rseg *segs,
                            size_t nsegs)
{
    char how[64];
    if (!run_resp(name, "whole", in, len, segs, nsegs, 0, false, true) ||
        !run_resp(name, "byte by byte", in, len, segs, nsegs, 0, true, true))
        return false;
    for (size_t k = 1; k < len; k++) {
        if (!run_resp(name, "", in, len, segs, nsegs, k, false, false)) {
            snprintf(how, sizeof how, "split at %zu", k);
            run_resp(name, how, in, len, segs, nsegs, k, false, true);
            return false;
        }
    }
    return true;
}

/* One check: the response case parses the same whole, byte by byte and
 * split at every offset. */
#define CHECK_RESP_ALL_SPLITS(name, in, len, segs, nsegs) \
    do { \
        const char *n_ = (name); \
        CHECK(resp_all_splits(n_, (in), (len), (segs), (nsegs)), "response case \"%s\"", n_); \
    } while (0)

static void test_response_table(void)
{
    static char buf[1 << 16];
    static struct rseg all[1024];
    size_t blen = 0, nall = 0;
    for (size_t i = 0; i < NRESP_CASES; i++) {
        const struct resp_case *c = &resp_cases[i];
        size_t len = 0, n = 0;
        static char in[4096];
        for (; n < MAX_SEGS && c->segs[n].in; n++) {
            memcpy(in + len, c->segs[n].in, c->segs[n].len);
            len += c->segs[n].len;
            if (!(c->opts & NO_BATCH)) {
                all[nall++] = c->segs[n];
                memcpy(buf + blen, c->segs[n].in, c->segs[n].len);
                blen += c->segs[n].len;
            }
        }
        CHECK_RESP_ALL_SPLITS(c->name, in, len, c->segs, n);
    }
    CHECK_RESP_ALL_SPLITS("pipelined answers", buf, blen, all, nall);

    /* a line longer than MC_LINE_MAX is kept truncated */
    static char big[4000];
    memcpy(big, "STAT ", 5);
    memset(big + 5, 'x', 2995);
    memcpy(big + 3000, "\r\n", 2);
    struct rseg s = { big, 3002, RL(.code = MC_CODE_STAT, .truncated = true) };
    static char want[MC_LINE_MAX + 1];
    memcpy(want, big, MC_LINE_MAX);
    s.want.text = want;
    CHECK_RESP_ALL_SPLITS("response line of 3000 bytes", big, 3002, &s, 1);
}

/* --- pairing ------------------------------------------------------------- */

static bool parse_one_req(const char *in, size_t len, struct mc_request *r)
{
    struct mc_req_parser p;
    size_t used;
    mc_req_init(&p);
    return mc_req_parse(&p, in, len, &used, r) == MC_OK;
}

static bool parse_one_line(struct mc_resp_parser *p, const char *in, size_t len, struct mc_line *l)
{
    size_t used;
    mc_resp_init(p);
    return mc_resp_parse(p, in, len, &used, l) == MC_OK;
}

struct pair_case {
    const char *req;
    const char *line;
    bool mine;
};

static const struct pair_case pair_cases[] = {
    /* loud requests own whatever comes */
    { "get k\r\n", "VALUE k 0 1\r\na\r\n", true },
    { "set k 0 0 1\r\na\r\n", "SERVER_ERROR out of memory storing object\r\n", true },
    { "mg k\r\n", "EN\r\n", true },
    /* ms q: HD suppressed; NS EX NF and run-time errors sent */
    { "ms k 1 q\r\na\r\n", "HD\r\n", false },
    { "ms k 1 q\r\na\r\n", "NS\r\n", true },
    { "ms k 1 q\r\na\r\n", "EX\r\n", true },
    { "ms k 1 q\r\na\r\n", "NF\r\n", true },
    { "ms k 1 q\r\na\r\n", "SERVER_ERROR object too large for cache\r\n", true },
    { "ms k 1 q\r\na\r\n", "SERVER_ERROR out of memory storing object\r\n", true },
    { "ms k 1 q\r\na\r\n", "CLIENT_ERROR bad command line format\r\n", false },
    { "ms k 1 q\r\na\r\n", "ERROR\r\n", false },
    { "ms k 1 q\r\na\r\n", "EN\r\n", false },
    { "ms k 1 q\r\na\r\n", "VA 1\r\na\r\n", false },
    { "ms k 1 q\r\na\r\n", "MN\r\n", false },
    { "ms k 1 q\r\na\r\n", "STORED\r\n", false },
    /* 1.6.18 echoes O and k on every meta status line */
    { "ms k 1 q O5\r\na\r\n", "NS O5\r\n", true },
    { "ms k 1 q O5\r\na\r\n", "NS O6\r\n", false },
    { "ms k 1 q O5\r\na\r\n", "NS O55\r\n", false },
    { "ms k 1 q O5\r\na\r\n", "NS\r\n", false },
    { "ms k 1 q O5\r\na\r\n", "HD O5\r\n", false },
    { "ms k 1 q\r\na\r\n", "NS O5\r\n", false },
    { "ms k 1 q k\r\na\r\n", "NS kk\r\n", true },
    { "ms k 1 q k\r\na\r\n", "NS kj\r\n", false },
    { "ms k 1 q k\r\na\r\n", "NS\r\n", false },
    { "ms k 1 q\r\na\r\n", "NS kk\r\n", false },
    { "ms k 1 q k O7\r\na\r\n", "EX O7 kk\r\n", true },
    { "ms k 1 q k O7\r\na\r\n", "EX O7\r\n", false },
    { "ms Zm9v 1 b q k\r\na\r\n", "NS kZm9v b\r\n", true },
    { "ms Zm9v 1 b q k\r\na\r\n", "NS\r\n", false },
    { "mg k q O\r\n", "HD O\r\n", true },
    { "mg k q O\r\n", "HD\r\n", false },
    /* mg q: EN suppressed, a hit answers */
    { "mg k q\r\n", "EN\r\n", false },
    { "mg k q\r\n", "HD\r\n", true },
    { "mg k q v\r\n", "VA 1\r\na\r\n", true },
    { "mg k q\r\n", "NF\r\n", false },
    { "mg k q\r\n", "NS\r\n", false },
    { "mg k q\r\n", "SERVER_ERROR refcount overflow during fetch\r\n", true },
    { "mg k q\r\n", "CLIENT_ERROR bad command line format\r\n", false },
    { "mg k q O9 k\r\n", "HD kk O9\r\n", true },
    { "mg k q O9 k\r\n", "EN kk O9\r\n", false },
    { "mg k q O9 k\r\n", "HD O9\r\n", false },
    { "mg k q O9 k\r\n", "HD kk O8\r\n", false },
    { "mg k q N30\r\n", "HD W\r\n", true },
    /* md q: HD suppressed */
    { "md k q\r\n", "HD\r\n", false },
    { "md k q\r\n", "NF\r\n", true },
    { "md k q C1\r\n", "EX\r\n", true },
    { "md k q\r\n", "NS\r\n", false },
    { "md k q\r\n", "CLIENT_ERROR bad command line format\r\n", false },
    { "md k q O3 k\r\n", "NF O4 kk\r\n", false },
    /* ma q: HD and VA suppressed (1.6.18: "ma n q v" answers nothing) */
    { "ma k q\r\n", "HD\r\n", false },
    { "ma k q v\r\n", "VA 1\r\n8\r\n", false },
    { "ma k q\r\n", "NF\r\n", true },
    { "ma k q\r\n", "NS\r\n", true },
    { "ma k q C1\r\n", "EX\r\n", true },
    { "ma k q\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", true },
    { "ma k q\r\n", "SERVER_ERROR out of memory\r\n", true },
    /* ma q N: an item it creates answers HD despite q (1.6.18), echo or not;
     * an update's HD is suppressed, and the barrier behind says so */
    { "ma k q N0\r\n", "HD\r\n", true },
    { "ma k q\r\n", "HD\r\n", false },
    { "ma k q N0 O3\r\n", "HD O3\r\n", true },
    { "ma k q N0 O3\r\n", "HD O4\r\n", false },
    { "ma k q N0 O3 v\r\n", "VA 1 O3\r\n0\r\n", true },
    { "ma k q N0 k\r\n", "HD kk\r\n", true },
    { "ma k q O3\r\n", "HD O3\r\n", false },
    /* text noreply: every answer suppressed (1.6.18 -M: even out of memory) */
    { "set k 0 0 1 noreply\r\na\r\n", "SERVER_ERROR out of memory storing object\r\n", false },
    { "set k 0 0 1 noreply\r\na\r\n", "SERVER_ERROR object too large for cache\r\n", false },
    { "set k 0 0 1 noreply\r\na\r\n", "STORED\r\n", false },
    { "set k 0 0 1 noreply\r\nabc", "CLIENT_ERROR bad data chunk\r\n", false },
    { "delete k noreply\r\n", "DELETED\r\n", false },
    { "incr k 1 noreply\r\n", "2\r\n", false },
    { "flush_all noreply\r\n", "OK\r\n", false },
    { "watch noreply\r\n", "ERROR\r\n", false },
    { "verbosity noreply\r\n", "CLIENT_ERROR bad command line format\r\n", false },
};

static void test_pairing(void)
{
    struct mc_resp_parser rp;
    for (size_t i = 0; i < sizeof pair_cases / sizeof pair_cases[0]; i++) {
        const struct pair_case *c = &pair_cases[i];
        struct mc_request r;
        struct mc_line l;
        bool parsed = parse_one_req(c->req, strlen(c->req), &r) &&
                      parse_one_line(&rp, c->line, strlen(c->line), &l);
        CHECK(parsed && mc_reply_is_mine(&r, &l) == c->mine,
              "pair mc_reply_is_mine(\"%.*s\", \"%.*s\") want %d%s", (int)strcspn(c->req, "\r\n"),
              c->req, (int)strcspn(c->line, "\r\n"), c->line, c->mine,
              parsed ? "" : ": could not parse them");
    }

    /* the request after one with O1 k must not inherit them */
    struct mc_req_parser p;
    struct mc_request r;
    struct mc_line l;
    size_t used;
    static const char two[] = "ms a 1 q O1 k\r\na\r\nms b 1 q\r\nb\r\n";
    mc_req_init(&p);
    enum mc_result res = mc_req_parse(&p, two, sizeof two - 1, &used, &r);
    if (res == MC_OK)
        res = mc_req_parse(&p, two + used, sizeof two - 1 - used, &used, &r);
    CHECK(res == MC_OK && parse_one_line(&rp, "NS\r\n", 4, &l) && mc_reply_is_mine(&r, &l),
          "pair: \"ms b 1 q\" after \"ms a 1 q O1 k\" does not own \"NS\"");
}

struct multi_case {
    const char *line;
    bool ends;
};

static const struct multi_case multi_cases[] = {
    { "END\r\n", true },
    { "END\n", true },
    { "ERROR\r\n", true },
    { "ERROR: shutdown not enabled\r\n", true },
    { "CLIENT_ERROR bad command line format\r\n", true },
    { "SERVER_ERROR out of memory writing get response\r\n", true },
    /* 1.6.18: lru_crawler metadump's refusals are single lines */
    { "BADCLASS invalid class id\r\n", true },
    { "BUSY currently processing crawler request\r\n", true },
    { "NOTSTARTED no items to crawl\r\n", true },
    { "VALUE k 0 1\r\na\r\n", false },
    { "STAT pid 1\r\n", false },
    { "ITEM k [1 b; 0 s]\r\n", false },
    { "PREFIX foo get 1 hit 0 set 0 del 0\r\n", false },
    { "key=k exp=-1 la=1 cas=2 fetch=no cls=1 size=61\n", false },
    { "OK\r\n", false },
    { "ENDX\r\n", false },
    { "BUSYX\r\n", false },
    { "\r\n", false },
};

static void test_ends_multi(void)
{
    struct mc_resp_parser rp;
    for (size_t i = 0; i < sizeof multi_cases / sizeof multi_cases[0]; i++) {
        struct mc_line l;
        CHECK(parse_one_line(&rp, multi_cases[i].line, strlen(multi_cases[i].line), &l) &&
                  mc_line_ends_multi(&l) == multi_cases[i].ends,
              "mc_line_ends_multi(\"%.*s\") want %d", (int)strcspn(multi_cases[i].line, "\r\n"),
              multi_cases[i].line, multi_cases[i].ends);
    }
}

/* mc_answer_ends: how many lines each kind of answer takes. */
static void test_answer_ends(void)
{
    static const struct {
        enum mc_reply reply;
        const char *line;
        bool first, ends;
    } cases[] = {
        { MC_REPLY_LINE, "STORED\r\n", true, true },
        { MC_REPLY_MULTI, "STAT pid 1\r\n", true, false },
        { MC_REPLY_MULTI, "END\r\n", false, true },
        /* items.c item_stats_sizes_enable / _disable */
        { MC_REPLY_SIZES, "STAT sizes_status enabled\r\n", true, true },
        { MC_REPLY_SIZES, "STAT sizes_status disabled\r\n", true, true },
        { MC_REPLY_SIZES, "STAT sizes_status error\r\n", true, false },
        { MC_REPLY_SIZES, "STAT sizes_error cas_support_disabled\r\n", false, true },
        { MC_REPLY_SIZES, "ERROR\r\n", true, true },
    };
    struct mc_resp_parser rp;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mc_request r = { .reply = cases[i].reply };
        struct mc_line l;
        CHECK(parse_one_line(&rp, cases[i].line, strlen(cases[i].line), &l) &&
                  mc_answer_ends(&r, &l, cases[i].first) == cases[i].ends,
              "mc_answer_ends(%d, \"%.*s\", first %d) want %d", (int)cases[i].reply,
              (int)strcspn(cases[i].line, "\r\n"), cases[i].line, cases[i].first, cases[i].ends);
    }
}

static void test_names(void)
{
    CHECK_STR(mc_cmd_name(MC_CMD_SET), "set");
    CHECK_STR(mc_cmd_name(MC_CMD_INVALID), "invalid");
    CHECK_STR(mc_cmd_name(MC_CMD_COUNT), "?");
    CHECK_STR(mc_code_name(MC_CODE_VALUE), "VALUE");
    CHECK_STR(mc_code_name(MC_CODE_COUNT), "?");
}

/* Lines padded with spaces: memcached's tokenizer skips runs of spaces, so
 * tokens past byte 2048 of the line still count when the line is read
 * whole (a set padded before its key was read as a command without a data
 * block, and the block as a request of its own: answers out of step); and
 * whether memcached's read may cut the line (long_line) and gat's exptime
 * checked before its keys. Every split point, and byte by byte for the
 * short ones. */
static void test_padded_lines(void)
{
    static char in[1 << 15];
    static char k250[251], k251[252];
    memset(k250, 'k', 250);
    k250[250] = '\0';
    memset(k251, 'k', 251);
    k251[251] = '\0';
    struct exp_seq e;
    size_t n;

    /* "set" + 2100 spaces + "h:k 0 0 5": memcached 1.6.18 answers STORED */
    n = (size_t)snprintf(in, sizeof in, "set");
    memset(in + n, ' ', 2100);
    n += 2100;
    n += (size_t)snprintf(in + n, sizeof in - n, "h:k 0 0 5\r\nhello\r\nmn\r\n");
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .key = "h:k", .value_len = 5, .long_line = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("set padded before its key", "whole", in, n, &e, 0, false);
    CHECK_REQ("set padded before its key", "split at 1000", in, n, &e, 1000, false);
    CHECK_REQ("set padded before its key", "split after the line", in, n, &e, n - 11, false);

    /* ms padded the same way */
    n = (size_t)snprintf(in, sizeof in, "ms");
    memset(in + n, ' ', 4096);
    n += 4096;
    n += (size_t)snprintf(in + n, sizeof in - n, "h:k 5 T0\r\nhello\r\nmn\r\n");
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_MS, .key = "h:k", .value_len = 5, .long_line = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("ms padded before its key", "whole", in, n, &e, 0, false);

    /* padded after the tokens: a valid 3.4 KB set line */
    n = (size_t)snprintf(in, sizeof in, "set long 0 0 5");
    memset(in + n, ' ', 3400);
    n += 3400;
    n += (size_t)snprintf(in + n, sizeof in - n, "\r\nhello\r\nmn\r\n");
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .key = "long", .value_len = 5, .long_line = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("set padded after its tokens", "whole", in, n, &e, 0, false);
    CHECK_REQ("set padded after its tokens", "split at 2000", in, n, &e, 2000, false);

    /* a long get line is no long_line: memcached reads on */
    n = (size_t)snprintf(in, sizeof in, "get");
    memset(in + n, ' ', 3000);
    n += 3000;
    n += (size_t)snprintf(in + n, sizeof in - n, "a b\r\nmn\r\n");
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 2),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("get padded with 3000 spaces", in, n, &e);

    /* ...unless more than 100 spaces lead it, read whole */
    memset(in, ' ', 101);
    n = 101;
    n += (size_t)snprintf(in + n, sizeof in - n, "get a");
    memset(in + n, ' ', 2000);
    n += 2000;
    n += (size_t)snprintf(in + n, sizeof in - n, "\r\nmn\r\n");
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GET, .reply = MC_REPLY_MULTI, .key = "a", .nkeys = 1,
                          .long_line = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ("get after 101 spaces, 2.1 KB", "whole", in, n, &e, 0, false);

    /* a short line with runs of spaces: tokens as memcached's */
    static const char runs[] = "  set   k2  1   0  2  \r\nab\r\nmn\r\n";
    e.n = 0;
    exp_add(&e, (struct rq)RQ(.cmd = MC_CMD_SET, .key = "k2", .flags = 1, .value_len = 2),
            sizeof runs - 1 - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("set with runs of spaces", runs, sizeof runs - 1, &e);

    /* gat: a bad exptime is refused before the keys are looked at */
    n = (size_t)snprintf(in, sizeof in, "gat xx %s\r\nmn\r\n", k251);
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GAT, .reply = MC_REPLY_MULTI, .key = k250, .key_len = 251,
                          .nkeys = 1),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("gat bad exptime, 251-byte key", in, n, &e);
    n = (size_t)snprintf(in, sizeof in, "gat 10 %s\r\nmn\r\n", k251);
    e.n = 0;
    exp_add(&e,
            (struct rq)RQ(.cmd = MC_CMD_GAT, .reply = MC_REPLY_MULTI, .key = k250, .key_len = 251,
                          .nkeys = 1, .exptime = 10, .key_too_long = true),
            n - 4);
    exp_add(&e, RQ_MN, 4);
    CHECK_REQ_ALL_SPLITS("gat 10, 251-byte key", in, n, &e);
}

int main(void)
{
    test_request_table();
    test_request_batch();
    test_long_keys();
    test_long_lines();
    test_padded_lines();
    test_binary_protocol();
    test_response_table();
    test_pairing();
    test_ends_multi();
    test_answer_ends();
    test_names();
    return check_done("test_mc_parse");
}
