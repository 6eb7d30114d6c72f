/* mclog: memcached's own item lines, as memcached prints them -- the
 * `watch` logger stream (type=item_store, type=eviction, type=deleted,
 * skipped=N) and the `lru_crawler metadump` listing (key=... exp=... la=...
 * cas=... fetch=... cls=... size=... [flags=...], then END) -- turned into
 * events, one per line.
 *
 * Owns: line framing (resumable at any byte: the partial line is kept in the
 * parser's struct, never in the caller's buffer), key URI-decoding
 * (memcached prints keys with uriencode), the text of every field it knows
 * and the mapping of memcached's status/cmd words to enums.
 * Must never: do I/O, know about libuv or the store, allocate (the parser is
 * a fixed-size struct), or guess a field memcached did not print (absent
 * fields are marked absent: has_* false).
 *
 * Bounds: one line is at most MCLOG_LINE_MAX bytes including its '\n'
 * (memcached's own LOGGER_PARSE_SCRATCH is 4096; a metadump line is under
 * 1 KiB: a 250-byte key encodes to at most 750 bytes); a longer line is an
 * error (MCLOG_ERROR, MCLOG_ERR_LINE_TOO_LONG) and the stream is out of sync.
 *
 * Lines of the watch stream that are not item lines (other log types a
 * watcher with more flags would get, `ts=... type=...` of a newer memcached)
 * are MCLOG_EV_OTHER: counted by the caller, never an error. A line that
 * starts like an item line but lacks a required field, or has a field that
 * does not parse, is MCLOG_ERROR with the reason.
 *
 * What memcached 1.6.18 really prints (tests/unit/test_mclog.c has the lines):
 * - ts=S.U: U is tv_usec printed with %d, NOT zero-padded (ts=1.79332 is
 *   1 s + 79,332 us); ts_ns reads it so (a padded U reads the same).
 * - `watch deletions` does not exist before 1.6.20: 1.6.18 answers "ERROR"
 *   (REFUSED) to a watch naming it; ask for mutations/evictions only there.
 * - cfd= appeared in 1.6.0 and size= in 1.6.11 (has_size false before);
 *   an older server's STORE has cfd -1.
 * - a store that failed with too_large/no_memory logs whatever clsid/cfd
 *   memcached had at hand (clsid=24 cfd=513911456 size=0 seen): not a class.
 * - metadump lines end in '\n' (END in "\r\n"); after 1.6.18 they carry
 *   flags= and a trailing space. skipped=N reports only the drops since the
 *   last line that fit: `stats` log_watcher_skipped is the true total. */
#ifndef SLABTAP_MCLOG_H
#define SLABTAP_MCLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_parse.h"

#define MCLOG_LINE_MAX 4096

enum mclog_result {
    MCLOG_OK = 0,    /* one event in *ev; *used bytes consumed */
    MCLOG_NEED_MORE, /* every byte given was consumed (kept); call again */
    MCLOG_ERROR,     /* *ev has kind MCLOG_EV_ERROR and err set; the line is
                        consumed; the caller decides whether to go on */
};

/* X(id, text): what a line was */
#define MCLOG_EVENTS(X) \
    X(STORE, "item_store")  /* watch mutations */ \
    X(EVICTION, "eviction") /* watch evictions */ \
    X(DELETION, "deleted")  /* watch deletions */ \
    X(SKIPPED, "skipped")   /* skipped=N: memcached dropped N lines for this watcher */ \
    X(ITEM, "item")         /* one metadump line */ \
    X(END, "end")           /* END: the metadump is complete */ \
    X(OK, "ok")             /* OK: memcached accepted the watch */ \
    X(REFUSED, "refused")   /* an error line instead (line holds memcached's words) */ \
    X(OTHER, "other")       /* a log line of another type: ignored, counted */ \
    X(ERROR, "error")       /* a line that does not parse (err) */

enum mclog_event_kind {
#define MCLOG_EV_ENUM(id, text) MCLOG_EV_##id,
    MCLOG_EVENTS(MCLOG_EV_ENUM)
#undef MCLOG_EV_ENUM
        MCLOG_EV__COUNT
};
const char *mclog_event_text(enum mclog_event_kind k);

/* status= of an item_store line (memcached's status_map) */
#define MCLOG_STATUSES(X) \
    X(NOT_STORED, "not_stored", "NOT_STORED") \
    X(STORED, "stored", "STORED") \
    X(EXISTS, "exists", "EXISTS") \
    X(NOT_FOUND, "not_found", "NOT_FOUND") \
    X(TOO_LARGE, "too_large", "SERVER_ERROR object too large for cache") \
    X(NO_MEMORY, "no_memory", "SERVER_ERROR out of memory storing object")

