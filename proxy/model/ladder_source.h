/* ladder_source: which chunk ladder a memcached really runs.
 *
 * Three witnesses, in this order of trust: the chunk sizes memcached shows
 * in `stats slabs` for the classes that have a page (what it does), the
 * command-line flags slabtap knows it was started with or was told
 * (experiments, `--verify`, `proxy --slab-sizes / --memcached-flags`), and
 * `stats settings` (what it says -- without -o slab_sizes, and with the
 * growth factor printed to two decimals, so `-f 1.125` reads as 1.12).
 *
 * Owns the rule that picks one ladder from the three (ladder_choose), the
 * recovery of a growth factor from the observed chunk sizes, the ladder
 * read from the chunk sizes of a `-o slab_sizes` server, and the words
 * that say why. The proxy's class tags, `model predict` and the recorded
 * run_meta 'ladder' (view run_ladder) all come from here.
 * Must never do I/O or allocate, and never hand out a ladder that
 * disagrees with an observed chunk size without saying so (trusted false,
 * note filled). */
#ifndef SLABTAP_MODEL_LADDER_SOURCE_H
#define SLABTAP_MODEL_LADDER_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/slab_model.h"

/* Chunk sizes memcached showed, by class id (0: no page seen). */
struct ladder_observed {
    uint32_t chunk[SLAB_MODEL_MAX_CLASSES + 1];
    uint32_t max_class;     /* highest class seen, 0: none */
    uint32_t contradiction; /* a class seen with two chunk sizes (0: none) */
};

void ladder_observed_init(struct ladder_observed *o);
/* Records one class's chunk size. Returns 1 when the class is new, 0 when
 * it was seen with that size already, -1 when it was seen with another
 * size (kept: the first; contradiction set) or the id is out of range. */
int ladder_observed_add(struct ladder_observed *o, uint32_t class_id, uint64_t chunk_size);

/* The first class whose observed chunk size differs from l's (a class l
 * does not have counts as differing); 0 when every observation agrees. */
uint32_t ladder_check(const struct slab_ladder *l, const struct ladder_observed *o);

enum ladder_origin {
    LADDER_SETTINGS,  /* -n/-f of `stats settings` */
    LADDER_FLAGS,     /* the flags' -o slab_sizes, or their exact -f */
    LADDER_RECOVERED, /* -f recovered from the observed chunk sizes */
    LADDER_OBSERVED,  /* the observed chunk sizes themselves (slab_sizes server) */
    LADDER_CONFLICT   /* nothing fits: the settings' (or flags') ladder, wrong */
};

/* For people ("stats settings", ...) and as one word for JSON
 * ("settings", "flags", "recovered", "observed", "conflict"). */
const char *ladder_origin_str(enum ladder_origin o);
const char *ladder_origin_key(enum ladder_origin o);

#define LADDER_NOTE_MAX 640

struct ladder_choice {
    struct slab_settings settings; /* what the ladder is built from; slab_sizes
                                      holds an observed ladder's sizes */
    struct slab_ladder ladder;
    enum ladder_origin origin;
    /* agrees with every observed chunk size, and no other ladder that also
     * does could put an item in another class */
    bool trusted;
    bool ambiguous; /* LADDER_RECOVERED: other factors fit as well and differ */
    /* LADDER_OBSERVED without slab_chunk_max's class seen: classes above
     * the largest observed one are not known (no item of the run went
     * there, or they would have a page) */
    bool partial;
    uint32_t mismatch_class; /* the first class the stats settings' (or
                                flags') ladder got wrong, 0: none */
    uint32_t mismatch_observed, mismatch_ladder;
    double factor_lo, factor_hi; /* LADDER_RECOVERED: -f values giving this ladder */
    char note[LADDER_NOTE_MAX];  /* what was used and why; "" for a plain
                                    settings ladder that fits */
};

/* Picks the ladder. reported: slab_settings_from_stats of the server's
 * `stats settings`; flags: memcached's command line as slabtap knows it
 * (NULL or "": none), read with slab_settings_from_flags in the units of
 * version (memcached `version`, NULL: 1.6.18's); obs: chunk sizes seen
 * (NULL: none yet).
 *
 * `stats settings` is believed for -n, -I, slab_chunk_max, -C; the flags
 * add -o slab_sizes and the exact -f when it prints as the reported one.
 * When that ladder disagrees with an observed chunk size: a -f that prints
 * like the reported one and fits every observation (the one with the
 * fewest decimals; ambiguous when several fit and differ below the largest
 * observed class), else the observed chunk sizes themselves when classes
 * 1..k all have a page, else LADDER_CONFLICT. SLAB_OK (out filled, the
 * note saying what happened) or an error when reported cannot give a
 * ladder at all. */
enum slab_status ladder_choose(const struct slab_settings *reported, const char *flags,
                               const char *version, const struct ladder_observed *obs,
                               struct ladder_choice *out, char *err, size_t errlen);

/* The ladder's memcached flags in short: "-o slab_sizes=A-B-C" or
 * "-n N -f F" (F exact). Returns the length like snprintf. */
int ladder_choice_flags(const struct ladder_choice *c, char *out, size_t len);

#endif
