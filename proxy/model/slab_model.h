/* slab_model: memcached 1.6's slab allocator as arithmetic.
 *
 * Owns: the settings that shape the chunk ladder (-n, -f, -I, -m,
 * slab_chunk_max, slab_sizes, -C), the two converters into them (memcached's
 * `stats settings` and its command line) and the one back into flags for a
 * given memcached version, their validation, the ladder itself
 * (slabs_init), the size and slab class of an item (item_make_header,
 * slabs_clsid, chunked items), memcached's `-vv` ladder lines, and a
 * per-class counter accumulator predicting `stats slabs` / `stats items`.
 * Must never: do I/O, allocate, know about libuv or SQLite, or guess: every
 * rule here was read in memcached 1.6.18's source (slabs.c, items.c,
 * memcached.c, memcached.h) and checked against a running 1.6.18 on x86-64.
 *
 * What the model does NOT cover (memcached's own numbers drift from it):
 *   - eviction, slab page moves (slab_automove) and LRU crawler reclaims:
 *     total_pages is the high-water mark of ceil(used_chunks / perslab),
 *     right only while the memory limit is never reached;
 *   - append/prepend onto chunked items (memcached re-chunks them piece by
 *     piece, not as one fresh upload) and the binary protocol's extra \r\n;
 *   - the fallback that puts a chunked item's tail into a slab_chunk_max
 *     chunk when the tail's own class has no memory left.
 * The flags converter (slab_settings_from_flags) and the flag builder
 * (slab_settings_flags_for) know that -o slab_chunk_max is bytes up to
 * 1.6.23 and kilobytes from 1.6.24 (checked in memcached's memcached.c at
 * both tags).
 */
#ifndef SLABTAP_SLAB_MODEL_H
#define SLABTAP_SLAB_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* memcached.h: MAX_NUMBER_OF_SLAB_CLASSES is 63 + 1 and class 0 is unused,
 * so ids run 1..63; slabs_init fills at most 62 from the growth factor (or
 * slab_sizes) and the last one is always slab_chunk_max. */
#define SLAB_MODEL_MAX_CLASSES 63
#define SLAB_MODEL_MAX_CUSTOM_SIZES (SLAB_MODEL_MAX_CLASSES - 1)
/* memcached.h CHUNK_ALIGN_BYTES */
#define SLAB_MODEL_CHUNK_ALIGN 8
/* sizeof(item) and sizeof(item_chunk) on a 64-bit build (three pointers,
 * then 18 bytes of fields, padded to the 8-byte alignment). */
#define SLAB_MODEL_ITEM_HEADER 48
#define SLAB_MODEL_CHUNK_HEADER 48
/* memcached.h ITEM_SIZE_MAX_LOWER_LIMIT / _UPPER_LIMIT */
#define SLAB_MODEL_ITEM_SIZE_MAX_MIN 1024u
#define SLAB_MODEL_ITEM_SIZE_MAX_MAX (1024u * 1024u * 1024u)
/* one `-vv` ladder line is 56 bytes; room to spare */
#define SLAB_MODEL_LINE_MAX 96

enum slab_status {
    SLAB_OK = 0,
    SLAB_ERR_ARG,       /* NULL pointer, or a number out of its C range */
    SLAB_ERR_SYNTAX,    /* a size or list that is not a number */
    SLAB_ERR_SETTINGS,  /* memcached would refuse to start (exit 64) */
    SLAB_ERR_TOO_LARGE, /* memcached answers SERVER_ERROR object too large */
    SLAB_ERR_UNDERFLOW, /* removing an item that was never added */
    SLAB_ERR_SPACE      /* output buffer too small */
};

const char *slab_status_str(enum slab_status st);

/* memcached's settings that decide the ladder and item sizes. */
struct slab_settings {
    uint32_t chunk_size_min; /* -n: item space beyond the 48-byte header (48) */
    double growth_factor;    /* -f (1.25) */
    uint32_t item_size_max;  /* -I (1 MiB) */
    uint64_t mem_limit;      /* -m in bytes (64 MiB); only -I is checked against it */
    /* 1 MiB, fixed: 1.6.18 never changes slab_page_size (not even for
     * -I > 1m; there it only resets slab_chunk_max to page/2). */
    uint32_t slab_page_size;
    uint32_t slab_chunk_max; /* bytes (page/2); -o slab_chunk_max takes bytes up
                                to 1.6.23, kilobytes from 1.6.24 */
    bool use_cas;            /* -C turns it off */
    uint32_t slab_sizes[SLAB_MODEL_MAX_CUSTOM_SIZES]; /* -o slab_sizes=A-B-C */
    uint32_t n_slab_sizes;                            /* 0: use the growth factor */
};

/* Fill *s with memcached 1.6.18's defaults. */
void slab_settings_default(struct slab_settings *s);

/* Looks up one field of memcached's `stats settings` by name; NULL when
 * the server did not report it. */
typedef const char *(*slab_stat_lookup_fn)(void *ctx, const char *name);

