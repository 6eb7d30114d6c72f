/* stats_parse: memcached's replies to `stats`, `stats slabs`, `stats items`,
 * `stats settings` and `version`, turned into a stats_sample.
 *
 * Owns: the line parser (bytes in, events out, resumable at any byte), the
 * batch sequencer for a pipelined request, and the stats_sample container
 * that merges `stats slabs` and `stats items` per slab class.
 * Must never: do I/O, know about libuv, write into the caller's input
 * buffer, drop a field it does not recognise (a newer memcached's
 * counters are kept verbatim, within the documented bounds), or complete
 * a batch with a class that has its `stats items` half and not its
 * `stats slabs` half (issue 18: such a class is left out whole and
 * counted in classes_partial; see "Why items before slabs" below).
 *
 * Memory bounds (why: a confused or hostile upstream must not grow us
 * without limit):
 *   - one line: STATS_PARSE_LINE_MAX bytes including CRLF, else an error;
 *   - a kv list: STATS_LIST_FIELDS_MAX fields and STATS_LIST_TEXT_MAX bytes
 *     of names+values (per-class lists: STATS_CLASS_FIELDS_MAX and
 *     STATS_CLASS_TEXT_MAX); fields beyond are counted in fields_dropped;
 *   - a sample: 3 global lists + STATS_CLASS_ID_LIMIT class lists, so at
 *     worst about 3 * (512*24 + 32 KiB) + 256 * (128*24 + 8 KiB) ~= 3 MiB;
 *     a real 1.6.18 sample with 63 classes allocates ~200 KiB.
 */
#ifndef SLABTAP_STATS_PARSE_H
#define SLABTAP_STATS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* memcached itself caps stat names and values at 127 chars each
 * (STAT_KEY_LEN/STAT_VAL_LEN 128), so a real line is <= 262 bytes; 1024
 * leaves room for other servers speaking the protocol. */
#define STATS_PARSE_LINE_MAX 1024

#define STATS_LIST_FIELDS_MAX 512
#define STATS_LIST_TEXT_MAX (32 * 1024)
#define STATS_CLASS_FIELDS_MAX 128
#define STATS_CLASS_TEXT_MAX (8 * 1024)
/* memcached has at most 63 classes (ids 1..63; 0 is the "large item"
 * pseudo class of some versions); ids up to 255 are kept as classes so a
 * build with a larger MAX_NUMBER_OF_SLAB_CLASSES still merges. Larger ids
 * are kept verbatim in slab_globals under their full name. */
#define STATS_CLASS_ID_LIMIT 256
#define STATS_VERSION_MAX 128
/* "stats\r\nstats items\r\nstats slabs\r\nstats settings\r\nversion\r\n" */
#define STATS_BATCH_CMD_MAX 64

enum stats_parse_result {
    STATS_PARSE_OK = 0,    /* one event (next) / the whole batch (batch_feed) done */
    STATS_PARSE_NEED_MORE, /* every byte given was consumed; call again with more */
    STATS_PARSE_ERROR,     /* stream broken or out of sync; reset, and reconnect */
    STATS_PARSE_REFUSED,   /* batch_feed only: batch done and stream in sync, but
                              memcached answered an error line to a required
                              command, so the sample is incomplete */
};

/* X(name, text): one list, so the enum and its text table cannot drift. */
#define STATS_PARSE_ERRORS(X) \
    X(STATS_PARSE_E_NONE, "no error") \
    X(STATS_PARSE_E_LINE_TOO_LONG, "line longer than STATS_PARSE_LINE_MAX") \
    X(STATS_PARSE_E_NUL_BYTE, "NUL byte inside a line") \
    X(STATS_PARSE_E_BAD_STAT, "STAT line without a name") \
    X(STATS_PARSE_E_UNKNOWN_LINE, "line is not STAT/END/VERSION/ERROR/CLIENT_ERROR/SERVER_ERROR") \
    X(STATS_PARSE_E_UNEXPECTED, "valid line in the wrong place for the reply expected") \
    X(STATS_PARSE_E_BAD_BATCH, "batch begun with no reply expected") \
    X(STATS_PARSE_E_ERROR_REPLY, "memcached answered an error line to a required command")

