/* top_view: what `slabtap top` shows -- one snapshot of a memcached's slab
 * classes and totals, built from a stats sample (memcached read directly)
 * or from a running slabtap's GET /api/slabs JSON, and rendered as lines
 * of plain text: a header with totals, one row per slab class, sorted.
 *
 * Owns: struct top_snapshot, its two builders, the sort orders, their
 * key letters and what a key does to the view, the rates between two
 * snapshots, the renderer, and reading a running slabtap's current run
 * and kind out of its /api/runs answer.
 * Must never: do I/O, read a clock, allocate, emit terminal control codes
 * (the caller positions the cursor and clears lines), or write past the
 * caller's buffer. Same input, same bytes out.
 *
 * Bounds: TOP_CLASSES_MAX classes per snapshot (ids 0..255, what
 * stats_parse keeps as classes); lines cut at TOP_WIDTH_MAX columns; the
 * JSON reader nests at most TOP_JSON_DEPTH_MAX levels and keeps names up
 * to TOP_JSON_NAME_MAX bytes (longer ones are skipped, not truncated).
 * Everything rendered is ASCII, so a byte is a column.
 */
#ifndef SLABTAP_CLI_TOP_VIEW_H
#define SLABTAP_CLI_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/stats_parse.h"

#define TOP_CLASSES_MAX STATS_CLASS_ID_LIMIT
#define TOP_SOURCE_MAX 160
#define TOP_VERSION_MAX 48
#define TOP_WIDTH_MAX 512
#define TOP_JSON_DEPTH_MAX 16
#define TOP_JSON_NAME_MAX 64
/* /api/slabs' targets (issue 23: the primary and its shadows) kept, and
 * the bytes of a target's name */
#define TOP_TARGETS_MAX 8
#define TOP_TARGET_MAX 128
/* Header lines + column titles + one line per class, each <= TOP_WIDTH_MAX
 * and its \n: the most top_view_render ever writes, NUL included. */
#define TOP_VIEW_HEAD_LINES 9
#define TOP_VIEW_RENDER_MAX ((TOP_VIEW_HEAD_LINES + TOP_CLASSES_MAX) * (TOP_WIDTH_MAX + 1) + 1)

/* An unknown number (a field the source did not give) is TOP_UNKNOWN:
 * every counter and gauge shown is >= 0 when known. */
#define TOP_UNKNOWN (-1)

struct top_class {
    unsigned id;
    int64_t chunk_size, pages, total_chunks, used_chunks;
    int64_t items, mem_requested; /* `stats items` number, mem_requested */
    int64_t evicted, cmd_set;     /* counters: rates come from two snapshots */
};

struct top_snapshot {
    uint64_t t_ns;                 /* when taken, on any one clock: only differences are used */
    char source[TOP_SOURCE_MAX];   /* "memcached 127.0.0.1:11211", "slabtap ..." */
    char version[TOP_VERSION_MAX]; /* memcached's, "" if unknown */
    int64_t uptime, bytes, limit_maxbytes, total_malloced, curr_items;
    int64_t get_hits, get_misses, cmd_get, cmd_set, evictions;
    int64_t ops; /* cmd_get + cmd_set + cmd_touch + deletes + incr/decr */
    unsigned n_classes;
    struct top_class classes[TOP_CLASSES_MAX]; /* n_classes of them, id ascending */
    /* /api/slabs' "target" (the memcached shown: "primary" or a shadow's
     * name; "" when not said) and "targets" (every one, the primary first;
     * a name longer than TOP_TARGET_MAX - 1 bytes is left out) */
    char target[TOP_TARGET_MAX];
    unsigned n_targets;
    char targets[TOP_TARGETS_MAX][TOP_TARGET_MAX];
};

/* The sort keys, X(name, letter, title): the letter is the interactive key
 * and the --sort word is the name. Every key but class sorts largest
 * first; reverse flips that; an unknown value (a rate without an earlier
 * snapshot) goes last either way; ties go to the lower class id. */
#define TOP_SORTS(X) \
    X(class, 'c', "CLASS") \
    X(chunk, 'k', "CHUNK") \
    X(items, 'i', "ITEMS") \
    X(pages, 'p', "PAGES") \
    X(used, 'u', "USED%") \
    X(waste, 'w', "WASTE%") \
    X(evict, 'e', "EVICT/S") \
    X(sets, 's', "SETS/S")