/* The settings a server reports in `stats settings` (growth_factor,
 * chunk_size, item_size_max required; slab_chunk_max, maxbytes,
 * cas_enabled when present), over memcached's defaults, so a ladder is
 * rebuilt from what the live server said, not from assumed flags. The one
 * converter: the proxy, the load generator and predict all use it.
 * SLAB_ERR_SETTINGS with a message when a required field is missing or not
 * a positive number. (slab_sizes is not reported by memcached, and
 * growth_factor only to two decimals: model/ladder_source.h completes the
 * ladder from the flags and the chunk sizes memcached shows.) */
enum slab_status slab_settings_from_stats(struct slab_settings *out, slab_stat_lookup_fn lookup,
                                          void *ctx, char *err, size_t errlen);

/* What memcached's command-line flags set (slab_settings_from_flags). */
enum {
    SLAB_GIVEN_FACTOR = 1u << 0,    /* -f */
    SLAB_GIVEN_MIN = 1u << 1,       /* -n */
    SLAB_GIVEN_ITEM_MAX = 1u << 2,  /* -I */
    SLAB_GIVEN_MEM = 1u << 3,       /* -m */
    SLAB_GIVEN_CHUNK_MAX = 1u << 4, /* -o slab_chunk_max */
    SLAB_GIVEN_SIZES = 1u << 5,     /* -o slab_sizes */
    SLAB_GIVEN_NO_CAS = 1u << 6     /* -C */
};

/* The same converter for memcached's own command line: the flags slabtap
 * started memcached with (experiments, --verify) or was told
 * (`proxy --memcached-flags`), e.g. "-m 1024 -f 1.125 -o
 * slab_sizes=100-200,slab_chunk_max=16", over memcached's defaults.
 * Short and long options as memcached's getopt takes them ("-f1.2",
 * "--slab-growth-factor=1.2", "-Cv"); flags that do not shape the ladder
 * (-p, -t, -l, -vv, ...) are skipped with their arguments. slab_chunk_max
 * is read in the unit of memcached `version` (slab_chunk_max_in_kb; NULL:
 * bytes, as 1.6.18). *given (may be NULL) gets the SLAB_GIVEN_* bits of
 * what the flags set. SLAB_ERR_SYNTAX with a message for a flag memcached
 * does not have, a missing argument or a value that is not a number. No
 * range checks (slab_settings_validate does those). */
enum slab_status slab_settings_from_flags(struct slab_settings *out, unsigned *given,
                                          const char *flags, const char *version, char *err,
                                          size_t errlen);

/* memcached `version` text ("1.6.18", "1.6.24-rc1", "memcached 1.6.45")
 * against a.b.c: 1 when at least that, 0 when older, -1 when it is not a
 * version. */
int slab_version_at_least(const char *version, unsigned a, unsigned b, unsigned c);

/* memcached 1.6.24 changed `-o slab_chunk_max` from bytes to kilobytes
 * (memcached.c; `stats settings` still reports bytes). True for a version
 * of 1.6.24 or later; false for older ones and for NULL or unparsable
 * text (the 1.6.18 unit). */
bool slab_chunk_max_in_kb(const char *version);

/* The growth factor as -f text that memcached reads back as exactly f: at
 * least two decimals ("1.25", "1.125"; `stats settings` prints only two).
 * Returns the length like snprintf. */
int slab_factor_text(double f, char *out, size_t len);

/* memcached's flag for s's custom ladder, "-o slab_sizes=A-B-C", into out
 * (NUL terminated, cut at len); "" when s has none. Returns the length. */
size_t slab_sizes_flag(const struct slab_settings *s, char *out, size_t len);

/* The memcached flags that give a server s's ladder and item sizes:
 * "-m MEM_MB" then "-o slab_sizes=..." or "-n N -f F" (F exact:
 * slab_factor_text), and -I, -o slab_chunk_max and -C where they differ
 * from the defaults; slab_chunk_max in the unit of memcached `version`
 * (slab_chunk_max_in_kb; NULL: bytes). 0, or -1 with a message when
 * slab_chunk_max cannot be said in that unit (not a whole number of
 * kilobytes) or out is too small. */
int slab_settings_flags_for(const struct slab_settings *s, uint64_t mem_mb, const char *version,
                            char *out, size_t len, char *err, size_t errlen);

/* slab_settings_flags_for for memcached 1.6.18 (slab_chunk_max in bytes).
 * Returns the length (like snprintf). */
size_t slab_settings_flags(const struct slab_settings *s, uint64_t mem_mb, char *out, size_t len);

/* Parse -I's argument the way memcached does: a number with an optional
 * k/K/m/M suffix. Stricter than memcached's atoi: "1.5m" or "12x" are
 * SLAB_ERR_SYNTAX instead of being read as 1m / 12. */
enum slab_status slab_parse_size(const char *text, uint32_t *out);

/* Parse "A-B-C" into s->slab_sizes without range checks (those depend on
 * -n and slab_chunk_max, which may come later on the command line; see
 * slab_settings_validate). More than 62 sizes is SLAB_ERR_SETTINGS, as in
 * memcached ("too many slab classes specified"). */