enum stats_parse_error {
#define STATS_PARSE_ERROR_ENUM(name, text) name,
    STATS_PARSE_ERRORS(STATS_PARSE_ERROR_ENUM)
#undef STATS_PARSE_ERROR_ENUM
        STATS_PARSE_E_COUNT
};

const char *stats_parse_error_str(enum stats_parse_error e);

/* ---- line level ---------------------------------------------------- */

enum stats_parse_event_kind {
    STATS_EV_STAT,        /* STAT <name> <value> */
    STATS_EV_END,         /* END: a stats block is complete */
    STATS_EV_VERSION,     /* VERSION <value> */
    STATS_EV_ERROR_REPLY, /* ERROR / CLIENT_ERROR <msg> / SERVER_ERROR <msg> */
};

enum stats_error_reply {
    STATS_REPLY_ERROR,
    STATS_REPLY_CLIENT_ERROR,
    STATS_REPLY_SERVER_ERROR,
};

/* Strings point into the parser's own line buffer: NUL-terminated, valid
 * until the next call on the same parser. */
struct stats_parse_event {
    enum stats_parse_event_kind kind;
    enum stats_error_reply error_reply; /* for STATS_EV_ERROR_REPLY */
    const char *name;                   /* STAT name; "" otherwise */
    size_t name_len;
    const char *value; /* STAT value (may hold spaces), VERSION text, error message */
    size_t value_len;
};

struct stats_parser {
    size_t len;                   /* bytes of the current line held in line[] */
    bool in_block;                /* a STAT was seen and no END yet */
    enum stats_parse_error error; /* sticky until stats_parse_reset */
    uint64_t lines;               /* complete lines parsed, for diagnostics */
    char line[STATS_PARSE_LINE_MAX + 1];
};

void stats_parse_init(struct stats_parser *p);
void stats_parse_reset(struct stats_parser *p);
/* Consumes bytes of buf up to and including at most one line end and sets
 * *consumed. OK: *ev holds one event. NEED_MORE: all of buf was consumed
 * (*consumed == len) and the partial line is kept. ERROR: p->error says
 * why; every later call returns ERROR until stats_parse_reset. Lines end in
 * "\r\n"; a bare "\n" is accepted too. */
enum stats_parse_result stats_parse_next(struct stats_parser *p, const char *buf, size_t len,
                                         size_t *consumed, struct stats_parse_event *ev);
/* Whole text is an optional '-' and 1..19 digits that fit int64. Counters
 * above INT64_MAX (never seen in practice) stay text-only. */
bool stats_parse_int64(const char *s, size_t n, int64_t *out);
/* "12:used_chunks" or "items:12:mem_requested" -> 12, "used_chunks".
 * False for a name without a decimal class prefix (a global field). */
bool stats_parse_class_name(const char *name, size_t name_len, unsigned long *class_id,
                            const char **field, size_t *field_len);

/* ---- kv lists ------------------------------------------------------ */

struct stats_kv {
    uint32_t name_off, value_off; /* into the list's text; each NUL-terminated */
    uint16_t name_len, value_len;
    bool has_num; /* value text was an int64 (see stats_parse_int64) */
    int64_t num;
};

/* Fields in arrival order; duplicates are kept, lookups return the first. */
struct stats_kv_list {
    struct stats_kv *kv;
    uint32_t n;
    size_t cap;
    uint32_t max_fields, max_text; /* the bounds this list enforces */
    struct buf text;               /* every name and value, each NUL-terminated */
};

static inline const char *stats_kv_name(const struct stats_kv_list *l, uint32_t i)
{
    return l->text.data + l->kv[i].name_off;
}
static inline const char *stats_kv_value(const struct stats_kv_list *l, uint32_t i)
{
    return l->text.data + l->kv[i].value_off;
}
void stats_kv_list_init(struct stats_kv_list *l, uint32_t max_fields, uint32_t max_text);
void stats_kv_list_fini(struct stats_kv_list *l);  /* frees; the list stays usable, empty */
void stats_kv_list_clear(struct stats_kv_list *l); /* empties, keeps the allocation */
/* Appends; false (list unchanged) past the bounds or out of memory. */
bool stats_kv_list_add(struct stats_kv_list *l, const char *name, size_t name_len,
                       const char *value, size_t value_len);