enum mclog_status {
    MCLOG_STATUS_NONE = 0,
#define MCLOG_ST_ENUM(id, word, answer) MCLOG_STATUS_##id,
    MCLOG_STATUSES(MCLOG_ST_ENUM)
#undef MCLOG_ST_ENUM
        MCLOG_STATUS__COUNT
};
/* the word memcached logs, and the answer line a text client got for it */
const char *mclog_status_word(enum mclog_status s);
const char *mclog_status_answer(enum mclog_status s);

/* Error reasons (the text table is mclog_err_text). */
#define MCLOG_ERRS(X) \
    X(NONE, "no error") \
    X(LINE_TOO_LONG, "line longer than MCLOG_LINE_MAX") \
    X(MISSING_FIELD, "a required field is missing") \
    X(BAD_NUMBER, "a number does not parse") \
    X(BAD_KEY, "the key is empty, too long or badly encoded") \
    X(BAD_WORD, "a status, cmd or fetch word memcached does not print")

enum mclog_err {
#define MCLOG_ERR_ENUM(id, text) MCLOG_ERR_##id,
    MCLOG_ERRS(MCLOG_ERR_ENUM)
#undef MCLOG_ERR_ENUM
        MCLOG_ERR__COUNT
};
const char *mclog_err_text(enum mclog_err e);

/* One line. Times are as memcached printed them: ts (watch lines) is unix
 * time with microseconds, exp/la of a metadump line are absolute unix
 * seconds, ttl/la of an eviction line are relative seconds. */
struct mclog_event {
    enum mclog_event_kind kind;
    enum mclog_err err; /* MCLOG_EV_ERROR: why */
    int64_t ts_ns;      /* ts=S.U (watch lines); 0: absent */
    uint64_t gid;
    char key[MC_KEY_MAX + 1]; /* decoded, NUL-terminated */
    size_t key_len;
    enum mclog_status status; /* STORE */
    enum mc_cmd cmd;          /* STORE: set add replace append prepend cas;
                                 DELETION: delete, or md (MC_CMD_MD) */
    bool has_cmd;             /* false for memcached's "na"/"null" (a command
                                 it has no name for): the line is still good */
    int64_t ttl;              /* STORE: ttl= seconds left (0: none; < 0: stored
                                 already expired: memcached prints it %u,
                                 4294967230 is -66); EVICTION: ttl= (-1: none) */
    int64_t la;               /* EVICTION: seconds since last access; ITEM: unix seconds */
    int64_t exp;              /* ITEM: unix seconds, -1: never */
    uint32_t clsid;           /* clsid= / cls= */
    int32_t cfd;              /* STORE: the client's fd; -1 when not printed (< 1.6.0) */
    int64_t size;             /* STORE/EVICTION/DELETION: value bytes (memcached
                                 prints nbytes - 2); ITEM: ITEM_ntotal, the
                                 whole item */
    bool has_size;            /* memcached older than the size= field does not print it */
    bool fetched;             /* EVICTION, ITEM: fetch=yes */
    uint64_t cas;             /* ITEM */
    uint64_t flags;           /* ITEM: flags= (newer memcached only) */
    bool has_flags;
    uint64_t skipped; /* SKIPPED: N */
    /* REFUSED, OTHER, ERROR: the line as received (without CRLF), cut to
       fit, NUL-terminated */
    char line[256];
};

struct mclog_parser {
    char buf[MCLOG_LINE_MAX];
    size_t len;
    bool discarding; /* after LINE_TOO_LONG: dropping bytes to the next '\n' */
    uint64_t lines;  /* complete lines seen */
};

void mclog_init(struct mclog_parser *p);

/* Consumes bytes from buf[0..len) up to and including one line's '\n' and
 * fills *ev; *used says how many bytes it took (all of them on
 * MCLOG_NEED_MORE). Calling it again with the rest continues. */
enum mclog_result mclog_next(struct mclog_parser *p, const char *buf, size_t len, size_t *used,
                             struct mclog_event *ev);

/* The request line that starts a stream (watch) for the given event kinds:
 * "watch mutations evictions deletions\r\n" and the like, into out (with a
 * NUL after it). Returns its length, 0 when out is too small or no kind is
 * asked for (a bare "watch" would stream fetchers). */
size_t mclog_watch_request(char *out, size_t cap, bool mutations, bool evictions, bool deletions);

#endif