enum slab_status slab_parse_slab_sizes(const char *text, struct slab_settings *s, char *err,
                                       size_t errlen);

/* The checks memcached.c makes before slabs_init, in its order and with
 * its messages (written into err when not NULL). */
enum slab_status slab_settings_validate(const struct slab_settings *s, char *err, size_t errlen);

struct slab_class {
    uint32_t chunk_size;
    uint32_t perslab; /* chunks per page */
};

struct slab_ladder {
    struct slab_class cls[SLAB_MODEL_MAX_CLASSES + 1]; /* [1..n_classes]; [0] unused */
    uint32_t n_classes;                                /* memcached's power_largest */
    uint32_t item_size_max;
    uint32_t slab_chunk_max;
    uint32_t slab_page_size;
    bool use_cas;
};

/* slabs_init: validate *s, then build the ladder exactly as memcached does. */
enum slab_status slab_ladder_build(const struct slab_settings *s, struct slab_ladder *out,
                                   char *err, size_t errlen);

/* slabs_clsid: the first class whose chunk fits size; sizes above the
 * largest class but within -I map to the largest class (chunked items);
 * 0 for size 0 or above item_size_max. */
uint32_t slab_ladder_class_for(const struct slab_ladder *l, uint64_t size);

/* Same chunk sizes, class for class. */
bool slab_ladder_same(const struct slab_ladder *a, const struct slab_ladder *b);

/* One `memcached -vv` line for class id, with its trailing newline, e.g.
 * "slab class   1: chunk size        96 perslab   10922\n". Returns the
 * length like snprintf, or -1 for a bad id. */
int slab_ladder_format_line(const struct slab_ladder *l, uint32_t id, char *buf, size_t len);

/* All n_classes lines. Returns the length the whole text needs (excluding
 * the NUL, like snprintf); the text is complete only if that is < len. */
size_t slab_ladder_format(const struct slab_ladder *l, char *buf, size_t len);

/* items.c item_make_header + do_item_alloc: the bytes an item asks for.
 * value_len excludes the \r\n that memcached stores with the value. */
uint64_t slab_item_ntotal(bool use_cas, uint32_t key_len, uint32_t flags, uint64_t value_len);

/* Where one stored item lives.
 *   lru_class: the class whose `stats items` counts it (number,
 *     mem_requested += ntotal); for a chunked item that is the largest
 *     class, although its memory is elsewhere;
 *   small item: one chunk in lru_class;
 *   chunked item (ntotal > slab_chunk_max): a header chunk of hdr_size in
 *     hdr_class, then full_chunks chunks of slab_chunk_max in full_class
 *     and, when the value does not divide evenly, one tail chunk of
 *     tail_size in tail_class (0 when there is none). Each data chunk
 *     carries a 48-byte chunk header. */
struct slab_item_layout {
    uint64_t ntotal;
    uint32_t lru_class;
    bool chunked;
    uint32_t hdr_class;
    uint32_t hdr_size;
    uint64_t full_chunks;
    uint32_t full_class;
    uint32_t tail_class;
    uint32_t tail_size;
};

/* SLAB_ERR_TOO_LARGE when memcached refuses the set (ntotal > -I);
 * SLAB_ERR_ARG for a key over 250 bytes (memcached never stores one). */
enum slab_status slab_item_layout(const struct slab_ladder *l, uint32_t key_len, uint32_t flags,
                                  uint64_t value_len, struct slab_item_layout *out);

/* Predicted counters for one class, named like memcached's stats. */
struct slab_class_counters {
    uint64_t used_chunks;      /* stats slabs: total_chunks - free_chunks */
    uint64_t peak_used_chunks; /* high-water mark: pages are never given back */
    uint64_t total_pages;      /* stats slabs */
    uint64_t total_chunks;     /* stats slabs */
    uint64_t number;           /* stats items: items linked in this class */
    uint64_t mem_requested;    /* stats items: sum of ntotal */
};

struct slab_counters {
    struct slab_class_counters cls[SLAB_MODEL_MAX_CLASSES + 1]; /* [0] unused */
};

void slab_counters_init(struct slab_counters *c);

/* Account one stored item. For an overwrite, add the new item BEFORE
 * removing the old one: memcached allocates the new item while the old is
 * still linked, so both count towards the page high-water mark (seen on
 * 1.6.18: overwriting one key in a full page opens a second page). */
enum slab_status slab_counters_add(struct slab_counters *c, const struct slab_ladder *l,
                                   const struct slab_item_layout *it);

/* Account one item leaving (delete, overwrite, expiry). Pages stay. Returns
 * SLAB_ERR_UNDERFLOW, changing nothing, if the item's chunks or bytes were
 * never added. Note for replays: a `set` that memcached refuses (too large,
 * out of memory) also unlinks the key's existing item (proto_text.c
 * process_update_command), so that old item must be removed here too. */
enum slab_status slab_counters_remove(struct slab_counters *c, const struct slab_ladder *l,
                                      const struct slab_item_layout *it);

#endif