/* dst := src, bounds included; 0 or -1 (out of memory, dst emptied). */
int stats_kv_list_copy(struct stats_kv_list *dst, const struct stats_kv_list *src);
const struct stats_kv *stats_kv_find(const struct stats_kv_list *l, const char *name);
/* Same fields, same order, same text. */
bool stats_kv_equal(const struct stats_kv_list *a, const struct stats_kv_list *b);

/* ---- the sample ---------------------------------------------------- */

/* Bit per reply of a batch. The bits name the replies; the order a batch
 * sends them in (and expects them back in) is stats_parse_batch_command's:
 * stats, stats items, stats slabs, stats settings, version.
 *
 * Why items before slabs (issue 18). memcached answers the commands of a
 * pipeline one after the other while its other threads keep storing, so
 * the two replies are two instants. `stats slabs` names the classes that
 * have a page (do_slabs_stats: slabclass[i].slabs != 0); `stats items`
 * those that hold an item (item_stats: sizes[] summed over the LRUs is not
 * 0). An item lives in a chunk of a page of its class, and the page mover
 * never takes a class's last page (slabs_peek_page refuses below 2), so
 * once a class has a page it keeps one. Asked items first, every class
 * items names at t1 still has a page at t2 and slabs names it too: each
 * class has both halves, or only the slabs half (pages, no item yet --
 * memcached's own "no items"). Asked slabs first, a class whose first page
 * came between the two replies shows up in items alone, with no
 * chunk_size and no pages. The merge enforces the rule anyway, for servers
 * that break it: see stats_sample_drop_partial. */
enum stats_reply {
    STATS_R_GENERAL = 1u << 0,  /* stats */
    STATS_R_SLABS = 1u << 1,    /* stats slabs */
    STATS_R_ITEMS = 1u << 2,    /* stats items */
    STATS_R_SETTINGS = 1u << 3, /* stats settings */
    STATS_R_VERSION = 1u << 4,  /* version */
};
#define STATS_R_REQUIRED (STATS_R_GENERAL | STATS_R_SLABS | STATS_R_ITEMS)
#define STATS_R_ALL (STATS_R_REQUIRED | STATS_R_SETTINGS | STATS_R_VERSION)

struct stats_class {
    bool present;
    unsigned sources;        /* STATS_R_SLABS / STATS_R_ITEMS that named this class */
    struct stats_kv_list kv; /* field names without the "N:" / "items:N:" prefix,
                                 in arrival order: `stats items` fields first, then
                                 `stats slabs` (the batch's order) */
};

struct stats_sample {
    /* Filled by whoever drives the requests (the poller); zero otherwise. */
    int64_t t_ns;          /* wall clock (CLOCK_REALTIME) when the request was sent */
    uint64_t mono_ns;      /* monotonic clock when the request was sent */
    uint64_t rtt_ns;       /* request sent -> last byte of the reply */
    uint64_t seq;          /* 1, 2, ... per delivered sample */
    uint64_t connection;   /* 1 for the first connection, +1 per reconnect */
    bool requested;        /* asked for with poller_sample_now (e.g. the final one) */
    bool settings_fresh;   /* settings/version fetched in this very batch */
    bool settings_changed; /* fresh settings differ from the previous fetch
                              (false on the first fetch: nothing to differ from) */

    /* Filled by the batch. */
    bool has_settings; /* settings holds a complete `stats settings` */
    bool has_version;  /* version holds the `version` reply */
    char version[STATS_VERSION_MAX];
    struct stats_kv_list stats;        /* `stats` */
    struct stats_kv_list settings;     /* `stats settings` (valid iff has_settings) */
    struct stats_kv_list slab_globals; /* unprefixed fields of `stats slabs`/`stats items`
                                          (active_slabs, total_malloced, ...) */
    unsigned n_classes;                /* classes present */
    unsigned max_class_id;             /* highest present id, 0 if none: iterate 0..max_class_id */
    uint32_t fields_dropped;           /* fields lost to the bounds or to malloc failure */
    uint32_t classes_partial;          /* classes left out: `stats items` named them and
                                          `stats slabs` did not (stats_sample_drop_partial) */
    struct stats_class classes[STATS_CLASS_ID_LIMIT]; /* indexed by class id */
};

