/* ragg: read aggregates (agg_reads) -- reads per run, minute and slab
 * class, every read counted (sampled-out keys too): a hit in the class of
 * the item returned, a miss in the class its key was last written in (0
 * when unknown: never written, or beyond the map of RAGG_CLASS_KEYS keys).
 *
 * Counted by both stores (record/store.c, record/pgstore.c) the same way:
 * a batch's writes are noted (ragg_note_write) before its reads
 * (ragg_note_read), each in (run, seq) order, so both stores give the same
 * rows for the same load. The cells are one batch's: the store writes them
 * in the batch's transaction (upserts adding counts) and calls
 * ragg_cells_done.
 *
 * Owns the key -> class map (kept across batches, grows by doubling up to
 * RAGG_CLASS_SLOTS) and at most RAGG_CELLS cells. Must never do I/O (the
 * stores write the cells) or count a read twice. */
#ifndef SLABTAP_RECORD_RAGG_H
#define SLABTAP_RECORD_RAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rec_row;

/* the key_hash -> class map: past RAGG_CLASS_KEYS keys a new key's miss
 * counts in class 0 (unknown) */
#define RAGG_CLASS_SLOTS (1u << 20)
#define RAGG_CLASS_KEYS (RAGG_CLASS_SLOTS / 4 * 3)
/* (minute, class) cells one batch may touch before they are written */
#define RAGG_CELLS 256

struct ragg_cell {
    int64_t minute;
    uint32_t class_id;
    uint64_t reads, hits, misses;
};

struct ragg {
    uint64_t *classes;             /* nclass_slots: hash & ~255 | class; 0 empty */
    size_t nclasses, nclass_slots; /* grows by doubling to RAGG_CLASS_SLOTS */
    struct ragg_cell cell[RAGG_CELLS];
    size_t ncells;
    int64_t run; /* the run the cells are of */
};

void ragg_free(struct ragg *g);
/* A write of the key (its class, 0: none): later misses count there. */
void ragg_note_write(struct ragg *g, uint64_t key_hash, uint32_t class_id);
/* Counts a read of run_id: false, counting nothing, when the cells must be
 * written first (they are full, or of another run); then ragg_cells_done
 * and again. */
bool ragg_note_read(struct ragg *g, int64_t run_id, const struct rec_row *row);
/* The cells were written (or the batch is forgotten): none left. */
void ragg_cells_done(struct ragg *g);

#endif