enum top_sort {
#define TOP_SORT_ENUM(name, letter, title) TOP_SORT_##name,
    TOP_SORTS(TOP_SORT_ENUM)
#undef TOP_SORT_ENUM
        TOP_SORT__COUNT
};

const char *top_sort_name(enum top_sort k);
/* The key for an interactive letter; -1 for any other byte. */
int top_sort_from_letter(int c);

struct top_view_opts {
    enum top_sort sort;
    bool reverse; /* of this sort only: choosing another sort clears it */
    /* every line cut to this many columns, at most TOP_WIDTH_MAX (0: that) */
    unsigned width;
    unsigned height;  /* at most this many lines in all; 0: every class */
    bool keys_help;   /* the line of interactive keys */
    const char *note; /* a line shown under the header (a failed refresh), or NULL */
};

/* An interactive key applied to o: a sort letter chooses that sort its
 * own way round (largest first; class ascending) and clears reverse, r
 * reverses the current sort, q (or ^C) quits, t asks for the next target
 * (TOP_KEY_TARGET: the caller fetches it, top_next_target). 1: o changed,
 * redraw; 0: not a key; -1: quit. */
#define TOP_KEY_TARGET 2
int top_view_key(struct top_view_opts *o, int c);

/* The target after s's own in s's targets (wrapping; the first when s
 * names none), or NULL when s has fewer than two. */
const char *top_next_target(const struct top_snapshot *s);
/* Every number TOP_UNKNOWN, no classes. */
void top_snapshot_init(struct top_snapshot *s);
/* From a complete `stats` + `stats slabs` + `stats items` sample. A class
 * `stats items` leaves out (it holds no items) has items and mem_requested
 * 0 and evicted unknown. */
void top_snapshot_from_sample(struct top_snapshot *s, const struct stats_sample *sample,
                              uint64_t t_ns, const char *source);
/* From slabtap's GET /api/slabs body: {"run_id","t_ns","classes":[{"class_id",
 * "fields":{<the class's stats slabs + stats items fields>}, ...}],
 * "stats":{<memcached's `stats` of the same sample>},"slab_globals":{...}};
 * the same names flat in a class object (chunk_size, pages, total_chunks,
 * ...) and top-level total_malloced / limit_maxbytes are taken too. The
 * "target" and "targets" (the proxy's shadows, issue 23) are kept. The
 * totals come from "stats"/"slab_globals" as from a sample (and, as
 * there, a class without `stats items` fields holds 0 items); without them
 * (an older slabtap) cmd_set, evictions and items are the sums of the
 * classes' and what only `stats` knows stays unknown. 0, or -1 with a
 * message in err (not JSON,
 * nesting too deep, a class id out of range, an "error" member). */
int top_snapshot_from_json(struct top_snapshot *s, const char *json, size_t len, const char *source,
                           char *err, size_t errlen);

/* From a running slabtap's GET /api/runs: its current run's id and kind
 * ("proxy", "watch", "snapshot"; an older slabtap that does not say:
 * "proxy"). Pure. 0, or -1 when json has no "current" run. */
int top_current_run(const char *json, size_t len, int64_t *run_id, char *kind, size_t kindlen);

/* (cur - prev) per second over dt_ns; NAN when unknown (a side unknown,
 * dt 0, or the counter went backwards: a restart). */
double top_rate(int64_t cur, int64_t prev, uint64_t dt_ns);

/* Indexes into cur->classes in display order for opts (prev gives the
 * rates; NULL: none known). Returns n_classes. */
unsigned top_view_order(const struct top_snapshot *cur, const struct top_snapshot *prev,
                        enum top_sort sort, bool reverse, unsigned order[TOP_CLASSES_MAX]);

/* The screen into out (NUL-terminated, lines ending in \n); returns its
 * length. A cap below TOP_VIEW_RENDER_MAX may cut it, at a line end. */
size_t top_view_render(const struct top_snapshot *cur, const struct top_snapshot *prev,
                       const struct top_view_opts *o, char *out, size_t cap);

#endif