void stats_sample_init(struct stats_sample *s);
void stats_sample_fini(struct stats_sample *s);
/* Forgets the fields of the replies in `which` (STATS_R_* bits), keeping
 * allocations for reuse; the metadata fields above are zeroed too. */
void stats_sample_clear(struct stats_sample *s, unsigned which);
/* Deep copy; dst must be initialised. 0 or -1 (out of memory, dst cleared). */
int stats_sample_copy(struct stats_sample *dst, const struct stats_sample *src);
/* Routes one STAT line of reply `from` (one STATS_R_* bit): this is the
 * merge. `N:f` of slabs and `items:N:f` of items land in classes[N] as `f`;
 * anything else of slabs/items lands in slab_globals; stats and settings go
 * to their own lists. False if the field was dropped (bounds, memory). */
bool stats_sample_add(struct stats_sample *s, enum stats_reply from, const char *name,
                      size_t name_len, const char *value, size_t value_len);
void stats_sample_set_version(struct stats_sample *s, const char *v, size_t len);
/* Leaves out every class that `stats items` named and `stats slabs` did
 * not: its fields go, it is no longer present, n_classes and max_class_id
 * follow, and classes_partial counts it. Returns how many went. Such a
 * class has items but no chunk_size, pages or chunks; stored, it would
 * read as a class without pages (coalesce(total_pages, 0)) or vanish from
 * slab_waste, and the next sample has it whole. A class that only slabs
 * named stays: it has pages and no items, which is what memcached says.
 * stats_parse_batch_feed calls this when a batch that asked for both
 * replies completes; it is public for tests and for samples built by
 * hand with stats_sample_add. */
unsigned stats_sample_drop_partial(struct stats_sample *s);

/* NULL if class_id is absent. */
const struct stats_kv_list *stats_sample_class(const struct stats_sample *s, unsigned class_id);
/* True and *v set iff the field exists and is an int64. */
bool stats_sample_get(const struct stats_sample *s, unsigned class_id, const char *field,
                      int64_t *v);
/* `stats` first, then slab_globals. */
bool stats_sample_global(const struct stats_sample *s, const char *name, int64_t *v);
bool stats_sample_setting(const struct stats_sample *s, const char *name, int64_t *v);
/* Value text or NULL; for non-integer values such as growth_factor "1.25". */
const char *stats_sample_get_text(const struct stats_sample *s, unsigned class_id,
                                  const char *field);
const char *stats_sample_global_text(const struct stats_sample *s, const char *name);
const char *stats_sample_setting_text(const struct stats_sample *s, const char *name);
/* The same in the shape of a lookup callback (ctx is the sample), for
 * slab_settings_from_stats. */
const char *stats_sample_setting_lookup(void *sample, const char *name);

/* ---- a pipelined batch ---------------------------------------------- */

struct stats_parse_batch {
    struct stats_parser parser;
    struct stats_sample *sample;
    unsigned expect;  /* STATS_R_* asked for */
    unsigned pending; /* not yet complete; the first of them in the batch's order
                         (stats_parse_batch_command) is the reply being read */
    unsigned refused; /* replies memcached answered with an error line */
    enum stats_parse_error error;
    char refusal[STATS_VERSION_MAX]; /* first error line's text, for logs */
};

/* The request text for `which` (STATS_R_* bits) into out (cap >=
 * STATS_BATCH_CMD_MAX); returns its length, 0 if which is empty. */
size_t stats_parse_batch_command(unsigned which, char *out, size_t cap);
/* Clears the parts of sample that `which` will refill, and arms the batch. */
void stats_parse_batch_begin(struct stats_parse_batch *b, struct stats_sample *s, unsigned which);
/* OK: every expected reply arrived, the sample is complete (and, when both
 * `stats slabs` and `stats items` were asked for, stats_sample_drop_partial
 * has run). REFUSED: as OK
 * but a required reply was an error line (b->refusal). An error line for
 * settings/version only leaves has_settings/has_version false. NEED_MORE:
 * all bytes consumed. ERROR: b->error. Bytes after the batch's last reply
 * are not consumed (*consumed < len) so the caller can see them. */
enum stats_parse_result stats_parse_batch_feed(struct stats_parse_batch *b, const char *buf,
                                               size_t len, size_t *consumed);

#endif
